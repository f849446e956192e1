// SPDX-License-Identifier: Apache-2.0
// Every worked example of docs/hpa-algorithm.md §7 (E1–E11) and the pitfalls of §8.
#include "src/addons/hpa/hpa.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "src/addons/hpa/simulate.h"
#include "src/api/decode.h"

namespace gpusched::addons::hpa {
namespace {

using std::chrono::minutes;
using std::chrono::seconds;

const common::TimePoint kT0 = common::TimePoint(seconds(1'700'000'000));
const Settings kSettings{};
const Tolerances kTol{0.1, 0.1};

// A Running, Ready pod started long ago with a fresh sample.
PodSample Ready(std::string name, int64_t usage, int64_t request = 1000) {
  PodSample p;
  p.name = std::move(name);
  p.ready = true;
  p.start_time = kT0 - minutes(30);
  p.ready_transition = kT0 - minutes(29);
  p.value_milli = usage;
  p.sample_time = kT0;
  p.request_milli = request;
  return p;
}

PodSample Pending(std::string name, int64_t request = 1000) {
  PodSample p;
  p.name = std::move(name);
  p.phase = "Pending";
  p.request_milli = request;
  return p;
}

HpaSpec Spec(std::optional<Behavior> behavior, int32_t min = 1, int32_t max = 100) {
  HpaSpec h;
  h.name = "web";
  h.min_replicas = min;
  h.max_replicas = max;
  h.behavior = std::move(behavior);
  return h;
}

Behavior Defaults() { return Behavior{DefaultScaleUp(), DefaultScaleDown()}; }

TEST(ReplicaCalculatorTest, UtilizationExamples) {
  struct Case {
    std::string name;
    int32_t current;
    std::vector<PodSample> pods;
    int32_t target;
    int32_t want;
    int64_t want_usage;
  };
  std::vector<PodSample> e3 = {Ready("a", 200), Ready("b", 200), Ready("c", 200), Ready("d", 200),
                               Ready("m", 0)};
  e3.back().value_milli.reset();
  std::vector<PodSample> e3_without = {Ready("a", 200), Ready("b", 200), Ready("c", 200),
                                       Ready("d", 200)};
  const std::vector<Case> cases = {
      {"E1: utilization 100 % of a 50 % target doubles 4 pods",
       4,
       {Ready("a", 400, 500), Ready("b", 450, 500), Ready("c", 500, 500), Ready("d", 650, 500)},
       50,
       8,
       100},
      {"E2: ratio 1.08 is within the tolerance",
       4,
       {Ready("a", 540), Ready("b", 540), Ready("c", 540), Ready("d", 540)},
       50,
       4,
       54},
      {"E2: 56.95 % truncates to 56 before the ratio: ceil(4.48) = 5",
       4,
       {Ready("a", 569), Ready("b", 569), Ready("c", 570), Ready("d", 570)},
       50,
       5,
       56},
      {"E3: a missing pod counts as 100 % on a scale-down: 4, not 2", 5, e3, 50, 4, 20},
      {"E3 contrast: without the missing pod the answer is 2", 4, e3_without, 50, 2, 20},
      {"E4: unready pods count 0 on a scale-up; the direction flips, so stay",
       4,
       {Ready("a", 800), Ready("b", 800), Pending("c"), Pending("d")},
       60,
       4,
       80},
      {"E4 contrast: 3 ready at 100 % and one Pending, target 50 -> 6",
       4,
       {Ready("a", 1000), Ready("b", 1000), Ready("c", 1000), Pending("d")},
       50,
       6,
       100},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto r = ResourceUtilizationReplicas(c.current, c.pods, c.target, /*cpu=*/true, kTol, kT0,
                                         kSettings);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->replicas, c.want);
    EXPECT_EQ(r->usage, c.want_usage);
  }
  // E2 exact sums: 2160m and 2278m over 4 x 1000m.
  EXPECT_EQ(
      ResourceUtilizationReplicas(4, {{Ready("a", 2160, 4000)}}, 50, true, kTol, kT0, kSettings)
          ->usage,
      54);
  EXPECT_EQ(
      ResourceUtilizationReplicas(4, {{Ready("a", 2278, 4000)}}, 50, true, kTol, kT0, kSettings)
          ->usage,
      56);
}

TEST(ReplicaCalculatorTest, UtilizationErrors) {
  std::vector<PodSample> none;
  EXPECT_FALSE(ResourceUtilizationReplicas(1, none, 50, true, kTol, kT0, kSettings).ok());
  std::vector<PodSample> all_pending = {Pending("a")};
  EXPECT_FALSE(ResourceUtilizationReplicas(1, all_pending, 50, true, kTol, kT0, kSettings).ok());
  std::vector<PodSample> no_request = {Ready("a", 100, 0)};
  EXPECT_FALSE(ResourceUtilizationReplicas(1, no_request, 50, true, kTol, kT0, kSettings).ok());
}

TEST(ReplicaCalculatorTest, CpuClassificationTable) {
  const common::TimePoint now = kT0;
  struct Case {
    std::string name;
    common::Duration start_ago;
    std::optional<bool> ready;
    common::Duration transition_ago;
    common::Duration sample_ago;
    PodClass want;
  };
  const std::vector<Case> cases = {
      {"started 2 min ago, Ready=False: inside the init period", minutes(2), false, minutes(2),
       seconds(0), PodClass::kUnready},
      {"started 2 min ago, ready 60 s ago, sample 50 s ago with a 30 s window: predates readiness",
       minutes(2), true, seconds(60), seconds(50), PodClass::kUnready},
      {"same, sample 20 s ago", minutes(2), true, seconds(60), seconds(20), PodClass::kReady},
      {"started 10 min ago, Ready=False since start+10 s: never became ready", minutes(10), false,
       minutes(10) - seconds(10), seconds(0), PodClass::kUnready},
      {"started 10 min ago, Ready=False since start+5 min: was ready, its CPU counts", minutes(10),
       false, minutes(5), seconds(0), PodClass::kReady},
      {"no Ready condition", minutes(10), std::nullopt, seconds(0), seconds(0), PodClass::kUnready},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    PodSample p;
    p.name = "p";
    p.start_time = now - c.start_ago;
    p.ready = c.ready;
    p.ready_transition = now - c.transition_ago;
    p.value_milli = 100;
    p.sample_time = now - c.sample_ago;
    p.sample_window = seconds(30);
    EXPECT_EQ(ClassifyPod(p, true, now, kSettings), c.want);
    // Readiness is ignored for non-CPU metrics.
    EXPECT_EQ(ClassifyPod(p, false, now, kSettings), PodClass::kReady);
  }
  PodSample gone = Ready("g", 1);
  gone.deleting = true;
  EXPECT_EQ(ClassifyPod(gone, true, now, kSettings), PodClass::kIgnored);
  PodSample failed = Ready("f", 1);
  failed.phase = "Failed";
  EXPECT_EQ(ClassifyPod(failed, false, now, kSettings), PodClass::kIgnored);
  PodSample missing = Ready("m", 1);
  missing.value_milli.reset();
  EXPECT_EQ(ClassifyPod(missing, true, now, kSettings), PodClass::kMissing);
  EXPECT_EQ(ClassifyPod(Pending("p"), false, now, kSettings), PodClass::kUnready);
}

TEST(ReplicaCalculatorTest, AverageValueAndObjectExamples) {
  // E11: Pods metric 150, 250, 200 req/s, target averageValue 100 -> 6; readiness is ignored.
  std::vector<PodSample> pods = {Ready("a", 150000), Ready("b", 250000), Ready("c", 200000)};
  pods[0].ready = false;
  auto r = PlainMetricReplicas(3, pods, 100000, /*cpu=*/false, kTol, kT0, kSettings);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->replicas, 6);
  EXPECT_EQ(r->usage, 200000);
  // Pending pods are still UNREADY: a scale-up with them counts them at 0.
  pods.push_back(Pending("d"));
  r = PlainMetricReplicas(4, pods, 100000, false, kTol, kT0, kSettings);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->replicas, 6);  // newRatio 150/100 over 4 -> 6
  // On a scale-down, missing pods are assumed exactly at the target.
  std::vector<PodSample> down = {Ready("a", 50000), Ready("b", 50000), Ready("m", 0)};
  down[2].value_milli.reset();
  r = PlainMetricReplicas(3, down, 100000, false, kTol, kT0, kSettings);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->replicas, 2);  // (50 + 50 + 100) / 3 = 66.666 -> ceil(0.66666 x 3) = 2
  // Object Value: target 100, usage 250, 4 Running+Ready pods, current 5 -> 10.
  EXPECT_EQ(ValueReplicas(5, 250000, 100000, 4, kTol)->replicas, 10);
  // current 0: ceil(ratio).
  EXPECT_EQ(ValueReplicas(0, 250000, 100000, 0, kTol)->replicas, 3);
  // Object AverageValue: 250 / (50 x 5) = 1.0 -> within -> 5.
  EXPECT_EQ(AverageValueReplicas(5, 250000, 50000, kTol)->replicas, 5);
  EXPECT_EQ(AverageValueReplicas(5, 500000, 50000, kTol)->replicas, 10);
}

