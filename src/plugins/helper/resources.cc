// SPDX-License-Identifier: Apache-2.0
#include "src/plugins/helper/resources.h"

#include <algorithm>

#include "src/api/gpu.h"

namespace gpusched::plugins::helper {

bool IsNativeResourceName(std::string_view name) {
  return name.find('/') == std::string_view::npos ||
         name.find("kubernetes.io/") != std::string_view::npos;
}

bool IsExtendedResourceName(std::string_view name) {
  if (IsNativeResourceName(name) || name.starts_with("requests.")) return false;
  const size_t slash = name.find('/');
  return slash > 0 && slash + 1 < name.size() &&
         name.find('/', slash + 1) == std::string_view::npos;
}

std::string_view ResourceGroup(std::string_view name) { return name.substr(0, name.find('/')); }

NonZeroRequest PodNonZeroRequest(const api::Pod& pod) {
  NonZeroRequest sum;
  for (const api::Container& c : pod.containers) {
    sum.milli_cpu += c.requests.milli_cpu != 0 ? c.requests.milli_cpu : kDefaultMilliCpuRequest;
    sum.memory += c.requests.memory != 0 ? c.requests.memory : kDefaultMemoryRequest;
  }
  for (const api::Container& c : pod.init_containers) {
    sum.milli_cpu = std::max(
        sum.milli_cpu, c.requests.milli_cpu != 0 ? c.requests.milli_cpu : kDefaultMilliCpuRequest);
    sum.memory =
        std::max(sum.memory, c.requests.memory != 0 ? c.requests.memory : kDefaultMemoryRequest);
  }
  sum.milli_cpu += pod.overhead.milli_cpu;
  sum.memory += pod.overhead.memory;
  // Sidecars and other cases the decoder folds into pod.requests never count for less.
  sum.milli_cpu = std::max(sum.milli_cpu, pod.requests.milli_cpu);
  sum.memory = std::max(sum.memory, pod.requests.memory);
  return sum;
}

bool GpusLeftToDra(const framework::DraView* dra, const api::Pod& pod, const api::Node& node) {
  const common::Atom gpu = api::Names().nvidia_gpu;
  return dra != nullptr && !pod.gpu.empty() && !pod.gpu.shared() && pod.requests.Get(gpu) > 0 &&
         node.allocatable.Get(gpu) == 0 && dra->ExtendedResourceClass(common::Str(gpu)) != nullptr;
}

bool GpuModelMatchesAny(common::Atom node_model, std::span<const common::Atom> wanted) {
  if (node_model.empty()) return false;
  const std::string_view model = common::Str(node_model);
  for (common::Atom want : wanted) {
    if (api::GpuModelMatches(model, common::Str(want))) return true;
  }
  return false;
}

}  // namespace gpusched::plugins::helper
