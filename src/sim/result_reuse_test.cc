// SPDX-License-Identifier: Apache-2.0
// Differential tests of the runtime's result reuse (framework/runtime/result_cache.h), twin
// nodes (framework/runtime/twins.cc) and parallel Filter and Score (framework/runtime/
// parallel.cc): the same workload scheduled with the feature on and off must give identical
// outcomes, pod by pod (node, GPU devices, state and FitError message), with the default and the
// fragmentation-aware profiles.
#include <gtest/gtest.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "src/common/clock.h"
#include "src/common/parallel.h"
#include "src/common/random.h"
#include "src/plugins/in_tree_registry.h"
#include "src/sim/simulator.h"
#include "src/sim/workload.h"
#include "src/testing/builders.h"

namespace gpusched::sim {
namespace {

using gpusched::testing::MakeNode;
using gpusched::testing::MakePod;

// 300 nodes: CPU nodes of two sizes, 8×A100 and 4×T4 GPU nodes (tainted), three zones, a few
// cordoned nodes. Pods come in bursts of one template (1–24 pods), from templates that fit
// everywhere, need a zone, need GPUs (whole, shared, a model), or fit nowhere. With
// `replicaset`, two bursts in three are owned by their template's ReplicaSet (Deployment pods:
// PodTopologySpread's system default zone/hostname constraints score them, a cross-node
// plugin), the others by none, so one equivalence class sees cycles with and without it.
Workload MakeWorkload(int32_t num_nodes, int32_t num_pods, uint64_t seed, bool replicaset = false) {
  Workload w;
  const char* zones[] = {"zone-a", "zone-b", "zone-c"};
  for (int32_t i = 0; i < num_nodes; ++i) {
    const std::string name = "node-" + std::to_string(i);
    const char* zone = zones[i % 3];
    switch (i % 6) {
      case 0:
        w.nodes.push_back(MakeNode(name)
                              .Cpu("96")
                              .Memory("1152Gi")
                              .Gpus(8)
                              .GpuModel("A100-SXM4-80GB")
                              .GpuMemoryMiB(81920)
                              .Zone(zone)
                              .Taint("nvidia.com/gpu", "present", api::TaintEffect::kNoSchedule)
                              .Ptr());
        break;
      case 1:
        w.nodes.push_back(MakeNode(name)
                              .Cpu("48")
                              .Memory("192Gi")
                              .Gpus(4)
                              .GpuModel("Tesla-T4")
                              .GpuMemoryMiB(15360)
                              .Zone(zone)
                              .Taint("nvidia.com/gpu", "present", api::TaintEffect::kNoSchedule)
                              .Ptr());
        break;
      case 2:
        w.nodes.push_back(
            MakeNode(name).Cpu("16").Memory("64Gi").Zone(zone).Unschedulable(i % 60 == 2).Ptr());
        break;
      default: w.nodes.push_back(MakeNode(name).Cpu("8").Memory("32Gi").Zone(zone).Ptr()); break;
    }
  }
  common::Random rng(seed);
  int32_t made = 0;
  for (int32_t burst_no = 0; made < num_pods; ++burst_no) {
    const uint64_t t = rng.Uniform(12);
    const int32_t burst = 1 + static_cast<int32_t>(rng.Uniform(24));
    const bool owned = replicaset && burst_no % 3 != 0;
    for (int32_t b = 0; b < burst && made < num_pods; ++b, ++made) {
      auto p = MakePod("bench", "pod-" + std::to_string(made))
                   .Label("app", "app-" + std::to_string(made % 7));
      if (owned) p.OwnerReference("ReplicaSet", "rs-" + std::to_string(t));
      switch (t) {
        case 0: p.Cpu("250m").Memory("512Mi"); break;
        case 1: p.Cpu("1").Memory("2Gi"); break;
        case 2:
          p.Cpu("2").Memory("4Gi").NodeAffinityIn("topology.kubernetes.io/zone", {"zone-a"});
          break;
        case 3:
          p.Cpu("500m").Memory("1Gi").NodeSelector("topology.kubernetes.io/zone", "zone-c");
          break;
        case 4: p.Cpu("4").Memory("16Gi").TolerationExists("nvidia.com/gpu").Gpus(1); break;
        case 5:
          p.Cpu("8").Memory("64Gi").TolerationExists("nvidia.com/gpu").Gpus(2).GpuModel("A100");
          break;
        case 6:
          p.Cpu("2")
              .Memory("8Gi")
              .TolerationExists("nvidia.com/gpu")
              .Gpus(1)
              .Annotation("gpusched.io/gpu-milli", "500");
          break;
        case 7:
          p.Cpu("1").Memory("4Gi").TolerationExists("nvidia.com/gpu").Gpus(1).GpuModel("T4");
          break;
        case 8: p.Cpu("200").Memory("1Gi"); break;  // fits nowhere: every node rejects it
        case 9:
          p.Cpu("6").Memory("24Gi").PreferredNodeAffinity(50, "topology.kubernetes.io/zone",
                                                          {"zone-b"});
          break;
        case 10: p.Cpu("24").Memory("96Gi").TolerationExists("nvidia.com/gpu").Gpus(4); break;
        default: p.Cpu("3").Memory("3Gi"); break;
      }
      w.pods.push_back(p.Ptr());
    }
  }
  return w;
}

// refresh > 0: GpuFragmentation's distributionRefreshPods; percentage: percentageOfNodesToScore.
config::SchedulerConfig ProfileConfig(bool fragmentation, int refresh, int32_t percentage,
                                      std::string_view policy = "") {
  config::SchedulerConfig c = SimulationDefaultConfig();
  c.percentage_of_nodes_to_score = percentage;
  if (fragmentation) {
    config::Profile& p = c.profiles.front();
    p.plugins.at(config::Point::kMultiPoint)
        .enabled.push_back(
            config::PluginRef{"GpuFragmentation", 1, p.path + ".plugins.multiPoint.enabled[0]"});
    if (refresh > 0 || !policy.empty()) {
      config::PluginConfig pc;
      pc.name = "GpuFragmentation";
      boost::json::object args;
      if (refresh > 0) args["distributionRefreshPods"] = refresh;
      if (!policy.empty()) args["policy"] = policy;
      pc.args = std::move(args);
      pc.path = p.path + ".pluginConfig[0]";
      p.plugin_config.push_back(std::move(pc));
    }
  }
  return c;
}

struct RunResult {
  std::unique_ptr<Simulator> sim;
  framework::runtime::ResultCache::Stats stats;
  framework::runtime::Framework::TwinStats twins;
  framework::runtime::Framework::ParallelStats parallel;
};

RunResult RunOnce(const Workload& w, bool fragmentation, int refresh, bool reuse, bool retry,
                  int32_t percentage = 100, bool twins = true, std::string_view policy = "",
                  common::Parallelizer* parallel = nullptr) {
  static const common::FakeClock wall;
  SimOptions opts;
  opts.seed = 7;
  opts.retry = retry;
  const config::SchedulerConfig config = ProfileConfig(fragmentation, refresh, percentage, policy);
  auto sim = Simulator::Create(config, {plugins::InTreeRegistry(), wall}, opts);
  EXPECT_TRUE(sim.ok()) << sim.status().ToString();
  if (!sim.ok()) return {};
  framework::runtime::Framework* fw =
      (*sim)->scheduler().FrameworkFor(config.profiles.front().scheduler_name);
  EXPECT_NE(fw, nullptr);
  if (fw == nullptr) return {};
  fw->SetResultReuse(reuse);
  fw->SetTwinNodes(twins);
  // Null: Filter and Score on this thread. Else the parallel path for every window and list of
  // two nodes or more, so that these small clusters exercise it.
  fw->SetParallelizer(parallel, {.filter_nodes = 2, .by_cost = false, .score_nodes = 2});
  common::Status s = (*sim)->Run(w);
  EXPECT_TRUE(s.ok()) << s.ToString();
  RunResult r;
  r.stats = fw->result_reuse_stats();
  r.twins = fw->twin_stats();
  r.parallel = fw->parallel_stats();
  r.sim = std::move(*sim);
  return r;
}

struct Tally {
  int scheduled = 0;
  int unschedulable = 0;
};

// Expects the same outcome for every pod (node, GPU devices, state, FitError message, attempts)
// in `off` and `on`, runs without and with `feature`.
Tally CompareOutcomes(const Simulator& off, const Simulator& on, std::string_view feature) {
  const auto a = off.outcomes();
  const auto b = on.outcomes();
  EXPECT_EQ(a.size(), b.size());
  Tally t;
  int differences = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    t.scheduled += a[i].state == PodState::kScheduled ? 1 : 0;
    t.unschedulable += a[i].state == PodState::kUnschedulable ? 1 : 0;
    if (a[i].state != b[i].state || a[i].node != b[i].node || a[i].gpu != b[i].gpu ||
        a[i].message != b[i].message || a[i].attempts != b[i].attempts) {
      if (++differences <= 5) {
        ADD_FAILURE() << a[i].pod->Key() << ": without " << feature << " "
                      << PodStateName(a[i].state) << " " << a[i].node << " \"" << a[i].message
                      << "\"; with " << feature << " " << PodStateName(b[i].state) << " "
                      << b[i].node << " \"" << b[i].message << "\"";
      }
    }
  }
  EXPECT_EQ(differences, 0);
  return t;
}

TEST(ResultReuseTest, SamePlacementsWithAndWithoutReuse) {
  struct Case {
    std::string name;
    bool fragmentation;
    int refresh;  // GpuFragmentation distributionRefreshPods (0: the plugin's default)
    bool retry;
    bool expect_score_reuse;
    bool replicaset = false;  // MakeWorkload's ReplicaSet-owned bursts
    // percentageOfNodesToScore: below 100 the Filter scan stops after that share of feasible
    // nodes and the next cycle starts where it stopped (the rotating start index).
    int32_t percentage = 100;
  };
  const std::vector<Case> cases = {
      {"default profile, failed pods deleted", false, 0, false, true},
      {"default profile, failed pods retried on cluster events", false, 0, true, true},
      {"fragmentation profile, M re-taken every pod: scores never reused", true, 1, false, false},
      {"fragmentation profile, M re-taken every 64 pods (the default)", true, 0, false, true},
      {"default profile, ReplicaSet-owned pods (spread scoring)", false, 0, false, true, true},
      {"default profile, ReplicaSet-owned pods, retried", false, 0, true, true, true},
      {"fragmentation profile, ReplicaSet-owned pods", true, 0, false, true, true},
      {"default profile, 30 % of nodes to score (rotating start)", false, 0, false, true, false,
       30},
      {"default profile, 30 % of nodes to score, retried", false, 0, true, true, false, 30},
      {"fragmentation profile, 30 % of nodes to score, ReplicaSet-owned pods", true, 0, false, true,
       true, 30},
  };
  const Workload plain = MakeWorkload(300, 3000, 11);
  const Workload owned = MakeWorkload(300, 3000, 11, /*replicaset=*/true);
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const Workload& w = c.replicaset ? owned : plain;
    RunResult off = RunOnce(w, c.fragmentation, c.refresh, /*reuse=*/false, c.retry, c.percentage);
    RunResult on = RunOnce(w, c.fragmentation, c.refresh, /*reuse=*/true, c.retry, c.percentage);
    ASSERT_NE(off.sim, nullptr);
    ASSERT_NE(on.sim, nullptr);
    EXPECT_EQ(off.stats.filter_reused, 0u) << "reuse off must evaluate every node";
    EXPECT_GT(on.stats.filter_reused, on.stats.filter_evaluated)
        << "bursts of equivalent pods should mostly reuse verdicts";
    if (c.expect_score_reuse) {
      EXPECT_GT(on.stats.score_reused, on.stats.score_evaluated);
    } else {
      EXPECT_EQ(on.stats.score_reused, 0u);
    }
    const Tally t = CompareOutcomes(*off.sim, *on.sim, "reuse");
    if (c.replicaset) {
      // PodTopologySpread's scores must have mattered (else the case tests nothing new): some
      // pods land elsewhere than the same pods without owners.
      RunResult bare =
          RunOnce(plain, c.fragmentation, c.refresh, /*reuse=*/true, c.retry, c.percentage);
      ASSERT_NE(bare.sim, nullptr);
      const auto p = bare.sim->outcomes();
      const auto b = on.sim->outcomes();
      ASSERT_EQ(p.size(), b.size());
      int moved = 0;
      for (size_t i = 0; i < p.size(); ++i) moved += p[i].node != b[i].node ? 1 : 0;
      EXPECT_GT(moved, 100) << "spread scoring changed too few placements";
    }
    // The workload must exercise both outcomes, or the comparison proves little.
    EXPECT_GT(t.scheduled, 1000);
    EXPECT_GT(t.unschedulable, 100);
  }
}

