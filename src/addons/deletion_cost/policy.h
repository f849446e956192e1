// SPDX-License-Identifier: Apache-2.0
// Policy: the declarative DeletionCostPolicy that says which pods the controller manages and how
// their controller.kubernetes.io/pod-deletion-cost is computed. Typed, validated (every error
// reported with its YAML path), and evaluated by a pure function (EvaluateCost).
//
//   apiVersion: gpusched.io/v1alpha1
//   kind: DeletionCostPolicy
//   controller: {resyncPeriod: 30s, workers: 8, qps: 20, burst: 40, dryRun: false,
//                scrapeTimeout: 2s, events: Warnings, namespace: ""}
//   bands:                       # named ranges (defaults shown)
//     delete-first: {min: -100, max: -1}
//     default: {min: 0, max: 0}
//     medium: {min: 1, max: 100}
//     high: {min: 100, max: 1000}
//   policies:
//   - name: web                  # also the value of the opt-in annotation
//     selector: {namespaces: [prod], matchLabels: {app: web}}
//     metrics: {pod: {url: "http://{podIP}:9090/metrics"},
//               prometheus: {url: "http://prometheus:9090"}}
//     terms:
//     - {metric: active_connections, weight: 10, max: 1000}
//     - {metric: cache_hit_rate, weight: 100}
//     - {metric: avg_latency_ms, thresholds: [{below: 100, cost: 50}, {below: 500, cost: 20}]}
//     - {query: 'sum(rate(http_requests_total{pod="{name}"}[1m]))', weight: 5}
//     - {label: cache-warmed, value: "true", cost: 100}
//     - {annotation: example.com/data-locality, cost: 50}
//     warmup: {cost: -50, readyFor: 60s}
//     max: 1000
//     band: high
//     hysteresis: 10
//     onMetricError: Zero        # or Skip
//
// Cost of one pod (EvaluateCost):
//   not ready, or ready for less than warmup.readyFor  -> warmup.cost (no metric is read)
//   otherwise  sum over terms, each: metric/query value × weight, or the first threshold whose
//              `below` exceeds the value, or the fixed cost of a matching label/annotation;
//              each term clamped to its own [min, max]; a term whose value could not be read
//              (fetch failed, bad payload, metric absent, NaN/Inf) counts 0 and is reported
//   then: rounded toward zero, clamped to the policy's [min, max], to its band, to the
//   controller's [minCost, maxCost], and to int32.
//
// Who manages a pod: a pod whose ReplicaSet or Deployment carries the annotation
// gpusched.io/deletion-cost-policy: <name> uses that policy; otherwise the first policy (in file
// order) whose selector (namespaces + labels) matches the pod. A policy without a selector is
// used only through the annotation.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/api/labels.h"
#include "src/common/clock.h"
#include "src/common/status.h"

namespace gpusched::addons::deletion_cost {

// The opt-in annotation on a Deployment or ReplicaSet; its value names a policy.
inline constexpr std::string_view kPolicyAnnotation = "gpusched.io/deletion-cost-policy";

struct Band {
  int64_t min = 0;
  int64_t max = 0;
};

struct Threshold {
  double below = 0;  // applies when value < below (thresholds are tried in order)
  double cost = 0;
};

// One additive term. Exactly one of metric, query, label, annotation is set.
struct Term {
  enum class Kind : uint8_t { kMetric, kQuery, kLabel, kAnnotation };
  Kind kind = Kind::kMetric;
  // kMetric: a metric name in the pod's /metrics (summed over the series matching `labels`).
  // kQuery: a PromQL expression template sent to the Prometheus HTTP API (vector results are
  // summed). kLabel/kAnnotation: the key.
  std::string name;
  std::vector<std::pair<std::string, std::string>> labels;  // kMetric: series label matchers
  double weight = 1;                                        // value × weight
  std::vector<Threshold> thresholds;                        // instead of weight when non-empty
  std::optional<std::string> equals;  // kLabel/kAnnotation: required value (default: present)
  double cost = 0;                    // kLabel/kAnnotation: the fixed cost
  std::optional<double> min;          // clamp of this term's contribution
  std::optional<double> max;

