// SPDX-License-Identifier: Apache-2.0
// Fuzzes the Alibaba GPU trace v2023 (openb) CSV loaders, sim::trace::ParseOpenbNodes and
// ParseOpenbPods, with the same input (the header row decides which columns each finds).
// Properties: no crash, no UB, no leak; every object of an accepted list is non-null, a node has
// at most kMaxGpusPerNode GPUs, and a pod's GPU share is within 0..1000 milli.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz/fuzz_check.h"
#include "src/api/gpu.h"
#include "src/sim/trace/openb.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view csv(reinterpret_cast<const char*>(data), size);
  namespace trace = gpusched::sim::trace;
  if (auto nodes = trace::ParseOpenbNodes(csv, "nodes.csv"); nodes.ok()) {
    for (const auto& n : *nodes) {
      FUZZ_CHECK(n != nullptr, "node is set");
      FUZZ_CHECK(n->gpu.count >= 0 && n->gpu.count <= gpusched::api::kMaxGpusPerNode,
                 "node GPU count in 0..16");
    }
  }
  if (auto pods = trace::ParseOpenbPods(csv, "pods.csv"); pods.ok()) {
    for (const auto& p : *pods) {
      FUZZ_CHECK(p != nullptr, "pod is set");
      FUZZ_CHECK(p->gpu.milli >= 0 && p->gpu.milli <= gpusched::api::kMilliPerGpu,
                 "milli in 0..1000");
    }
  }
  return 0;
}
