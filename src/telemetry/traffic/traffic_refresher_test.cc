// SPDX-License-Identifier: Apache-2.0
#include "src/telemetry/traffic/traffic_refresher.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace gpusched::telemetry::traffic {
namespace {

using prometheus::Series;
using ::testing::HasSubstr;

// Answers every query with `body` (or a transport error while `down`); records the URLs.
class FakePrometheus final : public prometheus::HttpGetter {
 public:
  common::StatusOr<prometheus::HttpResult> Get(const std::string& url, common::Duration) override {
    urls.push_back(url);
    if (down) return common::UnavailableError("connection refused");
    return prometheus::HttpResult{status, body, "application/json"};
  }
  // An instant vector; each series is (labels as JSON members, value as Prometheus writes it).
  static std::string Vector(const std::vector<std::pair<std::string, std::string>>& series) {
    std::string out = R"({"status":"success","data":{"resultType":"vector","result":[)";
    for (size_t i = 0; i < series.size(); ++i) {
      if (i > 0) out += ',';
      out += R"({"metric":{)" + series[i].first + R"(},"value":[1700000000,")" + series[i].second +
             R"("]})";
    }
    return out + "]}}";
  }
  std::string body = Vector({});
  int status = 200;
  bool down = false;
  std::vector<std::string> urls;
};

// Istio labels of the pair src -> dst in namespace ns.
std::string Istio(const std::string& ns, const std::string& src, const std::string& dst) {
  return R"("source_workload":")" + src + R"(","source_workload_namespace":")" + ns +
         R"(","destination_workload":")" + dst + R"(","destination_workload_namespace":")" + ns +
         R"(")";
}

Series S(std::vector<std::pair<std::string, std::string>> labels, double v) {
  std::sort(labels.begin(), labels.end());
  return Series{std::move(labels), v};
}

std::vector<std::pair<std::string, double>> PeersOf(const cache::NetworkStore& store,
                                                    std::string_view ns, std::string_view w) {
  std::vector<std::pair<std::string, double>> out;
  auto catalog = store.Current();
  if (catalog->traffic_matrix() == nullptr) return out;
  for (const api::TrafficMatrix::Peer& p : catalog->traffic_matrix()->PeersOf(ns, w)) {
    out.emplace_back(p.ns + "/" + std::string(common::Str(p.workload)), p.mbps);
  }
  return out;
}

