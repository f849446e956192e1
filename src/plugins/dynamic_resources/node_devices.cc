// SPDX-License-Identifier: Apache-2.0
#include "src/plugins/dynamic_resources/node_devices.h"

#include <algorithm>
#include <string_view>
#include <tuple>
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

bool HeldInUsage(const framework::DeviceUsage& usage, uint32_t d) {
  return d < usage.holder.size() && usage.holder[d] != nullptr;
}

// Per counter set the node's devices draw on, what it has left: the mean over its counters of
// left / capacity, in thousandths (sets by number, ascending; a set's counters are numbered one
// after another, so they are adjacent in `node.counters`).
void SetsLeft(const framework::DeviceIndex& index, const NodeDevices& node,
              std::vector<std::pair<uint32_t, int64_t>>& out) {
  out.clear();
  int64_t n = 0;
  for (const CounterLeft& c : node.counters) {
    const framework::SharedCounter& counter = index.counters[c.counter];
    if (out.empty() || out.back().first != counter.set) {
      if (n > 0) out.back().second /= n;
      out.emplace_back(counter.set, 0);
      n = 0;
    }
    const int64_t left = std::clamp<int64_t>(c.left, 0, counter.capacity);
    out.back().second += counter.capacity <= 0
                             ? 0
                             : static_cast<int64_t>(static_cast<double>(left) * 1000.0 /
                                                    static_cast<double>(counter.capacity));
    ++n;
  }
  if (n > 0) out.back().second /= n;
  std::sort(out.begin(), out.end());
}

// What device `d`'s first counter set (a shared device without draws: its capacities) has left
// (SetsLeft), -1 when it has none.
int64_t SetLeft(const framework::DeviceIndex& index,
                std::span<const std::pair<uint32_t, int64_t>> sets, uint32_t d) {
  const std::span<const framework::CounterDraw> draws = index.Draws(d);
  const framework::DeviceEntry& e = index.devices[d];
  uint32_t first = 0;
  if (!draws.empty()) {
    first = draws.front().counter;
  } else if (e.capacity_begin < e.capacity_end) {
    first = e.capacity_begin;
  } else {
    return -1;
  }
  const uint32_t set = index.counters[first].set;
  auto it =
      std::lower_bound(sets.begin(), sets.end(), std::pair<uint32_t, int64_t>(set, INT64_MIN));
  return it != sets.end() && it->first == set ? it->second : -1;
}

}  // namespace

void SettleCounters(const framework::DeviceIndex& index, const framework::DeviceUsage& usage,
                    NodeDevices& out) {
  out.counters.clear();
  if (index.counters.empty() && index.invalid_pools.empty()) return;
  for (const NodeDevice& nd : out.devices) {
    for (const framework::CounterDraw& c : index.Draws(nd.device)) {
      out.counters.push_back({c.counter, 0});
    }
    const framework::DeviceEntry& e = index.devices[nd.device];
    for (uint32_t c = e.capacity_begin; c < e.capacity_end; ++c) out.counters.push_back({c, 0});
  }
  std::sort(out.counters.begin(), out.counters.end(),
            [](const CounterLeft& a, const CounterLeft& b) { return a.counter < b.counter; });
  out.counters.erase(std::unique(out.counters.begin(), out.counters.end(),
                                 [](const CounterLeft& a, const CounterLeft& b) {
                                   return a.counter == b.counter;
                                 }),
                     out.counters.end());
  for (CounterLeft& c : out.counters) {
    const int64_t used = c.counter < usage.counter_used.size() ? usage.counter_used[c.counter] : 0;
    c.left = index.counters[c.counter].capacity - used;
  }
  // Where this node's view differs from the usage (a dry run's removed pods, devices taken; a
  // shared device in use drew already).
  for (const NodeDevice& nd : out.devices) {
    if (nd.busy == HeldInUsage(usage, nd.device) || nd.shared_in_use) continue;
    for (const framework::CounterDraw& c : index.Draws(nd.device)) {
      out.Find(c.counter)->left += nd.busy ? -c.amount : c.amount;
    }
  }
  out.MarkUnallocatable(index);
}

void GatherNodeDevices(const framework::DeviceIndex& index, const framework::DeviceUsage& usage,
                       const framework::NodeInfo& node, const framework::NodeInfo* original,
                       std::span<const uint8_t> taken, NodeDevices& nodes,
                       std::span<const std::string> hidden) {
  std::vector<NodeDevice>& out = nodes.devices;
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
    out.push_back({d, busy, d < usage.shares.size() && usage.shares[d] > 0});
  };
  for (uint32_t d : index.NodeDevices(node.name())) add(d);
  for (uint32_t d : index.not_node_local) {
    const framework::DeviceEntry& e = index.devices[d];
    if (e.all_nodes || (e.node_selector != nullptr &&
                        e.node_selector->Matches(node.node->meta.labels, node.name()))) {
      add(d);
    }
  }
  SettleCounters(index, usage, nodes);
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
  // Islands with the fewest free devices first; devices without an island last; then the
  // counter sets with the least left; then, within a set, the devices that rule out the fewest
  // others (a 1g MIG slice where it leaves the 4g placement open); stable.
  thread_local std::vector<std::pair<uint32_t, int64_t>> sets;
  SetsLeft(index, nodes, sets);
  auto rank = [&](const NodeDevice& nd) -> std::tuple<uint32_t, uint32_t, int64_t, uint32_t> {
    const framework::DeviceEntry& e = index.devices[nd.device];
    return {e.island == 0 ? UINT32_MAX : slot(e.island), e.island,
            sets.empty() ? 0 : SetLeft(index, sets, nd.device), e.conflicts};
  };
  std::stable_sort(out.begin(), out.end(),
                   [&](const NodeDevice& a, const NodeDevice& b) { return rank(a) < rank(b); });
}

std::shared_ptr<const NodeDevices> NodeDevicesCache::Get(const framework::DeviceIndex& index,
                                                         const framework::DeviceUsage& usage,
                                                         const framework::NodeInfo& node) {
  auto gather = [&] {
    auto out = std::make_shared<NodeDevices>();
    GatherNodeDevices(index, usage, node, nullptr, {}, *out);
    return std::shared_ptr<const NodeDevices>(std::move(out));
  };
  if (node.index < 0) return gather();
  common::MutexLock l(mu_);
  const auto at = static_cast<size_t>(node.index);
  if (entries_.size() <= at) entries_.resize(at + 1);
  Entry& e = entries_[at];
  auto version_of = [&usage](uint32_t slot) {
    return slot < usage.node_version.size() ? usage.node_version[slot] : 0;
  };
  if (e.devices != nullptr && e.node == node.node && e.index_version == usage.index_version &&
      e.node_version == version_of(e.slot) && e.shared_version == usage.shared_version) {
    return e.devices;
  }
  e.node = node.node;
  e.index_version = usage.index_version;
  e.slot = framework::kNoNodeSlot;
  for (uint32_t d : index.NodeDevices(node.name())) {
    if (index.devices[d].node_slot != framework::kNoNodeSlot) {
      e.slot = index.devices[d].node_slot;
      break;
    }
  }
  e.node_version = version_of(e.slot);
  e.shared_version = usage.shared_version;
  e.devices = gather();
  return e.devices;
}

}  // namespace gpusched::plugins::dynamic_resources
