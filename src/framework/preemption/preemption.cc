// SPDX-License-Identifier: Apache-2.0
#include "src/framework/preemption/preemption.h"

#include <algorithm>
#include <limits>
#include <string>
#include <utility>

namespace gpusched::framework::preemption {
namespace {

common::TimePoint StartOf(const api::Pod& pod, common::TimePoint now) {
  return pod.start_time.value_or(now);
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

// pods[i]'s priority from the flat array the cache keeps (NodeInfo::pod_priorities), else from
// the pod (a hand-filled NodeInfo).
int32_t PriorityAt(const NodeInfo& node, size_t i) {
  return node.pod_priorities.size() == node.pods.size() ? node.pod_priorities[i]
                                                        : node.pods[i]->priority;
}

// A hand-filled NodeInfo may lack pod_devices: no devices recorded.
PodDevices DevicesAt(const NodeInfo& node, size_t i) {
  return i < node.pod_devices.size() ? node.pod_devices[i] : PodDevices{};
}

}  // namespace

bool HasLowerPriorityPod(const api::Pod& pod, const NodeInfo& node) {
  for (size_t i = 0; i < node.pods.size(); ++i) {
    if (PriorityAt(node, i) < pod.priority) return true;
  }
  return false;
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
      constexpr int64_t kShift = int64_t{std::numeric_limits<int32_t>::max()} + 1;
      int64_t sum = 0;  // each priority shifted to be >= 0, as upstream
      for (const api::PodPtr& p : victims(id)) sum += int64_t{p->priority} + kShift;
      const Candidate& c = candidates[id];
      sum += c.broken_gang_priority_sum + kShift * c.broken_gang_members;
      return -sum;
    });
  }
  if (ids.size() > 1) {
    KeepBest(ids, [&](size_t id) {
      return -static_cast<int64_t>(victims(id).size() + candidates[id].broken_gang_members);
    });
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

Status VictimSelector::Select(CycleState& state, const api::Pod& pod, const NodeInfo& node,
                              const PostFilterContext& context, std::span<const api::PdbPtr> pdbs,
                              Candidate& out) {
  time_invariant_ = true;
  if (!HasLowerPriorityPod(pod, node)) return Status::Unresolvable(kNoVictims);
  // The node without its lower-priority pods; the pod must fit there.
  KeepHigherPriorityPods(pod, node);
  Status fits = context.RunFilters(state, pod, scratch_);
  if (!fits.ok()) return fits;
  // Reprieve as many as possible: PDB-violating pods first, each group most important first.
  const common::TimePoint now = clock_.Now();
  OrderVictims(node, pdbs, now);
  out.victims.clear();
  out.pdb_violations = 0;
  for (const bool violating : {true, false}) {
    for (const Victim& v : potential_) {
      if (v.violates_pdb != violating || Reprieve(state, pod, node, v, context)) continue;
      out.victims.push_back(node.pods[v.pod]);
      if (violating) ++out.pdb_violations;
    }
  }
  std::stable_sort(
      out.victims.begin(), out.victims.end(),
      [now](const api::PodPtr& a, const api::PodPtr& b) { return MoreImportant(*a, *b, now); });
  if (out.victims.empty()) {
    return Status::Error("expected at least one victim pod on node " + std::string(node.name()));
  }
  return Status::Success();
}

// Builds scratch_ from the node and the pods `pod` may not preempt, added back one by one (often
// none), which is cheaper than removing every victim from a full copy and gives the same
// accounting: a node's requests and device usage are the sums over its pods (NodeInfo::AddPod).
// The others go to potential_ (as indices: no pod reference is copied).
void VictimSelector::KeepHigherPriorityPods(const api::Pod& pod, const NodeInfo& node) {
  scratch_.node = node.node;
  scratch_.index = node.index;
  scratch_.generation = node.generation;
  scratch_.gpu_utilization = node.gpu_utilization;
  scratch_.requested.milli_cpu = scratch_.requested.memory = 0;
  scratch_.requested.ephemeral_storage = scratch_.requested.pods = 0;
  scratch_.requested.scalar.clear();
  scratch_.pod_count = 0;
  scratch_.gpus = {};
  scratch_.pods.clear();
  scratch_.pod_devices.clear();
  scratch_.used_ports.clear();
  potential_.clear();
  for (size_t i = 0; i < node.pods.size(); ++i) {
    if (PriorityAt(node, i) < pod.priority) {
      potential_.push_back(Victim{static_cast<uint32_t>(i), false});
    } else {
      (void)scratch_.AddPod(node.pods[i], DevicesAt(node, i));
    }
  }
}

void VictimSelector::OrderVictims(const NodeInfo& node, std::span<const api::PdbPtr> pdbs,
                                  common::TimePoint now) {
  for (const Victim& v : potential_) {
    const api::Pod& p = *node.pods[v.pod];
    if (p.start_time && *p.start_time >= now) time_invariant_ = false;
  }
  std::stable_sort(potential_.begin(), potential_.end(),
                   [&node, now](const Victim& a, const Victim& b) {
                     return MoreImportant(*node.pods[a.pod], *node.pods[b.pod], now);
                   });
  // Budgets are spent in importance order; a pod already counted by the API server
  // (disruptedPods) spends nothing (upstream's filterPodsWithPDBViolation).
  std::vector<int32_t> allowed(pdbs.size());
  for (size_t i = 0; i < pdbs.size(); ++i) allowed[i] = pdbs[i]->disruptions_allowed;
  for (Victim& v : potential_) {
    const api::Pod& p = *node.pods[v.pod];
    if (p.meta.labels.empty()) continue;
    for (size_t i = 0; i < pdbs.size(); ++i) {
      if (!pdbs[i]->AppliesTo(p) || pdbs[i]->Disrupted(p.meta.name)) continue;
      if (--allowed[i] < 0) v.violates_pdb = true;
    }
  }
}

bool VictimSelector::Reprieve(const CycleState& state, const api::Pod& pod, const NodeInfo& node,
                              const Victim& v, const PostFilterContext& context) {
  (void)scratch_.AddPod(node.pods[v.pod], DevicesAt(node, v.pod));
  if (context.RunFilters(state, pod, scratch_).ok()) return true;
  scratch_.RemovePodAt(scratch_.pods.size() - 1);  // AddPod appended it
  return false;
}

}  // namespace gpusched::framework::preemption
