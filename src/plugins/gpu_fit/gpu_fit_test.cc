// SPDX-License-Identifier: Apache-2.0
#include "src/plugins/gpu_fit/gpu_fit.h"

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "src/api/gpu.h"
#include "src/plugins/names.h"
#include "src/testing/builders.h"
#include "src/testing/plugin_fixture.h"

GPUSCHED_TESTING_COUNT_ALLOCATIONS();

namespace gpusched::plugins::gpu_fit {
namespace {

using testing::MakeNode;
using testing::MakePod;

constexpr std::string_view kInsufficient = "Insufficient nvidia.com/gpu";
constexpr std::string_view kMismatch = "GPU model mismatch";
constexpr std::string_view kNoMemory = "Insufficient GPU memory";

// Usage of one device: index, used milli, used memory MiB.
struct DeviceUse {
  int index;
  int32_t milli;
  int64_t memory_mib = 0;
};

// A node as the cache would present it.
struct NodeSpec {
  api::NodePtr node;
  std::vector<DeviceUse> used;
  double utilization = -1;
  int64_t requested_milli_cpu = 0;
};

framework::NodeInfo Info(const NodeSpec& spec, framework::NodeIndex index = 0) {
  framework::NodeInfo info;
  info.node = spec.node;
  info.index = index;
  info.gpu_utilization = spec.utilization;
  info.requested.milli_cpu = spec.requested_milli_cpu;
  for (const DeviceUse& d : spec.used) {
    api::GpuDeviceState& s = info.gpus[static_cast<size_t>(d.index)];
    s.used_milli = d.milli;
    s.used_memory_mib = d.memory_mib;
    s.pods = 1;
    ++info.pod_count;
  }
  return info;
}

framework::Snapshot SnapshotOf(const std::vector<NodeSpec>& nodes) {
  std::vector<framework::NodeInfo> infos;
  for (size_t i = 0; i < nodes.size(); ++i) {
    infos.push_back(Info(nodes[i], static_cast<framework::NodeIndex>(i)));
  }
  return testing::SnapshotOfInfos(std::move(infos));
}

std::unique_ptr<GpuFit> MustCreate(std::string_view args_json) {
  return testing::MustCreate<GpuFit>(args_json);
}

// A pod asking for a share of one GPU (the request is set directly: the shared-GPU dialects are
// decoded elsewhere).
api::Pod SharedPod(int32_t milli, int64_t memory_mib = 0) {
  api::Pod pod = MakePod("ns", "shared").Cpu("1").Obj();
  pod.gpu.count = 1;
  pod.gpu.milli = milli;
  pod.gpu.share_memory_mib = memory_mib;
  return pod;
}

api::NodePtr A100Node(std::string_view name, int gpus = 8) {
  return MakeNode(name)
      .Cpu("64")
      .Memory("512Gi")
      .Gpus(gpus)
      .GpuModel("A100-SXM4-40GB")
      .GpuMemoryMiB(40960)
      .Ptr();
}

// GFD labels only (no seed labels), as the NVIDIA GPU Operator writes them.
api::NodePtr GfdNode(std::string_view name, std::string_view product, int gpus, int64_t memory) {
  return MakeNode(name)
      .Cpu("64")
      .Resource("nvidia.com/gpu", std::to_string(gpus))
      .Label("nvidia.com/gpu.product", product)
      .Label("nvidia.com/gpu.count", std::to_string(gpus))
      .Label("nvidia.com/gpu.memory", std::to_string(memory))
      .Ptr();
}

const std::vector<DeviceUse> kThreeUsed = {{0, 1000}, {1, 1000}, {2, 1000}};

TEST(GpuFitTest, PreFilter) {
  const api::Pod malformed =
      MakePod("ns", "bad").Gpus(1).Annotation("gpu.nvidia.com/memory", "lots").Obj();
  ASSERT_FALSE(malformed.gpu_error.empty());
  struct Case {
    std::string name;
    api::Pod pod;
    framework::Code code;
    std::string reason;
  };
  const std::vector<Case> cases = {
      {"a malformed GPU annotation is unresolvable with the decoder's reason", malformed,
       framework::Code::kUnschedulableAndUnresolvable, malformed.gpu_error},
      {"a pod without GPUs skips the GPU filter", MakePod("ns", "cpu").Cpu("1").Obj(),
       framework::Code::kSkip, ""},
      {"a GPU pod is checked", MakePod("ns", "gpu").Gpus(2).Obj(), framework::Code::kSuccess, ""},
  };
  const framework::Snapshot snapshot = SnapshotOf({{A100Node("n0")}});
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto plugin = MustCreate("");
    ASSERT_NE(plugin, nullptr);
    framework::CycleState state;
    framework::Status s = plugin->PreFilter(state, c.pod, snapshot);
    EXPECT_EQ(s.code(), c.code);
    EXPECT_EQ(s.reason(), c.reason);
  }
}

TEST(GpuFitTest, Filter) {
  struct Case {
    std::string name;
    api::Pod pod;
    NodeSpec node;
    framework::Code code;
    std::string_view reason;
  };
  const std::vector<Case> cases = {
      // Free devices, not the node total, decide (the seed compared with the total).
      {"6 GPUs do not fit an 8-GPU node with 3 devices in use",
       MakePod("ns", "p").Gpus(6).Obj(),
       {A100Node("n"), kThreeUsed},
       framework::Code::kUnschedulable,
       kInsufficient},
      {"5 GPUs fit an 8-GPU node with 3 devices in use",
       MakePod("ns", "p").Gpus(5).Obj(),
       {A100Node("n"), kThreeUsed},
       framework::Code::kSuccess,
       ""},
      {"a partly used device is not free for a whole-GPU pod",
       MakePod("ns", "p").Gpus(6).Obj(),
       {A100Node("n"), {{0, 1000}, {1, 1000}, {7, 100}}},
       framework::Code::kUnschedulable,
       kInsufficient},
      {"a node without GPUs is unresolvable",
       MakePod("ns", "p").Gpus(1).Obj(),
       {MakeNode("cpu").Cpu("64").Ptr()},
       framework::Code::kUnschedulableAndUnresolvable,
       kInsufficient},
      {"more GPUs than the node has is unresolvable",
       MakePod("ns", "p").Gpus(9).Obj(),
       {A100Node("n")},
       framework::Code::kUnschedulableAndUnresolvable,
       kInsufficient},
      {"unhealthy devices do not count",
       MakePod("ns", "p").Gpus(7).Obj(),
       {MakeNode("n").Gpus(8).UnhealthyGpus("0,1").Ptr()},
       framework::Code::kUnschedulableAndUnresolvable,
       kInsufficient},
      {"unhealthy and used devices together leave too few free",
       MakePod("ns", "p").Gpus(4).Obj(),
       {MakeNode("n").Gpus(8).UnhealthyGpus("6,7").Ptr(), kThreeUsed},
       framework::Code::kUnschedulable,
       kInsufficient},
      {"the remaining healthy free devices fit",
       MakePod("ns", "p").Gpus(3).Obj(),
       {MakeNode("n").Gpus(8).UnhealthyGpus("6,7").Ptr(), kThreeUsed},
       framework::Code::kSuccess,
       ""},
      // Models.
      {"model alternatives accept the first",
       MakePod("ns", "p").Gpus(1).GpuModel("A100|H100").Obj(),
       {A100Node("n")},
       framework::Code::kSuccess,
       ""},
      {"model alternatives accept the second",
       MakePod("ns", "p").Gpus(1).GpuModel("A100|H100").Obj(),
       {MakeNode("n").Gpus(8).GpuModel("H100-SXM5-80GB").Ptr()},
       framework::Code::kSuccess,
       ""},
      {"a model outside the alternatives is unresolvable",
       MakePod("ns", "p").Gpus(1).GpuModel("A100|H100").Obj(),
       {MakeNode("n").Gpus(8).GpuModel("T4").Ptr()},
       framework::Code::kUnschedulableAndUnresolvable,
       kMismatch},
      {"an unknown node model fails a model constraint",
       MakePod("ns", "p").Gpus(1).GpuModel("A100").Obj(),
       {MakeNode("n").Gpus(8).Ptr()},
       framework::Code::kUnschedulableAndUnresolvable,
       kMismatch},
      {"an unknown node model is fine without a constraint",
       MakePod("ns", "p").Gpus(1).Obj(),
       {MakeNode("n").Gpus(8).Ptr()},
       framework::Code::kSuccess,
       ""},
      {"a GFD product with the NVIDIA- prefix matches the family",
       MakePod("ns", "p").Gpus(2).GpuModel("A100").Obj(),
       {GfdNode("n", "NVIDIA-A100-SXM4-80GB", 8, 81920)},
       framework::Code::kSuccess,
       ""},
      {"a GFD product matches the full model name",
       MakePod("ns", "p").Gpus(2).GpuModel("a100-sxm4-80gb").Obj(),
       {GfdNode("n", "NVIDIA-A100-SXM4-80GB", 8, 81920)},
       framework::Code::kSuccess,
       ""},
      {"a GFD -SHARED product matches its model",
       MakePod("ns", "p").Gpus(1).GpuModel("Tesla-T4").Obj(),
       {GfdNode("n", "Tesla-T4-SHARED", 4, 15360)},
       framework::Code::kSuccess,
       ""},
      {"a GFD product of another model is a mismatch",
       MakePod("ns", "p").Gpus(1).GpuModel("H100").Obj(),
       {GfdNode("n", "NVIDIA-A100-SXM4-80GB", 8, 81920)},
       framework::Code::kUnschedulableAndUnresolvable,
       kMismatch},
      // Memory.
      {"enough per-GPU memory fits",
       MakePod("ns", "p").Gpus(1).GpuMemoryMiB(40000).Obj(),
       {A100Node("n")},
       framework::Code::kSuccess,
       ""},
      {"too little per-GPU memory is unresolvable",
       MakePod("ns", "p").Gpus(1).GpuMemoryMiB(50000).Obj(),
       {A100Node("n")},
       framework::Code::kUnschedulableAndUnresolvable,
       kNoMemory},
      {"unknown node memory fails a memory constraint",
       MakePod("ns", "p").Gpus(1).GpuMemoryMiB(1024).Obj(),
       {MakeNode("n").Gpus(8).Ptr()},
       framework::Code::kUnschedulableAndUnresolvable,
       kNoMemory},
      {"GFD memory is read",
       MakePod("ns", "p").Gpus(1).GpuMemoryMiB(80000).Obj(),
       {GfdNode("n", "NVIDIA-A100-SXM4-80GB", 8, 81920)},
       framework::Code::kSuccess,
       ""},
      {"the model is checked before memory",
       MakePod("ns", "p").Gpus(1).GpuModel("H100").GpuMemoryMiB(99999).Obj(),
       {A100Node("n")},
       framework::Code::kUnschedulableAndUnresolvable,
       kMismatch},
      // Shared requests.
      {"a share fits a device with room",
       SharedPod(500),
       {A100Node("n", 2), {{0, 600}, {1, 500}}},
       framework::Code::kSuccess,
       ""},
      {"a share does not fit when no device has room",
       SharedPod(500),
       {A100Node("n", 2), {{0, 600}, {1, 700}}},
       framework::Code::kUnschedulable,
       kInsufficient},
      {"a share needs memory room on the device too",
       SharedPod(300, 20000),
       {A100Node("n", 1), {{0, 200, 30000}}},
       framework::Code::kUnschedulable,
       kInsufficient},
      {"a share with memory fits a device with both",
       SharedPod(300, 10000),
       {A100Node("n", 1), {{0, 200, 30000}}},
       framework::Code::kSuccess,
       ""},
      {"a share larger than a whole GPU's memory is unresolvable",
       SharedPod(300, 50000),
       {A100Node("n", 1)},
       framework::Code::kUnschedulableAndUnresolvable,
       kNoMemory},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto plugin = MustCreate("");
    ASSERT_NE(plugin, nullptr);
    const framework::Snapshot snapshot = SnapshotOf({c.node});
    framework::CycleState state;
    ASSERT_TRUE(plugin->PreFilter(state, c.pod, snapshot).ok());
    framework::Status s = plugin->Filter(state, c.pod, snapshot.at(0));
    EXPECT_EQ(s.code(), c.code);
    EXPECT_EQ(s.reason(), c.reason);
  }
}

TEST(GpuFitTest, ModelMatchesAreComputedPerDistinctModel) {
  // Several nodes per model; and a node that was not in the PreFilter snapshot.
  const framework::Snapshot snapshot = SnapshotOf({
      {A100Node("a0")},
      {A100Node("a1")},
      {MakeNode("t0").Gpus(4).GpuModel("T4").Ptr()},
      {A100Node("a2")},
      {MakeNode("h0").Gpus(8).GpuModel("H100-SXM5-80GB").Ptr()},
  });
  const api::Pod pod = MakePod("ns", "p").Gpus(1).GpuModel("A100|H100").Obj();
  auto plugin = MustCreate("");
  ASSERT_NE(plugin, nullptr);
  framework::CycleState state;
  ASSERT_TRUE(plugin->PreFilter(state, pod, snapshot).ok());
  const std::vector<framework::Code> want = {framework::Code::kSuccess, framework::Code::kSuccess,
                                             framework::Code::kUnschedulableAndUnresolvable,
                                             framework::Code::kSuccess, framework::Code::kSuccess};
  for (size_t i = 0; i < want.size(); ++i) {
    SCOPED_TRACE(snapshot.at(static_cast<framework::NodeIndex>(i)).name());
    EXPECT_EQ(plugin->Filter(state, pod, snapshot.at(static_cast<framework::NodeIndex>(i))).code(),
              want[i]);
  }
  const framework::NodeInfo outside = Info({MakeNode("h1").Gpus(8).GpuModel("H100-PCIE").Ptr()});
  EXPECT_TRUE(plugin->Filter(state, pod, outside).ok());
  const framework::NodeInfo outside_l4 = Info({MakeNode("l1").Gpus(8).GpuModel("L4").Ptr()});
  EXPECT_EQ(plugin->Filter(state, pod, outside_l4).reason(), kMismatch);
}

TEST(GpuFitTest, ModelTableIsMemoisedPerNodeSetVersion) {
  // A cache-kept snapshot (node_set_version != 0): the distinct models are collected once per
  // version; a node object replaced under a new version is seen by the next pod.
  framework::Snapshot snapshot =
      SnapshotOf({{A100Node("a0")}, {MakeNode("t0").Gpus(4).GpuModel("T4").Ptr()}});
  snapshot.BumpNodeSetVersionForCache();
  auto plugin = MustCreate("");
  ASSERT_NE(plugin, nullptr);
  auto codes = [&](const api::Pod& pod) {
    framework::CycleState state;
    EXPECT_TRUE(plugin->PreFilter(state, pod, snapshot).ok());
    std::string out;
    for (const framework::NodeInfo& n : snapshot.nodes()) {
      out += plugin->Filter(state, pod, n).ok() ? "ok " : "no ";
    }
    return out;
  };
  const api::Pod a100 = MakePod("ns", "p").Gpus(1).GpuModel("A100").Obj();
  const api::Pod t4 = MakePod("ns", "q").Gpus(1).GpuModel("T4").Obj();
  EXPECT_EQ(codes(a100), "ok no ");
  EXPECT_EQ(codes(t4), "no ok ");
  snapshot.MutableSlotForCache(1).node = MakeNode("t0").Gpus(4).GpuModel("A100-SXM4-80GB").Ptr();
  snapshot.BumpNodeSetVersionForCache();
  EXPECT_EQ(codes(a100), "ok ok ");
  EXPECT_EQ(codes(t4), "no no ");
}

TEST(GpuFitTest, ScoreDefault) {
  const std::vector<NodeSpec> nodes = {
      // 5 free GPUs, utilization unknown: fit 100*2000/5000 = 40, util 50;
      // (70*40 + 30*50) / 100 = 43.
      {A100Node("five-free"), kThreeUsed},
      // 2 of 4 free, 20 % busy: fit 100, util 80; (7000 + 2400) / 100 = 94.
      {A100Node("exact-fit", 4), {{0, 1000}, {1, 1000}}, 0.2},
      // 8 free, 90 % busy: fit 25, util 10; (1750 + 300) / 100 = 20.
      {A100Node("all-free"), {}, 0.9},
      // 2 free + a half-used device: free 2500 milli, fit 80, util 100 at 0 %;
      // (5600 + 3000) / 100 = 86.
      {A100Node("half", 3), {{0, 500}}, 0.0},
  };
  struct Case {
    std::string name;
    std::string args;
    api::Pod pod;
    framework::Code prescore;
    std::vector<int64_t> want;
  };
  const std::vector<Case> cases = {
      {"default weights blend fit and utilization",
       "",
       MakePod("ns", "p").Gpus(2).Obj(),
       framework::Code::kSuccess,
       {43, 94, 20, 86}},
      {"fit only",
       R"({"fitWeight": 100, "utilizationWeight": 0})",
       MakePod("ns", "p").Gpus(2).Obj(),
       framework::Code::kSuccess,
       {40, 100, 25, 80}},
      {"utilization only",
       R"({"fitWeight": 0, "utilizationWeight": 100})",
       MakePod("ns", "p").Gpus(2).Obj(),
       framework::Code::kSuccess,
       {50, 80, 10, 100}},
      // A 250m share: fit 100*250/5000 = 5, 250/2000 = 12, 250/8000 = 3, 250/2500 = 10.
      {"a shared pod is scored by its share",
       R"({"fitWeight": 100, "utilizationWeight": 0})",
       SharedPod(250),
       framework::Code::kSuccess,
       {5, 12, 3, 10}},
      {"pods without GPUs are not scored in Default mode",
       "",
       MakePod("ns", "p").Cpu("1").Obj(),
       framework::Code::kSkip,
       {}},
  };
  const framework::Snapshot snapshot = SnapshotOf(nodes);
  const std::vector<framework::NodeIndex> feasible = {0, 1, 2, 3};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto plugin = MustCreate(c.args);
    ASSERT_NE(plugin, nullptr);
    EXPECT_FALSE(plugin->HasNormalizeScore());
    framework::CycleState state;
    EXPECT_EQ(plugin->PreScore(state, c.pod, snapshot, feasible).code(), c.prescore);
    if (c.prescore == framework::Code::kSkip) continue;
    std::vector<int64_t> scores(feasible.size());
    plugin->ScoreNodes(state, c.pod, snapshot, feasible, scores);
    EXPECT_EQ(scores, c.want);
    for (size_t i = 0; i < feasible.size(); ++i) {
      EXPECT_EQ(testing::ScoreOf(*plugin, state, c.pod, snapshot, feasible[i]), c.want[i]);
    }
  }
}

