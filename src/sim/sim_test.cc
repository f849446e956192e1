// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <algorithm>
#include <boost/json.hpp>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "src/api/gpu.h"
#include "src/common/clock.h"
#include "src/plugins/in_tree_registry.h"
#include "src/sim/builtin_example.h"
#include "src/sim/controllers.h"
#include "src/sim/report.h"
#include "src/sim/sim_cluster.h"
#include "src/sim/simulator.h"
#include "src/sim/workload.h"

namespace gpusched::sim {
namespace {

// Runs `workload` with the simulator's default config and invariant checks on.
std::unique_ptr<Simulator> RunWorkload(const Workload& workload, uint64_t seed = 42,
                                       bool retry = true) {
  static const common::FakeClock wall;
  SimOptions opts;
  opts.seed = seed;
  opts.retry = retry;
  opts.check_invariants = true;
  auto sim = Simulator::Create(SimulationDefaultConfig(), {plugins::InTreeRegistry(), wall}, opts);
  EXPECT_TRUE(sim.ok()) << sim.status().ToString();
  if (!sim.ok()) return nullptr;
  common::Status s = (*sim)->Run(workload);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return std::move(*sim);
}

std::map<std::string, std::string> Placements(const Simulator& sim) {
  std::map<std::string, std::string> out;
  for (const auto& o : sim.outcomes()) out[o.pod->Key()] = o.node;
  return out;
}

const PodOutcome* Find(const Simulator& sim, std::string_view key) {
  for (const auto& o : sim.outcomes()) {
    if (o.pod->Key() == key) return &o;
  }
  return nullptr;
}

// --- the built-in example --------------------------------------------------------------------

TEST(BuiltinExampleTest, HasTheDocumentedShape) {
  auto w = BuiltinExample();
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_EQ(w->nodes.size(), 48u);
  EXPECT_EQ(w->pods.size(), 269u);
  int gpus = 0;
  for (const auto& n : w->nodes) {
    EXPECT_TRUE(n->gpu_error.empty()) << n->meta.name << ": " << n->gpu_error;
    gpus += n->gpu.count;
  }
  EXPECT_EQ(gpus, 48 + 24 + 6 + 24 + 9 + 24);
  int malformed = 0;
  for (const auto& p : w->pods) malformed += p->gpu_error.empty() ? 0 : 1;
  EXPECT_EQ(malformed, 1);
}

TEST(BuiltinExampleTest, OutcomeIsExactAndDeterministic) {
  auto w = BuiltinExample();
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  auto sim = RunWorkload(*w);
  ASSERT_NE(sim, nullptr);
  SimStats st = sim->Stats();
  EXPECT_EQ(st.pods, 269);
  EXPECT_EQ(st.scheduled, 265);
  EXPECT_EQ(st.unschedulable, 4);
  EXPECT_EQ(st.errors, 0);
  EXPECT_EQ(st.pending, 0);
  EXPECT_EQ(st.decisions, 269);

  struct Case {
    std::string name;
    std::string pod;
    std::vector<std::string> reasons;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"a pod asking for a model the cluster lacks is rejected for the model",
       "ml-training/h100-benchmark",
       {"GPU model mismatch", "Insufficient nvidia.com/gpu"},
       "0/48 nodes are available: 39 GPU model mismatch, 9 Insufficient nvidia.com/gpu. "
       "preemption: "
       "0/48 nodes are available: 39 Preemption is not helpful for scheduling, 9 No preemption "
       "victims found for incoming pod."},
      {"a pod asking for more GPUs than any node has is rejected for GPUs",
       "ml-training/mega-train-16g",
       {"Insufficient nvidia.com/gpu"},
       "0/48 nodes are available: 48 Insufficient nvidia.com/gpu. preemption: 0/48 nodes are "
       "available: 48 No preemption victims found for incoming pod."},
      {"a CPU pod too big for the untainted nodes is rejected for memory and taints",
       "data/bigmem-analytics",
       {"Insufficient memory", "node(s) had untolerated taint(s)"},
       "0/48 nodes are available: 39 node(s) had untolerated taint(s), 9 "
       "Insufficient memory. preemption: 0/48 nodes are available: 39 Preemption is not helpful "
       "for scheduling, 9 No preemption victims found for incoming pod."},
      {"a malformed GPU annotation is reported with its own reason",
       "inference/embedder-bad-annotation",
       {"annotation gpu.nvidia.com/memory: invalid value \"lots\" (want MiB, e.g. 16384)"},
       "0/48 nodes are available: annotation gpu.nvidia.com/memory: invalid value \"lots\" (want "
       "MiB, e.g. 16384). preemption: 0/48 nodes are available: 48 Preemption is not helpful for "
       "scheduling."},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const PodOutcome* o = Find(*sim, c.pod);
    ASSERT_NE(o, nullptr);
    EXPECT_EQ(o->state, PodState::kUnschedulable);
    EXPECT_EQ(o->reasons, c.reasons);
    EXPECT_EQ(o->message, c.message);
  }

