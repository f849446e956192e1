// SPDX-License-Identifier: Apache-2.0
#include "src/framework/node_info.h"

namespace gpusched::framework {

int32_t NodeInfo::FreeWholeGpus() const {
  int32_t free = 0;
  const auto& g = node->gpu;
  for (int i = 0; i < g.count; ++i) {
    if (g.Healthy(i) && gpus[static_cast<size_t>(i)].used_milli == 0 &&
        gpus[static_cast<size_t>(i)].used_memory_mib == 0) {
      ++free;
    }
  }
  return free;
}

int64_t NodeInfo::FreeGpuMilli() const {
  int64_t free = 0;
  const auto& g = node->gpu;
  for (int i = 0; i < g.count; ++i) {
    if (g.Healthy(i)) free += api::kMilliPerGpu - gpus[static_cast<size_t>(i)].used_milli;
  }
  return free;
}

const NodeInfo* Snapshot::Get(std::string_view name) const {
  auto it = by_name_.find(std::string(name));
  if (it == by_name_.end()) return nullptr;
  const NodeInfo& n = nodes_[static_cast<size_t>(it->second)];
  return n.valid() ? &n : nullptr;
}

NodeInfo& Snapshot::MutableSlotForCache(NodeIndex i) {
  if (static_cast<size_t>(i) >= nodes_.size()) nodes_.resize(static_cast<size_t>(i) + 1);
  return nodes_[static_cast<size_t>(i)];
}

}  // namespace gpusched::framework
