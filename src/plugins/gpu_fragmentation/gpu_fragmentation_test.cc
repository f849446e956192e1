// SPDX-License-Identifier: Apache-2.0
#include "src/plugins/gpu_fragmentation/gpu_fragmentation.h"

#include <gtest/gtest.h>

#include <array>
#include <boost/json/parse.hpp>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "src/api/gpu.h"
#include "src/common/interner.h"
#include "src/common/random.h"
#include "src/plugins/gpu_fragmentation/frag.h"
#include "src/plugins/names.h"
#include "src/testing/builders.h"
#include "src/testing/plugin_fixture.h"

GPUSCHED_TESTING_COUNT_ALLOCATIONS();

namespace gpusched::plugins::gpu_fragmentation {
namespace {

using testing::MakeNode;
using testing::MakePod;

struct DeviceUse {
  int index;
  int32_t milli;
};

struct NodeSpec {
  api::NodePtr node;
  std::vector<DeviceUse> used;
  int64_t requested_milli_cpu = 0;
};

framework::NodeInfo Info(const NodeSpec& spec, framework::NodeIndex index) {
  framework::NodeInfo info;
  info.node = spec.node;
  info.index = index;
  info.requested.milli_cpu = spec.requested_milli_cpu;
  for (const DeviceUse& d : spec.used) {
    info.gpus[static_cast<size_t>(d.index)].used_milli = d.milli;
    info.gpus[static_cast<size_t>(d.index)].pods = 1;
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

std::unique_ptr<GpuFragmentation> MustCreate(std::string_view args_json) {
  return testing::MustCreate<GpuFragmentation>(args_json);
}

api::Pod GpuPod(std::string_view name, std::string_view cpu, int32_t count, int32_t milli) {
  api::Pod pod = MakePod("ns", name).Cpu(cpu).Obj();
  pod.gpu.count = count;
  pod.gpu.milli = milli;
  return pod;
}

api::NodePtr Node(std::string_view name, int gpus, std::string_view cpu = "64",
                  std::string_view model = "T4") {
  return MakeNode(name).Cpu(cpu).Memory("256Gi").Gpus(gpus).GpuModel(model).Ptr();
}

std::vector<framework::NodeIndex> All(const framework::Snapshot& s) {
  std::vector<framework::NodeIndex> out;
  for (const auto& n : s.nodes()) out.push_back(n.index);
  return out;
}

// Scores every node of `snapshot` for `pod` (PreFilter, PreScore, ScoreNodes, NormalizeScore).
std::vector<int64_t> ScoreAll(GpuFragmentation& p, const api::Pod& pod,
                              const framework::Snapshot& snapshot, framework::CycleState& state) {
  EXPECT_TRUE(p.PreFilter(state, pod, snapshot).ok());
  const auto nodes = All(snapshot);
  EXPECT_TRUE(p.PreScore(state, pod, snapshot, nodes).ok());
  std::vector<int64_t> out(nodes.size());
  p.ScoreNodes(state, pod, snapshot, nodes, out);
  if (p.HasNormalizeScore()) {
    EXPECT_TRUE(p.NormalizeScore(state, pod, out).ok());
  }
  return out;
}

TEST(GpuFragmentationArgsTest, ParseArgs) {
  struct Case {
    std::string name;
    std::string json;
    bool ok;
    std::string error_substring;
  };
  const std::vector<Case> cases = {
      {"no args give the Learned policy", "", true, ""},
      {"every policy name is accepted", R"({"policy":"GpuClustering"})", true, ""},
      {"an unknown policy is rejected with the list of names", R"({"policy":"Tetris"})", false,
       "want FGD, Learned"},
      {"decayPpm above one million is rejected", R"({"decayPpm":1000001})", false, "decayPpm"},
      {"maxTypes above 256 is rejected", R"({"maxTypes":300})", false, "maxTypes"},
      {"a non-boolean exactScores is rejected", R"({"exactScores":1})", false, "exactScores"},
      {"an unknown field is rejected", R"({"polcy":"FGD"})", false, "polcy"},
      {"distributionRefreshPods 0 is rejected", R"({"distributionRefreshPods":0})", false,
       "distributionRefreshPods"},
      {"distributionRefreshPods above 100000 is rejected", R"({"distributionRefreshPods":100001})",
       false, "distributionRefreshPods"},
      {"distributionRefreshPods 1 re-takes M for every pod", R"({"distributionRefreshPods":1})",
       true, ""},
      {"cpuCostPermille 0 turns the CPU cost off", R"({"cpuCostPermille":0})", true, ""},
      {"a negative cpuCostPermille is rejected", R"({"cpuCostPermille":-1})", false,
       "cpuCostPermille: must be in 0..10000, got -1"},
      {"cpuCostPermille above 10000 is rejected", R"({"cpuCostPermille":10001})", false,
       "cpuCostPermille"},
      {"a fixed typicalPods list is accepted",
       R"({"policy":"FGD","typicalPods":[{"cpuMilli":4000,"gpuCount":1,"gpuMilli":500,)"
       R"("weight":3},{"cpuMilli":8000,"weight":1}]})",
       true, ""},
      {"a typical pod with a GPU count but no milli is rejected",
       R"({"typicalPods":[{"cpuMilli":1000,"gpuCount":1,"gpuMilli":0,"weight":1}]})", false,
       "typicalPods[0].gpuMilli: must be 0 exactly when gpuCount is 0, got gpuCount 1 and "
       "gpuMilli 0"},
      {"a shared multi-GPU typical pod is rejected",
       R"({"typicalPods":[{"gpuCount":2,"gpuMilli":500,"weight":1}]})", false,
       "typicalPods[0].gpuMilli: must be 1000 when gpuCount > 1, got 500"},
      {"a typical pod needs a positive weight",
       R"({"typicalPods":[{"gpuCount":1,"gpuMilli":1000,"weight":0}]})", false,
       "typicalPods[0].weight: must be a number > 0"},
      {"a typical pod weight must be a number",
       R"({"typicalPods":[{"gpuCount":1,"gpuMilli":1000,"weight":"2"}]})", false,
       "typicalPods[0].weight"},
      {"an unknown typical pod field is rejected",
       R"({"typicalPods":[{"gpuCount":1,"gpuMilli":1000,"weight":1,"gpus":2}]})", false,
       "typicalPods[0].gpus"},
      {"typical pod models must be strings",
       R"({"typicalPods":[{"gpuCount":1,"gpuMilli":1000,"weight":1,"models":[7]}]})", false,
       "typicalPods[0].models[0]"},
      {"typicalPods must be a list", R"({"typicalPods":{"cpuMilli":1}})", false, "typicalPods"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto args = ParseArgs(c.json.empty() ? boost::json::value() : boost::json::parse(c.json));
    EXPECT_EQ(args.ok(), c.ok);
    if (!args.ok()) {
      EXPECT_NE(args.status().ToString().find(c.error_substring), std::string::npos)
          << args.status().ToString();
    }
  }
  auto defaults = ParseArgs(boost::json::value());
  ASSERT_TRUE(defaults.ok());
  EXPECT_EQ(defaults->policy, Policy::kLearned);
  EXPECT_EQ(defaults->refresh_pods, 64);
  EXPECT_EQ(defaults->coverage_percent, 100);
  EXPECT_EQ(defaults->cpu_cost_permille, 250);
  EXPECT_TRUE(defaults->typical_pods.empty());
  auto fgd = ParseArgs(boost::json::parse(R"({"policy":"FGD"})"));
  ASSERT_TRUE(fgd.ok());
  EXPECT_EQ(fgd->coverage_percent, 95);

  // A fixed M: weights renormalised, models normalised and interned.
  auto fixed = ParseArgs(boost::json::parse(
      R"({"policy":"FGD","typicalPods":[{"cpuMilli":4000,"gpuCount":1,"gpuMilli":500,"weight":3},)"
      R"({"cpuMilli":8000,"gpuCount":0,"gpuMilli":0,"weight":1,"models":["Tesla-V100M16"]}]})"));
  ASSERT_TRUE(fixed.ok()) << fixed.status().ToString();
  ASSERT_EQ(fixed->typical_pods.size(), 2u);
  EXPECT_EQ(fixed->typical_pods[0].cpu_milli, 4000);
  EXPECT_EQ(fixed->typical_pods[0].count, 1);
  EXPECT_EQ(fixed->typical_pods[0].milli, 500);
  EXPECT_DOUBLE_EQ(fixed->typical_pods[0].p, 0.75);
  EXPECT_DOUBLE_EQ(fixed->typical_pods[1].p, 0.25);
  ASSERT_EQ(fixed->typical_pods[1].models.size(), 1u);
  EXPECT_EQ(common::Str(fixed->typical_pods[1].models[0]), "V100M16");
}

TEST(TypicalPodLearnerTest, LearnsDecaysAndStaysBounded) {
  api::GpuRequest shared{1, 500, 0, 0, {}};
  api::GpuRequest whole{1, 1000, 0, 0, {}};
  TypicalPodLearner no_decay(1.0, 8, 1.0);
  for (int i = 0; i < 3; ++i) no_decay.Observe(1000, shared);
  no_decay.Observe(2000, whole);
  auto m = no_decay.Snapshot();
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].milli, 500);
  EXPECT_DOUBLE_EQ(m[0].p, 0.75);
  EXPECT_DOUBLE_EQ(m[1].p, 0.25);

  // With strong decay the most recent type dominates.
  TypicalPodLearner decayed(0.5, 8, 1.0);
  for (int i = 0; i < 3; ++i) decayed.Observe(1000, shared);
  decayed.Observe(2000, whole);
  m = decayed.Snapshot();
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].milli, 1000);
  EXPECT_GT(m[0].p, 0.5);

