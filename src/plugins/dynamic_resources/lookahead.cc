// SPDX-License-Identifier: Apache-2.0
#include "src/plugins/dynamic_resources/lookahead.h"

#include <algorithm>
#include <random>

#include "src/plugins/dynamic_resources/node_devices.h"

namespace gpusched::plugins::dynamic_resources {
namespace {

enum class Policy { kPack, kSpread, kRandom };

// The same pseudo-random sequence for every candidate and cycle: replays differ only by the
// candidate's allocation, and decisions are reproducible.
constexpr uint64_t kReplaySeed = 0x9e3779b97f4a7c15ULL;

// Whether `plan` may fit among the node-local devices `local` that are free (not marked in
// `taken`, which includes the devices claims hold): each request has, for one of its alternatives,
// as many free matching devices as it asks for (allocationMode All: one). A cheap test before the
// allocator; not exact (constraints, taints), so a true answer is checked by Allocate.
bool MayFit(const ClaimPlan& plan, std::span<const uint32_t> local,
            const std::vector<uint8_t>& taken) {
  for (const RequestPlan& r : plan.requests) {
    bool some = false;
    for (const Alternative& alt : r.alternatives) {
      if (alt.choice->admin_access) {
        some = true;
        break;
      }
      const int64_t need = alt.choice->mode == api::AllocationMode::kAll ? 1 : alt.choice->count;
      int64_t have = 0;
      for (uint32_t d : local) {
        if (taken[d] == 0 && alt.matches->match[d] != 0 && ++have >= need) break;
      }
      if (have >= need) {
        some = true;
        break;
      }
    }
    if (!some) return false;
  }
  return true;
}

// The free devices (neither held nor taken) of each of `device_nodes`.
void CountFree(const framework::DeviceIndex& index, const framework::DeviceUsage& usage,
               std::span<const framework::NodeInfo* const> device_nodes,
               std::span<const std::span<const uint32_t>> local, const std::vector<uint8_t>& taken,
               std::vector<size_t>& out) {
  thread_local NodeDevices devices;
  out.assign(device_nodes.size(), 0);
  for (size_t n = 0; n < device_nodes.size(); ++n) {
    if (index.not_node_local.empty()) {
      for (uint32_t d : local[n]) out[n] += taken[d] == 0 ? 1 : 0;
      continue;
    }
    GatherNodeDevices(index, usage, *device_nodes[n], nullptr, taken, devices);
    for (const NodeDevice& d : devices.devices) out[n] += d.busy ? 0 : 1;
  }
}

// Places each of `waiting` in order on the first node where the allocator fits it, in the order
// `policy` gives (fewest free devices first, most first, or shuffled by `rng`: a uniform choice
// among the nodes where it fits), marking its devices in `taken`; returns the pods served.
int32_t Replay(Policy policy, std::mt19937_64& rng, const framework::DeviceIndex& index,
               const framework::DeviceUsage& usage,
               std::span<const framework::NodeInfo* const> device_nodes,
               std::span<const std::span<const uint32_t>> local,
               std::span<const WaitingPlan> waiting, std::vector<uint8_t>& taken) {
  thread_local NodeDevices devices;
  thread_local std::vector<uint32_t> held;
  thread_local std::vector<size_t> free;
  thread_local std::vector<uint32_t> order;
  int32_t served = 0;
  for (const WaitingPlan& w : waiting) {
    CountFree(index, usage, device_nodes, local, taken, free);
    order.resize(device_nodes.size());
    for (uint32_t n = 0; n < order.size(); ++n) order[n] = n;
    if (policy == Policy::kRandom) {
      std::shuffle(order.begin(), order.end(), rng);
    } else {
      std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
        return policy == Policy::kPack ? free[a] < free[b] : free[a] > free[b];
      });
    }
    for (uint32_t n : order) {
      if (free[n] == 0) continue;
      // Devices reached by node selector are not in `local`: no shortcut then.
      if (index.not_node_local.empty() && !MayFit(w.plan, local[n], taken)) continue;
      GatherNodeDevices(index, usage, *device_nodes[n], nullptr, taken, devices);
      if (!Allocate(std::span(&w.plan, 1), index, devices, nullptr, &held)) continue;
      for (uint32_t d : held) taken[d] = 1;
      served += w.pods;
      break;
    }
  }
  return served;
}

// The snapshot's nodes that reach a device (all valid nodes when some devices are reached by
// node selector).
std::vector<const framework::NodeInfo*> DeviceNodes(const framework::DeviceIndex& index,
                                                    const framework::Snapshot& snapshot) {
  std::vector<const framework::NodeInfo*> out;
  if (!index.not_node_local.empty()) {
    for (const framework::NodeInfo& n : snapshot.nodes()) {
      if (n.valid()) out.push_back(&n);
    }
    return out;
  }
  for (const auto& [name, devices] : index.by_node) {
    if (const framework::NodeInfo* n = snapshot.Get(name); n != nullptr) out.push_back(n);
  }
  return out;
}

