// SPDX-License-Identifier: Apache-2.0
// Lookahead: which of the nodes a pod could take leaves room for the most pods still waiting for
// devices. For each candidate node, the pod's claims are allocated there as Reserve would, then
// the claims waiting for an allocation (DraView::WaitingClaims, in their pods' likely scheduling
// order) are replayed greedily, each on the first node in the replay's order where the allocator
// fits it: fewest free devices first (packing), most first (spreading), and kRandomReplays
// times in a shuffled order (a uniform choice among the nodes where it fits; a fixed seed, so
// every candidate and cycle sees the same draws). A candidate's value is the largest count of
// pods a replay serves: a lower bound of what the best sequence of choices could serve after
// it. Replays see devices only (not the waiting pods' affinity, taints or CPU) and take each
// claim's devices as the allocator picks them.
//
// Cost: candidates × replays × waiting claims × device nodes node visits (a free-device count;
// the allocator runs only until the first fit), bounded by kLookaheadBudget: over it, the random
// replays are dropped, then the waiting list is cut to fit; when that would leave fewer than
// kMinLookaheadClaims there is no lookahead (the plugin uses device pressure instead,
// pressure.h). With the budget, a cycle costs at most a few milliseconds (BENCHMARKS.md, "DRA
// lookahead"); a cluster of 500 nodes never fits it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "src/api/dra.h"
#include "src/framework/dra_view.h"
#include "src/framework/node_info.h"
#include "src/plugins/dynamic_resources/allocator.h"
#include "src/plugins/dynamic_resources/selectors.h"

namespace gpusched::plugins::dynamic_resources {

inline constexpr size_t kLookaheadBudget = 200000;  // node visits per scheduling cycle
inline constexpr size_t kMinLookaheadClaims = 8;
inline constexpr size_t kRandomReplays = 16;

// A waiting claim to replay and the pods it serves.
struct WaitingPlan {
  ClaimPlan plan;
  int32_t pods = 1;
};

struct LookaheadSize {
  size_t claims = 0;          // how many waiting claims to replay; 0: no lookahead
  size_t random_replays = 0;  // kRandomReplays or 0
};

// The lookahead over `candidates` nodes, `device_nodes` nodes that reach devices and `waiting`
// claims that fits the budget.
LookaheadSize SizeLookahead(size_t candidates, size_t device_nodes, size_t waiting);

// The plans of the pod's claims to allocate on a candidate node (with the claim for its extended
// resources there: they differ by node); null where the pod cannot be placed.
using OwnPlans = std::function<const std::vector<ClaimPlan>*(const framework::NodeInfo&)>;

// Per candidate, the pods of `waiting` the best replay serves once the pod's `own` claims are
// allocated on it (-1 where they cannot be), over 2 + `random_replays` replays. `usage`: the
// devices held now.
std::vector<int32_t> Lookahead(const framework::DeviceIndex& index,
                               const framework::DeviceUsage& usage, const OwnPlans& own,
                               std::span<const framework::NodeInfo* const> candidates,
                               std::span<const framework::NodeInfo* const> device_nodes,
                               std::span<const WaitingPlan> waiting, size_t random_replays);

struct LookaheadResult {
  std::vector<int32_t> counts;  // per feasible node, as Lookahead()
  size_t waiting_claims = 0;    // how many were replayed
  size_t random_replays = 0;
};

// The whole lookahead for a pod, as the plugin's PreScore and `gpusched explain` run it: `own`
// gives the plans of the pod's unallocated claims per candidate, `own_claims` are all its claims
// (not counted as waiting), `feasible` indices into `snapshot`; the waiting claims come from
// `view` (WaitingClaims, planned with `selectors`; a claim that cannot be planned is skipped).
// Nullopt when no other claim waits or the budget allows no lookahead.
std::optional<LookaheadResult> LookAheadForPod(
    SelectorCache& selectors, const framework::DraView& view, const framework::DeviceIndex& index,
    const framework::DeviceUsage& usage, const OwnPlans& own,
    std::span<const api::ResourceClaimPtr> own_claims, const framework::Snapshot& snapshot,
    std::span<const framework::NodeIndex> feasible);

}  // namespace gpusched::plugins::dynamic_resources
