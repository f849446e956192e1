// SPDX-License-Identifier: Apache-2.0
// DefaultPreemption through the real runtime: a Framework of the default profile (its filters
// decide whether a victim set makes room), snapshots made by the real Cache (so each pod's
// devices are charged as in production), and the plugin's PostFilterResult read back from
// SchedulePod. Every rule has a case where getting it wrong changes the victims or the node.
#include "src/plugins/default_preemption/default_preemption.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <boost/json/parse.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "src/cache/cache.h"
#include "src/common/random.h"
#include "src/config/config.h"
#include "src/framework/registry.h"
#include "src/framework/runtime/framework.h"
#include "src/framework/runtime/nominator.h"
#include "src/plugins/in_tree_registry.h"
#include "src/testing/builders.h"
#include "src/testing/fake_handle.h"

namespace gpusched::plugins::default_preemption {
namespace {

using framework::runtime::Framework;
using framework::runtime::ScheduleResult;
using testing::MakeNode;
using testing::MakePod;

constexpr int32_t kHigh = 1000;

// A pod on `node` holding `devices` ("0,1" whole GPUs, "1:500m" a share asked for with
// gpusched.io/gpu-milli and no nvidia.com/gpu), as a bound pod with the gpusched.io/gpu-devices
// annotation arrives from the informer.
api::PodPtr Placed(std::string_view name, std::string_view node, int32_t priority,
                   std::string_view devices, int64_t gpus = 1, int64_t start_seconds = 0) {
  testing::PodBuilder b = MakePod("ns", name);
  b.NodeName(node).Priority(priority).Cpu("1").Phase(api::PodPhase::kRunning);
  b.StartTime(common::TimePoint(std::chrono::seconds(1'000 + start_seconds)));
  if (!devices.empty()) {
    b.Annotation(api::kPodGpuDevicesAnnotation, devices);
    if (devices.find(':') != std::string_view::npos) {  // a share: annotations only
      b.Annotation(api::kPodGpuMilliAnnotation, devices.substr(devices.find(':') + 1, 3));
    } else {
      b.Gpus(gpus);
    }
  }
  return b.Ptr();
}

class PreemptionTest : public ::testing::Test {
 protected:
  PreemptionTest() : cache_(handle_.fake_clock()) {
    handle_.fake_clock().Set(common::TimePoint(std::chrono::seconds(100'000)));
    EXPECT_TRUE(RegisterInTreePlugins(registry_).ok());
  }

  void Build(std::string_view preemption_args = "{}") {
    config::Profile profile = config::DefaultSchedulerConfig().profiles[0];
    config::PluginConfig pc;
    pc.name = "DefaultPreemption";
    pc.args = boost::json::parse(preemption_args);
    profile.plugin_config.push_back(std::move(pc));
    auto fw = Framework::Create(profile, 100, registry_, handle_);
    ASSERT_TRUE(fw.ok()) << fw.status().ToString();
    fw_ = std::move(*fw);
    fw_->SetNominator(&nominator_);
  }
  void Node(testing::NodeBuilder b) { cache_.AddNode(b.Cpu("16").Memory("64Gi").Ptr()); }
  void Pod(api::PodPtr p) { cache_.AddPod(std::move(p)); }

  ScheduleResult Schedule(const api::PodPtr& pod) {
    if (fw_ == nullptr) Build();
    cache_.UpdateSnapshot(snapshot_);
    framework::CycleState state;
    return fw_->SchedulePod(state, *pod, snapshot_, random_);
  }
  static std::vector<std::string> Victims(const ScheduleResult& r) {
    std::vector<std::string> names;
    for (const api::PodPtr& p : r.post_filter.victims) names.push_back(p->meta.name);
    return names;
  }
  static api::PodPtr Preemptor(int64_t gpus = 1, int32_t priority = kHigh) {
    return MakePod("ns", "preemptor").Priority(priority).Cpu("1").Gpus(gpus).Ptr();
  }

  testing::FakeHandle handle_;
  cache::Cache cache_;
  framework::Registry registry_;
  framework::runtime::Nominator nominator_;
  std::unique_ptr<Framework> fw_;
  framework::Snapshot snapshot_;
  common::Random random_{7};
};

TEST_F(PreemptionTest, EvictsOnlyTheLowerPriorityPodsTheFiltersNeedGone) {
  Node(MakeNode("n1").Gpus(2));
  Pod(Placed("low-old", "n1", 1, "0", 1, /*start*/ 0));
  Pod(Placed("low-new", "n1", 1, "1", 1, /*start*/ 50));
  ScheduleResult r = Schedule(Preemptor());
  ASSERT_EQ(r.node, framework::kNoNode);
  EXPECT_TRUE(r.post_filter_ran);
  EXPECT_EQ(r.post_filter.nominated_node, "n1");
  // Reprieve goes most important first: the older pod (earlier start) is kept.
  EXPECT_EQ(Victims(r), std::vector<std::string>{"low-new"});
  EXPECT_EQ(r.post_filter.plugin, "DefaultPreemption");
}

TEST_F(PreemptionTest, HigherPriorityVictimsAreReprievedFirst) {
  Node(MakeNode("n1").Gpus(2));
  Pod(Placed("mid", "n1", 500, "0"));
  Pod(Placed("low", "n1", 1, "1"));
  EXPECT_EQ(Victims(Schedule(Preemptor())), std::vector<std::string>{"low"});
}

TEST_F(PreemptionTest, PodsOfEqualOrHigherPriorityAreNeverVictims) {
  Node(MakeNode("n1").Gpus(2));
  Pod(Placed("same", "n1", kHigh, "0"));
  Pod(Placed("higher", "n1", kHigh + 1, "1"));
  ScheduleResult r = Schedule(Preemptor());
  EXPECT_TRUE(r.post_filter.victims.empty());
  EXPECT_EQ(r.post_filter.mode, framework::PostFilterResult::Mode::kOverride);
  EXPECT_EQ(r.post_filter.nominated_node, "");
  EXPECT_EQ(r.diagnosis.Message(),
            "0/1 nodes are available: 1 Insufficient nvidia.com/gpu. preemption: 0/1 nodes are "
            "available: 1 No preemption victims found for incoming pod.");
}

TEST_F(PreemptionTest, PreemptionPolicyNeverDoesNotPreempt) {
  Node(MakeNode("n1").Gpus(1));
  Pod(Placed("low", "n1", 1, "0"));
  api::PodPtr pod = MakePod("ns", "p")
                        .Priority(kHigh)
                        .Cpu("1")
                        .Gpus(1)
                        .PreemptionPolicy(api::PreemptionPolicy::kNever)
                        .Ptr();
  ScheduleResult r = Schedule(pod);
  EXPECT_TRUE(r.post_filter.victims.empty());
  EXPECT_EQ(r.post_filter.mode, framework::PostFilterResult::Mode::kNoop);
  EXPECT_EQ(r.diagnosis.Message(),
            "0/1 nodes are available: 1 Insufficient nvidia.com/gpu. preemption: not eligible due "
            "to preemptionPolicy=Never.");
}

TEST_F(PreemptionTest, UnresolvableNodesAreNeverCandidates) {
  // n1 has the cheapest victim but the pod's node selector excludes it.
  Node(MakeNode("n1").Gpus(1).Label("pool", "batch"));
  Node(MakeNode("n2").Gpus(1).Label("pool", "serve"));
  Pod(Placed("cheap", "n1", 1, "0"));
  Pod(Placed("dearer", "n2", 100, "0"));
  api::PodPtr pod =
      MakePod("ns", "p").Priority(kHigh).Cpu("1").Gpus(1).NodeSelector("pool", "serve").Ptr();
  ScheduleResult r = Schedule(pod);
  EXPECT_EQ(r.post_filter.nominated_node, "n2");
  EXPECT_EQ(Victims(r), std::vector<std::string>{"dearer"});
}

TEST_F(PreemptionTest, NodeWithTheLowestHighestVictimPriorityWins) {
  Node(MakeNode("n1").Gpus(1));
  Node(MakeNode("n2").Gpus(1));
  Pod(Placed("p50", "n1", 50, "0"));
  Pod(Placed("p10", "n2", 10, "0"));
  EXPECT_EQ(Schedule(Preemptor()).post_filter.nominated_node, "n2");
}

TEST_F(PreemptionTest, SmallerPrioritySumThenFewerVictimsWin) {
  // n1: two victims of priority 5 (sum 10); n2: victims 5 and 1 (sum 6): n2 despite equal count.
  Node(MakeNode("n1").Gpus(2));
  Node(MakeNode("n2").Gpus(2));
  Pod(Placed("a5", "n1", 5, "0"));
  Pod(Placed("b5", "n1", 5, "1"));
  Pod(Placed("c5", "n2", 5, "0"));
  Pod(Placed("d1", "n2", 1, "1"));
  ScheduleResult r = Schedule(Preemptor(2));
  EXPECT_EQ(r.post_filter.nominated_node, "n2");
  EXPECT_EQ(Victims(r), (std::vector<std::string>{"c5", "d1"}));
}

TEST_F(PreemptionTest, FewerVictimsWinAtEqualPrioritySum) {
  // n1: one whole-node pod of priority 2 (sum 2+shift); n2: two pods of priority 1: the shifted
  // sums differ (upstream adds MaxInt32+1 per victim), so n1's single victim wins.
  Node(MakeNode("n1").Gpus(2));
  Node(MakeNode("n2").Gpus(2));
  Pod(Placed("big", "n1", 1, "0,1", 2));
  Pod(Placed("x", "n2", 1, "0"));
  Pod(Placed("y", "n2", 1, "1"));
  ScheduleResult r = Schedule(Preemptor(2));
  EXPECT_EQ(r.post_filter.nominated_node, "n1");
  EXPECT_EQ(Victims(r), std::vector<std::string>{"big"});
}

TEST_F(PreemptionTest, LatestStartOfTheHighestPriorityVictimsBreaksTies) {
  Node(MakeNode("n1").Gpus(1));
  Node(MakeNode("n2").Gpus(1));
  Pod(Placed("old", "n1", 1, "0", 1, /*start*/ 0));
  Pod(Placed("young", "n2", 1, "0", 1, /*start*/ 500));
  EXPECT_EQ(Schedule(Preemptor()).post_filter.nominated_node, "n2");
}

api::PdbPtr Pdb(std::string_view name, std::string_view app, int32_t allowed,
                std::vector<std::string> disrupted = {}) {
  auto pdb = std::make_shared<api::PodDisruptionBudget>();
  pdb->meta.name = std::string(name);
  pdb->meta.namespace_ = "ns";
  api::LabelSelector sel;
  sel.requirements.push_back(
      api::Requirement{common::Intern("app"), api::SelectorOp::kIn, {common::Intern(app)}, 0});
  pdb->selector = sel;
  pdb->disruptions_allowed = allowed;
  pdb->disrupted_pods = std::move(disrupted);
  return pdb;
}

api::PodPtr Labelled(api::PodPtr p, std::string_view app) {
  auto copy = std::make_shared<api::Pod>(*p);
  copy->meta.labels.Set(common::Intern("app"), common::Intern(app));
  return copy;
}

TEST_F(PreemptionTest, ANodeWithoutPdbViolationWinsOverCheaperVictims) {
  Node(MakeNode("n1").Gpus(1));
  Node(MakeNode("n2").Gpus(1));
  Pod(Labelled(Placed("guarded", "n1", 1, "0"), "db"));
  Pod(Placed("free", "n2", 100, "0"));
  handle_.SetPodDisruptionBudgets({Pdb("db", "db", 0)});
  EXPECT_EQ(Schedule(Preemptor()).post_filter.nominated_node, "n2");
}

TEST_F(PreemptionTest, PdbViolatingVictimsAreReprievedFirst) {
  // Either pod frees the GPU the preemptor needs; without the PDB rule the more important
  // "guarded" would be kept and "plain" evicted anyway, so make "guarded" the less important one.
  Node(MakeNode("n1").Gpus(2));
  Pod(Labelled(Placed("guarded", "n1", 1, "0"), "db"));
  Pod(Placed("plain", "n1", 50, "1"));
  handle_.SetPodDisruptionBudgets({Pdb("db", "db", 0)});
  ScheduleResult r = Schedule(Preemptor());
  EXPECT_EQ(Victims(r), std::vector<std::string>{"plain"});
}

TEST_F(PreemptionTest, ABudgetLeftOrAnAlreadyDisruptedPodIsNoViolation) {
  Node(MakeNode("n1").Gpus(1));
  Node(MakeNode("n2").Gpus(1));
  Pod(Labelled(Placed("a", "n1", 1, "0"), "db"));
  Pod(Labelled(Placed("b", "n2", 1, "0", 1, /*start*/ 500), "web"));
  // db allows one disruption, web none but already counted b: both nodes violate nothing, and
  // the latest start (n2) wins; with either budget misread n1 would win.
  handle_.SetPodDisruptionBudgets({Pdb("db", "db", 1), Pdb("web", "web", 0, {"b"})});
  EXPECT_EQ(Schedule(Preemptor()).post_filter.nominated_node, "n2");
}

TEST_F(PreemptionTest, SharedGpusFreeOneWholeDeviceNotTheCheapestShares) {
  // dev0: a (p1) + c (p3); dev1: b (p1) + d (p3). The two cheapest shares (a, b) sit on different
  // devices and free no whole GPU; the device-correct set empties one device.
  Node(MakeNode("n1").Gpus(2));
  Pod(Placed("a", "n1", 1, "0:500m"));
  Pod(Placed("c", "n1", 3, "0:500m"));
  Pod(Placed("b", "n1", 1, "1:500m", 1, /*start*/ 10));
  Pod(Placed("d", "n1", 3, "1:500m", 1, /*start*/ 10));
  ScheduleResult r = Schedule(Preemptor());
  ASSERT_EQ(r.post_filter.nominated_node, "n1");
  std::vector<std::string> v = Victims(r);
  EXPECT_EQ(v, (std::vector<std::string>{"d", "b"}));
}

TEST_F(PreemptionTest, VictimsOnAnUnhealthyDeviceDoNotHelp) {
  Node(MakeNode("n1").Gpus(2).UnhealthyGpus("1"));
  Pod(Placed("high", "n1", kHigh + 5, "0"));
  Pod(Placed("low-on-bad", "n1", 1, "1"));
  ScheduleResult r = Schedule(Preemptor());
  EXPECT_TRUE(r.post_filter.victims.empty());
  EXPECT_EQ(r.post_filter.nominated_node, "");
}

TEST_F(PreemptionTest, ANvlinkIslandIsFreedWhenThePodRequiresOne) {
  // Islands {0,1} and {2,3}; low pods on 0 and 2 (cheapest, one per island) and mid pods on 1
  // and 3. Evicting the two cheapest frees two GPUs in different islands; the pod needs one
  // island, so one island's pair must go.
  Node(MakeNode("n1").Gpus(4).NvlinkIslands("0,1;2,3"));
  Pod(Placed("low0", "n1", 1, "0"));
  Pod(Placed("mid1", "n1", 5, "1"));
  Pod(Placed("low2", "n1", 1, "2", 1, /*start*/ 10));
  Pod(Placed("mid3", "n1", 6, "3"));
  api::PodPtr pod = MakePod("ns", "p")
                        .Priority(kHigh)
                        .Cpu("1")
                        .Gpus(2)
                        .Annotation("gpusched.io/nvlink-island", "required")
                        .Ptr();
  ScheduleResult r = Schedule(pod);
  ASSERT_EQ(r.post_filter.nominated_node, "n1");
  std::vector<std::string> v = Victims(r);
  std::sort(v.begin(), v.end());
  EXPECT_EQ(v, (std::vector<std::string>{"low0", "mid1"}));
}

TEST_F(PreemptionTest, NominatedPodsKeepTheirRoomFromLowerOrEqualPriority) {
  Node(MakeNode("n1").Gpus(1));
  api::PodPtr nominated = MakePod("ns", "nominated").Priority(500).Cpu("1").Gpus(1).Ptr();
  nominator_.Set(nominated, "n1");
  Build();
  // Lower and equal priority: n1 is taken by the nominated pod.
  EXPECT_EQ(Schedule(Preemptor(1, 100)).node, framework::kNoNode);
  EXPECT_EQ(Schedule(Preemptor(1, 500)).node, framework::kNoNode);
  // Higher priority may take it (the nominated pod will yield).
  EXPECT_NE(Schedule(Preemptor(1, 501)).node, framework::kNoNode);
}

TEST_F(PreemptionTest, ANominatedPodTriesItsNodeFirst) {
  Node(MakeNode("n1").Gpus(1));
  Node(MakeNode("n2").Gpus(1));
  api::PodPtr pod =
      MakePod("ns", "p").Priority(kHigh).Cpu("1").Gpus(1).NominatedNodeName("n2").Ptr();
  ScheduleResult r = Schedule(pod);
  EXPECT_EQ(snapshot_.at(r.node).name(), "n2");
  EXPECT_EQ(r.counts.evaluated, 1);
}

TEST_F(PreemptionTest, NoPreemptionWhileAVictimOnTheNominatedNodeTerminates) {
  Node(MakeNode("n1").Gpus(1));
  Node(MakeNode("n2").Gpus(1));
  api::Pod leaving = *Placed("leaving", "n1", 1, "0");
  leaving.meta.deletion_timestamp = handle_.fake_clock().Now();
  api::Condition c;
  c.type = "DisruptionTarget";
  c.status = "True";
  c.reason = "PreemptionByScheduler";
  leaving.conditions.push_back(c);
  Pod(std::make_shared<api::Pod>(leaving));
  Pod(Placed("other", "n2", 1, "0"));
  api::PodPtr pod =
      MakePod("ns", "p").Priority(kHigh).Cpu("1").Gpus(1).NominatedNodeName("n1").Ptr();
  ScheduleResult r = Schedule(pod);
  EXPECT_TRUE(r.post_filter.victims.empty());
  EXPECT_EQ(r.post_filter.mode, framework::PostFilterResult::Mode::kNoop);
  EXPECT_NE(r.diagnosis.Message().find(
                "preemption: not eligible due to a terminating pod on the nominated node."),
            std::string::npos);
}

TEST_F(PreemptionTest, NotHelpfulCountsTheNodesNotTried) {
  Node(MakeNode("n1").Gpus(1).Label("pool", "a"));
  Node(MakeNode("n2").Gpus(1).Label("pool", "b"));
  Pod(Placed("x", "n1", kHigh, "0"));
  api::PodPtr pod =
      MakePod("ns", "p").Priority(kHigh).Cpu("1").Gpus(1).NodeSelector("pool", "a").Ptr();
  ScheduleResult r = Schedule(pod);
  EXPECT_EQ(r.diagnosis.Message(),
            "0/2 nodes are available: 1 Insufficient nvidia.com/gpu, 1 node(s) didn't match "
            "Pod's node affinity/selector. preemption: 0/2 nodes are available: 1 No preemption "
            "victims found for incoming pod, 1 Preemption is not helpful for scheduling.");
}

// Explain (record_verdicts): every potential node is tried and recorded, the decision is the one
// made without recording. With minCandidateNodesAbsolute 1 the dry run stops after the first
// candidate, so the recorded nodes beyond it were tried only for the record.
TEST_F(PreemptionTest, RecordingTriesEveryNodeAndKeepsTheDecision) {
  const char* args = R"({"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 1})";
  Build(args);
  std::unique_ptr<Framework> recording = std::move(fw_);
  Build(args);  // the same plugin state (its offset draws) as `recording`
  for (const char* n : {"n1", "n2", "n3", "n4"}) Node(MakeNode(n).Gpus(1));
  Pod(Placed("a", "n1", 10, "0"));
  Pod(Placed("b", "n2", 20, "0"));
  Pod(Placed("c", "n3", kHigh, "0"));  // not a victim: n3 has none
  Pod(Placed("d", "n4", 5, "0"));
  api::PodPtr pod = Preemptor();
  for (int attempt = 0; attempt < 6; ++attempt) {
    ScheduleResult plain = Schedule(pod);
    framework::CycleState state;
    framework::runtime::SchedulePodOptions opts;
    opts.record_verdicts = true;
    ScheduleResult recorded = recording->SchedulePod(state, *pod, snapshot_, random_, opts);
    EXPECT_TRUE(plain.post_filter.per_node.empty());
    EXPECT_EQ(recorded.post_filter.nominated_node, plain.post_filter.nominated_node);
    EXPECT_EQ(Victims(recorded), Victims(plain));
    EXPECT_EQ(recorded.diagnosis.Message(), plain.diagnosis.Message());
    ASSERT_EQ(recorded.post_filter.per_node.size(), 4u);
    for (const framework::NodePostFilter& np : recorded.post_filter.per_node) {
      const std::string_view node = snapshot_.at(np.node).name();
      if (node == "n3") {
        EXPECT_EQ(np.status.reason(), framework::preemption::kNoVictims);
        EXPECT_TRUE(np.victims.empty());
      } else {
        EXPECT_TRUE(np.status.ok()) << node;
        ASSERT_EQ(np.victims.size(), 1u) << node;
        EXPECT_EQ(np.victims[0]->node_name, node);
      }
    }
  }
}

// The dry run's per-node results are kept for the next equivalent preemptor (VictimCache): a
// long-lived framework and one whose cache can never hit (a new Snapshot object every attempt,
// which empties it) make the same decisions over a random sequence of attempts of three pod
// classes, with victims removed and new pods placed between attempts; the first serves hits.
TEST_F(PreemptionTest, KeptResultsGiveTheDecisionsOfAFreshDryRun) {
  Build(R"({"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 3})");
  std::unique_ptr<Framework> cached = std::move(fw_);
  Build(R"({"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 3})");
  std::unique_ptr<Framework> fresh = std::move(fw_);
  common::Random rng(11);
  for (int n = 0; n < 12; ++n) Node(MakeNode("n" + std::to_string(n)).Gpus(4));
  int next = 0;
  auto place = [&](int node) {
    const int32_t priority = static_cast<int32_t>(rng.Uniform(4)) * 10;
    const std::string name = "v" + std::to_string(next++);
    Pod(MakePod("ns", name)
            .NodeName("n" + std::to_string(node))
            .Priority(priority)
            .Cpu("1")
            .Gpus(1)
            .Phase(api::PodPhase::kRunning)
            .StartTime(common::TimePoint(std::chrono::seconds(1'000 + rng.Uniform(50))))
            .Ptr());
  };
  for (int n = 0; n < 12; ++n) {
    for (int k = 0; k < 4; ++k) place(n);
  }
  std::vector<std::unique_ptr<framework::Snapshot>> copies;
  common::Random random_a(3), random_b(3);
  int preemptions = 0;
  for (int attempt = 0; attempt < 40; ++attempt) {
    const int64_t gpus = 1 + static_cast<int64_t>(rng.Uniform(3));
    api::PodPtr pod = Preemptor(gpus, 25 + 10 * static_cast<int32_t>(gpus));
    cache_.UpdateSnapshot(snapshot_);
    copies.push_back(std::make_unique<framework::Snapshot>(snapshot_));
    framework::CycleState sa, sb;
    ScheduleResult a = cached->SchedulePod(sa, *pod, snapshot_, random_a);
    ScheduleResult b = fresh->SchedulePod(sb, *pod, *copies.back(), random_b);
    ASSERT_EQ(a.post_filter.nominated_node, b.post_filter.nominated_node) << attempt;
    ASSERT_EQ(Victims(a), Victims(b)) << attempt;
    ASSERT_EQ(a.diagnosis.Message(), b.diagnosis.Message()) << attempt;
    for (const api::PodPtr& v : a.post_filter.victims) cache_.RemovePod(v->meta.uid);
    preemptions += a.post_filter.victims.empty() ? 0 : 1;
    // The preemptor takes the room (its nominated node, or the node it fit on), so later
    // attempts preempt again.
    std::string node = a.post_filter.nominated_node;
    if (a.node != framework::kNoNode) node = std::string(snapshot_.at(a.node).name());
    if (!node.empty()) {
      Pod(MakePod("ns", "pre" + std::to_string(attempt))
              .NodeName(node)
              .Priority(pod->priority)
              .Cpu("1")
              .Gpus(gpus)
              .Phase(api::PodPhase::kRunning)
              .StartTime(common::TimePoint(std::chrono::seconds(2'000 + attempt)))
              .Ptr());
    }
    if (attempt % 5 == 0) place(static_cast<int>(rng.Uniform(12)));
  }
  EXPECT_GT(preemptions, 10);
}

TEST(DefaultPreemptionArgsTest, CandidateCountFollowsTheArgs) {
  testing::FakeHandle handle;
  DefaultPreemption pl(Args{10, 100}, handle);
  EXPECT_EQ(pl.NumCandidates(50), 50);     // never more than the potential nodes
  EXPECT_EQ(pl.NumCandidates(500), 100);   // the absolute floor
  EXPECT_EQ(pl.NumCandidates(5000), 500);  // 10%
  DefaultPreemption pct(Args{40, 0}, handle);
  EXPECT_EQ(pct.NumCandidates(10), 4);
}

TEST(DefaultPreemptionArgsTest, BadArgsNameTheirField) {
  struct Case {
    const char* name;
    const char* json;
    const char* error;
  };
  const Case cases[] = {
      {"percentage above 100", R"({"minCandidateNodesPercentage": 120})",
       "minCandidateNodesPercentage: must be in 0..100, got 120"},
      {"negative absolute", R"({"minCandidateNodesAbsolute": -1})", "minCandidateNodesAbsolute"},
      {"both zero", R"({"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0})",
       "cannot be both zero"},
      {"unknown field", R"({"minCandidates": 3})", "minCandidates: unknown field"},
  };
  for (const Case& c : cases) {
    auto args = ParseArgs(boost::json::parse(c.json));
    ASSERT_FALSE(args.ok()) << c.name;
    EXPECT_NE(args.status().ToString().find(c.error), std::string::npos)
        << c.name << ": " << args.status().ToString();
  }
  auto defaults = ParseArgs(boost::json::parse("{}"));
  ASSERT_TRUE(defaults.ok());
  EXPECT_EQ(defaults->min_candidate_nodes_percentage, 10);
  EXPECT_EQ(defaults->min_candidate_nodes_absolute, 100);
}

}  // namespace
}  // namespace gpusched::plugins::default_preemption
