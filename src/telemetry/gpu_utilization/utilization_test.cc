// SPDX-License-Identifier: Apache-2.0
#include "src/telemetry/gpu_utilization/utilization.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace gpusched::telemetry::gpu_utilization {
namespace {

using ::testing::HasSubstr;

// Answers the utilization and memory queries from canned bodies; counts calls.
class FakePrometheus final : public prometheus::HttpGetter {
 public:
  common::StatusOr<prometheus::HttpResult> Get(const std::string& url, common::Duration) override {
    ++calls;
    if (down) return common::UnavailableError("connection refused");
    const bool memory = url.find("FB_FREE") != std::string::npos;
    return prometheus::HttpResult{200, memory ? memory_body : util_body, "application/json"};
  }
  static std::string Vector(const std::vector<std::pair<std::string, std::string>>& series) {
    std::string out = R"({"status":"success","data":{"resultType":"vector","result":[)";
    for (size_t i = 0; i < series.size(); ++i) {
      if (i > 0) out += ',';
      out += R"({"metric":{)" + series[i].first + R"(},"value":[1700000000,")" + series[i].second +
             R"("]})";
    }
    return out + "]}}";
  }
  std::string util_body = Vector({});
  std::string memory_body = Vector({});
  bool down = false;
  int calls = 0;
};

prometheus::Series S(std::vector<std::pair<std::string, std::string>> labels, double v) {
  std::sort(labels.begin(), labels.end());
  return prometheus::Series{std::move(labels), v};
}

TEST(CombineReadingsTest, NamesNodesAndTakesTheBusierOfComputeAndMemory) {
  struct Case {
    std::string name;
    std::vector<prometheus::Series> util, memory;
    std::vector<std::pair<std::string, double>> want;
  };
  const std::vector<Case> cases = {
      {"the exporter's Hostname names the node",
       {S({{"Hostname", "node-a"}}, 40)},
       {},
       {{"node-a", 0.4}}},
      {"kubernetes_node wins over Hostname",
       {S({{"Hostname", "pod-xyz"}, {"kubernetes_node", "node-a"}}, 40)},
       {},
       {{"node-a", 0.4}}},
      {"a node label works too", {S({{"node", "node-b"}}, 100)}, {}, {{"node-b", 1.0}}},
      {"memory pressure above compute wins",
       {S({{"Hostname", "a"}}, 10)},
       {S({{"Hostname", "a"}}, 0.75)},
       {{"a", 0.75}}},
      {"memory alone is used when compute is missing",
       {},
       {S({{"Hostname", "a"}}, 0.5)},
       {{"a", 0.5}}},
      {"series without a node label, NaN and negatives are skipped",
       {S({{"gpu", "0"}}, 50), S({{"Hostname", "n"}}, std::nan("")), S({{"Hostname", "m"}}, -1)},
       {},
       {}},
      {"readings above 100 percent are clamped", {S({{"Hostname", "a"}}, 130)}, {}, {{"a", 1.0}}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(CombineReadings(c.util, c.memory), c.want);
  }
}

TEST(UtilizationRefresherTest, PublishesChangesAndExpiresStaleReadings) {
  FakePrometheus prom;
  common::FakeClock clock;
  std::vector<std::pair<std::string, double>> got;
  Options options;
  options.prometheus_url = "http://prom:9090";
  options.staleness = std::chrono::seconds(30);
  UtilizationRefresher r(options, prom, clock,
                         [&](std::string_view node, double u) { got.emplace_back(node, u); });

  prom.util_body =
      FakePrometheus::Vector({{R"("Hostname":"node-a")", "20"}, {R"("Hostname":"node-b")", "80"}});
  ASSERT_TRUE(r.RunOnce().ok());
  EXPECT_EQ(got, (std::vector<std::pair<std::string, double>>{{"node-a", 0.2}, {"node-b", 0.8}}));
  EXPECT_EQ(prom.calls, 2);  // utilization and memory

  // Unchanged readings are not republished; a changed one is.
  got.clear();
  clock.Advance(std::chrono::seconds(10));
  prom.util_body =
      FakePrometheus::Vector({{R"("Hostname":"node-a")", "90"}, {R"("Hostname":"node-b")", "80"}});
  ASSERT_TRUE(r.RunOnce().ok());
  EXPECT_EQ(got, (std::vector<std::pair<std::string, double>>{{"node-a", 0.9}}));

  // Prometheus goes away: nothing changes until the readings are older than the staleness.
  got.clear();
  prom.down = true;
  clock.Advance(std::chrono::seconds(20));
  common::Status down = r.RunOnce();
  EXPECT_FALSE(down.ok());
  EXPECT_THAT(std::string(down.message()), HasSubstr("connection refused"));
  EXPECT_TRUE(got.empty());
  clock.Advance(std::chrono::seconds(15));
  EXPECT_FALSE(r.RunOnce().ok());
  EXPECT_EQ(got, (std::vector<std::pair<std::string, double>>{{"node-a", -1}, {"node-b", -1}}));
  EXPECT_EQ(r.FreshNodesForTest(), 0);

  // Unknown is sent once; a fresh reading brings the node back.
  got.clear();
  EXPECT_FALSE(r.RunOnce().ok());
  EXPECT_TRUE(got.empty());
  prom.down = false;
  prom.util_body = FakePrometheus::Vector({{R"("Hostname":"node-b")", "80"}});
  ASSERT_TRUE(r.RunOnce().ok());
  EXPECT_EQ(got, (std::vector<std::pair<std::string, double>>{{"node-b", 0.8}}));
  EXPECT_EQ(r.FreshNodesForTest(), 1);
}

TEST(UtilizationRefresherTest, AMalformedAnswerIsAnErrorNotACrash) {
  FakePrometheus prom;
  common::FakeClock clock;
  int calls = 0;
  UtilizationRefresher r(Options{"http://prom:9090"}, prom, clock,
                         [&](std::string_view, double) { ++calls; });
  prom.util_body = "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[{}]}}";
  common::Status s = r.RunOnce();
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()), HasSubstr("data.result[0].value: required"));
  EXPECT_EQ(calls, 0);
}

}  // namespace
}  // namespace gpusched::telemetry::gpu_utilization