TEST(ReplicaCalculatorTest, ToleranceIsInclusiveOnBothEnds) {
  struct Case {
    std::string name;
    int64_t avg;
    int32_t want;
  };
  const std::vector<Case> cases = {
      {"ratio exactly 1.1 stays", 110000, 4},
      {"ratio exactly 0.9 stays", 90000, 4},
      {"ratio 1.11 scales up", 111000, 5},
      {"ratio 0.89 scales down", 89000, 4},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::vector<PodSample> pods = {Ready("a", c.avg), Ready("b", c.avg), Ready("c", c.avg),
                                   Ready("d", c.avg)};
    auto r = PlainMetricReplicas(4, pods, 100000, false, kTol, kT0, kSettings);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->replicas, c.want);
  }
  // Per-direction tolerances (behavior.scaleUp/scaleDown.tolerance).
  Tolerances wide{0.05, 0.5};
  EXPECT_TRUE(wide.IsWithin(1.5));
  EXPECT_FALSE(wide.IsWithin(0.94));
}

TEST(CombineProposalsTest, E9SeveralMetrics) {
  std::vector<common::StatusOr<int32_t>> both = {6, 9};
  EXPECT_EQ(*CombineProposals(5, both), 9);
  std::vector<common::StatusOr<int32_t>> partial_down = {3,
                                                         common::UnavailableError("external down")};
  EXPECT_FALSE(CombineProposals(5, partial_down).ok());
  std::vector<common::StatusOr<int32_t>> partial_up = {7,
                                                       common::UnavailableError("external down")};
  EXPECT_EQ(*CombineProposals(5, partial_up), 7);
  std::vector<common::StatusOr<int32_t>> none = {common::UnavailableError("a"),
                                                 common::UnavailableError("b")};
  EXPECT_FALSE(CombineProposals(5, none).ok());
}

