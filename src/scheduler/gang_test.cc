// SPDX-License-Identifier: Apache-2.0
// Gang scheduling end to end inside the process: the Scheduler with the default profile (its
// GangScheduling plugin) against the simulator's in-memory cluster, which binds pods and delivers
// the events back. Each rule has a case where pod-by-pod scheduling gives another outcome.
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "src/common/clock.h"
#include "src/common/executor.h"
#include "src/common/random.h"
#include "src/config/config.h"
#include "src/plugins/in_tree_registry.h"
#include "src/scheduler/scheduler.h"
#include "src/sim/sim_cluster.h"
#include "src/sim/test_settle.h"
#include "src/testing/builders.h"

namespace gpusched::scheduler {
namespace {

using testing::MakeNode;
using testing::MakePod;

constexpr std::string_view kZone = "topology.kubernetes.io/zone";

class GangTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(plugins::RegisterInTreePlugins(registry_).ok());
    auto cfg = config::DefaultSchedulerConfig();
    cfg.percentage_of_nodes_to_score = 100;
    SchedulerDeps deps{clock_, random_, cluster_, executor_, registry_};
    auto s = Scheduler::Create(cfg, deps);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    sched_ = std::move(s).value();
    cluster_.SetHandler(&sched_->events());
  }
  void TearDown() override { cluster_.SetHandler(nullptr); }

  void AddNode(std::string_view name, int gpus, std::string_view zone = "zone-a") {
    ASSERT_TRUE(
        cluster_
            .AddNode(MakeNode(name).Cpu("64").Memory("256Gi").Gpus(gpus).Label(kZone, zone).Ptr())
            .ok());
  }
  api::PodGroupPtr Group(std::string_view name, int32_t min_member,
                         std::optional<int> timeout_s = std::nullopt,
                         std::string_view required_topology = "") {
    auto g = std::make_shared<api::PodGroup>();
    g->api = api::GangApi::kPodGroup;
    g->namespace_ = "ml";
    g->name = std::string(name);
    g->min_member = min_member;
    if (timeout_s) g->schedule_timeout = std::chrono::seconds(*timeout_s);
    g->topology_required = std::string(required_topology);
    EXPECT_TRUE(cluster_.AddPodGroup(g).ok());
    return g;
  }
  api::PodPtr Member(std::string_view name, std::string_view group, int gpus,
                     int32_t priority = 0) {
    api::PodPtr p = MakePod("ml", name)
                        .SchedulerName("gpu-scheduler")
                        .Label(api::kPodGroupLabel, group)
                        .Cpu("1")
                        .Gpus(gpus)
                        .Priority(priority)
                        .Ptr();
    EXPECT_TRUE(cluster_.CreatePod(p).ok());
    return p;
  }
  api::PodPtr Single(std::string_view name, int gpus, int32_t priority = 0) {
    api::PodPtr p = MakePod("ml", name)
                        .SchedulerName("gpu-scheduler")
                        .Cpu("1")
                        .Gpus(gpus)
                        .Priority(priority)
                        .Ptr();
    EXPECT_TRUE(cluster_.CreatePod(p).ok());
    return p;
  }
  // A pod already running on `node` (placed by nodeName, as another scheduler's would be).
  api::PodPtr Running(std::string_view name, int gpus, std::string_view node,
                      int32_t priority = 0) {
    api::PodPtr p = MakePod("ml", name).Cpu("1").Gpus(gpus).Priority(priority).NodeName(node).Ptr();
    EXPECT_TRUE(cluster_.CreatePod(p).ok());
    return p;
  }
  // Schedules until nothing is ready, letting backoff pass a few times.
  void Settle() { sim::Settle(*sched_, clock_, 3); }
  std::string NodeOf(const api::PodPtr& p) const { return sim::NodeOrDeleted(cluster_, p); }
  int Bound(const std::vector<api::PodPtr>& pods) const {
    int n = 0;
    for (const auto& p : pods) n += NodeOf(p).empty() || NodeOf(p) == "<deleted>" ? 0 : 1;
    return n;
  }
  // GPUs the scheduler's cache holds for `pods` (assumed or bound).
  int64_t Held(const std::vector<api::PodPtr>& pods) const {
    int64_t held = 0;
    for (const auto& p : pods) {
      if (auto a = sched_->GpuAssignmentOf(p->meta.uid))
        held += static_cast<int64_t>(a->devices.size());
    }
    return held;
  }
  void DeleteAll(const std::vector<api::PodPtr>& pods) {
    for (const auto& p : pods) ASSERT_TRUE(cluster_.DeletePod(p->meta.uid).ok());
  }

