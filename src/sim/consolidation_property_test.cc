// SPDX-License-Identifier: Apache-2.0
// Consolidation's invariants over thousands of random clusters, each run in the simulator with
// the default profile (issue #41):
//   1. no pod moves unless the waiting pod binds afterwards (no other arrival intervenes);
//   2. no pod moves twice for the same waiting pod, and no replacement moves again;
//   3. against a brute-force oracle (every pod here asks one whole GPU, so a node's room is a
//      count): the waiting pod binds exactly when some node has free + movable devices >= its
//      request, needing m <= maxMovesPerPod moves, with at least m free devices on the other
//      nodes; and then the fewest such m pods move;
//   4. a gang of two gets moves for both members or none (below);
//   5. 1 and 2 again with uneven cpu requests, where a moved pod may fit on no other node and
//      the plan must leave it and move others (no oracle: the room is no longer a count).
// The simulator also checks after every placement that no device is over-committed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "src/common/clock.h"
#include "src/common/random.h"
#include "src/plugins/in_tree_registry.h"
#include "src/sim/consolidation_test_manifests.h"
#include "src/sim/simulator.h"
#include "src/sim/workload.h"

namespace gpusched::sim {
namespace {

constexpr int kMaxMovesPerPod = 8;  // the plugin's default

struct Cluster {
  std::vector<int> gpus;     // per node
  std::vector<int> used;     // per node: devices held
  std::vector<int> movable;  // per node: devices held by movable pods
  std::string yaml;
};

// `uneven_cpu`: each running pod asks 1, 8, 24 or 40 cpus (of the node's 64), else none.
Cluster RandomCluster(common::Random& rng, bool uneven_cpu = false) {
  Cluster c;
  const int nodes = 2 + static_cast<int>(rng.Uniform(4));
  int pod = 0;
  for (int n = 0; n < nodes; ++n) {
    static constexpr int kSizes[] = {2, 4, 8};
    const int gpus = kSizes[rng.Uniform(3)];
    const std::string node = "n" + std::to_string(n);
    c.gpus.push_back(gpus);
    c.used.push_back(0);
    c.movable.push_back(0);
    c.yaml += GpuNode(node, gpus);
    int cpu_left = 64;
    for (int d = 0; d < gpus; ++d) {
      if (rng.Uniform(100) < 45) continue;  // a free device
      static constexpr int kCpus[] = {1, 8, 24, 40};
      const int cpu = uneven_cpu ? kCpus[rng.Uniform(4)] : 0;
      if (cpu > cpu_left) continue;
      cpu_left -= cpu;
      const uint64_t kind = rng.Uniform(10);
      const bool bare = kind == 0;  // no controller: never movable
      const bool movable = !bare && kind < 8;
      ++c.used.back();
      if (movable) ++c.movable.back();
      const std::string name = "p" + std::to_string(pod++);
      c.yaml += Replica(name, node, d, bare ? "" : "rs" + std::to_string(rng.Uniform(3)), movable,
                        cpu > 0 ? std::to_string(cpu) : "");
    }
  }
  return c;
}

// The oracle: -1 when the pod cannot bind, else the fewest moves that let it bind (0: it fits).
int FewestMoves(const Cluster& c, int want) {
  int best = -1;
  for (size_t n = 0; n < c.gpus.size(); ++n) {
    const int free = c.gpus[n] - c.used[n];
    if (free >= want) return 0;
    const int moves = want - free;
    if (moves > c.movable[n] || moves > kMaxMovesPerPod) continue;
    int room_elsewhere = 0;  // free devices on the other nodes: one per moved pod
    for (size_t o = 0; o < c.gpus.size(); ++o) {
      if (o != n) room_elsewhere += c.gpus[o] - c.used[o];
    }
    if (room_elsewhere >= moves && (best < 0 || moves < best)) best = moves;
  }
  return best;
}

// The cluster of `yaml` in a simulator with the default profile and invariant checks; nullptr
// (with a test failure) when it does not run.
std::unique_ptr<Simulator> RunCluster(const std::string& yaml) {
  static const common::FakeClock wall;
  Workload w;
  EXPECT_TRUE(AppendManifests(yaml, "in.yaml", w).ok());
  SimOptions opts;
  opts.check_invariants = true;
  auto sim = Simulator::Create(SimulationDefaultConfig(), {plugins::InTreeRegistry(), wall}, opts);
  EXPECT_TRUE(sim.ok());
  if (!sim.ok()) return nullptr;
  common::Status s = (*sim)->Run(w);
  EXPECT_TRUE(s.ok()) << s.ToString() << "\n" << yaml;
  return s.ok() ? std::move(*sim) : nullptr;
}

// Submits "train" asking `gpus` GPUs (and `cpus` cpus when > 0) and settles; then whether it
// bound and the pods that moved (a replacement that moved again fails the test).
struct AfterTrain {
  bool bound = false;
  std::multiset<std::string> moved;
};
AfterTrain SubmitTrain(Simulator& sim, int gpus, int cpus = 0) {
  AfterTrain out;
  Workload waiting;
  const std::string cpu = cpus > 0 ? ", cpu: \"" + std::to_string(cpus) + "\"" : "";
  EXPECT_TRUE(AppendManifests("apiVersion: v1\nkind: Pod\nmetadata: {name: train}\nspec:\n"
                              "  containers: [{name: c, resources: {limits: {nvidia.com/gpu: \"" +
                                  std::to_string(gpus) + "\"" + cpu + "}}}]\n",
                              "train.yaml", waiting)
                  .ok());
  if (waiting.pods.empty()) return out;
  EXPECT_TRUE(sim.SubmitWorkloadPod(waiting.pods[0]).ok());
  EXPECT_TRUE(sim.Settle().ok());
  EXPECT_TRUE(sim.Settle().ok());
  for (const PodOutcome& o : sim.outcomes()) {
    if (o.pod->meta.name == "train") out.bound = o.state == PodState::kScheduled;
    if (o.state != PodState::kMoved) continue;
    out.moved.insert(o.pod->Key());
    EXPECT_TRUE(o.replaces.empty()) << "a replacement moved again";
  }
  return out;
}

TEST(ConsolidationPropertyTest, MovesOnlyWhenTheWaitingPodBindsAndTheFewest) {
  common::Random rng(20261206);
  int consolidated = 0;
  for (int round = 0; round < 1000; ++round) {
    const Cluster c = RandomCluster(rng);
    const int max_gpus = *std::max_element(c.gpus.begin(), c.gpus.end());
    const int want = 1 + static_cast<int>(rng.Uniform(static_cast<uint64_t>(max_gpus)));
    auto sim = RunCluster(c.yaml);
    ASSERT_NE(sim, nullptr);
    const auto [bound, moved] = SubmitTrain(*sim, want);
    std::multiset<std::string> listed;
    for (const Preemption& p : sim->preemptions()) {
      ASSERT_TRUE(p.moves()) << "all priorities are equal: nothing to preempt";
      EXPECT_EQ(p.pod, "default/train");
      listed.insert(p.victims.begin(), p.victims.end());
    }
    const std::string where = "round " + std::to_string(round) + ", train asks " +
                              std::to_string(want) + " GPUs\n" + c.yaml;
    EXPECT_EQ(listed, moved) << where;
    for (const std::string& key : listed) EXPECT_EQ(listed.count(key), 1u) << key << where;
    if (!moved.empty())
      EXPECT_TRUE(bound) << "pods moved but the waiting pod did not bind\n" << where;
    const int oracle = FewestMoves(c, want);
    EXPECT_EQ(bound, oracle >= 0) << where;
    if (oracle >= 0) EXPECT_EQ(static_cast<int>(moved.size()), oracle) << where;
    if (!moved.empty()) ++consolidated;
    if (HasFailure()) return;
  }
  std::printf("consolidation property: %d of 1000 clusters moved pods\n", consolidated);
  EXPECT_GT(consolidated, 100);  // the cases exercise moves, not only direct fits
}

// 5. Uneven cpu: a moved pod may fit on no other node (the plan pins it and moves others); still
//    no pod moves unless the waiting pod binds, and none twice.
TEST(ConsolidationPropertyTest, WithUnevenCpuMovesOnlyWhenTheWaitingPodBinds) {
  common::Random rng(20261208);
  int consolidated = 0;
  for (int round = 0; round < 500; ++round) {
    const Cluster c = RandomCluster(rng, /*uneven_cpu=*/true);
    const int max_gpus = *std::max_element(c.gpus.begin(), c.gpus.end());
    const int want = 1 + static_cast<int>(rng.Uniform(static_cast<uint64_t>(max_gpus)));
    const int cpu = 1 + static_cast<int>(rng.Uniform(40));
    auto sim = RunCluster(c.yaml);
    ASSERT_NE(sim, nullptr);
    const auto [bound, moved] = SubmitTrain(*sim, want, cpu);
    const std::string where = "round " + std::to_string(round) + ", train asks " +
                              std::to_string(want) + " GPUs and " + std::to_string(cpu) +
                              " cpus\n" + c.yaml;
    for (const std::string& key : moved) EXPECT_EQ(moved.count(key), 1u) << key << where;
    if (!moved.empty()) {
      EXPECT_TRUE(bound) << "pods moved but the waiting pod did not bind\n" << where;
      ++consolidated;
    }
    if (HasFailure()) return;
  }
  std::printf("uneven-cpu consolidation property: %d of 500 clusters moved pods\n", consolidated);
  EXPECT_GT(consolidated, 50);
}

// 4. A gang of two members (PodGroup minMember 2, each asking the same random count): pods move
//    only when every member binds afterwards; a member never moves; no pod moves twice.
TEST(ConsolidationPropertyTest, AGangGetsMovesForAllMembersOrNone) {
  common::Random rng(20261207);
  int consolidated = 0;
  for (int round = 0; round < 500; ++round) {
    const Cluster c = RandomCluster(rng);
    const int max_gpus = *std::max_element(c.gpus.begin(), c.gpus.end());
    const int want = 1 + static_cast<int>(rng.Uniform(static_cast<uint64_t>(max_gpus)));
    auto sim = RunCluster(c.yaml +
                          "apiVersion: scheduling.x-k8s.io/v1alpha1\nkind: PodGroup\n"
                          "metadata: {name: job}\nspec: {minMember: 2}\n");
    ASSERT_NE(sim, nullptr);
    std::string gang;
    for (int i = 0; i < 2; ++i) {
      gang += "apiVersion: v1\nkind: Pod\nmetadata: {name: worker-" + std::to_string(i) +
              ", labels: {scheduling.x-k8s.io/pod-group: job}}\nspec:\n  containers: [{name: c, "
              "resources: {limits: {nvidia.com/gpu: \"" +
              std::to_string(want) + "\"}}}]\n---\n";
    }
    Workload members;
    ASSERT_TRUE(AppendManifests(gang, "gang.yaml", members).ok());
    for (const api::PodPtr& pod : members.pods) ASSERT_TRUE(sim->SubmitWorkloadPod(pod).ok());
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(sim->Settle().ok());

    int bound = 0;
    std::multiset<std::string> moved;
    for (const PodOutcome& o : sim->outcomes()) {
      const bool member = o.pod->meta.name.starts_with("worker-");
      if (member && o.state == PodState::kScheduled) ++bound;
      if (o.state != PodState::kMoved) continue;
      moved.insert(o.pod->Key());
      EXPECT_FALSE(member) << "a gang member moved";
      EXPECT_TRUE(o.replaces.empty()) << "a replacement moved again";
    }
    const std::string where = "round " + std::to_string(round) + ", members ask " +
                              std::to_string(want) + " GPUs\n" + c.yaml;
    for (const std::string& key : moved) EXPECT_EQ(moved.count(key), 1u) << key << where;
    EXPECT_TRUE(bound == 0 || bound == 2) << "the gang bound in part\n" << where;
    if (!moved.empty()) EXPECT_EQ(bound, 2) << "pods moved but the gang did not bind\n" << where;
    EXPECT_EQ(sim->cluster().Counters().api_evictions, static_cast<int64_t>(moved.size()));
    if (!moved.empty()) ++consolidated;
    if (HasFailure()) return;
  }
  std::printf("gang consolidation property: %d of 500 clusters moved pods\n", consolidated);
  EXPECT_GT(consolidated, 30);  // the cases exercise a gang's moves
}

}  // namespace
}  // namespace gpusched::sim
