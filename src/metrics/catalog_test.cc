// SPDX-License-Identifier: Apache-2.0
// The catalog against what uses it: every metric name in deploy/monitoring (PrometheusRule,
// dashboards, monitors) and docs/monitoring.md must be one the binaries export, and the rules
// must pass `promtool check rules` (the PrometheusRule's spec.groups extracted to a temp file).
#include "src/metrics/catalog.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "src/metrics/exposition.h"

namespace gpusched::metrics {
namespace {

namespace fs = std::filesystem;

std::string SourceDir() {
  const char* d = std::getenv("GPUSCHED_SOURCE_DIR");
  return d != nullptr ? d : ".";
}

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Tokens that look like our metric names: scheduler_* or gpusched_* identifiers.
std::set<std::string> MetricTokens(const std::string& text) {
  auto ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; };
  std::set<std::string> out;
  for (size_t i = 0; i < text.size();) {
    if (!ident(text[i]) || (i > 0 && (ident(text[i - 1]) || text[i - 1] == ':'))) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < text.size() && ident(text[j])) ++j;
    std::string tok = text.substr(i, j - i);
    // Recording-rule names ("gpusched:...") continue with ':' and are not metrics we export.
    bool recording = j < text.size() && text[j] == ':';
    bool ours = (tok.starts_with("scheduler_") && tok.size() > 10) ||
                (tok.starts_with("gpusched_") && tok.size() > 9);
    if (!recording && ours) out.insert(tok);
    i = j;
  }
  return out;
}

TEST(CatalogTest, NamesAreUniqueValidAndFollowTheScheme) {
  std::set<std::string_view> seen;
  for (const auto& s : Catalog()) {
    SCOPED_TRACE(std::string(s.name));
    EXPECT_TRUE(seen.insert(s.name).second) << "duplicate";
    EXPECT_TRUE(Registry::ValidMetricName(s.name));
    EXPECT_TRUE(s.name.starts_with("scheduler_") || s.name.starts_with("gpusched_"));
    if (s.type == Type::kCounter) {
      EXPECT_TRUE(s.name.ends_with("_total"));
    }
    if (s.type == Type::kHistogram) {
      EXPECT_TRUE(s.buckets.n > 0 || !s.explicit_buckets.empty());
    }
  }
}

TEST(CatalogTest, KubeSchedulerBucketsMatchTheReference) {
  struct Case {
    std::string_view name;
    double start, factor;
    int n;
  };
  // docs/kube-scheduler-compat.md §7.
  std::vector<Case> cases = {
      {names::kAttemptDuration, 0.001, 2, 15},
      {names::kAlgorithmDuration, 0.001, 2, 15},
      {names::kSliDuration, 0.01, 2, 20},
      {names::kPodAttempts, 1, 2, 5},
      {names::kExtensionPointDuration, 0.0001, 2, 12},
      {names::kPluginExecutionDuration, 0.00001, 1.5, 20},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string(c.name));
    const MetricSpec& s = Spec(c.name);
    EXPECT_EQ(s.type, Type::kHistogram);
    EXPECT_DOUBLE_EQ(s.buckets.start, c.start);
    EXPECT_DOUBLE_EQ(s.buckets.factor, c.factor);
    EXPECT_EQ(s.buckets.n, c.n);
  }
}

TEST(CatalogTest, EveryMetricUsedInDeployMonitoringAndDocsIsExported) {
  auto exported = ExportedSeriesNames();
  std::set<std::string> known(exported.begin(), exported.end());
  for (const auto& s : Catalog()) known.insert(std::string(s.name));
  std::vector<fs::path> files;
  fs::path mon = fs::path(SourceDir()) / "deploy" / "monitoring";
  ASSERT_TRUE(fs::exists(mon)) << mon;
  for (const auto& e : fs::recursive_directory_iterator(mon)) {
    if (e.is_regular_file() &&
        (e.path().extension() == ".yaml" || e.path().extension() == ".json")) {
      files.push_back(e.path());
    }
  }
  files.push_back(fs::path(SourceDir()) / "docs" / "monitoring.md");
  int used = 0;
  for (const auto& f : files) {
    SCOPED_TRACE(f.string());
    ASSERT_TRUE(fs::exists(f));
    for (const auto& tok : MetricTokens(ReadFile(f))) {
      // Recording-rule outputs are named "gpusched:..." and are not matched; job/label values
      // such as "gpusched_scheduler" would be, so only names with a known prefix shape count.
      ++used;
      EXPECT_TRUE(known.count(tok)) << "metric " << tok << " is not exported by gpusched";
    }
  }
  EXPECT_GT(used, 20) << "the dashboards and rules reference suspiciously few metrics";
}

