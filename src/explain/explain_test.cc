// SPDX-License-Identifier: Apache-2.0
#include "src/explain/explain.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <boost/json.hpp>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "src/framework/cycle_state.h"
#include "src/framework/registry.h"
#include "src/testing/fake_handle.h"

namespace gpusched::explain {
namespace {

using framework::Code;
using framework::NodeIndex;
using framework::runtime::ScheduleResult;

// QueueSort, Filter and Bind: rejects "cpu*" nodes (Unschedulable) and "taint*" nodes
// (UnschedulableAndUnresolvable).
class GatePlugin final : public framework::QueueSortPlugin,
                         public framework::FilterPlugin,
                         public framework::BindPlugin {
 public:
  std::string_view Name() const override { return "Gate"; }
  bool Less(const framework::QueuedPodInfo&, const framework::QueuedPodInfo&) const override {
    return false;
  }
  framework::Status Filter(const framework::CycleState&, const api::Pod&,
                           const framework::NodeInfo& n) const override {
    if (n.name().starts_with("cpu")) return framework::Status::Unschedulable("Insufficient cpu");
    if (n.name().starts_with("taint"))
      return framework::Status::Unresolvable("node(s) had untolerated taint(s)");
    return framework::Status::Success();
  }
  framework::Status Bind(framework::CycleState&, const api::Pod&, std::string_view) override {
    return framework::Status::Success();
  }
};

// Scores the length of the node's name; no NormalizeScore.
class LenPlugin final : public framework::ScorePlugin {
 public:
  std::string_view Name() const override { return "Len"; }
  void ScoreNodes(const framework::CycleState&, const api::Pod&,
                  const framework::Snapshot& snapshot, std::span<const framework::NodeIndex> nodes,
                  std::span<int64_t> out) const override {
    framework::ScoreEach(snapshot, nodes, out, [&](const framework::NodeInfo& n) -> int64_t {
      return static_cast<int64_t>(n.name().size());
    });
  }
};

// Scores 10 × the digit the node's name ends in, normalized to 0..100 of the best node. Skipped
// (PreScore) for pods whose name starts with "cpu".
class GpuPlugin final : public framework::PreScorePlugin, public framework::ScorePlugin {
 public:
  std::string_view Name() const override { return "Gpu"; }
  framework::Status PreScore(framework::CycleState&, const api::Pod& pod,
                             const framework::Snapshot&, std::span<const NodeIndex>) override {
    return pod.meta.name.starts_with("cpu") ? framework::Status::Skip()
                                            : framework::Status::Success();
  }
  void ScoreNodes(const framework::CycleState&, const api::Pod&,
                  const framework::Snapshot& snapshot, std::span<const framework::NodeIndex> nodes,
                  std::span<int64_t> out) const override {
    framework::ScoreEach(snapshot, nodes, out, [&](const framework::NodeInfo& n) -> int64_t {
      return 10 * (n.name().back() - '0');
    });
  }
  bool HasNormalizeScore() const override { return true; }
  framework::Status NormalizeScore(const framework::CycleState&, const api::Pod&,
                                   std::span<int64_t> scores) const override {
    int64_t max = 1;
    for (int64_t s : scores) max = std::max(max, s);
    for (int64_t& s : scores) s = s * 100 / max;
    return framework::Status::Success();
  }
};

// Scores 10 × the digit the node's name ends in and normalizes every score to 100, so all totals
// tie; its raw score breaks the tie (TieBreakRule kRawScore); puts the raw score in words.
class StepPlugin final : public framework::ScorePlugin {
 public:
  std::string_view Name() const override { return "Step"; }
  void ScoreNodes(const framework::CycleState&, const api::Pod&,
                  const framework::Snapshot& snapshot, std::span<const framework::NodeIndex> nodes,
                  std::span<int64_t> out) const override {
    framework::ScoreEach(snapshot, nodes, out, [&](const framework::NodeInfo& n) -> int64_t {
      return 10 * (n.name().back() - '0');
    });
  }
  bool HasNormalizeScore() const override { return true; }
  framework::Status NormalizeScore(const framework::CycleState&, const api::Pod&,
                                   std::span<int64_t> scores) const override {
    for (int64_t& s : scores) s = 100;
    return framework::Status::Success();
  }
  TieBreak TieBreakRule() const override { return TieBreak::kRawScore; }
  std::string ExplainScore(const framework::CycleState&, const api::Pod&,
                           const framework::NodeInfo&, int64_t raw) const override {
    return "digit " + std::to_string(raw / 10);
  }
};

template <typename P>
void Register(framework::Registry& registry, const std::string& name) {
  ASSERT_TRUE(registry
                  .Register(name,
                            [](const boost::json::value&,
                               framework::Handle&) -> common::StatusOr<framework::PluginPtr> {
                              return framework::PluginPtr(std::make_unique<P>());
                            })
                  .ok());
}

api::Pod Pod(const std::string& name, const std::string& node = "") {
  api::Pod pod;
  pod.meta.namespace_ = "ml";
  pod.meta.name = name;
  pod.node_name = node;
  return pod;
}

Subject SubjectFor(const api::Pod& pod, std::string bound = "") {
  return Subject{pod.Key(), "gpu", "", std::move(bound), "hand-made"};
}

std::vector<std::string> Names(const Explanation& ex) {
  std::vector<std::string> names;
  for (const auto& n : ex.nodes) names.push_back(n.name);
  return names;
}

const NodeRow& Row(const Explanation& ex, std::string_view name) {
  auto it = std::find_if(ex.nodes.begin(), ex.nodes.end(),
                         [&](const NodeRow& n) { return n.name == name; });
  EXPECT_NE(it, ex.nodes.end()) << name;
  return *it;
}

// A real Framework (Gate; Len weight 1, Gpu weight 2) over a hand-filled snapshot, run as
// Scheduler::Explain runs it.
class ExplainTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Register<GatePlugin>(registry_, "Gate");
    Register<LenPlugin>(registry_, "Len");
    Register<GpuPlugin>(registry_, "Gpu");
    Register<StepPlugin>(registry_, "Step");
    UseScorePlugins({{"Len", 1}, {"Gpu", 2}});
  }
  // Rebuilds the framework with these Score plugins (name, weight); Gpu's PreScore stays on.
  void UseScorePlugins(const std::vector<std::pair<std::string, int32_t>>& score) {
    config::Profile p;
    p.path = "profiles[0]";
    p.scheduler_name = "gpu";
    for (auto point : {config::Point::kQueueSort, config::Point::kFilter, config::Point::kPreScore,
                       config::Point::kScore, config::Point::kBind}) {
      p.plugins.at(point).disabled.push_back({"*", 0, ""});
    }
    for (auto point : {config::Point::kQueueSort, config::Point::kFilter, config::Point::kBind}) {
      p.plugins.at(point).enabled.push_back({"Gate", 0, ""});
    }
    p.plugins.at(config::Point::kPreScore).enabled.push_back({"Gpu", 0, ""});
    for (const auto& [name, weight] : score) {
      p.plugins.at(config::Point::kScore).enabled.push_back({name, weight, ""});
    }
    auto fw = framework::runtime::Framework::Create(p, 100, registry_, handle_);
    ASSERT_TRUE(fw.ok()) << fw.status().ToString();
    fw_ = std::move(fw).value();
  }
  void AddNode(const std::string& name) {
    auto n = std::make_shared<api::Node>();
    n->meta.name = name;
    NodeIndex i = static_cast<NodeIndex>(snapshot_.nodes().size());
    framework::NodeInfo& ni = snapshot_.MutableSlotForCache(i);
    ni.node = n;
    ni.index = i;
    snapshot_.IndexNameForCache(name, i);
    snapshot_.SetNodeCountForCache(snapshot_.num_nodes() + 1, 1);
  }
  void AddEmptySlot() {
    snapshot_.MutableSlotForCache(static_cast<NodeIndex>(snapshot_.nodes().size()));
  }
  ScheduleResult Schedule(const api::Pod& pod) {
    framework::CycleState state;
    framework::runtime::SchedulePodOptions opts;
    opts.record_verdicts = true;
    opts.record_scores = true;
    opts.score_all_nodes = true;
    return fw_->SchedulePod(state, pod, snapshot_, random_, opts);
  }

