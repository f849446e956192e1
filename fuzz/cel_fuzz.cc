// SPDX-License-Identifier: Apache-2.0
// Fuzzes the CEL evaluator of DRA selectors (src/cel): the input is compiled as a selector
// (CompileDeviceSelector) and matched against a fixed device (an A100 with string, int, bool and
// version attributes in two domains and two capacities); an input that does not compile as a
// selector is compiled again without the checker (CompileExpression, check off) and evaluated
// with the same device, so the runtime's type errors are reached too.
// Properties: no crash, no UB, no leak, no stack overflow on deep nesting, bounded time (the
// runtime cost limit); evaluating twice gives the same result; a selector's match or error is
// deterministic and its cost stays within the limit.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fuzz/fuzz_check.h"
#include "src/cel/device_selector.h"
#include "src/cel/program.h"

namespace {

using gpusched::api::DeviceAttribute;
using gpusched::api::Quantity;

DeviceAttribute Attr(DeviceAttribute::Kind kind, int64_t i, bool b, std::string s) {
  DeviceAttribute a;
  a.kind = kind;
  a.int_value = i;
  a.bool_value = b;
  a.string_value = std::move(s);
  return a;
}

struct Device {
  std::vector<std::pair<std::string, DeviceAttribute>> attributes = {
      {"dra.example.com/numa", Attr(DeviceAttribute::Kind::kInt, 1, false, "")},
      {"gpu.nvidia.com/architecture", Attr(DeviceAttribute::Kind::kString, 0, false, "Ampere")},
      {"gpu.nvidia.com/driverVersion", Attr(DeviceAttribute::Kind::kVersion, 0, false, "550.54.15")},
      {"gpu.nvidia.com/index", Attr(DeviceAttribute::Kind::kInt, 0, false, "")},
      {"gpu.nvidia.com/migCapable", Attr(DeviceAttribute::Kind::kBool, 0, true, "")},
      {"gpu.nvidia.com/productName",
       Attr(DeviceAttribute::Kind::kString, 0, false, "NVIDIA A100-SXM4-80GB")},
  };
  std::vector<std::pair<std::string, Quantity>> capacity = {
      {"gpu.nvidia.com/memory", *Quantity::Parse("80Gi")},
      {"gpu.nvidia.com/multiprocessors", *Quantity::Parse("108")},
  };
  gpusched::cel::DeviceInput Input() const {
    gpusched::cel::DeviceInput d;
    d.driver = "gpu.nvidia.com";
    d.attributes = &attributes;
    d.capacity = &capacity;
    return d;
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const Device* const device = new Device();
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto selector = gpusched::cel::CompileDeviceSelector(text);
  if (selector.ok()) {
    auto first = gpusched::cel::MatchDevice(**selector, device->Input());
    auto second = gpusched::cel::MatchDevice(**selector, device->Input());
    FUZZ_CHECK(first.ok() == second.ok(), "matching is deterministic");
    if (first.ok()) {
      FUZZ_CHECK(*first == *second, "matching is deterministic");
    } else {
      FUZZ_CHECK(first.status() == second.status(), "matching is deterministic");
      FUZZ_CHECK(!first.status().message().empty(), "an error says why");
    }
    return 0;
  }
  FUZZ_CHECK(!selector.status().message().empty(), "a compile error says why");
  gpusched::cel::CompileOptions options;
  options.variables = {"device"};
  options.check = false;
  auto program = gpusched::cel::CompileExpression(text, options);
  if (!program.ok()) return 0;
  // The unchecked program gets a plain map for `device` (no DRA typing): a list of the values.
  auto map = std::make_shared<gpusched::cel::VectorMap>();
  map->Insert(gpusched::cel::Value::StringView("driver"), gpusched::cel::Value::StringView("gpu"));
  map->Insert(gpusched::cel::Value::Int(1), gpusched::cel::Value::Double(2.5));
  const gpusched::cel::Value vars[] = {gpusched::cel::Value::Map(map)};
  uint64_t cost1 = 0;
  uint64_t cost2 = 0;
  auto a = (*program)->Evaluate(vars, gpusched::cel::kSelectorMaxCost, &cost1);
  auto b = (*program)->Evaluate(vars, gpusched::cel::kSelectorMaxCost, &cost2);
  FUZZ_CHECK(cost1 == cost2, "evaluation is deterministic");
  FUZZ_CHECK(gpusched::cel::DebugString(a) == gpusched::cel::DebugString(b) ||
                 a.kind() == gpusched::cel::Kind::kDouble,
             "evaluation is deterministic");
  return 0;
}