// A random cluster of a few node shapes (so that many nodes are twins: Snapshot::twins, empty or
// holding pods that add up to the same) and pods from templates of which several read a node's
// identity (a hostname selector or preferred term, spec.nodeName, a metadata.name field), in
// bursts of one template; a high-priority template preempts.
Workload MakeTwinWorkload(uint64_t seed) {
  common::Random rng(seed);
  Workload w;
  const int32_t num_nodes = 20 + static_cast<int32_t>(rng.Uniform(60));
  std::vector<std::string> names;
  for (int32_t i = 0; i < num_nodes; ++i) {
    names.push_back("node-" + std::to_string(i));
    auto n = MakeNode(names.back()).Zone(rng.Uniform(2) == 0 ? "zone-a" : "zone-b");
    if (rng.Uniform(4) == 0) n.Label("rack", "r" + std::to_string(rng.Uniform(2)));
    switch (rng.Uniform(4)) {
      case 0:
        n.Cpu("64").Memory("512Gi").Gpus(8).GpuModel("A100-SXM4-80GB").GpuMemoryMiB(81920);
        break;
      case 1: n.Cpu("32").Memory("128Gi").Gpus(4).GpuModel("Tesla-T4").GpuMemoryMiB(15360); break;
      case 2: n.Cpu("16").Memory("64Gi").Unschedulable(rng.Uniform(8) == 0); break;
      default: n.Cpu("8").Memory("32Gi"); break;
    }
    w.nodes.push_back(n.Ptr());
  }
  const int32_t num_pods = 150 + static_cast<int32_t>(rng.Uniform(200));
  for (int32_t made = 0; made < num_pods;) {
    const uint64_t t = rng.Uniform(12);
    const std::string& some_node = names[rng.Uniform(names.size())];
    const int32_t burst = 1 + static_cast<int32_t>(rng.Uniform(6));
    for (int32_t b = 0; b < burst && made < num_pods; ++b, ++made) {
      auto p = MakePod("twins", "pod-" + std::to_string(made));
      switch (t) {
        case 0: p.Cpu("500m").Memory("1Gi"); break;
        case 1:
          p.Cpu("2").Memory("4Gi").NodeSelector("topology.kubernetes.io/zone", "zone-b");
          break;
        case 2: p.Cpu("4").Memory("8Gi").Gpus(1); break;
        case 3: p.Cpu("8").Memory("32Gi").Gpus(2).GpuModel("A100"); break;
        case 4: p.Cpu("1").Memory("2Gi").Gpus(1).Annotation("gpusched.io/gpu-milli", "500"); break;
        case 5: p.Cpu("1").Memory("1Gi").NodeSelector("kubernetes.io/hostname", some_node); break;
        case 6: p.Cpu("1").Memory("1Gi").NodeName(some_node); break;
        case 7: {
          api::NodeSelectorTerm term;
          term.match_fields_names_not_in = {some_node};
          p.Cpu("6").Memory("8Gi").NodeAffinity(term);
          break;
        }
        case 8:
          p.Cpu("3").Memory("3Gi").PreferredNodeAffinity(80, "kubernetes.io/hostname", {some_node});
          break;
        case 9: p.Cpu("2").Memory("2Gi").NodeAffinityNotIn("rack", {"r1"}); break;
        case 10: p.Cpu("12").Memory("16Gi").Priority(1000); break;
        default: p.Cpu("100").Memory("1Gi"); break;  // fits nowhere
      }
      w.pods.push_back(p.Ptr());
    }
  }
  return w;
}