  framework::Registry registry_;
  testing::FakeHandle handle_;
  std::unique_ptr<framework::runtime::Framework> fw_;
  framework::Snapshot snapshot_;
  common::Random random_{1};
};

// Len + 2 × Gpu: c-3 3+200=203, b-2 3+2×66=135, dd-1 4+2×33=70, a-1 3+2×33=69.
TEST_F(ExplainTest, RowsAreFeasibleByTotalThenRejectedByNameWithTheirReasons) {
  for (auto n : {"taint-1", "b-2", "cpu-1", "a-1", "c-3", "dd-1"}) AddNode(n);
  api::Pod pod = Pod("train");
  Explanation ex = Build(SubjectFor(pod), Schedule(pod), snapshot_);

  EXPECT_EQ(Names(ex), (std::vector<std::string>{"c-3", "b-2", "dd-1", "a-1", "cpu-1", "taint-1"}));
  EXPECT_EQ(ex.outcome, Outcome::kSchedulable);
  EXPECT_EQ(ex.message, "");
  EXPECT_EQ(ex.chosen, "c-3");
  EXPECT_EQ(ex.counts.total, 6);
  EXPECT_EQ(ex.counts.evaluated, 6);
  EXPECT_EQ(ex.counts.feasible, 4);

  const NodeRow& cpu = Row(ex, "cpu-1");
  EXPECT_FALSE(cpu.feasible);
  EXPECT_EQ(cpu.code, "Unschedulable");
  EXPECT_EQ(cpu.plugin, "Gate");
  EXPECT_EQ(cpu.reason, "Insufficient cpu");
  EXPECT_FALSE(cpu.scores.has_value());
  const NodeRow& taint = Row(ex, "taint-1");
  EXPECT_EQ(taint.code, "UnschedulableAndUnresolvable");
  EXPECT_EQ(taint.reason, "node(s) had untolerated taint(s)");

  const NodeRow& best = ex.nodes[0];
  EXPECT_TRUE(best.feasible);
  EXPECT_TRUE(best.chosen);
  EXPECT_EQ(best.code, "");
  ASSERT_TRUE(best.scores.has_value());
  ASSERT_EQ(best.scores->by_plugin.size(), 2u) << "the profile's score order";
  EXPECT_EQ(best.scores->by_plugin[0].plugin, "Len");
  EXPECT_EQ(best.scores->by_plugin[0].raw, 3);
  EXPECT_EQ(best.scores->by_plugin[0].weighted, 3);
  EXPECT_EQ(best.scores->by_plugin[1].plugin, "Gpu");
  EXPECT_EQ(best.scores->by_plugin[1].raw, 30);
  EXPECT_EQ(best.scores->by_plugin[1].normalized, 100);
  EXPECT_EQ(best.scores->by_plugin[1].weight, 2);
  EXPECT_EQ(best.scores->by_plugin[1].weighted, 200);
  EXPECT_EQ(best.scores->total, 203);
  for (const auto& n : ex.nodes) {
    EXPECT_EQ(n.chosen, n.name == "c-3") << n.name;
    EXPECT_FALSE(n.bound) << n.name;
  }
  EXPECT_EQ(Row(ex, "dd-1").scores->total, 70);
  EXPECT_EQ(Row(ex, "a-1").scores->total, 69);
}

