// SPDX-License-Identifier: Apache-2.0
// Fuzzes the GPU annotation and label dialects through the API decoders: a Pod and a Node are
// built as API JSON (Boost.JSON, so every byte of the input is a valid string value), their GPU
// fields taken from the input, and decoded with api::DecodePod / api::DecodeNode, which call
// DeriveGpuRequest / DeriveNodeGpuInfo. The device annotation also goes through
// ParseGpuAssignment directly.
//
// Input: up to six '\n'-separated fields (a missing field leaves the key out):
//   0  pod annotation gpu.nvidia.com/model;
//      node labels gpu.nvidia.com/model, nvidia.com/gpu.product
//   1  pod annotation gpu.nvidia.com/memory;
//      node labels gpu.nvidia.com/memory, nvidia.com/gpu.memory
//   2  pod annotation gpusched.io/gpu-devices, and ParseGpuAssignment's input
//   3  pod limit nvidia.com/gpu; node allocatable nvidia.com/gpu and labels gpu.nvidia.com/count,
//      nvidia.com/gpu.count
//   4  node annotation gpusched.io/unhealthy-gpus
//   5  node annotation gpusched.io/nvlink-islands
//
// Properties: no crash, no UB, no leak; a malformed annotation is never a decode error of the pod
// when the other fields are valid, and it clears the GPU request; ParseGpuAssignment accepts its
// own FormatGpuAssignment output and gets the same assignment back; a node has at most
// kMaxGpusPerNode GPUs and island/health data only for those.
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz/fuzz_check.h"
#include "src/api/decode.h"
#include "src/api/gpu.h"
#include "src/api/quantity.h"

namespace {

namespace json = boost::json;
using gpusched::api::kMaxGpusPerNode;

std::vector<std::optional<std::string>> SplitFields(std::string_view in, size_t n) {
  std::vector<std::optional<std::string>> out(n);
  size_t i = 0;
  while (i < n) {
    size_t nl = in.find('\n');
    out[i++] = std::string(in.substr(0, nl));
    if (nl == std::string_view::npos) break;
    in.remove_prefix(nl + 1);
  }
  return out;
}

void Set(json::object& o, std::string_view key, const std::optional<std::string>& v) {
  if (v) o[key] = *v;
}

json::value MakePod(const std::vector<std::optional<std::string>>& f) {
  json::object ann;
  Set(ann, gpusched::api::kPodGpuModelAnnotation, f[0]);
  Set(ann, gpusched::api::kPodGpuMemoryAnnotation, f[1]);
  Set(ann, gpusched::api::kPodGpuDevicesAnnotation, f[2]);
  json::object limits;
  Set(limits, "nvidia.com/gpu", f[3]);
  json::object container{{"name", "main"},
                         {"image", "registry.invalid/x:1"},
                         {"resources", json::object{{"limits", limits}}}};
  return json::object{
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata",
       json::object{{"name", "p"}, {"namespace", "fuzz"}, {"uid", "u"}, {"annotations", ann}}},
      {"spec",
       json::object{{"schedulerName", "gpu-scheduler"}, {"containers", json::array{container}}}},
  };
}

json::value MakeNode(const std::vector<std::optional<std::string>>& f) {
  json::object labels;
  Set(labels, gpusched::api::kSeedModelLabel, f[0]);
  Set(labels, gpusched::api::kGfdProductLabel, f[0]);
  Set(labels, gpusched::api::kSeedMemoryLabel, f[1]);
  Set(labels, gpusched::api::kGfdMemoryLabel, f[1]);
  Set(labels, gpusched::api::kSeedCountLabel, f[3]);
  Set(labels, gpusched::api::kGfdCountLabel, f[3]);
  json::object ann;
  Set(ann, gpusched::api::kNodeUnhealthyGpusAnnotation, f[4]);
  Set(ann, gpusched::api::kNodeNvlinkIslandsAnnotation, f[5]);
  json::object allocatable{{"cpu", "32"}, {"memory", "256Gi"}, {"pods", "110"}};
  Set(allocatable, "nvidia.com/gpu", f[3]);
  return json::object{
      {"apiVersion", "v1"},
      {"kind", "Node"},
      {"metadata", json::object{{"name", "n"}, {"labels", labels}, {"annotations", ann}}},
      {"status", json::object{{"allocatable", allocatable}, {"capacity", allocatable}}},
  };
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  const auto f = SplitFields(in, 6);

  if (f[2]) {
    auto a = gpusched::api::ParseGpuAssignment(*f[2]);
    if (a.ok()) {
      auto again = gpusched::api::ParseGpuAssignment(gpusched::api::FormatGpuAssignment(*a));
      FUZZ_CHECK(again.ok(), "FormatGpuAssignment output parses");
      FUZZ_CHECK(*again == *a, "assignment round trip");
      FUZZ_CHECK(a->devices.size() <= static_cast<size_t>(kMaxGpusPerNode), "at most 16 devices");
    }
  }

  const bool limit_ok = !f[3] || gpusched::api::Quantity::Parse(*f[3]).ok();
  auto pod = gpusched::api::DecodePod(MakePod(f));
  if (limit_ok) FUZZ_CHECK(pod.ok(), "GPU annotations alone never fail the pod's decode");
  if (pod.ok()) {
    FUZZ_CHECK(pod->gpu_error.empty() || pod->gpu.empty(), "a GPU error clears the GPU request");
    FUZZ_CHECK(pod->gpu.count >= 0, "GPU count is not negative");
    if (!pod->gpu.empty()) {
      FUZZ_CHECK(pod->gpu.milli >= 1 && pod->gpu.milli <= gpusched::api::kMilliPerGpu,
                 "milli in 1..1000");
    }
  }

  auto node = gpusched::api::DecodeNode(MakeNode(f));
  if (node.ok()) {
    const auto& g = node->gpu;
    FUZZ_CHECK(g.count >= 0 && g.count <= kMaxGpusPerNode, "node GPU count in 0..16");
    FUZZ_CHECK(g.memory_mib >= 0, "node GPU memory is not negative");
  }
  return 0;
}