  // Every other pod is placed, and on a node that satisfies its model constraint.
  for (const auto& o : sim->outcomes()) {
    bool expected_pending = std::any_of(cases.begin(), cases.end(),
                                        [&](const Case& c) { return c.pod == o.pod->Key(); });
    if (expected_pending) continue;
    SCOPED_TRACE(o.pod->Key());
    ASSERT_EQ(o.state, PodState::kScheduled) << o.message;
    api::NodePtr node = sim->cluster().GetNode(o.node);
    ASSERT_NE(node, nullptr);
    EXPECT_EQ(static_cast<int32_t>(o.gpu.devices.size()), o.pod->gpu.count);
    if (!o.pod->gpu.models.empty()) {
      bool ok = false;
      for (common::Atom m : o.pod->gpu.models) {
        ok |= api::GpuModelMatches(common::Str(node->gpu.model), common::Str(m));
      }
      EXPECT_TRUE(ok) << "placed on " << common::Str(node->gpu.model);
    }
    if (o.pod->gpu.min_device_memory_mib > 0) {
      EXPECT_GE(node->gpu.memory_mib, o.pod->gpu.min_device_memory_mib);
    }
  }

  // The same seed gives the same placements.
  auto again = RunWorkload(*w);
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(Placements(*sim), Placements(*again));
}

// The default profile: a pod without a GPU request never lands on a GPU node while a node
// without GPUs that fits it (every filter) has room at that moment. The example taints its GPU
// nodes, which keeps CPU pods off them anyway; the second run removes the taints, as many
// clusters have none, so that the CPU pods could take either kind.
TEST(BuiltinExampleTest, PodsWithoutGpusGoToNodesWithoutGpusWhileTheyHaveRoom) {
  auto w = BuiltinExample();
  ASSERT_TRUE(w.ok());
  static const common::FakeClock wall;
  for (bool untaint : {false, true}) {
    SCOPED_TRACE(untaint ? "GPU nodes untainted" : "as written");
    auto sim = Simulator::Create(SimulationDefaultConfig(), {plugins::InTreeRegistry(), wall});
    ASSERT_TRUE(sim.ok()) << sim.status().ToString();
    for (const auto& n : w->nodes) {
      auto node = std::make_shared<api::Node>(*n);
      if (untaint) node->taints.clear();
      ASSERT_TRUE((*sim)->AddNode(std::move(node)).ok());
    }
    int with_a_gpu_less_choice = 0;
    int with_both_choices = 0;
    for (const auto& pod : w->pods) {
      std::vector<std::string> gpu_less;
      if (pod->gpu.empty() && pod->gpu_error.empty()) {
        auto feasible = (*sim)->FeasibleNodes(pod);
        ASSERT_TRUE(feasible.ok()) << feasible.status().ToString();
        bool gpu_node = false;
        for (const auto& n : *feasible) {
          if (n->gpu.count == 0) gpu_less.push_back(n->meta.name);
          gpu_node = gpu_node || n->gpu.count > 0;
        }
        with_a_gpu_less_choice += gpu_less.empty() ? 0 : 1;
        with_both_choices += !gpu_less.empty() && gpu_node ? 1 : 0;
      }
      auto idx = (*sim)->SubmitPod(pod);
      ASSERT_TRUE(idx.ok()) << idx.status().ToString();
      const PodOutcome& o = (*sim)->outcomes()[*idx];
      if (gpu_less.empty() || o.state != PodState::kScheduled) continue;
      EXPECT_EQ((*sim)->cluster().GetNode(o.node)->gpu.count, 0)
          << o.pod->Key() << " went to GPU node " << o.node << " while " << gpu_less.front()
          << " had room";
    }
    EXPECT_GT(with_a_gpu_less_choice, 100);
    if (untaint) {
      EXPECT_GT(with_both_choices, 100);
    }
  }
}

TEST(BuiltinExampleTest, EveryPodThatCanFitIsPlacedWhateverTheSeed) {
  auto w = BuiltinExample();
  ASSERT_TRUE(w.ok());
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    auto sim = RunWorkload(*w, seed);
    ASSERT_NE(sim, nullptr);
    EXPECT_EQ(sim->Stats().scheduled, 265);
    EXPECT_EQ(sim->Stats().unschedulable, 4);
  }
}

