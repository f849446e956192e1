// SPDX-License-Identifier: Apache-2.0
// Consolidation through the real runtime: a Framework of the default profile (DefaultPreemption,
// then Consolidation), snapshots made by the real Cache (each pod's devices charged as in
// production), and the plan read back from SchedulePod's PostFilterResult.
#include "src/plugins/consolidation/consolidation.h"

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "src/api/volume.h"
#include "src/cache/cache.h"
#include "src/common/random.h"
#include "src/config/config.h"
#include "src/framework/registry.h"
#include "src/framework/runtime/framework.h"
#include "src/framework/runtime/nominator.h"
#include "src/plugins/in_tree_registry.h"
#include "src/testing/builders.h"
#include "src/testing/fake_handle.h"

namespace gpusched::plugins::consolidation {
namespace {

using framework::runtime::Framework;
using framework::runtime::ScheduleResult;
using testing::MakeNode;
using testing::MakePod;

// A running 1-GPU replica of ReplicaSet `owner` on `node`, device `device`.
testing::PodBuilder Replica(std::string_view name, std::string_view node, std::string_view device,
                            std::string_view owner = "infer") {
  testing::PodBuilder b = MakePod("ns", name);
  b.NodeName(node).Cpu("1").Gpus(1).Phase(api::PodPhase::kRunning);
  b.StartTime(common::TimePoint(std::chrono::seconds(1'000)));
  b.Annotation(api::kPodGpuDevicesAnnotation, device);
  if (!owner.empty()) b.OwnerReference("ReplicaSet", owner);
  return b;
}

testing::PodBuilder Movable(std::string_view name, std::string_view node, std::string_view device) {
  return Replica(name, node, device).Annotation(kMovableAnnotation, "true");
}

class ConsolidationTest : public ::testing::Test {
 protected:
  ConsolidationTest() : cache_(handle_.fake_clock()) {
    handle_.fake_clock().Set(common::TimePoint(std::chrono::seconds(100'000)));
    EXPECT_TRUE(RegisterInTreePlugins(registry_).ok());
  }

  void Build(std::string_view args = "{}") {
    config::Profile profile = config::DefaultSchedulerConfig().profiles[0];
    config::PluginConfig pc;
    pc.name = "Consolidation";
    pc.args = boost::json::parse(args);
    profile.plugin_config.push_back(std::move(pc));
    auto fw = Framework::Create(profile, 100, registry_, handle_);
    ASSERT_TRUE(fw.ok()) << fw.status().ToString();
    fw_ = std::move(*fw);
    fw_->SetNominator(&nominator_);
  }
  void Node(std::string_view name, int32_t gpus) {
    cache_.AddNode(MakeNode(name).Gpus(gpus).Cpu("64").Memory("256Gi").Ptr());
  }
  void Pod(testing::PodBuilder b) { cache_.AddPod(b.Ptr()); }

  ScheduleResult Schedule(int64_t gpus, int32_t priority = 0) {
    if (fw_ == nullptr) Build();
    cache_.UpdateSnapshot(snapshot_);
    framework::CycleState state;
    auto pod = MakePod("ns", "train").Priority(priority).Cpu("1").Gpus(gpus).Ptr();
    return fw_->SchedulePod(state, *pod, snapshot_, random_);
  }
  // The PostFilter plugins' rejections, as the FitError message appends them.
  static std::string Messages(const ScheduleResult& r) {
    std::string out;
    for (const std::string& m : r.diagnosis.post_filter_messages) out += m + "\n";
    return out;
  }
  // "pod->destination, ..." of the plan.
  static std::string Moves(const ScheduleResult& r) {
    std::string out;
    for (size_t i = 0; i < r.post_filter.victims.size(); ++i) {
      out += r.post_filter.victims[i]->meta.name + "->" +
             (i < r.post_filter.destinations.size() ? r.post_filter.destinations[i] : "?") + " ";
    }
    return out;
  }

  testing::FakeHandle handle_;
  cache::Cache cache_;
  framework::Registry registry_;
  framework::runtime::Nominator nominator_;
  std::unique_ptr<Framework> fw_;
  framework::Snapshot snapshot_;
  common::Random random_{7};
};

// Two 4-GPU nodes with one replica each on device 0: a 4-GPU pod fits nowhere, moving one replica
// to the other node frees a whole node.
TEST_F(ConsolidationTest, MovesTheFewestPodsToANodeWhereTheyFitNow) {
  Node("a", 4);
  Node("b", 4);
  Pod(Movable("r1", "a", "0"));
  Pod(Movable("r2", "b", "0"));
  ScheduleResult r = Schedule(4);
  ASSERT_EQ(r.node, framework::kNoNode);
  ASSERT_EQ(r.post_filter.victims.size(), 1u) << r.status.ToString();
  const std::string from = r.post_filter.nominated_node;
  const std::string to = from == "a" ? "b" : "a";
  EXPECT_EQ(r.post_filter.destinations, std::vector<std::string>{to});
  EXPECT_EQ(r.post_filter.plugin, "Consolidation");
}

// The moved pod is judged by its own filters, not the waiting pod's: the replica's spread
// constraint (the waiting pod has none, so PodTopologySpread is off in its cycle) rules out b.
TEST_F(ConsolidationTest, TheMovedPodsOwnFiltersChooseItsDestination) {
  Node("a", 4);
  Node("b", 4);
  Node("c", 2);
  const auto spread = [](testing::PodBuilder b) {
    return b.Label("app", "infer")
        .SpreadConstraint(1, "kubernetes.io/hostname",
                          api::TopologySpreadConstraint::WhenUnsatisfiable::kDoNotSchedule, "app",
                          "infer");
  };
  Pod(spread(Movable("r1", "a", "0")));
  Pod(spread(Replica("r2", "b", "0")));
  Pod(spread(Replica("r3", "b", "1")));
  ScheduleResult r = Schedule(4);
  ASSERT_EQ(r.post_filter.nominated_node, "a") << Messages(r);
  // b is the fuller of the two nodes that have room, but a third replica there breaks maxSkew 1.
  EXPECT_EQ(r.post_filter.destinations, std::vector<std::string>{"c"});
}

TEST_F(ConsolidationTest, PodsThatDidNotOptInNeverMove) {
  Node("a", 4);
  Node("b", 4);
  Pod(Replica("r1", "a", "0"));
  Pod(Replica("r2", "b", "0"));
  Pod(Replica("r3", "b", "1").Annotation(kMovableAnnotation, "false"));
  ScheduleResult r = Schedule(4);
  EXPECT_TRUE(r.post_filter.victims.empty());
  // Nothing movable: the message is the one without the plugin.
  EXPECT_EQ(Messages(r).find("consolidation"), std::string::npos);
}

TEST_F(ConsolidationTest, NamespacesAndPriorityClassesInTheArgsOptIn) {
  Build(R"({"movableNamespaces": ["ns"]})");
  Node("a", 4);
  Node("b", 4);
  Pod(Replica("r1", "a", "0"));
  Pod(Replica("r2", "b", "0"));
  EXPECT_EQ(Schedule(4).post_filter.victims.size(), 1u);
}

TEST_F(ConsolidationTest, NeverABarePodALocalVolumeOrAHigherPriority) {
  Node("a", 4);
  Node("b", 4);
  Pod(Replica("bare", "a", "0", /*owner=*/"").Annotation(kMovableAnnotation, "true"));
  Pod(Movable("important", "b", "0").Priority(100));
  ScheduleResult r = Schedule(4);  // priority 0: DefaultPreemption has no victim either
  EXPECT_TRUE(r.post_filter.victims.empty()) << Moves(r);
  api::Pod local = *Movable("local", "a", "0").Ptr();
  const api::Pod waiting = *MakePod("ns", "w").Ptr();
  EXPECT_TRUE(Movable(local, waiting, Args{}));
  auto volumes = std::make_shared<api::PodVolumes>();
  volumes->local_storage = true;  // an emptyDir or hostPath volume
  local.volumes = volumes;
  EXPECT_FALSE(Movable(local, waiting, Args{}));
}

TEST_F(ConsolidationTest, NoPlanWhenTheMovedPodFitsNowhereElse) {
  Node("a", 2);
  Node("b", 2);
  Pod(Movable("r1", "a", "0"));
  Pod(Movable("r2", "b", "0"));
  Pod(Replica("fixed", "b", "1"));  // b is full once r1 would come: r1 has nowhere to go
  ScheduleResult r = Schedule(2);
  EXPECT_TRUE(r.post_filter.victims.empty()) << Moves(r);
  EXPECT_NE(Messages(r).find("consolidation"), std::string::npos) << Messages(r);
}

// The cheapest pod to restart on a, x, would move, but it asks for more cpu than b or c has free:
// x stays, and z, which fits on b, moves instead.
TEST_F(ConsolidationTest, AMovedPodWithNowhereToGoStaysAndAnotherMoves) {
  Node("a", 4);
  Node("b", 4);
  Node("c", 4);
  Pod(Movable("x", "a", "0").Cpu("60"));
  Pod(Movable("y", "a", "1").Annotation("controller.kubernetes.io/pod-deletion-cost", "10"));
  Pod(Movable("z", "a", "2").Annotation("controller.kubernetes.io/pod-deletion-cost", "10"));
  Pod(Replica("f1", "b", "0,1,2").Gpus(3).Cpu("10"));
  Pod(Replica("f2", "c", "0,1,2").Gpus(3).Cpu("10"));
  ScheduleResult r = Schedule(2);
  ASSERT_EQ(r.post_filter.nominated_node, "a") << Messages(r);
  ASSERT_EQ(r.post_filter.victims.size(), 1u) << Moves(r);
  EXPECT_EQ(r.post_filter.victims[0]->meta.name, "z") << Moves(r);
}

// a needs one move, but its pod (cpu 60) fits on no other node; b needs two, which fit on c:
// the plans with more moves are tried when those with the fewest have nowhere to put them.
TEST_F(ConsolidationTest, MorePodsMoveWhenTheFewestHaveNowhereToGo) {
  Node("a", 4);
  Node("b", 4);
  Node("c", 4);
  Pod(Movable("m1", "a", "0,1").Gpus(2).Cpu("60"));
  Pod(Movable("n1", "b", "0").Cpu("5"));
  Pod(Movable("n2", "b", "1").Cpu("5"));
  Pod(Replica("f", "c", "0,1").Gpus(2).Cpu("10"));
  ScheduleResult r = Schedule(4);
  ASSERT_EQ(r.post_filter.nominated_node, "b") << Messages(r);
  EXPECT_EQ(Moves(r), "n1->c n2->c ") << Messages(r);
}

TEST_F(ConsolidationTest, MaxMovesPerPodBoundsThePlan) {
  Build(R"({"maxMovesPerPod": 1})");
  Node("a", 4);
  Node("b", 4);
  Node("c", 4);
  Pod(Movable("r1", "a", "0"));
  Pod(Movable("r2", "a", "1"));
  Pod(Replica("f1", "b", "0"));
  Pod(Replica("f2", "c", "0"));
  ScheduleResult r = Schedule(4);  // a needs two moves, b and c cannot be emptied
  EXPECT_TRUE(r.post_filter.victims.empty()) << Moves(r);
  EXPECT_NE(Messages(r).find("no node makes room by moving at most 1 pods"), std::string::npos)
      << Messages(r);
}

TEST_F(ConsolidationTest, TheRateLimitCountsTheMovesOfTheLastMinute) {
  Build(R"({"maxMovesPerMinute": 1})");
  Node("a", 4);
  Node("b", 4);
  Pod(Movable("r1", "a", "0"));
  Pod(Movable("r2", "b", "0"));
  EXPECT_EQ(Schedule(4).post_filter.victims.size(), 1u);
  ScheduleResult again = Schedule(4);  // the cluster did not change: the same plan, refused
  EXPECT_TRUE(again.post_filter.victims.empty());
  EXPECT_NE(Messages(again).find("the limit is 1"), std::string::npos);
  handle_.fake_clock().Advance(std::chrono::seconds(61));
  EXPECT_EQ(Schedule(4).post_filter.victims.size(), 1u);
}

TEST(ConsolidationArgs, EveryErrorNamesItsField) {
  EXPECT_NE(ParseArgs(boost::json::parse(R"({"maxMovesPerPod": 0})"))
                .status()
                .ToString()
                .find("maxMovesPerPod"),
            std::string::npos);
  EXPECT_NE(ParseArgs(boost::json::parse(R"({"movableNamespaces": [1]})"))
                .status()
                .ToString()
                .find("movableNamespaces[0]"),
            std::string::npos);
  EXPECT_NE(ParseArgs(boost::json::parse(R"({"maxMovesPerMinit": 3})"))
                .status()
                .ToString()
                .find("maxMovesPerMinit"),
            std::string::npos);
  auto ok = ParseArgs(
      boost::json::parse(R"({"maxMovesPerPod": 3, "movablePriorityClasses": ["batch"]})"));
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->max_moves_per_pod, 3);
  EXPECT_EQ(ok->movable_priority_classes, std::vector<std::string>{"batch"});
}

}  // namespace
}  // namespace gpusched::plugins::consolidation
