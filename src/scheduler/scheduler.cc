// SPDX-License-Identifier: Apache-2.0
#include "src/scheduler/scheduler.h"

#include <spdlog/spdlog.h>

#include <optional>

#include "src/common/logging.h"
#include "src/scheduler/metrics_callbacks.h"

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
    if (deps.metrics != nullptr) fw->SetMetrics(deps.metrics->ForProfile(profile.scheduler_name));
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
  if (deps.metrics != nullptr) RegisterSchedulerCallbacks(deps.metrics->registry(), *s);
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
  // The per-decision log line is the observer's (LogDecision in decision_log.h, wired by cmd/).
  if (observer_) observer_(d);
}

void Scheduler::HandleFailure(Framework& fw, const QueuedPodInfo& qp, const framework::Status& status,
                              const framework::runtime::Diagnosis* diag, int32_t evaluated,
                              int32_t feasible, const metrics::Stopwatch* attempt) {
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
  d.total_nodes = diag != nullptr ? diag->num_nodes : snapshot_.num_nodes();

  if (attempt != nullptr && fw.metrics() != nullptr) {
    fw.metrics()->ObserveAttempt(fit_error ? metrics::Result::kUnschedulable : metrics::Result::kError,
                                 attempt->Seconds());
    if (fit_error && diag != nullptr) {
      for (const auto& [reason, n] : diag->reason_counts) deps_.metrics->CountUnschedulableReason(reason);
      if (diag->reason_counts.empty() && !diag->pre_filter_status.ok()) {
        deps_.metrics->CountUnschedulableReason(diag->pre_filter_status.reason());
      }
    }
  }

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
  // Attempt timing for scheduler_scheduling_attempt_duration_seconds (no clock read without metrics).
  std::optional<metrics::Stopwatch> attempt;
  if (deps_.metrics != nullptr) attempt.emplace();
  const metrics::Stopwatch* sw = attempt ? &*attempt : nullptr;
  cache_.UpdateSnapshot(snapshot_);
  auto state = std::make_shared<CycleState>();
  auto result = fw->SchedulePod(*state, *pod, snapshot_, deps_.random);
  if (sw != nullptr) deps_.metrics->ObserveAlgorithm(sw->Seconds());
  if (result.node == framework::kNoNode) {
    HandleFailure(*fw, qp, result.status, &result.diagnosis, result.evaluated_nodes,
                  result.feasible_nodes, sw);
    return;
  }
  const framework::NodeInfo& node = snapshot_.at(result.node);
  std::string node_name(node.name());
  framework::Status st = fw->RunReserve(*state, *pod, node);
  if (!st.ok()) {
    HandleFailure(*fw, qp, st.IsRejected() ? framework::Status::Error(st.ToString()) : st, nullptr,
                  result.evaluated_nodes, result.feasible_nodes, sw);
    return;
  }
  common::Status assumed = cache_.AssumePod(pod, node_name, state->allocation().gpu);
  if (!assumed.ok()) {
    fw->RunUnreserve(*state, *pod, node_name);
    HandleFailure(*fw, qp, framework::Status::Error(assumed.ToString()), nullptr,
                  result.evaluated_nodes, result.feasible_nodes, sw);
    return;
  }
  st = fw->RunPermit(*state, *pod, node_name);
  if (!st.ok()) {
    fw->RunUnreserve(*state, *pod, node_name);
    cache_.ForgetPod(pod->meta.uid).IgnoreError();
    HandleFailure(*fw, qp, st, nullptr, result.evaluated_nodes, result.feasible_nodes, sw);
    return;
  }
  int32_t evaluated = result.evaluated_nodes;
  int32_t feasible = result.feasible_nodes;
  int32_t total = result.diagnosis.num_nodes;
  if (decision_annotation_) {
    state->allocation().annotations.emplace_back(std::string(kDecisionAnnotation),
                                                 DecisionAnnotationValue(node_name, result, snapshot_));
  }
  std::vector<Decision::NodeScore> top;
  if (observer_) {
    top.reserve(static_cast<size_t>(result.top_count));
    for (int32_t i = 0; i < result.top_count; ++i) {
      const auto& ns = result.top_scores[static_cast<size_t>(i)];
      top.push_back({std::string(snapshot_.at(ns.node).name()), ns.total});
    }
  }
  deps_.executor.Post([this, fw, qp = std::move(qp), state, node_name, evaluated, feasible, total,
                       top = std::move(top), attempt]() mutable {
    const api::PodPtr p = qp.pod;
    framework::Status bs = fw->RunPreBind(*state, *p, node_name);
    if (bs.ok()) bs = fw->RunBind(*state, *p, node_name);
    if (!bs.ok()) {
      fw->RunUnreserve(*state, *p, node_name);
      cache_.ForgetPod(p->meta.uid).IgnoreError();
      framework::Status err = framework::Status::Error("Binding rejected: " + bs.ToString());
      HandleFailure(*fw, qp, err, nullptr, evaluated, feasible, attempt ? &*attempt : nullptr);
      return;
    }
    cache_.FinishBinding(p->meta.uid).IgnoreError();
    queue_->Done(p->meta.uid);
    if (attempt && fw->metrics() != nullptr) {
      fw->metrics()->ObserveAttempt(metrics::Result::kScheduled, attempt->Seconds());
      deps_.metrics->ObservePodScheduled(
          qp.attempts, std::chrono::duration<double>(deps_.clock.Now() - qp.initial_attempt_timestamp).count());
    }
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
    d.total_nodes = total;
    d.top_scores = std::move(top);
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

std::string DecisionAnnotationValue(std::string_view node, const framework::runtime::ScheduleResult& result,
                                    const framework::Snapshot& snapshot) {
  std::string v = "{\"node\":";
  common::AppendJsonString(v, node);
  if (result.top_count > 0) {
    // The chosen node has the best total (a tie-break may pick a node beyond the three kept,
    // but then its total equals the first).
    int64_t score = result.top_scores[0].total;
    for (int32_t i = 0; i < result.top_count; ++i) {
      if (result.top_scores[static_cast<size_t>(i)].node == result.node) {
        score = result.top_scores[static_cast<size_t>(i)].total;
      }
    }
    v += ",\"score\":" + std::to_string(score);
    for (int32_t i = 0; i < result.top_count; ++i) {
      const auto& ns = result.top_scores[static_cast<size_t>(i)];
      if (ns.node == result.node) continue;
      v += ",\"runnerUp\":{\"node\":";
      common::AppendJsonString(v, snapshot.at(ns.node).name());
      v += ",\"score\":" + std::to_string(ns.total) + "}";
      break;
    }
  }
  v += ",\"feasible\":" + std::to_string(result.feasible_nodes) +
       ",\"total\":" + std::to_string(result.diagnosis.num_nodes) + "}";
  return v;
}

}  // namespace gpusched::scheduler
