// SPDX-License-Identifier: Apache-2.0
#include "src/plugins/node_resources_fit/node_resources_fit.h"

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <memory>
#include <string>
#include <vector>

#include "src/common/interner.h"
#include "src/plugins/names.h"
#include "src/testing/builders.h"
#include "src/testing/plugin_fixture.h"

GPUSCHED_TESTING_COUNT_ALLOCATIONS();

namespace gpusched::plugins::node_resources_fit {
namespace {

using testing::MakeNode;
using testing::MakePod;

constexpr int64_t kGi = 1024LL * 1024 * 1024;
constexpr int64_t kMi = 1024LL * 1024;

// What is already running on a node.
struct Used {
  int64_t milli_cpu = 0;
  int64_t memory = 0;
  int64_t ephemeral_storage = 0;
  std::vector<std::pair<std::string, int64_t>> scalar;
  int32_t pods = 0;
};

framework::NodeInfo Info(api::NodePtr node, const Used& used, framework::NodeIndex index = 0) {
  framework::NodeInfo info;
  info.node = std::move(node);
  info.index = index;
  info.requested.milli_cpu = used.milli_cpu;
  info.requested.memory = used.memory;
  info.requested.ephemeral_storage = used.ephemeral_storage;
  for (const auto& [name, v] : used.scalar) info.requested.Set(common::Intern(name), v);
  info.requested.pods = used.pods;
  info.pod_count = used.pods;
  return info;
}

std::unique_ptr<NodeResourcesFit> MustCreate(std::string_view args_json) {
  return testing::MustCreate<NodeResourcesFit>(args_json);
}

TEST(NodeResourcesFitTest, Filter) {
  // 4 CPUs, 8Gi memory, 10Gi ephemeral storage, 2 example.com/foo, 8 GPUs, 3 pods max.
  const api::NodePtr node = MakeNode("n")
                                .Cpu("4")
                                .Memory("8Gi")
                                .EphemeralStorage("10Gi")
                                .Resource("example.com/foo", "2")
                                .Resource("aliyun.com/gpu-mem", "16")
                                .Gpus(8)
                                .Pods(3)
                                .Ptr();
  const Used used{3000, 6 * kGi, 5 * kGi, {{"example.com/foo", 1}, {"nvidia.com/gpu", 7}}, 2};
  const Used full{4000, 8 * kGi, 10 * kGi, {}, 3};

  struct Case {
    std::string name;
    std::string args;
    api::Pod pod;
    Used used;
    framework::Code code;
    std::string_view reason;
  };
  const std::vector<Case> cases = {
      {"a pod using exactly the remaining cpu fits", "", MakePod("ns", "p").Cpu("1").Obj(), used,
       framework::Code::kSuccess, ""},
      {"too much cpu", "", MakePod("ns", "p").Cpu("1500m").Obj(), used,
       framework::Code::kUnschedulable, "Insufficient cpu"},
      {"too much memory", "", MakePod("ns", "p").Memory("3Gi").Obj(), used,
       framework::Code::kUnschedulable, "Insufficient memory"},
      {"too much ephemeral storage", "", MakePod("ns", "p").EphemeralStorage("6Gi").Obj(), used,
       framework::Code::kUnschedulable, "Insufficient ephemeral-storage"},
      {"too much of an extended resource", "",
       MakePod("ns", "p").Request("example.com/foo", "2").Obj(), used,
       framework::Code::kUnschedulable, "Insufficient example.com/foo"},
      {"too many GPUs by allocatable", "", MakePod("ns", "p").Gpus(2).Obj(), used,
       framework::Code::kUnschedulable, "Insufficient nvidia.com/gpu"},
      {"an extended resource the node does not have", "",
       MakePod("ns", "p").Request("example.com/bar", "1").Obj(), used,
       framework::Code::kUnschedulable, "Insufficient example.com/bar"},
      {"ignoredResources skips the extended resource",
       R"({"ignoredResources": ["example.com/foo"]})",
       MakePod("ns", "p").Request("example.com/foo", "2").Obj(), used, framework::Code::kSuccess,
       ""},
      {"ignoredResourceGroups skips the whole group",
       R"({"ignoredResourceGroups": ["example.com"]})",
       MakePod("ns", "p").Request("example.com/foo", "2").Request("example.com/bar", "5").Obj(),
       used, framework::Code::kSuccess, ""},
      {"ignored resources never hide cpu", R"({"ignoredResources": ["example.com/foo"]})",
       MakePod("ns", "p").Cpu("2").Request("example.com/foo", "2").Obj(), used,
       framework::Code::kUnschedulable, "Insufficient cpu"},
      {"a GPU-sharing resource the node does not advertise is left to GpuFit (HAMi)", "",
       MakePod("ns", "p").Gpus(1).Request("nvidia.com/gpumem", "4096").Obj(), Used{0, 0, 0, {}, 0},
       framework::Code::kSuccess, ""},
      {"a GPU-sharing resource the node does not advertise is left to GpuFit (Koordinator)", "",
       MakePod("ns", "p").Request("koordinator.sh/gpu-core", "50").Obj(), used,
       framework::Code::kSuccess, ""},
      {"a GPU-sharing resource the node advertises is checked (gpushare)", "",
       MakePod("ns", "p").Request("aliyun.com/gpu-mem", "20").Obj(), used,
       framework::Code::kUnschedulable, "Insufficient aliyun.com/gpu-mem"},
      {"a node at its pod limit rejects even an empty pod", "", MakePod("ns", "p").Obj(), full,
       framework::Code::kUnschedulable, "Too many pods"},
      {"a pod without requests fits a node whose resources are all requested", "",
       MakePod("ns", "p").Obj(), Used{4000, 8 * kGi, 10 * kGi, {}, 2}, framework::Code::kSuccess,
       ""},
      // Upstream reports every insufficient resource (fit_test.go "not enough cpu and memory").
      {"every failing check is reported, in check order", "",
       MakePod("ns", "p").Cpu("2").Memory("3Gi").Obj(), used, framework::Code::kUnschedulable,
       "Insufficient cpu\nInsufficient memory"},
      {"too many pods and an extended resource together", "",
       MakePod("ns", "p").Cpu("1").Request("example.com/foo", "3").Obj(), full,
       framework::Code::kUnschedulable,
       "Too many pods\nInsufficient cpu\nInsufficient example.com/foo"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto plugin = MustCreate(c.args);
    ASSERT_NE(plugin, nullptr);
    framework::CycleState state;
    framework::Snapshot snapshot;
    ASSERT_TRUE(plugin->PreFilter(state, c.pod, snapshot).ok());
    framework::Status s = plugin->Filter(state, c.pod, Info(node, c.used));
    EXPECT_EQ(s.code(), c.code);
    EXPECT_EQ(s.reason(), c.reason);
  }
}

TEST(NodeResourcesFitTest, FilterWithoutPreFilterIsAnError) {
  auto plugin = MustCreate("");
  ASSERT_NE(plugin, nullptr);
  framework::CycleState state;
  api::Pod pod = MakePod("ns", "p").Cpu("1").Obj();
  framework::Status s = plugin->Filter(state, pod, Info(MakeNode("n").Cpu("4").Ptr(), {}));
  EXPECT_EQ(s.code(), framework::Code::kError);
}

TEST(NodeResourcesFitTest, Score) {
  // Node: 4 CPUs, 16Gi, 4 example.com/foo; 1 CPU, 2Gi and 1 foo already requested.
  const api::NodePtr node =
      MakeNode("n").Cpu("4").Memory("16Gi").Resource("example.com/foo", "4").Ptr();
  const Used used{1000, 2 * kGi, 0, {{"example.com/foo", 1}}, 1};
  // Pod: 500m, 1Gi -> requested after placement: cpu 1500/4000 (37%), memory 3Gi/16Gi (18%).
  const api::Pod pod = MakePod("ns", "p").Cpu("500m").Memory("1Gi").Obj();

  struct Case {
    std::string name;
    std::string args;
    api::Pod pod;
    int64_t want;
  };
  const std::vector<Case> cases = {
      // cpu (4000-1500)*100/4000 = 62, memory (16-3)*100/16 = 81; (62+81)/2 = 71.
      {"LeastAllocated by default averages free fractions", "", pod, 71},
      // cpu 1500*100/4000 = 37, memory 3*100/16 = 18; (37+18)/2 = 27.
      {"MostAllocated averages used fractions", R"({"scoringStrategy": {"type": "MostAllocated"}})",
       pod, 27},
      // (37*3 + 18*1) / 4 = 32.
      {"MostAllocated honours resource weights",
       R"({"scoringStrategy": {"type": "MostAllocated", "resources": [{"name": "cpu", "weight": 3},
           {"name": "memory", "weight": 1}]}})",
       pod, 32},
      // Shape 0->0, 100->10 (x10): cpu 37, memory 18; round(55/2 = 27.5) = 28.
      {"RequestedToCapacityRatio with a rising shape rounds the mean",
       R"({"scoringStrategy": {"type": "RequestedToCapacityRatio",
           "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 0},
                                                  {"utilization": 100, "score": 10}]}}})",
       pod, 28},
      // Shape 0->10, 100->0: cpu 100-37 = 63, memory 100-18 = 82; round(72.5) = 73.
      {"RequestedToCapacityRatio with a falling shape",
       R"({"scoringStrategy": {"type": "RequestedToCapacityRatio",
           "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 10},
                                                  {"utilization": 100, "score": 0}]}}})",
       pod, 73},
      // Shape 20->0, 50->10: cpu 37 -> 100*(37-20)/30 = 56; memory 18 -> 0, left out of the mean.
      {"RequestedToCapacityRatio leaves zero-scored resources out of the mean",
       R"({"scoringStrategy": {"type": "RequestedToCapacityRatio",
           "requestedToCapacityRatio": {"shape": [{"utilization": 20, "score": 0},
                                                  {"utilization": 50, "score": 10}]}}})",
       pod, 56},
      // Defaults 100m and 200Mi: cpu (4000-1100)*100/4000 = 72,
      // memory (16384-2248)*100/16384 = 86; (72+86)/2 = 79.
      {"a pod without requests is scored with the default requests", "",
       MakePod("ns", "p").Container("main", {}).Obj(), 79},
      // Two containers without requests count 200m and 400Mi: cpu (4000-1200)*100/4000 = 70,
      // memory (16384-2448)*100/16384 = 85; (70+85)/2 = 77.
      {"each container without requests counts the defaults", "",
       MakePod("ns", "p").Container("a", {}).Container("b", {}).Obj(), 77},
      // cpu 62, foo (4-2)*100/4 = 50; (62+50)/2 = 56.
      {"an extended resource the pod requests is scored",
       R"({"scoringStrategy": {"resources": [{"name": "cpu"}, {"name": "example.com/foo"}]}})",
       MakePod("ns", "p").Cpu("500m").Request("example.com/foo", "1").Obj(), 56},
      {"an extended resource the pod does not request is skipped",
       R"({"scoringStrategy": {"resources": [{"name": "cpu"}, {"name": "example.com/foo"}]}})", pod,
       62},
      {"a resource the node does not have is skipped",
       R"({"scoringStrategy": {"resources": [{"name": "cpu"}, {"name": "ephemeral-storage"}]}})",
       pod, 62},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto plugin = MustCreate(c.args);
    ASSERT_NE(plugin, nullptr);
    EXPECT_EQ(plugin->Name(), names::kNodeResourcesFit);
    EXPECT_FALSE(plugin->HasNormalizeScore());
    framework::Snapshot snapshot;
    snapshot.MutableSlotForCache(0) = Info(node, used, 0);
    snapshot.SetNodeCountForCache(1, 1);
    framework::CycleState state;
    const std::vector<framework::NodeIndex> feasible = {0};
    ASSERT_TRUE(plugin->PreScore(state, c.pod, snapshot, feasible).ok());
    EXPECT_EQ(testing::ScoreOf(*plugin, state, c.pod, snapshot, 0), c.want);
    std::vector<int64_t> out(1, -1);
    plugin->ScoreNodes(state, c.pod, snapshot, feasible, out);
    EXPECT_EQ(out[0], c.want);
  }
}

