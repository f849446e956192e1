// SPDX-License-Identifier: Apache-2.0
// The simulator as a cluster would be (issue #40): objects the API server would refuse are
// rejected one line each and the rest simulated. Real decoder, real scheduler, default profile.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "src/common/clock.h"
#include "src/common/interner.h"
#include "src/common/random.h"
#include "src/plugins/in_tree_registry.h"
#include "src/sim/controllers.h"
#include "src/sim/replay.h"
#include "src/sim/report.h"
#include "src/sim/simulator.h"
#include "src/sim/test_simulate.h"
#include "src/sim/workload.h"

namespace gpusched::sim {
namespace {

Workload Load(const std::string& yaml) { return LoadForTest(yaml); }
std::unique_ptr<Simulator> Simulate(const Workload& w) {
  return SimulateForTest(w, plugins::InTreeRegistry());
}

std::string Node(const std::string& name, const std::string& labels = "{}") {
  return "apiVersion: v1\nkind: Node\nmetadata:\n  name: " + name + "\n  labels: " + labels +
         "\nstatus:\n  allocatable: {cpu: \"64\", memory: 512Gi, pods: \"110\"}\n---\n";
}

std::string Pod(const std::string& name) {
  return "apiVersion: v1\nkind: Pod\nmetadata: {name: " + name +
         "}\nspec:\n  containers: [{name: c, image: x, resources: {requests: {cpu: "
         "\"1\"}}}]\n---\n";
}

TEST(ApiServerValidationTest, EachRefusedObjectIsOneLineAndTheRestIsSimulated) {
  struct Case {
    std::string what;
    std::string yaml;
    std::string error;  // the rejection's text after "in.yaml: document N: "
  };
  const std::vector<Case> cases = {
      {"a Pod of apiVersion v2",
       "apiVersion: v2\nkind: Pod\nmetadata: {name: v2pod}\nspec: {containers: [{name: c}]}\n",
       "Pod default/v2pod: apiVersion: Invalid value: \"v2\": no matches for kind \"Pod\" in "
       "version \"v2\" (want v1)"},
      {"a Pod named Bad_Name",
       "apiVersion: v1\nkind: Pod\nmetadata: {name: Bad_Name}\nspec: {containers: [{name: c}]}\n",
       "Pod default/Bad_Name: metadata.name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 "
       "subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start "
       "and end with an alphanumeric character"},
      {"a Pod with spec: {}", "apiVersion: v1\nkind: Pod\nmetadata: {name: empty}\nspec: {}\n",
       "Pod default/empty: spec.containers: Required value"},
      {"a Pod without spec", "apiVersion: v1\nkind: Pod\nmetadata: {name: nospec}\n",
       "Pod default/nospec: spec.containers: Required value"},
      {"a Pod without a name", "apiVersion: v1\nkind: Pod\nspec: {containers: [{name: c}]}\n",
       "Pod: metadata.name: Required value: name or generateName is required"},
      {"a Pod in namespace ML",
       "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ML}\n"
       "spec: {containers: [{name: c}]}\n",
       "Pod ML/p: metadata.namespace: Invalid value: \"ML\": a lowercase RFC 1123 label must "
       "consist"},
      {"a Node named GPU_1", "apiVersion: v1\nkind: Node\nmetadata: {name: GPU_1}\n",
       "Node GPU_1: metadata.name: Invalid value: \"GPU_1\": a lowercase RFC 1123 subdomain"},
      {"a Node of apiVersion apps/v1", "apiVersion: apps/v1\nkind: Node\nmetadata: {name: n}\n",
       "Node n: apiVersion: Invalid value: \"apps/v1\": no matches for kind \"Node\""},
      {"a Deployment whose pods have no containers",
       "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: 2\n"
       "  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n"
       "    spec: {containers: []}\n",
       "Deployment default/web: spec.template.spec.containers: Required value"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    Workload w = Load(Node("cpu-0") + Pod("good") + c.yaml);
    ASSERT_EQ(w.rejected.size(), 1u);
    const std::string line = w.rejected[0].ToString();
    EXPECT_EQ(line.find("in.yaml: document 3: " + c.error), 0u) << line;
    EXPECT_EQ(line.find('\n'), std::string::npos) << line;
    auto sim = Simulate(w);
    ASSERT_NE(sim, nullptr);
    const Report r = BuildReport(*sim, "in.yaml", w.warnings, w.rejected);
    EXPECT_EQ(r.stats.scheduled, 1);  // the good pod, on the good node
  }
}

TEST(ApiServerValidationTest, ValidObjectsWithoutApiVersionOrImagesAreAccepted) {
  Workload w = Load(Node("cpu-0.zone-a.example") +
                    "kind: Pod\nmetadata: {name: sketch.v1, namespace: ml-team}\n"
                    "spec: {containers: [{resources: {requests: {cpu: \"1\"}}}]}\n");
  EXPECT_TRUE(w.rejected.empty()) << w.rejected.front().ToString();
  ASSERT_EQ(w.pods.size(), 1u);
  ASSERT_EQ(w.nodes.size(), 1u);
}

TEST(KubeletLabelsTest, AHandWrittenNodeGetsTheLabelsAKubeletSets) {
  const std::string pinned =
      "apiVersion: v1\nkind: Pod\nmetadata: {name: pinned}\nspec:\n"
      "  nodeSelector: {kubernetes.io/hostname: gpu-b, kubernetes.io/os: linux}\n"
      "  containers: [{name: c, image: x}]\n---\n"
      "apiVersion: v1\nkind: Pod\nmetadata: {name: on-arm}\nspec:\n"
      "  nodeSelector: {kubernetes.io/arch: arm64}\n  containers: [{name: c, image: x}]\n";
  Workload w =
      Load(Node("gpu-a") + Node("gpu-b") +
           Node("grace", "{kubernetes.io/arch: arm64, kubernetes.io/hostname: gh-1}") + pinned);
  ASSERT_EQ(w.nodes.size(), 3u);
  auto label = [](const api::Node& n, std::string_view key) {
    common::Atom v;
    return n.meta.labels.Get(common::Intern(key), &v) ? std::string(common::Str(v)) : "";
  };
  EXPECT_EQ(label(*w.nodes[0], "kubernetes.io/hostname"), "gpu-a");
  EXPECT_EQ(label(*w.nodes[0], "kubernetes.io/arch"), "amd64");
  EXPECT_EQ(label(*w.nodes[0], "beta.kubernetes.io/os"), "linux");
  EXPECT_EQ(label(*w.nodes[2], "kubernetes.io/hostname"), "gh-1");  // the manifest's value stays
  EXPECT_EQ(label(*w.nodes[2], "kubernetes.io/arch"), "arm64");
  auto sim = Simulate(w);
  ASSERT_NE(sim, nullptr);
  const Report r = BuildReport(*sim, "in.yaml", w.warnings, w.rejected);
  ASSERT_EQ(r.placements.size(), 2u);
  EXPECT_EQ(r.placements[0].node, "gpu-b");
  EXPECT_EQ(r.placements[1].node, "grace");
}

// GFD time-slicing: the device plugin advertises 4 replicas of each of the 4 T4s, so a cluster
// places 16 one-GPU pods there; the 17th waits. Each takes a quarter of one T4.
TEST(GpuSharingTest, ATimeSlicedNodeTakesAPodPerReplica) {
  const std::string node =
      "apiVersion: v1\nkind: Node\nmetadata:\n  name: t4-shared\n  labels:\n"
      "    nvidia.com/gpu.product: Tesla-T4-SHARED\n    nvidia.com/gpu.count: \"4\"\n"
      "    nvidia.com/gpu.replicas: \"4\"\n    nvidia.com/gpu.memory: \"15360\"\n"
      "status:\n  allocatable: {cpu: \"64\", memory: 256Gi, pods: \"110\", nvidia.com/gpu: "
      "\"16\"}\n---\n";
  std::string pods;
  for (int i = 0; i < 17; ++i) {
    pods += "apiVersion: v1\nkind: Pod\nmetadata: {name: infer-" + std::to_string(i) +
            "}\nspec:\n  containers: [{name: c, image: x, resources: {limits: "
            "{nvidia.com/gpu: 1}}}]\n---\n";
  }
  Workload w = Load(node + pods);
  ASSERT_EQ(w.nodes.size(), 1u);
  EXPECT_EQ(w.nodes[0]->gpu.count, 4);
  EXPECT_EQ(w.nodes[0]->gpu.replicas, 4);
  EXPECT_TRUE(w.nodes[0]->gpu_error.empty()) << w.nodes[0]->gpu_error;
  auto sim = Simulate(w);  // check_invariants: no device above 1000 milli
  ASSERT_NE(sim, nullptr);
  const Report r = BuildReport(*sim, "in.yaml", w.warnings, w.rejected);
  EXPECT_EQ(r.stats.scheduled, 16);
  ASSERT_EQ(r.placements.size(), 17u);
  std::map<int32_t, int> per_device;
  for (const PlacementRow& p : r.placements) {
    if (p.node.empty()) continue;
    ASSERT_EQ(p.gpu_devices.size(), 1u) << p.pod;
    ++per_device[p.gpu_devices[0]];
  }
  EXPECT_EQ(per_device.size(), 4u);  // each T4 holds four replicas
  for (const auto& [device, n] : per_device) EXPECT_EQ(n, 4) << device;
  ASSERT_EQ(r.models.size(), 1u);
  EXPECT_EQ(r.models[0].milli_allocated, 4000);
}

namespace {

// A GPU node and how its device plugin advertises its GPUs.
struct SharedNode {
  std::string name;
  int count = 1;
  int replicas = 1;
  bool renamed = false;  // nvidia.com/gpu.shared (renameByDefault) instead of nvidia.com/gpu
  std::string Resource() const { return renamed ? "nvidia.com/gpu.shared" : "nvidia.com/gpu"; }
  std::string Yaml(bool mps) const {
    const bool shared = replicas > 1;
    return "apiVersion: v1\nkind: Node\nmetadata:\n  name: " + name + "\n  labels:\n" +
           "    nvidia.com/gpu.product: Tesla-T4" + (shared && !renamed ? "-SHARED" : "") + "\n" +
           "    nvidia.com/gpu.count: \"" + std::to_string(count) + "\"\n" +
           "    nvidia.com/gpu.memory: \"15360\"\n" +
           (shared ? "    nvidia.com/gpu.replicas: \"" + std::to_string(replicas) + "\"\n"
                   : std::string()) +
           (mps ? "    nvidia.com/gpu.sharing-strategy: mps\n" : "") +
           "status:\n  allocatable: {cpu: \"64\", memory: 256Gi, pods: \"110\", " + Resource() +
           ": \"" + std::to_string(count * replicas) + "\"}\n---\n";
  }
};

// A pod asking `n` of `resource` (and 100m cpu).
std::string PodAsking(const std::string& name, const std::string& resource, int n) {
  return "apiVersion: v1\nkind: Pod\nmetadata: {name: " + name +
         "}\nspec:\n  containers: [{name: c, image: x, resources: {limits: {cpu: 100m, " +
         resource + ": " + std::to_string(n) + "}}}]\n---\n";
}

}  // namespace

// A pod may ask more replicas than the node has GPUs: the device plugin hands out several
// replicas of one GPU (its default "distributed" policy: each from the GPU with the fewest
// replicas in use). One T4 with 4 replicas takes a 3-replica pod and a 1-replica pod; a further
// 2-replica pod waits.
TEST(GpuSharingTest, APodMayTakeSeveralReplicasOfOneGpu) {
  const std::string gpu = "nvidia.com/gpu";
  Workload w = Load(SharedNode{"t4", 1, 4, false}.Yaml(false) + PodAsking("three", gpu, 3) +
                    PodAsking("one", gpu, 1) + PodAsking("two", gpu, 2));
  auto sim = Simulate(w);
  ASSERT_NE(sim, nullptr);
  const Report r = BuildReport(*sim, "in.yaml", w.warnings, w.rejected);
  ASSERT_EQ(r.placements.size(), 3u);
  EXPECT_EQ(r.placements[0].node, "t4");
  EXPECT_EQ(r.placements[0].gpu_devices, (std::vector<int32_t>{0, 0, 0}));
  EXPECT_EQ(r.placements[0].gpu_milli, 250);
  EXPECT_EQ(r.placements[1].node, "t4");
  EXPECT_EQ(r.placements[2].node, "");
  EXPECT_EQ(r.placements[2].state, "Unschedulable");
  ASSERT_EQ(r.models.size(), 1u);
  EXPECT_EQ(r.models[0].milli_allocated, 1000);
}

// The device plugin's renameByDefault: replicas are advertised as nvidia.com/gpu.shared and the
// product keeps its plain name. Pods asking nvidia.com/gpu.shared take replicas (8 on two T4s of
// 4 replicas); a pod asking nvidia.com/gpu does not fit there, as in a cluster.
TEST(GpuSharingTest, RenamedReplicasAreNvidiaGpuShared) {
  std::string pods;
  for (int i = 0; i < 9; ++i)
    pods += PodAsking("s-" + std::to_string(i), "nvidia.com/gpu.shared", 1);
  pods += PodAsking("whole", "nvidia.com/gpu", 1);
  Workload w = Load(SharedNode{"t4", 2, 4, true}.Yaml(false) + pods);
  ASSERT_EQ(w.nodes.size(), 1u);
  EXPECT_EQ(w.nodes[0]->gpu.count, 2);
  EXPECT_EQ(w.nodes[0]->gpu.replicas, 4);
  auto sim = Simulate(w);
  ASSERT_NE(sim, nullptr);
  const Report r = BuildReport(*sim, "in.yaml", w.warnings, w.rejected);
  EXPECT_EQ(r.stats.scheduled, 8);
  ASSERT_EQ(r.placements.size(), 10u);
  EXPECT_EQ(r.placements[8].node, "");
  EXPECT_EQ(r.placements[9].node, "");
  EXPECT_NE(r.placements[9].message.find("Insufficient nvidia.com/gpu"), std::string::npos)
      << r.placements[9].message;
  ASSERT_EQ(r.models.size(), 1u);
  EXPECT_EQ(r.models[0].milli_allocated, 2000);
}

// GFD time-slicing and MPS over random clusters of shared (`-SHARED` or renamed to
// nvidia.com/gpu.shared) and whole-GPU nodes, pods asking 1 to 20 GPUs or replicas of either
// resource (20: more than a node's 16 GPUs at most). A node advertises count × replicas of its
// resource and a pod takes as many as it asks, several replicas of one GPU when needed, so what a
// cluster does is known without replaying it: the pods never take more than a node advertises nor
// more than `replicas` from one GPU (nor above 1000 milli: check_invariants), and a pod left
// waiting finds no node of its resource with as many left (nothing leaves, so what was too little
// at its attempt is too little at the end). When every pod asks 1, exactly min(pods, capacity) are
// placed.
TEST(GpuSharingTest, RandomSharedClustersPlaceWhatTheDevicePluginAdvertises) {
  common::Random random(20261207);
  for (int round = 0; round < 200; ++round) {
    SCOPED_TRACE(round);
    const bool only_ones = round % 2 == 0;
    std::string yaml;
    std::map<std::string, SharedNode> nodes;
    std::map<std::string, int> capacity;  // per resource
    const int num_nodes = 1 + static_cast<int>(random.Uniform(4));
    for (int n = 0; n < num_nodes; ++n) {
      SharedNode node;
      node.name = "n" + std::to_string(n);
      node.count = std::array{1, 2, 4, 8}[random.Uniform(4)];
      node.replicas = std::array{1, 2, 3, 4, 8}[random.Uniform(5)];
      node.renamed = node.replicas > 1 && random.Uniform(3) == 0;
      yaml += node.Yaml(node.replicas > 1 && random.Uniform(2) == 0);
      capacity[node.Resource()] += node.count * node.replicas;
      nodes[node.name] = node;
    }
    struct Ask {
      std::string resource;
      int n = 0;
    };
    std::map<std::string, Ask> asks;  // by pod
    const int gpu_pods =
        static_cast<int>(random.Uniform(static_cast<uint64_t>(capacity["nvidia.com/gpu"] +
                                                              capacity["nvidia.com/gpu.shared"])) +
                         6);
    const int cpu_pods = static_cast<int>(random.Uniform(4));
    for (int i = 0; i < gpu_pods + cpu_pods; ++i) {
      const std::string name = "p-" + std::to_string(i);
      if (i >= gpu_pods) {
        yaml += PodAsking(name, "memory", 1);  // no GPU
        continue;
      }
      Ask ask{random.Uniform(4) == 0 ? "nvidia.com/gpu.shared" : "nvidia.com/gpu",
              only_ones ? 1 : std::array{1, 1, 2, 3, 5, 20}[random.Uniform(6)]};
      yaml += PodAsking(name, ask.resource, ask.n);
      asks["default/" + name] = ask;
    }
    Workload w = Load(yaml);
    auto sim = Simulate(w);
    ASSERT_NE(sim, nullptr);
    const Report r = BuildReport(*sim, "in.yaml", w.warnings, w.rejected);
    std::map<std::string, int> used;  // per node
    std::map<std::pair<std::string, int32_t>, int> per_device;
    int placed = 0;
    for (const PlacementRow& p : r.placements) {
      if (!asks.contains(p.pod) || p.node.empty()) continue;
      const Ask& ask = asks[p.pod];
      const SharedNode& node = nodes[p.node];
      ASSERT_EQ(ask.resource, node.Resource()) << p.pod << " on " << p.node;
      ASSERT_EQ(p.gpu_devices.size(), static_cast<size_t>(ask.n)) << p.pod;
      ++placed;
      used[p.node] += ask.n;
      for (int32_t d : p.gpu_devices) {
        const int on_device = ++per_device[{p.node, d}];
        ASSERT_LE(on_device, node.replicas) << p.node << " GPU " << d;
      }
    }
    for (const auto& [name, node] : nodes) ASSERT_LE(used[name], node.count * node.replicas);
    for (const PlacementRow& p : r.placements) {
      if (!asks.contains(p.pod) || !p.node.empty()) continue;
      const Ask& ask = asks[p.pod];
      for (const auto& [name, node] : nodes) {
        if (node.Resource() != ask.resource) continue;
        EXPECT_LT(node.count * node.replicas - used[name], ask.n)
            << p.pod << " asking " << ask.n << " " << ask.resource << " waits, but " << name
            << " has room\n"
            << yaml;
      }
    }
    if (only_ones) {
      std::map<std::string, int> asking;  // per resource
      for (const auto& [pod, ask] : asks) ++asking[ask.resource];
      int expected = 0;
      for (const auto& [resource, n] : asking) expected += std::min(n, capacity[resource]);
      EXPECT_EQ(placed, expected) << yaml;
    }
    EXPECT_EQ(r.stats.scheduled, placed + cpu_pods);
  }
}

// `explain --at`: the replay stops at `until`; later arrivals and departures do not happen.
TEST(ReplayUntilTest, TheClusterIsAsItWasThen) {
  auto timed = [](const std::string& name, const std::string& arrival, const std::string& run) {
    return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name +
           "\n  annotations: {gpusched.io/arrival: \"" + arrival + "\", gpusched.io/duration: \"" +
           run +
           "\"}\nspec:\n  containers: [{name: c, image: x, resources: {requests: {cpu: "
           "\"40\"}}}]\n---\n";
  };
  // One 64-cpu node: a (0s, 1h) and b (30m, 2h) cannot run together; b waits for a to leave.
  Workload w = Load(Node("cpu-0") + timed("a", "0s", "1h") + timed("b", "30m", "2h") +
                    timed("c", "3h", "1h"));
  auto replay_until = [&](common::Duration until) {
    static const common::FakeClock wall;
    SimOptions opts;
    opts.arrival_interval = common::Duration(0);
    auto sim =
        Simulator::Create(SimulationDefaultConfig(), {plugins::InTreeRegistry(), wall}, opts);
    EXPECT_TRUE(sim.ok());
    ReplayOptions o;
    o.until = until;
    auto r = RunReplay(**sim, w, o);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return std::make_pair(std::move(*sim), r.ok() ? r->arrivals : -1);
  };
  auto node_of = [](const Simulator& sim, const std::string& name) -> std::string {
    for (const PodOutcome& o : sim.outcomes()) {
      if (o.pod->meta.name != name) continue;
      api::PodPtr now = sim.cluster().GetPod(o.pod->meta.uid);
      return now == nullptr ? "gone" : now->node_name.empty() ? "waiting" : now->node_name;
    }
    return "not arrived";
  };
  auto [at45, arrived45] = replay_until(std::chrono::minutes(45));
  EXPECT_EQ(arrived45, 2);
  EXPECT_EQ(node_of(*at45, "a"), "cpu-0");
  EXPECT_EQ(node_of(*at45, "b"), "waiting");
  EXPECT_EQ(node_of(*at45, "c"), "not arrived");
  auto [at90, arrived90] = replay_until(std::chrono::minutes(90));
  EXPECT_EQ(arrived90, 2);
  EXPECT_EQ(node_of(*at90, "a"), "gone");
  EXPECT_EQ(node_of(*at90, "b"), "cpu-0");
}

}  // namespace
}  // namespace gpusched::sim
