// SPDX-License-Identifier: Apache-2.0
#include "src/scheduler/scheduler.h"

#include <spdlog/spdlog.h>

#include "src/common/logging.h"

namespace gpusched::scheduler {

using framework::Code;
using framework::CycleState;
using framework::QueuedPodInfo;
using framework::runtime::Framework;

Scheduler::Scheduler(SchedulerDeps deps) : deps_(deps), cache_(deps.clock) {}

Scheduler::~Scheduler() { Stop(); }

common::StatusOr<std::unique_ptr<Scheduler>> Scheduler::Create(const config::SchedulerConfig& config,
                                                               SchedulerDeps deps) {
  GPUSCHED_RETURN_IF_ERROR(config::Validate(config));
  std::unique_ptr<Scheduler> s(new Scheduler(deps));
  for (const auto& profile : config.profiles) {
    GPUSCHED_ASSIGN_OR_RETURN(auto fw, Framework::Create(profile, config.percentage_of_nodes_to_score,
                                                         deps.registry, *s));
    s->frameworks_.push_back(std::move(fw));
  }
  if (s->frameworks_.empty()) return common::InvalidArgumentError("profiles: at least one profile is required");
  // kube-scheduler requires every profile to use the same QueueSort; the first one orders the queue.
  const framework::QueueSortPlugin* sort = &s->frameworks_.front()->queue_sort();
  queue::QueueOptions qopts;
  qopts.initial_backoff = std::chrono::seconds(config.pod_initial_backoff_seconds);
  qopts.max_backoff = std::chrono::seconds(config.pod_max_backoff_seconds);
  s->queue_ = std::make_unique<queue::SchedulingQueue>(
      deps.clock,
      [sort](const QueuedPodInfo& a, const QueuedPodInfo& b) { return sort->Less(a, b); }, qopts);
  return s;
}

Framework* Scheduler::FrameworkFor(std::string_view scheduler_name) {
  for (auto& fw : frameworks_) {
    if (fw->scheduler_name() == scheduler_name) return fw.get();
  }
  return nullptr;
}

bool Scheduler::Responsible(const api::Pod& pod) const {
  std::string_view name = common::Str(pod.scheduler_name);
  for (const auto& fw : frameworks_) {
    if (fw->scheduler_name() == name) return true;
  }
  return false;
}

// --- cluster events ---------------------------------------------------------------------------

void Scheduler::OnNodeAdd(api::NodePtr node) {
  cache_.AddNode(std::move(node));
  queue_->MoveAllToActiveOrBackoff("NodeAdd");
}

void Scheduler::OnNodeUpdate(api::NodePtr old_node, api::NodePtr node) {
  bool relevant = old_node == nullptr || old_node->allocatable != node->allocatable ||
                  !(old_node->meta.labels == node->meta.labels) ||
                  old_node->unschedulable != node->unschedulable ||
                  old_node->taints.size() != node->taints.size() || !(old_node->gpu == node->gpu);
  cache_.UpdateNode(std::move(node));
  if (relevant) queue_->MoveAllToActiveOrBackoff("NodeUpdate");
}

void Scheduler::OnNodeDelete(api::NodePtr node) { cache_.RemoveNode(node->meta.name); }

void Scheduler::OnPodAdd(api::PodPtr pod) {
  if (!pod->node_name.empty()) {
    queue_->Delete(pod->meta.uid);
    cache_.AddPod(std::move(pod));
    return;
  }
  if (pod->Terminal() || pod->meta.deletion_timestamp || !Responsible(*pod)) return;
  queue_->Add(std::move(pod));
}

void Scheduler::OnPodUpdate(api::PodPtr old_pod, api::PodPtr pod) {
  if (!pod->node_name.empty()) {
    if (old_pod == nullptr || old_pod->node_name.empty()) queue_->Delete(pod->meta.uid);
    bool terminal = pod->Terminal();
    cache_.UpdatePod(std::move(pod));
    if (terminal) queue_->MoveAllToActiveOrBackoff("AssignedPodDelete");
    return;
  }
  if (!Responsible(*pod)) return;
  if (pod->Terminal() || pod->meta.deletion_timestamp) {
    queue_->Delete(pod->meta.uid);
    return;
  }
  if (queue_->Contains(pod->meta.uid)) {
    queue_->Update(std::move(pod));
  } else if (!cache_.Contains(pod->meta.uid)) {
    queue_->Add(std::move(pod));
  }
}

void Scheduler::OnPodDelete(api::PodPtr pod) {
  if (!pod->node_name.empty() || cache_.Contains(pod->meta.uid)) {
    cache_.RemovePod(pod->meta.uid);
    queue_->MoveAllToActiveOrBackoff("AssignedPodDelete");
  }
  queue_->Delete(pod->meta.uid);
}

// --- the scheduling cycle ---------------------------------------------------------------------

common::Status Scheduler::BindPod(const api::Pod& pod, std::string_view node,
                                  const framework::Allocation& allocation) {
  return deps_.api.BindPod(pod, node, allocation.annotations);
}

void Scheduler::Report(Decision&& d) {
  if (d.scheduled) {
    stats_.scheduled.fetch_add(1, std::memory_order_relaxed);
  } else if (d.error) {
    stats_.errors.fetch_add(1, std::memory_order_relaxed);
  } else {
    stats_.unschedulable.fetch_add(1, std::memory_order_relaxed);
  }
  if (common::V(2)) {
    if (d.scheduled) {
      spdlog::info("scheduled pod={} node={} feasible={}/{}", d.pod->Key(), d.node, d.feasible_nodes,
                   d.evaluated_nodes);
    } else {
      spdlog::info("unschedulable pod={} error={} message=\"{}\"", d.pod->Key(), d.error, d.message);
    }
  }
  if (observer_) observer_(d);
}

void Scheduler::HandleFailure(Framework& fw, const QueuedPodInfo& qp, const framework::Status& status,
                              const framework::runtime::Diagnosis* diag, int32_t evaluated,
                              int32_t feasible) {
  const api::Pod& pod = *qp.pod;
  bool fit_error = status.IsRejected();
  Decision d;
  d.pod = qp.pod;
  d.profile = std::string(fw.scheduler_name());
  d.error = !fit_error;
  d.message = fit_error && diag != nullptr ? diag->Message() : status.ToString();
  if (diag != nullptr) d.diagnosis = *diag;
  d.evaluated_nodes = evaluated;
  d.feasible_nodes = feasible;

  QueuedPodInfo requeue = qp;
  if (diag != nullptr) requeue.unschedulable_plugins = diag->unschedulable_plugins;
  queue_->Requeue(std::move(requeue), !fit_error);

  common::Status s = deps_.api.SetPodUnschedulable(pod, fit_error ? "Unschedulable" : "SchedulerError",
                                                   d.message);
  if (!s.ok()) spdlog::warn("updating PodScheduled condition of {}: {}", pod.Key(), s.ToString());
  kube::EventRecord ev;
  ev.namespace_ = pod.meta.namespace_;
  ev.pod_name = pod.meta.name;
  ev.pod_uid = pod.meta.uid;
  ev.type = "Warning";
  ev.reason = "FailedScheduling";
  ev.action = "Scheduling";
  ev.note = kube::TruncateEventNote(d.message);
  ev.reporting_controller = d.profile;
  s = deps_.api.CreateEvent(ev);
  if (!s.ok()) spdlog::warn("recording FailedScheduling event for {}: {}", pod.Key(), s.ToString());
  Report(std::move(d));
}

bool Scheduler::ScheduleOne() {
  auto popped = queue_->TryPop();
  if (!popped) return false;
  ScheduleQueued(std::move(*popped));
  return true;
}

void Scheduler::ScheduleQueued(QueuedPodInfo qp) {
  const api::PodPtr pod = qp.pod;
  Framework* fw = FrameworkFor(common::Str(pod->scheduler_name));
  if (fw == nullptr || pod->meta.deletion_timestamp) {
    queue_->Done(pod->meta.uid);
    return;
  }
  cache_.UpdateSnapshot(snapshot_);
  auto state = std::make_shared<CycleState>();
  auto result = fw->SchedulePod(*state, *pod, snapshot_, deps_.random);
  if (result.node == framework::kNoNode) {
    HandleFailure(*fw, qp, result.status, &result.diagnosis, result.evaluated_nodes,
                  result.feasible_nodes);
    return;
  }
  const framework::NodeInfo& node = snapshot_.at(result.node);
  std::string node_name(node.name());
  framework::Status st = fw->RunReserve(*state, *pod, node);
  if (!st.ok()) {
    HandleFailure(*fw, qp, st.IsRejected() ? framework::Status::Error(st.ToString()) : st, nullptr,
                  result.evaluated_nodes, result.feasible_nodes);
    return;
  }
  common::Status assumed = cache_.AssumePod(pod, node_name, state->allocation().gpu);
  if (!assumed.ok()) {
    fw->RunUnreserve(*state, *pod, node_name);
    HandleFailure(*fw, qp, framework::Status::Error(assumed.ToString()), nullptr,
                  result.evaluated_nodes, result.feasible_nodes);
    return;
  }
  st = fw->RunPermit(*state, *pod, node_name);
  if (!st.ok()) {
    fw->RunUnreserve(*state, *pod, node_name);
    cache_.ForgetPod(pod->meta.uid).IgnoreError();
    HandleFailure(*fw, qp, st, nullptr, result.evaluated_nodes, result.feasible_nodes);
    return;
  }
  int32_t evaluated = result.evaluated_nodes;
  int32_t feasible = result.feasible_nodes;
  deps_.executor.Post([this, fw, qp = std::move(qp), state, node_name, evaluated, feasible]() mutable {
    const api::PodPtr p = qp.pod;
    framework::Status bs = fw->RunPreBind(*state, *p, node_name);
    if (bs.ok()) bs = fw->RunBind(*state, *p, node_name);
    if (!bs.ok()) {
      fw->RunUnreserve(*state, *p, node_name);
      cache_.ForgetPod(p->meta.uid).IgnoreError();
      framework::Status err = framework::Status::Error("Binding rejected: " + bs.ToString());
      HandleFailure(*fw, qp, err, nullptr, evaluated, feasible);
      return;
    }
    cache_.FinishBinding(p->meta.uid).IgnoreError();
    queue_->Done(p->meta.uid);
    fw->RunPostBind(*state, *p, node_name);
    kube::EventRecord ev;
    ev.namespace_ = p->meta.namespace_;
    ev.pod_name = p->meta.name;
    ev.pod_uid = p->meta.uid;
    ev.type = "Normal";
    ev.reason = "Scheduled";
    ev.action = "Binding";
    ev.note = "Successfully assigned " + p->Key() + " to " + node_name;
    ev.reporting_controller = std::string(fw->scheduler_name());
    common::Status es = deps_.api.CreateEvent(ev);
    if (!es.ok()) spdlog::warn("recording Scheduled event for {}: {}", p->Key(), es.ToString());
    Decision d;
    d.pod = p;
    d.profile = ev.reporting_controller;
    d.node = node_name;
    d.scheduled = true;
    d.gpu = state->allocation().gpu;
    d.evaluated_nodes = evaluated;
    d.feasible_nodes = feasible;
    Report(std::move(d));
  });
}

void Scheduler::Run() {
  while (!stopping_.load()) {
    auto next = queue_->Pop();  // blocks; returns nullopt once closed
    if (!next) break;
    ScheduleQueued(std::move(*next));
  }
}

void Scheduler::Stop() {
  stopping_.store(true);
  if (queue_) queue_->Close();
}

common::StatusOr<framework::runtime::ScheduleResult> Scheduler::Explain(const api::Pod& pod) {
  Framework* fw = FrameworkFor(common::Str(pod.scheduler_name));
  if (fw == nullptr && !frameworks_.empty()) fw = frameworks_.front().get();
  if (fw == nullptr) return common::NotFoundError("no profile for pod " + pod.Key());
  cache_.UpdateSnapshot(snapshot_);
  CycleState state;
  framework::runtime::SchedulePodOptions opts;
  opts.record_verdicts = true;
  opts.record_scores = true;
  opts.score_all_nodes = true;
  return fw->SchedulePod(state, pod, snapshot_, deps_.random, opts);
}

}  // namespace gpusched::scheduler