TEST(BuiltinExampleTest, ReportCountsEventsConditionsAndReasons) {
  auto w = BuiltinExample();
  ASSERT_TRUE(w.ok());
  auto sim = RunWorkload(*w);
  ASSERT_NE(sim, nullptr);
  Report r = BuildReport(*sim, "the built-in example");
  EXPECT_EQ(r.nodes, 48);
  EXPECT_EQ(r.groups.size(), 7u);
  EXPECT_EQ(r.counters.binds, 265);
  EXPECT_EQ(r.counters.events_by_reason["Scheduled"], 265);
  EXPECT_EQ(r.counters.events_by_reason["FailedScheduling"], 4);
  EXPECT_EQ(r.counters.conditions_by_reason["Unschedulable"], 4);
  ASSERT_EQ(r.unscheduled.size(), 4u);
  int64_t total_gpus = 0;
  for (const auto& m : r.models) total_gpus += m.gpus_total;
  EXPECT_EQ(total_gpus, 135);
  // Model rows use the normalised model names.
  std::vector<std::string> models;
  for (const auto& m : r.models) models.push_back(m.model);
  EXPECT_EQ(models, (std::vector<std::string>{"A100-SXM4-40GB", "A10G", "T4", "V100-SXM2-16GB"}));
  // Each unscheduled pod once, under its main reason: h100-benchmark was refused for its GPU model
  // by more nodes than for GPUs, so it is not counted under "Insufficient nvidia.com/gpu" too.
  int64_t partitioned = 0;
  for (const auto& row : r.reasons) partitioned += row.pods;
  EXPECT_EQ(partitioned, 4);
  const auto model = std::find_if(r.reasons.begin(), r.reasons.end(), [](const ReasonRow& row) {
    return row.reason == "GPU model mismatch";
  });
  ASSERT_NE(model, r.reasons.end());
  EXPECT_EQ(model->examples, std::vector<std::string>{"ml-training/h100-benchmark"});

  std::string text = FormatReportText(r);
  EXPECT_NE(text.find("scheduled 265, unschedulable 4"), std::string::npos) << text;
  EXPECT_NE(text.find("p4d.24xlarge"), std::string::npos);
  EXPECT_NE(text.find("invalid value \"lots\""), std::string::npos);

  boost::json::value j = ReportToJson(r);
  EXPECT_EQ(j.at("pods").at("scheduled").as_int64(), 265);
  EXPECT_EQ(j.at("unschedulableByReason").as_array().size(), r.reasons.size());
  // The JSON text parses back.
  EXPECT_NO_THROW(boost::json::parse(FormatJson(j)));
}

// "Unscheduled pods by reason" partitions the pods: five pods too large for the one node, in cpu
// and in memory (a tie: the first reason by name), are five pods under "Insufficient cpu" only,
// three named and "+2 more".
TEST(ReportTest, ReasonsCountEachPodOnceWithTheRestSummed) {
  std::string yaml =
      "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n"
      "status: {allocatable: {cpu: \"1\", memory: 1Gi, pods: \"10\"}}\n";
  for (int i = 0; i < 5; ++i) {
    yaml += "---\napiVersion: v1\nkind: Pod\nmetadata: {name: p" + std::to_string(i) +
            "}\nspec: {containers: [{name: c, resources: {requests: {cpu: \"2\", memory: "
            "2Gi}}}]}\n";
  }
  Workload w;
  ASSERT_TRUE(AppendManifests(yaml, "big.yaml", w).ok());
  auto sim = RunWorkload(w);
  ASSERT_NE(sim, nullptr);
  Report r = BuildReport(*sim, "big.yaml");
  ASSERT_EQ(r.reasons.size(), 1u);  // cpu and memory tie on the node: the first by name
  EXPECT_EQ(r.reasons[0].reason, "Insufficient cpu");
  EXPECT_EQ(r.reasons[0].pods, 5);
  EXPECT_NE(FormatReportText(r).find("5  Insufficient cpu  (default/p0, default/p1, default/p2, +2 "
                                     "more)"),
            std::string::npos)
      << FormatReportText(r);
}

