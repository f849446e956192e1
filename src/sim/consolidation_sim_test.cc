// SPDX-License-Identifier: Apache-2.0
// Consolidation end to end in the simulator: the default profile's Consolidation plugin plans,
// the production Scheduler evicts through SimCluster's Eviction API (PodDisruptionBudgets
// applied), the simulated ReplicaSet recreates the moved pods and the scheduler places them where
// the plan held room.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "src/common/clock.h"
#include "src/plugins/in_tree_registry.h"
#include "src/sim/consolidation_test_manifests.h"
#include "src/sim/controllers.h"
#include "src/sim/replay.h"
#include "src/sim/report.h"
#include "src/sim/simulator.h"
#include "src/sim/test_simulate.h"
#include "src/sim/workload.h"

namespace gpusched::sim {
namespace {

const std::string kTrain =
    "apiVersion: v1\nkind: Pod\nmetadata: {name: train}\nspec:\n"
    "  containers: [{name: c, resources: {limits: {nvidia.com/gpu: \"8\"}}}]\n";

// FourNodes (consolidation_test_manifests.h) and `extra`, decoded.
Workload FourNodesWorkload(bool movable, const std::string& extra = "") {
  Workload w;
  EXPECT_TRUE(AppendManifests(FourNodes(movable) + extra, "in.yaml", w).ok());
  return w;
}

std::unique_ptr<Simulator> Simulate(const Workload& w) {
  return SimulateForTest(w, plugins::InTreeRegistry());
}

// Submits the 8-GPU pod and lets the replacements settle; returns its outcome.
const PodOutcome& SubmitTrain(Simulator& sim) {
  Workload train;
  EXPECT_TRUE(AppendManifests(kTrain, "train.yaml", train).ok());
  EXPECT_TRUE(sim.SubmitWorkloadPod(train.pods[0]).ok());
  EXPECT_TRUE(sim.Settle().ok());
  EXPECT_TRUE(sim.Settle().ok());
  for (const PodOutcome& o : sim.outcomes()) {
    if (o.pod->meta.name == "train") return o;
  }
  ADD_FAILURE() << "no outcome for train";
  return sim.outcomes().front();
}

TEST(SimConsolidationTest, TheFewestPodsMoveTheWaitingPodBindsAndTheReplacementsRunElsewhere) {
  auto sim = Simulate(FourNodesWorkload(/*movable=*/true));
  ASSERT_NE(sim, nullptr);
  const PodOutcome& train = SubmitTrain(*sim);
  ASSERT_EQ(train.state, PodState::kScheduled) << train.message;
  std::vector<std::string> moved;
  std::map<std::string, std::string> planned;  // moved pod -> its destination
  for (const Preemption& p : sim->preemptions()) {
    ASSERT_TRUE(p.moves());
    for (size_t i = 0; i < p.victims.size(); ++i) planned[p.victims[i]] = p.destinations[i];
  }
  int64_t replacements = 0;
  int64_t running = 0;
  for (const PodOutcome& o : sim->outcomes()) {
    if (o.state == PodState::kMoved) {
      moved.push_back(o.pod->meta.name);
      EXPECT_EQ(o.pod->node_name, train.node) << "only the pods of one node move";
    }
    if (!o.replaces.empty()) {
      EXPECT_TRUE(o.replaces_moved);
      EXPECT_EQ(o.state, PodState::kScheduled) << o.pod->Key() << ": " << o.message;
      EXPECT_NE(o.node, train.node);
      EXPECT_EQ(o.node, planned[o.replaces]) << "the room held for it";
      ++replacements;
    }
    if (o.state == PodState::kScheduled || o.state == PodState::kPreBound) ++running;
  }
  EXPECT_EQ(moved.size(), 2u);  // the fewest: one node's two replicas
  EXPECT_EQ(replacements, 2);
  EXPECT_EQ(running, 9);  // 8 replicas and the 8-GPU pod
  EXPECT_EQ(sim->cluster().Counters().api_evictions, 2);
  EXPECT_EQ(sim->cluster().Counters().api_deletes, 0);  // nothing preempted
  const Report r = BuildReport(*sim, "in.yaml");
  EXPECT_NE(FormatReportText(r, 10, 10).find("Consolidations: 1 (2 pods moved)"),
            std::string::npos);
}

TEST(SimConsolidationTest, UnmarkedPodsNeverMove) {
  auto sim = Simulate(FourNodesWorkload(/*movable=*/false));
  ASSERT_NE(sim, nullptr);
  const PodOutcome& train = SubmitTrain(*sim);
  EXPECT_EQ(train.state, PodState::kUnschedulable);
  EXPECT_EQ(sim->cluster().Counters().api_evictions, 0);
  for (const PodOutcome& o : sim->outcomes()) EXPECT_NE(o.state, PodState::kMoved);
}

TEST(SimConsolidationTest, APodDisruptionBudgetThatForbidsTheMoveMovesNothing) {
  const std::string pdb =
      "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: infer}\n"
      "spec:\n  selector: {matchLabels: {app: infer}}\n  maxUnavailable: 0\n"
      "status: {disruptionsAllowed: 0}\n---\n";
  auto sim = Simulate(FourNodesWorkload(/*movable=*/true, pdb));
  ASSERT_NE(sim, nullptr);
  const PodOutcome& train = SubmitTrain(*sim);
  EXPECT_EQ(train.state, PodState::kUnschedulable);
  EXPECT_EQ(sim->cluster().Counters().api_evictions, 0);
  for (const PodOutcome& o : sim->outcomes()) EXPECT_NE(o.state, PodState::kMoved);
}

// A gang of `members` 8-GPU pods (PodGroup "job", minMember = members), after the cluster.
constexpr std::string_view kGangPolicy =
    "apiVersion: scheduling.x-k8s.io/v1alpha1\nkind: PodGroup\nmetadata: {name: job}\n"
    "spec: {minMember: 2}\n---\n";

// Submits two 8-GPU members of gang "job" and settles; returns their outcomes.
std::vector<PodOutcome> SubmitGang(Simulator& sim) {
  std::string yaml;
  for (int i = 0; i < 2; ++i) {
    yaml += "apiVersion: v1\nkind: Pod\nmetadata: {name: worker-" + std::to_string(i) +
            ", labels: {scheduling.x-k8s.io/pod-group: job}}\nspec:\n  containers: [{name: c, "
            "resources: {limits: {nvidia.com/gpu: \"8\"}}}]\n---\n";
  }
  Workload gang;
  EXPECT_TRUE(AppendManifests(yaml, "gang.yaml", gang).ok());
  for (const api::PodPtr& pod : gang.pods) EXPECT_TRUE(sim.SubmitWorkloadPod(pod).ok());
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(sim.Settle().ok());
  std::vector<PodOutcome> out;
  for (const PodOutcome& o : sim.outcomes()) {
    if (o.pod->meta.name.starts_with("worker-")) out.push_back(o);
  }
  EXPECT_EQ(out.size(), 2u);
  return out;
}

TEST(SimConsolidationTest, AGangGetsMovesOnTwoNodesAndBinds) {
  auto sim = Simulate(FourNodesWorkload(/*movable=*/true, std::string(kGangPolicy)));
  ASSERT_NE(sim, nullptr);
  std::set<std::string> nodes;
  for (const PodOutcome& o : SubmitGang(*sim)) {
    ASSERT_EQ(o.state, PodState::kScheduled) << o.pod->Key() << ": " << o.message;
    nodes.insert(o.node);
  }
  EXPECT_EQ(nodes.size(), 2u);
  EXPECT_EQ(sim->cluster().Counters().api_evictions, 4);  // the two nodes' two replicas each
  EXPECT_EQ(sim->cluster().Counters().api_deletes, 0);
  int64_t replacements = 0;
  for (const PodOutcome& o : sim->outcomes()) {
    if (o.state == PodState::kMoved) EXPECT_TRUE(nodes.count(o.pod->node_name)) << o.pod->Key();
    if (o.replaces.empty()) continue;
    ++replacements;
    EXPECT_EQ(o.state, PodState::kScheduled) << o.pod->Key() << ": " << o.message;
    EXPECT_FALSE(nodes.count(o.node)) << o.pod->Key() << " on a member's node";
  }
  EXPECT_EQ(replacements, 4);
}

// Only n1's replicas may move: one member could get room, the gang cannot, so nothing moves.
TEST(SimConsolidationTest, AGangThatOnlyPartlyFitsAfterMovesMovesNothing) {
  std::string yaml;
  for (int n = 1; n <= 3; ++n) {
    const std::string node = "n" + std::to_string(n);
    yaml += GpuNode(node, 8);
    for (int d = 0; d < 2; ++d) {
      yaml += Replica("infer-" + node + "-" + std::to_string(d), node, d, "infer", n == 1);
    }
  }
  Workload w;
  ASSERT_TRUE(AppendManifests(yaml + std::string(kGangPolicy), "in.yaml", w).ok());
  auto sim = Simulate(w);
  ASSERT_NE(sim, nullptr);
  for (const PodOutcome& o : SubmitGang(*sim)) {
    EXPECT_NE(o.state, PodState::kScheduled) << o.pod->Key();
    EXPECT_TRUE(o.nominated_node.empty()) << o.pod->Key() << " -> " << o.nominated_node;
  }
  EXPECT_EQ(sim->cluster().Counters().api_evictions, 0);
}

TEST(SimConsolidationTest, AGangWhoseMovesABudgetForbidsMovesNothing) {
  const std::string pdb =
      "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: infer}\n"
      "spec:\n  selector: {matchLabels: {app: infer}}\n  maxUnavailable: 0\n"
      "status: {disruptionsAllowed: 0}\n---\n";
  auto sim = Simulate(FourNodesWorkload(/*movable=*/true, pdb + std::string(kGangPolicy)));
  ASSERT_NE(sim, nullptr);
  for (const PodOutcome& o : SubmitGang(*sim)) EXPECT_NE(o.state, PodState::kScheduled);
  EXPECT_EQ(sim->cluster().Counters().api_evictions, 0);
  for (const PodOutcome& o : sim->outcomes()) EXPECT_NE(o.state, PodState::kMoved);
}

// A replay: two 1-GPU services (Deployments marked movable, 10 h) end up on two 4-GPU nodes next
// to 3-GPU batch pods; when those leave, a 4-GPU pod arrives at 2 h and fits only once one
// service moves. The replacement goes on serving until the moved pod would have ended (10 h),
// not 10 h more.
TEST(SimConsolidationTest, AReplayMovesAServiceAndItsReplacementEndsWhenTheMovedPodWould) {
  auto service = [](const std::string& name, const std::string& arrival) {
    return "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: " + name +
           "}\nspec:\n  selector: {matchLabels: {app: " + name +
           "}}\n  template:\n    metadata:\n      labels: {app: " + name +
           "}\n      annotations: {gpusched.io/movable: \"true\", gpusched.io/arrival: \"" +
           arrival +
           "\", gpusched.io/duration: \"10h\"}\n    spec: {containers: [{name: c, resources: "
           "{limits: {nvidia.com/gpu: 1}}}]}\n---\n";
  };
  auto timed = [](const std::string& name, int gpus, const std::string& arrival,
                  const std::string& duration) {
    return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name +
           "\n  annotations: {gpusched.io/arrival: \"" + arrival + "\", gpusched.io/duration: \"" +
           duration + "\"}\nspec:\n  containers: [{name: c, resources: {limits: {nvidia.com/gpu: " +
           std::to_string(gpus) + "}}}]\n---\n";
  };
  Workload w;
  ASSERT_TRUE(AppendManifests(GpuNode("a", 4) + GpuNode("b", 4) + timed("batch-1", 3, "0s", "1h") +
                                  service("embed-1", "1s") + timed("batch-2", 3, "2s", "1h") +
                                  service("embed-2", "3s") + timed("train", 4, "2h", "1h"),
                              "in.yaml", w)
                  .ok());
  ExpandControllers(w);
  static const common::FakeClock wall;
  SimOptions opts;
  opts.check_invariants = true;
  opts.arrival_interval = common::Duration(0);
  auto sim = Simulator::Create(SimulationDefaultConfig(), {plugins::InTreeRegistry(), wall}, opts);
  ASSERT_TRUE(sim.ok());
  auto r = RunReplay(**sim, w);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->moves, 1);
  EXPECT_EQ(r->moved_again, 0);
  const PodOutcome* replacement = nullptr;
  for (const PodOutcome& o : (*sim)->outcomes()) {
    if (o.pod->meta.name == "train") EXPECT_EQ(o.state, PodState::kScheduled) << o.message;
    if (!o.replaces.empty()) replacement = &o;
  }
  ASSERT_NE(replacement, nullptr);
  EXPECT_TRUE(replacement->replaces_moved);
  EXPECT_TRUE(replacement->deleted) << "it left when the moved pod would have";
  EXPECT_NEAR(r->span_hours, 10, 0.01);
  EXPECT_NE(FormatReplayText(*r).find("Consolidation: 1 pods moved"), std::string::npos)
      << FormatReplayText(*r);
}

}  // namespace
}  // namespace gpusched::sim
