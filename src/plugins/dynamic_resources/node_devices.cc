// SPDX-License-Identifier: Apache-2.0
#include "src/plugins/dynamic_resources/node_devices.h"

#include <algorithm>
#include <string_view>
#include <utility>

namespace gpusched::plugins::dynamic_resources {
namespace {

bool HasPod(const framework::NodeInfo& node, std::string_view uid) {
  return std::any_of(node.pods.begin(), node.pods.end(),
                     [&](const api::PodPtr& p) { return p->meta.uid == uid; });
}

// Whether the claim holding a device is used only by pods that a preemption dry run removed
// from `node` (a copy of `original`; may be null) or that the cache hides: then its devices
// count as free.
bool FreedByRemoval(const api::ResourceClaim& holder, const framework::NodeInfo& node,
                    const framework::NodeInfo* original, std::span<const std::string> hidden) {
  bool removed = false;
  for (const api::ClaimConsumer& c : holder.reserved_for) {
    if (HasPod(node, c.uid)) return false;
    removed = removed || (original != nullptr && HasPod(*original, c.uid)) ||
              std::find(hidden.begin(), hidden.end(), c.uid) != hidden.end();
  }
  return removed;
}

}  // namespace

void GatherNodeDevices(const framework::DeviceIndex& index, const framework::DeviceUsage& usage,
                       const framework::NodeInfo& node, const framework::NodeInfo* original,
                       std::span<const uint8_t> taken, std::vector<NodeDevice>& out,
                       std::span<const std::string> hidden) {
  out.clear();
  auto add = [&](uint32_t d) {
    const api::ResourceClaimPtr& holder =
        d < usage.holder.size() ? usage.holder[d] : api::ResourceClaimPtr();
    bool busy = holder != nullptr;
    if (busy && (original != nullptr || !hidden.empty()) &&
        FreedByRemoval(*holder, node, original, hidden)) {
      busy = false;
    }
    if (d < taken.size() && taken[d] != 0) busy = true;
    out.push_back({d, busy});
  };
  for (uint32_t d : index.NodeDevices(node.name())) add(d);
  for (uint32_t d : index.not_node_local) {
    const framework::DeviceEntry& e = index.devices[d];
    if (e.all_nodes || (e.node_selector != nullptr &&
                        e.node_selector->Matches(node.node->meta.labels, node.name()))) {
      add(d);
    }
  }
  if (out.size() < 2) return;
  // Free devices per island (a node has few islands: a flat list of (island, free) pairs).
  thread_local std::vector<std::pair<uint32_t, uint32_t>> free;
  free.clear();
  auto slot = [&](uint32_t island) -> uint32_t& {
    for (auto& [id, n] : free) {
      if (id == island) return n;
    }
    free.emplace_back(island, 0);
    return free.back().second;
  };
  for (const NodeDevice& nd : out) {
    const uint32_t island = index.devices[nd.device].island;
    if (island != 0 && !nd.busy) ++slot(island);
  }
  // Islands with the fewest free devices first; devices without an island last; stable.
  auto rank = [&](const NodeDevice& nd) -> std::pair<uint32_t, uint32_t> {
    const uint32_t island = index.devices[nd.device].island;
    return {island == 0 ? UINT32_MAX : slot(island), island};
  };
  std::stable_sort(out.begin(), out.end(),
                   [&](const NodeDevice& a, const NodeDevice& b) { return rank(a) < rank(b); });
}

}  // namespace gpusched::plugins::dynamic_resources
