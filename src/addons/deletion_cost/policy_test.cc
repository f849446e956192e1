// SPDX-License-Identifier: Apache-2.0
#include "src/addons/deletion_cost/policy.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <vector>

namespace gpusched::addons::deletion_cost {
namespace {

using std::chrono::seconds;

const common::TimePoint kNow = common::TimePoint(seconds(1'700'000'000));

constexpr const char* kSeedPolicy = R"(
apiVersion: gpusched.io/v1alpha1
kind: DeletionCostPolicy
controller:
  resyncPeriod: 45s
  workers: 4
  qps: 10
  burst: 20
  dryRun: true
  scrapeTimeout: 500ms
  events: All
  namespace: serving
bands:
  top: {min: 2000, max: 3000}
policies:
- name: connections
  selector: {namespaces: [serving], matchLabels: {app: gateway}}
  metrics: {pod: {port: 9090}}
  terms:
  - {metric: active_connections, weight: 10, max: 1000}
  warmup: {cost: -50, readyFor: 60s}
  hysteresis: 10
- name: weighted
  selector: {matchExpressions: [{key: app, operator: In, values: [api, web]}]}
  metrics:
    pod: {url: "http://{podIP}:8080/stats/prometheus"}
    prometheus: {url: "http://prometheus:9090/"}
  terms:
  - {metric: active_requests, weight: 5}
  - {metric: cache_hit_rate, weight: 100}
  - metric: avg_latency_ms
    thresholds: [{below: 100, cost: 50}, {below: 500, cost: 20}]
  - {query: 'sum(rate(http_requests_total{pod="{name}"}[1m]))', weight: 2, min: 0}
  max: 1000
  onMetricError: Skip
- name: fixed
  terms:
  - {label: cache-warmed, value: "true", cost: 100}
  - {annotation: example.com/data-locality, cost: 50}
  band: high
)";

TEST(ParsePolicyConfigTest, ParsesTheSeedPatterns) {
  auto cfg = ParsePolicyConfig(kSeedPolicy, "policy.yaml");
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_EQ(cfg->controller.resync_period, seconds(45));
  EXPECT_EQ(cfg->controller.workers, 4);
  EXPECT_EQ(cfg->controller.qps, 10);
  EXPECT_TRUE(cfg->controller.dry_run);
  EXPECT_EQ(cfg->controller.scrape_timeout, std::chrono::milliseconds(500));
  EXPECT_EQ(cfg->controller.events, EventMode::kAll);
  EXPECT_EQ(cfg->controller.namespace_, "serving");
  EXPECT_EQ(cfg->bands.size(), 5u);  // the four defaults and "top"
  EXPECT_EQ(cfg->bands.at("delete-first").min, -100);
  EXPECT_EQ(cfg->bands.at("high").max, 1000);
  ASSERT_EQ(cfg->policies.size(), 3u);
  const PolicySpec& c = cfg->policies[0];
  EXPECT_EQ(c.pod_url_template, "http://{podIP}:9090/metrics");
  EXPECT_TRUE(c.NeedsPodScrape());
  EXPECT_FALSE(c.NeedsPrometheus());
  ASSERT_TRUE(c.warmup.has_value());
  EXPECT_EQ(c.warmup->ready_for, seconds(60));
  EXPECT_EQ(c.hysteresis, 10);
  const PolicySpec& w = cfg->policies[1];
  EXPECT_EQ(w.prometheus_url, "http://prometheus:9090");
  EXPECT_EQ(w.terms[2].thresholds.size(), 2u);
  EXPECT_EQ(w.on_metric_error, OnMetricError::kSkip);
  EXPECT_TRUE(w.NeedsPrometheus());
  const PolicySpec& f = cfg->policies[2];
  EXPECT_FALSE(f.has_selector);
  EXPECT_EQ(f.band, "high");
  EXPECT_EQ(cfg->Find("weighted"), &cfg->policies[1]);
  EXPECT_EQ(cfg->Find("nope"), nullptr);
}

TEST(ParsePolicyConfigTest, ReportsEveryErrorWithItsPath) {
  struct Case {
    std::string name;
    std::string yaml;
    std::vector<std::string> errors;
  };
  const std::string head = "apiVersion: gpusched.io/v1alpha1\nkind: DeletionCostPolicy\n";
  const std::vector<Case> cases = {
      {"wrong apiVersion and kind",
       "apiVersion: v1\nkind: ConfigMap\npolicies: [{name: a, terms: [{label: x, cost: 1}]}]",
       {"apiVersion: want gpusched.io/v1alpha1", "kind: want DeletionCostPolicy"}},
      {"no policies", head + "policies: []", {"policies: at least one policy is required"}},
      {"unknown fields at every level",
       head + "colour: red\ncontroller: {workerz: 3}\npolicies: [{name: a, weight: 1, terms: "
              "[{label: x, cost: 1, typo: 2}, {metric: m, thresholds: [{below: 1, cst: 2}]}], "
              "metrics: {pod: {port: 80, schema: http}}}]",
       {"colour: unknown field", "controller.workerz: unknown field (did you mean \"workers\"?)",
        "policies[0].weight: unknown field", "policies[0].terms[0].typo: unknown field",
        "policies[0].terms[1].thresholds[0].cst: unknown field (did you mean \"cost\"?)",
        "policies[0].metrics.pod.schema: unknown field (did you mean \"scheme\"?)"}},
      {"controller values out of range",
       head + "controller: {workers: 0, qps: -1, resyncPeriod: abc, events: Loud, minCost: 5, "
              "maxCost: 1}\n"
              "policies: [{name: a, terms: [{label: x, cost: 1}]}]",
       {"controller.workers: must be in [1, 256]", "controller.qps: must be >= 0",
        "controller.resyncPeriod: invalid duration \"abc\"",
        "controller.events: invalid value \"Loud\"",
        "controller: minCost must not exceed maxCost"}},
      {"duplicate and invalid names",
       head + "policies: [{name: a, terms: [{label: x, cost: 1}]}, {name: a, terms: [{label: x, "
              "cost: 1}]}, "
              "{name: Bad_Name!, terms: [{label: x, cost: 1}]}, {terms: [{label: x, cost: 1}]}]",
       {"policies[1].name: duplicate policy name \"a\"", "policies[2].name: invalid name",
        "policies[3].name: required"}},
      {"term shape errors",
       head + "policies:\n- name: a\n  terms:\n  - {metric: x, label: y}\n  - {metric: conns}\n"
              "  - {metric: '9bad'}\n  - {query: 'up'}\n  - {metric: x, weight: ten}\n"
              "  - {metric: x, weight: 1, thresholds: [{below: 1, cost: 2}]}\n  - {label: x}\n"
              "  - {label: x, cost: 1, weight: 2}\n  - {metric: x, thresholds: [{below: 1}]}\n"
              "  - {metric: x, min: 5, max: 1}\n  - 7\n",
       {"policies[0].terms[0]: set exactly one of metric, query, label, annotation",
        "policies[0].terms[1].metric: needs metrics.pod",
        "policies[0].terms[2].metric: invalid metric name \"9bad\"",
        "policies[0].terms[3].query: needs metrics.prometheus.url",
        "policies[0].terms[4].weight: want a number, got \"ten\"",
        "policies[0].terms[5]: set weight or thresholds, not both",
        "policies[0].terms[6].cost: required for label and annotation terms",
        "policies[0].terms[7].weight: only for metric and query terms",
        "policies[0].terms[8].thresholds[0].cost: required",
        "policies[0].terms[9]: min must not exceed max", "policies[0].terms[10]: want an object"}},
      {"sources, band, warm-up, bounds",
       head + "policies:\n- name: a\n  metrics: {pod: {url: 'ftp://x/metrics', port: 80}, "
              "prometheus: {}}\n"
              "  terms: [{label: x, cost: 1}]\n  band: huge\n  warmup: {cost: 1.5, readyFor: -5s}\n"
              "  min: 10\n  max: 1\n  hysteresis: -1\n  onMetricError: Panic\n",
       {"policies[0].metrics.pod: set url, or port/path/scheme, not both",
        "policies[0].metrics.pod.url: must start with http:// or https://",
        "policies[0].metrics.prometheus.url: required", "policies[0].band: unknown band \"huge\"",
        "policies[0].warmup.cost: want an integer", "policies[0].warmup.readyFor: invalid duration",
        "policies[0]: min must not exceed max",
        "policies[0].hysteresis: must be in [0, 2147483647]",
        "policies[0].onMetricError: invalid value \"Panic\""}},
      {"a policy with nothing to compute",
       head + "policies: [{name: a}]",
       {"policies[0]: needs at least one term or a warmup"}},
      {"bad selector",
       head + "policies: [{name: a, selector: {matchExpressions: [{key: k, operator: Near}]}, "
              "terms: [{label: x, cost: 1}]}]",
       {"policies[0].selector: matchExpressions[0].operator: invalid value \"Near\""}},
      {"bad bands",
       head + "bands: {x: {min: 5, max: 1}, y: 3, z: {min: 1}}\npolicies: [{name: a, terms: "
              "[{label: x, cost: 1}]}]",
       {"bands.x: min must not exceed max", "bands.y: want {min, max}",
        "bands.z: needs min and max"}},
      {"not YAML", "{{{", {"policy.yaml"}},
      {"two documents", head + "policies: []\n---\na: 1\n", {"want exactly one YAML document"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto cfg = ParsePolicyConfig(c.yaml, "policy.yaml");
    ASSERT_FALSE(cfg.ok());
    EXPECT_EQ(cfg.status().code(), common::StatusCode::kInvalidArgument);
    for (const std::string& e : c.errors) {
      EXPECT_NE(cfg.status().message().find(e), std::string_view::npos)
          << "want \"" << e << "\" in: " << cfg.status().message();
    }
  }
}

TEST(ParseDurationTest, GoSubset) {
  EXPECT_EQ(ParseDuration("30s"), seconds(30));
  EXPECT_EQ(ParseDuration("1m30s"), seconds(90));
  EXPECT_EQ(ParseDuration("1.5h"), seconds(5400));
  EXPECT_EQ(ParseDuration("250ms"), std::chrono::milliseconds(250));
  EXPECT_EQ(ParseDuration("0"), common::Duration(0));
  EXPECT_FALSE(ParseDuration("").has_value());
  EXPECT_FALSE(ParseDuration("5").has_value());
  EXPECT_FALSE(ParseDuration("5d").has_value());
  EXPECT_FALSE(ParseDuration("s").has_value());
}

TEST(ExpandTemplateTest, SubstitutesPodFields) {
  PodRef pod{"prod", "web-1", "u-1", "10.0.0.7", "n1"};
  EXPECT_EQ(ExpandTemplate("http://{podIP}:9090/pods/{namespace}/{name}/{uid}@{node}", pod),
            "http://10.0.0.7:9090/pods/prod/web-1/u-1@n1");
  EXPECT_EQ(ExpandTemplate("sum(x{pod=\"{name}\"}) {unknown} {", pod),
            "sum(x{pod=\"web-1\"}) {unknown} {");
}

// Metric values by term index; missing indices are errors.
TermValueFn Values(std::map<size_t, common::StatusOr<double>> values) {
  return [values = std::move(values)](size_t k) -> common::StatusOr<double> {
    auto it = values.find(k);
    if (it == values.end()) return common::NotFoundError("no series");
    return it->second;
  };
}

TEST(EvaluateCostTest, SeedPatterns) {
  auto cfg = ParsePolicyConfig(kSeedPolicy, "policy.yaml");
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  const PolicySpec& conns = cfg->policies[0];
  const PolicySpec& weighted = cfg->policies[1];
  const PolicySpec& fixed = cfg->policies[2];
  api::Labels warm;
  warm.Set("cache-warmed", "true");
  api::Labels cold;
  cold.Set("cache-warmed", "false");
  const std::vector<std::pair<std::string, std::string>> locality = {
      {"example.com/data-locality", "yes"}};
  const PodView ready_long{true, kNow - std::chrono::hours(1), &cold, nullptr};
  struct Case {
    std::string name;
    const PolicySpec* policy;
    PodView pod;
    std::map<size_t, common::StatusOr<double>> values;
    int32_t want;
    bool warming = false;
    size_t errors = 0;
  };
  const std::vector<Case> cases = {
      {"10 per active connection", &conns, ready_long, {{0, 7.0}}, 70},
      {"connections capped at 1000", &conns, ready_long, {{0, 250.0}}, 1000},
      {"a new, not ready pod gets the warm-up cost",
       &conns,
       {false, std::nullopt, &cold, nullptr},
       {},
       -50,
       true},
      {"ready for less than readyFor: still warming up",
       &conns,
       {true, kNow - seconds(10), &cold, nullptr},
       {{0, 7.0}},
       -50,
       true},
      {"ready for longer: normal cost",
       &conns,
       {true, kNow - seconds(61), &cold, nullptr},
       {{0, 7.0}},
       70},
      {"weighted: 10 x 5 + 0.8 x 100 + 50 (< 100 ms) + 2 x 3",
       &weighted,
       ready_long,
       {{0, 10.0}, {1, 0.8}, {2, 80.0}, {3, 3.0}},
       186},
      {"weighted: latency 300 ms gives 20",
       &weighted,
       ready_long,
       {{0, 10.0}, {1, 0.8}, {2, 300.0}, {3, 0.0}},
       150},
      {"weighted: latency 600 ms gives nothing",
       &weighted,
       ready_long,
       {{0, 10.0}, {1, 0.5}, {2, 600.0}, {3, 0.0}},
       100},
      {"weighted: capped at 1000",
       &weighted,
       ready_long,
       {{0, 500.0}, {1, 1.0}, {2, 1.0}, {3, 0.0}},
       1000},
      {"weighted: a negative query value is clamped by the term's min",
       &weighted,
       ready_long,
       {{0, 0.0}, {1, 0.0}, {2, 1000.0}, {3, -100.0}},
       0},
      {"a failed term counts 0 and is reported",
       &weighted,
       ready_long,
       {{0, 10.0}, {1, common::UnavailableError("connection refused")}, {2, 80.0}, {3, 0.0}},
       100,
       false,
       1},
      {"NaN and Inf count 0 and are reported",
       &weighted,
       ready_long,
       {{0, std::nan("")}, {1, 0.5}, {2, std::numeric_limits<double>::infinity()}, {3, 0.0}},
       50,
       false,
       2},
      {"fixed: cache-warmed pods, clamped into band high (100..1000)",
       &fixed,
       {true, std::nullopt, &warm, nullptr},
       {},
       100},
      {"fixed: data-locality pods 50 -> band high floor 100",
       &fixed,
       {true, std::nullopt, &cold, &locality},
       {},
       100},
      {"fixed: nothing matches -> 0 -> band floor 100",
       &fixed,
       {true, std::nullopt, &cold, nullptr},
       {},
       100},
      {"fixed: both -> 150", &fixed, {true, std::nullopt, &warm, &locality}, {}, 150},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    CostResult r = EvaluateCost(*cfg, *c.policy, c.pod, kNow, Values(c.values));
    EXPECT_EQ(r.cost, c.want);
    EXPECT_EQ(r.warming_up, c.warming);
    EXPECT_EQ(r.errors.size(), c.errors);
  }
  // Warm-up end is reported so the controller can come back then.
  CostResult r =
      EvaluateCost(*cfg, conns, {true, kNow - seconds(10), &cold, nullptr}, kNow, Values({}));
  ASSERT_TRUE(r.warmup_ends.has_value());
  EXPECT_EQ(*r.warmup_ends, kNow + seconds(50));
}

TEST(EvaluateCostTest, BandsAndInt32Clamping) {
  auto cfg = ParsePolicyConfig(R"(
apiVersion: gpusched.io/v1alpha1
kind: DeletionCostPolicy
controller: {minCost: -1000, maxCost: 100000}
policies:
- {name: first, band: delete-first, terms: [{annotation: a, cost: 5}]}
- {name: medium, band: medium, terms: [{annotation: a, cost: 500}]}
- {name: huge, terms: [{annotation: a, cost: 1.0e12}]}
- {name: tiny, terms: [{annotation: a, cost: -1.0e12}]}
- {name: frac, terms: [{annotation: a, cost: -2.7}, {annotation: b, cost: 0.2}]}
)",
                               "p.yaml");
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  const std::vector<std::pair<std::string, std::string>> ann = {{"a", "1"}, {"b", "1"}};
  const PodView pod{true, std::nullopt, nullptr, &ann};
  const std::map<std::string, int32_t> want = {
      {"first", -1}, {"medium", 100}, {"huge", 100000}, {"tiny", -1000}, {"frac", -2}};
  for (const auto& [name, cost] : want) {
    SCOPED_TRACE(name);
    CostResult r = EvaluateCost(*cfg, *cfg->Find(name), pod, kNow, nullptr);
    EXPECT_EQ(r.cost, cost);
  }
  // Without controller bounds the final clamp is int32.
  auto wide = ParsePolicyConfig(R"(
apiVersion: gpusched.io/v1alpha1
kind: DeletionCostPolicy
policies: [{name: huge, terms: [{annotation: a, cost: 1.0e12}]}, {name: tiny, terms: [{annotation: a, cost: -1.0e12}]}]
)",
                                "p.yaml");
  ASSERT_TRUE(wide.ok());
  EXPECT_EQ(EvaluateCost(*wide, wide->policies[0], pod, kNow, nullptr).cost, INT32_MAX);
  EXPECT_EQ(EvaluateCost(*wide, wide->policies[1], pod, kNow, nullptr).cost, INT32_MIN);
}

}  // namespace
}  // namespace gpusched::addons::deletion_cost