TEST(GpuFitTest, ScoreBestFit) {
  const std::vector<NodeSpec> nodes = {
      // 64 CPUs with 16 requested, 5 of 8 GPUs free.
      {A100Node("a"), kThreeUsed, -1, 16000},
      // 128 CPUs idle, 8 GPUs free.
      {MakeNode("b").Cpu("128").Gpus(8).Ptr()},
      // 32 CPUs with 30 requested, 2 of 4 GPUs free.
      {MakeNode("c").Cpu("32").Gpus(4).Ptr(), {{0, 1000}, {1, 1000}}, -1, 30000},
  };
  struct Case {
    std::string name;
    api::Pod pod;
    std::vector<int64_t> raw;
    std::vector<int64_t> normalized;
  };
  const std::vector<Case> cases = {
      // c = 4000, k*d = 2000.
      // a: 100*(1 - [44000/256000 + 3000/16000]) = 64.06 -> 64
      // b: 100*(1 - [124000/256000 + 6000/16000]) = 14.06 -> 14
      // c: 100*(1 - [-2000/256000 + 0]) = 100.78 -> 100
      // min-max: (64-14)*100/86 = 58, 0, 100.
      {"GPU pods prefer the node left with the least CPU and GPU",
       MakePod("ns", "p").Cpu("4").Gpus(2).Obj(),
       {64, 14, 100},
       {58, 0, 100}},
      // k*d = 0: a: 100*(1 - [44000/256000 + 5000/16000]) = 51.56 -> 51
      // b: 100*(1 - [124000/256000 + 8000/16000]) = 1.56 -> 1
      // c: 100*(1 - [-2000/256000 + 2000/16000]) = 88.28 -> 88
      // min-max: (51-1)*100/87 = 57, 0, 100.
      {"CPU pods are scored too", MakePod("ns", "p").Cpu("4").Obj(), {51, 1, 88}, {57, 0, 100}},
  };
  const framework::Snapshot snapshot = SnapshotOf(nodes);
  const std::vector<framework::NodeIndex> feasible = {0, 1, 2};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto plugin = MustCreate(R"({"scoreMode": "BestFit"})");
    ASSERT_NE(plugin, nullptr);
    ASSERT_TRUE(plugin->HasNormalizeScore());
    framework::CycleState state;
    ASSERT_TRUE(plugin->PreScore(state, c.pod, snapshot, feasible).ok());
    std::vector<int64_t> scores(feasible.size());
    plugin->ScoreNodes(state, c.pod, snapshot, feasible, scores);
    EXPECT_EQ(scores, c.raw);
    EXPECT_EQ(testing::ScoreOf(*plugin, state, c.pod, snapshot, 0), c.raw[0]);
    ASSERT_TRUE(plugin->NormalizeScore(state, c.pod, scores).ok());
    EXPECT_EQ(scores, c.normalized);
  }
}

