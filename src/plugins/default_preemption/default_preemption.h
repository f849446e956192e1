// SPDX-License-Identifier: Apache-2.0
// DefaultPreemption: the PostFilter plugin that makes room for a pod no node can take, by choosing
// pods of lower priority to evict on one node (kube-scheduler's defaultpreemption plugin and
// preemption.Evaluator, v1.35 semantics). It decides; the caller evicts the victims and nominates
// the pod (PostFilterResult).
//
//   1. Eligibility: not with preemptionPolicy Never ("not eligible due to
//      preemptionPolicy=Never."); not while a lower-priority pod on the pod's nominated node is
//      still terminating from an earlier preemption ("not eligible due to a terminating pod on the
//      nominated node."), unless that node is now Unresolvable for it.
//   2. Candidates: only nodes whose Filter verdict was Unschedulable (not Unresolvable), visited
//      from a random offset, until there are max(minCandidateNodesPercentage% of them,
//      minCandidateNodesAbsolute) candidates, at least one without PDB violations.
//   3. Victims on a node (SelectVictims): remove every pod of lower priority, check that the pod
//      fits (PostFilterContext::RunFilters, nominated pods included); then reprieve, most
//      important first (priority, then earlier start), PDB-violating pods before the others: add
//      each back and keep it if the pod still fits. GPUs: a removed pod frees exactly the devices
//      it holds (NodeInfo::pod_devices) and the filters (GpuFit) check the pod's devices against
//      the per-device state, so the victims free whole devices for whole-GPU pods, enough milli
//      and memory on one device for a share, one NVLink island when it is required, healthy
//      devices only — counting GPUs alone cannot pick a set that frees no usable device.
//   4. The node (PickNode): fewest PDB violations, then the lowest highest victim priority, the
//      smallest priority sum, the fewest victims, the latest start among the highest-priority
//      victims, then the first candidate found.
//   No candidate: Unschedulable "preemption: 0/N nodes are available: ..." (each node's reason
//   after its victims were removed, "No preemption victims found for incoming pod", and
//   "Preemption is not helpful for scheduling" for the nodes not tried), and the pod's nomination
//   is cleared.
//
// Args (DefaultPreemptionArgs):
//   minCandidateNodesPercentage: 0..100, default 10
//   minCandidateNodesAbsolute:   >= 0, default 100 (not both 0)
//
// Not done as upstream: victims are removed without PreFilter extensions (AddPod/RemovePod), so
// PodTopologySpread and InterPodAffinity judge a candidate node with their PreFilter counts of the
// cycle, before removal (upstream updates them); the dry run is sequential, from a reproducible
// random offset (upstream's is parallel).
//
// Threading: PostFilter runs on the scheduling thread (it keeps scratch buffers).
#pragma once

#include <boost/json/value.hpp>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "src/common/random.h"
#include "src/common/status.h"
#include "src/framework/handle.h"
#include "src/framework/plugin.h"
#include "src/framework/registry.h"

namespace gpusched::plugins::default_preemption {

struct Args {
  int32_t min_candidate_nodes_percentage = 10;
  int32_t min_candidate_nodes_absolute = 100;
};
// Every error names its field: "minCandidateNodesPercentage: must be in 0..100, got 120".
common::StatusOr<Args> ParseArgs(const boost::json::value& args);

// One node where the pod fits once `victims` (most important first) are gone.
struct Candidate {
  framework::NodeIndex node = framework::kNoNode;
  std::vector<api::PodPtr> victims;
  int32_t pdb_violations = 0;
};

// The criteria of step 4 over `candidates` (non-empty); returns the index of the chosen one.
// `now` stands in for the start time of victims that have none (not started yet).
size_t PickNode(std::span<const Candidate> candidates, common::TimePoint now);
// kube-scheduler's MoreImportantPod: higher priority, then the earlier start (`now` when unset).
bool MoreImportant(const api::Pod& a, const api::Pod& b, common::TimePoint now);
// Deleted after a scheduler's preemption: deletionTimestamp set and a DisruptionTarget condition
// True with reason PreemptionByScheduler.
bool TerminatingByPreemption(const api::Pod& pod);

class DefaultPreemption final : public framework::PostFilterPlugin {
 public:
  static common::StatusOr<framework::PluginPtr> Create(const boost::json::value& args,
                                                       framework::Handle& handle);
  DefaultPreemption(Args args, framework::Handle& handle) : args_(args), handle_(handle) {}

  std::string_view Name() const override;
  framework::Status PostFilter(framework::CycleState& state, const api::Pod& pod,
                               const framework::Snapshot& snapshot,
                               const framework::PostFilterContext& context,
                               framework::PostFilterResult& result) override;

  // How many candidates the dry run looks for among `potential` nodes.
  int32_t NumCandidates(int32_t potential) const;
  // Step 3 on one node: Success with out.victims (non-empty) and out.pdb_violations, or the
  // node's rejection.
  framework::Status SelectVictims(framework::CycleState& state, const api::Pod& pod,
                                  const framework::NodeInfo& node,
                                  const framework::PostFilterContext& context,
                                  std::span<const api::PdbPtr> pdbs, Candidate& out);

 private:
  struct Victim {
    api::PodPtr pod;
    framework::PodDevices devices;
    bool violates_pdb = false;
  };
  // Step 1: empty when the pod may preempt, else why not.
  std::string_view Ineligible(const api::Pod& pod, const framework::Snapshot& snapshot,
                              const framework::PostFilterContext& context) const;
  // Step 2 and 3 over the potential nodes; `failed` gets each tried node's rejection.
  std::vector<Candidate> DryRun(framework::CycleState& state, const api::Pod& pod,
                                const framework::Snapshot& snapshot,
                                std::span<const framework::NodeIndex> potential,
                                const framework::PostFilterContext& context,
                                std::vector<framework::Status>& failed);
  // Sorts potential_ by importance and marks those whose eviction would violate a PDB.
  void OrderVictims(std::span<const api::PdbPtr> pdbs, common::TimePoint now);
  // Adds `v` back to scratch_; keeps it there if the pod still fits (true), else removes it
  // again (false: a victim).
  bool Reprieve(const framework::CycleState& state, const api::Pod& pod, const Victim& v,
                const framework::PostFilterContext& context);

  Args args_;
  framework::Handle& handle_;
  common::Random random_;  // the dry run's offset: reproducible runs
  // Scratch, reused across calls (scheduling thread).
  framework::NodeInfo scratch_;
  std::vector<Victim> potential_;
};

}  // namespace gpusched::plugins::default_preemption