// Drives an Autoscaler every 15 s from `from` to `to` seconds, applying each decision, with the
// proposal given by `proposal(t)`. Returns replicas after each tick, by t.
std::map<int, int32_t> RunEvery15s(Autoscaler& a, int32_t start, int from, int to,
                                   const std::function<int32_t(int)>& proposal) {
  std::map<int, int32_t> out;
  int32_t current = start;
  for (int t = from; t <= to; t += 15) {
    Decision d = a.Reconcile(kT0 + seconds(t), current, proposal(t));
    current = d.desired;
    out[t] = current;
  }
  return out;
}

TEST(AutoscalerTest, E5LegacyCaps) {
  Autoscaler a(Spec(std::nullopt));
  Decision d = a.Reconcile(kT0, 3, 20);
  EXPECT_EQ(d.desired, 6);
  EXPECT_EQ(d.reason, "ScaleUpLimit");
  Autoscaler b(Spec(std::nullopt));
  EXPECT_EQ(b.Reconcile(kT0, 1, 20).desired, 4);
  // The cap is the max when that is lower.
  Autoscaler c(Spec(std::nullopt, 1, 5));
  d = c.Reconcile(kT0, 3, 20);
  EXPECT_EQ(d.desired, 5);
  EXPECT_EQ(d.reason, "TooManyReplicas");
  // Below min.
  Autoscaler e(Spec(std::nullopt, 3, 10));
  d = e.Reconcile(kT0, 5, 1);
  EXPECT_EQ(d.desired, 5);  // the t0 recommendation of 5 is inside the window
}

