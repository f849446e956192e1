// SPDX-License-Identifier: Apache-2.0
// Consolidation: the PostFilter plugin that makes room for a pod no node can take by moving
// running pods, not by preempting them (issue #41; KAI's consolidation action). It runs after
// DefaultPreemption, when preemption had nothing to offer. It plans; the caller (the scheduler)
// evicts the moved pods through the Eviction API, nominates the pod and holds the room planned for
// each moved pod's replacement (PostFilterResult::destinations).
//
//   1. Movable pods (Movable): opted in by the pod annotation gpusched.io/movable: "true" (set it
//      on a controller's pod template), or by a PriorityClass or namespace named in the args;
//      gpusched.io/movable: "false" opts out. Never a pod without a controller (or owned by a
//      DaemonSet: it cannot run elsewhere), with an emptyDir or hostPath volume, being deleted,
//      in a gang, of a higher priority than the pod (its nomination, which holds the room, would
//      not hold against it), or the pod itself.
//   2. A node's moves: on every node whose Filter verdict was Unschedulable and that holds movable
//      pods, remove them all from a copy and check that the pod fits (PostFilterContext
//      RunFilters: nominated pods counted); then add back, the costliest to restart first
//      (higher pod-deletion-cost, then higher priority, then the longer running), every pod the
//      pod still fits with. The rest are the moves: a removed pod frees exactly the devices it
//      holds, as for preemption. At most maxMovesPerPod.
//   3. The plan: the nodes in order of fewest moves, then the cheapest (the sum of the moved
//      pods' deletion costs), then the first; the first whose moved pods each fit now on another
//      node (their own PreFilter and Filter: PostFilterContext::PreFilterFor and RunFiltersFor,
//      nominated pods counted; the moved pod still counts on its node; on a destination chosen
//      for an earlier moved pod, with that one's replacement added), best fit (the fewest free
//      milli-GPU, then the first) wins. A moved pod that fits nowhere stays (pinned) and the
//      node's moves are planned again without it; when every plan of the fewest moves fails, the
//      nodes that need more are planned, at most kNodesPlanned per attempt.
//   4. The rate: no plan that would take the moves of the last minute above maxMovesPerMinute.
//   Nothing to move (no movable pod on a candidate node): an empty Unschedulable, so the
//   FitError message is the same as without the plugin; movable pods that make no plan:
//   Unschedulable "consolidation: ..." with the reason.
//
// Args (ConsolidationArgs):
//   movablePriorityClasses: [names]  pods of these PriorityClasses are movable
//   movableNamespaces:      [names]  pods in these namespaces are movable
//   maxMovesPerPod:         1..16, default 8 (emptying an 8-GPU node of 1-GPU pods)
//   maxMovesPerMinute:      >= 1, default 10 (cluster-wide, counted from the plans made)
//
// A gang member is planned for like any pod, one member after another, by the scheduler's gang
// preemption (src/scheduler/gang_preemption.cc), which moves for all members or for none; a
// gang's own pods never move. Not done yet: explain's per-node record.
//
// Threading: PostFilter runs on the scheduling thread (it keeps scratch state).
#pragma once

#include <boost/json/fwd.hpp>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/common/status.h"
#include "src/framework/handle.h"
#include "src/framework/plugin.h"
#include "src/framework/registry.h"

namespace gpusched::plugins::consolidation {

inline constexpr std::string_view kMovableAnnotation = "gpusched.io/movable";

struct Args {
  std::vector<std::string> movable_priority_classes;
  std::vector<std::string> movable_namespaces;
  int32_t max_moves_per_pod = 8;
  int32_t max_moves_per_minute = 10;
};
// Every error names its field: "maxMovesPerPod: must be in 1..16, got 0".
common::StatusOr<Args> ParseArgs(const boost::json::value& args);

// Whether `running` opted in to moves under `args`, whatever pod waits: step 1 without the
// conditions on the waiting pod.
bool OptedIn(const api::Pod& running, const Args& args);
// Whether `running` may be moved to make room for `pod` under `args` (step 1).
bool Movable(const api::Pod& running, const api::Pod& pod, const Args& args);

class Consolidation final : public framework::PostFilterPlugin {
 public:
  static common::StatusOr<framework::PluginPtr> Create(const boost::json::value& args,
                                                       framework::Handle& handle);
  Consolidation(Args args, framework::Handle& handle) : args_(std::move(args)), handle_(handle) {}

  std::string_view Name() const override;
  framework::Status PostFilter(framework::CycleState& state, const api::Pod& pod,
                               const framework::Snapshot& snapshot,
                               const framework::PostFilterContext& context,
                               framework::PostFilterResult& result) override;

