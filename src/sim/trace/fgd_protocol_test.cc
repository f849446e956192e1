// SPDX-License-Identifier: Apache-2.0
#include "src/sim/trace/fgd_protocol.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "src/common/clock.h"
#include "src/plugins/in_tree_registry.h"
#include "src/sim/simulator.h"
#include "src/sim/trace/openb.h"
#include "src/sim/trace/packing_bound.h"

namespace gpusched::sim::trace {
namespace {

api::PodPtr GpuPod(std::string name, int32_t count, int32_t milli) {
  auto p = std::make_shared<api::Pod>();
  p->meta.name = name;
  p->meta.namespace_ = "openb";
  p->meta.uid = "openb/" + name;
  p->requests.milli_cpu = 1000;
  p->requests.pods = 1;
  p->scheduler_name = common::Intern("gpu-scheduler");
  p->gpu.count = count;
  p->gpu.milli = milli;
  return p;
}

int64_t Demand(const std::vector<api::PodPtr>& pods) {
  int64_t d = 0;
  for (const auto& p : pods) d += p->gpu.TotalMilli();
  return d;
}

TEST(FgdPodSequenceTest, InflationKeepsTheArtifactsStopTestQuirk) {
  // One 4-GPU pod, a 10-GPU cluster, target 13000 milli. The stop test adds d = 1000 per draw,
  // the total adds 4000: 4000 -> 8000 -> 12000 -> 16000 (13000 passes the test), then stop.
  std::vector<api::PodPtr> pods = {GpuPod("a", 4, 1000)};
  FgdOptions opts;
  int64_t appended = 0;
  int64_t removed = 0;
  auto seq = FgdPodSequence(pods, 10000, opts, &appended, &removed);
  EXPECT_EQ(appended, 3);
  EXPECT_EQ(removed, 0);
  ASSERT_EQ(seq.size(), 4u);
  EXPECT_EQ(Demand(seq), 16000);
  EXPECT_EQ(seq[1]->meta.name, "a-tuned-0");
  EXPECT_EQ(seq[3]->meta.name, "a-tuned-2");
  EXPECT_EQ(seq[3]->meta.uid, "openb/a-tuned-2");
}

TEST(FgdPodSequenceTest, ShufflesInflatesAndDeflatesDeterministically) {
  std::vector<api::PodPtr> pods;
  for (int i = 0; i < 40; ++i) {
    pods.push_back(GpuPod("p" + std::to_string(i), i % 5 == 0 ? 0 : 1, i % 2 ? 1000 : 300));
  }
  const int64_t demand = Demand(pods);
  struct Case {
    std::string name;
    int64_t cluster_milli;
    bool inflate;
  };
  const std::vector<Case> cases = {
      {"below 130 % of capacity the sequence is inflated", demand, true},
      {"above 130 % of capacity pods are removed", demand / 4, false},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    FgdOptions opts;
    int64_t appended = 0;
    int64_t removed = 0;
    auto seq = FgdPodSequence(pods, c.cluster_milli, opts, &appended, &removed);
    const double target = 1.3 * static_cast<double>(c.cluster_milli);
    if (c.inflate) {
      EXPECT_GT(appended, 0);
      EXPECT_EQ(removed, 0);
      EXPECT_EQ(seq.size(), pods.size() + static_cast<size_t>(appended));
      // Single-GPU pods only: the stop test is exact, the total stays within one pod of target.
      EXPECT_LE(static_cast<double>(Demand(seq)), target);
      EXPECT_GT(static_cast<double>(Demand(seq)) + 1000, target);
    } else {
      EXPECT_EQ(appended, 0);
      EXPECT_GT(removed, 0);
      EXPECT_EQ(seq.size(), pods.size() - static_cast<size_t>(removed));
      EXPECT_LE(static_cast<double>(Demand(seq)), target);
    }
    int64_t a2 = 0;
    int64_t r2 = 0;
    auto again = FgdPodSequence(pods, c.cluster_milli, opts, &a2, &r2);
    ASSERT_EQ(again.size(), seq.size());
    for (size_t i = 0; i < seq.size(); ++i) EXPECT_EQ(again[i]->meta.name, seq[i]->meta.name);
    opts.seed = 43;
    auto other = FgdPodSequence(pods, c.cluster_milli, opts, &a2, &r2);
    bool differs = other.size() != seq.size();
    for (size_t i = 0; !differs && i < seq.size(); ++i) differs = other[i] != seq[i];
    EXPECT_TRUE(differs) << "seed 43 gave the same sequence as seed 42";
  }
}

TEST(FgdCurveTest, BucketsByRoundedArrivalAsTheAnalysisScriptDoes) {
  const std::vector<std::pair<double, double>> samples = {
      {98.2, 80.0},    // bucket 98
      {99.4, 90.0},    // 99
      {99.6, 91.004},  // 100; allocation rounds to 91.00
      {100.5, 92.0},   // 100 (half to even)
      {101.5, 93.0},   // 102 (half to even)
  };
  auto curve = FgdCurve(samples);
  struct Case {
    int32_t arrived;
    double allocated;
    int64_t samples;
  };
  const std::vector<Case> cases = {
      {98, 80.0, 1},  {99, 90.0, 1},
      {100, 91.5, 2}, {101, (91.0 + 92.0 + 93.0) / 3, 3},  // empty: the neighbours 100 and 102
      {102, 93.0, 1},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.arrived);
    const FgdPoint* p = nullptr;
    for (const auto& q : curve) {
      if (q.arrived_pct == c.arrived) p = &q;
    }
    ASSERT_NE(p, nullptr);
    EXPECT_NEAR(p->allocated_pct, c.allocated, 1e-9);
    EXPECT_NEAR(p->unallocated_pct, 100 - c.allocated, 1e-9);
    EXPECT_EQ(p->samples, c.samples);
  }
  // Buckets 0..97 have no samples within +-1 and are left out.
  EXPECT_EQ(curve.front().arrived_pct, 97);
}

// A small synthetic trace: 13 nodes (90 GPUs), 12 pods (about 1,000 after inflation). No pod
// moves arrivals by 3 % or more, so the buckets around 100 % always hold samples.
constexpr std::string_view kSmallNodes =
    "sn,cpu_milli,memory_mib,gpu,model\n"
    "n0,96000,393216,8,G2\nn1,96000,393216,8,G2\nn2,96000,393216,8,G2\n"
    "n3,96000,393216,8,G2\nn4,96000,393216,8,G2\nn5,96000,393216,8,G2\n"
    "n6,96000,393216,8,G2\nn7,96000,393216,8,G2\nn8,96000,393216,8,G2\n"
    "n9,96000,393216,8,G2\n"
    "n10,32000,131072,4,V100M16\n"
    "n11,32000,131072,4,T4\n"
    "n12,16000,65536,2,P100\n";
constexpr std::string_view kSmallPods =
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n"
    "p0,4000,8192,1,500,\n"
    "p1,4000,8192,1,250,\n"
    "p2,8000,16384,2,1000,\n"
    "p3,2000,4096,0,0,\n"
    "p4,4000,8192,1,1000,T4\n"
    "p5,4000,8192,1,750,V100M16|P100\n"
    "p6,4000,8192,2,1000,\n"
    "p7,1000,2048,1,300,\n"
    "p8,1000,2048,1,700,\n"
    "p9,6000,8192,1,1000,P100\n"
    "p10,2000,4096,1,400,\n"
    "p11,2000,4096,0,0,\n";

Workload SmallTrace() {
  Workload w;
  auto nodes = ParseOpenbNodes(kSmallNodes, "small-nodes.csv");
  auto pods = ParseOpenbPods(kSmallPods, "small-pods.csv");
  EXPECT_TRUE(nodes.ok()) << nodes.status().ToString();
  EXPECT_TRUE(pods.ok()) << pods.status().ToString();
  if (nodes.ok()) w.nodes = *nodes;
  if (pods.ok()) w.pods = *pods;
  return w;
}

TEST(FgdProtocolTest, RunsTheProtocolOnASmallTrace) {
  static const common::FakeClock wall;
  Workload w = SmallTrace();
  FgdOptions opts;
  opts.check_invariants = true;
  auto run = RunFgdProtocol(w, BestFitSchedulerConfig(), {plugins::InTreeRegistry(), wall}, opts);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  const FgdResult& r = run->result;
  EXPECT_EQ(r.nodes, 13);
  EXPECT_EQ(r.cluster_gpu_milli, 90000);
  EXPECT_EQ(r.original_pods, 12);
  EXPECT_EQ(r.tried_pods, r.original_pods + r.appended_pods);
  EXPECT_EQ(r.placed_pods + r.failed_pods, r.tried_pods);
  EXPECT_GT(r.failed_pods, 0) << "130 % of capacity cannot all fit";
  EXPECT_LE(r.allocated_milli, r.cluster_gpu_milli);
  EXPECT_GE(r.arrived_milli, 115000);
  ASSERT_TRUE(r.unallocated_at_100.has_value());
  EXPECT_GE(*r.unallocated_at_100, 0.0);
  EXPECT_LE(*r.unallocated_at_100, 100.0);
  // Failed pods were deleted: the cluster holds exactly the placed ones.
  EXPECT_EQ(run->sim->cluster().PodCount(), r.placed_pods);
  EXPECT_EQ(run->sim->Stats().decisions, r.tried_pods);
  // Arrived buckets ascend.
  for (size_t i = 1; i < r.curve.size(); ++i) {
    EXPECT_LT(r.curve[i - 1].arrived_pct, r.curve[i].arrived_pct);
  }
  // Same seed, same result.
  auto again = RunFgdProtocol(w, BestFitSchedulerConfig(), {plugins::InTreeRegistry(), wall}, opts);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->result.allocated_milli, r.allocated_milli);
  EXPECT_EQ(again->result.placed_pods, r.placed_pods);
  EXPECT_EQ(FgdCurveCsv(again->result), FgdCurveCsv(r));
  EXPECT_EQ(FgdCurveCsv(r).rfind("arrived_pct,allocated_pct,unallocated_pct,samples\n", 0), 0u);
  EXPECT_EQ(FgdToJson(r).at("pods").at("tried").as_int64(), r.tried_pods);
}

