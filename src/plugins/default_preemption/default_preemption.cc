// SPDX-License-Identifier: Apache-2.0
#include "src/plugins/default_preemption/default_preemption.h"

#include <algorithm>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>

#include "src/api/equivalence.h"
#include "src/api/gang.h"
#include "src/common/interner.h"
#include "src/framework/gangs.h"
#include "src/framework/reasons.h"
#include "src/plugins/helper/args.h"
#include "src/plugins/names.h"

namespace gpusched::plugins::default_preemption {

using framework::Code;
using framework::NodeIndex;
using framework::NodeInfo;
using framework::Status;
using framework::preemption::Candidate;

namespace {

constexpr std::string_view kNotHelpful = "Preemption is not helpful for scheduling";

// "preemption: 0/N nodes are available: <count reason, sorted>." over the tried nodes' rejections
// and `no_victims` more nodes without victims; the nodes not tried count as kNotHelpful.
std::string NoCandidateMessage(std::span<const Status> failed, int32_t no_victims,
                               int32_t num_nodes) {
  std::vector<std::pair<std::string_view, int32_t>> counts;
  auto add = [&counts](std::string_view reason, int32_t n) {
    for (auto& c : counts) {
      if (c.first == reason) {
        c.second += n;
        return;
      }
    }
    counts.emplace_back(reason, n);
  };
  for (const Status& s : failed) {
    framework::ForEachReason(s.reason(), [&add](std::string_view r) { add(r, 1); });
  }
  if (no_victims > 0) add(framework::preemption::kNoVictims, no_victims);
  const int32_t untried = num_nodes - static_cast<int32_t>(failed.size()) - no_victims;
  if (untried > 0) add(kNotHelpful, untried);
  std::vector<std::string> items;
  items.reserve(counts.size());
  for (const auto& [reason, n] : counts)
    items.push_back(std::to_string(n) + " " + std::string(reason));
  std::sort(items.begin(), items.end());
  std::string msg = "preemption: 0/" + std::to_string(num_nodes) + " nodes are available:";
  for (size_t i = 0; i < items.size(); ++i) msg += (i == 0 ? " " : ", ") + items[i];
  return msg + ".";
}

}  // namespace

common::StatusOr<Args> ParseArgs(const boost::json::value& json) {
  Args args;
  GPUSCHED_RETURN_IF_ERROR(helper::ReadArgs(json, [&](api::ObjectFields& f) {
    if (auto v = f.Int("minCandidateNodesPercentage", 0, 100)) {
      args.min_candidate_nodes_percentage = static_cast<int32_t>(*v);
    }
    if (auto v = f.Int("minCandidateNodesAbsolute", 0, std::numeric_limits<int32_t>::max())) {
      args.min_candidate_nodes_absolute = static_cast<int32_t>(*v);
    }
    if (f.reader().ok() && args.min_candidate_nodes_percentage == 0 &&
        args.min_candidate_nodes_absolute == 0) {
      f.Error("minCandidateNodesAbsolute",
              "minCandidateNodesPercentage and minCandidateNodesAbsolute cannot be both zero");
    }
  }));
  return args;
}

common::StatusOr<framework::PluginPtr> DefaultPreemption::Create(const boost::json::value& json,
                                                                 framework::Handle& handle) {
  GPUSCHED_ASSIGN_OR_RETURN(Args args, ParseArgs(json));
  return framework::PluginPtr(std::make_unique<DefaultPreemption>(args, handle));
}

std::string_view DefaultPreemption::Name() const { return names::kDefaultPreemption; }

int32_t DefaultPreemption::NumCandidates(int32_t potential) const {
  int64_t n = int64_t{potential} * args_.min_candidate_nodes_percentage / 100;
  n = std::max<int64_t>(n, args_.min_candidate_nodes_absolute);
  return static_cast<int32_t>(std::min<int64_t>(n, potential));
}

void DefaultPreemption::CountBrokenGangs(std::span<Candidate> candidates) const {
  framework::Gangs* gangs = handle_.gangs();
  if (gangs == nullptr) return;
  for (Candidate& c : candidates) {
    c.broken_gang_members = 0;
    c.broken_gang_priority_sum = 0;
    if (std::none_of(c.victims.begin(), c.victims.end(),
                     [](const api::PodPtr& v) { return !v->gang.empty(); })) {
      continue;  // the common case: no victim in a gang, nothing to allocate
    }
    std::map<std::string, int32_t> priority_by_gang;  // gangs hit, with a victim's priority
    std::set<std::string_view> victim_uids;
    for (const api::PodPtr& v : c.victims) {
      victim_uids.insert(v->meta.uid);
      if (v->gang.empty()) continue;
      api::PodGroupPtr policy = gangs->PolicyOf(*v);
      if (policy != nullptr && policy->gang)
        priority_by_gang.emplace(api::GangKey(*v), v->priority);
    }
    for (const auto& [key, priority] : priority_by_gang) {
      for (const std::string& uid : gangs->ReservedMembers(key)) {
        if (victim_uids.contains(uid)) continue;
        ++c.broken_gang_members;
        c.broken_gang_priority_sum += priority;
      }
    }
  }
}

Status DefaultPreemption::PostFilter(framework::CycleState& state, const api::Pod& pod,
                                     const framework::Snapshot& snapshot,
                                     const framework::PostFilterContext& context,
                                     framework::PostFilterResult& result) {
  if (std::string_view why = Ineligible(pod, snapshot, context); !why.empty()) {
    return Status::WithMessage(Code::kUnschedulable, "preemption: " + std::string(why));
  }
  const std::span<const NodeIndex> potential = context.PotentialNodes();
  std::vector<Status> failed;
  int32_t no_victims = 0;
  std::vector<Candidate> candidates;
  std::vector<framework::NodePostFilter>* per_node =
      context.RecordPerNode() ? &result.per_node : nullptr;
  if (!potential.empty()) {
    candidates = DryRun(state, pod, snapshot, potential, context, failed, no_victims, per_node);
  }
  if (candidates.empty()) {
    result.mode = framework::PostFilterResult::Mode::kOverride;  // clear the nomination
    result.nominated_node.clear();
    return Status::WithMessage(Code::kUnschedulable,
                               NoCandidateMessage(failed, no_victims, snapshot.num_nodes()));
  }
  CountBrokenGangs(candidates);
  Candidate& best = candidates[framework::preemption::PickNode(candidates, handle_.clock().Now())];
  result.mode = framework::PostFilterResult::Mode::kOverride;
  result.nominated_node = std::string(snapshot.at(best.node).name());
  result.victims = std::move(best.victims);
  return Status::Success();
}

std::string_view DefaultPreemption::Ineligible(const api::Pod& pod,
                                               const framework::Snapshot& snapshot,
                                               const framework::PostFilterContext& context) const {
  if (pod.preemption_policy == api::PreemptionPolicy::kNever) {
    return "not eligible due to preemptionPolicy=Never.";
  }
  if (pod.nominated_node_name.empty()) return {};
  const NodeInfo* node = snapshot.Get(pod.nominated_node_name);
  if (node == nullptr) return {};
  // The nominated node no longer suits the pod at all: preempt elsewhere.
  if (context.NodeCode(node->index) == Code::kUnschedulableAndUnresolvable) return {};
  for (const api::PodPtr& p : node->pods) {
    if (p->priority < pod.priority && framework::preemption::TerminatingByPreemption(*p)) {
      return "not eligible due to a terminating pod on the nominated node.";
    }
  }
  return {};
}

std::vector<Candidate> DefaultPreemption::DryRun(framework::CycleState& state, const api::Pod& pod,
                                                 const framework::Snapshot& snapshot,
                                                 std::span<const NodeIndex> potential,
                                                 const framework::PostFilterContext& context,
                                                 std::vector<Status>& failed, int32_t& no_victims,
                                                 std::vector<framework::NodePostFilter>* per_node) {
  const std::vector<api::PdbPtr> pdbs = handle_.PodDisruptionBudgets();
  const size_t n = potential.size();
  const auto offset = static_cast<size_t>(random_.Uniform(n));
  const auto want = static_cast<size_t>(NumCandidates(static_cast<int32_t>(n)));
  std::vector<Candidate> clean;      // no PDB violation
  std::vector<Candidate> violating;  // each list capped at `want`, as upstream's
  bool enough = false;               // the decision's candidates are found; only recording goes on
  const bool tracked = snapshot.node_set_version() != 0;  // lowest_pod_priority is kept
  if ((tracked && snapshot.lowest_pod_priority() >= pod.priority) ||
      std::none_of(potential.begin(), potential.end(), [&](NodeIndex i) {
        return framework::preemption::HasLowerPriorityPod(pod, snapshot.at(i));
      })) {
    // No pod anywhere that this one may preempt (all of one priority, as in a cluster without
    // PriorityClasses): every node answers what Select would, without the per-node work.
    if (per_node != nullptr) {
      const Status s = Status::Unresolvable(framework::preemption::kNoVictims);
      for (size_t i = 0; i < n; ++i) per_node->push_back({potential[(offset + i) % n], s, {}, 0});
    }
    no_victims = static_cast<int32_t>(n);
    return clean;
  }
  api::SchedulingEquivalenceKey(pod, key_);
  cache_.Begin(key_, context.FilterSignature(), snapshot, pdbs);
  for (size_t i = 0; i < n; ++i) {
    Candidate c;
    c.node = potential[(offset + i) % n];
    Status s = SelectVictims(state, pod, snapshot, c.node, context, pdbs, c);
    if (per_node != nullptr) per_node->push_back({c.node, s, c.victims, c.pdb_violations});
    if (enough) continue;
    if (!s.ok()) {
      failed.push_back(std::move(s));
      continue;
    }
    std::vector<Candidate>& list = c.pdb_violations == 0 ? clean : violating;
    if (list.size() < want) list.push_back(std::move(c));
    enough = !clean.empty() && clean.size() + violating.size() >= want;
    if (enough && per_node == nullptr) break;
  }
  for (Candidate& c : violating) clean.push_back(std::move(c));
  return clean;
}

Status DefaultPreemption::SelectVictims(framework::CycleState& state, const api::Pod& pod,
                                        const framework::Snapshot& snapshot, NodeIndex node,
                                        const framework::PostFilterContext& context,
                                        std::span<const api::PdbPtr> pdbs, Candidate& out) {
  const auto slot = static_cast<size_t>(node);
  const uint64_t generation =
      slot < snapshot.generations().size() ? snapshot.generations()[slot] : 0;
  const bool cacheable = context.NominatedPods(node).empty();
  if (const auto* e = cacheable ? cache_.Find(node, generation) : nullptr) {
    out.victims = e->victims;
    out.pdb_violations = e->pdb_violations;
    return e->status;
  }
  Status s = selector_.Select(state, pod, snapshot.at(node), context, pdbs, out);
  if (cacheable && selector_.last_result_time_invariant()) cache_.Store(node, generation, s, out);
  return s;
}

}  // namespace gpusched::plugins::default_preemption