// Twin nodes (framework/runtime/twins.cc) change no outcome: random workloads scheduled with
// twins off and on, with and without result reuse, with the default profile, the
// fragmentation-aware one and GpuFragmentation's GpuClustering policy (which reads the node's
// pods one by one, so it must not share scores between twins that hold different pods).
TEST(TwinNodesTest, SamePlacementsWithAndWithoutTwins) {
  uint64_t filter_shared = 0, score_shared = 0;
  int scheduled = 0, unschedulable = 0;
  struct Profile {
    bool fragmentation;
    std::string_view policy;
  };
  const Profile profiles[] = {{false, ""}, {true, ""}, {true, "GpuClustering"}};
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    const Workload w = MakeTwinWorkload(seed);
    for (const Profile& pr : profiles) {
      for (bool reuse : {false, true}) {
        SCOPED_TRACE("seed " + std::to_string(seed) + (pr.fragmentation ? ", fragmentation " : "") +
                     std::string(pr.policy) + (reuse ? ", reuse" : ""));
        const bool retry = seed % 2 == 0;
        RunResult off = RunOnce(w, pr.fragmentation, 0, reuse, retry, 100, false, pr.policy);
        RunResult on = RunOnce(w, pr.fragmentation, 0, reuse, retry, 100, true, pr.policy);
        ASSERT_NE(off.sim, nullptr);
        ASSERT_NE(on.sim, nullptr);
        EXPECT_EQ(off.twins.filter_shared + off.twins.score_shared, 0u);
        const Tally t = CompareOutcomes(*off.sim, *on.sim, "twins");
        scheduled += t.scheduled;
        unschedulable += t.unschedulable;
        filter_shared += on.twins.filter_shared;
        score_shared += on.twins.score_shared;
      }
    }
  }
  std::printf("twins shared: filter %llu, score %llu; scheduled %d, unschedulable %d\n",
              static_cast<unsigned long long>(filter_shared),
              static_cast<unsigned long long>(score_shared), scheduled, unschedulable);
  // The comparison proves something only if twins were shared and both outcomes occurred.
  EXPECT_GT(filter_shared, 10000u);
  EXPECT_GT(score_shared, 10000u);
  EXPECT_GT(scheduled, 5000);
  EXPECT_GT(unschedulable, 1000);
}