TEST(BuiltinExampleTest, YamlRoundTripGivesTheSameResult) {
  auto direct = BuiltinExample();
  ASSERT_TRUE(direct.ok());
  Workload decoded;
  common::Status s = AppendManifests(BuiltinExampleYaml(), "example.yaml", decoded);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_TRUE(decoded.warnings.empty());
  ASSERT_EQ(decoded.nodes.size(), direct->nodes.size());
  ASSERT_EQ(decoded.pods.size(), direct->pods.size());
  for (size_t i = 0; i < decoded.nodes.size(); ++i) {
    SCOPED_TRACE(direct->nodes[i]->meta.name);
    EXPECT_EQ(decoded.nodes[i]->meta.name, direct->nodes[i]->meta.name);
    EXPECT_EQ(decoded.nodes[i]->meta.labels, direct->nodes[i]->meta.labels);
    EXPECT_EQ(decoded.nodes[i]->allocatable, direct->nodes[i]->allocatable);
    EXPECT_EQ(decoded.nodes[i]->gpu, direct->nodes[i]->gpu);
    EXPECT_EQ(decoded.nodes[i]->taints.size(), direct->nodes[i]->taints.size());
  }
  for (size_t i = 0; i < decoded.pods.size(); ++i) {
    SCOPED_TRACE(direct->pods[i]->Key());
    EXPECT_EQ(decoded.pods[i]->Key(), direct->pods[i]->Key());
    EXPECT_EQ(decoded.pods[i]->requests, direct->pods[i]->requests);
    EXPECT_EQ(decoded.pods[i]->gpu, direct->pods[i]->gpu);
    EXPECT_EQ(decoded.pods[i]->gpu_error, direct->pods[i]->gpu_error);
    EXPECT_EQ(decoded.pods[i]->meta.annotations, direct->pods[i]->meta.annotations);
    EXPECT_EQ(decoded.pods[i]->tolerations.size(), direct->pods[i]->tolerations.size());
    EXPECT_EQ(decoded.pods[i]->scheduler_name, direct->pods[i]->scheduler_name);
  }
  auto a = RunWorkload(*direct);
  auto b = RunWorkload(decoded);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(Placements(*a), Placements(*b));
}

// --- SimCluster ------------------------------------------------------------------------------

// Records the events SimCluster delivers.
class RecordingHandler final : public kube::ClusterEventHandler {
 public:
  void OnNodeAdd(api::NodePtr node) override { log.push_back("NodeAdd " + node->meta.name); }
  void OnNodeUpdate(api::NodePtr, api::NodePtr node) override {
    log.push_back("NodeUpdate " + node->meta.name);
  }
  void OnNodeDelete(api::NodePtr node) override { log.push_back("NodeDelete " + node->meta.name); }
  void OnPodAdd(api::PodPtr pod) override { log.push_back("PodAdd " + pod->Key()); }
  void OnPodUpdate(api::PodPtr old_pod, api::PodPtr pod) override {
    log.push_back("PodUpdate " + pod->Key() + " " + old_pod->node_name + "->" + pod->node_name);
    last = pod;
  }
  void OnPodDelete(api::PodPtr pod) override { log.push_back("PodDelete " + pod->Key()); }
  std::vector<std::string> log;
  api::PodPtr last;
};

api::NodePtr GpuNode(std::string name, int gpus) {
  auto n = std::make_shared<api::Node>();
  n->meta.name = std::move(name);
  n->allocatable.milli_cpu = 8000;
  n->allocatable.memory = int64_t{32} << 30;
  n->allocatable.pods = 10;
  n->capacity = n->allocatable;
  n->gpu.count = gpus;
  return n;
}

api::PodPtr SharedGpuPod(std::string name, int32_t milli) {
  auto p = std::make_shared<api::Pod>();
  p->meta.name = std::move(name);
  p->meta.namespace_ = "default";
  p->meta.uid = "uid-" + p->meta.name;
  p->requests.milli_cpu = 1000;
  p->requests.memory = int64_t{1} << 30;
  p->requests.pods = 1;
  p->gpu.count = 1;
  p->gpu.milli = milli;
  return p;
}