  common::FakeClock clock_;
  common::Random random_{42};
  sim::SimCluster cluster_;
  common::InlineExecutor executor_;
  framework::Registry registry_;
  std::unique_ptr<Scheduler> sched_;
};

// The deadlock every gang scheduler exists to prevent: two 4 x 8-GPU gangs on 4 nodes of 8
// GPUs, members arriving interleaved. Pod by pod, each gang would get two nodes and neither could
// ever run. Here the first gang to be complete gets every node; the other holds nothing until the
// first one leaves, and then gets them all.
TEST_F(GangTest, TwoInterleavedGangsNeverEndBothPartial) {
  for (int i = 0; i < 4; ++i) AddNode("n" + std::to_string(i), 8);
  Group("a", 4);
  Group("b", 4);
  std::vector<api::PodPtr> a, b;
  for (int i = 0; i < 4; ++i) {
    a.push_back(Member("a-" + std::to_string(i), "a", 8));
    b.push_back(Member("b-" + std::to_string(i), "b", 8));
    while (sched_->ScheduleOne()) {
    }
  }
  Settle();
  EXPECT_EQ(Bound(a), 4);
  EXPECT_EQ(Bound(b), 0);
  EXPECT_EQ(Held(a), 32);
  EXPECT_EQ(Held(b), 0) << "b holds no GPU";
  std::set<std::string> nodes;
  for (const auto& p : a) nodes.insert(NodeOf(p));
  EXPECT_EQ(nodes.size(), 4u);
  ASSERT_TRUE(sched_->CheckCacheInvariants().ok());
  DeleteAll(a);  // the first job ends
  Settle();
  EXPECT_EQ(Bound(b), 4);
  EXPECT_EQ(sched_->WaitingPodCount(), 0u);
}

TEST_F(GangTest, MembersWaitForMinMemberThenBindTogether) {
  AddNode("n0", 8);
  AddNode("n1", 8);
  Group("train", 3);
  std::vector<api::PodPtr> pods = {Member("w-0", "train", 2), Member("w-1", "train", 2)};
  Settle();
  EXPECT_EQ(Bound(pods), 0) << "two of minMember 3";
  EXPECT_EQ(Held(pods), 0);
  pods.push_back(Member("w-2", "train", 2));
  Settle();
  EXPECT_EQ(Bound(pods), 3);
}

TEST_F(GangTest, AMissingPodGroupKeepsItsMembersWaiting) {
  AddNode("n0", 8);
  api::PodPtr p = Member("w-0", "late", 1);
  Settle();
  EXPECT_EQ(NodeOf(p), "");
  Group("late", 1);
  Settle();
  EXPECT_EQ(NodeOf(p), "n0");
}

TEST_F(GangTest, AGangThatNeverFitsTimesOutAndASinglePodStillBinds) {
  AddNode("n0", 8);
  AddNode("n1", 8);
  Group("huge", 3, /*timeout_s=*/30);
  std::vector<api::PodPtr> pods;
  for (int i = 0; i < 3; ++i) pods.push_back(Member("h-" + std::to_string(i), "huge", 8));
  Settle();
  EXPECT_EQ(Bound(pods), 0);
  EXPECT_EQ(Held(pods), 0) << "a gang that does not fit holds nothing";
  clock_.Advance(std::chrono::seconds(31));
  sched_->Tick();
  const auto statuses = cluster_.PodGroupStatuses();
  ASSERT_TRUE(statuses.contains("podgroup:ml/huge"));
  EXPECT_EQ(statuses.at("podgroup:ml/huge").phase, "TimedOut");
  EXPECT_GE(cluster_.Counters().events_by_reason["GangTimedOut"], 3);
  api::PodPtr single = Single("small", 1);
  Settle();
  EXPECT_NE(NodeOf(single), "");
  bool timed_out = false;
  for (const auto& g : sched_->GangStates()) {
    if (g.gang_key == "podgroup:ml/huge") timed_out = g.timed_out;
  }
  EXPECT_TRUE(timed_out);
}