TEST(AutoscalerTest, E5LegacyScaleDownWindowCountsTheCutoff) {
  Autoscaler a(Spec(std::nullopt));
  auto r = RunEvery15s(a, 10, 0, 330, [](int t) { return t == 0 ? 10 : 2; });
  EXPECT_EQ(r[15], 10);
  EXPECT_EQ(r[285], 10);
  EXPECT_EQ(r[300], 10);  // the entry at exactly the cutoff still counts
  EXPECT_EQ(r[315], 2);   // then one step, no per-period limit
}

TEST(AutoscalerTest, E6DefaultBehaviorScaleUp) {
  Autoscaler a(Spec(Defaults()));
  Decision d = a.Reconcile(kT0, 10, 30);
  EXPECT_EQ(d.desired, 20);  // Pods 14, Percent 20, Max
  EXPECT_EQ(d.reason, "ScaleUpLimit");
  d = a.Reconcile(kT0 + seconds(15), 20, 30);
  EXPECT_EQ(d.desired, 30);  // the event at t0 is not newer than t0: start 20, limit 40
}

Behavior SeedBehavior(SelectPolicy select) {
  Behavior b = Defaults();
  b.scale_down.stabilization_window_seconds = 300;
  b.scale_down.select_policy = select;
  b.scale_down.policies = {{PolicyType::kPercent, 50, 60}, {PolicyType::kPods, 2, 60}};
  return b;
}

TEST(AutoscalerTest, E7SeedBehaviorSelectMin) {
  Autoscaler a(Spec(SeedBehavior(SelectPolicy::kMin)));
  auto r = RunEvery15s(a, 10, 0, 540, [](int t) { return t == 0 ? 10 : 2; });
  for (int t = 15; t <= 285; t += 15) EXPECT_EQ(r[t], 10) << "t=" << t;
  for (int t = 300; t <= 345; t += 15) EXPECT_EQ(r[t], 8) << "t=" << t;
  for (int t = 360; t <= 405; t += 15) EXPECT_EQ(r[t], 6) << "t=" << t;
  for (int t = 420; t <= 465; t += 15) EXPECT_EQ(r[t], 4) << "t=" << t;
  for (int t = 480; t <= 540; t += 15) EXPECT_EQ(r[t], 2) << "t=" << t;
}

TEST(AutoscalerTest, E7SeedBehaviorSelectMax) {
  Autoscaler a(Spec(SeedBehavior(SelectPolicy::kMax)));
  auto r = RunEvery15s(a, 10, 0, 420, [](int t) { return t == 0 ? 10 : 2; });
  EXPECT_EQ(r[285], 10);
  EXPECT_EQ(r[300], 5);
  EXPECT_EQ(r[345], 5);
  EXPECT_EQ(r[360], 2);
}

TEST(AutoscalerTest, E7DefaultedScaleDownAndUnaffectedScaleUp) {
  Autoscaler a(Spec(Defaults()));  // scaleDown defaulted: flag window 300, Percent 100 / 15 s
  auto r = RunEvery15s(a, 10, 0, 300, [](int t) { return t == 0 ? 10 : 2; });
  EXPECT_EQ(r[285], 10);
  EXPECT_EQ(r[300], 2);
  // A later spike with the seed policy: scale-up has no window.
  Autoscaler b(Spec(SeedBehavior(SelectPolicy::kMin)));
  Decision d = b.Reconcile(kT0, 4, 4);
  d = b.Reconcile(kT0 + seconds(15), 4, 12);
  EXPECT_EQ(d.desired, 8);  // max(4 + 4, 4 x 2)
}

