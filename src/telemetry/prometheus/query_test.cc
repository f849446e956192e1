// SPDX-License-Identifier: Apache-2.0
#include "src/telemetry/prometheus/query.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace gpusched::telemetry::prometheus {
namespace {

using ::testing::HasSubstr;

class FakeHttp final : public HttpGetter {
 public:
  common::StatusOr<HttpResult> Get(const std::string& url, common::Duration) override {
    urls.push_back(url);
    if (!transport.ok()) return transport;
    return answer;
  }
  HttpResult answer;
  common::Status transport = common::Status::Ok();
  std::vector<std::string> urls;
};

TEST(ParseQueryVectorTest, ReadsSeriesWithLabels) {
  struct Case {
    std::string name;
    std::string body;
    std::vector<std::map<std::string, std::string>> labels;
    std::vector<double> values;
    std::string error;  // substring; empty = ok
  };
  const std::vector<Case> cases = {
      {"a vector keeps each series' labels",
       R"({"status":"success","data":{"resultType":"vector","result":[
          {"metric":{"Hostname":"node-a","gpu":"0"},"value":[1700000000.1,"42.5"]},
          {"metric":{"Hostname":"node-b"},"value":[1700000000.1,"7"]}]}})",
       {{{"Hostname", "node-a"}, {"gpu", "0"}}, {{"Hostname", "node-b"}}},
       {42.5, 7},
       ""},
      {"an empty vector is no series",
       R"({"status":"success","data":{"resultType":"vector","result":[]}})",
       {},
       {},
       ""},
      {"a scalar is one series without labels",
       R"({"status":"success","data":{"resultType":"scalar","result":[1,"3"]}})",
       {{}},
       {3},
       ""},
      {"an API error names its type and message",
       R"({"status":"error","errorType":"bad_data","error":"parse error at char 3"})",
       {},
       {},
       "prometheus query failed: bad_data: parse error at char 3"},
      {"a matrix is rejected",
       R"({"status":"success","data":{"resultType":"matrix","result":[]}})",
       {},
       {},
       "data.resultType: \"matrix\" (want vector or scalar"},
      {"a bad value is rejected naming it",
       R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"x"]}]}})",
       {},
       {},
       "data.result[0].value[1]: invalid sample value \"x\""},
      {"a non-string label is rejected",
       R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{"a":1},"value":[1,"2"]}]}})",
       {},
       {},
       "data.result[0].metric.a: want a string"},
      {"non-JSON is rejected", "<html>", {}, {}, "prometheus response"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto got = ParseQueryVector(c.body);
    if (!c.error.empty()) {
      ASSERT_FALSE(got.ok());
      EXPECT_THAT(std::string(got.status().message()), HasSubstr(c.error));
      continue;
    }
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    ASSERT_EQ(got->size(), c.values.size());
    for (size_t i = 0; i < got->size(); ++i) {
      EXPECT_EQ((*got)[i].value, c.values[i]);
      std::map<std::string, std::string> labels((*got)[i].labels.begin(), (*got)[i].labels.end());
      EXPECT_EQ(labels, c.labels[i]);
    }
  }
}

TEST(QueryVectorTest, BuildsTheUrlAndReportsHttpErrors) {
  FakeHttp http;
  http.answer = {200, R"({"status":"success","data":{"resultType":"vector","result":[]}})", ""};
  auto ok = QueryVector(http, "http://prom:9090/", "avg by (node) (up)", std::chrono::seconds(1));
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  ASSERT_EQ(http.urls.size(), 1u);
  EXPECT_EQ(http.urls[0], "http://prom:9090/api/v1/query?query=avg%20by%20%28node%29%20%28up%29");

  http.answer = {503, "unavailable", ""};
  auto down = QueryVector(http, "http://prom:9090", "up", std::chrono::seconds(1));
  ASSERT_FALSE(down.ok());
  EXPECT_THAT(std::string(down.status().message()), HasSubstr("HTTP 503"));

  http.answer = {400, R"({"status":"error","errorType":"bad_data","error":"oops"})", ""};
  auto bad = QueryVector(http, "http://prom:9090", "up(", std::chrono::seconds(1));
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("bad_data: oops"));

  http.transport = common::UnavailableError("connection refused");
  auto refused = QueryVector(http, "http://prom:9090", "up", std::chrono::seconds(1));
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("connection refused"));
}

}  // namespace
}  // namespace gpusched::telemetry::prometheus
