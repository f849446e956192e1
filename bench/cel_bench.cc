// SPDX-License-Identifier: Apache-2.0
// CEL selectors of DRA (src/cel): MatchDevice for a typical DeviceClass selector against an A100
// with eight attributes and two capacities (the scheduler calls it per candidate device; results
// are memoized by the caller), and the one-time compile.
#include <benchmark/benchmark.h>

#include <string>
#include <utility>
#include <vector>

#include "src/cel/device_selector.h"

namespace {

using gpusched::api::DeviceAttribute;

constexpr const char* kSelector =
    R"(device.driver == "gpu.nvidia.com" && )"
    R"(device.attributes["gpu.nvidia.com"].productName == "NVIDIA A100-SXM4-80GB" && )"
    R"(device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0)";

DeviceAttribute Attr(DeviceAttribute::Kind kind, std::string s, int64_t i = 0) {
  DeviceAttribute a;
  a.kind = kind;
  a.string_value = std::move(s);
  a.int_value = i;
  a.bool_value = true;
  return a;
}

struct Device {
  std::vector<std::pair<std::string, DeviceAttribute>> attributes = {
      {"dra.example.com/numa", Attr(DeviceAttribute::Kind::kInt, "", 1)},
      {"gpu.nvidia.com/architecture", Attr(DeviceAttribute::Kind::kString, "Ampere")},
      {"gpu.nvidia.com/brand", Attr(DeviceAttribute::Kind::kString, "Nvidia")},
      {"gpu.nvidia.com/cudaComputeCapability", Attr(DeviceAttribute::Kind::kVersion, "8.0.0")},
      {"gpu.nvidia.com/driverVersion", Attr(DeviceAttribute::Kind::kVersion, "550.54.15")},
      {"gpu.nvidia.com/index", Attr(DeviceAttribute::Kind::kInt, "", 0)},
      {"gpu.nvidia.com/migCapable", Attr(DeviceAttribute::Kind::kBool, "")},
      {"gpu.nvidia.com/productName", Attr(DeviceAttribute::Kind::kString, "NVIDIA A100-SXM4-80GB")},
  };
  std::vector<std::pair<std::string, gpusched::api::Quantity>> capacity = {
      {"gpu.nvidia.com/memory", *gpusched::api::Quantity::Parse("80Gi")},
      {"gpu.nvidia.com/multiprocessors", *gpusched::api::Quantity::Parse("108")},
  };
};

void BM_MatchDevice(benchmark::State& state, const char* selector) {
  auto program = gpusched::cel::CompileDeviceSelector(selector);
  if (!program.ok()) {
    state.SkipWithError(std::string(program.status().message()).c_str());
    return;
  }
  Device d;
  gpusched::cel::DeviceInput input;
  input.driver = "gpu.nvidia.com";
  input.attributes = &d.attributes;
  input.capacity = &d.capacity;
  for (auto _ : state) {
    auto matched = gpusched::cel::MatchDevice(**program, input);
    benchmark::DoNotOptimize(matched);
  }
}
BENCHMARK_CAPTURE(BM_MatchDevice, typical, kSelector);
BENCHMARK_CAPTURE(BM_MatchDevice, driver_only, R"(device.driver == "gpu.nvidia.com")");
BENCHMARK_CAPTURE(BM_MatchDevice, semver,
                  R"(device.attributes["gpu.nvidia.com"].driverVersion.isGreaterThan(semver("535.0.0")))");

void BM_CompileDeviceSelector(benchmark::State& state) {
  for (auto _ : state) {
    auto program = gpusched::cel::CompileDeviceSelector(kSelector);
    benchmark::DoNotOptimize(program);
  }
}
BENCHMARK(BM_CompileDeviceSelector);

}  // namespace