TEST(SimClusterTest, DeliversEventsAndKeepsTheLedger) {
  struct Case {
    std::string name;
    std::vector<std::pair<std::string, std::string>> binds;  // pod -> devices annotation
    bool want_violation;
    std::string want_in_message;
  };
  const std::vector<Case> cases = {
      {"two shares that fit one device are fine", {{"a", "0:500m"}, {"b", "0:500m"}}, false, ""},
      {"two shares that over-commit a device are a violation",
       {{"a", "0:600m"}, {"b", "0:600m"}},
       true,
       "device 0 over-committed: 1200 milli"},
      {"a device the node does not have is a violation",
       {{"a", "5:100m"}},
       true,
       "device 5 does not exist"},
      {"a malformed device annotation is a violation",
       {{"a", "zero"}},
       true,
       "invalid GPU assignment"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    SimCluster cluster;
    RecordingHandler handler;
    cluster.SetHandler(&handler);
    ASSERT_TRUE(cluster.AddNode(GpuNode("n1", 2)).ok());
    for (const auto& [pod, devices] : c.binds) {
      api::PodPtr p = SharedGpuPod(pod, 500);
      ASSERT_TRUE(cluster.CreatePod(p).ok());
      common::Status s =
          cluster.BindPod(*p, "n1", {{std::string(api::kPodGpuDevicesAnnotation), devices}});
      ASSERT_TRUE(s.ok()) << s.ToString();
      ASSERT_NE(handler.last, nullptr);
      EXPECT_EQ(handler.last->node_name, "n1");
      ASSERT_NE(handler.last->meta.Annotation(api::kPodGpuDevicesAnnotation), nullptr);
      EXPECT_EQ(*handler.last->meta.Annotation(api::kPodGpuDevicesAnnotation), devices);
      EXPECT_EQ(cluster.GetPod(p->meta.uid)->node_name, "n1");
    }
    common::Status ledger = cluster.LedgerStatus();
    EXPECT_EQ(!ledger.ok(), c.want_violation) << ledger.ToString();
    if (c.want_violation) {
      EXPECT_NE(ledger.ToString().find(c.want_in_message), std::string::npos) << ledger.ToString();
    }
    EXPECT_EQ(cluster.UsageOf("n1").pods, static_cast<int32_t>(c.binds.size()));
    EXPECT_EQ(handler.log.front(), "NodeAdd n1");
  }
}

TEST(SimClusterTest, RejectsWhatAnApiServerRejects) {
  SimCluster cluster;
  RecordingHandler handler;
  cluster.SetHandler(&handler);
  ASSERT_TRUE(cluster.AddNode(GpuNode("n1", 1)).ok());
  api::PodPtr p = SharedGpuPod("a", 1000);
  ASSERT_TRUE(cluster.CreatePod(p).ok());

  struct Case {
    std::string name;
    common::Status got;
    common::StatusCode want;
  };
  std::vector<Case> cases;
  cases.push_back({"a second node of the same name", cluster.AddNode(GpuNode("n1", 1)),
                   common::StatusCode::kAlreadyExists});
  cases.push_back(
      {"a second pod of the same uid", cluster.CreatePod(p), common::StatusCode::kAlreadyExists});
  cases.push_back(
      {"a bind to an unknown node", cluster.BindPod(*p, "n9", {}), common::StatusCode::kNotFound});
  cases.push_back({"a bind of an unknown pod", cluster.BindPod(*SharedGpuPod("zz", 1), "n1", {}),
                   common::StatusCode::kNotFound});
  cases.push_back({"the first bind", cluster.BindPod(*p, "n1", {}), common::StatusCode::kOk});
  cases.push_back({"a second bind of a bound pod", cluster.BindPod(*p, "n1", {}),
                   common::StatusCode::kAborted});
  cases.push_back({"deleting the pod", cluster.DeletePod(p->meta.uid), common::StatusCode::kOk});
  cases.push_back(
      {"deleting it twice", cluster.DeletePod(p->meta.uid), common::StatusCode::kNotFound});
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(c.got.code(), c.want) << c.got.ToString();
  }
  EXPECT_EQ(cluster.UsageOf("n1").pods, 0);
  EXPECT_EQ(handler.log,
            (std::vector<std::string>{"NodeAdd n1", "PodAdd default/a", "PodUpdate default/a ->n1",
                                      "PodDelete default/a"}));
  EXPECT_EQ(cluster.Counters().bind_errors, 3);
}

TEST(SimClusterTest, PreemptionWritesUpdateTheStoredPod) {
  SimCluster cluster;
  RecordingHandler handler;
  cluster.SetHandler(&handler);
  ASSERT_TRUE(cluster.AddNode(GpuNode("n1", 1)).ok());
  api::PodPtr p = SharedGpuPod("a", 1000);
  ASSERT_TRUE(cluster.CreatePod(p).ok());
  ASSERT_TRUE(cluster.BindPod(*p, "n1", {}).ok());
  handler.log.clear();

  const common::TimePoint t0(std::chrono::seconds(100));
  const api::Condition target{"DisruptionTarget", "True", "PreemptionByScheduler", "m", t0};
  ASSERT_TRUE(cluster.PatchPodCondition(*p, target).ok());
  ASSERT_EQ(cluster.GetPod("uid-a")->conditions.size(), 1u);
  EXPECT_EQ(cluster.GetPod("uid-a")->conditions[0].reason, "PreemptionByScheduler");
  // The same condition again changes nothing; another message replaces it, keeping the time.
  ASSERT_TRUE(cluster.PatchPodCondition(*p, target).ok());
  ASSERT_TRUE(cluster.PatchPodCondition(*p, {"DisruptionTarget", "True", "", "other", {}}).ok());
  ASSERT_EQ(cluster.GetPod("uid-a")->conditions.size(), 1u);
  EXPECT_EQ(cluster.GetPod("uid-a")->conditions[0].message, "other");
  EXPECT_EQ(cluster.GetPod("uid-a")->conditions[0].last_transition_time, t0);

  ASSERT_TRUE(cluster.SetNominatedNodeName(*cluster.GetPod("uid-a"), "n1").ok());
  EXPECT_EQ(cluster.GetPod("uid-a")->nominated_node_name, "n1");
  ASSERT_TRUE(cluster.SetNominatedNodeName(*cluster.GetPod("uid-a"), "n1").ok());  // no change
  ASSERT_TRUE(cluster.SetNominatedNodeName(*cluster.GetPod("uid-a"), "").ok());
  EXPECT_EQ(cluster.GetPod("uid-a")->nominated_node_name, "");
  EXPECT_EQ(handler.log.size(), 4u);  // two conditions, nominate, clear
  EXPECT_EQ(handler.last, cluster.GetPod("uid-a"));

  // Deleting by pod checks the uid: a pod of the same name with another uid is not deleted.
  api::Pod replaced = *p;
  replaced.meta.uid = "uid-other";
  EXPECT_EQ(cluster.DeletePod(replaced).code(), common::StatusCode::kNotFound);
  ASSERT_TRUE(cluster.DeletePod(*p).ok());
  EXPECT_EQ(cluster.DeletePod(*p).code(), common::StatusCode::kNotFound);
  EXPECT_EQ(cluster.PatchPodCondition(*p, target).code(), common::StatusCode::kNotFound);
  EXPECT_EQ(cluster.SetNominatedNodeName(*p, "n1").code(), common::StatusCode::kNotFound);
  EXPECT_EQ(cluster.UsageOf("n1").pods, 0);
  EXPECT_EQ(cluster.Counters().api_deletes, 1);
  EXPECT_EQ(handler.log.back(), "PodDelete default/a");
}

