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
//   3. Victims on a node: framework::preemption::VictimSelector (remove every pod of lower
//      priority, check that the pod fits with PostFilterContext::RunFilters, nominated pods
//      included; reprieve most important first, PDB-violating pods before the others; a removed
//      pod frees exactly the devices it holds, so the victims free usable devices, not just a
//      GPU count; src/framework/preemption/preemption.h).
//   4. The node: framework::preemption::PickNode (fewest PDB violations, then the lowest highest
//      victim priority, the smallest priority sum, the fewest victims, the latest start among
//      the highest-priority victims, then the first candidate found). A victim in a gang
//      (api/gang.h) leaves the rest of its gang useless: those members count as victims in the
//      sum and the count, so a partly evicted gang is never cheaper than a whole one.
//   No candidate: Unschedulable "preemption: 0/N nodes are available: ..." (each node's reason
//   after its victims were removed, "No preemption victims found for incoming pod", and
//   "Preemption is not helpful for scheduling" for the nodes not tried), and the pod's nomination
//   is cleared.
//
// Args (DefaultPreemptionArgs):
//   minCandidateNodesPercentage: 0..100, default 10
//   minCandidateNodesAbsolute:   >= 0, default 100 (not both 0)
//
// Not done as upstream: victims are removed without PreFilter extensions (see preemption.h); the
// dry run is sequential, from a reproducible random offset (upstream's is parallel). Each node's
// result is kept for the next equivalent pod while the node is unchanged (VictimCache: exact).
//
// Threading: PostFilter runs on the scheduling thread (it keeps scratch buffers).
#pragma once

#include <boost/json/fwd.hpp>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "src/common/random.h"
#include "src/common/status.h"
#include "src/framework/handle.h"
#include "src/framework/plugin.h"
#include "src/framework/preemption/preemption.h"
#include "src/framework/preemption/victim_cache.h"
#include "src/framework/registry.h"

namespace gpusched::plugins::default_preemption {

struct Args {
  int32_t min_candidate_nodes_percentage = 10;
  int32_t min_candidate_nodes_absolute = 100;
};
// Every error names its field: "minCandidateNodesPercentage: must be in 0..100, got 120".
common::StatusOr<Args> ParseArgs(const boost::json::value& args);

class DefaultPreemption final : public framework::PostFilterPlugin {
 public:
  static common::StatusOr<framework::PluginPtr> Create(const boost::json::value& args,
                                                       framework::Handle& handle);
  DefaultPreemption(Args args, framework::Handle& handle)
      : args_(args), handle_(handle), selector_(handle.clock()) {}

  std::string_view Name() const override;
  framework::Status PostFilter(framework::CycleState& state, const api::Pod& pod,
                               const framework::Snapshot& snapshot,
                               const framework::PostFilterContext& context,
                               framework::PostFilterResult& result) override;

  // How many candidates the dry run looks for among `potential` nodes.
  int32_t NumCandidates(int32_t potential) const;

 private:
  // Step 1: empty when the pod may preempt, else why not.
  std::string_view Ineligible(const api::Pod& pod, const framework::Snapshot& snapshot,
                              const framework::PostFilterContext& context) const;
  // Step 2 and 3 over the potential nodes; `failed` gets each tried node's rejection, except
  // when no potential node holds a pod of lower priority: then every one is counted in
  // `no_victims` instead. With `per_node` (explain), every potential node is tried and recorded
  // there; the candidates returned are the same as without.
  std::vector<framework::preemption::Candidate> DryRun(
      framework::CycleState& state, const api::Pod& pod, const framework::Snapshot& snapshot,
      std::span<const framework::NodeIndex> potential, const framework::PostFilterContext& context,
      std::vector<framework::Status>& failed, int32_t& no_victims,
      std::vector<framework::NodePostFilter>* per_node);
  // Step 3 on one node: the stored result of an equivalent earlier attempt when the node has not
  // changed (framework::preemption::VictimCache), else VictimSelector::Select (then stored).
  framework::Status SelectVictims(framework::CycleState& state, const api::Pod& pod,
                                  const framework::Snapshot& snapshot, framework::NodeIndex node,
                                  const framework::PostFilterContext& context,
                                  std::span<const api::PdbPtr> pdbs,
                                  framework::preemption::Candidate& out);

  // Sets each candidate's broken_gang_members: for every gang its victims belong to, the members
  // reserved or bound now (Handle::gangs()) that are not victims themselves.
  void CountBrokenGangs(std::span<framework::preemption::Candidate> candidates) const;

  Args args_;
  framework::Handle& handle_;
  common::Random random_;                           // the dry run's offset: reproducible runs
  framework::preemption::VictimSelector selector_;  // step 3, with its scratch buffers
  framework::preemption::VictimCache cache_;        // step 3's results across attempts
  std::string key_;                                 // the pod's equivalence key (scratch)
};

}  // namespace gpusched::plugins::default_preemption