TEST(FgdProtocolTest, ArrivedPrefixEndsWithTheBucket) {
  // 1 GPU: arrived 30, 60, 90, 100.5 (rounds half to even: 100), 101.5 (102).
  const std::vector<api::PodPtr> seq = {GpuPod("a", 1, 300), GpuPod("b", 1, 300),
                                        GpuPod("c", 1, 300), GpuPod("d", 1, 105),
                                        GpuPod("e", 1, 10)};
  EXPECT_EQ(FgdArrivedPrefix(seq, 1000, 100), 4u);
  EXPECT_EQ(FgdArrivedPrefix(seq, 1000, 90), 3u);
  EXPECT_EQ(FgdArrivedPrefix(seq, 1000, 20), 0u);
  EXPECT_EQ(FgdArrivedPrefix(seq, 1000, 130), 5u);
}

// No policy gets below the offline limit of the pods it has tried (issue #41).
TEST(FgdProtocolTest, NoPolicyBeatsTheOfflineLimit) {
  static const common::FakeClock wall;
  Workload w = SmallTrace();
  for (uint64_t seed : {42, 43, 44}) {
    FgdOptions opts;
    opts.seed = seed;
    int64_t appended = 0;
    int64_t removed = 0;
    const std::vector<api::PodPtr> seq = FgdPodSequence(w.pods, 90000, opts, &appended, &removed);
    // Bucket 101's pods: on 90 GPUs bucket 100 can be empty and take its neighbours' samples.
    auto bound = ComputePackingBound(
        w.nodes, std::span<const api::PodPtr>(seq.data(), FgdArrivedPrefix(seq, 90000, 101)));
    ASSERT_TRUE(bound.ok()) << bound.status().ToString();
    for (const char* policy : {"FGD", "BestFit", "GpuPacking", "Random"}) {
      auto run = RunFgdProtocol(w, FragmentationSchedulerConfig(policy),
                                {plugins::InTreeRegistry(), wall}, opts);
      ASSERT_TRUE(run.ok()) << run.status().ToString();
      ASSERT_TRUE(run->result.unallocated_at_100.has_value());
      EXPECT_LE(bound->MinUnallocatedPct(), *run->result.unallocated_at_100 + 1e-9)
          << policy << " seed " << seed;
    }
  }
}

