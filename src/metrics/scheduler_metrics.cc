// SPDX-License-Identifier: Apache-2.0
#include "src/metrics/scheduler_metrics.h"

#include "src/metrics/catalog.h"

namespace gpusched::metrics {

std::string_view PointLabel(Point p) {
  static constexpr std::string_view kLabels[kNumPoints] = {
      "PreFilter", "Filter", "PostFilter", "PreScore", "Score",   "Reserve",
      "Unreserve", "Permit", "PreBind",    "Bind",     "PostBind"};
  return kLabels[static_cast<size_t>(p)];
}

std::string_view StatusText(StatusLabel s) {
  static constexpr std::string_view kLabels[kNumStatuses] = {
      "Success", "Error", "Unschedulable", "UnschedulableAndUnresolvable", "Wait", "Skip"};
  return kLabels[static_cast<size_t>(s)];
}

namespace {
constexpr std::string_view kResults[kNumResults] = {"scheduled", "unschedulable", "error"};

// Resolves a lazily cached series: the first caller does the lookup, later ones load the pointer.
template <typename Resolve>
Histogram* Cached(std::atomic<Histogram*>& slot, Resolve resolve) {
  Histogram* h = slot.load(std::memory_order_acquire);
  if (h == nullptr) {
    h = resolve();  // With() is idempotent: racing resolvers get the same series
    slot.store(h, std::memory_order_release);
  }
  return h;
}
}  // namespace

void PluginMetrics::ObserveExecution(StatusLabel s, double seconds) {
  if (family_ == nullptr) return;
  Histogram* h = Cached(execution_[static_cast<size_t>(s)], [&] {
    return family_->With({plugin_, std::string(PointLabel(point_)), std::string(StatusText(s))});
  });
  h->Observe(seconds);
}

void ProfileMetrics::ObserveExtensionPoint(Point p, StatusLabel s, double seconds) {
  size_t i = static_cast<size_t>(p) * kNumStatuses + static_cast<size_t>(s);
  Histogram* h = Cached(extension_point_[i], [&] {
    return parent_->extension_point_.With(
        {std::string(PointLabel(p)), std::string(StatusText(s)), profile_});
  });
  h->Observe(seconds);
}

PluginMetrics* ProfileMetrics::ForPlugin(std::string_view plugin, Point point) {
  common::MutexLock l(mu_);
  for (auto& pm : plugins_) {
    if (pm.plugin_ == plugin && pm.point_ == point) return &pm;
  }
  PluginMetrics& pm = plugins_.emplace_back();
  pm.family_ = &parent_->plugin_execution_;
  pm.plugin_ = std::string(plugin);
  pm.point_ = point;
  if (point == Point::kPreFilter || point == Point::kFilter || point == Point::kPreScore ||
      point == Point::kScore) {
    pm.evaluations_ =
        parent_->plugin_evaluation_.With({pm.plugin_, std::string(PointLabel(point)), profile_});
  }
  return &pm;
}

SchedulerMetrics::SchedulerMetrics(Registry& registry)
    : registry_(registry),
      attempts_(AddCounter(registry, names::kScheduleAttempts)),
      attempt_duration_(AddHistogram(registry, names::kAttemptDuration)),
      algorithm_duration_(AddHistogram(registry, names::kAlgorithmDuration).With({})),
      sli_(AddHistogram(registry, names::kSliDuration)),
      pod_attempts_(AddHistogram(registry, names::kPodAttempts).With({})),
      extension_point_(AddHistogram(registry, names::kExtensionPointDuration)),
      plugin_execution_(AddHistogram(registry, names::kPluginExecutionDuration)),
      plugin_evaluation_(AddCounter(registry, names::kPluginEvaluation)),
      unschedulable_reasons_(AddCounter(registry, names::kUnschedulableReasons)),
      preemption_attempts_(AddCounter(registry, names::kPreemptionAttempts).With({})),
      preemption_victims_(AddHistogram(registry, names::kPreemptionVictims).With({})),
      gang_attempts_(AddCounter(registry, names::kGangAttempts)),
      gang_placed_(gang_attempts_.With({"placed"})),
      gang_unschedulable_(gang_attempts_.With({"unschedulable"})),
      consolidation_moves_(AddCounter(registry, names::kConsolidationMoves)),
      consolidation_moved_(consolidation_moves_.With({"moved"})),
      consolidation_refused_(consolidation_moves_.With({"refused"})),
      gang_duration_(AddHistogram(registry, names::kGangSchedulingDuration).With({})),
      podgroup_attempts_(AddCounter(registry, names::kPodGroupScheduleAttempts)),
      podgroup_duration_(AddHistogram(registry, names::kPodGroupAttemptDuration)) {}

ProfileMetrics* SchedulerMetrics::ForProfile(std::string_view profile) {
  common::MutexLock l(mu_);
  for (auto& p : profiles_) {
    if (p.profile_ == profile) return &p;
  }
  ProfileMetrics& p = profiles_.emplace_back();
  p.parent_ = this;
  p.profile_ = std::string(profile);
  for (int r = 0; r < kNumResults; ++r) {
    std::vector<std::string> labels{std::string(kResults[r]), p.profile_};
    p.attempts_[static_cast<size_t>(r)] = attempts_.With(labels);
    p.attempt_duration_[static_cast<size_t>(r)] = attempt_duration_.With(labels);
  }
  return &p;
}

void SchedulerMetrics::ObservePodScheduled(int32_t attempts, double sli_seconds) {
  pod_attempts_->Observe(static_cast<double>(attempts));
  size_t slot = attempts >= 15 ? 15 : static_cast<size_t>(attempts < 1 ? 1 : attempts) - 1;
  Histogram* h = Cached(sli_by_attempts_[slot], [&] {
    return sli_.With({slot == 15 ? std::string("15+") : std::to_string(slot + 1)});
  });
  h->Observe(sli_seconds);
}

void SchedulerMetrics::CountUnschedulableReason(std::string_view reason) {
  // Failure path only (once per failed attempt and reason), never per node.
  unschedulable_reasons_.With({std::string(reason)})->Inc();
}

}  // namespace gpusched::metrics
