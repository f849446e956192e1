// SPDX-License-Identifier: Apache-2.0
// The metric catalog: every metric any gpusched subcommand exports is declared here, once, with
// its type, help, label names and buckets (style guide rule 13). Families are created from these
// specs (Registry::Add*(spec) helpers below), so a name cannot drift between the code, the docs
// (docs/monitoring.md) and deploy/monitoring/ — catalog_test checks the latter two against
// kCatalog.
//
// Two groups:
//  - kube-scheduler-compatible (`scheduler_*`): same names, types, labels and buckets as
//    kube-scheduler (docs/kube-scheduler-compat.md §7), so existing dashboards work;
//  - gpusched's own (`gpusched_*`).
#pragma once

#include <array>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "src/metrics/registry.h"

namespace gpusched::metrics {

struct Buckets {
  double start = 0;  // 0: not a histogram
  double factor = 0;
  int n = 0;
};

struct MetricSpec {
  std::string_view name;
  Type type;
  std::string_view help;
  std::array<std::string_view, 4> labels{};  // the first num_labels are used
  int num_labels = 0;
  Buckets buckets{};  // exponential (histograms)
  // Explicit bucket bounds (histograms whose buckets are not exponential); empty otherwise.
  std::span<const double> explicit_buckets{};
};

// Every metric. Names are unique.
std::span<const MetricSpec> Catalog();
// The spec named `name`; a missing name is a programmer error (GPUSCHED_CHECK).
const MetricSpec& Spec(std::string_view name);
// Every exported series name: counters and gauges by name, histograms as _bucket/_sum/_count.
std::vector<std::string> ExportedSeriesNames();

// Family constructors from a spec (REQUIRES: the spec's type matches).
CounterFamily& AddCounter(Registry& r, std::string_view name);
GaugeFamily& AddGauge(Registry& r, std::string_view name);
HistogramFamily& AddHistogram(Registry& r, std::string_view name);
void AddCallback(Registry& r, std::string_view name, CollectFn collect);

// Names, so a typo is a compile error.
namespace names {
inline constexpr std::string_view kScheduleAttempts = "scheduler_schedule_attempts_total";
inline constexpr std::string_view kAttemptDuration =
    "scheduler_scheduling_attempt_duration_seconds";
inline constexpr std::string_view kPodGroupScheduleAttempts =
    "scheduler_podgroup_schedule_attempts_total";
inline constexpr std::string_view kPodGroupAttemptDuration =
    "scheduler_podgroup_scheduling_attempt_duration_seconds";
inline constexpr std::string_view kAlgorithmDuration =
    "scheduler_scheduling_algorithm_duration_seconds";
inline constexpr std::string_view kSliDuration = "scheduler_pod_scheduling_sli_duration_seconds";
inline constexpr std::string_view kPodAttempts = "scheduler_pod_scheduling_attempts";
inline constexpr std::string_view kExtensionPointDuration =
    "scheduler_framework_extension_point_duration_seconds";
inline constexpr std::string_view kPluginExecutionDuration =
    "scheduler_plugin_execution_duration_seconds";
inline constexpr std::string_view kPluginEvaluation = "scheduler_plugin_evaluation_total";
inline constexpr std::string_view kPendingPods = "scheduler_pending_pods";
inline constexpr std::string_view kQueueIncomingPods = "scheduler_queue_incoming_pods_total";
inline constexpr std::string_view kPreemptionAttempts = "scheduler_preemption_attempts_total";
inline constexpr std::string_view kPreemptionVictims = "scheduler_preemption_victims";
inline constexpr std::string_view kUnschedulablePods = "scheduler_unschedulable_pods";
inline constexpr std::string_view kCacheSize = "scheduler_cache_size";

inline constexpr std::string_view kBuildInfo = "gpusched_build_info";
inline constexpr std::string_view kLeader = "gpusched_leader";
inline constexpr std::string_view kReady = "gpusched_ready";
inline constexpr std::string_view kGpus = "gpusched_cluster_gpus";
inline constexpr std::string_view kGpusAllocated = "gpusched_cluster_gpus_allocated";
inline constexpr std::string_view kSharedGpus = "gpusched_cluster_shared_gpus";
inline constexpr std::string_view kSharedGpuPods = "gpusched_cluster_shared_gpu_pods";
inline constexpr std::string_view kFragmentation = "gpusched_cluster_gpu_fragmentation_ratio";
inline constexpr std::string_view kUnschedulableReasons =
    "gpusched_scheduler_unschedulable_reasons_total";
inline constexpr std::string_view kApiRequests = "gpusched_api_client_requests_total";
inline constexpr std::string_view kApiRequestDuration =
    "gpusched_api_client_request_duration_seconds";
inline constexpr std::string_view kApiRateLimiterWait =
    "gpusched_api_client_rate_limiter_wait_seconds";
inline constexpr std::string_view kInformerLastEventAge =
    "gpusched_informer_last_event_age_seconds";
inline constexpr std::string_view kInformerSynced = "gpusched_informer_synced";
inline constexpr std::string_view kExtenderRequests = "gpusched_extender_requests_total";
inline constexpr std::string_view kExtenderRequestDuration =
    "gpusched_extender_request_duration_seconds";
inline constexpr std::string_view kHttpRequests = "gpusched_http_requests_total";
inline constexpr std::string_view kGangs = "gpusched_gangs";
inline constexpr std::string_view kGangAttempts = "gpusched_gang_attempts_total";
inline constexpr std::string_view kConsolidationMoves = "gpusched_consolidation_moves_total";
inline constexpr std::string_view kGangSchedulingDuration =
    "gpusched_gang_scheduling_duration_seconds";
}  // namespace names

}  // namespace gpusched::metrics