TEST(ParseTrafficSeriesTest, ConvertsBytesPerSecondToEdgesAndSkipsMalformedSeries) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<std::pair<std::string, std::string>> istio = {
      {"source_workload", "web"},
      {"source_workload_namespace", "shop"},
      {"destination_workload", "cart"},
      {"destination_workload_namespace", "shop"}};
  auto without = [&](std::string_view name) {
    auto l = istio;
    l.erase(std::remove_if(l.begin(), l.end(), [&](const auto& kv) { return kv.first == name; }),
            l.end());
    return l;
  };
  struct Case {
    std::string name;
    std::vector<Series> series;
    std::vector<std::tuple<std::string, std::string, std::string, std::string, double>> want;
    std::vector<std::string> want_skipped;  // substrings, one per skipped series
  };
  const std::vector<Case> cases = {
      {"an Istio series becomes one edge in MB/s",
       {S(istio, 2.5e6)},
       {{"shop", "web", "shop", "cart", 2.5}},
       {}},
      {"Hubble's namespace label names are accepted",
       {S({{"source_workload", "a"},
           {"source_namespace", "x"},
           {"destination_workload", "b"},
           {"destination_namespace", "y"}},
          1e6)},
       {{"x", "a", "y", "b", 1.0}},
       {}},
      {"zero traffic is no edge and no error", {S(istio, 0)}, {}, {}},
      {"Istio's unknown peer (outside the mesh) is ignored",
       {S({{"source_workload", "unknown"},
           {"source_workload_namespace", "unknown"},
           {"destination_workload", "cart"},
           {"destination_workload_namespace", "shop"}},
          5e6)},
       {},
       {}},
      {"a missing source workload is skipped naming the label",
       {S(without("source_workload"), 1e6)},
       {},
       {"missing label source_workload"}},
      {"a missing destination namespace is skipped naming the label",
       {S(without("destination_workload_namespace"), 1e6)},
       {},
       {"missing label destination_workload_namespace"}},
      {"NaN is skipped naming the value", {S(istio, nan)}, {}, {"got nan"}},
      {"+Inf is skipped naming the value", {S(istio, inf)}, {}, {"got inf"}},
      {"a negative rate is skipped naming the value", {S(istio, -3)}, {}, {"got -3"}},
      {"good series survive a bad neighbour",
       {S(istio, -1), S({{"source_workload", "cart"},
                         {"source_workload_namespace", "shop"},
                         {"destination_workload", "db"},
                         {"destination_workload_namespace", "shop"}},
                        4e5)},
       {{"shop", "cart", "shop", "db", 0.4}},
       {"got -1"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ParsedSeries got = ParseTrafficSeries(c.series);
    std::vector<std::tuple<std::string, std::string, std::string, std::string, double>> edges;
    for (const api::WorkloadEdge& e : got.edges) {
      edges.emplace_back(e.src_namespace, e.src_workload, e.dst_namespace, e.dst_workload, e.mbps);
    }
    EXPECT_EQ(edges, c.want);
    ASSERT_EQ(got.skipped.size(), c.want_skipped.size());
    for (size_t i = 0; i < got.skipped.size(); ++i) {
      EXPECT_THAT(got.skipped[i], HasSubstr(c.want_skipped[i]));
      EXPECT_THAT(got.skipped[i], HasSubstr("series {"));
    }
  }
}

class RefresherTest : public ::testing::Test {
 protected:
  RefresherTest() {
    options_.prometheus_url = "http://prom:9090";
    options_.staleness = std::chrono::minutes(5);
  }
  TrafficMatrixRefresher Make() { return TrafficMatrixRefresher(options_, prom_, clock_, store_); }

  Options options_;
  FakePrometheus prom_;
  common::FakeClock clock_;
  cache::NetworkStore store_;
};

TEST_F(RefresherTest, PublishesTheMatrixAndSendsTheQuery) {
  options_.query = "sum(rate(x[5m]))";
  TrafficMatrixRefresher r = Make();
  prom_.body = FakePrometheus::Vector(
      {{Istio("shop", "web", "cart"), "2000000"}, {Istio("shop", "cart", "db"), "500000"}});
  ASSERT_TRUE(r.RunOnce().ok());
  ASSERT_EQ(prom_.urls.size(), 1u);
  EXPECT_THAT(prom_.urls[0], HasSubstr("http://prom:9090/api/v1/query?query="));
  EXPECT_THAT(prom_.urls[0], HasSubstr("sum%28rate%28x%5B5m%5D%29%29"));
  using V = std::vector<std::pair<std::string, double>>;
  EXPECT_EQ(PeersOf(store_, "shop", "cart"), (V{{"shop/db", 0.5}, {"shop/web", 2.0}}));
  EXPECT_EQ(r.last_round().edges, 2);
  EXPECT_TRUE(r.last_round().published);
  EXPECT_EQ(common::Str(store_.Current()->traffic_matrix()->workload_label()), "app");

  // The same answer again does not rewrite the store.
  const uint64_t version = store_.CurrentSnapshot()->version;
  ASSERT_TRUE(r.RunOnce().ok());
  EXPECT_FALSE(r.last_round().published);
  EXPECT_EQ(store_.CurrentSnapshot()->version, version);

  // An edge the next answer no longer carries is gone at once.
  prom_.body = FakePrometheus::Vector({{Istio("shop", "web", "cart"), "3000000"}});
  ASSERT_TRUE(r.RunOnce().ok());
  EXPECT_EQ(PeersOf(store_, "shop", "cart"), (V{{"shop/web", 3.0}}));
}

TEST_F(RefresherTest, ErrorsKeepTheLastGoodMatrixUntilItIsStale) {
  options_.workload_label = "app.kubernetes.io/name";
  TrafficMatrixRefresher r = Make();
  prom_.body = FakePrometheus::Vector({{Istio("shop", "web", "cart"), "1000000"}});
  ASSERT_TRUE(r.RunOnce().ok());
  using V = std::vector<std::pair<std::string, double>>;
  EXPECT_EQ(common::Str(store_.Current()->traffic_matrix()->workload_label()),
            "app.kubernetes.io/name");

  struct Step {
    std::string name;
    bool down;
    int status;
    std::string body;
    std::string want_error;  // "" = OK
  };
  const std::vector<Step> steps = {
      {"Prometheus unreachable", true, 200, "", "connection refused"},
      {"an HTTP error", false, 503, "overloaded", "503"},
      {"an API error", false, 400,
       R"({"status":"error","errorType":"bad_data","error":"parse error at char 3"})",
       "parse error at char 3"},
      {"a payload that is not JSON", false, 200, "<html>", ""},
  };
  for (const Step& s : steps) {
    SCOPED_TRACE(s.name);
    clock_.Advance(std::chrono::minutes(1));
    prom_.down = s.down;
    prom_.status = s.status;
    prom_.body = s.body;
    common::Status st = r.RunOnce();
    ASSERT_FALSE(st.ok());
    EXPECT_THAT(std::string(st.message()), HasSubstr("http://prom:9090"));
    EXPECT_THAT(std::string(st.message()), HasSubstr(options_.query)) << "names the query";
    if (!s.want_error.empty()) {
      EXPECT_THAT(std::string(st.message()), HasSubstr(s.want_error));
    }
    EXPECT_EQ(PeersOf(store_, "shop", "web"), (V{{"shop/cart", 1.0}})) << "last good matrix kept";
  }
  // 4 minutes after the good answer it is still fresh; past 5 minutes it is dropped.
  clock_.Advance(std::chrono::seconds(59));
  prom_.down = true;
  EXPECT_FALSE(r.RunOnce().ok());
  EXPECT_EQ(PeersOf(store_, "shop", "web"), (V{{"shop/cart", 1.0}}));
  clock_.Advance(std::chrono::seconds(2));
  EXPECT_FALSE(r.RunOnce().ok());
  EXPECT_EQ(store_.Current()->traffic_matrix(), nullptr) << "stale matrix dropped";
  EXPECT_EQ(r.last_round().edges, 0);

  // Prometheus back: the matrix returns.
  prom_.down = false;
  prom_.status = 200;
  prom_.body = FakePrometheus::Vector({{Istio("shop", "web", "cart"), "1000000"}});
  ASSERT_TRUE(r.RunOnce().ok());
  EXPECT_EQ(PeersOf(store_, "shop", "web"), (V{{"shop/cart", 1.0}}));
}

TEST_F(RefresherTest, AMalformedSampleKeepsItsEdgesLastReadingUntilStale) {
  TrafficMatrixRefresher r = Make();
  prom_.body = FakePrometheus::Vector(
      {{Istio("shop", "web", "cart"), "1000000"}, {Istio("shop", "cart", "db"), "2000000"}});
  ASSERT_TRUE(r.RunOnce().ok());
  using V = std::vector<std::pair<std::string, double>>;

  clock_.Advance(std::chrono::minutes(3));
  prom_.body = FakePrometheus::Vector({{Istio("shop", "web", "cart"), "NaN"},
                                       {Istio("shop", "cart", "db"), "4000000"},
                                       {R"("source_workload":"x")", "1"}});
  ASSERT_TRUE(r.RunOnce().ok()) << "malformed samples are not a failed query";
  EXPECT_EQ(r.last_round().series, 3);
  EXPECT_EQ(r.last_round().skipped, 2);
  EXPECT_EQ(PeersOf(store_, "shop", "cart"), (V{{"shop/db", 4.0}, {"shop/web", 1.0}}));

  // The NaN edge's last good reading is 6 minutes old now: dropped; the good edge stays.
  clock_.Advance(std::chrono::minutes(3));
  ASSERT_TRUE(r.RunOnce().ok());
  EXPECT_EQ(PeersOf(store_, "shop", "cart"), (V{{"shop/db", 4.0}}));
}

TEST_F(RefresherTest, AnEmptyAnswerClearsTheMatrix) {
  TrafficMatrixRefresher r = Make();
  prom_.body = FakePrometheus::Vector({{Istio("shop", "web", "cart"), "1000000"}});
  ASSERT_TRUE(r.RunOnce().ok());
  ASSERT_NE(store_.Current()->traffic_matrix(), nullptr);
  prom_.body = FakePrometheus::Vector({});
  ASSERT_TRUE(r.RunOnce().ok());
  EXPECT_EQ(store_.Current()->traffic_matrix(), nullptr);
}

}  // namespace
}  // namespace gpusched::telemetry::traffic