TEST(FgdProtocolTest, BestFitPacksSharedPodsOntoOneGpu) {
  static const common::FakeClock wall;
  Workload w;
  auto nodes = ParseOpenbNodes(
      "sn,cpu_milli,memory_mib,gpu,model\nn0,32000,65536,2,T4\n"
      "n1,32000,65536,2,T4\nn2,32000,65536,2,T4\n",
      "n.csv");
  auto pods = ParseOpenbPods(
      "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"
      "a,1000,1024,1,300\nb,1000,1024,1,300\nc,1000,1024,1,300\n",
      "p.csv");
  ASSERT_TRUE(nodes.ok() && pods.ok());
  w.nodes = *nodes;
  w.pods = *pods;
  FgdOptions opts;
  opts.inflation = 0;  // no resampling: exactly these three pods
  opts.check_invariants = true;
  auto run = RunFgdProtocol(w, BestFitSchedulerConfig(), {plugins::InTreeRegistry(), wall}, opts);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  const auto outcomes = run->sim->outcomes();
  ASSERT_EQ(outcomes.size(), 3u);
  for (const auto& o : outcomes) {
    ASSERT_EQ(o.state, PodState::kScheduled);
    EXPECT_EQ(o.node, outcomes[0].node);
    EXPECT_EQ(o.gpu.devices, outcomes[0].gpu.devices);
  }
}

