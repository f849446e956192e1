// SPDX-License-Identifier: Apache-2.0
#include "src/metrics/catalog.h"

#include <algorithm>

#include "src/common/check.h"

namespace gpusched::metrics {
namespace {

constexpr Type C = Type::kCounter;
constexpr Type G = Type::kGauge;
constexpr Type H = Type::kHistogram;

// The deletion-cost controller's cost histogram (its names predate the registry; kept).
constexpr double kDeletionCostBuckets[] = {-1000, -100, -1, 0, 1, 10, 100, 1000, 10000};
// Request latencies of the API client and the extender: 1 ms .. ~16 s.
constexpr Buckets kRequestBuckets{0.001, 2, 15};

constexpr MetricSpec kSpecs[] = {
    // --- kube-scheduler-compatible (docs/kube-scheduler-compat.md §7) ----------------------
    {names::kScheduleAttempts,
     C,
     "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod could not be "
     "scheduled, while 'error' means an internal scheduler problem.",
     {"result", "profile"},
     2},
    {names::kAttemptDuration,
     H,
     "Scheduling attempt latency in seconds (scheduling algorithm + binding)",
     {"result", "profile"},
     2,
     {0.001, 2, 15}},
    {names::kPodGroupScheduleAttempts,
     C,
     "Number of attempts to schedule pod group, by the result. 'unschedulable' means a pod group "
     "could not be scheduled, while 'error' means an internal scheduler problem.",
     {"result", "profile"},
     2},
    {names::kPodGroupAttemptDuration,
     H,
     "Pod group scheduling attempt latency in seconds",
     {"result", "profile"},
     2,
     {0.001, 2, 15}},
    {names::kAlgorithmDuration,
     H,
     "Scheduling algorithm latency in seconds",
     {},
     0,
     {0.001, 2, 15}},
    {names::kSliDuration,
     H,
     "E2e latency for a pod being scheduled, from the time the pod enters the scheduling queue and "
     "might involve multiple scheduling attempts.",
     {"attempts"},
     1,
     {0.01, 2, 20}},
    {names::kPodAttempts,
     H,
     "Number of attempts to successfully schedule a pod.",
     {},
     0,
     {1, 2, 5}},
    {names::kExtensionPointDuration,
     H,
     "Latency for running all plugins of a specific extension point.",
     {"extension_point", "status", "profile"},
     3,
     {0.0001, 2, 12}},
    {names::kPluginExecutionDuration,
     H,
     "Duration for running a plugin at a specific extension point (sampled in 10% of cycles).",
     {"plugin", "extension_point", "status"},
     3,
     {0.00001, 1.5, 20}},
    {names::kPluginEvaluation,
     C,
     "Number of attempts to schedule pods by each plugin and the extension point (available only "
     "in "
     "PreFilter, Filter, PreScore, and Score).",
     {"plugin", "extension_point", "profile"},
     3},
    {names::kPendingPods,
     G,
     "Number of pending pods, by the queue type. 'active' means number of pods in activeQ; "
     "'backoff' "
     "means number of pods in backoffQ; 'unschedulable' means number of pods in unschedulablePods "
     "that the scheduler attempted to schedule and failed; 'gated' is the number of unschedulable "
     "pods that the scheduler never attempted to schedule because they are gated.",
     {"queue"},
     1},
    {names::kQueueIncomingPods,
     C,
     "Number of pods added to scheduling queues by event and queue type.",
     {"queue", "event"},
     2},
    {names::kPreemptionAttempts, C, "Total preemption attempts in the cluster till now", {}, 0},
    {names::kPreemptionVictims, H, "Number of selected preemption victims", {}, 0, {1, 2, 7}},
    {names::kUnschedulablePods,
     G,
     "The number of unschedulable pods broken down by plugin name. A pod will increment the gauge "
     "for all plugins that caused it to not schedule and so this metric have meaning only when "
     "broken down by plugin.",
     {"plugin", "profile"},
     2},
    {names::kCacheSize,
     G,
     "Number of nodes, pods, and assumed (bound) pods in the scheduler cache.",
     {"type"},
     1},

    // --- gpusched ---------------------------------------------------------------------------
    {names::kBuildInfo,
     G,
     "Always 1; the gpusched version and the subcommand serving it.",
     {"version", "command"},
     2},
    {names::kLeader,
     G,
     "1 while this process holds the leader lease (or runs without leader election), else 0.",
     {"lease"},
     1},
    {names::kReady,
     G,
     "1 when /readyz answers 200 (informers synced, leadership known), else 0.",
     {},
     0},
    {names::kGpus,
     G,
     "Healthy GPUs in the cluster by model and node group.",
     {"model", "node_group"},
     2},
    {names::kGpusAllocated,
     G,
     "GPUs allocated to pods by model and node group, in GPU units (a 0.5 share counts 0.5).",
     {"model", "node_group"},
     2},
    {names::kSharedGpus,
     G,
     "GPUs holding at least one fractional (shared) allocation.",
     {"model", "node_group"},
     2},
    {names::kSharedGpuPods,
     G,
     "Pods holding a fractional share of a GPU.",
     {"model", "node_group"},
     2},
    {names::kFragmentation,
     G,
     "Share of the free GPU capacity stranded on partially allocated GPUs: sum of the free "
     "fraction "
     "of GPUs that are partly used, divided by the total free GPU capacity (0 when nothing is "
     "free).",
     {},
     0},
    {names::kGangs,
     G,
     "Gangs (all-or-nothing pod groups) the scheduler knows, by state: waiting (tried, not "
     "placed), timed_out (not placed within the schedule timeout), placed.",
     {"state"},
     1},
    {names::kGangAttempts,
     C,
     "Gang cycles by result: placed (every member reserved) or unschedulable (none kept).",
     {"result"},
     1},
    {names::kConsolidationMoves,
     C,
     "Pods consolidation planned to move, by result: moved (evicted, room held for the "
     "replacement) or refused (the eviction was refused, e.g. by a PodDisruptionBudget, or not "
     "tried after a refusal).",
     {"result"},
     1},
    {names::kGangSchedulingDuration,
     H,
     "Time from a gang's first attempt to its placement.",
     {},
     0,
     {0.01, 2, 20}},
    {names::kUnschedulableReasons,
     C,
     "Failed scheduling attempts by filter reason (each reason counted once per attempt).",
     {"reason"},
     1},
    {names::kApiRequests,
     C,
     "Requests to the Kubernetes API server by verb and HTTP status code.",
     {"verb", "code"},
     2},
    {names::kApiRequestDuration,
     H,
     "Latency of requests to the Kubernetes API server.",
     {"verb"},
     1,
     kRequestBuckets},
    {names::kApiRateLimiterWait,
     H,
     "Time requests waited in the client-side QPS/burst rate limiter.",
     {},
     0,
     {0.001, 2, 15}},
    {names::kInformerLastEventAge,
     G,
     "Seconds since the informer last received a watch event or bookmark (informer lag).",
     {"resource"},
     1},
    {names::kInformerSynced, G, "1 once the informer finished its initial list.", {"resource"}, 1},
    {names::kExtenderRequests,
     C,
     "Extender requests by verb and HTTP status code.",
     {"verb", "code"},
     2},
    {names::kExtenderRequestDuration,
     H,
     "Extender request latency by verb.",
     {"verb"},
     1,
     kRequestBuckets},
    {names::kHttpRequests,
     C,
     "Requests to the metrics and health endpoints by path and code.",
     {"path", "code"},
     2},

    // --- deletion-cost controller (names kept from its first, hand-written exposition) ----------
    {"gpusched_deletion_cost_reconciles_total", C, "Pod reconciles.", {}, 0},
    {"gpusched_deletion_cost_patches_total",
     C,
     "Deletion-cost annotation writes by result.",
     {"result"},
     1},
    {"gpusched_deletion_cost_skipped_total",
     C,
     "Reconciles that wrote nothing, by reason.",
     {"reason"},
     1},
    {"gpusched_deletion_cost_metric_errors_total",
     C,
     "Cost terms counted as 0 because their metric could not be read.",
     {"source"},
     1},
    {"gpusched_deletion_cost_invalid_annotations_total",
     C,
     "Reconciles that found an unparsable pod-deletion-cost (treated as 0).",
     {},
     0},
    {"gpusched_deletion_cost_workload_refresh_errors_total",
     C,
     "Failed LISTs of Deployments/ReplicaSets.",
     {},
     0},
    {"gpusched_deletion_cost_events_total", C, "Events recorded.", {}, 0},
    {"gpusched_deletion_cost_computed_cost",
     H,
     "Costs computed by reconciles.",
     {},
     0,
     {},
     kDeletionCostBuckets},
    {"gpusched_deletion_cost_managed_pods",
     G,
     "Managed pods by the band of their last computed cost.",
     {"band"},
     1},
    {"gpusched_deletion_cost_queue_depth", G, "Keys queued or waiting.", {}, 0},
};

std::vector<std::string> LabelsOf(const MetricSpec& s) {
  std::vector<std::string> out;
  for (int i = 0; i < s.num_labels; ++i) out.emplace_back(s.labels[static_cast<size_t>(i)]);
  return out;
}

std::vector<double> BoundsOf(const MetricSpec& s) {
  if (!s.explicit_buckets.empty()) return {s.explicit_buckets.begin(), s.explicit_buckets.end()};
  return ExponentialBuckets(s.buckets.start, s.buckets.factor, s.buckets.n);
}

}  // namespace

std::span<const MetricSpec> Catalog() { return kSpecs; }

const MetricSpec& Spec(std::string_view name) {
  for (const auto& s : kSpecs) {
    if (s.name == name) return s;
  }
  GPUSCHED_CHECK(false && "metric not in the catalog");
  return kSpecs[0];
}

std::vector<std::string> ExportedSeriesNames() {
  std::vector<std::string> out;
  for (const auto& s : kSpecs) {
    if (s.type == Type::kHistogram) {
      for (const char* suffix : {"_bucket", "_sum", "_count"})
        out.push_back(std::string(s.name) + suffix);
    } else {
      out.emplace_back(s.name);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

CounterFamily& AddCounter(Registry& r, std::string_view name) {
  const MetricSpec& s = Spec(name);
  GPUSCHED_CHECK(s.type == Type::kCounter);
  return r.AddCounter(std::string(s.name), std::string(s.help), LabelsOf(s));
}

GaugeFamily& AddGauge(Registry& r, std::string_view name) {
  const MetricSpec& s = Spec(name);
  GPUSCHED_CHECK(s.type == Type::kGauge);
  return r.AddGauge(std::string(s.name), std::string(s.help), LabelsOf(s));
}

HistogramFamily& AddHistogram(Registry& r, std::string_view name) {
  const MetricSpec& s = Spec(name);
  GPUSCHED_CHECK(s.type == Type::kHistogram);
  return r.AddHistogram(std::string(s.name), std::string(s.help), LabelsOf(s), BoundsOf(s));
}

void AddCallback(Registry& r, std::string_view name, CollectFn collect) {
  const MetricSpec& s = Spec(name);
  r.AddCallback(std::string(s.name), std::string(s.help), s.type, LabelsOf(s), std::move(collect));
}

}  // namespace gpusched::metrics
