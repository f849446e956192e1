// SPDX-License-Identifier: Apache-2.0
#include "src/framework/runtime/framework.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "src/framework/runtime/plugin_names.h"
#include "src/testing/fake_handle.h"

namespace gpusched::framework::runtime {
namespace {

// A filter that rejects nodes whose name is in a set, and scores by name length.
class TestPlugin final : public QueueSortPlugin,
                         public FilterPlugin,
                         public ScorePlugin,
                         public BindPlugin {
 public:
  std::string_view Name() const override { return "Test"; }
  bool Less(const QueuedPodInfo&, const QueuedPodInfo&) const override { return false; }
  Status Filter(const CycleState&, const api::Pod&, const NodeInfo& n) const override {
    if (n.name().starts_with("cpu")) return Status::Unschedulable("Insufficient cpu");
    if (n.name().starts_with("taint"))
      return Status::Unresolvable("node(s) had untolerated taint(s)");
    return Status::Success();
  }
  void ScoreNodes(const CycleState&, const api::Pod&, const Snapshot& snapshot,
                  std::span<const NodeIndex> nodes, std::span<int64_t> out) const override {
    ScoreEach(snapshot, nodes, out,
              [&](const NodeInfo& n) -> int64_t { return static_cast<int64_t>(n.name().size()); });
  }
  Status Bind(CycleState&, const api::Pod&, std::string_view) override { return Status::Success(); }
};

// Scores 10 × name length and normalizes to 0..100 of the best node (explain's raw/normalized).
class NormPlugin final : public ScorePlugin {
 public:
  std::string_view Name() const override { return "Norm"; }
  void ScoreNodes(const CycleState&, const api::Pod&, const Snapshot& snapshot,
                  std::span<const NodeIndex> nodes, std::span<int64_t> out) const override {
    ScoreEach(snapshot, nodes, out, [&](const NodeInfo& n) -> int64_t {
      return 10 * static_cast<int64_t>(n.name().size());
    });
  }
  bool HasNormalizeScore() const override { return true; }
  Status NormalizeScore(const CycleState&, const api::Pod&,
                        std::span<int64_t> scores) const override {
    int64_t max = 1;
    for (int64_t s : scores) max = std::max(max, s);
    for (int64_t& s : scores) s = s * 100 / max;
    return Status::Success();
  }
};

// Scores every node the same (7) and breaks ties by its raw score (the digit the name ends in),
// by the node order, or not at all.
class TiePlugin final : public ScorePlugin {
 public:
  explicit TiePlugin(TieBreak rule) : rule_(rule) {}
  std::string_view Name() const override { return "Tie"; }
  void ScoreNodes(const CycleState&, const api::Pod&, const Snapshot& snapshot,
                  std::span<const NodeIndex> nodes, std::span<int64_t> out) const override {
    ScoreEach(snapshot, nodes, out,
              [&](const NodeInfo& n) -> int64_t { return n.name().back() - '0'; });
  }
  bool HasNormalizeScore() const override { return true; }
  Status NormalizeScore(const CycleState&, const api::Pod&,
                        std::span<int64_t> scores) const override {
    for (int64_t& s : scores) s = 7;
    return Status::Success();
  }
  TieBreak TieBreakRule() const override { return rule_; }