TEST(NodeResourcesFitTest, ArgsValidation) {
  struct Case {
    std::string name;
    std::string args;
    std::string error;  // empty: valid
  };
  const std::vector<Case> cases = {
      {"no args are valid", "{}", ""},
      {"type meta is accepted", R"({"apiVersion": "kubescheduler.config.k8s.io/v1",
                                    "kind": "NodeResourcesFitArgs"})",
       ""},
      {"weight 0 is rejected",
       R"({"scoringStrategy": {"resources": [{"name": "cpu", "weight": 0}]}})",
       "scoringStrategy.resources[0].weight: must be in 1..100, got 0"},
      {"weight above 100 is rejected",
       R"({"scoringStrategy": {"resources": [{"name": "cpu", "weight": 1},
                                             {"name": "memory", "weight": 101}]}})",
       "scoringStrategy.resources[1].weight: must be in 1..100, got 101"},
      {"a resource without a name is rejected",
       R"({"scoringStrategy": {"resources": [{"weight": 2}]}})",
       "scoringStrategy.resources[0].name: required"},
      {"a duplicate resource is rejected",
       R"({"scoringStrategy": {"resources": [{"name": "cpu"}, {"name": "cpu"}]}})",
       "scoringStrategy.resources[1].name: duplicate resource \"cpu\""},
      {"an unknown strategy type is rejected", R"({"scoringStrategy": {"type": "Foo"}})",
       "scoringStrategy.type: unsupported value \"Foo\", want one of LeastAllocated, "
       "MostAllocated, RequestedToCapacityRatio"},
      {"RequestedToCapacityRatio needs a shape",
       R"({"scoringStrategy": {"type": "RequestedToCapacityRatio"}})",
       "scoringStrategy.requestedToCapacityRatio.shape: at least one point is required when type "
       "is RequestedToCapacityRatio"},
      {"shape scores are 0..10",
       R"({"scoringStrategy": {"type": "RequestedToCapacityRatio",
           "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 11}]}}})",
       "scoringStrategy.requestedToCapacityRatio.shape[0].score: must be in 0..10, got 11"},
      {"shape utilizations are 0..100",
       R"({"scoringStrategy": {"type": "RequestedToCapacityRatio",
           "requestedToCapacityRatio": {"shape": [{"utilization": 101, "score": 1}]}}})",
       "scoringStrategy.requestedToCapacityRatio.shape[0].utilization: must be in 0..100, got 101"},
      {"shape utilizations must increase",
       R"({"scoringStrategy": {"type": "RequestedToCapacityRatio",
           "requestedToCapacityRatio": {"shape": [{"utilization": 50, "score": 1},
                                                  {"utilization": 50, "score": 2}]}}})",
       "scoringStrategy.requestedToCapacityRatio.shape[1].utilization: must be greater than the "
       "previous point's (50), got 50"},
      {"a resource group may not contain a slash",
       R"({"ignoredResourceGroups": ["example.com/foo"]})",
       "ignoredResourceGroups[0]: resource group name can't contain '/', got \"example.com/foo\""},
      {"ignored resources must be strings", R"({"ignoredResources": [3]})",
       "ignoredResources[0]: must be a string"},
      {"unknown fields are rejected", R"({"bogus": true})", "bogus: unknown field"},
      {"a weight must be an integer",
       R"({"scoringStrategy": {"resources": [{"name": "cpu", "weight": "high"}]}})",
       "scoringStrategy.resources[0].weight: must be an integer"},
      {"every error is reported",
       R"({"bogus": 1, "scoringStrategy": {"type": "Foo",
           "resources": [{"name": "cpu", "weight": 0}]}})",
       "scoringStrategy.type: unsupported value \"Foo\", want one of "
       "LeastAllocated, MostAllocated, RequestedToCapacityRatio; "
       "scoringStrategy.resources[0].weight: must be in 1..100, got 0; bogus: unknown field"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    testing::FakeHandle handle;
    auto plugin = NodeResourcesFit::Create(boost::json::parse(c.args), handle);
    if (c.error.empty()) {
      EXPECT_TRUE(plugin.ok()) << plugin.status().ToString();
    } else {
      ASSERT_FALSE(plugin.ok());
      EXPECT_EQ(plugin.status().code(), common::StatusCode::kInvalidArgument);
      EXPECT_EQ(plugin.status().message(), c.error);
    }
  }
}