TEST(GpuFitTest, BestFitEqualScoresNormalizeToZero) {
  const framework::Snapshot snapshot = SnapshotOf({{A100Node("a")}, {A100Node("b")}});
  auto plugin = MustCreate(R"({"scoreMode": "BestFit"})");
  ASSERT_NE(plugin, nullptr);
  const api::Pod pod = MakePod("ns", "p").Cpu("1").Gpus(1).Obj();
  framework::CycleState state;
  const std::vector<framework::NodeIndex> feasible = {0, 1};
  ASSERT_TRUE(plugin->PreScore(state, pod, snapshot, feasible).ok());
  std::vector<int64_t> scores(2);
  plugin->ScoreNodes(state, pod, snapshot, feasible, scores);
  EXPECT_EQ(scores[0], scores[1]);
  ASSERT_TRUE(plugin->NormalizeScore(state, pod, scores).ok());
  EXPECT_EQ(scores, (std::vector<int64_t>{0, 0}));
}

TEST(GpuFitTest, ReserveAndUnreserve) {
  struct Case {
    std::string name;
    api::Pod pod;
    NodeSpec node;
    framework::Code code;
    api::GpuAssignment want;
    std::string annotation;  // empty: none written
  };
  const std::vector<Case> cases = {
      {"whole GPUs take the lowest-index free devices",
       MakePod("ns", "p").Gpus(2).Obj(),
       {A100Node("n"), {{0, 1000}, {2, 1000}}},
       framework::Code::kSuccess,
       {{1, 3}, 1000, 0},
       "1,3"},
      {"a partly used device is skipped for whole GPUs",
       MakePod("ns", "p").Gpus(1).Obj(),
       {A100Node("n", 2), {{0, 100}}},
       framework::Code::kSuccess,
       {{1}, 1000, 0},
       "1"},
      // Free milli: 700, 400 (too little), 600, 1000 -> best fit is device 2.
      {"a share takes the fitting device with the least free milli",
       SharedPod(500),
       {A100Node("n", 4), {{0, 300}, {1, 600}, {2, 400}}},
       framework::Code::kSuccess,
       {{2}, 500, 0},
       "2:500m"},
      {"a share with memory is annotated with it",
       SharedPod(500, 4096),
       {A100Node("n", 2), {{1, 500, 8192}}},
       framework::Code::kSuccess,
       {{1}, 500, 4096},
       "1:500m:4096Mi"},
      {"no fitting device at Reserve is unschedulable",
       MakePod("ns", "p").Gpus(2).Obj(),
       {A100Node("n", 2), {{0, 1000}}},
       framework::Code::kUnschedulable,
       {},
       ""},
      {"a pod without GPUs reserves nothing",
       MakePod("ns", "p").Cpu("1").Obj(),
       {A100Node("n")},
       framework::Code::kSuccess,
       {},
       ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto plugin = MustCreate("");
    ASSERT_NE(plugin, nullptr);
    framework::CycleState state;
    state.allocation().annotations.emplace_back("other", "kept");
    const framework::NodeInfo node = Info(c.node);
    framework::Status s = plugin->Reserve(state, c.pod, node);
    EXPECT_EQ(s.code(), c.code);
    if (s.code() != framework::Code::kSuccess) {
      EXPECT_EQ(s.reason(), kInsufficient);
    }
    EXPECT_EQ(state.allocation().gpu.devices, c.want.devices);
    if (!c.want.devices.empty()) {
      EXPECT_EQ(state.allocation().gpu, c.want);
    }
    std::vector<std::pair<std::string, std::string>> want_annotations = {{"other", "kept"}};
    if (!c.annotation.empty()) {
      want_annotations.emplace_back(std::string(api::kPodGpuDevicesAnnotation), c.annotation);
    }
    EXPECT_EQ(state.allocation().annotations, want_annotations);

    // Reserving again replaces the annotation rather than adding a second one.
    if (s.ok()) {
      ASSERT_TRUE(plugin->Reserve(state, c.pod, node).ok());
      EXPECT_EQ(state.allocation().annotations, want_annotations);
    }

    plugin->Unreserve(state, c.pod, node.name());
    EXPECT_TRUE(state.allocation().gpu.empty());
    const std::vector<std::pair<std::string, std::string>> kept = {{"other", "kept"}};
    EXPECT_EQ(state.allocation().annotations, kept);
    plugin->Unreserve(state, c.pod, node.name());  // idempotent
    EXPECT_EQ(state.allocation().annotations, kept);
  }
}

api::NodePtr IslandNode(std::string_view name, int gpus, std::string_view islands) {
  testing::NodeBuilder b = MakeNode(name);
  b.Cpu("64").Memory("512Gi").Gpus(gpus).GpuModel("A100-SXM4-40GB").GpuMemoryMiB(40960);
  if (!islands.empty()) b.NvlinkIslands(islands);
  return b.Ptr();
}

TEST(GpuFitTest, DevicePolicyAndIslandsAtReserve) {
  struct Case {
    std::string name;
    std::string args;
    api::Pod pod;
    NodeSpec node;
    framework::Code code;
    std::string reason;      // when not success
    std::string annotation;  // gpusched.io/gpu-devices
  };
  const std::vector<NodeSpec> none;
  const std::vector<Case> cases = {
      // Free milli: 700, 400, 1000, 1000.
      {"binpack puts a share on the partly used device",
       "",
       SharedPod(300),
       {IslandNode("n", 4, ""), {{0, 300}, {1, 600}}},
       framework::Code::kSuccess,
       "",
       "1:300m"},
      {"gpuPolicy Spread puts a share on the emptiest device",
       R"({"gpuPolicy": "Spread"})",
       SharedPod(300),
       {IslandNode("n", 4, ""), {{0, 300}, {1, 600}}},
       framework::Code::kSuccess,
       "",
       "2:300m"},
      {"the pod annotation overrides the GPU-level policy",
       "",
       MakePod("ns", "p")
           .Annotation("gpusched.io/gpu-policy", "binpack/spread")
           .Annotation("gpusched.io/gpu-milli", "300")
           .Obj(),
       {IslandNode("n", 4, ""), {{0, 300}, {1, 600}}},
       framework::Code::kSuccess,
       "",
       "2:300m"},
      {"a memory share derives its compute share from the node",
       "",
       MakePod("ns", "p").Annotation("gpusched.io/gpu-memory", "10240").Obj(),
       {IslandNode("n", 2, ""), {{0, 900}}},
       framework::Code::kSuccess,
       "",
       "1:250m:10240Mi"},
      {"a percentage resolves to MiB on the node",
       "",
       MakePod("ns", "p").Annotation("gpusched.io/gpu-memory-percent", "50").Obj(),
       {IslandNode("n", 2, ""), {{0, 600}}},
       framework::Code::kSuccess,
       "",
       "1:500m:20480Mi"},
      {"a multi-device share takes the fullest devices under binpack",
       "",
       MakePod("ns", "p").Gpus(2).Annotation("gpusched.io/gpu-milli", "200").Obj(),
       {IslandNode("n", 4, ""), {{1, 500}, {3, 700}}},
       framework::Code::kSuccess,
       "",
       "1:200m,3:200m"},
      // Islands {0,1,2,3} {4,5,6,7}; devices 0,1 used: island 0 has 2 free, island 1 has 4.
      {"binpack takes the smallest island that fits",
       "",
       MakePod("ns", "p").Gpus(2).Obj(),
       {IslandNode("n", 8, "0,1,2,3;4,5,6,7"), {{0, 1000}, {1, 1000}}},
       framework::Code::kSuccess,
       "",
       "2,3"},
      {"spread takes the largest island",
       R"({"gpuPolicy": "Spread"})",
       MakePod("ns", "p").Gpus(2).Obj(),
       {IslandNode("n", 8, "0,1,2,3;4,5,6,7"), {{0, 1000}, {1, 1000}}},
       framework::Code::kSuccess,
       "",
       "4,5"},
      // Islands {0,1} {2,3}; devices 0 and 2 used: no island has 2 free.
      {"without the requirement the pod straddles islands",
       "",
       MakePod("ns", "p").Gpus(2).Obj(),
       {IslandNode("n", 4, "0,1;2,3"), {{0, 1000}, {2, 1000}}},
       framework::Code::kSuccess,
       "",
       "1,3"},
      {"with the requirement it does not fit",
       "",
       MakePod("ns", "p").Gpus(2).Annotation("gpusched.io/nvlink-island", "required").Obj(),
       {IslandNode("n", 4, "0,1;2,3"), {{0, 1000}, {2, 1000}}},
       framework::Code::kUnschedulable,
       std::string(kReasonNoNvlinkIsland),
       ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto plugin = MustCreate(c.args);
    ASSERT_NE(plugin, nullptr);
    ASSERT_EQ(c.pod.gpu_error, "");
    framework::CycleState state;
    const framework::Snapshot snapshot = SnapshotOf({c.node});
    ASSERT_TRUE(plugin->PreFilter(state, c.pod, snapshot).ok());
    const framework::NodeInfo node = Info(c.node);
    framework::Status s = plugin->Reserve(state, c.pod, node);
    EXPECT_EQ(s.code(), c.code);
    if (!s.ok()) {
      EXPECT_EQ(s.reason(), c.reason);
      continue;
    }
    EXPECT_EQ(api::FormatGpuAssignment(state.allocation().gpu), c.annotation);
  }
}

TEST(GpuFitTest, FilterNvlinkAndPolicyAnnotations) {
  struct Case {
    std::string name;
    std::string args;
    api::Pod pod;
    NodeSpec node;
    framework::Code prefilter;
    framework::Code filter;
    std::string reason;
  };
  const std::vector<Case> cases = {
      {"requireNvlinkIsland rejects a node without topology",
       R"({"requireNvlinkIsland": true})",
       MakePod("ns", "p").Gpus(2).Obj(),
       {IslandNode("n", 4, "")},
       framework::Code::kSuccess,
       framework::Code::kUnschedulableAndUnresolvable,
       std::string(kReasonNvlinkUnknown)},
      {"requireNvlinkIsland accepts an island with room",
       R"({"requireNvlinkIsland": true})",
       MakePod("ns", "p").Gpus(2).Obj(),
       {IslandNode("n", 4, "0,1;2,3"), {{0, 1000}}},
       framework::Code::kSuccess,
       framework::Code::kSuccess,
       ""},
      {"requireNvlinkIsland rejects straddling islands",
       R"({"requireNvlinkIsland": true})",
       MakePod("ns", "p").Gpus(2).Obj(),
       {IslandNode("n", 4, "0,1;2,3"), {{0, 1000}, {2, 1000}}},
       framework::Code::kSuccess,
       framework::Code::kUnschedulable,
       std::string(kReasonNoNvlinkIsland)},
      {"a single GPU never needs an island",
       R"({"requireNvlinkIsland": true})",
       MakePod("ns", "p").Gpus(1).Obj(),
       {IslandNode("n", 4, "")},
       framework::Code::kSuccess,
       framework::Code::kSuccess,
       ""},
      {"the pod can relax the requirement",
       R"({"requireNvlinkIsland": true})",
       MakePod("ns", "p").Gpus(2).Annotation("gpusched.io/nvlink-island", "preferred").Obj(),
       {IslandNode("n", 4, "")},
       framework::Code::kSuccess,
       framework::Code::kSuccess,
       ""},
      {"a GFD clique label is a known single island",
       R"({"requireNvlinkIsland": true})",
       MakePod("ns", "p").Gpus(2).Obj(),
       {MakeNode("n").Gpus(4).Label("nvidia.com/gpu.clique", "uuid.1").Ptr()},
       framework::Code::kSuccess,
       framework::Code::kSuccess,
       ""},
      {"a percentage on a node of unknown memory is unresolvable",
       "",
       MakePod("ns", "p").Annotation("gpusched.io/gpu-memory-percent", "50").Obj(),
       {MakeNode("n").Gpus(4).Ptr()},
       framework::Code::kSuccess,
       framework::Code::kUnschedulableAndUnresolvable,
       std::string(kNoMemory)},
      {"a malformed policy annotation is rejected naming it",
       "",
       MakePod("ns", "p").Gpus(1).Annotation("gpusched.io/gpu-policy", "pack").Obj(),
       {IslandNode("n", 4, "")},
       framework::Code::kUnschedulableAndUnresolvable,
       framework::Code::kSuccess,
       "annotation gpusched.io/gpu-policy: invalid value \"pack\" (want binpack, spread or "
       "<node>/<gpu>, e.g. spread/binpack)"},
      {"a malformed island annotation is rejected naming it",
       "",
       MakePod("ns", "p").Gpus(2).Annotation("gpusched.io/nvlink-island", "must").Obj(),
       {IslandNode("n", 4, "")},
       framework::Code::kUnschedulableAndUnresolvable,
       framework::Code::kSuccess,
       "annotation gpusched.io/nvlink-island: invalid value \"must\" (want required or "
       "preferred)"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto plugin = MustCreate(c.args);
    ASSERT_NE(plugin, nullptr);
    framework::CycleState state;
    const framework::Snapshot snapshot = SnapshotOf({c.node});
    framework::Status pre = plugin->PreFilter(state, c.pod, snapshot);
    EXPECT_EQ(pre.code(), c.prefilter);
    if (!pre.ok()) {
      EXPECT_EQ(pre.reason(), c.reason);
      continue;
    }
    framework::Status f = plugin->Filter(state, c.pod, Info(c.node));
    EXPECT_EQ(f.code(), c.filter);
    if (!f.ok()) {
      EXPECT_EQ(f.reason(), c.reason);
    }
  }
}

TEST(GpuFitTest, NodePolicyAndIslandScores) {
  const std::vector<NodeSpec> nodes = {
      // 8 GPUs, 6 used: free 2000.
      {A100Node("full"), {{0, 1000}, {1, 1000}, {2, 1000}, {3, 1000}, {4, 1000}, {5, 1000}}},
      // 8 GPUs, all free.
      {A100Node("empty")},
      // 4 GPUs in islands {0,1} {2,3}, devices 0 and 2 used: 2 free but not in one island.
      {IslandNode("split", 4, "0,1;2,3"), {{0, 1000}, {2, 1000}}},
  };
  struct Case {
    std::string name;
    std::string args;
    api::Pod pod;
    std::vector<int64_t> want;
  };
  const std::string fit_only = R"({"fitWeight": 100, "utilizationWeight": 0)";
  const std::vector<Case> cases = {
      // Binpack: 100*2000/2000 = 100, 2000/8000 = 25, split 100 halved = 50.
      {"binpack prefers the fullest node, island straddling halves",
       fit_only + "}",
       MakePod("ns", "p").Gpus(2).Obj(),
       {100, 25, 50}},
      // Spread: 100*(2000-2000)/8000 = 0, (8000-2000)/8000 = 75, split 0.
      {"spread prefers the emptiest node",
       fit_only + R"(, "nodePolicy": "Spread"})",
       MakePod("ns", "p").Gpus(2).Obj(),
       {0, 75, 0}},
      {"the pod annotation overrides the node-level policy",
       fit_only + "}",
       MakePod("ns", "p").Gpus(2).Annotation("gpusched.io/gpu-policy", "spread").Obj(),
       {0, 75, 0}},
      // One GPU: binpack 1000/2000 = 50, 1000/8000 = 12, 1000/2000 = 50 (no island needed).
      {"a single GPU ignores islands",
       fit_only + "}",
       MakePod("ns", "p").Gpus(1).Obj(),
       {50, 12, 50}},
  };
  const framework::Snapshot snapshot = SnapshotOf(nodes);
  const std::vector<framework::NodeIndex> feasible = {0, 1, 2};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto plugin = MustCreate(c.args);
    ASSERT_NE(plugin, nullptr);
    framework::CycleState state;
    ASSERT_TRUE(plugin->PreFilter(state, c.pod, snapshot).ok());
    ASSERT_TRUE(plugin->PreScore(state, c.pod, snapshot, feasible).ok());
    std::vector<int64_t> scores(feasible.size());
    plugin->ScoreNodes(state, c.pod, snapshot, feasible, scores);
    EXPECT_EQ(scores, c.want);
  }
}

TEST(GpuFitTest, HamiAnnotationsCarryTheChosenDevicesUuids) {
  common::FakeClock clock(common::TimePoint(std::chrono::seconds(1705054796)));
  auto args = ParseArgs(boost::json::parse(R"({"hamiAnnotations": true})"));
  ASSERT_TRUE(args.ok());
  GpuFit plugin(*args, &clock);
  const std::string reg =
      "GPU-aaaa,10,40960,100,NVIDIA-A100-SXM4-40GB,0,true:GPU-bbbb,10,40960,100,"
      "NVIDIA-A100-SXM4-40GB,0,true:";
  const api::NodePtr hami = MakeNode("hami-node")
                                .Gpus(2)
                                .GpuMemoryMiB(40960)
                                .Annotation(api::kHamiNodeRegisterAnnotation, reg)
                                .Ptr();
  const api::Pod pod = MakePod("ns", "p")
                           .Limit("nvidia.com/gpu", "1")
                           .Limit("nvidia.com/gpumem", "10240")
                           .Limit("nvidia.com/gpucores", "30")
                           .Obj();
  ASSERT_EQ(pod.gpu_error, "");
  framework::CycleState state;
  const NodeSpec spec{hami, {{0, 900}}};
  ASSERT_TRUE(plugin.PreFilter(state, pod, SnapshotOf({spec})).ok());
  ASSERT_TRUE(plugin.Reserve(state, pod, Info(spec)).ok());
  std::map<std::string, std::string> got(state.allocation().annotations.begin(),
                                         state.allocation().annotations.end());
  EXPECT_EQ(got, (std::map<std::string, std::string>{
                     {"gpusched.io/gpu-devices", "1:300m:10240Mi"},
                     {"hami.io/vgpu-devices-to-allocate", "GPU-bbbb,NVIDIA,10240,30:;"},
                     {"hami.io/vgpu-node", "hami-node"},
                     {"hami.io/vgpu-time", "1705054796"},
                     {"hami.io/bind-time", "1705054796"},
                     {"hami.io/bind-phase", "allocating"}}));
  plugin.Unreserve(state, pod, "hami-node");
  EXPECT_TRUE(state.allocation().annotations.empty());

  // A node without the register annotation gets only our own annotation.
  const NodeSpec plain{A100Node("plain", 2)};
  framework::CycleState state2;
  ASSERT_TRUE(plugin.Reserve(state2, pod, Info(plain)).ok());
  ASSERT_EQ(state2.allocation().annotations.size(), 1u);
  EXPECT_EQ(state2.allocation().annotations[0].first, "gpusched.io/gpu-devices");

  // A malformed register annotation: that node is unschedulable, with the reason.
  const NodeSpec bad{MakeNode("bad")
                         .Gpus(2)
                         .GpuMemoryMiB(40960)
                         .Annotation(api::kHamiNodeRegisterAnnotation, "GPU-a,10:")
                         .Ptr()};
  framework::CycleState state3;
  framework::Status s = plugin.Reserve(state3, pod, Info(bad));
  EXPECT_EQ(s.code(), framework::Code::kUnschedulable);
  EXPECT_NE(s.reason().find("annotation hami.io/node-nvidia-register: device 0"),
            std::string_view::npos)
      << s.reason();
  EXPECT_TRUE(state3.allocation().annotations.empty());
}

TEST(GpuFitTest, ArgsValidation) {
  struct Case {
    std::string name;
    std::string args;
    std::string error;  // empty: valid
  };
  const std::vector<Case> cases = {
      {"defaults are valid", "{}", ""},
      {"BestFit is a known mode", R"({"scoreMode": "BestFit"})", ""},
      {"one weight may be 0", R"({"fitWeight": 0})", ""},
      {"fitWeight above 100 is rejected", R"({"fitWeight": 101})",
       "fitWeight: must be in 0..100, got 101"},
      {"a negative utilizationWeight is rejected", R"({"utilizationWeight": -1})",
       "utilizationWeight: must be in 0..100, got -1"},
      {"both weights 0 is rejected", R"({"fitWeight": 0, "utilizationWeight": 0})",
       "fitWeight, utilizationWeight: must not both be 0"},
      {"an unknown scoreMode is rejected", R"({"scoreMode": "FGD"})",
       "scoreMode: unsupported value \"FGD\", want Default or BestFit"},
      {"a non-integer weight is rejected", R"({"fitWeight": "high"})",
       "fitWeight: must be an integer"},
      {"an unknown field is rejected", R"({"fit": 1})", "fit: unknown field"},
      {"every error is reported", R"({"fitWeight": 200, "scoreMode": 3})",
       "fitWeight: must be in 0..100, got 200; scoreMode: must be a string"},
      {"policies and the island requirement are accepted",
       R"({"nodePolicy": "Spread", "gpuPolicy": "Binpack", "requireNvlinkIsland": true})", ""},
      {"an unknown nodePolicy is rejected", R"({"nodePolicy": "binpack"})",
       "nodePolicy: unsupported value \"binpack\", want Binpack or Spread"},
      {"an unknown gpuPolicy is rejected", R"({"gpuPolicy": "Pack"})",
       "gpuPolicy: unsupported value \"Pack\", want Binpack or Spread"},
      {"a non-boolean requireNvlinkIsland is rejected", R"({"requireNvlinkIsland": "yes"})",
       "requireNvlinkIsland: must be a boolean"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    testing::FakeHandle handle;
    auto plugin = GpuFit::Create(boost::json::parse(c.args), handle);
    if (c.error.empty()) {
      EXPECT_TRUE(plugin.ok()) << plugin.status().ToString();
    } else {
      ASSERT_FALSE(plugin.ok());
      EXPECT_EQ(plugin.status().code(), common::StatusCode::kInvalidArgument);
      EXPECT_EQ(plugin.status().message(), c.error);
    }
  }
}

TEST(GpuFitTest, NameAndDefaults) {
  testing::FakeHandle handle;
  auto plugin = GpuFit::Create(boost::json::value(), handle);
  ASSERT_TRUE(plugin.ok());
  EXPECT_EQ((*plugin)->Name(), names::kGpuFit);

  auto args = ParseArgs(boost::json::value());
  ASSERT_TRUE(args.ok());
  EXPECT_EQ(args->fit_weight, 70);
  EXPECT_EQ(args->utilization_weight, 30);
  EXPECT_EQ(args->score_mode, ScoreMode::kDefault);
}

TEST(GpuFitTest, FilterAndScoreDoNotAllocate) {
  const framework::Snapshot snapshot = SnapshotOf({
      {A100Node("a0"), kThreeUsed, 0.5, 1000},
      {MakeNode("t4").Gpus(4).GpuModel("T4").Ptr()},
      {GfdNode("g0", "NVIDIA-A100-SXM4-80GB", 8, 81920), {{0, 300}}},
      {MakeNode("cpu").Cpu("8").Ptr()},
      {A100Node("a1", 2), {{0, 1000}, {1, 1000}}},
  });
  const std::vector<framework::NodeIndex> all = {0, 1, 2, 3, 4};
  const std::vector<api::Pod> pods = {
      MakePod("ns", "whole").Cpu("2").Gpus(2).GpuModel("A100|H100").GpuMemoryMiB(30000).Obj(),
      SharedPod(400, 1024),
      MakePod("ns", "cpu").Cpu("2").Obj(),
  };
  for (std::string_view args : {"", R"({"scoreMode": "BestFit"})"}) {
    auto plugin = MustCreate(args);
    ASSERT_NE(plugin, nullptr);
    for (const api::Pod& pod : pods) {
      SCOPED_TRACE(std::string(args) + " " + pod.meta.name);
      framework::CycleState state;
      const bool filter = plugin->PreFilter(state, pod, snapshot).ok();
      const bool score = plugin->PreScore(state, pod, snapshot, all).ok();
      std::vector<int64_t> out(all.size());
      g_allocations = 0;
      g_counting = true;
      for (framework::NodeIndex i : all) {
        if (filter) (void)plugin->Filter(state, pod, snapshot.at(i));
        if (score)
          out[static_cast<size_t>(i)] += testing::ScoreOf(*plugin, state, pod, snapshot, i);
      }
      if (score) {
        plugin->ScoreNodes(state, pod, snapshot, all, out);
        (void)plugin->NormalizeScore(state, pod, out);
      }
      g_counting = false;
      EXPECT_EQ(g_allocations, 0);
    }
  }
}

}  // namespace
}  // namespace gpusched::plugins::gpu_fit