 private:
  TieBreak rule_;
};

class FrameworkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(
        registry_
            .Register("Test",
                      [](const boost::json::value&, Handle&) -> common::StatusOr<PluginPtr> {
                        return PluginPtr(std::make_unique<TestPlugin>());
                      })
            .ok());
    ASSERT_TRUE(
        registry_
            .Register("Norm",
                      [](const boost::json::value&, Handle&) -> common::StatusOr<PluginPtr> {
                        return PluginPtr(std::make_unique<NormPlugin>());
                      })
            .ok());
    const std::pair<const char*, ScorePlugin::TieBreak> ties[] = {
        {"TieNone", ScorePlugin::TieBreak::kNone},
        {"TieRaw", ScorePlugin::TieBreak::kRawScore},
        {"TieFirst", ScorePlugin::TieBreak::kFirstNode}};
    for (const auto& [name, rule] : ties) {
      ASSERT_TRUE(registry_
                      .Register(name,
                                [rule = rule](const boost::json::value&,
                                              Handle&) -> common::StatusOr<PluginPtr> {
                                  return PluginPtr(std::make_unique<TiePlugin>(rule));
                                })
                      .ok());
    }
  }
  config::Profile Profile() {
    config::Profile p;
    p.path = "profiles[0]";
    for (auto point : {config::Point::kQueueSort, config::Point::kFilter, config::Point::kScore,
                       config::Point::kBind}) {
      p.plugins.at(point).disabled.push_back({"*", 0, ""});
      p.plugins.at(point).enabled.push_back({"Test", 0, ""});
    }
    return p;
  }
  void AddNode(const std::string& name) {
    auto n = std::make_shared<api::Node>();
    n->meta.name = name;
    NodeIndex i = static_cast<NodeIndex>(snapshot_.nodes().size());
    NodeInfo& ni = snapshot_.MutableSlotForCache(i);
    ni.node = n;
    ni.index = i;
    snapshot_.IndexNameForCache(name, i);
    snapshot_.SetNodeCountForCache(i + 1, 1);
  }

  Registry registry_;
  testing::FakeHandle handle_;
  Snapshot snapshot_;
  common::Random random_{1};
};

TEST_F(FrameworkTest, UnknownPluginIsReportedWithItsYamlPath) {
  config::Profile p = Profile();
  p.plugins.at(config::Point::kFilter)
      .enabled.push_back({"Nope", 0, "profiles[0].plugins.filter.enabled[1]"});
  auto fw = Framework::Create(p, 0, registry_, handle_);
  ASSERT_FALSE(fw.ok());
  EXPECT_EQ(fw.status().message(),
            "profiles[0].plugins.filter.enabled[1]: unknown plugin \"Nope\"");
}

TEST_F(FrameworkTest, AMisspelledPluginGetsADidYouMean) {
  config::Profile p = Profile();
  p.plugins.at(config::Point::kFilter)
      .enabled.push_back({"test", 0, "profiles[0].plugins.filter.enabled[1]"});
  auto fw = Framework::Create(p, 0, registry_, handle_);
  ASSERT_FALSE(fw.ok());
  EXPECT_EQ(fw.status().message(),
            "profiles[0].plugins.filter.enabled[1]: unknown plugin \"test\" (did you mean "
            "\"Test\"?)");
}

// CheckPluginNames (what a command runs on a config file before building a scheduler) reports
// what Framework::Create would, with the same path and words; a profile it passes has no unknown
// name, and a disabled unknown name is not an error.
TEST_F(FrameworkTest, CheckPluginNamesReportsWhatCreateWould) {
  EXPECT_TRUE(CheckPluginNames(Profile(), registry_).ok());
  config::Profile p = Profile();
  p.plugins.at(config::Point::kFilter).disabled.push_back({"Gone", 0, ""});
  EXPECT_TRUE(CheckPluginNames(p, registry_).ok());
  p.plugins.at(config::Point::kScore)
      .enabled.push_back({"test", 0, "profiles[0].plugins.score.enabled[0]"});
  const common::Status checked = CheckPluginNames(p, registry_);
  auto fw = Framework::Create(p, 0, registry_, handle_);
  ASSERT_FALSE(fw.ok());
  EXPECT_EQ(checked, fw.status());
  config::Profile args = Profile();
  args.plugin_config.push_back({"Tesst", boost::json::object(), "profiles[0].pluginConfig[0]"});
  EXPECT_EQ(CheckPluginNames(args, registry_).message(),
            "profiles[0].pluginConfig[0].name: unknown plugin \"Tesst\" (did you mean \"Test\"?)");
  // A profile read from a file names it, in both.
  p.source = "sched.yaml";
  const common::Status named = CheckPluginNames(p, registry_);
  EXPECT_EQ(named.message().substr(0, 12), "sched.yaml: ") << named.ToString();
  auto named_fw = Framework::Create(p, 0, registry_, handle_);
  ASSERT_FALSE(named_fw.ok());
  EXPECT_EQ(named, named_fw.status());
}