TEST_F(ExplainTest, TextShowsEveryVerdictTheBreakdownAndTheRunnerUp) {
  for (auto n : {"taint-1", "b-2", "cpu-1", "c-3"}) AddNode(n);
  api::Pod pod = Pod("train");
  Explanation ex = Build(SubjectFor(pod), Schedule(pod), snapshot_);
  // b-2: Len 3, Gpu 20 -> 66 (of 30) x 2 = 132; total 135.
  EXPECT_EQ(FormatText(ex),
            "Pod ml/train (profile gpu, 4 nodes, hand-made)\n"
            "\n"
            "FILTER\n"
            "NODE     VERDICT                       PLUGIN  REASON\n"
            "c-3      Feasible\n"
            "b-2      Feasible\n"
            "cpu-1    Unschedulable                 Gate    Insufficient cpu\n"
            "taint-1  UnschedulableAndUnresolvable  Gate    node(s) had untolerated taint(s)\n"
            "\n"
            "SCORE (feasible nodes, highest total first; weighted = normalized x weight)\n"
            "NODE  PLUGIN          RAW  NORMALIZED  WEIGHT  WEIGHTED\n"
            "c-3   Len               3           3       1         3\n"
            "      Gpu              30         100       2       200\n"
            "      TOTAL (chosen)                                203\n"
            "b-2   Len               3           3       1         3\n"
            "      Gpu              20          66       2       132\n"
            "      TOTAL                                         135\n"
            "\n"
            "Result: c-3 (total 203); runner-up b-2 (total 135); 2/4 nodes feasible\n");
}