// Every GpuFragmentation policy replays the small trace with the cache invariants checked after
// every placement (no GPU over-committed), and is deterministic for a seed.
TEST(FgdProtocolTest, EveryFragmentationPolicyKeepsTheInvariants) {
  static const common::FakeClock wall;
  Workload w = SmallTrace();
  for (std::string_view policy :
       {"FGD", "Learned", "BestFit", "DotProd", "GpuClustering", "GpuPacking", "Random"}) {
    SCOPED_TRACE(std::string(policy));
    for (uint64_t seed : {42, 43}) {
      FgdOptions opts;
      opts.seed = seed;
      opts.check_invariants = true;
      auto run = RunFgdProtocol(w, FragmentationSchedulerConfig(policy),
                                {plugins::InTreeRegistry(), wall}, opts);
      ASSERT_TRUE(run.ok()) << run.status().ToString();
      const FgdResult& r = run->result;
      EXPECT_EQ(r.placed_pods + r.failed_pods, r.tried_pods);
      EXPECT_GT(r.placed_pods, 0);
      EXPECT_LE(r.allocated_milli, r.cluster_gpu_milli);
      auto again = RunFgdProtocol(w, FragmentationSchedulerConfig(policy),
                                  {plugins::InTreeRegistry(), wall}, opts);
      ASSERT_TRUE(again.ok());
      EXPECT_EQ(FgdCurveCsv(again->result), FgdCurveCsv(r));
    }
  }
}

// The paper's typical pods (docs/simulator.md, "Typical pods"): grouped by type, heaviest first
// (ties: larger key first), the shortest prefix reaching the coverage; and the fgd-trace baseline
// replays with them.
TEST(FgdProtocolTest, TraceTypicalPodsFollowThePaper) {
  Workload w = SmallTrace();
  // 12 pods in 11 types: (2000 m CPU, no GPU) twice, every other type once.
  const boost::json::array all = TraceTypicalPods(w);
  EXPECT_EQ(all.size(), 11u);
  const boost::json::array half = TraceTypicalPods(w, 0.5);
  ASSERT_EQ(half.size(), 5u);  // 2 + 1 + 1 + 1 + 1 = 6 pods >= 50 % of 12
  EXPECT_EQ(half[0].at("cpuMilli").as_int64(), 2000);
  EXPECT_EQ(half[0].at("gpuCount").as_int64(), 0);
  EXPECT_EQ(half[0].at("weight").as_int64(), 2);
  EXPECT_EQ(half[1].at("cpuMilli").as_int64(), 8000);
  EXPECT_EQ(half[2].at("cpuMilli").as_int64(), 6000);
  ASSERT_EQ(half[2].at("models").as_array().size(), 1u);
  EXPECT_EQ(half[2].at("models").as_array()[0].as_string(), "P100");
  EXPECT_EQ(half[3].at("gpuCount").as_int64(), 2);  // (4000, 1000 x 2) before (4000, 1000 x 1)
  EXPECT_EQ(half[4].at("gpuCount").as_int64(), 1);

  static const common::FakeClock wall;
  FgdOptions opts;
  opts.check_invariants = true;
  auto run = RunFgdProtocol(w, TraceFgdSchedulerConfig(w), {plugins::InTreeRegistry(), wall}, opts);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_GT(run->result.placed_pods, 0);
  auto again =
      RunFgdProtocol(w, TraceFgdSchedulerConfig(w), {plugins::InTreeRegistry(), wall}, opts);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(FgdCurveCsv(again->result), FgdCurveCsv(run->result));
}

