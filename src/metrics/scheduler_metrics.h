// SPDX-License-Identifier: Apache-2.0
// SchedulerMetrics: the kube-scheduler-compatible instruments of one scheduler, created in a
// Registry from the catalog, with series handles resolved once so that recording is a relaxed
// atomic operation (no map lookup, no allocation; the first observation of a new label
// combination resolves it once and caches the pointer).
//
// Who records what:
//   Scheduler (src/scheduler)      attempts, attempt/algorithm durations, SLI, pod attempts,
//                                  unschedulable reasons, preemption attempts and victims
//   Framework (framework/runtime)  extension point durations, plugin evaluations, sampled plugin
//                                  execution durations (one cycle in ten, as kube-scheduler)
//   scrape-time callbacks          pending pods, incoming pods, unschedulable pods, cache size
//                                  (registered by the scheduler; see Scheduler::RegisterMetrics)
//
// A null SchedulerMetrics* everywhere means "no metrics" (unit tests, the simulator): then no
// clock is read and nothing is recorded.
//
// Durations: Stopwatch reads std::chrono::steady_clock. This is the one place below cmd/ that
// reads a real clock: metrics report wall latency and never feed a decision, and a simulated
// clock would make them all zero.
//
// Thread safety: everything is thread-safe.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>

#include "src/common/mutex.h"
#include "src/metrics/registry.h"

namespace gpusched::metrics {

class Stopwatch {
 public:
  Stopwatch() : start_(std::chrono::steady_clock::now()) {}
  double Seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::chrono::steady_clock::time_point start_;
};

enum class Result : uint8_t { kScheduled, kUnschedulable, kError };
inline constexpr int kNumResults = 3;

// Extension points, labelled as kube-scheduler does ("PreFilter", ...).
enum class Point : uint8_t {
  kPreFilter,
  kFilter,
  kPostFilter,
  kPreScore,
  kScore,
  kReserve,
  kUnreserve,
  kPermit,
  kPreBind,
  kBind,
  kPostBind,
};
inline constexpr int kNumPoints = 11;
std::string_view PointLabel(Point p);

// Status labels, as kube-scheduler's framework.Code.String().
enum class StatusLabel : uint8_t {
  kSuccess,
  kError,
  kUnschedulable,
  kUnschedulableAndUnresolvable,
  kWait,
  kSkip,
};
inline constexpr int kNumStatuses = 6;
std::string_view StatusText(StatusLabel s);

class SchedulerMetrics;

// One plugin at one extension point in one profile.
class PluginMetrics {
 public:
  // plugin_evaluation_total += n (PreFilter, Filter, PreScore, Score only).
  void CountEvaluations(int64_t n) {
    if (evaluations_ != nullptr && n > 0) evaluations_->Add(static_cast<double>(n));
  }
  void ObserveExecution(StatusLabel s, double seconds);

 private:
  friend class ProfileMetrics;
  HistogramFamily* family_ = nullptr;
  std::string plugin_;
  Point point_ = Point::kPreFilter;
  Counter* evaluations_ = nullptr;
  std::array<std::atomic<Histogram*>, kNumStatuses> execution_{};
};

// The instruments of one profile.
class ProfileMetrics {
 public:
  // One scheduling outcome: schedule_attempts_total and scheduling_attempt_duration_seconds.
  void ObserveAttempt(Result r, double seconds) {
    attempts_[static_cast<size_t>(r)]->Inc();
    attempt_duration_[static_cast<size_t>(r)]->Observe(seconds);
  }
  void ObserveExtensionPoint(Point p, StatusLabel s, double seconds);
  // The handles of `plugin` at `point`; stable for the registry's lifetime. Resolve once (at
  // framework construction), not per cycle.
  PluginMetrics* ForPlugin(std::string_view plugin, Point point);
  const std::string& profile() const { return profile_; }