TEST_F(FrameworkTest, ChoosesHighestScoreAndExplainsRejections) {
  auto fw = Framework::Create(Profile(), 100, registry_, handle_);
  ASSERT_TRUE(fw.ok()) << fw.status().ToString();
  for (auto n : {"cpu-1", "cpu-2", "taint-1", "ok", "longest-ok"}) AddNode(n);
  api::Pod pod;
  CycleState state;
  SchedulePodOptions opts;
  opts.record_scores = true;
  auto r = (*fw)->SchedulePod(state, pod, snapshot_, random_, opts);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(snapshot_.at(r.node).name(), "longest-ok");
  EXPECT_EQ(r.counts.feasible, 2);
  EXPECT_EQ(r.counts.evaluated, 5);
  ASSERT_EQ(r.scores.size(), 2u);
}

TEST_F(FrameworkTest, TieBreakRulesDecideBetweenEqualTotals) {
  // "Test" scores by name length: n1, n2, n3 tie at 2 (+7 from the Tie plugin); "n10" wins at 3.
  auto Chosen = [this](std::vector<std::string> names, std::string tie_plugin, uint64_t seed) {
    config::Profile p = Profile();
    auto& score = p.plugins.at(config::Point::kScore).enabled;
    score.push_back({tie_plugin, 1, ""});
    auto fw = Framework::Create(p, 100, registry_, handle_);
    EXPECT_TRUE(fw.ok()) << fw.status().ToString();
    snapshot_ = Snapshot();
    for (const auto& n : names) AddNode(n);
    api::Pod pod;
    CycleState state;
    common::Random random(seed);
    auto r = (*fw)->SchedulePod(state, pod, snapshot_, random);
    EXPECT_TRUE(r.status.ok());
    return std::string(snapshot_.at(r.node).name());
  };
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    // kRawScore: the highest raw score among the tied nodes, whatever the random stream.
    EXPECT_EQ(Chosen({"n1", "n3", "n2"}, "TieRaw", seed), "n3");
    // kFirstNode: the tied node first in the snapshot.
    EXPECT_EQ(Chosen({"n2", "n3", "n1"}, "TieFirst", seed), "n2");
  }
  // A higher total still wins over any tie-break.
  EXPECT_EQ(Chosen({"n1", "n10", "n3"}, "TieRaw", 1), "n10");
  // Without a rule, ties stay random (the seeds pick several nodes).
  std::set<std::string> seen;
  for (uint64_t seed = 1; seed <= 20; ++seed)
    seen.insert(Chosen({"n1", "n3", "n2"}, "TieNone", seed));
  EXPECT_GT(seen.size(), 1u);
}

TEST_F(FrameworkTest, NoFitGivesKubeSchedulerMessageSortedAsStrings) {
  auto fw = Framework::Create(Profile(), 100, registry_, handle_);
  ASSERT_TRUE(fw.ok());
  for (int i = 0; i < 10; ++i) AddNode("cpu-" + std::to_string(i));
  for (int i = 0; i < 2; ++i) AddNode("taint-" + std::to_string(i));
  api::Pod pod;
  CycleState state;
  auto r = (*fw)->SchedulePod(state, pod, snapshot_, random_);
  EXPECT_EQ(r.node, kNoNode);
  EXPECT_EQ(r.status.code(), Code::kUnschedulable) << "some nodes were only Unschedulable";
  EXPECT_EQ(r.diagnosis.Message(),
            "0/12 nodes are available: 10 Insufficient cpu, 2 node(s) had untolerated taint(s).");
  EXPECT_EQ(r.diagnosis.unschedulable_plugins, std::vector<std::string>{"Test"});
}

TEST_F(FrameworkTest, PercentageOfNodesToScoreStopsEarlyAndRotates) {
  auto fw = Framework::Create(Profile(), 0, registry_, handle_);
  ASSERT_TRUE(fw.ok());
  for (int i = 0; i < 1000; ++i) AddNode("n" + std::to_string(i));
  api::Pod pod;
  CycleState s1, s2;
  auto r1 = (*fw)->SchedulePod(s1, pod, snapshot_, random_);
  EXPECT_EQ(r1.counts.feasible, 420) << "adaptive: 1000 nodes -> 42% -> 420";
  auto r2 = (*fw)->SchedulePod(s2, pod, snapshot_, random_);
  EXPECT_EQ(r2.counts.feasible, 420);
  EXPECT_TRUE(r1.status.ok());
  EXPECT_TRUE(r2.status.ok());
}