TEST_F(GangTest, APlacedGangIsReportedInItsPodGroupStatus) {
  AddNode("n0", 8);
  Group("ok", 2);
  std::vector<api::PodPtr> pods = {Member("o-0", "ok", 4), Member("o-1", "ok", 4)};
  Settle();
  ASSERT_EQ(Bound(pods), 2);
  EXPECT_EQ(cluster_.PodGroupStatuses().at("podgroup:ml/ok").phase, "Scheduling")
      << "bound, not running yet (no kubelet in the simulator)";
}

// A native PodGroup (scheduling.k8s.io, Kubernetes 1.36+): the same gang rule, its required
// topology from spec.schedulingConstraints, and its PodGroupInitiallyScheduled condition: False
// while a member waits, True once the gang is placed.
TEST_F(GangTest, ANativePodGroupIsAGangAndItsConditionIsWritten) {
  AddNode("a0", 8, "zone-a");
  AddNode("b0", 8, "zone-b");
  AddNode("b1", 8, "zone-b");
  Running("busy", 4, "a0");
  auto g = std::make_shared<api::PodGroup>();
  g->api = api::GangApi::kNative;
  g->api_version = "scheduling.k8s.io/v1beta1";
  g->namespace_ = "ml";
  g->name = "train-0";
  g->min_member = 2;
  g->topology_required = std::string(kZone);
  ASSERT_TRUE(cluster_.AddPodGroup(g).ok());
  auto member = [&](std::string_view name) {
    api::PodPtr p = MakePod("ml", name)
                        .SchedulerName("gpu-scheduler")
                        .SchedulingGroup("train-0")
                        .Cpu("1")
                        .Gpus(4)
                        .Ptr();
    EXPECT_TRUE(cluster_.CreatePod(p).ok());
    return p;
  };
  std::vector<api::PodPtr> pods = {member("t-0")};
  Settle();
  EXPECT_EQ(Bound(pods), 0) << "one of minCount 2 waits";
  ASSERT_TRUE(cluster_.PodGroupStatuses().contains("native:ml/train-0"));
  EXPECT_EQ(cluster_.PodGroupStatuses().at("native:ml/train-0").phase, "Unschedulable");
  pods.push_back(member("t-1"));
  Settle();
  ASSERT_EQ(Bound(pods), 2);
  EXPECT_NE(NodeOf(pods[0]), "a0") << "the gang shares one zone: zone-b holds both";
  EXPECT_NE(NodeOf(pods[1]), "a0");
  EXPECT_EQ(cluster_.PodGroupStatuses().at("native:ml/train-0").phase, "Scheduled");
}

// Required topology: one zone has 2 x 8 GPUs free in total but on two nodes each half used (the
// gang of 2 x 8 does not fit there), the other has two empty nodes: the gang lands whole there.
// Pod by pod with no domain rule the members could go to either zone.
TEST_F(GangTest, ARequiredTopologyPlacesTheWholeGangInOneDomain) {
  AddNode("a0", 8, "zone-a");
  AddNode("a1", 8, "zone-a");
  AddNode("b0", 8, "zone-b");
  AddNode("b1", 8, "zone-b");
  AddNode("c0", 8, "zone-c");
  Group("zonal", 3, std::nullopt, kZone);
  std::vector<api::PodPtr> pods;
  for (int i = 0; i < 3; ++i) pods.push_back(Member("z-" + std::to_string(i), "zonal", 4));
  Settle();
  ASSERT_EQ(Bound(pods), 3);
  std::set<std::string> zones;
  for (const auto& p : pods) {
    api::NodePtr n = cluster_.GetNode(NodeOf(p));
    api::Atom z;
    ASSERT_TRUE(n->meta.labels.Get(common::Intern(kZone), &z));
    zones.insert(std::string(common::Str(z)));
  }
  EXPECT_EQ(zones.size(), 1u);
}

TEST_F(GangTest, ARequiredTopologyNoDomainCanHoldFailsTheGangWhole) {
  AddNode("a0", 8, "zone-a");
  AddNode("b0", 8, "zone-b");
  Group("wide", 2, std::nullopt, kZone);
  std::vector<api::PodPtr> pods = {Member("w-0", "wide", 8), Member("w-1", "wide", 8)};
  Settle();
  EXPECT_EQ(Bound(pods), 0) << "the cluster could hold it, no zone can";
  EXPECT_EQ(Held(pods), 0);
}