 private:
  // What a node's opted-in pods (OptedIn) hold, kept per node while its generation is the same:
  // a cluster without movable pods costs one comparison per node and failed attempt.
  struct NodeOptIn {
    bool valid = false;
    uint64_t generation = 0;
    std::vector<uint32_t> pods;  // indices into the node's pods, ascending
    int64_t gpu_milli = 0;
    int64_t largest_gpu_milli = 0;
    int64_t milli_cpu = 0;
    int64_t largest_milli_cpu = 0;
  };
  struct Candidate {
    int32_t lower_bound = 0;  // moves the node needs at least
    framework::NodeIndex node = framework::kNoNode;
  };
  // Step 2 on one node: the moves (costliest first), or why none make room.
  struct NodeMoves {
    framework::NodeIndex node = framework::kNoNode;
    std::vector<api::PodPtr> moves;
    int64_t cost = 0;  // the sum of the moved pods' deletion costs
  };
  // Plans compared for their cost among those with the fewest moves: a bound on the work per
  // attempt, as DefaultPreemption's candidate count.
  static constexpr size_t kPlansCompared = 10;
  // Nodes planned for per attempt, over all tiers (a tier: the plans Plans returns at once).
  static constexpr size_t kNodesPlanned = 32;

  // The Unschedulable nodes with opted-in pods whose lower bound is within maxMovesPerPod, into
  // candidates_, fewest first.
  void FindCandidates(const api::Pod& pod, const framework::Snapshot& snapshot,
                      const framework::PostFilterContext& context, bool& any_opted_in);
  // Step 2 over candidates_ from `next` while one could still need fewer moves than the best so
  // far (and, at equal moves, until kPlansCompared plans): a tier of plans, fewest moves and
  // cheapest first; `next` ends at the first candidate not planned for. `why` gets the first
  // rejection with a reason.
  std::vector<NodeMoves> Plans(const framework::CycleState& state, const api::Pod& pod,
                               const framework::Snapshot& snapshot,
                               const framework::PostFilterContext& context, size_t& next,
                               framework::Status& why);
  // Step 3 for one plan: the destinations of its moved pods. A moved pod that fits on no other
  // node is pinned (it stays) and the node's moves are planned again without it, until every
  // moved pod has a destination (`plan` is then the plan made) or the node makes no room.
  std::vector<std::string> PlaceMoves(const framework::CycleState& state, const api::Pod& pod,
                                      const framework::Snapshot& snapshot,
                                      const framework::PostFilterContext& context, NodeMoves& plan);
  framework::Status MovesOn(const framework::CycleState& state, const api::Pod& pod,
                            const framework::NodeInfo& node,
                            const framework::PostFilterContext& context, NodeMoves& out);
  // The destinations of one node's moves, or an empty vector when moves.moves[stuck] fits on no
  // other node.
  std::vector<std::string> Destinations(const NodeMoves& moves, const framework::Snapshot& snapshot,
                                        const framework::PostFilterContext& context, size_t& stuck);
  // The copy of `node` in planned_, or nullptr.
  framework::NodeInfo* PlannedCopy(framework::NodeIndex node);
  // Adds `replacement` to a planned destination, on the devices the best fit chooses (as
  // RunFilters counts a nominated pod).
  static void PlanOn(framework::NodeInfo& node, api::PodPtr replacement);
  // Step 4: the moves of the last minute, and the rejection when a plan would exceed the rate.
  int32_t MovesInLastMinute();
  framework::Status OverRate(int32_t recent) const;
  const NodeOptIn& OptInOf(const framework::NodeInfo& node);
  // The fewest moves the node could need (from its free milli-GPU and cpu and what its opted-in
  // pods hold: a necessary condition); -1 when moving all of them frees too little.
  static int32_t LowerBound(const api::Pod& pod, const framework::NodeInfo& node,
                            const NodeOptIn& in);

  Args args_;
  framework::Handle& handle_;
  std::deque<common::TimePoint> recent_moves_;
  // Scratch, reused across calls.
  framework::NodeInfo scratch_;
  std::vector<size_t> movable_;          // indices into the node's pods
  std::vector<const api::Pod*> pinned_;  // this plan's moved pods with no destination: they stay
  std::vector<Candidate> candidates_;    // this attempt's nodes
  std::vector<std::pair<int64_t, framework::NodeIndex>> by_free_;  // free milli-GPU, node
  std::deque<framework::NodeInfo> planned_;  // destinations with their planned replacements
  std::vector<NodeOptIn> opted_in_;          // by node index
};

}  // namespace gpusched::plugins::consolidation
