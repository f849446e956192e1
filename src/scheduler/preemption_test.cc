// SPDX-License-Identifier: Apache-2.0
// The scheduler carrying out preemption, against the simulator's in-memory cluster (a real
// kube::ApiClient that deletes pods and delivers the events back): victims get the
// DisruptionTarget condition and are deleted, the preemptor is nominated and then binds on its
// nominated node once the victims are gone; the metrics count attempts and victims.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>

#include "src/common/clock.h"
#include "src/common/executor.h"
#include "src/common/random.h"
#include "src/config/config.h"
#include "src/metrics/exposition.h"
#include "src/metrics/registry.h"
#include "src/metrics/scheduler_metrics.h"
#include "src/plugins/in_tree_registry.h"
#include "src/scheduler/scheduler.h"
#include "src/sim/sim_cluster.h"
#include "src/sim/test_settle.h"
#include "src/testing/builders.h"

namespace gpusched::scheduler {
namespace {

using testing::MakeNode;
using testing::MakePod;

class PreemptionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(plugins::RegisterInTreePlugins(registry_).ok());
    auto cfg = config::DefaultSchedulerConfig();
    cfg.percentage_of_nodes_to_score = 100;
    SchedulerDeps deps{clock_, random_, cluster_, executor_, registry_};
    deps.metrics = &metrics_;
    auto s = Scheduler::Create(cfg, deps);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    sched_ = std::move(s).value();
    cluster_.SetHandler(&sched_->events());
  }
  void TearDown() override { cluster_.SetHandler(nullptr); }

  void AddNode(std::string_view name, int gpus) {
    ASSERT_TRUE(cluster_.AddNode(MakeNode(name).Cpu("16").Memory("64Gi").Gpus(gpus).Ptr()).ok());
  }
  api::PodPtr Create(std::string_view name, int32_t priority, int gpus) {
    api::PodPtr p = MakePod("default", name)
                        .SchedulerName("gpu-scheduler")
                        .Priority(priority)
                        .Cpu("1")
                        .Gpus(gpus)
                        .Ptr();
    EXPECT_TRUE(cluster_.CreatePod(p).ok());
    return p;
  }
  // Schedules until the queue has nothing ready, then lets backoff pass once more.
  void Settle() { sim::Settle(*sched_, clock_, 3); }
  std::string NodeOf(const api::PodPtr& p) const { return sim::NodeOrDeleted(cluster_, p); }
  std::string Scrape() { return metrics::WriteText(registry_metrics_); }

  common::FakeClock clock_;
  common::Random random_{42};
  sim::SimCluster cluster_;
  common::InlineExecutor executor_;
  framework::Registry registry_;
  metrics::Registry registry_metrics_;
  metrics::SchedulerMetrics metrics_{registry_metrics_};
  std::unique_ptr<Scheduler> sched_;
};

TEST_F(PreemptionTest, AHighPriorityPodEvictsTheMinimumAndBindsOnItsNominatedNode) {
  AddNode("n1", 2);
  AddNode("n2", 2);
  api::PodPtr a = Create("low-a", 1, 1);
  api::PodPtr b = Create("low-b", 1, 1);
  api::PodPtr c = Create("mid-c", 5, 1);
  api::PodPtr d = Create("mid-d", 5, 1);
  Settle();
  ASSERT_NE(NodeOf(a), "");
  ASSERT_NE(NodeOf(d), "");

  api::PodPtr high = Create("high", 100, 1);
  ASSERT_TRUE(sched_->ScheduleOne());
  // Exactly one victim, of the lowest priority.
  const int deleted = (NodeOf(a) == "<deleted>") + (NodeOf(b) == "<deleted>");
  EXPECT_EQ(deleted, 1);
  EXPECT_NE(NodeOf(c), "<deleted>");
  EXPECT_NE(NodeOf(d), "<deleted>");
  EXPECT_EQ(cluster_.Counters().api_deletes, 1);
  EXPECT_EQ(cluster_.Counters().events_by_reason.at("Preempted"), 1);
  const std::string nominated = sched_->NominatedNodeOf(high->meta.uid);
  ASSERT_FALSE(nominated.empty());

  Settle();
  EXPECT_EQ(NodeOf(high), nominated);
  EXPECT_EQ(sched_->NominatedNodeOf(high->meta.uid), "");
  const std::string text = Scrape();
  EXPECT_NE(text.find("scheduler_preemption_attempts_total 1"), std::string::npos) << text;
  EXPECT_NE(text.find("scheduler_preemption_victims_count 1"), std::string::npos) << text;
  EXPECT_TRUE(sched_->CheckCacheInvariants().ok());
}

TEST_F(PreemptionTest, NoVictimIsTouchedWhenPreemptionCannotHelp) {
  AddNode("n1", 1);
  api::PodPtr peer = Create("peer", 100, 1);
  Settle();
  api::PodPtr other = Create("other", 100, 1);
  Settle();
  EXPECT_EQ(NodeOf(peer), "n1");
  EXPECT_EQ(NodeOf(other), "");
  EXPECT_EQ(cluster_.Counters().api_deletes, 0);
  EXPECT_EQ(sched_->NominatedNodeOf(other->meta.uid), "");
}

}  // namespace
}  // namespace gpusched::scheduler