 private:
  friend class SchedulerMetrics;
  SchedulerMetrics* parent_ = nullptr;
  std::string profile_;
  std::array<Counter*, kNumResults> attempts_{};
  std::array<Histogram*, kNumResults> attempt_duration_{};
  std::array<std::atomic<Histogram*>, kNumPoints * kNumStatuses> extension_point_{};
  common::Mutex mu_;
  std::deque<PluginMetrics> plugins_ GPUSCHED_GUARDED_BY(mu_);
};

class SchedulerMetrics {
 public:
  // Registers the scheduler's pushed families in `registry` (which must outlive this).
  explicit SchedulerMetrics(Registry& registry);
  SchedulerMetrics(const SchedulerMetrics&) = delete;
  SchedulerMetrics& operator=(const SchedulerMetrics&) = delete;

  Registry& registry() { return registry_; }
  // The per-profile instruments (created on first call; stable pointer).
  ProfileMetrics* ForProfile(std::string_view profile);

  void ObserveAlgorithm(double seconds) { algorithm_duration_->Observe(seconds); }
  // A pod was bound after `attempts` attempts, `sli_seconds` after it first entered the queue.
  void ObservePodScheduled(int32_t attempts, double sli_seconds);
  // A failed attempt rejected by filters with `reason` (a small closed set of reason texts).
  void CountUnschedulableReason(std::string_view reason);
  // PostFilter ran for an unschedulable pod (kube-scheduler counts every DefaultPreemption call).
  void CountPreemptionAttempt() { preemption_attempts_->Inc(); }
  // A preemption chose `victims` pods to evict.
  void ObservePreemptionVictims(size_t victims) {
    preemption_victims_->Observe(static_cast<double>(victims));
  }
  // A gang cycle of `profile` ended, `seconds` after it started (kube-scheduler 1.37's
  // scheduler_podgroup_* metrics): result "scheduled", "unschedulable" or
  // "waiting_on_preemption" (victims evicted for it). Once per gang cycle, never per node.
  void ObservePodGroupAttempt(std::string_view result, std::string_view profile, double seconds) {
    std::vector<std::string> labels{std::string(result), std::string(profile)};
    podgroup_attempts_.With(labels)->Inc();
    podgroup_duration_.With(labels)->Observe(seconds);
  }
  // Consolidation planned `planned` moves and `moved` of them happened.
  void CountConsolidation(size_t moved, size_t planned) {
    consolidation_moved_->Add(static_cast<double>(moved));
    consolidation_refused_->Add(static_cast<double>(planned - moved));
  }
  // A gang cycle ended: placed or not.
  void CountGangAttempt(bool placed) { (placed ? gang_placed_ : gang_unschedulable_)->Inc(); }
  // A gang was placed `seconds` after its first attempt.
  void ObserveGangPlaced(double seconds) {
    CountGangAttempt(true);
    gang_duration_->Observe(seconds);
  }

 private:
  friend class ProfileMetrics;
  Registry& registry_;
  CounterFamily& attempts_;
  HistogramFamily& attempt_duration_;
  Histogram* algorithm_duration_;
  HistogramFamily& sli_;
  std::array<std::atomic<Histogram*>, 16> sli_by_attempts_{};  // 1..15, "15+"
  Histogram* pod_attempts_;
  HistogramFamily& extension_point_;
  HistogramFamily& plugin_execution_;
  CounterFamily& plugin_evaluation_;
  CounterFamily& unschedulable_reasons_;
  Counter* preemption_attempts_;
  Histogram* preemption_victims_;
  CounterFamily& gang_attempts_;
  Counter* gang_placed_;
  Counter* gang_unschedulable_;
  CounterFamily& consolidation_moves_;
  Counter* consolidation_moved_;
  Counter* consolidation_refused_;
  Histogram* gang_duration_;
  CounterFamily& podgroup_attempts_;
  HistogramFamily& podgroup_duration_;
  common::Mutex mu_;
  std::deque<ProfileMetrics> profiles_ GPUSCHED_GUARDED_BY(mu_);
};

}  // namespace gpusched::metrics