// The openb trace folder: GPUSCHED_TRACE_DIR, else ../shared/traces/alibaba-gpu-v2023 beside
// the source tree (README, "The openb trace").
std::filesystem::path TraceDir() {
  if (const char* dir = std::getenv("GPUSCHED_TRACE_DIR"); dir != nullptr && *dir != '\0') {
    return dir;
  }
  const char* src = std::getenv("GPUSCHED_SOURCE_DIR");
  return std::filesystem::path(src == nullptr ? "." : src) / ".." / "shared" / "traces" /
         "alibaba-gpu-v2023";
}

// The trace folder when it holds the trace, else empty (the test is then skipped: ctest reports
// sim_trace_real as Skipped).
std::filesystem::path SharedTraceDir() {
  const std::filesystem::path dir = TraceDir();
  return std::filesystem::exists(dir / "openb_pod_list_default.csv") ? dir
                                                                     : std::filesystem::path();
}

constexpr std::string_view kNoTrace =
    "the openb trace is not there: set GPUSCHED_TRACE_DIR to the alibaba/clusterdata folder "
    "cluster-trace-gpu-v2023/csv (README, \"The openb trace\")";

// The real default trace, when the repository's shared/ folder is next to the source tree.
TEST(FgdProtocolTest, RealDefaultTraceBestFitMatchesThePaper) {
  const std::filesystem::path dir = SharedTraceDir();
  if (dir.empty()) GTEST_SKIP() << kNoTrace << " (" << TraceDir().string() << ")";
  const auto nodes = dir / "openb_node_list_gpu_node.csv";
  const auto pods = dir / "openb_pod_list_default.csv";
  auto w = LoadOpenbTrace(nodes.string(), pods.string());
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_EQ(w->nodes.size(), 1213u);
  EXPECT_EQ(w->pods.size(), 8152u);
  static const common::FakeClock wall;
  FgdOptions opts;  // seed 42, inflation 1.3
  auto run = RunFgdProtocol(*w, BestFitSchedulerConfig(), {plugins::InTreeRegistry(), wall}, opts);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  const FgdResult& r = run->result;
  EXPECT_EQ(r.cluster_gpu_milli, 6212000);
  EXPECT_EQ(r.original_demand_milli, 6086800);
  ASSERT_TRUE(r.unallocated_at_100.has_value());
  // The paper's BestFit: 7.09 % (median over seeds 42..51; 7.14 +- 0.14 mean).
  EXPECT_GE(*r.unallocated_at_100, 5.0);
  EXPECT_LE(*r.unallocated_at_100, 10.0);
  RecordProperty("unallocated_at_100", std::to_string(*r.unallocated_at_100));

  // The offline limit of the same pods (issue #41): below the policy's result, above zero (the
  // 810-milli pods alone waste GPUs that no placement fills).
  int64_t appended = 0;
  int64_t removed = 0;
  const std::vector<api::PodPtr> seq =
      FgdPodSequence(w->pods, r.cluster_gpu_milli, opts, &appended, &removed);
  const size_t arrived = FgdArrivedPrefix(seq, r.cluster_gpu_milli, 100);
  auto bound = ComputePackingBound(w->nodes, std::span<const api::PodPtr>(seq.data(), arrived));
  ASSERT_TRUE(bound.ok()) << bound.status().ToString();
  EXPECT_FALSE(bound->exact);
  EXPECT_GT(bound->MinUnallocatedPct(), 1.0);
  EXPECT_LT(bound->MinUnallocatedPct(), *r.unallocated_at_100);
  RecordProperty("min_unallocated_at_100", std::to_string(bound->MinUnallocatedPct()));
}