TEST_F(GangTest, MinResourcesAreCheckedBeforeAnyMemberIsReserved) {
  AddNode("n0", 8);
  auto g = std::make_shared<api::PodGroup>();
  g->api = api::GangApi::kPodGroup;
  g->namespace_ = "ml";
  g->name = "big";
  g->min_member = 1;
  g->min_resources.Set(common::Intern("nvidia.com/gpu"), 16);
  ASSERT_TRUE(cluster_.AddPodGroup(g).ok());
  api::PodPtr p = Member("b-0", "big", 1);
  Settle();
  EXPECT_EQ(NodeOf(p), "") << "1 GPU would fit; minResources asks for 16";
}

TEST_F(GangTest, MembersBeyondMinMemberWaitWhileMinMemberRun) {
  AddNode("n0", 8);
  AddNode("n1", 8);
  Group("elastic", 2);
  std::vector<api::PodPtr> pods;
  for (int i = 0; i < 3; ++i) pods.push_back(Member("e-" + std::to_string(i), "elastic", 8));
  Settle();
  EXPECT_EQ(Bound(pods), 2);
  EXPECT_EQ(Held(pods), 16);
}

TEST_F(GangTest, WorkloadReplicasAreSeparateGangsUnderOnePolicy) {
  AddNode("n0", 8);
  auto g = std::make_shared<api::PodGroup>();
  g->api = api::GangApi::kWorkload;
  g->namespace_ = "ml";
  g->name = "llm";
  g->pod_group = "workers";
  g->min_member = 2;
  ASSERT_TRUE(cluster_.AddPodGroup(g).ok());
  auto member = [&](std::string_view name, std::string_view replica) {
    api::PodPtr p = MakePod("ml", name)
                        .SchedulerName("gpu-scheduler")
                        .WorkloadRef("llm", "workers", replica)
                        .Cpu("1")
                        .Gpus(4)
                        .Ptr();
    EXPECT_TRUE(cluster_.CreatePod(p).ok());
    return p;
  };
  std::vector<api::PodPtr> r1 = {member("r1-0", "r1"), member("r1-1", "r1")};
  std::vector<api::PodPtr> r2 = {member("r2-0", "r2")};
  Settle();
  EXPECT_EQ(Bound(r1), 2);
  EXPECT_EQ(Bound(r2), 0) << "replica r2 has one of its two members";
}

// A gang of higher priority preempts for all its members: two 8-GPU members on two nodes full of
// priority-0 pods evict one pod on each node, wait for them to leave, then bind together.
TEST_F(GangTest, AGangPreemptsForEveryMember) {
  AddNode("n0", 8);
  AddNode("n1", 8);
  std::vector<api::PodPtr> low = {Single("low-0", 8), Single("low-1", 8)};
  Settle();
  ASSERT_EQ(Bound(low), 2);
  Group("urgent", 2);
  std::vector<api::PodPtr> gang = {Member("u-0", "urgent", 8, 1000),
                                   Member("u-1", "urgent", 8, 1000)};
  Settle();
  EXPECT_EQ(NodeOf(low[0]), "<deleted>");
  EXPECT_EQ(NodeOf(low[1]), "<deleted>");
  EXPECT_EQ(Bound(gang), 2);
  EXPECT_NE(NodeOf(gang[0]), NodeOf(gang[1]));
}