TEST_F(ExplainTest, JsonHasTheFieldsInOrderAndAFilterOnlyForRejectedNodes) {
  for (auto n : {"cpu-1", "b-2", "c-3"}) AddNode(n);
  api::Pod pod = Pod("train");
  Explanation ex = Build(SubjectFor(pod), Schedule(pod), snapshot_);
  EXPECT_EQ(
      boost::json::serialize(ToJson(ex)),
      R"({"pod":"ml/train","profile":"gpu","source":"hand-made","boundNode":null,)"
      R"("status":"schedulable","chosenNode":"c-3","nominatedNode":null,"totalNodes":3,"evaluatedNodes":3,"feasibleNodes":2,)"
      R"("tieBreak":{"rule":"random","plugin":null},"nodes":[)"
      R"({"name":"c-3","feasible":true,"chosen":true,"bound":false,"scores":[)"
      R"({"plugin":"Len","raw":3,"normalized":3,"weight":1,"weighted":3,"means":null},)"
      R"({"plugin":"Gpu","raw":30,"normalized":100,"weight":2,"weighted":200,"means":null}],"total":203},)"
      R"({"name":"b-2","feasible":true,"chosen":false,"bound":false,"scores":[)"
      R"({"plugin":"Len","raw":3,"normalized":3,"weight":1,"weighted":3,"means":null},)"
      R"({"plugin":"Gpu","raw":20,"normalized":66,"weight":2,"weighted":132,"means":null}],"total":135},)"
      R"({"name":"cpu-1","feasible":false,"chosen":false,"bound":false,)"
      R"("filter":{"code":"Unschedulable","plugin":"Gate","reason":"Insufficient cpu"}}]})");
}

TEST_F(ExplainTest, APluginSkippedForThePodIsAbsentFromEveryBreakdown) {
  for (auto n : {"b-2", "dd-1", "c-3"}) AddNode(n);
  api::Pod pod = Pod("cpu-job");  // GpuPlugin's PreScore skips it
  Explanation ex = Build(SubjectFor(pod), Schedule(pod), snapshot_);
  ASSERT_EQ(ex.outcome, Outcome::kSchedulable);
  EXPECT_EQ(ex.chosen, "dd-1");
  for (const auto& n : ex.nodes) {
    ASSERT_TRUE(n.scores.has_value()) << n.name;
    ASSERT_EQ(n.scores->by_plugin.size(), 1u) << n.name;
    EXPECT_EQ(n.scores->by_plugin[0].plugin, "Len");
    EXPECT_EQ(n.scores->total, n.scores->by_plugin[0].weighted);
  }
  std::string text = FormatText(ex);
  EXPECT_EQ(text.find("Gpu"), std::string::npos) << text;
  EXPECT_NE(text.find("dd-1  Len               4           4       1         4\n"
                      "      TOTAL (chosen)                                  4\n"),
            std::string::npos)
      << text;
  boost::json::object j = ToJson(ex);
  for (const auto& n : j.at("nodes").as_array()) {
    EXPECT_EQ(n.at("scores").as_array().size(), 1u);
  }
}

TEST_F(ExplainTest, EqualTotalsPutTheChosenNodeFirstThenTheOthersByName) {
  for (auto n : {"c-3", "a-1", "b-2"}) AddNode(n);  // Len only (Gpu skipped): every total is 3
  api::Pod pod = Pod("cpu-job");
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    random_ = common::Random(seed);
    Explanation ex = Build(SubjectFor(pod), Schedule(pod), snapshot_);
    ASSERT_EQ(ex.nodes.size(), 3u);
    EXPECT_EQ(ex.nodes[0].name, ex.chosen);
    EXPECT_TRUE(ex.nodes[0].chosen);
    EXPECT_LT(ex.nodes[1].name, ex.nodes[2].name);
    const std::string text = FormatText(ex);
    EXPECT_NE(text.find("Tie: 3 nodes share the highest total 3; chosen among them uniformly at "
                        "random (--seed), as kube-scheduler's selectHost\n"),
              std::string::npos)
        << text;
  }
}

TEST_F(ExplainTest, ATieBrokenByRawScoresNamesThePluginAndBothScoresInWords) {
  UseScorePlugins({{"Step", 1}});
  for (auto n : {"a-1", "b-3", "c-2"}) AddNode(n);
  api::Pod pod = Pod("train");
  Explanation ex = Build(SubjectFor(pod), Schedule(pod), snapshot_);
  ASSERT_EQ(ex.chosen, "b-3");  // the highest raw score among the equal totals
  EXPECT_EQ(ex.tie_rule, framework::ScorePlugin::TieBreak::kRawScore);
  const std::string text = FormatText(ex);
  EXPECT_NE(text.find("NODE  PLUGIN          RAW  NORMALIZED  WEIGHT  WEIGHTED  RAW SCORE MEANS\n"
                      "b-3   Step             30         100       1       100  digit 3\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("Tie: 3 nodes share the highest total 100; Step's raw score breaks it (the "
                      "profile's tie-break rule): b-3 30 > c-2 20\n"),
            std::string::npos)
      << text;
  boost::json::object j = ToJson(ex);
  EXPECT_EQ(boost::json::serialize(j.at("tieBreak")), R"({"rule":"rawScore","plugin":"Step"})");
  EXPECT_EQ(j.at("nodes").as_array()[0].at("scores").as_array()[0].at("means"), "digit 3");
}