  bool NeedsPodScrape() const { return kind == Kind::kMetric; }
  bool NeedsPrometheus() const { return kind == Kind::kQuery; }
  // "metric active_connections", "label cache-warmed", ...
  std::string Describe() const;
};

struct Warmup {
  int64_t cost = -50;
  common::Duration ready_for = std::chrono::seconds(0);
};

enum class OnMetricError : uint8_t { kZero, kSkip };

struct PolicySpec {
  std::string name;
  // Selector. `has_selector` false: annotation opt-in only.
  bool has_selector = false;
  std::vector<std::string> namespaces;  // empty: every namespace
  api::LabelSelector selector;
  // Metric sources.
  std::string pod_url_template;  // "http://{podIP}:9090/metrics"; placeholders below
  std::string prometheus_url;    // "http://prometheus:9090" (no trailing /api/v1/query)
  std::vector<Term> terms;
  std::optional<Warmup> warmup;
  std::optional<int64_t> min;
  std::optional<int64_t> max;
  std::string band;        // "" = none
  int64_t hysteresis = 0;  // patch only when |new − current| > hysteresis (see controller.h)
  OnMetricError on_metric_error = OnMetricError::kZero;

  bool NeedsPodScrape() const;
  bool NeedsPrometheus() const;
};

enum class EventMode : uint8_t { kNone, kWarnings, kAll };

struct ControllerSettings {
  common::Duration resync_period = std::chrono::seconds(30);
  int workers = 8;
  double qps = 20;
  int burst = 40;
  bool dry_run = false;
  common::Duration scrape_timeout = std::chrono::seconds(2);
  EventMode events = EventMode::kWarnings;
  std::string namespace_;  // "" = all namespaces
  int64_t min_cost = INT32_MIN;
  int64_t max_cost = INT32_MAX;
  // A pod whose patch failed is retried after this (doubling per failure, up to resync_period).
  common::Duration retry_backoff = std::chrono::seconds(1);
};

struct PolicyConfig {
  ControllerSettings controller;
  std::map<std::string, Band, std::less<>> bands;
  std::vector<PolicySpec> policies;

  const PolicySpec* Find(std::string_view name) const;
};

// The seed's team ranges: delete-first -100..-1, default 0..0, medium 1..100, high 100..1000.
std::map<std::string, Band, std::less<>> DefaultBands();

// Parses and validates a policy file (YAML or JSON). Every error is reported, each with its path,
// e.g. "policies[0].terms[2].weight: want a number, got \"ten\"", joined by "; ".
// `source` names the file in errors.
common::StatusOr<PolicyConfig> ParsePolicyConfig(std::string_view text, std::string_view source);

// Go duration subset: "1h2m3.5s", "500ms", "0". nullopt when malformed.
std::optional<common::Duration> ParseDuration(std::string_view text);

// Substitutes {podIP}, {name}, {namespace}, {uid}, {node} in a URL or PromQL template.
struct PodRef {
  std::string_view namespace_;
  std::string_view name;
  std::string_view uid;
  std::string_view pod_ip;
  std::string_view node;
};
std::string ExpandTemplate(std::string_view tmpl, const PodRef& pod);

// What EvaluateCost reads of a pod.
struct PodView {
  bool ready = false;
  std::optional<common::TimePoint> ready_since;
  const api::Labels* labels = nullptr;  // may be null: no label matches
  const std::vector<std::pair<std::string, std::string>>* annotations = nullptr;
};

// The value of metric/query term `index`, or the error that prevented reading it.
using TermValueFn = std::function<common::StatusOr<double>(size_t index)>;

struct CostResult {
  int32_t cost = 0;
  bool warming_up = false;
  // When warming up and ready: when the warm-up ends (the controller re-evaluates then).
  std::optional<common::TimePoint> warmup_ends;
  // Per term: its contribution (after its clamp); errors hold the term's failure.
  std::vector<double> contributions;
  std::vector<std::string> errors;   // "metric active_connections: ...", one per failed term
  std::vector<size_t> failed_terms;  // their indices in policy.terms
  bool clamped = false;              // a policy, band or controller bound changed the sum
};

// Evaluates `policy` for one pod at `now`. Never fails: a term that cannot be read counts 0 and
// is listed in `errors`. `values` is called only for metric/query terms and only when the pod is
// out of warm-up.
CostResult EvaluateCost(const PolicyConfig& config, const PolicySpec& policy, const PodView& pod,
                        common::TimePoint now, const TermValueFn& values);

}  // namespace gpusched::addons::deletion_cost