TEST_F(FrameworkTest, RecordScoresBreaksEachTotalDownPerPluginWithRawNormalizedAndWeight) {
  config::Profile p = Profile();
  p.plugins.at(config::Point::kScore).enabled.push_back({"Norm", 3, ""});
  auto fw = Framework::Create(p, 100, registry_, handle_);
  ASSERT_TRUE(fw.ok()) << fw.status().ToString();
  for (auto n : {"cpu-1", "ok", "long-ok", "longest-ok"}) AddNode(n);
  api::Pod pod;
  CycleState state;
  SchedulePodOptions opts;
  opts.record_scores = true;
  opts.record_verdicts = true;
  auto r = (*fw)->SchedulePod(state, pod, snapshot_, random_, opts);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  ASSERT_EQ(r.scores.size(), 3u);
  ASSERT_EQ(r.diagnosis.verdicts.size(), 1u);
  EXPECT_EQ(snapshot_.at(r.diagnosis.verdicts[0].node).name(), "cpu-1");
  EXPECT_EQ(r.diagnosis.verdicts[0].status.plugin(), "Test");
  for (const auto& b : r.scores) {
    std::string_view name = snapshot_.at(b.node).name();
    SCOPED_TRACE(std::string(name));
    const int64_t len = static_cast<int64_t>(name.size());
    ASSERT_EQ(b.by_plugin.size(), 2u);
    EXPECT_EQ(b.by_plugin[0].plugin, "Test");
    EXPECT_EQ(b.by_plugin[0].raw, len);
    EXPECT_EQ(b.by_plugin[0].normalized, len) << "no NormalizeScore: normalized is raw";
    EXPECT_EQ(b.by_plugin[0].weight, 1);
    EXPECT_EQ(b.by_plugin[0].weighted, len);
    EXPECT_EQ(b.by_plugin[1].plugin, "Norm");
    EXPECT_EQ(b.by_plugin[1].raw, 10 * len);
    EXPECT_EQ(b.by_plugin[1].normalized, 10 * len * 100 / 100)
        << "longest-ok has 10 chars: max 100";
    EXPECT_EQ(b.by_plugin[1].weight, 3);
    EXPECT_EQ(b.by_plugin[1].weighted, 3 * b.by_plugin[1].normalized);
    EXPECT_EQ(b.total, b.by_plugin[0].weighted + b.by_plugin[1].weighted);
  }
  EXPECT_EQ(snapshot_.at(r.node).name(), "longest-ok");
  ASSERT_EQ(r.top_count, 3);
  EXPECT_EQ(r.top_scores[0].node, r.node);
  EXPECT_GE(r.top_scores[0].total, r.top_scores[1].total);
  EXPECT_GE(r.top_scores[1].total, r.top_scores[2].total);
}

TEST_F(FrameworkTest, TopScoresKeepTheThreeBestWithoutRecordingBreakdowns) {
  auto fw = Framework::Create(Profile(), 100, registry_, handle_);
  ASSERT_TRUE(fw.ok());
  for (auto n : {"a", "bbbb", "cc", "dddddd", "eee"}) AddNode(n);
  api::Pod pod;
  CycleState state;
  auto r = (*fw)->SchedulePod(state, pod, snapshot_, random_);
  ASSERT_TRUE(r.status.ok());
  EXPECT_TRUE(r.scores.empty()) << "breakdowns are recorded only on request";
  ASSERT_EQ(r.top_count, 3);
  EXPECT_EQ(snapshot_.at(r.top_scores[0].node).name(), "dddddd");
  EXPECT_EQ(r.top_scores[0].total, 6);
  EXPECT_EQ(snapshot_.at(r.top_scores[1].node).name(), "bbbb");
  EXPECT_EQ(r.top_scores[1].total, 4);
  EXPECT_EQ(snapshot_.at(r.top_scores[2].node).name(), "eee");
  EXPECT_EQ(r.top_scores[2].total, 3);
}

}  // namespace
}  // namespace gpusched::framework::runtime