TEST_F(ExplainTest, NoTieLineWhenTheChosenTotalIsAlone) {
  for (auto n : {"b-2", "c-3"}) AddNode(n);
  api::Pod pod = Pod("train");
  const std::string text = FormatText(Build(SubjectFor(pod), Schedule(pod), snapshot_));
  EXPECT_EQ(text.find("Tie:"), std::string::npos) << text;
}

TEST_F(ExplainTest, NoFitGivesTheFitErrorAndNoScoreTable) {
  for (auto n : {"taint-1", "cpu-2", "cpu-1"}) AddNode(n);
  api::Pod pod = Pod("huge");
  Explanation ex = Build(SubjectFor(pod), Schedule(pod), snapshot_);
  EXPECT_EQ(ex.outcome, Outcome::kUnschedulable);
  EXPECT_EQ(ex.chosen, "");
  EXPECT_EQ(Names(ex), (std::vector<std::string>{"cpu-1", "cpu-2", "taint-1"}));
  EXPECT_EQ(ex.message,
            "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient cpu.");
  EXPECT_EQ(FormatText(ex),
            "Pod ml/huge (profile gpu, 3 nodes, hand-made)\n"
            "\n"
            "FILTER\n"
            "NODE     VERDICT                       PLUGIN  REASON\n"
            "cpu-1    Unschedulable                 Gate    Insufficient cpu\n"
            "cpu-2    Unschedulable                 Gate    Insufficient cpu\n"
            "taint-1  UnschedulableAndUnresolvable  Gate    node(s) had untolerated taint(s)\n"
            "\n"
            "Result: unschedulable: 0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 "
            "Insufficient cpu.\n");
  boost::json::object j = ToJson(ex);
  EXPECT_EQ(j.at("status"), "unschedulable");
  EXPECT_EQ(j.at("message").as_string(), ex.message);
  EXPECT_TRUE(j.at("chosenNode").is_null());
  EXPECT_EQ(j.at("feasibleNodes"), 0);
}