  // Bounded: at most max_types entries, whatever arrives.
  TypicalPodLearner bounded(1.0, 4, 1.0);
  for (int i = 0; i < 100; ++i) bounded.Observe(1000 + i, shared);
  EXPECT_LE(bounded.Snapshot().size(), 4u);

  // Coverage keeps the shortest prefix reaching it.
  TypicalPodLearner covered(1.0, 8, 0.7);
  for (int i = 0; i < 7; ++i) covered.Observe(1000, shared);
  for (int i = 0; i < 3; ++i) covered.Observe(2000, whole);
  m = covered.Snapshot();
  ASSERT_EQ(m.size(), 1u);
  EXPECT_DOUBLE_EQ(m[0].p, 1.0);
}

TEST(FragmentationMathTest, FragmentAndDeltaFollowThePaper) {
  // One type: 1 GPU of 600 milli, 1000 milli-CPU, p = 1.
  std::vector<TypicalPod> types = {TypicalPod{1000, 1, 600, {}, 1.0}};
  std::vector<uint8_t> allowed = {1};
  std::vector<TypeAggregate> agg(1);
  NodeView v;
  v.gpus = 2;
  v.idle = {1000, 500};
  v.free_cpu = 8000;
  NodeFragmentation f(types, allowed, agg, v);
  // The type fits (GPU 0); GPU 1's 500 is too small: F = 500.
  EXPECT_DOUBLE_EQ(f.base(), 500);
  // Placing 500 on GPU 1 fills it: F = 0, Δ = -500.
  const int8_t g1 = 1;
  EXPECT_DOUBLE_EQ(f.Delta(0, 500, std::span<const int8_t>(&g1, 1)), -500);
  // Placing 500 on GPU 0 leaves 500 + 500, no GPU fits: F = 1000, Δ = +500.
  const int8_t g0 = 0;
  EXPECT_DOUBLE_EQ(f.Delta(0, 500, std::span<const int8_t>(&g0, 1)), 500);
  // A CPU-only pod taking all the CPU makes every idle GPU a fragment: Δ = 1500 - 500.
  EXPECT_DOUBLE_EQ(f.Delta(8000, 0, {}), 1000);
  // A disallowed model sees all idle GPU as fragment.
  std::vector<uint8_t> denied = {0};
  NodeFragmentation g(types, denied, agg, v);
  EXPECT_DOUBLE_EQ(g.base(), 1500);
}

TEST(GpuFragmentationTest, FgdPrefersThePlacementThatFillsAFragment) {
  // Teach the learner that 600-milli pods are typical.
  auto p = MustCreate(R"({"policy":"FGD"})");
  ASSERT_NE(p, nullptr);
  const std::vector<NodeSpec> nodes = {
      {Node("empty", 2), {}},
      {Node("half", 2), {{0, 1000}, {1, 500}}},
  };
  const framework::Snapshot snapshot = SnapshotOf(nodes);
  for (int i = 0; i < 10; ++i) {
    framework::CycleState warm;
    EXPECT_TRUE(p->PreFilter(warm, GpuPod("typical", "1", 1, 600), snapshot).ok());
  }
  framework::CycleState state;
  const api::Pod pod = GpuPod("filler", "1", 1, 500);
  const auto scores = ScoreAll(*p, pod, snapshot, state);
  EXPECT_GT(scores[1], scores[0]);
  ASSERT_TRUE(p->Reserve(state, pod, snapshot.at(1)).ok());
  EXPECT_EQ(state.allocation().gpu.devices, std::vector<int8_t>{1});
  ASSERT_EQ(state.allocation().annotations.size(), 1u);
  EXPECT_EQ(state.allocation().annotations[0].first, api::kPodGpuDevicesAnnotation);
  EXPECT_EQ(state.allocation().annotations[0].second, "1:500m");
  p->Unreserve(state, pod, "half");
  EXPECT_TRUE(state.allocation().gpu.empty());
  EXPECT_TRUE(state.allocation().annotations.empty());
}

TEST(GpuFragmentationTest, PoliciesScoreAsThePaperSays) {
  const std::vector<NodeSpec> nodes = {
      {Node("free8", 8, "96"), {}},
      {Node("busy8", 8, "96"), {{0, 1000}, {1, 1000}, {2, 700}}, 48000},
  };
  const framework::Snapshot snapshot = SnapshotOf(nodes);
  const api::Pod shared = GpuPod("s", "4", 1, 300);
  struct Case {
    std::string name;
    std::string args;
    std::vector<int64_t> want;
  };
  // DotProd: 100(1 - [C/128000 * 4000/128000 + I/8000 * 300/8000] / 2).
  // BestFit: raw then min-max normalised (the fuller node wins with 100).
  // GpuPacking: free node 33 - 8 = 25; partly used node, the chosen GPU 2 (300 free) is partly
  // used: max(100 - floor(30 / 10), 50) = 97.
  // GpuClustering: no GPU pods recorded on either node: b + 25 with b = floor(25 (8000-I)/8000).
  const std::vector<Case> cases = {
      {"DotProd prefers the node whose free vector is least aligned",
       R"({"policy":"DotProd"})",
       {96, 98}},
      {"BestFit prefers the fuller node", R"({"policy":"BestFit"})", {0, 100}},
      {"GpuPacking prefers partly used GPUs", R"({"policy":"GpuPacking"})", {25, 97}},
      {"GpuClustering without tagged pods scores by idle GPU",
       R"({"policy":"GpuClustering"})",
       {25, 33}},
      {"Random scores every node the same", R"({"policy":"Random"})", {0, 0}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto p = MustCreate(c.args);
    ASSERT_NE(p, nullptr);
    framework::CycleState state;
    EXPECT_EQ(ScoreAll(*p, shared, snapshot, state), c.want);
  }
}

TEST(GpuFragmentationTest, ReserveNeverPicksUnhealthyOrFullDevices) {
  const api::NodePtr node =
      MakeNode("n").Cpu("64").Gpus(4).GpuModel("T4").UnhealthyGpus("0,2").Ptr();
  const std::vector<NodeSpec> nodes = {{node, {{1, 900}}}};
  const framework::Snapshot snapshot = SnapshotOf(nodes);
  for (std::string policy : {"FGD", "Learned", "BestFit", "Random", "GpuPacking"}) {
    SCOPED_TRACE(policy);
    auto p = MustCreate(R"({"policy":")" + policy + R"("})");
    ASSERT_NE(p, nullptr);
    framework::CycleState state;
    const api::Pod pod = GpuPod("s", "1", 1, 400);
    ScoreAll(*p, pod, snapshot, state);
    ASSERT_TRUE(p->Reserve(state, pod, snapshot.at(0)).ok());
    EXPECT_EQ(state.allocation().gpu.devices, std::vector<int8_t>{3});
    framework::CycleState whole_state;
    const api::Pod whole = GpuPod("w", "1", 2, 1000);
    ScoreAll(*p, whole, snapshot, whole_state);
    EXPECT_EQ(p->Reserve(whole_state, whole, snapshot.at(0)).code(),
              framework::Code::kUnschedulable);
  }
}

// Property: ScoreNodes, which scores each distinct node state once, gives every node what Score
// gives it, over random clusters with many alike nodes (health, GPU memory, utilization, NVLink
// islands and used memory varied) and random pods, for FGD and Learned on both score scales.
// A random cluster of 2..41 nodes (T4/A100, 1-16 GPUs, devices partly used, some unhealthy,
// NVLink or busy) and a random pod (no GPU, a share, a memory share, whole GPUs).
struct RandomCase {
  framework::Snapshot snapshot;
  api::Pod pod;
};

RandomCase MakeRandomCase(common::Random& random) {
  std::vector<framework::NodeInfo> infos;
  const int n = 2 + static_cast<int>(random.Uniform(40));
  for (int i = 0; i < n; ++i) {
    const int gpus = std::array{1, 2, 4, 8, 16}[random.Uniform(5)];
    auto node = std::make_shared<api::Node>(*Node("n" + std::to_string(i), gpus,
                                                  random.Uniform(2) ? "64" : "32",
                                                  random.Uniform(2) ? "T4" : "A100"));
    node->gpu.memory_mib = random.Uniform(4) == 0 ? 0 : 16000;
    if (random.Uniform(8) == 0) node->gpu.unhealthy_mask = 1;
    if (random.Uniform(8) == 0) node->gpu.nvlink_known = true;
    framework::NodeInfo info;
    info.node = node;
    info.index = static_cast<framework::NodeIndex>(i);
    info.requested.milli_cpu = 1000 * static_cast<int64_t>(random.Uniform(3));
    if (random.Uniform(6) == 0) info.gpu_utilization = 0.5;
    for (int d = 0; d < gpus; ++d) {
      auto& dev = info.gpus[static_cast<size_t>(d)];
      dev.used_milli = std::array{0, 0, 300, 500, 1000}[random.Uniform(5)];
      dev.used_memory_mib = dev.used_milli > 0 && random.Uniform(3) == 0 ? 4000 : 0;
    }
    infos.push_back(std::move(info));
  }
  api::Pod pod = GpuPod("p", random.Uniform(2) ? "2" : "8", 0, 0);
  switch (random.Uniform(5)) {
    case 0: break;  // no GPU
    case 1: pod.gpu = {.count = 1, .milli = std::array{250, 500, 700}[random.Uniform(3)]}; break;
    case 2: pod.gpu = {.count = 1, .milli = 300, .share_memory_mib = 4000}; break;
    case 3: pod.gpu = {.count = 1, .milli = 0, .share_memory_permille = 250}; break;
    default: pod.gpu = {.count = 1 + static_cast<int32_t>(random.Uniform(4)), .milli = 1000};
  }
  return {testing::SnapshotOfInfos(std::move(infos)), std::move(pod)};
}

TEST(GpuFragmentationTest, ScoreNodesEqualsScoreOnEveryNode) {
  common::Random random(20261206);
  const std::vector<std::string> configs = {R"({"policy":"FGD"})",
                                            R"({"policy":"Learned","exactScores":true})",
                                            R"({"policy":"Learned"})"};
  for (int round = 0; round < 300; ++round) {
    SCOPED_TRACE(round);
    const RandomCase c = MakeRandomCase(random);
    const framework::Snapshot& snapshot = c.snapshot;
    const api::Pod& pod = c.pod;
    const auto nodes = All(snapshot);
    for (const std::string& config : configs) {
      SCOPED_TRACE(config);
      auto p = MustCreate(config);
      framework::CycleState state;
      ASSERT_TRUE(p->PreFilter(state, pod, snapshot).ok());
      ASSERT_TRUE(p->PreScore(state, pod, snapshot, nodes).ok());
      std::vector<int64_t> batch(nodes.size());
      p->ScoreNodes(state, pod, snapshot, nodes, batch);
      for (size_t i = 0; i < nodes.size(); ++i) {
        ASSERT_EQ(batch[i], testing::ScoreOf(*p, state, pod, snapshot, nodes[i])) << "node " << i;
      }
    }
  }
}

// The number after `label` in `text`; nullopt when `label` is absent.
std::optional<double> NumberAfter(const std::string& text, std::string_view label) {
  const size_t at = text.find(label);
  if (at == std::string::npos) return std::nullopt;
  return std::strtod(text.c_str() + at + label.size(), nullptr);
}

// What explain prints for Learned's score says what the key holds: the Δ steps in the words are
// the key's primary, and the cost is the sum of its four terms.
TEST(GpuFragmentationTest, ExplainScoreAgreesWithTheLearnedKey) {
  common::Random random(20261207);
  int costed = 0;
  for (int round = 0; round < 300; ++round) {
    SCOPED_TRACE(round);
    const RandomCase c = MakeRandomCase(random);
    auto p = MustCreate(R"({"policy":"Learned","exactScores":true})");
    framework::CycleState state;
    ASSERT_TRUE(p->PreFilter(state, c.pod, c.snapshot).ok());
    ASSERT_TRUE(p->PreScore(state, c.pod, c.snapshot, All(c.snapshot)).ok());
    for (const framework::NodeInfo& node : c.snapshot.nodes()) {
      const int64_t raw = testing::ScoreOf(*p, state, c.pod, c.snapshot, node.index);
      const std::string words = p->ExplainScore(state, c.pod, node, raw);
      SCOPED_TRACE(words);
      if (words.starts_with("the pod's GPUs fit no set")) {
        EXPECT_EQ(raw, 0);
        continue;
      }
      if (words.starts_with("no GPU here")) {
        EXPECT_EQ(raw >> 20, 0);
        continue;
      }
      const auto steps = NumberAfter(words, ") = ");
      ASSERT_TRUE(steps.has_value());
      int64_t primary = raw >> 20;  // the key's high bits (an arithmetic shift: floor)
      if (words.find("2^20 steps") != std::string::npos) primary += int64_t{1} << 20;
      EXPECT_EQ(static_cast<int64_t>(*steps), -primary);
      const double parts = *NumberAfter(words, "fragmentation ") + *NumberAfter(words, "model ") +
                           *NumberAfter(words, ", CPU ") + *NumberAfter(words, "utilization ");
      EXPECT_NEAR(*NumberAfter(words, "cost "), parts, 0.021);  // each printed to 0.01
      ++costed;
    }
  }
  EXPECT_GT(costed, 1000);
}

TEST(GpuFragmentationTest, ExplainScoreOfTheOverrideAndOfFgd) {
  const framework::Snapshot snapshot = SnapshotOf({{Node("n", 4), {{0, 1000}}}});
  api::Pod pod = MakePod("ns", "p").Cpu("1").Annotation(kGpuPolicyAnnotation, "binpack").Obj();
  pod.gpu.count = 1;
  pod.gpu.milli = 1000;
  auto learned = MustCreate("{}");
  framework::CycleState state;
  std::vector<int64_t> scores = ScoreAll(*learned, pod, snapshot, state);
  EXPECT_EQ(learned->ExplainScore(state, pod, snapshot.at(0), scores[0]),
            "binpack (gpusched.io/gpu-policy): 50% of the node's GPU used after");
  auto fgd = MustCreate(R"({"policy":"FGD"})");
  framework::CycleState fgd_state;
  api::Pod plain = GpuPod("q", "1", 1, 1000);
  scores = ScoreAll(*fgd, plain, snapshot, fgd_state);
  EXPECT_TRUE(
      fgd->ExplainScore(fgd_state, plain, snapshot.at(0), scores[0]).starts_with("fragmentation "));
}

TEST(GpuFragmentationTest, ScoreAllocatesNothing) {
  std::vector<NodeSpec> specs;
  for (int i = 0; i < 16; ++i) {
    specs.push_back({Node("n" + std::to_string(i), 8), {{i % 8, 300}}});
  }
  const framework::Snapshot snapshot = SnapshotOf(specs);
  for (std::string policy :
       {"FGD", "Learned", "BestFit", "DotProd", "GpuClustering", "GpuPacking", "Random"}) {
    SCOPED_TRACE(policy);
    auto p = MustCreate(R"({"policy":")" + policy + R"(","exactScores":true})");
    ASSERT_NE(p, nullptr);
    framework::CycleState state;
    const api::Pod pod = GpuPod("s", "2", 1, 450);
    ASSERT_TRUE(p->PreFilter(state, pod, snapshot).ok());
    const auto nodes = All(snapshot);
    ASSERT_TRUE(p->PreScore(state, pod, snapshot, nodes).ok());
    std::vector<int64_t> out(nodes.size());
    p->ScoreNodes(state, pod, snapshot, nodes, out);  // grows ScoreNodes' per-thread table once
    g_allocations = 0;
    g_counting = true;
    p->ScoreNodes(state, pod, snapshot, nodes, out);
    g_counting = false;
    EXPECT_EQ(g_allocations, 0);
  }
}

TEST(GpuFragmentationTest, PerPodPolicyOverride) {
  struct ParseCase {
    std::string value;
    Pack node;
    Pack gpu;
  };
  for (const ParseCase& c :
       std::vector<ParseCase>{{"binpack", Pack::kBinpack, Pack::kBinpack},
                              {"spread", Pack::kSpread, Pack::kSpread},
                              {"spread/binpack", Pack::kSpread, Pack::kBinpack},
                              {"pack", Pack::kNone, Pack::kNone},
                              {"spread/", Pack::kNone, Pack::kNone}}) {
    SCOPED_TRACE(c.value);
    const PackOverride o = ParsePackOverride(c.value);
    EXPECT_EQ(o.node, c.node);
    EXPECT_EQ(o.gpu, c.gpu);
  }
  const std::vector<NodeSpec> nodes = {
      {Node("free", 2), {}},
      {Node("busy", 2), {{0, 600}, {1, 200}}},
  };
  const framework::Snapshot snapshot = SnapshotOf(nodes);
  struct Case {
    std::string name;
    std::string annotation;
    std::vector<int64_t> scores;
    int8_t device_on_busy;
  };
  // free: used after 300 of 2000 = 15; busy: 1100 of 2000 = 55.
  const std::vector<Case> cases = {
      {"binpack prefers the fuller node and the fuller device", "binpack", {15, 55}, 0},
      {"spread prefers the emptier node and the emptier device", "spread", {85, 45}, 1},
      {"node spread with GPU binpack mixes the levels", "spread/binpack", {85, 45}, 0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto p = MustCreate(R"({"policy":"FGD"})");
    ASSERT_NE(p, nullptr);
    api::Pod pod = MakePod("ns", "o").Cpu("1").Annotation(kGpuPolicyAnnotation, c.annotation).Obj();
    pod.gpu.count = 1;
    pod.gpu.milli = 300;
    framework::CycleState state;
    EXPECT_EQ(ScoreAll(*p, pod, snapshot, state), c.scores);
    ASSERT_TRUE(p->Reserve(state, pod, snapshot.at(1)).ok());
    EXPECT_EQ(state.allocation().gpu.devices, std::vector<int8_t>{c.device_on_busy});
  }
}

TEST(GpuFragmentationTest, ScoringDistributionRefreshesAsConfiguredAndCountsItsVersion) {
  const framework::Snapshot snapshot = SnapshotOf({{Node("a", 2), {}}, {Node("b", 2), {}}});
  struct Case {
    std::string name;
    std::string args;
    int pods;
    uint64_t want_version;
  };
  const std::vector<Case> cases = {
      {"every pod when distributionRefreshPods is 1", R"({"distributionRefreshPods":1})", 100, 100},
      {"while the learner is young, whenever its observations doubled (1, 3, 7, 15, 31, 63)",
       R"({"distributionRefreshPods":100000})", 100, 6},
      {"then every distributionRefreshPods pods (1, 3, 7, 15, then 25, 35, ..., 95)",
       R"({"distributionRefreshPods":10})", 100, 12},
      {"never for a policy that learns nothing", R"({"policy":"BestFit"})", 100, 0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto p = MustCreate(c.args);
    ASSERT_NE(p, nullptr);
    EXPECT_TRUE(p->NodeLocal());
    for (int i = 0; i < c.pods; ++i) {
      framework::CycleState state;
      const api::Pod pod = GpuPod("p" + std::to_string(i), "1", 1, 100 + 10 * (i % 5));
      ASSERT_TRUE(p->PreFilter(state, pod, snapshot).ok());
      ASSERT_TRUE(p->PreScore(state, pod, snapshot, All(snapshot)).ok());
    }
    EXPECT_EQ(p->StateVersion(), c.want_version);
  }
}

// Learned's CPU cost, weight * c * I' / C', on a hand-made case: a CPU-only pod of 4 cores and
// three nodes with all 8 GPUs idle or none. Δ is 0 everywhere for a CPU-only pod here (the learned
// type needs 1 core and fits before and after), so only the cost and the packing tie-break decide.
TEST(GpuFragmentationTest, LearnedCpuCostKeepsCpuUnderIdleGpus) {
  const std::vector<NodeSpec> nodes = {
      // 16 cores free under 8 idle GPUs: cost 0.25 * 4000 * 8000 / 12000 = 666.7 milli-GPU.
      {Node("cpu-poor", 8, "96"), {}, 80000},
      // 96 cores free under 8 idle GPUs: cost 0.25 * 4000 * 8000 / 92000 = 87.0.
      {Node("cpu-rich", 8, "96"), {}},
      // No idle GPU: cost 0, whatever its CPU.
      {Node("gpus-used", 2, "96"), {{0, 1000}, {1, 1000}}, 80000},
  };
  const framework::Snapshot snapshot = SnapshotOf(nodes);
  const api::Pod cpu_only = MakePod("ns", "cpu").Cpu("4").Obj();
  auto Scores = [&](std::string_view args) {
    auto p = MustCreate(args);
    EXPECT_NE(p, nullptr);
    for (int i = 0; i < 4; ++i) {
      framework::CycleState warm;
      EXPECT_TRUE(p->PreFilter(warm, GpuPod("typical", "1", 1, 1000), snapshot).ok());
    }
    framework::CycleState state;
    return ScoreAll(*p, cpu_only, snapshot, state);
  };
  // With the cost: the node without idle GPU first, then the CPU-rich one; exact scores are
  // floor(-cost / 50 milli) in the high bits.
  // Steps of 50 milli-GPU for this pod (the default for pods without GPUs is 640).
  const auto with = Scores(R"({"exactScores":true,"cpuPodDeltaQuantum":800})");
  EXPECT_GT(with[2], with[1]);
  EXPECT_GT(with[1], with[0]);
  // A pod without GPUs pays kGpuNodePenalty (2^20 steps) on every GPU node: all three here.
  constexpr int64_t kPenalty = int64_t{1} << 20;
  EXPECT_EQ(with[0] >> 20, -14 - kPenalty);  // floor(-666.7 / 50)
  EXPECT_EQ(with[1] >> 20, -2 - kPenalty);   // floor(-87.0 / 50)
  EXPECT_EQ(with[2] >> 20, -kPenalty);
  // Without it (cpuCostPermille 0) all three tie on Δ and packing picks the node with the least
  // idle GPU, then the least free CPU: the CPU-poor node beats the CPU-rich one.
  const auto without = Scores(R"({"exactScores":true,"cpuCostPermille":0})");
  EXPECT_GT(without[2], without[0]);
  EXPECT_GT(without[0], without[1]);
  // The 0..100 score (no exactScores) includes the cost too: one point per 50 milli step below
  // the best node.
  const auto shared = Scores(R"({"cpuPodDeltaQuantum":800})");
  EXPECT_EQ(shared, (std::vector<int64_t>{86, 98, 100}));
  // Other policies ignore it.
  const auto fgd = Scores(R"({"policy":"FGD","exactScores":true})");
  EXPECT_EQ(fgd[0], fgd[1]);
  // An absurd CPU request saturates the primary key instead of overflowing (UBSan checks).
  auto p = MustCreate(R"({"exactScores":true,"cpuPodDeltaQuantum":800})");
  ASSERT_NE(p, nullptr);
  framework::CycleState state;
  const auto huge = ScoreAll(*p, MakePod("ns", "huge").Cpu("100000000").Obj(), snapshot, state);
  EXPECT_EQ(huge[0] >> 20, -(int64_t{1} << 40) - kPenalty);
  EXPECT_EQ(huge[2] >> 20, -kPenalty);
}

TEST(GpuFragmentationTest, FixedTypicalPodsAreUsedAndNothingIsLearned) {
  // M = one 600-milli type: the 500-milli pod should fill GPU 1 of "half" (Δ = -500 there).
  auto p = MustCreate(R"({"policy":"FGD","typicalPods":[)"
                      R"({"cpuMilli":1000,"gpuCount":1,"gpuMilli":600,"weight":5}]})");
  ASSERT_NE(p, nullptr);
  const std::vector<NodeSpec> nodes = {
      {Node("empty", 2), {}},
      {Node("half", 2), {{0, 1000}, {1, 500}}},
  };
  const framework::Snapshot snapshot = SnapshotOf(nodes);
  framework::CycleState state;
  const api::Pod pod = GpuPod("filler", "1", 1, 500);
  const auto scores = ScoreAll(*p, pod, snapshot, state);
  EXPECT_GT(scores[1], scores[0]);
  EXPECT_EQ(p->learner().observations(), 0);
  ASSERT_TRUE(p->Reserve(state, pod, snapshot.at(1)).ok());
  EXPECT_EQ(state.allocation().gpu.devices, std::vector<int8_t>{1});
}

TEST(GpuFragmentationTest, MemoryOnlySharesAreLearnedWithTheirResolvedMilli) {
  auto p = MustCreate(R"({"policy":"Learned"})");
  ASSERT_NE(p, nullptr);
  const api::NodePtr node =
      MakeNode("n").Cpu("64").Memory("256Gi").Gpus(2).GpuModel("T4").GpuMemoryMiB(16000).Ptr();
  const std::vector<NodeSpec> specs = {{node, {}}};
  const framework::Snapshot snapshot = SnapshotOf(specs);
  // 4000 of 16000 MiB and no compute share: 250 milli on this node.
  api::Pod pod = MakePod("ns", "mem").Cpu("1").Obj();
  pod.gpu.count = 1;
  pod.gpu.milli = 0;
  pod.gpu.share_memory_mib = 4000;
  framework::CycleState state;
  ASSERT_TRUE(p->PreFilter(state, pod, snapshot).ok());
  EXPECT_EQ(p->learner().observations(), 0) << "not learned before its milli is known";
  ASSERT_TRUE(p->PreScore(state, pod, snapshot, All(snapshot)).ok());
  ASSERT_TRUE(p->Reserve(state, pod, snapshot.at(0)).ok());
  ASSERT_EQ(p->learner().observations(), 1);
  const auto m = p->learner().Snapshot();
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].count, 1);
  EXPECT_EQ(m[0].milli, 250);
  EXPECT_EQ(m[0].cpu_milli, 1000);
}

TEST(GpuFragmentationTest, PodsWithoutGpusPreferNodesWithoutGpus) {
  // The GPU node's GPUs are all in use, so Δ and the CPU cost are 0 there as on the CPU node, and
  // packing alone would prefer it (less free CPU). A pod without a GPU request must still go to
  // the node without GPUs; among GPU nodes the order is unchanged.
  const std::vector<NodeSpec> nodes = {
      {Node("gpu-full", 2, "96"), {{0, 1000}, {1, 1000}}, 90000},
      {MakeNode("cpu-only").Cpu("96").Memory("256Gi").Ptr(), {}},
      {Node("gpu-idle", 8, "96"), {}},
  };
  const framework::Snapshot snapshot = SnapshotOf(nodes);
  auto p = MustCreate(R"({})");
  ASSERT_NE(p, nullptr);
  framework::CycleState state;
  const api::Pod cpu_pod = MakePod("ns", "web").Cpu("4").Obj();
  const auto scores = ScoreAll(*p, cpu_pod, snapshot, state);
  EXPECT_EQ(scores[1], 100);
  EXPECT_EQ(scores[0], 0);
  EXPECT_EQ(scores[2], 0);
  // The raw scores (the tie-break keys) keep the GPU nodes' order between themselves: the one
  // without idle GPUs first.
  const auto nodes_all = All(snapshot);
  std::vector<int64_t> raw(nodes_all.size());
  p->ScoreNodes(state, cpu_pod, snapshot, nodes_all, raw);
  EXPECT_GT(raw[1], raw[0]);
  EXPECT_GT(raw[0], raw[2]);
  // A GPU pod is not affected by the rule.
  framework::CycleState gpu_state;
  const auto gpu_scores = ScoreAll(*p, GpuPod("train", "4", 1, 1000), snapshot, gpu_state);
  EXPECT_EQ(gpu_scores[2], 100);
}

TEST(GpuFragmentationTest, LearnedKeepsScarceModelsForThePodsThatNeedThem) {
  // A third of the GPU demand may use only P100 and a third only T4; the cluster has one P100
  // node and two T4 nodes. For a pod that may use any model, Δ is the same on both models (each
  // node is all-fragment for the other restricted type), so FGD's Δ cannot tell them apart; but
  // P100 is the scarcer (pressure 0.32 * 24000 / 8000 = 0.96 against 0.32 * 24000 / 16000 = 0.48),
  // so the pod should take a T4 node.
  const std::vector<NodeSpec> nodes = {
      {Node("p100", 8, "96", "P100"), {}},
      {Node("t4-a", 8, "96", "T4"), {}},
      {Node("t4-b", 8, "96", "T4"), {}},
  };
  const framework::Snapshot snapshot = SnapshotOf(nodes);
  auto Restricted = [](std::string_view model) {
    api::Pod pod = GpuPod("restricted", "4", 1, 1000);
    pod.gpu.models = {common::Intern(model)};
    return pod;
  };
  auto Scores = [&](std::string_view args) {
    auto p = MustCreate(args);
    EXPECT_NE(p, nullptr);
    for (int i = 0; i < 8; ++i) {
      framework::CycleState warm;
      EXPECT_TRUE(p->PreFilter(warm, Restricted("P100"), snapshot).ok());
      EXPECT_TRUE(p->PreFilter(warm, Restricted("T4"), snapshot).ok());
      EXPECT_TRUE(p->PreFilter(warm, GpuPod("any", "4", 1, 1000), snapshot).ok());
    }
    framework::CycleState state;
    return ScoreAll(*p, GpuPod("any", "4", 1, 1000), snapshot, state);
  };
  // Steps of 50 milli-GPU (deltaQuantumPermille 0; the default step of a one-GPU pod is 250).
  const auto with = Scores(R"({"exactScores":true,"deltaQuantumPermille":0})");
  EXPECT_EQ(with[1], with[2]);
  // About 480 milli-GPU of model cost between them: 9 or 10 steps of 50.
  EXPECT_GE((with[1] >> 20) - (with[0] >> 20), 9);
  const auto without =
      Scores(R"({"exactScores":true,"deltaQuantumPermille":0,"modelCostPermille":0})");
  EXPECT_EQ(without[0] >> 20, without[1] >> 20);
}

TEST(GpuFragmentationTest, LearnedSendsGpuWorkToGpusThatAreIdleInFact) {
  // Two identical nodes; DCGM says the first one's GPUs are busy. A GPU pod takes the other one
  // (the utilization cost, 0.9 vs 0.1 of 1000 milli, is three 250-milli steps apart); with the
  // cost off, or utilization unknown, they tie.
  std::vector<NodeSpec> nodes = {{Node("busy", 4), {}}, {Node("idle", 4), {}}};
  std::vector<framework::NodeInfo> infos = {Info(nodes[0], 0), Info(nodes[1], 1)};
  infos[0].gpu_utilization = 0.9;
  infos[1].gpu_utilization = 0.1;
  const framework::Snapshot snapshot = testing::SnapshotOfInfos(std::move(infos));
  const api::Pod pod = GpuPod("p", "1", 1, 1000);
  auto Scores = [&](std::string_view args) {
    auto p = MustCreate(args);
    EXPECT_NE(p, nullptr);
    framework::CycleState state;
    return ScoreAll(*p, pod, snapshot, state);
  };
  const auto with = Scores(R"({"exactScores":true})");
  EXPECT_EQ((with[1] >> 20) - (with[0] >> 20), 3);
  const auto without = Scores(R"({"exactScores":true,"utilizationCostPermille":0})");
  EXPECT_EQ(without[0] >> 20, without[1] >> 20);
  const auto unknown = ScoreAll(*MustCreate(R"({"exactScores":true})"), pod, SnapshotOf(nodes),
                                *std::make_unique<framework::CycleState>());
  EXPECT_EQ(unknown[0], unknown[1]);
}

TEST(GpuFragmentationTest, MultiGpuPodsTakeOneNvlinkIslandWhenOneHasRoom) {
  // Device 0 is in use: the lowest free devices 1..4 would straddle both islands; island 1 has
  // room for the whole pod.
  const NodeSpec spec{MakeNode("n")
                          .Cpu("64")
                          .Memory("256Gi")
                          .Gpus(8)
                          .GpuModel("A100")
                          .NvlinkIslands("0,1,2,3;4,5,6,7")
                          .Ptr(),
                      {{0, 1000}}};
  const framework::Snapshot snapshot = SnapshotOf({spec});
  const api::Pod pod = GpuPod("train", "8", 4, 1000);
  auto p = MustCreate(R"({})");
  ASSERT_NE(p, nullptr);
  framework::CycleState state;
  ScoreAll(*p, pod, snapshot, state);
  ASSERT_TRUE(p->Reserve(state, pod, snapshot.at(0)).ok());
  EXPECT_EQ(state.allocation().gpu.devices, (std::vector<int8_t>{4, 5, 6, 7}));
}

TEST(GpuFragmentationTest, NodeOrderTieBreakTakesTheFirstNodeForThePaperBaselines) {
  const std::vector<NodeSpec> nodes = {{Node("a", 8), {}}, {Node("b", 8), {}}};
  const framework::Snapshot snapshot = SnapshotOf(nodes);
  const api::Pod pod = GpuPod("p", "1", 1, 1000);
  using Rule = framework::ScorePlugin::TieBreak;
  auto fgd = MustCreate(R"({"policy":"FGD","exactScores":true,"tieBreak":"NodeOrder"})");
  ASSERT_NE(fgd, nullptr);
  EXPECT_EQ(fgd->TieBreakRule(), Rule::kFirstNode);
  framework::CycleState state;
  const auto scores = ScoreAll(*fgd, pod, snapshot, state);
  EXPECT_EQ(scores[0], scores[1]);
  // Random keeps drawing its node; FGD without the arg keeps kube-scheduler's random ties.
  EXPECT_EQ(MustCreate(R"({"policy":"Random","tieBreak":"NodeOrder"})")->TieBreakRule(),
            Rule::kNone);
  EXPECT_EQ(MustCreate(R"({"policy":"FGD","exactScores":true})")->TieBreakRule(), Rule::kNone);
  // Learned on the shared 0..100 scale breaks ties by its raw score, the exact key.
  EXPECT_EQ(MustCreate(R"({})")->TieBreakRule(), Rule::kRawScore);
  EXPECT_EQ(MustCreate(R"({"exactScores":true})")->TieBreakRule(), Rule::kNone);
  EXPECT_FALSE(ParseArgs(boost::json::parse(R"({"tieBreak":"first"})")).ok());
}

TEST(GpuFragmentationTest, NameIsRegisteredName) {
  auto p = MustCreate("");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->Name(), names::kGpuFragmentation);
  EXPECT_EQ(PolicyName(Policy::kGpuPacking), "GpuPacking");
}

}  // namespace
}  // namespace gpusched::plugins::gpu_fragmentation