// The claims waiting for devices other than `own`, planned, at most `limit`.
std::vector<WaitingPlan> PlanWaiting(SelectorCache& selectors, const framework::DraView& view,
                                     const framework::DeviceIndex& index,
                                     std::span<const api::ResourceClaimPtr> own, size_t limit) {
  std::vector<WaitingPlan> out;
  for (framework::WaitingClaim& w : view.WaitingClaims()) {
    if (out.size() == limit) break;
    const bool mine = std::any_of(own.begin(), own.end(), [&](const api::ResourceClaimPtr& c) {
      return c->meta.name == w.claim->meta.name && c->meta.namespace_ == w.claim->meta.namespace_;
    });
    if (mine) continue;
    common::StatusOr<ClaimPlan> plan = PlanClaim(selectors, view, index, w.claim);
    if (plan.ok()) out.push_back({*std::move(plan), std::max(1, w.pods)});
  }
  return out;
}

}  // namespace

LookaheadSize SizeLookahead(size_t candidates, size_t device_nodes, size_t waiting) {
  const size_t per_replay_claim = std::max<size_t>(1, candidates * device_nodes);
  if (waiting * (2 + kRandomReplays) * per_replay_claim <= kLookaheadBudget) {
    return {waiting, kRandomReplays};
  }
  const size_t fit = std::min(waiting, kLookaheadBudget / (2 * per_replay_claim));
  return {fit < waiting && fit < kMinLookaheadClaims ? 0 : fit, 0};
}

std::vector<int32_t> Lookahead(const framework::DeviceIndex& index,
                               const framework::DeviceUsage& usage, const OwnPlans& own,
                               std::span<const framework::NodeInfo* const> candidates,
                               std::span<const framework::NodeInfo* const> device_nodes,
                               std::span<const WaitingPlan> waiting, size_t random_replays) {
  std::vector<uint8_t> held_now(index.devices.size(), 0);
  for (size_t d = 0; d < held_now.size() && d < usage.holder.size(); ++d) {
    held_now[d] = usage.holder[d] != nullptr ? 1 : 0;
  }
  std::vector<std::span<const uint32_t>> local;
  local.reserve(device_nodes.size());
  for (const framework::NodeInfo* node : device_nodes) {
    local.push_back(index.NodeDevices(node->name()));
  }
  std::vector<int32_t> out;
  out.reserve(candidates.size());
  NodeDevices devices;
  std::vector<uint32_t> own_devices;
  std::vector<uint8_t> taken;
  for (const framework::NodeInfo* node : candidates) {
    const std::vector<ClaimPlan>* plans = own(*node);
    own_devices.clear();
    GatherNodeDevices(index, usage, *node, nullptr, {}, devices);
    if (plans == nullptr || !Allocate(*plans, index, devices, nullptr, &own_devices)) {
      out.push_back(-1);
      continue;
    }
    int32_t best = 0;
    std::mt19937_64 rng(kReplaySeed);
    for (size_t r = 0; r < 2 + random_replays; ++r) {
      const Policy policy = r == 0 ? Policy::kPack : r == 1 ? Policy::kSpread : Policy::kRandom;
      taken = held_now;
      for (uint32_t d : own_devices) taken[d] = 1;
      best = std::max(best, Replay(policy, rng, index, usage, device_nodes, local, waiting, taken));
    }
    out.push_back(best);
  }
  return out;
}

std::optional<LookaheadResult> LookAheadForPod(
    SelectorCache& selectors, const framework::DraView& view, const framework::DeviceIndex& index,
    const framework::DeviceUsage& usage, const OwnPlans& own,
    std::span<const api::ResourceClaimPtr> own_claims, const framework::Snapshot& snapshot,
    std::span<const framework::NodeIndex> feasible) {
  const size_t node_bound =
      index.not_node_local.empty() ? index.by_node.size() : snapshot.nodes().size();
  const size_t waiting_bound = view.PendingCount();
  if (waiting_bound == 0 || SizeLookahead(feasible.size(), node_bound, waiting_bound).claims == 0) {
    return std::nullopt;
  }
  std::vector<const framework::NodeInfo*> candidates;
  for (framework::NodeIndex i : feasible) {
    if (i < 0 || static_cast<size_t>(i) >= snapshot.nodes().size()) return std::nullopt;
    candidates.push_back(&snapshot.at(i));
  }
  const std::vector<const framework::NodeInfo*> nodes = DeviceNodes(index, snapshot);
  const LookaheadSize size = SizeLookahead(feasible.size(), nodes.size(), waiting_bound);
  if (size.claims == 0) return std::nullopt;
  const std::vector<WaitingPlan> waiting =
      PlanWaiting(selectors, view, index, own_claims, size.claims);
  if (waiting.empty()) return std::nullopt;
  LookaheadResult r;
  r.counts = Lookahead(index, usage, own, candidates, nodes, waiting, size.random_replays);
  r.waiting_claims = waiting.size();
  r.random_replays = size.random_replays;
  return r;
}

}  // namespace gpusched::plugins::dynamic_resources
