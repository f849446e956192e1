// SPDX-License-Identifier: Apache-2.0
#include "src/plugins/default_preemption/default_preemption.h"

#include <algorithm>
#include <limits>
#include <memory>
#include <utility>

#include "src/common/interner.h"
#include "src/plugins/helper/args.h"
#include "src/plugins/names.h"

namespace gpusched::plugins::default_preemption {

using framework::Code;
using framework::NodeIndex;
using framework::NodeInfo;
using framework::Status;

namespace {

constexpr std::string_view kNoVictims = "No preemption victims found for incoming pod";
constexpr std::string_view kNotHelpful = "Preemption is not helpful for scheduling";

common::TimePoint StartOf(const api::Pod& pod, common::TimePoint now) {
  return pod.start_time.value_or(now);
}

// "preemption: 0/N nodes are available: <count reason, sorted>." over the tried nodes' rejections;
// the nodes not tried count as kNotHelpful.
std::string NoCandidateMessage(std::span<const Status> failed, int32_t num_nodes) {
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
  for (const Status& s : failed) add(s.reason(), 1);
  const int32_t untried = num_nodes - static_cast<int32_t>(failed.size());
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

// Keeps the candidates of the best score under `score` (higher is better), in order.
template <typename F>
void KeepBest(std::vector<size_t>& ids, F score) {
  int64_t best = std::numeric_limits<int64_t>::min();
  std::vector<size_t> kept;
  for (size_t id : ids) {
    const int64_t s = score(id);
    if (s > best) {
      best = s;
      kept.clear();
    }
    if (s == best) kept.push_back(id);
  }
  ids = std::move(kept);
}

}  // namespace

common::StatusOr<Args> ParseArgs(const boost::json::value& json) {
  Args args;
  helper::ArgErrors errors;
  if (const boost::json::object* obj = helper::ArgsObject(json, errors)) {
    helper::CheckKnownFields(*obj, "", {"minCandidateNodesPercentage", "minCandidateNodesAbsolute"},
                             errors, /*allow_type_meta=*/true);
    if (auto v = helper::GetInt(*obj, "minCandidateNodesPercentage", "", errors)) {
      if (helper::CheckRange(*v, 0, 100, "minCandidateNodesPercentage", errors)) {
        args.min_candidate_nodes_percentage = static_cast<int32_t>(*v);
      }
    }
    if (auto v = helper::GetInt(*obj, "minCandidateNodesAbsolute", "", errors)) {
      if (helper::CheckRange(*v, 0, std::numeric_limits<int32_t>::max(),
                             "minCandidateNodesAbsolute", errors)) {
        args.min_candidate_nodes_absolute = static_cast<int32_t>(*v);
      }
    }
  }
  if (errors.empty() && args.min_candidate_nodes_percentage == 0 &&
      args.min_candidate_nodes_absolute == 0) {
    errors.Add("minCandidateNodesAbsolute",
               "minCandidateNodesPercentage and minCandidateNodesAbsolute cannot be both zero");
  }
  GPUSCHED_RETURN_IF_ERROR(errors.ToStatus());
  return args;
}

bool MoreImportant(const api::Pod& a, const api::Pod& b, common::TimePoint now) {
  if (a.priority != b.priority) return a.priority > b.priority;
  return StartOf(a, now) < StartOf(b, now);
}

bool TerminatingByPreemption(const api::Pod& pod) {
  if (!pod.meta.deletion_timestamp) return false;
  for (const api::Condition& c : pod.conditions) {
    if (c.type == "DisruptionTarget") {
      return c.status == "True" && c.reason == "PreemptionByScheduler";
    }
  }
  return false;
}

size_t PickNode(std::span<const Candidate> candidates, common::TimePoint now) {
  std::vector<size_t> ids(candidates.size());
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = i;
  auto victims = [&](size_t id) -> const std::vector<api::PodPtr>& {
    return candidates[id].victims;
  };
  KeepBest(ids, [&](size_t id) { return -int64_t{candidates[id].pdb_violations}; });
  if (ids.size() > 1) KeepBest(ids, [&](size_t id) { return -int64_t{victims(id)[0]->priority}; });
  if (ids.size() > 1) {
    KeepBest(ids, [&](size_t id) {
      int64_t sum = 0;  // each priority shifted to be >= 0, as upstream
      for (const api::PodPtr& p : victims(id)) {
        sum += int64_t{p->priority} + int64_t{std::numeric_limits<int32_t>::max()} + 1;
      }
      return -sum;
    });
  }
  if (ids.size() > 1) {
    KeepBest(ids, [&](size_t id) { return -static_cast<int64_t>(victims(id).size()); });
  }
  if (ids.size() > 1) {
    KeepBest(ids, [&](size_t id) {
      // The earliest start among the highest-priority victims; the later, the better.
      const auto& v = victims(id);
      int32_t top = v[0]->priority;
      common::TimePoint earliest = StartOf(*v[0], now);
      for (const api::PodPtr& p : v) {
        if (p->priority > top) {
          top = p->priority;
          earliest = StartOf(*p, now);
        } else if (p->priority == top) {
          earliest = std::min(earliest, StartOf(*p, now));
        }
      }
      return static_cast<int64_t>(earliest.time_since_epoch().count());
    });
  }
  return ids.front();
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

Status DefaultPreemption::PostFilter(framework::CycleState& state, const api::Pod& pod,
                                     const framework::Snapshot& snapshot,
                                     const framework::PostFilterContext& context,
                                     framework::PostFilterResult& result) {
  if (std::string_view why = Ineligible(pod, snapshot, context); !why.empty()) {
    return Status::WithMessage(Code::kUnschedulable, "preemption: " + std::string(why));
  }
  std::vector<NodeIndex> potential;
  for (const NodeInfo& ni : snapshot.nodes()) {
    if (ni.valid() && context.NodeCode(ni.index) == Code::kUnschedulable) {
      potential.push_back(ni.index);
    }
  }
  std::vector<Status> failed;
  std::vector<Candidate> candidates;
  if (!potential.empty()) candidates = DryRun(state, pod, snapshot, potential, context, failed);
  if (candidates.empty()) {
    result.mode = framework::PostFilterResult::Mode::kOverride;  // clear the nomination
    result.nominated_node.clear();
    return Status::WithMessage(Code::kUnschedulable,
                               NoCandidateMessage(failed, snapshot.num_nodes()));
  }
  Candidate& best = candidates[PickNode(candidates, handle_.clock().Now())];
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
    if (p->priority < pod.priority && TerminatingByPreemption(*p)) {
      return "not eligible due to a terminating pod on the nominated node.";
    }
  }
  return {};
}

std::vector<Candidate> DefaultPreemption::DryRun(framework::CycleState& state, const api::Pod& pod,
                                                 const framework::Snapshot& snapshot,
                                                 std::span<const NodeIndex> potential,
                                                 const framework::PostFilterContext& context,
                                                 std::vector<Status>& failed) {
  const std::vector<api::PdbPtr> pdbs = handle_.PodDisruptionBudgets();
  const size_t n = potential.size();
  const auto offset = static_cast<size_t>(random_.Uniform(n));
  const auto want = static_cast<size_t>(NumCandidates(static_cast<int32_t>(n)));
  std::vector<Candidate> clean;      // no PDB violation
  std::vector<Candidate> violating;  // each list capped at `want`, as upstream's
  for (size_t i = 0; i < n; ++i) {
    Candidate c;
    c.node = potential[(offset + i) % n];
    Status s = SelectVictims(state, pod, snapshot.at(c.node), context, pdbs, c);
    if (!s.ok()) {
      failed.push_back(std::move(s));
      continue;
    }
    std::vector<Candidate>& list = c.pdb_violations == 0 ? clean : violating;
    if (list.size() < want) list.push_back(std::move(c));
    if (!clean.empty() && clean.size() + violating.size() >= want) break;
  }
  for (Candidate& c : violating) clean.push_back(std::move(c));
  return clean;
}

Status DefaultPreemption::SelectVictims(framework::CycleState& state, const api::Pod& pod,
                                        const NodeInfo& node,
                                        const framework::PostFilterContext& context,
                                        std::span<const api::PdbPtr> pdbs, Candidate& out) {
  const bool any = std::any_of(node.pods.begin(), node.pods.end(),
                               [&](const api::PodPtr& p) { return p->priority < pod.priority; });
  if (!any) return Status::Unresolvable(kNoVictims);
  // Remove every lower-priority pod from a copy of the node; the pod must fit without them.
  scratch_ = node;
  scratch_.pod_devices.resize(scratch_.pods.size());  // a hand-filled NodeInfo may lack them
  potential_.clear();
  for (size_t i = 0; i < scratch_.pods.size(); ++i) {
    if (scratch_.pods[i]->priority < pod.priority) {
      potential_.push_back(Victim{scratch_.pods[i], scratch_.pod_devices[i], false});
    }
  }
  for (const Victim& v : potential_)
    scratch_.RemovePodAt(static_cast<size_t>(scratch_.IndexOfPod(*v.pod)));
  Status fits = context.RunFilters(state, pod, scratch_);
  if (!fits.ok()) return fits;
  // Reprieve as many as possible: PDB-violating pods first, each group most important first.
  OrderVictims(pdbs, handle_.clock().Now());
  out.victims.clear();
  out.pdb_violations = 0;
  for (const bool violating : {true, false}) {
    for (const Victim& v : potential_) {
      if (v.violates_pdb != violating || Reprieve(state, pod, v, context)) continue;
      out.victims.push_back(v.pod);
      if (violating) ++out.pdb_violations;
    }
  }
  const common::TimePoint now = handle_.clock().Now();
  std::stable_sort(
      out.victims.begin(), out.victims.end(),
      [now](const api::PodPtr& a, const api::PodPtr& b) { return MoreImportant(*a, *b, now); });
  if (out.victims.empty()) {
    return Status::Error("expected at least one victim pod on node " + std::string(node.name()));
  }
  return Status::Success();
}

void DefaultPreemption::OrderVictims(std::span<const api::PdbPtr> pdbs, common::TimePoint now) {
  std::stable_sort(potential_.begin(), potential_.end(), [now](const Victim& a, const Victim& b) {
    return MoreImportant(*a.pod, *b.pod, now);
  });
  // Budgets are spent in importance order; a pod already counted by the API server
  // (disruptedPods) spends nothing (upstream's filterPodsWithPDBViolation).
  std::vector<int32_t> allowed(pdbs.size());
  for (size_t i = 0; i < pdbs.size(); ++i) allowed[i] = pdbs[i]->disruptions_allowed;
  for (Victim& v : potential_) {
    if (v.pod->meta.labels.empty()) continue;
    for (size_t i = 0; i < pdbs.size(); ++i) {
      if (!pdbs[i]->AppliesTo(*v.pod) || pdbs[i]->Disrupted(v.pod->meta.name)) continue;
      if (--allowed[i] < 0) v.violates_pdb = true;
    }
  }
}

bool DefaultPreemption::Reprieve(const framework::CycleState& state, const api::Pod& pod,
                                 const Victim& v, const framework::PostFilterContext& context) {
  (void)scratch_.AddPod(v.pod, v.devices);
  if (context.RunFilters(state, pod, scratch_).ok()) return true;
  scratch_.RemovePodAt(scratch_.pods.size() - 1);  // AddPod appended it
  return false;
}

}  // namespace gpusched::plugins::default_preemption