TEST(AutoscalerTest, E8UpStabilizationWindow) {
  Behavior b = Defaults();
  b.scale_up.stabilization_window_seconds = 60;
  Autoscaler a(Spec(b));
  EXPECT_EQ(a.Reconcile(kT0, 10, 10).desired, 10);
  EXPECT_EQ(a.Reconcile(kT0 + seconds(30), 10, 12).desired, 10);
  EXPECT_EQ(a.Reconcile(kT0 + seconds(45), 10, 20).desired, 10);
  // Within the last 60 s: 12 and 20 -> upRec = min(25, 12, 20) = 12; the rate limit allows 20.
  Decision d = a.Reconcile(kT0 + seconds(75), 10, 25);
  EXPECT_EQ(d.stabilized, 12);
  EXPECT_EQ(d.desired, 12);
}

TEST(AutoscalerTest, E10PercentRounding) {
  struct Case {
    std::string name;
    bool up;
    ScalingRules rules;
    int32_t current;
    int32_t proposal;
    int32_t want;
  };
  const auto down = [](int32_t pct) {
    ScalingRules r = DefaultScaleDown();
    r.stabilization_window_seconds = 0;
    r.policies = {{PolicyType::kPercent, pct, 60}};
    return r;
  };
  ScalingRules up10 = DefaultScaleUp();
  up10.policies = {{PolicyType::kPercent, 10, 60}};
  ScalingRules up_min = DefaultScaleUp();
  up_min.select_policy = SelectPolicy::kMin;
  const std::vector<Case> cases = {
      {"Percent 10 down from 5: trunc(4.5) = 4", false, down(10), 5, 1, 4},
      {"Percent 10 down from 100: 90", false, down(10), 100, 1, 90},
      {"Percent 50 down from 3: trunc(1.5) = 1", false, down(50), 3, 1, 1},
      {"Percent 10 up from 1: ceil(1.1) = 2", true, up10, 1, 10, 2},
      {"selectPolicy Min over [Pods 4, Percent 100] at 10: 14", true, up_min, 10, 50, 14},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Behavior b = Defaults();
    if (c.up) {
      b.scale_up = c.rules;
    } else {
      b.scale_down = c.rules;
    }
    Autoscaler a(Spec(b));
    EXPECT_EQ(a.Reconcile(kT0, c.current, c.proposal).desired, c.want);
  }
}

TEST(AutoscalerTest, SelectPolicyDisabledAndLimitReasons) {
  Behavior b = Defaults();
  b.scale_down.select_policy = SelectPolicy::kDisabled;
  b.scale_down.stabilization_window_seconds = 0;
  Autoscaler a(Spec(b));
  Decision d = a.Reconcile(kT0, 10, 2);
  EXPECT_EQ(d.desired, 10);
  EXPECT_EQ(d.reason, "ScaleDownLimit");
  Behavior c = Defaults();
  c.scale_down.stabilization_window_seconds = 0;
  Autoscaler e(Spec(c, 3, 100));
  d = e.Reconcile(kT0, 10, 1);
  EXPECT_EQ(d.desired, 3);
  EXPECT_EQ(d.reason, "TooFewReplicas");
}

TEST(AutoscalerTest, PitfallShortCutsAndFirstWindow) {
  // current > max: straight to max, no metrics needed.
  Autoscaler a(Spec(Defaults(), 1, 10));
  Decision d = a.Reconcile(kT0, 12, common::UnavailableError("no metrics"));
  EXPECT_EQ(d.desired, 10);
  // current < min: straight to min.
  Autoscaler b(Spec(std::nullopt, 4, 10));
  d = b.Reconcile(kT0, 2, common::UnavailableError("no metrics"));
  EXPECT_EQ(d.desired, 4);
  // current 0 with min 1: scaling disabled.
  d = b.Reconcile(kT0, 0, 5);
  EXPECT_EQ(d.desired, 0);
  EXPECT_EQ(d.reason, "ScalingDisabled");
  // Metrics failing inside the range: no scaling.
  d = b.Reconcile(kT0, 5, common::UnavailableError("no metrics"));
  EXPECT_EQ(d.desired, 5);
  EXPECT_EQ(d.reason, "MetricsFailed");
  // A fresh HPA holds its current count as a recommendation: no scale-down in the first window.
  Autoscaler c(Spec(Defaults()));
  auto r = RunEvery15s(c, 10, 0, 300, [](int) { return 2; });
  EXPECT_EQ(r[285], 10);
  EXPECT_EQ(r[300], 2);
}