// --- Simulator -------------------------------------------------------------------------------

Workload SmallWorkload() {
  Workload w;
  w.nodes.push_back(GpuNode("n1", 1));
  auto a = std::make_shared<api::Pod>(*SharedGpuPod("a", 600));
  auto b = std::make_shared<api::Pod>(*SharedGpuPod("b", 600));  // cannot share with a
  auto c = std::make_shared<api::Pod>(*SharedGpuPod("c", 400));
  for (auto& p : {a, b, c}) p->scheduler_name = common::Intern("gpu-scheduler");
  w.pods = {a, b, c};
  return w;
}

TEST(SimulatorTest, RetryModes) {
  struct Case {
    std::string name;
    bool retry;
    bool b_deleted;
    int64_t pods_left;
  };
  const std::vector<Case> cases = {
      {"with retries a failed pod stays pending in the cluster", true, false, 3},
      {"without retries (FGD) a failed pod is deleted", false, true, 2},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto sim = RunWorkload(SmallWorkload(), 42, c.retry);
    ASSERT_NE(sim, nullptr);
    SimStats st = sim->Stats();
    EXPECT_EQ(st.scheduled, 2);
    EXPECT_EQ(st.unschedulable, 1);
    const PodOutcome* b = Find(*sim, "default/b");
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(b->state, PodState::kUnschedulable);
    EXPECT_EQ(b->deleted, c.b_deleted);
    EXPECT_EQ(b->reasons, (std::vector<std::string>{"Insufficient nvidia.com/gpu"}));
    EXPECT_EQ(sim->cluster().PodCount(), c.pods_left);
    // a and c share the one device.
    EXPECT_EQ(sim->cluster().UsageOf("n1").gpu_milli[0], 1000);
  }
}

TEST(SimulatorTest, SubmittingAPodTwiceIsAnError) {
  static const common::FakeClock wall;
  auto sim = Simulator::Create(SimulationDefaultConfig(), {plugins::InTreeRegistry(), wall});
  ASSERT_TRUE(sim.ok());
  ASSERT_TRUE((*sim)->AddNode(GpuNode("n1", 1)).ok());
  api::PodPtr p = SharedGpuPod("a", 100);
  ASSERT_TRUE((*sim)->SubmitPod(p).ok());
  auto again = (*sim)->SubmitPod(p);
  EXPECT_EQ(again.status().code(), common::StatusCode::kAlreadyExists);
}

TEST(SimulatorTest, PodsOfOtherSchedulersAreLeftAlone) {
  Workload w;
  w.nodes.push_back(GpuNode("n1", 1));
  auto p = std::make_shared<api::Pod>(*SharedGpuPod("other", 100));
  p->scheduler_name = common::Intern("someone-else");
  auto q = std::make_shared<api::Pod>(*SharedGpuPod("plain", 100));
  q->scheduler_name = common::Intern("default-scheduler");  // adopted by the first profile
  w.pods = {p, q};
  auto sim = RunWorkload(w);
  ASSERT_NE(sim, nullptr);
  SimStats st = sim->Stats();
  EXPECT_EQ(st.pending, 1);
  EXPECT_EQ(st.scheduled, 1);
  EXPECT_EQ(Find(*sim, "default/other")->reasons,
            (std::vector<std::string>{"not handled by any profile"}));
}

