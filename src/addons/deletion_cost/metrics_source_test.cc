// SPDX-License-Identifier: Apache-2.0
#include "src/addons/deletion_cost/metrics_source.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

namespace gpusched::addons::deletion_cost {
namespace {

class FakeHttp final : public HttpGetter {
 public:
  std::map<std::string, common::StatusOr<HttpResult>> answers;
  std::vector<std::string> urls;
  common::StatusOr<HttpResult> Get(const std::string& url, common::Duration) override {
    urls.push_back(url);
    auto it = answers.find(url);
    if (it == answers.end()) return HttpResult{404, "not found", "text/plain"};
    return it->second;
  }
};

TEST(ParseExpositionTest, ReadsTheTextFormat) {
  const char* text =
      "# HELP active_connections Open connections.\r\n"
      "# TYPE active_connections gauge\r\n"
      "active_connections{state=\"active\",pod=\"a\\\"b\\\\c\\nd\"} 12 1700000000000\r\n"
      "active_connections{state=\"idle\",} 3\n"
      "  cache_hit_rate 0.75\n"
      "latency_seconds_bucket{le=\"+Inf\"} +Inf\n"
      "weird{a=\"1\"}\tNaN\n"
      "neg -1e3 # {trace_id=\"x\"} 1\n"
      "\n"
      "# EOF\n";
  auto s = ParseExposition(text);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_EQ(s->size(), 6u);
  EXPECT_EQ((*s)[0].name, "active_connections");
  EXPECT_EQ((*s)[0].value, 12);
  ASSERT_EQ((*s)[0].labels.size(), 2u);
  EXPECT_EQ((*s)[0].labels[0].first, "pod");
  EXPECT_EQ((*s)[0].labels[0].second, "a\"b\\c\nd");
  EXPECT_EQ((*s)[2].value, 0.75);
  EXPECT_TRUE(std::isinf((*s)[3].value));
  EXPECT_TRUE(std::isnan((*s)[4].value));
  EXPECT_EQ((*s)[5].value, -1000);
  EXPECT_EQ(*SumSeries(*s, "active_connections", {}), 15);
  EXPECT_EQ(*SumSeries(*s, "active_connections", {{"state", "active"}}), 12);
  EXPECT_EQ(SumSeries(*s, "active_connections", {{"state", "gone"}}).status().code(),
            common::StatusCode::kNotFound);
  EXPECT_EQ(SumSeries(*s, "missing", {}).status().code(), common::StatusCode::kNotFound);
  auto empty = ParseExposition("");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
}

TEST(ParseExpositionTest, RejectsBadPayloads) {
  struct Case {
    std::string name;
    std::string text;
    std::string error;
  };
  const std::vector<Case> cases = {
      {"no value", "conns\n", "line 1: want a space before the value"},
      {"value is not a number", "conns abc\n", "line 1: invalid value"},
      {"hex and nan() forms are not Go floats", "a 0x10\n", "invalid value"},
      {"metric name starts with a digit", "9conns 1\n", "line 1: invalid metric name"},
      {"label without quotes", "conns{a=b} 1\n", "want a quoted label value"},
      {"unterminated label value", "conns{a=\"b} 1\n", "unterminated label value"},
      {"unterminated label set", "conns{a=\"b\" 1\n", "want ',' or '}'"},
      {"invalid escape", "conns{a=\"\\t\"} 1\n", "invalid escape"},
      {"bad timestamp", "ok 1\nconns 1 yesterday\n", "line 2: invalid timestamp"},
      {"text after the timestamp", "conns 1 2 3\n", "unexpected text after the timestamp"},
      {"content after # EOF", "a 1\n# EOF\nb 2\n", "line 3: content after # EOF"},
      {"NUL byte", std::string("a 1\n\0b 2\n", 9), "line 2: NUL byte"},
      {"HTML error page", "<html><body>502 Bad Gateway</body></html>\n",
       "line 1: invalid metric name"},
      {"JSON instead of text", "{\"conns\": 1}\n", "invalid metric name"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto s = ParseExposition(c.text);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.status().message().find(c.error), std::string_view::npos) << s.status().message();
  }
  std::string huge(kMaxExpositionBytes + 1, '#');
  EXPECT_EQ(ParseExposition(huge).status().code(), common::StatusCode::kResourceExhausted);
}

TEST(ScrapePodTest, HttpErrorsAreStatuses) {
  FakeHttp http;
  http.answers.insert_or_assign("http://a/metrics", HttpResult{200, "conns 4\n", "text/plain"});
  http.answers.insert_or_assign("http://b/metrics", HttpResult{500, "boom", "text/plain"});
  http.answers.insert_or_assign("http://c/metrics",
                                common::DeadlineExceededError("GET http://c/metrics: timed out"));
  http.answers.insert_or_assign("http://d/metrics", HttpResult{200, "conns{", "text/plain"});
  auto a = ScrapePod(http, "http://a/metrics", std::chrono::seconds(1));
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(*SumSeries(*a, "conns", {}), 4);
  EXPECT_NE(ScrapePod(http, "http://b/metrics", std::chrono::seconds(1))
                .status()
                .message()
                .find("HTTP 500"),
            std::string_view::npos);
  EXPECT_EQ(ScrapePod(http, "http://c/metrics", std::chrono::seconds(1)).status().code(),
            common::StatusCode::kDeadlineExceeded);
  auto d = ScrapePod(http, "http://d/metrics", std::chrono::seconds(1));
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("bad exposition"), std::string_view::npos);
}

TEST(PrometheusTest, ParsesQueryAnswers) {
  struct Case {
    std::string name;
    std::string body;
    bool ok;
    double want;
    std::string error;
  };
  const std::vector<Case> cases = {
      {"vector summed", R"({"status":"success","data":{"resultType":"vector","result":[
         {"metric":{"pod":"a"},"value":[1700000000.1,"2.5"]},{"metric":{"pod":"b"},"value":[1700000000.1,"1"]}]}})",
       true, 3.5, ""},
      {"scalar",
       R"({"status":"success","data":{"resultType":"scalar","result":[1700000000,"42"]}})", true,
       42, ""},
      {"empty vector", R"({"status":"success","data":{"resultType":"vector","result":[]}})", false,
       0, "returned no series"},
      {"API error", R"({"status":"error","errorType":"bad_data","error":"parse error at char 5"})",
       false, 0, "bad_data: parse error at char 5"},
      {"range query result", R"({"status":"success","data":{"resultType":"matrix","result":[]}})",
       false, 0, "use an instant query"},
      {"not JSON", "<html>", false, 0, "prometheus response"},
      {"bad sample value",
       R"({"status":"success","data":{"resultType":"scalar","result":[1,"lots"]}})", false, 0,
       "invalid sample value"},
      {"sample is not a pair",
       R"({"status":"success","data":{"resultType":"scalar","result":"1"}})", false, 0,
       "want [timestamp"},
      {"no data", R"({"status":"success"})", false, 0, "data: required"},
      {"NaN passes through (the cost term rejects it)",
       R"({"status":"success","data":{"resultType":"scalar","result":[1,"NaN"]}})", true, NAN, ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto v = ParsePrometheusQueryResponse(c.body);
    ASSERT_EQ(v.ok(), c.ok) << v.status().ToString();
    if (c.ok && !std::isnan(c.want)) {
      EXPECT_EQ(*v, c.want);
    }
    if (!c.ok) {
      EXPECT_NE(v.status().message().find(c.error), std::string_view::npos) << v.status().message();
    }
  }
}

