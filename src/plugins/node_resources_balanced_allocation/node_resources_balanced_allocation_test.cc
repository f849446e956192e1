// SPDX-License-Identifier: Apache-2.0
#include "src/plugins/node_resources_balanced_allocation/node_resources_balanced_allocation.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "src/plugins/names.h"
#include "src/testing/builders.h"
#include "src/testing/plugin_fixture.h"

GPUSCHED_TESTING_COUNT_ALLOCATIONS();

namespace gpusched::plugins::node_resources_balanced_allocation {
namespace {

using testing::MakeNode;
using testing::MakePod;

// Upstream's pod specs: cpu and memory (1000m/2000 + 2000m/3000), the same with 3 GPUs in the
// second container, and cpu only (1000m + 2000m, memory 0).
api::PodPtr CpuAndMemory(std::string_view node, std::string_view name = "cm") {
  return MakePod("ns", name)
      .NodeName(node)
      .Container("a", {{"cpu", "1000m"}, {"memory", "2000"}})
      .Container("b", {{"cpu", "2000m"}, {"memory", "3000"}})
      .Ptr();
}
api::PodPtr CpuAndMemoryAndGpu(std::string_view node) {
  return MakePod("ns", "cmg")
      .NodeName(node)
      .Container("a", {{"cpu", "1000m"}, {"memory", "2000"}})
      .Container("b", {{"cpu", "2000m"}, {"memory", "3000"}, {"nvidia.com/gpu", "3"}})
      .Ptr();
}
api::PodPtr CpuOnly(std::string_view node) {
  return MakePod("ns", "c")
      .NodeName(node)
      .Container("a", {{"cpu", "1000m"}, {"memory", "0"}})
      .Container("b", {{"cpu", "2000m"}, {"memory", "0"}})
      .Ptr();
}

// upstream's makeNode(name, milliCPU, memory, scalar)
api::NodePtr Node(std::string_view name, std::string_view cpu, std::string_view memory,
                  std::string_view gpus = "") {
  testing::NodeBuilder b = MakeNode(name).Cpu(cpu).Memory(memory);
  if (!gpus.empty()) b.Resource("nvidia.com/gpu", gpus);
  return b.Ptr();
}

constexpr std::string_view kCpuMemGpu =
    R"({"resources":[{"name":"cpu","weight":1},{"name":"memory","weight":1},)"
    R"({"name":"nvidia.com/gpu","weight":1}]})";

// Upstream's TestNodeResourcesBalancedAllocation (its hand-computed scores), plus the cases
// upstream leaves implicit.
TEST(BalancedAllocationTest, ScoresAsUpstream) {
  struct Case {
    std::string name;
    api::PodPtr pod;
    std::vector<api::PodPtr> pods;
    std::vector<api::NodePtr> nodes;
    std::string args;
    std::vector<int64_t> want;  // empty: PreScore skips
  };
  const std::vector<Case> cases = {
      {"nothing requested: skipped in PreScore",
       MakePod("ns", "p").Container("c", {}).Ptr(),
       {},
       {Node("node1", "4", "10000"), Node("node2", "4", "10000")},
       "",
       {}},
      // node1: cpu 3000/4000 = .75, memory 5000/10000 = .5, std .125 -> 87; node2: .5/.5 -> 100
      {"nothing scheduled, differently sized nodes",
       CpuAndMemory(""),
       {},
       {Node("node1", "4", "10000"), Node("node2", "6", "10000")},
       "",
       {87, 100}},
      // node1: .6 / .25 -> 82; node2: .6 / .5 -> 95
      {"pods scheduled with resources",
       CpuAndMemory(""),
       {CpuOnly("node1"), CpuAndMemory("node2")},
       {Node("node1", "10", "20000"), Node("node2", "10", "20000")},
       "",
       {82, 95}},
      // node2: .6 / 10000/50000 = .2 -> 80
      {"pods scheduled, differently sized nodes",
       CpuAndMemory(""),
       {CpuOnly("node1"), CpuAndMemory("node2")},
       {Node("node1", "10", "20000"), Node("node2", "10", "50000")},
       "",
       {82, 80}},
      // node1: 6000/6000 = 1, 0 -> 50; node2: 1, .5 -> 75
      {"requests at node capacity",
       CpuOnly(""),
       {CpuOnly("node1"), CpuAndMemory("node2")},
       {Node("node1", "6", "10000"), Node("node2", "6", "10000")},
       "",
       {50, 75}},
      // node1: .857, .125, 4/8 -> std .3002 -> 70; node2: .857, .125, 1/8 -> 65
      {"a scalar resource the pod requests is scored",
       MakePod("ns", "p").Container("c", {{"memory", "0"}, {"nvidia.com/gpu", "1"}}).Ptr(),
       {CpuAndMemoryAndGpu("node1"), CpuAndMemory("node2")},
       {Node("node1", "3500m", "40000", "8"), Node("node2", "3500m", "40000", "8")},
       std::string(kCpuMemGpu),
       {70, 65}},
      // .857 and .125 on both: std .366 -> 63
      {"a scalar resource the pod does not request is left out",
       CpuAndMemory(""),
       {},
       {Node("node1", "3500m", "40000", "8"), Node("node2", "3500m", "40000")},
       std::string(kCpuMemGpu),
       {63, 63}},
      // cpu 3000/3500 alone (memory allocatable 0 is left out): one fraction, std 0
      {"a resource with no allocatable is left out",
       CpuAndMemory(""),
       {},
       {MakeNode("node1").Cpu("3500m").Ptr()},
       "",
       {100}},
      {"\"pods\" is never scored",
       CpuAndMemory(""),
       {},
       {Node("node1", "4", "10000")},
       R"({"resources":[{"name":"cpu"},{"name":"memory"},{"name":"pods"}]})",
       {87}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto plugin = testing::MustCreate<BalancedAllocation>(c.args);
    ASSERT_NE(plugin, nullptr);
    std::vector<framework::NodeInfo> infos;
    for (const api::NodePtr& n : c.nodes) {
      framework::NodeInfo info;
      info.node = n;
      for (const api::PodPtr& p : c.pods) {
        if (p->node_name == n->meta.name) info.AddPod(p, api::GpuAssignment{});
      }
      infos.push_back(std::move(info));
    }
    const framework::Snapshot snapshot = testing::SnapshotOfInfos(std::move(infos));
    EXPECT_EQ(testing::NormalizedScores(*plugin, *c.pod, snapshot, g_counting, g_allocations),
              c.want);
  }
}

TEST(BalancedAllocationTest, BalancedScoreFormula) {
  // Two fractions: half their difference; three or more: the population standard deviation.
  EXPECT_EQ(BalancedScore(std::vector<int64_t>{3, 5}, std::vector<int64_t>{4, 10}), 87);
  EXPECT_EQ(BalancedScore(std::vector<int64_t>{1, 1, 1}, std::vector<int64_t>{2, 2, 2}), 100);
  // 1, 0, .5: mean .5, std sqrt((.25 + .25 + 0) / 3) = .408 -> 59
  EXPECT_EQ(BalancedScore(std::vector<int64_t>{4, 0, 1}, std::vector<int64_t>{4, 8, 2}), 59);
  // Fractions are capped at 1: 12/4 counts as 1.
  EXPECT_EQ(BalancedScore(std::vector<int64_t>{12, 4}, std::vector<int64_t>{4, 4}), 100);
  EXPECT_EQ(BalancedScore(std::vector<int64_t>{5, 7}, std::vector<int64_t>{10, 0}), 100);
  EXPECT_EQ(BalancedScore(std::vector<int64_t>{}, std::vector<int64_t>{}), 100);
}

TEST(BalancedAllocationTest, ValidatesArgs) {
  struct Case {
    std::string name;
    std::string args;
    std::string error;  // "" = valid
  };
  const std::vector<Case> cases = {
      {"defaults", "{}", ""},
      {"weight 1 and absent weight", R"({"resources":[{"name":"cpu","weight":1},{"name":"x/y"}]})",
       ""},
      {"weight 0 reads as 1", R"({"resources":[{"name":"cpu","weight":0}]})", ""},
      {"a weight other than 1", R"({"resources":[{"name":"cpu","weight":2}]})",
       "resources[0].weight: must be 1, got 2"},
      {"a duplicate name", R"({"resources":[{"name":"cpu"},{"name":"memory"},{"name":"cpu"}]})",
       "resources[2].name: duplicate resource \"cpu\""},
      {"a missing name", R"({"resources":[{"weight":1}]})", "resources[0].name: required"},
      {"an empty name", R"({"resources":[{"name":""}]})", "resources[0].name: required"},
      {"an unknown field", R"({"resources":[{"name":"cpu","scale":3}]})",
       "resources[0].scale: unknown field"},
      {"an unknown top-level field", R"({"resource":[]})", "resource: unknown field"},
      {"resources must be an array", R"({"resources":{"name":"cpu"}})", "resources: must be"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto got = ParseArgs(boost::json::parse(c.args));
    if (c.error.empty()) {
      EXPECT_TRUE(got.ok()) << got.status().ToString();
      continue;
    }
    ASSERT_FALSE(got.ok());
    EXPECT_EQ(got.status().code(), common::StatusCode::kInvalidArgument);
    EXPECT_NE(std::string(got.status().message()).find(c.error), std::string::npos)
        << got.status().ToString();
  }
  auto defaults = ParseArgs(boost::json::value());
  ASSERT_TRUE(defaults.ok());
  EXPECT_EQ(defaults->resources, (std::vector<std::string>{"cpu", "memory"}));
}

TEST(BalancedAllocationTest, IsANodeLocalScorePlugin) {
  auto plugin = testing::MustCreate<BalancedAllocation>();
  ASSERT_NE(plugin, nullptr);
  EXPECT_EQ(plugin->Name(), names::kNodeResourcesBalancedAllocation);
  EXPECT_TRUE(plugin->NodeLocal());
  EXPECT_FALSE(plugin->HasNormalizeScore());
}

}  // namespace
}  // namespace gpusched::plugins::node_resources_balanced_allocation
