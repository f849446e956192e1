// SPDX-License-Identifier: Apache-2.0
#include "src/metrics/registry.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "src/metrics/scheduler_metrics.h"

namespace gpusched::metrics {
namespace {

TEST(RegistryTest, CounterSeriesAreResolvedOnceAndShared) {
  Registry r;
  CounterFamily& f = r.AddCounter("a_total", "help", {"x"});
  Counter* c1 = f.With({"1"});
  Counter* c2 = f.With({"1"});
  EXPECT_EQ(c1, c2);
  c1->Inc();
  c2->Add(2.5);
  c1->Add(-4);  // ignored: counters never go down
  EXPECT_DOUBLE_EQ(c1->Value(), 3.5);
  EXPECT_NE(f.With({"2"}), c1);
}

TEST(RegistryTest, HistogramBucketsAreUpperInclusive) {
  struct Case {
    std::string name;
    std::vector<double> observations;
    std::vector<uint64_t> want_cumulative;  // per bound {1, 2, 4}, then +Inf
  };
  std::vector<Case> cases = {
      {"a value equal to a bound lands in that bound's bucket", {1, 2, 4}, {1, 2, 3, 3}},
      {"values above the last bound land only in +Inf", {5, 100}, {0, 0, 0, 2}},
      {"small and negative values land in the first bucket", {-3, 0.5}, {2, 2, 2, 2}},
      {"no observations: all zero", {}, {0, 0, 0, 0}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    Registry r;
    Histogram* h = r.AddHistogram("h_seconds", "help", {}, {1, 2, 4}).With({});
    double sum = 0;
    for (double v : c.observations) {
      h->Observe(v);
      sum += v;
    }
    Histogram::Data d = h->Read();
    EXPECT_EQ(d.cumulative, c.want_cumulative);
    EXPECT_EQ(d.count, c.observations.size());
    EXPECT_DOUBLE_EQ(d.sum, sum);
  }
}

TEST(RegistryTest, ExponentialBucketsMatchKubeScheduler) {
  auto b = ExponentialBuckets(0.001, 2, 15);
  ASSERT_EQ(b.size(), 15u);
  EXPECT_DOUBLE_EQ(b.front(), 0.001);
  EXPECT_NEAR(b.back(), 16.384, 1e-9);
}

TEST(RegistryTest, CallbackFamiliesRunAtGatherAndAreSorted) {
  Registry r;
  int calls = 0;
  r.AddCallback("q", "help", Type::kGauge, {"queue"}, [&](std::vector<Sample>& out) {
    ++calls;
    out.push_back({{"backoff"}, 2});
    out.push_back({{"active"}, 1});
    out.push_back({{"too", "many"}, 9});  // wrong arity: dropped, not a crash
  });
  auto fams = r.Gather();
  ASSERT_EQ(fams.size(), 1u);
  ASSERT_EQ(fams[0].series.size(), 2u);
  EXPECT_EQ(fams[0].series[0].label_values, std::vector<std::string>{"active"});
  EXPECT_EQ(fams[0].series[1].value, 2);
  EXPECT_EQ(calls, 1);
}

TEST(RegistryTest, NameValidation) {
  EXPECT_TRUE(Registry::ValidMetricName("scheduler_pending_pods"));
  EXPECT_TRUE(Registry::ValidMetricName("a:b_c1"));
  EXPECT_FALSE(Registry::ValidMetricName("1abc"));
  EXPECT_FALSE(Registry::ValidMetricName("a-b"));
  EXPECT_FALSE(Registry::ValidMetricName(""));
  EXPECT_TRUE(Registry::ValidLabelName("extension_point"));
  EXPECT_FALSE(Registry::ValidLabelName("__name"));
  EXPECT_FALSE(Registry::ValidLabelName("a:b"));
}

TEST(RegistryTest, ConcurrentObservationsAreAllCounted) {
  Registry r;
  Histogram* h = r.AddHistogram("h", "help", {}, {0.5}).With({});
  Counter* c = r.AddCounter("c_total", "help").With({});
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) {
        h->Observe(i % 2 == 0 ? 0.1 : 1.0);
        c->Inc();
      }
    });
  }
  for (auto& t : threads) t.join();
  auto d = h->Read();
  EXPECT_EQ(d.count, 40000u);
  EXPECT_EQ(d.cumulative[0], 20000u);
  EXPECT_DOUBLE_EQ(c->Value(), 40000);
}

TEST(SchedulerMetricsTest, RecordsWithKubeSchedulerLabels) {
  Registry r;
  SchedulerMetrics m(r);
  ProfileMetrics* p = m.ForProfile("gpu-scheduler");
  EXPECT_EQ(p, m.ForProfile("gpu-scheduler"));
  p->ObserveAttempt(Result::kScheduled, 0.002);
  p->ObserveAttempt(Result::kUnschedulable, 0.003);
  p->ObserveExtensionPoint(Point::kPreFilter, StatusLabel::kSuccess, 0.0001);
  PluginMetrics* pm = p->ForPlugin("GpuFit", Point::kFilter);
  EXPECT_EQ(pm, p->ForPlugin("GpuFit", Point::kFilter));
  pm->CountEvaluations(50);
  pm->ObserveExecution(StatusLabel::kSuccess, 0.00002);
  m.ObservePodScheduled(1, 0.5);
  m.ObservePodScheduled(20, 9);
  std::map<std::string, const FamilySnapshot*> by;
  auto fams = r.Gather();
  for (const auto& f : fams) by[f.name] = &f;
  const auto* attempts = by.at("scheduler_schedule_attempts_total");
  ASSERT_EQ(attempts->series.size(), 3u);  // all three results pre-resolved
  double scheduled = 0;
  for (const auto& s : attempts->series) {
    if (s.label_values == std::vector<std::string>{"scheduled", "gpu-scheduler"})
      scheduled = s.value;
  }
  EXPECT_EQ(scheduled, 1);
  const auto* eval = by.at("scheduler_plugin_evaluation_total");
  ASSERT_EQ(eval->series.size(), 1u);
  EXPECT_EQ(eval->series[0].label_values,
            (std::vector<std::string>{"GpuFit", "Filter", "gpu-scheduler"}));
  EXPECT_EQ(eval->series[0].value, 50);
  const auto* sli = by.at("scheduler_pod_scheduling_sli_duration_seconds");
  ASSERT_EQ(sli->series.size(), 2u);
  EXPECT_EQ(sli->series[0].label_values, std::vector<std::string>{"1"});
  EXPECT_EQ(sli->series[1].label_values, std::vector<std::string>{"15+"});
  EXPECT_EQ(by.at("scheduler_preemption_attempts_total")->series.size(), 1u);
}

}  // namespace
}  // namespace gpusched::metrics