TEST(CatalogTest, EveryCatalogMetricIsDocumented) {
  std::set<std::string> documented =
      MetricTokens(ReadFile(fs::path(SourceDir()) / "docs" / "monitoring.md"));
  for (const auto& s : Catalog()) {
    EXPECT_TRUE(documented.count(std::string(s.name)))
        << s.name << " is missing from docs/monitoring.md";
  }
}

TEST(CatalogTest, PromtoolAcceptsThePrometheusRule) {
  if (std::system("command -v promtool >/dev/null 2>&1") != 0) {
    GTEST_FAIL() << "promtool is not installed (Debian package prometheus; scripts/bootstrap)";
  }
  fs::path rule = fs::path(SourceDir()) / "deploy" / "monitoring" / "prometheusrule.yaml";
  ASSERT_TRUE(fs::exists(rule));
  // promtool wants a plain rule file: the PrometheusRule's spec (which holds `groups:`).
  std::string text = ReadFile(rule);
  size_t spec = text.find("\nspec:\n");
  ASSERT_NE(spec, std::string::npos);
  std::istringstream lines(text.substr(spec + 7));
  std::string out, line;
  while (std::getline(lines, line)) {
    if (!line.empty() && line[0] != ' ') break;  // end of spec
    out += line.size() >= 2 ? line.substr(2) : line;
    out += '\n';
  }
  fs::path tmp =
      fs::temp_directory_path() / ("gpusched-rules-" + std::to_string(::getpid()) + ".yaml");
  {
    std::ofstream o(tmp);
    o << out;
  }
  std::string cmd = "promtool check rules " + tmp.string() + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string output;
  char buf[512];
  while (fgets(buf, sizeof(buf), p) != nullptr) output += buf;
  int rc = pclose(p);
  fs::remove(tmp);
  EXPECT_EQ(rc, 0) << output;
  EXPECT_NE(output.find("SUCCESS"), std::string::npos) << output;
}

TEST(CatalogTest, PromtoolAcceptsTheExposition) {
  if (std::system("command -v promtool >/dev/null 2>&1") != 0) {
    GTEST_FAIL() << "promtool is not installed (Debian package prometheus; scripts/bootstrap)";
  }
  Registry r;
  for (const auto& s : Catalog()) {
    std::vector<std::string> values;
    for (int i = 0; i < s.num_labels; ++i) values.push_back("v\"\\\n" + std::to_string(i));
    switch (s.type) {
      case Type::kCounter: AddCounter(r, s.name).With(values)->Inc(); break;
      case Type::kGauge: AddGauge(r, s.name).With(values)->Set(-1.5); break;
      case Type::kHistogram: AddHistogram(r, s.name).With(values)->Observe(0.3); break;
    }
  }
  fs::path tmp =
      fs::temp_directory_path() / ("gpusched-expo-" + std::to_string(::getpid()) + ".txt");
  {
    std::ofstream o(tmp);
    o << WriteText(r);
  }
  std::string cmd = "promtool check metrics < " + tmp.string() + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string output;
  char buf[512];
  while (fgets(buf, sizeof(buf), p) != nullptr) output += buf;
  int rc = pclose(p);
  fs::remove(tmp);
  // promtool's lint also flags style (e.g. counters without _total); the format must parse.
  EXPECT_EQ(output.find("error while linting"), std::string::npos) << output;
  EXPECT_EQ(rc, 0) << output;
}

}  // namespace
}  // namespace gpusched::metrics
