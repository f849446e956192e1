// SPDX-License-Identifier: Apache-2.0
// Fuzzes api::DecodeManifests: multi-document YAML (or JSON) -> JSON values -> Pods, Nodes and
// other objects (the `gpusched simulate -f` input), and api::ParseManifestDocumentsEach (the
// per-document recovery the simulator reads files with). Properties: no crash, no UB, no leak,
// no exception escaping the YAML library; every error says why; a pod with a GPU error has no GPU
// request; no node has more than kMaxGpusPerNode GPUs.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <variant>

#include "fuzz/fuzz_check.h"
#include "src/api/decode.h"
#include "src/api/manifest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  for (const auto& doc : gpusched::api::ParseManifestDocumentsEach(text, "fuzz.yaml")) {
    FUZZ_CHECK(doc.ok() || !doc.status().message().empty(), "a rejected document says why");
  }
  auto objects = gpusched::api::DecodeManifests(text, "fuzz.yaml");
  if (!objects.ok()) {
    FUZZ_CHECK(!objects.status().message().empty(), "a rejected manifest says why");
    return 0;
  }
  for (const auto& o : *objects) {
    if (const auto* pod = std::get_if<gpusched::api::Pod>(&o)) {
      FUZZ_CHECK(pod->gpu.empty() || pod->gpu_error.empty(), "a GPU error clears the GPU request");
      (void)pod->Key();
    } else if (const auto* node = std::get_if<gpusched::api::Node>(&o)) {
      FUZZ_CHECK(node->gpu.count <= gpusched::api::kMaxGpusPerNode, "node GPU count is clamped");
    }
  }
  return 0;
}