TEST(NodeResourcesFitTest, ArgsDefaults) {
  auto args = ParseArgs(boost::json::value());
  ASSERT_TRUE(args.ok());
  EXPECT_EQ(args->type, ScoringStrategyType::kLeastAllocated);
  ASSERT_EQ(args->resources.size(), 2u);
  EXPECT_EQ(args->resources[0].name, "cpu");
  EXPECT_EQ(args->resources[0].weight, 1);
  EXPECT_EQ(args->resources[1].name, "memory");
  EXPECT_EQ(args->resources[1].weight, 1);
  EXPECT_EQ(kMi, 1024 * 1024);
}

TEST(NodeResourcesFitTest, FilterAndScoreDoNotAllocate) {
  framework::Snapshot snapshot;
  snapshot.MutableSlotForCache(0) =
      Info(MakeNode("a").Cpu("4").Memory("8Gi").Resource("example.com/foo", "2").Ptr(),
           Used{1000, kGi, 0, {{"example.com/foo", 1}}, 1}, 0);
  snapshot.MutableSlotForCache(1) = Info(MakeNode("b").Cpu("1").Memory("1Gi").Ptr(), {}, 1);
  snapshot.SetNodeCountForCache(2, 1);
  const std::vector<framework::NodeIndex> all = {0, 1};
  const api::Pod pod =
      MakePod("ns", "p").Cpu("2").Memory("2Gi").Request("example.com/foo", "1").Obj();
  for (std::string_view args :
       {"", R"({"scoringStrategy": {"type": "RequestedToCapacityRatio", "resources":
                 [{"name": "cpu"}, {"name": "example.com/foo"}], "requestedToCapacityRatio":
                 {"shape": [{"utilization": 0, "score": 0},
                            {"utilization": 100, "score": 10}]}}})"}) {
    SCOPED_TRACE(args);
    auto plugin = MustCreate(args);
    ASSERT_NE(plugin, nullptr);
    framework::CycleState state;
    ASSERT_TRUE(plugin->PreFilter(state, pod, snapshot).ok());
    ASSERT_TRUE(plugin->PreScore(state, pod, snapshot, all).ok());
    std::vector<int64_t> out(all.size());
    g_allocations = 0;
    g_counting = true;
    for (framework::NodeIndex i : all) {
      (void)plugin->Filter(state, pod, snapshot.at(i));
      out[static_cast<size_t>(i)] = testing::ScoreOf(*plugin, state, pod, snapshot, i);
    }
    plugin->ScoreNodes(state, pod, snapshot, all, out);
    g_counting = false;
    EXPECT_EQ(g_allocations, 0);
  }
}

}  // namespace
}  // namespace gpusched::plugins::node_resources_fit