TEST(AutoscalerTest, PitfallBehaviorStoresTheRawProposal) {
  // Up window 30 s. At t=15 the raw 20 is stabilized to 10, but 20 is what is stored: at t=30
  // the window (0, 30] holds only that raw 20, so the HPA goes to 20. Had the stabilized 10 been
  // stored it would stay at 10.
  Behavior b = Defaults();
  b.scale_up.stabilization_window_seconds = 30;
  Autoscaler a(Spec(b));
  EXPECT_EQ(a.Reconcile(kT0, 10, 10).desired, 10);
  Decision d = a.Reconcile(kT0 + seconds(15), 10, 20);
  EXPECT_EQ(d.stabilized, 10);
  EXPECT_EQ(d.desired, 10);
  EXPECT_EQ(a.Reconcile(kT0 + seconds(30), 10, 20).desired, 20);
}

TEST(DecodeHpaTest, DefaultsAndValidation) {
  const auto decode = [](std::string_view yaml) {
    auto docs = api::ParseYamlDocuments(yaml, "test");
    EXPECT_TRUE(docs.ok());
    return DecodeHpa((*docs)[0]);
  };
  auto h = decode(R"(
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web, namespace: prod}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  maxReplicas: 10
  metrics:
  - type: Pods
    pods: {metric: {name: rps}, target: {type: AverageValue, averageValue: 100m}}
  behavior:
    scaleDown:
      policies: [{type: Percent, value: 200, periodSeconds: 60}]
)");
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  EXPECT_EQ(h->min_replicas, 1);
  ASSERT_TRUE(h->behavior.has_value());
  EXPECT_EQ(h->behavior->scale_up.policies.size(), 2u);  // scaleUp defaulted
  EXPECT_EQ(h->behavior->scale_up.stabilization_window_seconds, 0);
  EXPECT_FALSE(h->behavior->scale_down.stabilization_window_seconds.has_value());  // the flag
  EXPECT_EQ(h->behavior->scale_down.select_policy, SelectPolicy::kMax);
  EXPECT_EQ(h->behavior->scale_down.policies[0].value, 200);  // Percent > 100 is legal
  EXPECT_EQ(h->metrics[0].average_value_milli, 100);

  auto legacy = decode(R"(
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web}
spec: {scaleTargetRef: {kind: Deployment, name: web}, maxReplicas: 3}
)");
  ASSERT_TRUE(legacy.ok());
  EXPECT_FALSE(legacy->behavior.has_value());
  ASSERT_EQ(legacy->metrics.size(), 1u);  // CPU 80 %
  EXPECT_EQ(legacy->metrics[0].name, "cpu");
  EXPECT_EQ(legacy->metrics[0].average_utilization, 80);

  struct Case {
    std::string name;
    std::string spec;
    std::vector<std::string> errors;
  };
  const std::vector<Case> cases = {
      {"window above 3600, unknown selectPolicy, empty policies",
       "behavior: {scaleUp: {stabilizationWindowSeconds: 4000, selectPolicy: Fast}, scaleDown: "
       "{policies: []}}",
       {"spec.behavior.scaleUp.stabilizationWindowSeconds: must be in [0, 3600]",
        "spec.behavior.scaleUp.selectPolicy: unsupported value",
        "spec.behavior.scaleDown.policies: must specify at least one Policy"}},
      {"policy value 0, period 0 and 1801, unknown type",
       "behavior: {scaleDown: {policies: [{type: Pods, value: 0, periodSeconds: 0}, "
       "{type: Nodes, value: 1, periodSeconds: 1801}]}}",
       {"spec.behavior.scaleDown.policies[0].value: must be greater than zero",
        "spec.behavior.scaleDown.policies[0].periodSeconds: must be in [1, 1800]",
        "spec.behavior.scaleDown.policies[1].type: unsupported value",
        "spec.behavior.scaleDown.policies[1].periodSeconds: must be in [1, 1800]"}},
      {"min 0 and max below min",
       "minReplicas: 0\n  maxReplicas: 0",
       {"spec.minReplicas: must be greater than or equal to 1",
        "spec.maxReplicas: must be greater than 0"}},
      {"max below min",
       "minReplicas: 5",
       {"spec.maxReplicas: must be greater than or equal to minReplicas"}},
      {"bad metric target",
       "metrics: [{type: Pods, pods: {metric: {name: x}, target: {type: Utilization, "
       "averageUtilization: 5}}}]",
       {"spec.metrics[0].pods.target.type: Utilization is only for Resource"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::string spec = c.spec;
    const bool has_max = spec.find("maxReplicas") != std::string::npos;
    auto r = decode(
        "apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata: {name: w}\nspec:\n"
        "  scaleTargetRef: {kind: Deployment, name: w}\n" +
        std::string(has_max ? "" : "  maxReplicas: 3\n") + "  " + spec + "\n");
    ASSERT_FALSE(r.ok());
    for (const std::string& e : c.errors) {
      EXPECT_NE(r.status().message().find(e), std::string_view::npos) << r.status().message();
    }
  }
}

TEST(SimulateTest, CsvDrivesTheSeedBehaviorAndPicksVictims) {
  auto csv = ParseMetricCsv("# rps per pod\ntime,rps\n0,100\n15,20\n", "test.csv");
  ASSERT_TRUE(csv.ok()) << csv.status().ToString();
  HpaSpec h = Spec(SeedBehavior(SelectPolicy::kMin), 1, 20);
  MetricSpec m;
  m.type = MetricType::kPods;
  m.name = "rps";
  m.target = TargetType::kAverageValue;
  m.average_value_milli = 100000;
  h.metrics = {m};
  SimOptions o;
  o.start = kT0;
  o.end = 480;
  o.initial_replicas = 10;
  o.load = SimOptions::Load::kPerPod;
  std::vector<std::string> removed;
  SimHooks hooks;
  hooks.choose_victims = [&](common::TimePoint, std::span<const SimPod> pods, int32_t count) {
    std::vector<std::string> v;
    for (int32_t k = 0; k < count; ++k) v.push_back(pods[static_cast<size_t>(k)].name);
    removed.insert(removed.end(), v.begin(), v.end());
    return v;
  };
  auto steps = Simulate(h, *csv, {}, o, kSettings, hooks);
  ASSERT_TRUE(steps.ok()) << steps.status().ToString();
  std::map<int, int32_t> replicas;
  for (const SimStep& s : *steps) replicas[static_cast<int>(s.t)] = s.decision.desired;
  EXPECT_EQ(replicas[285], 10);
  EXPECT_EQ(replicas[300], 8);
  EXPECT_EQ(replicas[360], 6);
  EXPECT_EQ(replicas[420], 4);
  EXPECT_EQ(replicas[480], 2);
  EXPECT_EQ(removed.size(), 8u);
  EXPECT_EQ(removed[0], "pod-0");

  EXPECT_FALSE(ParseMetricCsv("t,rps\n0,1\n", "x").ok());
  EXPECT_FALSE(ParseMetricCsv("time,rps\n0,1\n0,2\n", "x").ok());
  EXPECT_FALSE(ParseMetricCsv("time,rps\n0,abc\n", "x").ok());
  auto missing_col = Simulate(h, *ParseMetricCsv("time,cpu\n0,1\n", "x"), {}, o, kSettings);
  EXPECT_FALSE(missing_col.ok());
}

}  // namespace
}  // namespace gpusched::addons::hpa