// --- manifests -------------------------------------------------------------------------------

TEST(WorkloadTest, AppendManifests) {
  struct Case {
    std::string name;
    std::string yaml;
    size_t nodes, pods, warnings, rejected, controllers;
    std::string rejection;  // Rejection::ToString of the first, when any
  };
  const std::vector<Case> cases = {
      {"nodes and pods are read in order, workload objects kept, other kinds skipped with a "
       "warning",
       "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n---\n"
       "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\n---\n"
       "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n---\n"
       "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c}]}\n",
       1, 1, 1, 0, 1, ""},
      {"a bad quantity is a rejection naming the file, the document and the field",
       "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n"
       "    resources: {requests: {cpu: 1.2.3}}\n",
       0, 0, 0, 1, 0,
       "in.yaml: document 1: Pod default/p: spec.containers[0].resources.requests.cpu: invalid "
       "quantity \"1.2.3\": unknown suffix \".3\""},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    Workload w;
    common::Status s = AppendManifests(c.yaml, "in.yaml", w);
    ASSERT_TRUE(s.ok()) << s.ToString();
    EXPECT_EQ(w.nodes.size(), c.nodes);
    EXPECT_EQ(w.pods.size(), c.pods);
    EXPECT_EQ(w.warnings.size(), c.warnings);
    EXPECT_EQ(w.controllers.size(), c.controllers);
    ASSERT_EQ(w.rejected.size(), c.rejected);
    if (c.rejected > 0) {
      EXPECT_EQ(w.rejected[0].ToString(), c.rejection);
    }
  }
  // Text that is not YAML at all stops the file, naming it.
  Workload w;
  common::Status s = AppendManifests("kind: Pod\n  metadata: [\n", "bad.yaml", w);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.ToString().find("bad.yaml"), std::string::npos) << s.ToString();
}

// --- preemption --------------------------------------------------------------------------------

// Two 1-GPU nodes filled by low-priority pods; the one on "a" is guarded by a PDB with no
// disruption left, so a high-priority pod evicts the other; a pod naming a missing PriorityClass
// is rejected as the API server would and the rest is simulated.
constexpr std::string_view kPreemptionYaml = R"(
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: batch}
value: 10
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: serving}
value: 1000
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: db, namespace: default}
spec: {minAvailable: 1, selector: {matchLabels: {app: db}}}
status: {disruptionsAllowed: 0}
---
apiVersion: v1
kind: Node
metadata: {name: a, labels: {slot: a, gpu.nvidia.com/count: "1", gpu.nvidia.com/model: A100}}
status:
  allocatable: {cpu: "8", memory: 32Gi, pods: "110", nvidia.com/gpu: "1"}
  capacity: {cpu: "8", memory: 32Gi, pods: "110", nvidia.com/gpu: "1"}
---
apiVersion: v1
kind: Node
metadata: {name: b, labels: {gpu.nvidia.com/count: "1", gpu.nvidia.com/model: A100}}
status:
  allocatable: {cpu: "8", memory: 32Gi, pods: "110", nvidia.com/gpu: "1"}
  capacity: {cpu: "8", memory: 32Gi, pods: "110", nvidia.com/gpu: "1"}