// A gang member whose gang waits for the pods its preemption evicts says so (issue #36), not
// "the gang does not fit".
TEST_F(ExplainTest, AGangAwaitingItsVictimsSaysSo) {
  for (auto n : {"cpu-1"}) AddNode(n);
  api::Pod pod = Pod("ft-0");
  Explanation ex = Build(SubjectFor(pod), Schedule(pod), snapshot_);
  ex.gang = GangRow{"gang PodGroup ml/ft",
                    2,
                    2,
                    false,
                    true,
                    "gang PodGroup ml/ft waits for the pods it preempted to leave (ml/low on a); "
                    "members nominated: ml/ft-0 -> a, ml/ft-1 -> a",
                    {}};
  const std::string text = FormatText(ex);
  EXPECT_NE(text.find("Gang: gang PodGroup ml/ft (minMember 2, 2 pods exist): gang PodGroup ml/ft "
                      "waits for the pods it preempted to leave (ml/low on a)"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("does not fit"), std::string::npos) << text;
  boost::json::object j = ToJson(ex);
  EXPECT_EQ(j.at("gang").at("awaitingVictims"), true);
  EXPECT_EQ(j.at("gang").at("fits"), false);
}

TEST_F(ExplainTest, OnlyUnresolvableRejectionsAreUnresolvable) {
  AddNode("taint-1");
  api::Pod pod = Pod("any");
  Explanation ex = Build(SubjectFor(pod), Schedule(pod), snapshot_);
  EXPECT_EQ(ex.outcome, Outcome::kUnresolvable);
  EXPECT_EQ(ToJson(ex).at("status"), "unresolvable");
}

TEST_F(ExplainTest, ABoundPodNamesItsNodeAndWhetherItIsStillTheBest) {
  for (auto n : {"b-2", "c-3"}) AddNode(n);
  api::Pod pod = Pod("train");  // the caller clears spec.nodeName, as the CLI does
  Explanation ex = Build(SubjectFor(pod, "b-2"), Schedule(pod), snapshot_);
  EXPECT_TRUE(Row(ex, "b-2").bound);
  EXPECT_FALSE(Row(ex, "c-3").bound);
  std::string text = FormatText(ex);
  EXPECT_NE(text.find("Bound to b-2; explained as if unbound (its own usage removed from b-2)\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("b-2 (bound)  Feasible\n"), std::string::npos) << text;
  EXPECT_NE(text.find("The pod is on b-2; with the cluster as it is now c-3 would be chosen.\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(ToJson(ex).at("boundNode"), "b-2");

  Explanation still = Build(SubjectFor(pod, "c-3"), Schedule(pod), snapshot_);
  EXPECT_NE(FormatText(still).find("The pod's node c-3 is still the best choice.\n"),
            std::string::npos);
}

TEST_F(ExplainTest, TheExplanationOutlivesTheResultAndTheFramework) {
  for (auto n : {"cpu-1", "b-2", "c-3"}) AddNode(n);
  api::Pod pod = Pod("train");
  Explanation ex;
  {
    ScheduleResult r = Schedule(pod);
    ex = Build(SubjectFor(pod), r, snapshot_);
  }
  fw_.reset();
  snapshot_ = framework::Snapshot();
  // Plugin names and reasons were views into the framework's storage; the rows own copies.
  EXPECT_EQ(Row(ex, "cpu-1").plugin, "Gate");
  EXPECT_EQ(Row(ex, "c-3").scores->by_plugin[1].plugin, "Gpu");
  EXPECT_NE(FormatText(ex).find("Insufficient cpu"), std::string::npos);
}

// Hand-made results: what a real cycle rarely gives.

TEST_F(ExplainTest, APreFilterRejectionAppliesToEveryNodeAndEmptySlotsAreSkipped) {
  AddNode("n-1");
  AddEmptySlot();
  AddNode("n-2");
  ScheduleResult r;
  r.diagnosis.num_nodes = 2;
  r.counts.total = 2;
  r.status = framework::Status::Unresolvable("pod has unbound PersistentVolumeClaims");
  r.diagnosis.pre_filter_status = r.status;  // no plugin set: shown as "PreFilter"
  Explanation ex = Build(SubjectFor(Pod("p")), r, snapshot_);
  ASSERT_EQ(Names(ex), (std::vector<std::string>{"n-1", "n-2"}));
  for (const auto& n : ex.nodes) {
    EXPECT_EQ(n.code, "UnschedulableAndUnresolvable");
    EXPECT_EQ(n.plugin, "PreFilter");
    EXPECT_EQ(n.reason, "pod has unbound PersistentVolumeClaims");
  }
  EXPECT_EQ(ex.outcome, Outcome::kUnresolvable);
  EXPECT_EQ(ex.message, "0/2 nodes are available: pod has unbound PersistentVolumeClaims.");

  r.diagnosis.pre_filter_status =
      framework::Status::Unschedulable("waiting").WithPlugin("VolumeBinding");
  EXPECT_EQ(Build(SubjectFor(Pod("p")), r, snapshot_).nodes[0].plugin, "VolumeBinding");
}

TEST_F(ExplainTest, ANodeWithoutVerdictOrScoreIsNotEvaluated) {
  AddNode("n-1");
  AddNode("n-2");
  ScheduleResult r;
  r.diagnosis.num_nodes = 2;
  r.counts.total = 2;
  r.counts.evaluated = 1;
  r.status = framework::Status::Error("Filter: boom").WithPlugin("Broken");
  r.diagnosis.verdicts.push_back({0, framework::Status::Unschedulable("full").WithPlugin("Gate")});
  Explanation ex = Build(SubjectFor(Pod("p")), r, snapshot_);
  EXPECT_EQ(ex.outcome, Outcome::kError);
  EXPECT_EQ(ex.message, r.status.ToString());
  EXPECT_EQ(Row(ex, "n-2").code, "");
  std::string text = FormatText(ex);
  EXPECT_NE(text.find("n-1   Unschedulable  Gate    full\n"), std::string::npos) << text;
  EXPECT_NE(text.find("n-2   NotEvaluated\n"), std::string::npos) << text;
  EXPECT_NE(text.find("Result: error: " + r.status.ToString() + "\n"), std::string::npos) << text;
  boost::json::object j = ToJson(ex);
  EXPECT_EQ(j.at("status"), "error");
  EXPECT_EQ(j.at("evaluatedNodes"), 1);
  const auto& n2 = j.at("nodes").as_array().at(1).as_object();
  EXPECT_EQ(n2.at("name"), "n-2");
  EXPECT_EQ(n2.at("filter").at("code"), "NotEvaluated");
  EXPECT_FALSE(n2.contains("scores"));
}

TEST(ChooseProfileTest, FlagThenThePodsOwnThenTheFirstWithANote) {
  ProfileChoice flag = ChooseProfile("other", "gpu", true, "default-scheduler");
  EXPECT_EQ(flag.profile, "other");
  EXPECT_EQ(flag.note, "");
  ProfileChoice own = ChooseProfile("", "gpu", true, "default-scheduler");
  EXPECT_EQ(own.profile, "gpu");
  EXPECT_EQ(own.note, "");
  ProfileChoice first = ChooseProfile("", "nope", false, "default-scheduler");
  EXPECT_EQ(first.profile, "default-scheduler");
  EXPECT_EQ(first.note,
            "spec.schedulerName \"nope\" is not a profile of the config; explained with profile "
            "\"default-scheduler\"");
}

TEST(ExplainJsonTest, AProfileNoteAndAMessageAppearOnlyWhenSet) {
  Explanation ex;
  ex.subject = Subject{"ml/p", "default-scheduler", "", "", "x"};
  boost::json::object j = ToJson(ex);
  EXPECT_FALSE(j.contains("profileNote"));
  EXPECT_FALSE(j.contains("message"));
  EXPECT_TRUE(j.at("nodes").as_array().empty());
  ex.subject.profile_note = "why";
  EXPECT_EQ(ToJson(ex).at("profileNote"), "why");
  EXPECT_NE(FormatText(ex).find("Note: why\n"), std::string::npos);
}

TEST(OutcomeNameTest, NamesEveryOutcome) {
  EXPECT_EQ(OutcomeName(Outcome::kSchedulable), "schedulable");
  EXPECT_EQ(OutcomeName(Outcome::kUnschedulable), "unschedulable");
  EXPECT_EQ(OutcomeName(Outcome::kUnresolvable), "unresolvable");
  EXPECT_EQ(OutcomeName(Outcome::kError), "error");
}

TEST_F(ExplainTest, PreemptionListsTheVictimsOnEachTriedNodeAndTheNominatedOneFirst) {
  for (auto n : {"n-1", "n-2", "n-3", "n-4"}) AddNode(n);
  auto victim = [](const std::string& name, int32_t priority) {
    auto p = std::make_shared<api::Pod>(Pod(name));
    p->priority = priority;
    return api::PodPtr(p);
  };
  ScheduleResult r;
  r.diagnosis.num_nodes = 4;
  r.counts.total = 4;
  r.status = framework::Status::Unschedulable({});
  r.diagnosis.reason_counts = {{"Insufficient nvidia.com/gpu", 3}, {"node(s) had taints", 1}};
  for (NodeIndex i : {0, 1, 2}) {
    r.diagnosis.verdicts.push_back(
        {i, framework::Status::Unschedulable("Insufficient nvidia.com/gpu").WithPlugin("GpuFit")});
  }
  r.diagnosis.verdicts.push_back(
      {3, framework::Status::Unresolvable("node(s) had taints").WithPlugin("TaintToleration")});
  r.post_filter_ran = true;
  r.post_filter.nominated_node = "n-2";
  r.post_filter.victims = {victim("b", 20), victim("a", 10)};
  r.post_filter.per_node = {
      {1, framework::Status::Success(), r.post_filter.victims, 0},
      {2, framework::Status::Unresolvable("No preemption victims found for incoming pod"), {}, 0},
      {0, framework::Status::Success(), {victim("c", 5)}, 1},
  };
  Explanation ex = Build(SubjectFor(Pod("big")), r, snapshot_);
  EXPECT_EQ(ex.nominated, "n-2");
  ASSERT_TRUE(Row(ex, "n-1").preemption.has_value());
  EXPECT_EQ(Row(ex, "n-1").preemption->pdb_violations, 1);
  EXPECT_FALSE(Row(ex, "n-3").preemption->possible);
  EXPECT_FALSE(Row(ex, "n-4").preemption.has_value()) << "preemption did not try it";
  EXPECT_EQ(FormatText(ex),
            "Pod ml/big (profile gpu, 4 nodes, hand-made)\n"
            "\n"
            "FILTER\n"
            "NODE  VERDICT                       PLUGIN           REASON\n"
            "n-1   Unschedulable                 GpuFit           Insufficient nvidia.com/gpu\n"
            "n-2   Unschedulable                 GpuFit           Insufficient nvidia.com/gpu\n"
            "n-3   Unschedulable                 GpuFit           Insufficient nvidia.com/gpu\n"
            "n-4   UnschedulableAndUnresolvable  TaintToleration  node(s) had taints\n"
            "\n"
            "PREEMPTION (nodes where evicting pods of lower priority was tried; most important "
            "victim first)\n"
            "NODE             VICTIMS (PRIORITY)    PDB VIOLATIONS  PLUGIN  REASON\n"
            "n-2 (nominated)  ml/b (20), ml/a (10)               0\n"
            "n-1              ml/c (5)                           1\n"
            "n-3                                                            No preemption victims "
            "found for incoming pod\n"
            "\n"
            "Result: unschedulable: 0/4 nodes are available: 1 node(s) had taints, 3 Insufficient "
            "nvidia.com/gpu.\n"
            "Preemption would evict ml/b (20), ml/a (10) on n-2 and nominate the pod there.\n");
  boost::json::object j = ToJson(ex);
  EXPECT_EQ(j.at("nominatedNode"), "n-2");
  const auto& n2 = j.at("nodes").as_array().at(1).as_object();
  EXPECT_EQ(n2.at("name"), "n-2");
  EXPECT_EQ(boost::json::serialize(n2.at("preemption")),
            R"({"possible":true,"victims":[{"pod":"ml/b","priority":20},)"
            R"({"pod":"ml/a","priority":10}],"pdbViolations":0})");
  EXPECT_EQ(boost::json::serialize(j.at("nodes").as_array().at(2).at("preemption")),
            R"({"possible":false,"victims":[],"pdbViolations":0,"plugin":"",)"
            R"("reason":"No preemption victims found for incoming pod"})");
}

TEST_F(ExplainTest, ConsolidationNamesThePodsThatWouldMoveAndWhere) {
  for (auto n : {"n-1", "n-2"}) AddNode(n);
  ScheduleResult r;
  r.diagnosis.num_nodes = 2;
  r.counts.total = 2;
  r.status = framework::Status::Unschedulable({});
  r.diagnosis.reason_counts = {{"Insufficient nvidia.com/gpu", 2}};
  r.post_filter_ran = true;
  r.post_filter.nominated_node = "n-1";
  r.post_filter.victims = {std::make_shared<api::Pod>(Pod("embedder-1")),
                           std::make_shared<api::Pod>(Pod("embedder-2"))};
  r.post_filter.destinations = {"n-2", "n-3"};
  Explanation ex = Build(SubjectFor(Pod("big")), r, snapshot_);
  const std::string text = FormatText(ex);
  EXPECT_NE(text.find("Consolidation would move ml/embedder-1 to n-2, ml/embedder-2 to n-3 and "
                      "nominate the pod on n-1.\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(boost::json::serialize(ToJson(ex).at("consolidation")),
            R"([{"pod":"ml/embedder-1","to":"n-2"},{"pod":"ml/embedder-2","to":"n-3"}])");
}

TEST(ExplainDraTest, ClaimsOnTheNodeInTextAndJson) {
  Explanation ex;
  ex.subject.pod = "ml/train";
  ex.subject.profile = "gpu-scheduler";
  ex.chosen = "gpu-0";
  DraRow d;
  d.node = "gpu-0";
  DraRequestRow r;
  r.claim = "ml/train-gpus-x7k2p";
  r.request = "gpus";
  r.device_class = "gpu.nvidia.com";
  r.count = 2;
  r.devices = {{"gpu.nvidia.com/gpu-0/gpu-0", "selected", true},
               {"gpu.nvidia.com/gpu-0/gpu-1", "held by claim ml/other", false},
               {"gpu.nvidia.com/gpu-0/gpu-4",
                "constraint mismatch: gpu.nvidia.com/cliqueId 1, "
                "picked 0",
                false}};
  r.unreachable = 8;
  d.requests.push_back(r);
  ex.dra = d;
  const std::string text = FormatText(ex);
  EXPECT_NE(text.find("\nCLAIMS on gpu-0\n"
                      "  ml/train-gpus-x7k2p request gpus: gpu.nvidia.com x2\n"
                      "    DEVICE                        VERDICT\n"
                      "    * gpu.nvidia.com/gpu-0/gpu-0  selected\n"
                      "      gpu.nvidia.com/gpu-0/gpu-1  held by claim ml/other\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("    8 more device(s) not reachable from the node\n"), std::string::npos);
  const boost::json::object json = ToJson(ex);
  EXPECT_EQ(boost::json::serialize(json.at("claims")),
            R"({"node":"gpu-0","message":"","requests":[{"claim":"ml/train-gpus-x7k2p",)"
            R"("request":"gpus","deviceClass":"gpu.nvidia.com","selectors":"","count":2,)"
            R"("devices":[{"device":"gpu.nvidia.com/gpu-0/gpu-0","verdict":"selected",)"
            R"("selected":true},{"device":"gpu.nvidia.com/gpu-0/gpu-1","verdict":)"
            R"("held by claim ml/other","selected":false},{"device":"gpu.nvidia.com/gpu-0/)"
            R"(gpu-4","verdict":"constraint mismatch: gpu.nvidia.com/cliqueId 1, picked 0",)"
            R"("selected":false}],"unreachable":8}]})");
}

}  // namespace
}  // namespace gpusched::explain