// Two members per node (issue #36): two 8-GPU nodes, one 1-GPU pod of priority 0 on each, a
// gang of 4 x 4 GPUs of priority 1000. Both small pods must go (7 free GPUs hold one member, not
// two), and then every member binds where the preemption nominated it, two per node. Before the
// fix, a member reserved in the gang cycle was counted twice (reserved and nominated), the third
// member found no room, and the gang waited forever on an empty cluster.
TEST_F(GangTest, TwoMembersPerNodePreemptThenBindWhereNominated) {
  AddNode("a", 8);
  AddNode("b", 8);
  std::vector<api::PodPtr> low = {Running("low-0", 1, "a"), Running("low-1", 1, "b")};
  Group("ft", 4);
  std::vector<api::PodPtr> gang;
  for (int i = 0; i < 4; ++i) gang.push_back(Member("ft-" + std::to_string(i), "ft", 4, 1000));
  std::map<std::string, std::string> nominated;
  while (sched_->ScheduleOne()) {
  }
  for (const auto& m : gang) nominated[m->meta.uid] = sched_->NominatedNodeOf(m->meta.uid);
  Settle();
  EXPECT_EQ(NodeOf(low[0]), "<deleted>");
  EXPECT_EQ(NodeOf(low[1]), "<deleted>");
  ASSERT_EQ(Bound(gang), 4);
  std::map<std::string, int> per_node;
  for (const auto& m : gang) {
    ++per_node[NodeOf(m)];
    EXPECT_EQ(NodeOf(m), nominated[m->meta.uid]) << m->meta.name << " binds where nominated";
  }
  EXPECT_EQ(per_node["a"], 2);
  EXPECT_EQ(per_node["b"], 2);
  EXPECT_EQ(cluster_.Counters().api_deletes, 2);
  ASSERT_TRUE(sched_->CheckCacheInvariants().ok());
}

// Three nodes, two members each, one small pod on every node: three victims, six members bound.
TEST_F(GangTest, ThreeNodesTwoMembersEachPreemptOnePodPerNode) {
  for (int i = 0; i < 3; ++i) AddNode("n" + std::to_string(i), 8);
  std::vector<api::PodPtr> low;
  for (int i = 0; i < 3; ++i) {
    low.push_back(Running("low-" + std::to_string(i), 2, "n" + std::to_string(i)));
  }
  Group("ft", 6);
  std::vector<api::PodPtr> gang;
  for (int i = 0; i < 6; ++i) gang.push_back(Member("ft-" + std::to_string(i), "ft", 4, 1000));
  Settle();
  EXPECT_EQ(Bound(gang), 6);
  EXPECT_EQ(Bound(low), 0);
  EXPECT_EQ(cluster_.Counters().api_deletes, 3);
}

// One node needs an eviction, the other does not: only the one pod is evicted.
TEST_F(GangTest, AGangEvictsOnlyOnTheNodeThatNeedsIt) {
  AddNode("a", 8);
  AddNode("b", 8);
  api::PodPtr low = Single("low", 1);
  Settle();
  const std::string low_node = NodeOf(low);
  ASSERT_FALSE(low_node.empty());
  Group("ft", 4);
  std::vector<api::PodPtr> gang;
  for (int i = 0; i < 4; ++i) gang.push_back(Member("ft-" + std::to_string(i), "ft", 4, 1000));
  Settle();
  EXPECT_EQ(Bound(gang), 4);
  EXPECT_EQ(NodeOf(low), "<deleted>");
  EXPECT_EQ(cluster_.Counters().api_deletes, 1);
}

// A gang that cannot fit even with every lower-priority pod gone evicts nothing.
TEST_F(GangTest, AGangThatCannotFitEvenAfterEveryEvictionEvictsNothing) {
  AddNode("a", 8);
  AddNode("b", 8);
  std::vector<api::PodPtr> low = {Running("low-0", 1, "a"), Running("low-1", 1, "b")};
  Running("high", 2, "b", 2000);
  Group("ft", 4);
  std::vector<api::PodPtr> gang;
  for (int i = 0; i < 4; ++i) gang.push_back(Member("ft-" + std::to_string(i), "ft", 4, 1000));
  Settle();
  EXPECT_EQ(Bound(gang), 0);
  EXPECT_EQ(Bound(low), 2) << "evicting them would not make room for all four";
  EXPECT_EQ(cluster_.Counters().api_deletes, 0);
  for (const auto& m : gang) EXPECT_EQ(sched_->NominatedNodeOf(m->meta.uid), "");
}

