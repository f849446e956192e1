// SPDX-License-Identifier: Apache-2.0
// The decision observer's data (top scores, totals), the -v=2 decision line and the optional
// gpusched.io/decision annotation, through the real scheduler and in-tree plugins.
#include "src/scheduler/decision_log.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <boost/json.hpp>
#include <map>
#include <memory>

#include "src/common/logging.h"
#include "src/kube/accepting_api_client.h"
#include "src/plugins/in_tree_registry.h"
#include "src/testing/builders.h"

namespace gpusched::scheduler {
namespace {

using testing::MakeNode;
using testing::MakePod;

// Confirms binds synchronously and keeps the annotations written with each.
class RecordingApi final : public kube::AcceptingApiClient {
 public:
  kube::ClusterEventHandler* handler = nullptr;
  std::map<std::string, std::map<std::string, std::string>> annotations;  // pod key -> annotations

  common::Status BindPod(const api::Pod& pod, std::string_view node,
                         const std::vector<std::pair<std::string, std::string>>& a) override {
    auto updated = std::make_shared<api::Pod>(pod);
    updated->node_name = std::string(node);
    for (const auto& [k, v] : a) annotations[pod.Key()][k] = v;
    handler->OnPodUpdate(std::make_shared<api::Pod>(pod), updated);
    return common::Status::Ok();
  }
};

class DecisionLogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(plugins::RegisterInTreePlugins(registry_).ok());
    auto cfg = config::DefaultSchedulerConfig();
    cfg.percentage_of_nodes_to_score = 100;
    auto s = Scheduler::Create(cfg, SchedulerDeps{clock_, random_, api_, executor_, registry_});
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    sched_ = std::move(s).value();
    api_.handler = &sched_->events();
    sched_->SetDecisionObserver([this](const Decision& d) {
      decisions_.push_back(d);
      LogDecision(d);
    });
    // Four nodes with different amounts of free GPUs, so their scores differ.
    int i = 0;
    for (int gpus : {8, 4, 2, 1}) {
      sched_->events().OnNodeAdd(MakeNode("gpu-" + std::to_string(i++))
                                     .Cpu("64")
                                     .Memory("512Gi")
                                     .Pods(110)
                                     .Gpus(gpus)
                                     .GpuModel("A100-SXM4-40GB")
                                     .GpuMemoryMiB(40960)
                                     .Ptr());
    }
  }
  void Drain() {
    while (sched_->ScheduleOne()) {
    }
  }
  static std::vector<boost::json::object> JsonLines(const std::string& out) {
    std::vector<boost::json::object> lines;
    size_t start = 0;
    while (start < out.size()) {
      size_t nl = out.find('\n', start);
      if (nl == std::string::npos) nl = out.size();
      boost::system::error_code ec;
      auto v = boost::json::parse(std::string_view(out).substr(start, nl - start), ec);
      EXPECT_FALSE(ec) << "not JSON: " << out.substr(start, nl - start);
      if (!ec && v.is_object()) lines.push_back(v.as_object());
      start = nl + 1;
    }
    return lines;
  }

  common::FakeClock clock_;
  common::Random random_{42};
  RecordingApi api_;
  common::InlineExecutor executor_;
  framework::Registry registry_;
  std::unique_ptr<Scheduler> sched_;
  std::vector<Decision> decisions_;
};

TEST_F(DecisionLogTest, PlacementCarriesTheTopThreeScoresOfTheCycleAndLogsThemAtV2) {
  auto pod = MakePod("default", "train").SchedulerName("gpu-scheduler").Cpu("1").Gpus(1).Ptr();
  // What the cycle will compute, from explain (same snapshot, all nodes scored).
  auto explained = sched_->Explain(*pod);
  ASSERT_TRUE(explained.ok());
  ASSERT_EQ(explained->scores.size(), 4u);
  std::vector<int64_t> totals;
  for (const auto& b : explained->scores) totals.push_back(b.total);
  std::sort(totals.rbegin(), totals.rend());

  common::InitLoggingForTest(common::LogFormat::kJson, 2);
  sched_->events().OnPodAdd(pod);
  Drain();
  ASSERT_EQ(decisions_.size(), 1u);
  const Decision& d = decisions_[0];
  ASSERT_TRUE(d.scheduled);
  EXPECT_EQ(d.counts.feasible, 4);
  EXPECT_EQ(d.counts.total, 4);
  ASSERT_EQ(d.top_scores.size(), 3u);
  EXPECT_EQ(d.top_scores[0].node, d.node) << "the bound node has the best total";
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(d.top_scores[i].score, totals[i]) << i;

  auto lines = JsonLines(common::TakeLogOutputForTest());
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].at("msg").as_string(), "Successfully bound pod to node");
  EXPECT_EQ(lines[0].at("v").as_int64(), 2);
  EXPECT_EQ(lines[0].at("pod").as_string(), "default/train");
  EXPECT_EQ(lines[0].at("node").as_string(), d.node);
  EXPECT_EQ(lines[0].at("feasibleNodes").as_int64(), 4);
  EXPECT_EQ(lines[0].at("topScores").as_string(), FormatTopScores(d));
  EXPECT_EQ(FormatTopScores(d).find(d.node + "=" + std::to_string(totals[0])), 0u);
}

