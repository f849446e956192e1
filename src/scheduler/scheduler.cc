// SPDX-License-Identifier: Apache-2.0
#include "src/scheduler/scheduler.h"

#include <spdlog/spdlog.h>

#include <boost/json.hpp>
#include <optional>
#include <span>

#include "src/common/interner.h"
#include "src/framework/reasons.h"
#include "src/scheduler/metrics_callbacks.h"
#include "src/scheduler/pod_event.h"

namespace gpusched::scheduler {

using framework::Code;
using framework::CycleState;
using framework::QueuedPodInfo;
using framework::runtime::Framework;

kube::EventRecord PodEvent(const api::Pod& pod, std::string type, std::string reason,
                           std::string action, std::string note, std::string controller) {
  kube::EventRecord ev;
  ev.namespace_ = pod.meta.namespace_;
  ev.pod_name = pod.meta.name;
  ev.pod_uid = pod.meta.uid;
  ev.type = std::move(type);
  ev.reason = std::move(reason);
  ev.action = std::move(action);
  ev.note = std::move(note);
  ev.reporting_controller = std::move(controller);
  return ev;
}

Scheduler::Scheduler(SchedulerDeps deps)
    : deps_(std::move(deps)), cache_(deps_.clock), binding_(cache_, waiting_, deps_.executor) {}

Scheduler::~Scheduler() { Stop(); }

common::StatusOr<std::unique_ptr<Scheduler>> Scheduler::Create(
    const config::SchedulerConfig& config, SchedulerDeps deps) {
  GPUSCHED_RETURN_IF_ERROR(config::Validate(config));
  std::unique_ptr<Scheduler> s(new Scheduler(std::move(deps)));
  // Parallelism 1: Filter and Score on the scheduling thread, with no window bookkeeping.
  if (config.parallelism > 1) {
    s->parallel_ = std::make_unique<common::Parallelizer>(config.parallelism);
  }
  for (const auto& profile : config.profiles) {
    GPUSCHED_ASSIGN_OR_RETURN(
        auto fw,
        Framework::Create(profile, config.percentage_of_nodes_to_score, s->deps_.registry, *s));
    if (s->deps_.metrics != nullptr)
      fw->SetMetrics(s->deps_.metrics->ForProfile(profile.scheduler_name));
    fw->SetWaitingPods(&s->waiting_);
    fw->SetNominator(&s->nominator_);
    fw->SetParallelizer(s->parallel_.get());
    s->frameworks_.push_back(std::move(fw));
  }
  if (s->frameworks_.empty())
    return common::InvalidArgumentError("profiles: at least one profile is required");
  // kube-scheduler requires every profile to use the same QueueSort; the first one orders the
  // queue.
  const framework::QueueSortPlugin* sort = &s->frameworks_.front()->queue_sort();
  queue::QueueOptions qopts;
  qopts.initial_backoff = std::chrono::seconds(config.pod_initial_backoff_seconds);
  qopts.max_backoff = std::chrono::seconds(config.pod_max_backoff_seconds);
  s->queue_ = std::make_unique<queue::SchedulingQueue>(
      s->deps_.clock,
      [sort](const QueuedPodInfo& a, const QueuedPodInfo& b) { return sort->Less(a, b); }, qopts);
  for (const auto& fw : s->frameworks_) {
    s->queue_->SetProfileHints(fw->scheduler_name(), fw->queueing_hints());
  }
  s->events_ = std::make_unique<events::EventHandler>(
      events::EventHandler::Stores{.cache = s->cache_,
                                   .pdbs = s->pdbs_,
                                   .gangs = &s->gangs_,
                                   .volumes = &s->volume_data_.store,
                                   .dra = &s->dra_data_.store,
                                   .network = s->deps_.network},
      events::EventHandler::Pending{
          .queue = *s->queue_,
          .nominator = s->nominator_,
          .responsible = [raw = s.get()](const api::Pod& pod) { return raw->Responsible(pod); }});
  if (s->deps_.metrics != nullptr) {
    RegisterSchedulerCallbacks(s->deps_.metrics->registry(), *s->queue_, s->cache_);
    RegisterClusterGpuCallbacks(s->deps_.metrics->registry(), s->cache_,
                                s->deps_.node_group_labels);
    RegisterGangCallbacks(s->deps_.metrics->registry(), s->gangs_);
  }
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

void Scheduler::HandleFailure(Framework& fw, const QueuedPodInfo& qp, const Failure& failure) {
  const api::Pod& pod = *qp.pod;
  const framework::runtime::Diagnosis* diag = failure.diagnosis;
  const metrics::Stopwatch* attempt = failure.attempt;
  const PostFilterOutcome* post_filter = failure.post_filter;
  bool fit_error = failure.status.IsRejected();
  Decision d;
  d.pod = qp.pod;
  d.profile = std::string(fw.scheduler_name());
  d.error = !fit_error;
  d.message = fit_error && diag != nullptr ? diag->Message() : failure.status.ToString();
  if (diag != nullptr) d.diagnosis = *diag;
  d.counts = failure.counts;

  if (attempt != nullptr && fw.metrics() != nullptr) {
    fw.metrics()->ObserveAttempt(
        fit_error ? metrics::Result::kUnschedulable : metrics::Result::kError, attempt->Seconds());
    if (fit_error && diag != nullptr) {
      for (const auto& [reason, n] : diag->reason_counts) {
        framework::ForEachReason(
            reason, [this](std::string_view r) { deps_.metrics->CountUnschedulableReason(r); });
      }
      if (diag->reason_counts.empty() && !diag->pre_filter_status.ok()) {
        deps_.metrics->CountUnschedulableReason(diag->pre_filter_status.reason());
      }
    }
  }

  QueuedPodInfo requeue = qp;
  if (diag != nullptr) requeue.unschedulable_plugins = diag->unschedulable_plugins;
  queue_->Requeue(std::move(requeue), !fit_error);

  // The pod with the nominatedNodeName a PostFilter gave it, written in the same patch.
  const api::Pod& status_pod = post_filter != nullptr ? *post_filter->status_pod : pod;
  if (post_filter != nullptr) {
    d.nominated_node = status_pod.nominated_node_name;
    d.victims = post_filter->victims;
    d.destinations = post_filter->destinations;
  }
  common::Status s = deps_.api.SetPodUnschedulable(
      status_pod, fit_error ? "Unschedulable" : "SchedulerError", d.message);
  if (!s.ok()) spdlog::warn("updating PodScheduled condition of {}: {}", pod.Key(), s.ToString());
  s = deps_.api.CreateEvent(PodEvent(pod, "Warning", "FailedScheduling", "Scheduling",
                                     kube::TruncateEventNote(d.message), d.profile));
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
  // Attempt timing for scheduler_scheduling_attempt_duration_seconds (no clock read without
  // metrics).
  std::optional<metrics::Stopwatch> attempt;
  if (deps_.metrics != nullptr) attempt.emplace();
  const metrics::Stopwatch* sw = attempt ? &*attempt : nullptr;
  if (!pod->gang.empty() && ScheduleGang(qp)) return;
  ClaimPlannedRoom(pod);
  cache_.UpdateSnapshot(snapshot_);
  auto state = std::make_shared<CycleState>();
  auto result = fw->SchedulePod(*state, *pod, snapshot_, deps_.random);
  if (sw != nullptr) deps_.metrics->ObserveAlgorithm(sw->Seconds());
  if (result.node == framework::kNoNode) {
    std::optional<PostFilterOutcome> post_filter;
    if (result.post_filter_ran) post_filter = ApplyPostFilter(*fw, pod, result);
    HandleFailure(*fw, qp,
                  Failure{result.status, &result.diagnosis, result.counts, sw,
                          post_filter ? &*post_filter : nullptr});
    return;
  }
  const framework::NodeInfo& node = snapshot_.at(result.node);
  binding::Attempt a{fw, pod, state, std::string(node.name())};
  framework::Status st = binding_.Reserve(a, node);
  if (!st.ok()) {
    FinishPlacement(*fw, a, DescribePlacement(std::move(qp), result, std::move(attempt)), st);
    return;
  }
  nominator_.Remove(pod->meta.uid);  // assumed: its room is taken for real
  if (decision_annotation_) {
    state->allocation().annotations.emplace_back(
        std::string(kDecisionAnnotation), DecisionAnnotationValue(a.node, result, snapshot_));
  }
  Placement placement = DescribePlacement(std::move(qp), result, std::move(attempt));
  binding_.Bind(a, [this, fw, a, p = std::move(placement)](framework::Status bound) {
    FinishPlacement(*fw, a, p, bound);
  });
}

Scheduler::Placement Scheduler::DescribePlacement(QueuedPodInfo qp,
                                                  const framework::runtime::ScheduleResult& r,
                                                  std::optional<metrics::Stopwatch> attempt) const {
  Placement p;
  p.qp = std::move(qp);
  p.counts = r.counts;
  p.attempt = std::move(attempt);
  if (observer_) {
    p.top.reserve(static_cast<size_t>(r.top_count));
    for (int32_t i = 0; i < r.top_count; ++i) {
      const auto& ns = r.top_scores[static_cast<size_t>(i)];
      p.top.push_back({std::string(snapshot_.at(ns.node).name()), ns.total});
    }
  }
  return p;
}

void Scheduler::FinishPlacement(Framework& fw, const binding::Attempt& a, const Placement& p,
                                const framework::Status& status) {
  const metrics::Stopwatch* sw = p.attempt ? &*p.attempt : nullptr;
  if (status.ok()) {
    RecordScheduled(fw, a, p);
    return;
  }
  if (!status.IsRejected()) {
    HandleFailure(fw, p.qp, Failure{status, nullptr, p.counts, sw});
    return;
  }
  // Rejected at Reserve or Permit (at once, or while waiting): kube-scheduler's FitError over the
  // one node chosen.
  framework::runtime::Diagnosis diag;
  diag.num_nodes = 1;
  diag.reason_counts.emplace_back(common::Str(common::Intern(status.reason())), 1);
  if (!status.plugin().empty()) diag.unschedulable_plugins.emplace_back(status.plugin());
  diag.unresolvable_everywhere = false;
  HandleFailure(fw, p.qp, Failure{status, &diag, p.counts, sw});
}

void Scheduler::RecordScheduled(Framework& fw, const binding::Attempt& a, const Placement& p) {
  const api::Pod& pod = *a.pod;
  queue_->Done(pod.meta.uid);
  if (p.attempt && fw.metrics() != nullptr) {
    fw.metrics()->ObserveAttempt(metrics::Result::kScheduled, p.attempt->Seconds());
    deps_.metrics->ObservePodScheduled(
        p.qp.attempts,
        std::chrono::duration<double>(deps_.clock.Now() - p.qp.initial_attempt_timestamp).count());
  }
  const kube::EventRecord ev = PodEvent(pod, "Normal", "Scheduled", "Binding",
                                        "Successfully assigned " + pod.Key() + " to " + a.node,
                                        std::string(fw.scheduler_name()));
  common::Status es = deps_.api.CreateEvent(ev);
  if (!es.ok()) spdlog::warn("recording Scheduled event for {}: {}", pod.Key(), es.ToString());
  Decision d;
  d.pod = a.pod;
  d.profile = ev.reporting_controller;
  d.node = a.node;
  d.scheduled = true;
  d.gpu = a.state->allocation().gpu;
  d.counts = p.counts;
  d.top_scores = p.top;
  Report(std::move(d));
}

void Scheduler::Tick() {
  queue_->Flush();
  cache_.CleanupExpiredAssumedPods();
  waiting_.ExpireDue(deps_.clock.Now());
  ExpirePlannedRooms();
  ExpireGangTimeouts();
  SyncGangStatuses();
}

void Scheduler::SetGpuUtilization(std::string_view node, double utilization) {
  cache_.SetGpuUtilization(node, utilization);
}

void Scheduler::Run() {
  constexpr common::Duration kTickInterval = std::chrono::seconds(1);
  while (!stopping_.load()) {
    const common::TimePoint now = deps_.clock.Now();
    if (now >= next_tick_) {
      Tick();
      next_tick_ = now + kTickInterval;
    }
    auto next = queue_->PopFor(next_tick_ - now);  // nullopt: closed, or time for the next tick
    if (next) ScheduleQueued(std::move(*next));
  }
}

void Scheduler::Stop() {
  stopping_.store(true);
  if (queue_) queue_->Close();
}

Framework* Scheduler::WhatIfFramework(const api::Pod& pod) {
  Framework* fw = FrameworkFor(common::Str(pod.scheduler_name));
  if (fw == nullptr && !frameworks_.empty()) fw = frameworks_.front().get();
  if (fw != nullptr) cache_.UpdateSnapshot(snapshot_);
  return fw;
}

common::StatusOr<framework::runtime::ScheduleResult> Scheduler::Explain(const api::Pod& pod) {
  Framework* fw = WhatIfFramework(pod);
  if (fw == nullptr) return common::NotFoundError("no profile for pod " + pod.Key());
  CycleState state;
  framework::runtime::SchedulePodOptions opts;
  opts.record_verdicts = true;
  opts.record_scores = true;
  opts.score_all_nodes = true;
  return fw->SchedulePod(state, pod, snapshot_, deps_.random, opts);
}

common::StatusOr<std::vector<framework::NodeIndex>> Scheduler::FeasibleNodes(const api::Pod& pod) {
  Framework* fw = WhatIfFramework(pod);
  if (fw == nullptr) return common::NotFoundError("no profile for pod " + pod.Key());
  CycleState state;
  framework::runtime::SchedulePodOptions opts;
  opts.record_verdicts = true;  // every rejected node; the others are the feasible ones
  opts.score_all_nodes = true;
  opts.run_post_filter = false;
  const framework::runtime::ScheduleResult r =
      fw->SchedulePod(state, pod, snapshot_, deps_.random, opts);
  std::vector<framework::NodeIndex> out;
  if (r.counts.feasible == 0) return out;
  std::vector<bool> rejected(snapshot_.nodes().size(), false);
  for (const framework::NodeVerdict& v : r.diagnosis.verdicts) {
    rejected[static_cast<size_t>(v.node)] = true;
  }
  for (const framework::NodeInfo& ni : snapshot_.nodes()) {
    if (ni.valid() && !rejected[static_cast<size_t>(ni.index)]) out.push_back(ni.index);
  }
  return out;
}

std::string DecisionAnnotationValue(std::string_view node,
                                    const framework::runtime::ScheduleResult& result,
                                    const framework::Snapshot& snapshot) {
  boost::json::object v;
  v["node"] = node;
  if (result.top_count > 0) {
    // The chosen node has the best total (a tie-break may pick a node beyond the three kept,
    // but then its total equals the first).
    const std::span<const framework::runtime::NodeScore> top(result.top_scores.data(),
                                                             static_cast<size_t>(result.top_count));
    int64_t score = top[0].total;
    for (const auto& ns : top) {
      if (ns.node == result.node) score = ns.total;
    }
    v["score"] = score;
    for (const auto& ns : top) {
      if (ns.node == result.node) continue;
      v["runnerUp"] = {{"node", snapshot.at(ns.node).name()}, {"score", ns.total}};
      break;
    }
  }
  v["feasible"] = result.counts.feasible;
  v["total"] = result.diagnosis.num_nodes;
  return boost::json::serialize(v);
}

}  // namespace gpusched::scheduler
