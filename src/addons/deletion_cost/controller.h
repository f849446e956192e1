// SPDX-License-Identifier: Apache-2.0
// Controller: keeps controller.kubernetes.io/pod-deletion-cost of opted-in pods equal to what
// their DeletionCostPolicy (policy.h) computes.
//
//   Reflector(pods) ──Replace/Apply──► store (PodFacts by ns/name) ──► work queue (keys)
//   Tick() (main loop, ~1/s): resync due? LIST ReplicaSets+Deployments (opt-in annotations),
//                             enqueue every key; due delayed keys → queue; post queued keys
//   Executor worker: Reconcile(key)
//       policy for the pod? (owner opt-in annotation, else first selector match) ── none: done
//       current annotation: invalid → counted, Warning event, treated as 0 (as upstream)
//       EvaluateCost (warm-up, or terms: scrape /metrics once, Prometheus queries)
//         failed terms count 0 → counted, Warning event (or skip the pod: onMetricError Skip)
//       patch if absent/invalid, |new − current| > hysteresis, or the sign changed
//       PATCH pods/{name} (merge patch) ── or only log and count in dry-run mode
//
// Work queue states of one key (client-go's workqueue semantics):
//
//   (none) ──Add──► Queued ──Tick posts──► Processing ──Done──► (none)
//      │                ▲                        │ Add while processing: Dirty
//      └─AddAfter(t)─► Waiting ─t passed─┘       └─ Done(dirty) ──► Queued
//   A failed reconcile re-adds the key after a per-key backoff (retryBackoff doubling, capped at
//   the resync period). A key is never processed by two workers at once.
//
// Threading: Replace/Apply on the reflector's thread; Tick on the main loop's thread;
// Reconcile on executor threads (or the caller's, in tests with InlineExecutor). All shared
// state is behind mu_. The clock, the API (RestClient, ApiClient for events), the metric
// transport (HttpGetter) and the executor are injected.
#pragma once

#include <boost/json/fwd.hpp>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "src/addons/deletion_cost/metrics_source.h"
#include "src/addons/deletion_cost/policy.h"
#include "src/addons/deletion_cost/ranking.h"
#include "src/common/clock.h"
#include "src/common/executor.h"
#include "src/common/mutex.h"
#include "src/common/status.h"
#include "src/kube/api_client.h"
#include "src/kube/informer/reflector.h"
#include "src/kube/rest_client.h"
#include "src/metrics/registry.h"

namespace gpusched::addons::deletion_cost {

inline constexpr std::string_view kControllerName = "gpusched-deletion-cost";

struct ControllerDeps {
  const common::Clock& clock;
  kube::RestClient& rest;      // LIST workloads, PATCH pods (rate-limited by the client)
  kube::ApiClient* events;     // Events; null: none are recorded
  HttpGetter& http;            // pod /metrics and the Prometheus API
  common::Executor& executor;  // runs reconciles
};

// Counters since start. Label sets are closed (see MetricsText).
struct ControllerStats {
  int64_t reconciles = 0;
  int64_t patches_success = 0;
  int64_t patches_error = 0;
  int64_t patches_dry_run = 0;
  int64_t skipped_hysteresis = 0;    // the value moved, but not beyond the hysteresis band
  int64_t skipped_unchanged = 0;     // the annotation already holds the value
  int64_t skipped_metric_error = 0;  // onMetricError: Skip
  int64_t metric_errors_pod = 0;     // terms that could not be read from a pod's /metrics
  int64_t metric_errors_prometheus = 0;
  int64_t invalid_annotations = 0;  // reconciles that found an unparsable annotation
  int64_t unknown_policy = 0;       // opt-in annotations naming no policy
  int64_t workload_refresh_errors = 0;
  int64_t events_recorded = 0;
};

class Controller final : public kube::informer::ReflectorSink {
 public:
  // `deps` members are borrowed and must outlive the controller.
  Controller(ControllerDeps deps, PolicyConfig config);
  Controller(const Controller&) = delete;
  Controller& operator=(const Controller&) = delete;

  // The pod collection the reflector should list/watch: /api/v1/pods, or the namespace's.
  std::string PodsPath() const;

  // ReflectorSink (the reflector's thread): updates the store and queues affected keys.
  void Replace(std::vector<boost::json::value> items, std::string_view resource_version) override;
  void Apply(kube::informer::EventType type, const boost::json::value& object) override;

  // Lists ReplicaSets and Deployments (in controller.namespace, or all) and rebuilds the map
  // from ReplicaSet UID to the policy its opt-in annotation (or its Deployment's) names.
  common::Status RefreshWorkloads();

  // One step of the main loop: a due resync (RefreshWorkloads + every key), due delayed keys,
  // then posts every queued key that is not in flight to the executor. Returns at once.
  void Tick();

  // Reconciles one pod on the calling thread. Errors are API write failures (the key is then
  // retried with backoff by the Tick path); bad annotations and metrics are not errors.
  common::Status Reconcile(const std::string& key);

  ControllerStats stats() const;
  // Prometheus text exposition of the controller's metrics (gpusched_deletion_cost_*), written
  // from registry() (families from src/metrics/catalog.cc; names unchanged since issue #8).
  std::string MetricsText() const;
  // The controller's metrics: counters and gauges read from its state at scrape time, and the
  // computed-cost histogram. cmd/ serves it (with the process metrics) on /metrics.
  metrics::Registry& registry() { return registry_; }
  // Keys queued or waiting, and in flight (for tests and /metrics).
  size_t QueueDepth() const;
  size_t InFlight() const;
  const PolicyConfig& config() const { return config_; }