// The all-node list (310 CPU-only nodes among the GPU nodes), the FGD protocol's pod sequence,
// the default profile: no pod without a GPU request is placed on a GPU node while a node without
// GPUs that fits it has room at that moment; and the GPU placement stays good.
TEST(FgdProtocolTest, RealAllNodeTraceDefaultProfileKeepsCpuPodsOffGpuNodes) {
  const std::filesystem::path dir = SharedTraceDir();
  if (dir.empty()) GTEST_SKIP() << kNoTrace << " (" << TraceDir().string() << ")";
  auto w = LoadOpenbTrace((dir / "openb_node_list_all_node.csv").string(),
                          (dir / "openb_pod_list_default.csv").string());
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  ASSERT_EQ(w->nodes.size(), 1523u);
  static const common::FakeClock wall;
  SimOptions so;
  so.retry = false;
  auto sim = Simulator::Create(SimulationDefaultConfig(), {plugins::InTreeRegistry(), wall}, so);
  ASSERT_TRUE(sim.ok()) << sim.status().ToString();
  int64_t cluster_gpu_milli = 0;
  for (const auto& n : w->nodes) {
    cluster_gpu_milli += int64_t{n->gpu.count} * api::kMilliPerGpu;
    ASSERT_TRUE((*sim)->AddNode(n).ok());
  }
  int64_t appended = 0;
  int64_t removed = 0;
  const std::vector<api::PodPtr> seq =
      FgdPodSequence(w->pods, cluster_gpu_milli, FgdOptions{}, &appended, &removed);
  int cpu_pods_on_cpu_nodes = 0;
  int cpu_pods_on_gpu_nodes = 0;  // only when no CPU node fitted
  int64_t allocated = 0;
  for (const api::PodPtr& pod : seq) {
    auto idx = (*sim)->SubmitPod(pod);
    ASSERT_TRUE(idx.ok()) << idx.status().ToString();
    const PodOutcome& o = (*sim)->outcomes()[*idx];
    if (o.state != PodState::kScheduled) continue;
    allocated += pod->gpu.TotalMilli();
    if (!pod->gpu.empty()) continue;
    const bool on_gpu_node = (*sim)->cluster().GetNode(o.node)->gpu.count > 0;
    (on_gpu_node ? cpu_pods_on_gpu_nodes : cpu_pods_on_cpu_nodes) += 1;
    if (!on_gpu_node) continue;
    // The CPU nodes are as they were before the pod came: it took room on a GPU node only (the
    // run retries nothing and the openb pods share one priority, so nothing was preempted).
    // Asking after the placement, only for these pods (a third of them), saves a fifth of the
    // test's time; the placements are the same.
    auto feasible = (*sim)->FeasibleNodes(pod);
    ASSERT_TRUE(feasible.ok()) << feasible.status().ToString();
    for (const auto& n : *feasible) {
      ASSERT_GT(n->gpu.count, 0) << pod->meta.name << " went to GPU node " << o.node
                                 << " while CPU node " << n->meta.name << " had room";
    }
  }
  EXPECT_GT(cpu_pods_on_cpu_nodes, 500);
  RecordProperty("cpu_pods_on_cpu_nodes", std::to_string(cpu_pods_on_cpu_nodes));
  RecordProperty("cpu_pods_on_gpu_nodes", std::to_string(cpu_pods_on_gpu_nodes));
  // At 130 % arrived the default profile allocates about 95.5 % of the GPUs (BENCHMARKS.md);
  // BestFit ends at about 93 %.
  const double allocated_percent =
      100.0 * static_cast<double>(allocated) / static_cast<double>(cluster_gpu_milli);
  RecordProperty("gpu_allocated_percent", std::to_string(allocated_percent));
  EXPECT_GT(allocated_percent, 94.0);
}

}  // namespace
}  // namespace gpusched::sim::trace
