// SPDX-License-Identifier: Apache-2.0
// `gpusched consolidate --dry-run`'s planner (consolidation_dry_run.h): examples on the e2e
// issue's cluster, and its invariants over random clusters:
//   - no more moves than the budget, no pod moved twice, every move to another node;
//   - every room it lists held: the probe bound on the planned node once the moves were made;
//   - moving whole-GPU pods frees no GPU and takes none: the free GPUs are the same after;
//   - the cluster's ledger never over-commits (check_invariants).
#include "src/sim/consolidation_dry_run.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <cstdio>
#include <memory>
#include <set>
#include <string>

#include "src/common/clock.h"
#include "src/common/random.h"
#include "src/plugins/in_tree_registry.h"
#include "src/sim/consolidation_test_manifests.h"
#include "src/sim/simulator.h"
#include "src/sim/workload.h"

namespace gpusched::sim {
namespace {

std::unique_ptr<Simulator> Simulate(const std::string& yaml, int32_t max_moves,
                                    config::SchedulerConfig base = SimulationDefaultConfig()) {
  static const common::FakeClock wall;
  Workload w;
  EXPECT_TRUE(AppendManifests(yaml, "in.yaml", w).ok());
  SimOptions opts;
  opts.check_invariants = true;
  auto sim = Simulator::Create(DryRunConfig(std::move(base), max_moves),
                               {plugins::InTreeRegistry(), wall}, opts);
  EXPECT_TRUE(sim.ok()) << sim.status().ToString();
  if (!sim.ok()) return nullptr;
  EXPECT_TRUE((*sim)->Run(w).ok());
  return std::move(*sim);
}

TEST(ConsolidationDryRunTest, MovesTheFewestPodsToEmptyWholeNodes) {
  auto sim = Simulate(FourNodes(/*movable=*/true, /*gpu_taint=*/true), 10);
  ASSERT_NE(sim, nullptr);
  auto r = PlanConsolidationMoves(*sim, 10);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->sizes.size(), 3u);  // 8, 4, 2
  EXPECT_EQ(r->sizes[0].gpus, 8);
  EXPECT_EQ(r->sizes[0].free_now, 0);
  // Two moves per node empty three nodes onto the fourth.
  EXPECT_EQ(r->sizes[0].made, 3);
  EXPECT_EQ(r->moves, 6);
  for (const RoomPlan& p : r->plans) {
    EXPECT_TRUE(p.held) << p.node;
    for (const PlannedMove& m : p.moves) EXPECT_FALSE(m.to.empty()) << m.pod << ": " << m.message;
  }
  EXPECT_EQ(r->before.free_gpus, 24);
  EXPECT_EQ(r->after.free_gpus, 24);
  EXPECT_EQ(r->before.free_nodes, 0);
  EXPECT_EQ(r->after.free_nodes, 3);
  EXPECT_EQ(r->before.largest_free_block, 6);
  EXPECT_EQ(r->after.largest_free_block, 8);
  const std::string text = FormatDryRunText(*r);
  EXPECT_NE(text.find("room for 8 GPUs on n"), std::string::npos) << text;
  EXPECT_NE(text.find("default/infer-n"), std::string::npos) << text;
  const boost::json::value json = DryRunJson(*r);
  EXPECT_EQ(json.at("moves").as_int64(), 6);
  EXPECT_EQ(json.at("after").at("freeNodes").as_int64(), 3);
}

TEST(ConsolidationDryRunTest, UnmarkedPodsNeverMove) {
  auto sim = Simulate(FourNodes(/*movable=*/false, /*gpu_taint=*/true), 10);
  ASSERT_NE(sim, nullptr);
  auto r = PlanConsolidationMoves(*sim, 10);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->moves, 0);
  EXPECT_TRUE(r->plans.empty());
  ASSERT_FALSE(r->sizes.empty());
  EXPECT_NE(r->sizes[0].next.find("nvidia.com/gpu"), std::string::npos) << r->sizes[0].next;
  EXPECT_EQ(r->after.free_nodes, r->before.free_nodes);
  EXPECT_EQ(sim->cluster().Counters().api_evictions, 0);
  EXPECT_NE(FormatDryRunText(*r).find("Moves (0)"), std::string::npos);
}

TEST(ConsolidationDryRunTest, StopsAtTheBudget) {
  auto sim = Simulate(FourNodes(/*movable=*/true, /*gpu_taint=*/true), 3);
  ASSERT_NE(sim, nullptr);
  auto r = PlanConsolidationMoves(*sim, 3);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->moves, 2);  // a second plan would make 4
  EXPECT_EQ(r->sizes[0].made, 1);
  EXPECT_EQ(sim->cluster().Counters().api_evictions, 2);
}

TEST(ConsolidationDryRunTest, AProfileWithoutConsolidationIsAnError) {
  config::SchedulerConfig cfg = SimulationDefaultConfig();
  cfg.profiles.front().plugins.at(config::Point::kPostFilter).disabled.push_back({"*"});
  auto sim = Simulate(FourNodes(/*movable=*/true, /*gpu_taint=*/true), 10, cfg);
  ASSERT_NE(sim, nullptr);
  auto r = PlanConsolidationMoves(*sim, 10);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("does not run the Consolidation plugin"), std::string::npos)
      << r.status().ToString();
}

// Random clusters of 2..5 nodes (2, 4 or 8 GPUs), each device free or held by a 1-GPU replica,
// movable or not; random budgets.
TEST(ConsolidationDryRunTest, InvariantsHoldOnRandomClusters) {
  common::Random rng(7);
  int rounds_with_moves = 0;
  for (int round = 0; round < 300; ++round) {
    std::string yaml;
    const int nodes = 2 + static_cast<int>(rng.Uniform(4));
    int pod = 0;
    for (int n = 0; n < nodes; ++n) {
      static constexpr int kSizes[] = {2, 4, 8};
      const int gpus = kSizes[rng.Uniform(3)];
      const std::string node = "n" + std::to_string(n);
      yaml += GpuNode(node, gpus, /*gpu_taint=*/true);
      for (int d = 0; d < gpus; ++d) {
        if (rng.Uniform(100) < 45) continue;
        yaml += Replica("p" + std::to_string(pod), node, d, "rs" + std::to_string(pod % 3),
                        rng.Uniform(100) < 70);
        ++pod;
      }
    }
    const auto budget = static_cast<int32_t>(1 + rng.Uniform(8));
    SCOPED_TRACE("round " + std::to_string(round) + ", budget " + std::to_string(budget) + "\n" +
                 yaml);
    auto sim = Simulate(yaml, budget);
    ASSERT_NE(sim, nullptr);
    auto r = PlanConsolidationMoves(*sim, budget);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_LE(r->moves, budget);
    std::set<std::string> moved;
    for (const RoomPlan& p : r->plans) {
      EXPECT_TRUE(p.held) << p.probe << " on " << p.node;
      for (const PlannedMove& m : p.moves) {
        EXPECT_TRUE(moved.insert(m.pod).second) << m.pod << " moved twice";
        EXPECT_FALSE(m.to.empty()) << m.pod << ": " << m.message;
        EXPECT_NE(m.to, m.from) << m.pod;
      }
    }
    EXPECT_EQ(r->after.free_gpus, r->before.free_gpus);
    EXPECT_EQ(sim->cluster().Counters().api_evictions, r->moves);
    rounds_with_moves += r->moves > 0;
  }
  std::printf("dry-run property: %d of 300 clusters planned moves\n", rounds_with_moves);
  EXPECT_GT(rounds_with_moves, 100) << "the clusters must exercise the moves";
}

}  // namespace
}  // namespace gpusched::sim