TEST(PrometheusTest, QueryEncodesPromqlAndReadsErrorBodies) {
  FakeHttp http;
  const std::string promql = "sum(conns{pod=\"web-1\"})";
  const std::string url = "http://prom:9090/api/v1/query?query=" + UrlEncode(promql);
  EXPECT_EQ(UrlEncode(promql), "sum%28conns%7Bpod%3D%22web-1%22%7D%29");
  http.answers.insert_or_assign(
      url, HttpResult{
               200, R"({"status":"success","data":{"resultType":"scalar","result":[1,"7"]}})", ""});
  auto v = QueryPrometheus(http, "http://prom:9090", promql, std::chrono::seconds(1));
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(*v, 7);
  http.answers.insert_or_assign(
      url,
      HttpResult{400, R"({"status":"error","errorType":"bad_data","error":"unexpected }"})", ""});
  v = QueryPrometheus(http, "http://prom:9090", promql, std::chrono::seconds(1));
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.status().message().find("HTTP 400"), std::string_view::npos);
  EXPECT_NE(v.status().message().find("unexpected }"), std::string_view::npos);
  http.answers.insert_or_assign(url, HttpResult{503, "overloaded", ""});
  EXPECT_EQ(
      QueryPrometheus(http, "http://prom:9090", promql, std::chrono::seconds(1)).status().code(),
      common::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace gpusched::addons::deletion_cost