---
apiVersion: v1
kind: Pod
metadata: {name: db, labels: {app: db}}
spec:
  priorityClassName: batch
  nodeSelector: {slot: a}
  containers: [{name: c, resources: {limits: {nvidia.com/gpu: "1"}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: train}
spec:
  priorityClassName: batch
  containers: [{name: c, resources: {limits: {nvidia.com/gpu: "1"}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: typo}
spec:
  priorityClassName: servng
  containers: [{name: c, resources: {limits: {nvidia.com/gpu: "1"}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: serve}
spec:
  priorityClassName: serving
  containers: [{name: c, resources: {limits: {nvidia.com/gpu: "1"}}}]
)";

TEST(SimPreemptionTest, VictimsAreEvictedReportedAndThePreemptorBinds) {
  Workload w;
  ASSERT_TRUE(AppendManifests(kPreemptionYaml, "preempt.yaml", w).ok());
  ASSERT_EQ(w.priority_classes.size(), 2u);
  ASSERT_EQ(w.pdbs.size(), 1u);
  auto sim = RunWorkload(w);
  ASSERT_NE(sim, nullptr);
  ASSERT_EQ(sim->preemptions().size(), 1u);
  const Preemption& p = sim->preemptions()[0];
  EXPECT_EQ(p.pod, "default/serve");
  EXPECT_EQ(p.node, "b");  // a's pod is guarded by the PDB
  EXPECT_EQ(p.victims, std::vector<std::string>{"default/train"});
  EXPECT_EQ(Find(*sim, "default/train")->state, PodState::kPreempted);
  EXPECT_EQ(Find(*sim, "default/train")->preempted_by, "default/serve");
  EXPECT_EQ(Find(*sim, "default/db")->state, PodState::kScheduled);
  EXPECT_EQ(Find(*sim, "default/typo")->state, PodState::kRejected);
  EXPECT_EQ(Find(*sim, "default/typo")->message,
            "pods \"typo\" is forbidden: no PriorityClass with name servng was found");
  EXPECT_EQ(Find(*sim, "default/serve")->pod->priority, 1000);
  // Run settles: the preemptor binds on its nominated node once the victim is gone.
  EXPECT_EQ(Find(*sim, "default/serve")->state, PodState::kScheduled);
  EXPECT_EQ(Find(*sim, "default/serve")->node, "b");

  const Report r = BuildReport(*sim, "preempt.yaml");
  const std::string text = FormatReportText(r);
  EXPECT_NE(text.find("Preemptions: 1\n  default/serve -> b: evicted default/train\n"),
            std::string::npos)
      << text;
  const boost::json::value j = ReportToJson(r);
  EXPECT_EQ(boost::json::serialize(j.at("preemptions")),
            R"([{"pod":"default/serve","node":"b","victims":["default/train"]}])");
  // A bare pod is gone for good: no controller recreates it.
  for (const PodOutcome& o : sim->outcomes()) EXPECT_EQ(o.replaces, "") << o.pod->Key();
}

std::string OneGpuNode(const std::string& name) {
  return "apiVersion: v1\nkind: Node\nmetadata: {name: " + name +
         ", labels: {kubernetes.io/hostname: " + name +
         "}}\nstatus:\n  allocatable: {cpu: \"8\", memory: 32Gi, pods: \"110\", "
         "nvidia.com/gpu: \"1\"}\n---\n";
}

// A Deployment's pod on one of three 1-GPU nodes; a serving pod that must run on that node evicts
// it; the ReplicaSet creates a replacement, which the scheduler places on another node.
TEST(SimPreemptionTest, APreemptedControllerPodIsRecreatedAndPlacedWhereItFits) {
  Workload w;
  ASSERT_TRUE(AppendManifests(std::string(R"(
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: batch}
value: 10
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: serving}
value: 1000
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: train}
spec:
  replicas: 1
  selector: {matchLabels: {app: train}}
  template:
    metadata: {labels: {app: train}}
    spec:
      priorityClassName: batch
      containers: [{name: c, resources: {limits: {nvidia.com/gpu: "1"}}}]
---
)") + OneGpuNode("a") + OneGpuNode("b") +
                                  OneGpuNode("c"),
                              "in.yaml", w)
                  .ok());
  ExpandControllers(w);
  auto sim = RunWorkload(w);
  ASSERT_NE(sim, nullptr);
  const PodOutcome train = sim->outcomes()[0];
  ASSERT_EQ(train.state, PodState::kScheduled);
  Workload serve;
  ASSERT_TRUE(AppendManifests("apiVersion: v1\nkind: Pod\nmetadata: {name: serve}\nspec:\n"
                              "  priorityClassName: serving\n"
                              "  nodeSelector: {kubernetes.io/hostname: " +
                                  train.node +
                                  "}\n"
                                  "  containers: [{name: c, resources: {limits: {nvidia.com/gpu: "
                                  "\"1\"}}}]\n",
                              "serve.yaml", serve)
                  .ok());
  ASSERT_TRUE(sim->SubmitWorkloadPod(serve.pods[0]).ok());
  ASSERT_TRUE(sim->Settle().ok());
  EXPECT_EQ(sim->outcomes()[0].state, PodState::kPreempted);
  EXPECT_EQ(Find(*sim, "default/serve")->node, train.node);
  ASSERT_EQ(sim->outcomes().size(), 3u);
  const PodOutcome& replacement = sim->outcomes()[2];
  EXPECT_EQ(replacement.replaces, train.pod->Key());
  const api::OwnerReference& rs = train.pod->meta.owner_references.at(0);
  EXPECT_EQ(replacement.pod->meta.name.substr(0, rs.name.size() + 1), rs.name + "-");
  EXPECT_NE(replacement.pod->meta.name, train.pod->meta.name);
  ASSERT_EQ(replacement.pod->meta.owner_references.size(), 1u);
  EXPECT_EQ(replacement.pod->meta.owner_references[0].uid, rs.uid);
  EXPECT_EQ(replacement.pod->priority, 10);
  EXPECT_EQ(replacement.state, PodState::kScheduled);
  EXPECT_NE(replacement.node, train.node);
  const Report r = BuildReport(*sim, "in.yaml");
  EXPECT_EQ(r.placements[2].message, "replaces preempted " + train.pod->Key());
}

}  // namespace
}  // namespace gpusched::sim