// Twins may hold different pods that add up to the same: GpuClustering, which scores a node by
// the GPU shapes of its pods, must tell them apart. Two pairs of equal nodes, one of each pair
// holding a 2-GPU pod and a CPU pod, the other two 1-GPU pods (the same requests, device usage
// and pod count); a 1-GPU pod then belongs beside the 1-GPU pods.
TEST(TwinNodesTest, GpuClusteringTellsTwinsApartByTheirPods) {
  Workload w;
  for (int i = 0; i < 4; ++i) {
    w.nodes.push_back(MakeNode("node-" + std::to_string(i))
                          .Cpu("64")
                          .Memory("512Gi")
                          .Gpus(8)
                          .GpuModel("A100-SXM4-80GB")
                          .GpuMemoryMiB(81920)
                          .Ptr());
  }
  auto pinned = [&](const std::string& name, int node, int gpus) {
    auto p = MakePod("twins", name).Cpu("4").Memory("8Gi").NodeName("node-" + std::to_string(node));
    if (gpus > 0) p.Gpus(gpus);
    w.pods.push_back(p.Ptr());
  };
  for (int pair : {0, 2}) {
    pinned("two-gpus-" + std::to_string(pair), pair, 2);
    pinned("cpu-" + std::to_string(pair), pair, 0);
    pinned("one-gpu-a-" + std::to_string(pair), pair + 1, 1);
    pinned("one-gpu-b-" + std::to_string(pair), pair + 1, 1);
  }
  for (int i = 0; i < 4; ++i) {
    w.pods.push_back(
        MakePod("twins", "new-" + std::to_string(i)).Cpu("4").Memory("8Gi").Gpus(1).Ptr());
  }
  for (bool twins : {false, true}) {
    SCOPED_TRACE(twins ? "twins on" : "twins off");
    RunResult r = RunOnce(w, true, 0, true, false, 100, twins, "GpuClustering");
    ASSERT_NE(r.sim, nullptr);
    for (const PodOutcome& o : r.sim->outcomes()) {
      if (!o.pod->meta.name.starts_with("new-")) continue;
      EXPECT_TRUE(o.node == "node-1" || o.node == "node-3") << o.pod->meta.name << " on " << o.node;
    }
  }
}

}  // namespace
}  // namespace gpusched::sim

