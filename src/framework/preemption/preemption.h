// SPDX-License-Identifier: Apache-2.0
// Victim selection for priority preemption, shared by the DefaultPreemption PostFilter plugin
// and the extender's preempt verb (kube-scheduler's pkg/scheduler/framework/preemption, used by
// its defaultpreemption plugin, v1.35 semantics).
//
//   VictimSelector::Select (one node): remove every pod of lower priority than the pod from a
//   copy of the node and check that the pod fits (PostFilterContext::RunFilters); then reprieve,
//   most important first (MoreImportant), the PDB-violating pods before the others: add each back
//   and keep it if the pod still fits. A removed pod frees exactly the devices it holds
//   (NodeInfo::pod_devices) and the filters (GpuFit) judge the pod against the per-device state,
//   so the victims free whole devices for whole-GPU pods, enough milli and memory on one device
//   for a share, one NVLink island when it is required, healthy devices only.
//   PickNode (among candidates): fewest PDB violations, then the lowest highest victim priority,
//   the smallest priority sum, the fewest victims, the latest start among the highest-priority
//   victims, then the first candidate. The sum and the count include the gang members a
//   candidate's victims would leave useless (Candidate::broken_gang_members; none outside gangs,
//   where the order is upstream's).
//
// Not done as upstream: victims are removed without PreFilter extensions (AddPod/RemovePod), so
// cross-node plugins (PodTopologySpread, InterPodAffinity) judge the node with the PreFilter
// counts from before the removal.
//
// Threading: a VictimSelector keeps scratch buffers; one per thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "src/api/types.h"
#include "src/common/clock.h"
#include "src/framework/cycle_state.h"
#include "src/framework/node_info.h"
#include "src/framework/plugin.h"
#include "src/framework/status.h"

namespace gpusched::framework::preemption {

// "No preemption victims found for incoming pod": the node has no pod of lower priority.
inline constexpr std::string_view kNoVictims = "No preemption victims found for incoming pod";

// One node where the pod fits once `victims` (most important first) are gone.
struct Candidate {
  NodeIndex node = kNoNode;
  std::vector<api::PodPtr> victims;
  int32_t pdb_violations = 0;
  // Gang members that are not victims but become useless when the victims of their gang go (a
  // gang runs whole or not at all), with the sum of their priorities: PickNode counts them as
  // victims, so a partly evicted gang is never a cheaper victim than a whole one. Set by the
  // caller (DefaultPreemption, from the scheduler's gang record); 0 for pods in no gang.
  int32_t broken_gang_members = 0;
  int64_t broken_gang_priority_sum = 0;
};

// The node criteria over `candidates` (non-empty); returns the index of the chosen one. `now`
// stands in for the start time of victims that have none (not started yet).
size_t PickNode(std::span<const Candidate> candidates, common::TimePoint now);
// kube-scheduler's MoreImportantPod: higher priority, then the earlier start (`now` when unset).
bool MoreImportant(const api::Pod& a, const api::Pod& b, common::TimePoint now);
// Whether `node` holds a pod of lower priority than `pod` (without one, Select answers
// Unresolvable kNoVictims).
bool HasLowerPriorityPod(const api::Pod& pod, const NodeInfo& node);
// Deleted after a scheduler's preemption: deletionTimestamp set and a DisruptionTarget condition
// True with reason PreemptionByScheduler.
bool TerminatingByPreemption(const api::Pod& pod);

class VictimSelector {
 public:
  // `clock` gives the start time of pods that have none (MoreImportant); it outlives this.
  explicit VictimSelector(const common::Clock& clock) : clock_(clock) {}

  // The victims on `node` for `pod`: Success with out.victims (non-empty, most important first)
  // and out.pdb_violations (victims whose eviction exceeds a budget of `pdbs`), or the node's
  // rejection: Unresolvable kNoVictims when no pod has a lower priority, else the filters' first
  // rejection with every lower-priority pod removed. out.node is left to the caller.
  Status Select(CycleState& state, const api::Pod& pod, const NodeInfo& node,
                const PostFilterContext& context, std::span<const api::PdbPtr> pdbs,
                Candidate& out);
  // Whether the last Select's result stays the same at any later time (for VictimCache): false
  // when the order of its potential victims could change as the clock moves on, i.e. one of them
  // started at or after the `now` it was ordered with (MoreImportant puts a pod without a start
  // time at `now`).
  bool last_result_time_invariant() const { return time_invariant_; }

 private:
  struct Victim {
    uint32_t pod = 0;  // index into the node's pods
    bool violates_pdb = false;
  };
  void KeepHigherPriorityPods(const api::Pod& pod, const NodeInfo& node);
  // Sorts potential_ by importance and marks those whose eviction would violate a PDB.
  void OrderVictims(const NodeInfo& node, std::span<const api::PdbPtr> pdbs, common::TimePoint now);
  // Adds `v` back to scratch_; keeps it there if the pod still fits (true), else removes it
  // again (false: a victim).
  bool Reprieve(const CycleState& state, const api::Pod& pod, const NodeInfo& node, const Victim& v,
                const PostFilterContext& context);

  const common::Clock& clock_;
  bool time_invariant_ = true;
  // Scratch, reused across calls.
  NodeInfo scratch_;
  std::vector<Victim> potential_;
};

}  // namespace gpusched::framework::preemption