TEST_F(DecisionLogTest, UnschedulablePodLogsTheDiagnosisReasons) {
  common::InitLoggingForTest(common::LogFormat::kJson, 2);
  sched_->events().OnPodAdd(
      MakePod("default", "huge").SchedulerName("gpu-scheduler").Gpus(16).Ptr());
  Drain();
  auto lines = JsonLines(common::TakeLogOutputForTest());
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].at("msg").as_string(), "Unable to schedule pod; no fit; waiting");
  EXPECT_EQ(lines[0].at("feasibleNodes").as_int64(), 0);
  EXPECT_EQ(lines[0].at("reasons").as_string(),
            "0/4 nodes are available: 4 Insufficient nvidia.com/gpu. preemption: 0/4 nodes are "
            "available: 4 No preemption victims found for incoming pod.");
  EXPECT_EQ(lines[0].at("unschedulablePlugins").as_string(), "NodeResourcesFit")
      << "16 GPUs exceed every node's allocatable, which NodeResourcesFit checks first";
}

TEST_F(DecisionLogTest, NothingIsLoggedBelowV2) {
  common::InitLoggingForTest(common::LogFormat::kText, 1);
  sched_->events().OnPodAdd(MakePod("default", "p").SchedulerName("gpu-scheduler").Gpus(1).Ptr());
  Drain();
  EXPECT_EQ(common::TakeLogOutputForTest(), "");
  EXPECT_EQ(decisions_.size(), 1u) << "the observer still runs";
}

TEST_F(DecisionLogTest, DecisionAnnotationIsOffByDefaultAndSummarizesTheChoiceWhenOn) {
  sched_->events().OnPodAdd(MakePod("default", "off").SchedulerName("gpu-scheduler").Gpus(1).Ptr());
  Drain();
  EXPECT_EQ(api_.annotations["default/off"].count(std::string(kDecisionAnnotation)), 0u);

  sched_->SetDecisionAnnotation(true);
  sched_->events().OnPodAdd(MakePod("default", "on").SchedulerName("gpu-scheduler").Gpus(1).Ptr());
  Drain();
  ASSERT_EQ(decisions_.size(), 2u);
  const Decision& d = decisions_[1];
  ASSERT_EQ(api_.annotations["default/on"].count(std::string(kDecisionAnnotation)), 1u);
  const std::string& value = api_.annotations["default/on"][std::string(kDecisionAnnotation)];
  boost::system::error_code ec;
  auto v = boost::json::parse(value, ec);
  ASSERT_FALSE(ec) << value;
  const auto& o = v.as_object();
  EXPECT_EQ(o.at("node").as_string(), d.node);
  EXPECT_EQ(o.at("score").as_int64(), d.top_scores.at(0).score);
  // The runner-up is the best of the top scores that is not the chosen node (on equal totals the
  // tie-break may choose any of them).
  const auto& runner_up =
      d.top_scores.at(0).node == d.node ? d.top_scores.at(1) : d.top_scores.at(0);
  EXPECT_EQ(o.at("runnerUp").as_object().at("node").as_string(), runner_up.node);
  EXPECT_EQ(o.at("runnerUp").as_object().at("score").as_int64(), runner_up.score);
  EXPECT_EQ(o.at("feasible").as_int64(), d.counts.feasible);
  EXPECT_GE(d.counts.feasible, 3) << "the first pod used one GPU of one node at most";
  EXPECT_EQ(o.at("total").as_int64(), 4);
  EXPECT_EQ(api_.annotations["default/on"].count("gpusched.io/gpu-devices"), 1u)
      << "the device annotation is still written";
}

}  // namespace
}  // namespace gpusched::scheduler