namespace gpusched::sim {
namespace {

// Parallel Filter and Score change no outcome: random workloads (the twin workloads and the
// reuse workload) scheduled on this thread and with parallelism 2 and 16, with result reuse and
// twins on and off, every nodes-to-score share and profile above; each window and score list of
// two nodes or more goes to the parallelizer.
TEST(ParallelCycleTest, SamePlacementsForEveryParallelism) {
  common::Parallelizer two(2), sixteen(16);
  uint64_t filtered = 0, scored = 0;
  int scheduled = 0, unschedulable = 0;
  struct Variant {
    bool fragmentation;
    std::string_view policy;
    bool reuse;
    bool twins;
    int32_t percentage;
  };
  const Variant variants[] = {
      {false, "", false, false, 100}, {false, "", true, true, 100},
      {true, "", true, true, 100},    {true, "GpuClustering", false, true, 100},
      {false, "", true, true, 30},    {true, "", false, false, 30},
  };
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    const Workload w = MakeTwinWorkload(seed);
    for (const Variant& v : variants) {
      SCOPED_TRACE("seed " + std::to_string(seed) + (v.fragmentation ? ", fragmentation " : "") +
                   std::string(v.policy) + (v.reuse ? ", reuse" : "") + (v.twins ? ", twins" : "") +
                   ", " + std::to_string(v.percentage) + "%");
      const bool retry = seed % 2 == 0;
      RunResult one =
          RunOnce(w, v.fragmentation, 0, v.reuse, retry, v.percentage, v.twins, v.policy, nullptr);
      ASSERT_NE(one.sim, nullptr);
      EXPECT_EQ(one.parallel.filtered + one.parallel.scored, 0u);
      for (common::Parallelizer* p : {&two, &sixteen}) {
        RunResult many =
            RunOnce(w, v.fragmentation, 0, v.reuse, retry, v.percentage, v.twins, v.policy, p);
        ASSERT_NE(many.sim, nullptr);
        const Tally t =
            CompareOutcomes(*one.sim, *many.sim, "parallelism " + std::to_string(p->parallelism()));
        scheduled += t.scheduled;
        unschedulable += t.unschedulable;
        filtered += many.parallel.filtered;
        scored += many.parallel.scored;
      }
    }
  }
  // A larger cluster, bursts of Deployment pods (cross-node spread scoring), 30 % to score.
  const Workload owned = MakeWorkload(300, 800, 5, /*replicaset=*/true);
  for (bool reuse : {false, true}) {
    RunResult one = RunOnce(owned, true, 0, reuse, /*retry=*/true, 30, true, "", nullptr);
    RunResult many = RunOnce(owned, true, 0, reuse, /*retry=*/true, 30, true, "", &sixteen);
    ASSERT_NE(one.sim, nullptr);
    ASSERT_NE(many.sim, nullptr);
    CompareOutcomes(*one.sim, *many.sim, "parallelism 16");
    filtered += many.parallel.filtered;
    scored += many.parallel.scored;
  }
  std::printf("parallel: filtered %llu, scored %llu; scheduled %d, unschedulable %d\n",
              static_cast<unsigned long long>(filtered), static_cast<unsigned long long>(scored),
              scheduled, unschedulable);
  // The comparison proves something only if the parallel path ran and both outcomes occurred.
  EXPECT_GT(filtered, 100000u);
  EXPECT_GT(scored, 100000u);
  EXPECT_GT(scheduled, 5000);
  EXPECT_GT(unschedulable, 1000);
}

}  // namespace
}  // namespace gpusched::sim
