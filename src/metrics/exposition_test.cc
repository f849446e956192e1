// SPDX-License-Identifier: Apache-2.0
#include "src/metrics/exposition.h"

#include <gtest/gtest.h>

namespace gpusched::metrics {
namespace {

TEST(ExpositionTest, EscapesLabelValuesAndHelp) {
  struct Case {
    std::string name, in, want_label, want_help;
  };
  std::vector<Case> cases = {
      {"plain text is unchanged", "gpu-scheduler", "gpu-scheduler", "gpu-scheduler"},
      {"a backslash is doubled", R"(a\b)", R"(a\\b)", R"(a\\b)"},
      {"a double quote is escaped in labels only", R"(say "hi")", R"(say \"hi\")", R"(say "hi")"},
      {"a newline becomes \\n", "a\nb", R"(a\nb)", R"(a\nb)"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(EscapeLabelValue(c.in), c.want_label);
    EXPECT_EQ(EscapeHelp(c.in), c.want_help);
  }
}

TEST(ExpositionTest, FormatsValues) {
  EXPECT_EQ(FormatValue(0), "0");
  EXPECT_EQ(FormatValue(3), "3");
  EXPECT_EQ(FormatValue(0.001), "0.001");
  EXPECT_EQ(FormatValue(0.001 * 2 * 2 * 2), "0.008");
  EXPECT_EQ(FormatValue(1e-05), "1e-05");
  EXPECT_EQ(FormatValue(1.0 / 0.0), "+Inf");
  EXPECT_EQ(FormatValue(-1.0 / 0.0), "-Inf");
  EXPECT_EQ(FormatValue(0.0 / 0.0), "NaN");
}

TEST(ExpositionTest, WritesCountersGaugesAndHistograms) {
  Registry r;
  r.AddCounter("req_total", "Requests.\nSecond line", {"code", "path"})
      .With({"200", R"(/a"b)"})
      ->Add(7);
  r.AddGauge("up", "Up.").With({})->Set(1);
  Histogram* h = r.AddHistogram("lat_seconds", "Latency.", {"verb"}, {0.1, 1}).With({"GET"});
  h->Observe(0.05);
  h->Observe(0.5);
  h->Observe(3);
  r.AddGauge("empty", "No series yet.", {"x"});
  std::string want =
      "# HELP req_total Requests.\\nSecond line\n"
      "# TYPE req_total counter\n"
      "req_total{code=\"200\",path=\"/a\\\"b\"} 7\n"
      "# HELP up Up.\n"
      "# TYPE up gauge\n"
      "up 1\n"
      "# HELP lat_seconds Latency.\n"
      "# TYPE lat_seconds histogram\n"
      "lat_seconds_bucket{verb=\"GET\",le=\"0.1\"} 1\n"
      "lat_seconds_bucket{verb=\"GET\",le=\"1\"} 2\n"
      "lat_seconds_bucket{verb=\"GET\",le=\"+Inf\"} 3\n"
      "lat_seconds_sum{verb=\"GET\"} 3.55\n"
      "lat_seconds_count{verb=\"GET\"} 3\n"
      "# HELP empty No series yet.\n"
      "# TYPE empty gauge\n";
  EXPECT_EQ(WriteText(r), want);
}

TEST(ExpositionTest, HistogramWithoutLabelsGetsOnlyLe) {
  Registry r;
  r.AddHistogram("h", "H.", {}, {1}).With({})->Observe(1);
  EXPECT_EQ(WriteText(r),
            "# HELP h H.\n# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 1\n"
            "h_sum 1\nh_count 1\n");
}

}  // namespace
}  // namespace gpusched::metrics