  // The last cost computed for `key`, if any (tests).
  std::optional<int32_t> LastCostForTest(const std::string& key) const;

 private:
  void RegisterMetrics();

  void UpsertLocked(PodFacts pod) GPUSCHED_REQUIRES(mu_);
  void AddLocked(const std::string& key) GPUSCHED_REQUIRES(mu_);
  void AddAfterLocked(const std::string& key, common::TimePoint when) GPUSCHED_REQUIRES(mu_);
  void Done(const std::string& key, const common::Status& status);
  // Policy for the pod, or nullptr. Sets *unknown_owner when its ReplicaSet is not yet known.
  const PolicySpec* PolicyForLocked(const PodFacts& pod, bool* unknown_owner)
      GPUSCHED_REQUIRES(mu_);
  common::Status Patch(const PodFacts& pod, int32_t cost);
  // Reconcile's steps, in order. The pod (a copy of the stored one) and its policy, or nullptr
  // when the pod is gone, inactive or matches no policy (then its last cost is forgotten).
  const PolicySpec* PolicyToReconcile(const std::string& key, PodFacts* pod);
  // The pod's current annotation; an invalid one is counted and reported.
  DeletionCost CurrentCost(const std::string& key, const PodFacts& pod);
  // EvaluateCost over the pod's metrics; failed terms are counted, a warm-up end re-queues.
  CostResult ComputeCost(const std::string& key, const PodFacts& pod, const PolicySpec& policy,
                         common::TimePoint now);
  // Reports failed metric terms; true when the policy then skips the pod (onMetricError: Skip).
  bool ReportMetricErrors(const std::string& key, const PodFacts& pod, const PolicySpec& policy,
                          const CostResult& result);
  // True (counted) when `cost` need not be written: unchanged, or within the hysteresis band.
  bool SkipWrite(const std::string& key, const PolicySpec& policy, const DeletionCost& current,
                 int32_t cost);
  // Patches the annotation (or only logs it in dry-run mode), then counts, logs and records it.
  common::Status WriteCost(const std::string& key, const PodFacts& pod, const PolicySpec& policy,
                           const DeletionCost& current, const CostResult& result);
  // Sets the written cost on the stored pod `key` if it is still the pod with `uid`.
  void ReflectWrittenCostLocked(const std::string& key, const std::string& uid, int32_t cost)
      GPUSCHED_REQUIRES(mu_);
  void Event(const PodFacts& pod, std::string_view type, std::string_view reason, std::string note);

  const common::Clock& clock_;
  kube::RestClient& rest_;
  kube::ApiClient* const events_;
  HttpGetter& http_;
  common::Executor& executor_;
  const PolicyConfig config_;

  mutable common::Mutex mu_;
  std::unordered_map<std::string, PodFacts> store_ GPUSCHED_GUARDED_BY(mu_);
  // ReplicaSet UID -> policy name from opt-in annotations; known ReplicaSet UIDs.
  std::unordered_map<std::string, std::string> optin_ GPUSCHED_GUARDED_BY(mu_);
  std::set<std::string> known_replicasets_ GPUSCHED_GUARDED_BY(mu_);
  std::set<std::string> unknown_owner_keys_ GPUSCHED_GUARDED_BY(mu_);
  common::TimePoint last_refresh_ GPUSCHED_GUARDED_BY(mu_){};
  common::TimePoint next_resync_ GPUSCHED_GUARDED_BY(mu_){};
  // Work queue.
  std::deque<std::string> queue_ GPUSCHED_GUARDED_BY(mu_);
  std::set<std::string> queued_ GPUSCHED_GUARDED_BY(mu_);
  std::set<std::string> processing_ GPUSCHED_GUARDED_BY(mu_);
  std::set<std::string> dirty_ GPUSCHED_GUARDED_BY(mu_);
  std::multimap<common::TimePoint, std::string> waiting_ GPUSCHED_GUARDED_BY(mu_);
  std::unordered_map<std::string, int> failures_ GPUSCHED_GUARDED_BY(mu_);
  // Last computed cost per managed pod (the cost distribution), the value this controller last
  // wrote, and the last time a Warning of a given reason was recorded per pod.
  std::unordered_map<std::string, int32_t> last_cost_ GPUSCHED_GUARDED_BY(mu_);
  std::unordered_map<std::string, common::TimePoint> last_warning_ GPUSCHED_GUARDED_BY(mu_);
  ControllerStats stats_ GPUSCHED_GUARDED_BY(mu_);
  // Declared last: its callbacks read the state above (under mu_).
  metrics::Registry registry_;
  metrics::Histogram* cost_histogram_ = nullptr;  // gpusched_deletion_cost_computed_cost
};

// Bucket upper bounds of gpusched_deletion_cost_computed_cost (declared in src/metrics/catalog.cc;
// catalog_test keeps the two equal).
inline constexpr double kCostBuckets[] = {-1000, -100, -1, 0, 1, 10, 100, 1000, 10000};

// The merge patch that sets the annotation: {"metadata":{"annotations":{"<key>":"<cost>"}}}.
std::string BuildCostPatch(int32_t cost);

}  // namespace gpusched::addons::deletion_cost
