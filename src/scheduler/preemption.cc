// SPDX-License-Identifier: Apache-2.0
// What the scheduler does with a PostFilter result (kube-scheduler's preemption.Evaluator
// prepareCandidate and the nomination in handleSchedulingFailure), and the PodDisruptionBudgets
// it keeps for the DefaultPreemption plugin.
//
// Victims are evicted on the scheduling thread, before the pod's status is written (upstream's
// synchronous mode): a victim held at Permit is rejected ("preempted"); any other gets the
// DisruptionTarget condition (reason PreemptionByScheduler) and is deleted; each gets a
// "Preempted" event. A victim already being deleted is left alone; one already gone counts as
// evicted. Then the lower-priority pods nominated to the same node lose their nomination (they
// may no longer fit there), and the pod is nominated to the node.
#include <spdlog/spdlog.h>

#include <string>

#include "src/scheduler/pod_event.h"
#include "src/scheduler/scheduler.h"

namespace gpusched::scheduler {

PostFilterOutcome Scheduler::ApplyPostFilter(const framework::runtime::Framework& fw,
                                             const api::PodPtr& pod,
                                             const framework::runtime::ScheduleResult& result) {
  if (deps_.metrics != nullptr) deps_.metrics->CountPreemptionAttempt();
  const framework::PostFilterResult& pf = result.post_filter;
  if (pf.mode == framework::PostFilterResult::Mode::kNoop) return {pod, {}};
  if (pf.nominated_node.empty()) {  // nothing helps: the pod keeps no room anywhere
    nominator_.Set(pod, "");
    if (pod->nominated_node_name.empty()) return {pod, {}};
    common::Status s = deps_.api.SetNominatedNodeName(*pod, "");
    if (!s.ok()) spdlog::warn("clearing nominatedNodeName of {}: {}", pod->Key(), s.ToString());
    auto copy = std::make_shared<api::Pod>(*pod);
    copy->nominated_node_name.clear();
    return {copy, {}};
  }
  std::vector<api::PodPtr> victims = pf.victims;
  std::vector<std::string> destinations;
  if (!pf.destinations.empty()) {  // consolidation: the victims move
    const size_t moved = MovePods(*pod, pf);
    victims.resize(moved);
    destinations.assign(pf.destinations.begin(), pf.destinations.begin() + moved);
    if (moved < pf.victims.size()) return {pod, std::move(victims), std::move(destinations)};
  } else if (common::Status s = EvictVictims(*pod, pf.nominated_node, pf.plugin, pf.victims);
             !s.ok()) {
    // The next attempt tries again (upstream: the cycle's status is this error).
    spdlog::warn("preemption for {} on node {}: {}", pod->Key(), pf.nominated_node, s.ToString());
    return {pod, {}};
  }
  if (deps_.metrics != nullptr && destinations.empty()) {
    deps_.metrics->ObservePreemptionVictims(pf.victims.size());
  }
  ClearLowerPriorityNominations(*pod, pf.nominated_node);
  auto nominated = std::make_shared<api::Pod>(*pod);
  nominated->nominated_node_name = pf.nominated_node;
  nominator_.Set(nominated, pf.nominated_node);
  spdlog::debug("pod {} {} {} pod(s) on node {} (profile {})", pod->Key(),
                destinations.empty() ? "preempted" : "moved", pf.victims.size(), pf.nominated_node,
                fw.scheduler_name());
  return {nominated, std::move(victims), std::move(destinations)};
}

common::Status Scheduler::EvictVictims(const api::Pod& preemptor, std::string_view node,
                                       std::string_view plugin,
                                       std::span<const api::PodPtr> victims) {
  const std::string controller(common::Str(preemptor.scheduler_name));
  for (const api::PodPtr& v : victims) {
    if (!waiting_.Reject(v->meta.uid, plugin, "preempted")) {
      if (v->meta.deletion_timestamp) continue;  // graceful deletion already under way
      api::Condition c;
      c.type = "DisruptionTarget";
      c.status = "True";
      c.reason = "PreemptionByScheduler";
      c.message = controller + ": preempting to accommodate a higher priority pod";
      c.last_transition_time = deps_.clock.Now();
      common::Status s = deps_.api.PatchPodCondition(*v, c);
      if (s.code() == common::StatusCode::kNotFound) continue;  // already gone
      if (!s.ok()) return s;
      s = deps_.api.DeletePod(*v);
      if (!s.ok() && s.code() != common::StatusCode::kNotFound) return s;
    }
    const std::string note =
        "Preempted by pod " + preemptor.meta.uid + " on node " + std::string(node);
    common::Status s =
        deps_.api.CreateEvent(PodEvent(*v, "Normal", "Preempted", "Preempting", note, controller));
    if (!s.ok()) spdlog::warn("recording Preempted event for {}: {}", v->Key(), s.ToString());
  }
  return common::Status::Ok();
}

void Scheduler::ClearLowerPriorityNominations(const api::Pod& preemptor, std::string_view node) {
  for (const api::PodPtr& p : nominator_.PodsFor(node)) {
    if (p->priority >= preemptor.priority || p->meta.uid == preemptor.meta.uid) continue;
    nominator_.Remove(p->meta.uid);
    common::Status s = deps_.api.SetNominatedNodeName(*p, "");
    if (!s.ok()) spdlog::warn("clearing nominatedNodeName of {}: {}", p->Key(), s.ToString());
  }
}

}  // namespace gpusched::scheduler