// explain of a member whose gang waits for its victims says so: the victims still terminating
// and each member's nominated node, not "cannot be placed".
TEST_F(GangTest, ExplainSaysAGangWaitsForItsVictims) {
  AddNode("a", 8);
  api::Pod terminating =
      MakePod("ml", "victim").Cpu("1").Gpus(8).NodeName("a").DeletionTimestamp(clock_.Now()).Obj();
  terminating.conditions.push_back({"DisruptionTarget", "True", "PreemptionByScheduler", "", {}});
  api::PodPtr victim = std::make_shared<api::Pod>(terminating);
  ASSERT_TRUE(cluster_.CreatePod(victim).ok());
  Group("ft", 2);
  std::vector<api::PodPtr> gang;
  for (int i = 0; i < 2; ++i) {
    api::Pod member = MakePod("ml", "ft-" + std::to_string(i))
                          .SchedulerName("gpu-scheduler")
                          .Label(api::kPodGroupLabel, "ft")
                          .Cpu("1")
                          .Gpus(4)
                          .Priority(1000)
                          .Obj();
    member.nominated_node_name = "a";
    api::PodPtr p = std::make_shared<api::Pod>(member);
    ASSERT_TRUE(cluster_.CreatePod(p).ok());
    gang.push_back(p);
  }
  auto ex = sched_->ExplainGang(*gang[0]);
  ASSERT_TRUE(ex.has_value());
  EXPECT_FALSE(ex->fits);
  EXPECT_TRUE(ex->awaiting_victims);
  EXPECT_NE(ex->message.find("waits for the pods it preempted to leave (ml/victim on a)"),
            std::string::npos)
      << ex->message;
  EXPECT_NE(ex->message.find("ml/ft-0 -> a"), std::string::npos) << ex->message;
  EXPECT_NE(ex->message.find("ml/ft-1 -> a"), std::string::npos) << ex->message;
  ASSERT_TRUE(cluster_.DeletePod(victim->meta.uid).ok());
  ex = sched_->ExplainGang(*gang[0]);
  ASSERT_TRUE(ex.has_value());
  EXPECT_TRUE(ex->fits) << ex->message << " (its own nominations do not count against it)";
  EXPECT_FALSE(ex->awaiting_victims);
}

// ... or for none: the second member finds nothing it may evict (the other node's pod has a
// higher priority), so the first member's victim stays and no member keeps a nomination. Pod by
// pod, the first member would have evicted it for nothing.
TEST_F(GangTest, AGangPreemptsForNoneWhenOneMemberCannotFit) {
  AddNode("n0", 8);
  AddNode("n1", 8);
  api::PodPtr low = Single("low", 8, 0);
  api::PodPtr high = Single("high", 8, 2000);
  Settle();
  ASSERT_EQ(Bound({low, high}), 2);
  const std::string low_node = NodeOf(low), high_node = NodeOf(high);
  Group("urgent", 2);
  std::vector<api::PodPtr> gang = {Member("u-0", "urgent", 8, 1000),
                                   Member("u-1", "urgent", 8, 1000)};
  Settle();
  EXPECT_EQ(NodeOf(low), low_node) << "no victim for a gang that cannot fit whole";
  EXPECT_EQ(NodeOf(high), high_node);
  EXPECT_EQ(Bound(gang), 0);
  EXPECT_EQ(sched_->NominatedNodeOf(gang[0]->meta.uid), "");
  EXPECT_EQ(sched_->NominatedNodeOf(gang[1]->meta.uid), "");
}

// A partly evicted gang is never a cheaper victim than a whole one: evicting one 8-GPU member of
// a running 3-member gang leaves the other two useless, so it costs three victims, and the two
// plain pods on the fourth node (two victims) go instead. Upstream's order would take the single
// gang member (one victim).
TEST_F(GangTest, PreemptionCountsTheGangAVictimWouldBreak) {
  for (int i = 0; i < 3; ++i) AddNode("n" + std::to_string(i), 8);
  Group("g", 3);
  std::vector<api::PodPtr> gang = {Member("g-0", "g", 8), Member("g-1", "g", 8),
                                   Member("g-2", "g", 8)};
  Settle();
  ASSERT_EQ(Bound(gang), 3);
  AddNode("n3", 8);
  std::vector<api::PodPtr> plain = {Single("plain-0", 4), Single("plain-1", 4)};
  Settle();
  ASSERT_EQ(NodeOf(plain[0]), "n3");
  ASSERT_EQ(NodeOf(plain[1]), "n3");
  api::PodPtr urgent = Single("urgent", 8, 1000);
  Settle();
  EXPECT_EQ(Bound(gang), 3) << "the gang stays whole";
  EXPECT_EQ(NodeOf(plain[0]), "<deleted>");
  EXPECT_EQ(NodeOf(plain[1]), "<deleted>");
  EXPECT_EQ(NodeOf(urgent), "n3");
}

}  // namespace
}  // namespace gpusched::scheduler
