// SPDX-License-Identifier: Apache-2.0
// Gangs in the simulator (issue #19): PodGroup and Workload objects in the input, the report per
// gang, and a 200-node cluster with 100 gangs of 2-16 members and plain pods arriving interleaved,
// where gang scheduling never leaves a gang partly bound and pod-by-pod scheduling (the same pods
// without their PodGroups) does, holding GPUs no job can use.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "src/api/gang.h"
#include "src/common/clock.h"
#include "src/common/random.h"
#include "src/plugins/in_tree_registry.h"
#include "src/sim/controllers.h"
#include "src/sim/report.h"
#include "src/sim/simulator.h"
#include "src/sim/workload.h"
#include "src/testing/builders.h"

namespace gpusched::sim {
namespace {

using testing::MakeNode;
using testing::MakePod;

std::unique_ptr<Simulator> NewSim() {
  static const common::FakeClock wall;
  SimOptions opts;
  opts.check_invariants = true;
  auto sim = Simulator::Create(SimulationDefaultConfig(), {plugins::InTreeRegistry(), wall}, opts);
  EXPECT_TRUE(sim.ok()) << sim.status().ToString();
  return sim.ok() ? std::move(*sim) : nullptr;
}

// Two 8-GPU nodes, a in zone z1 and b in zone z2.
constexpr std::string_view kTwoNodes = R"(
apiVersion: v1
kind: Node
metadata: {name: a, labels: {topology.kubernetes.io/zone: z1}}
status:
  allocatable: {cpu: "64", memory: 512Gi, pods: "110", nvidia.com/gpu: "8"}
---
apiVersion: v1
kind: Node
metadata: {name: b, labels: {topology.kubernetes.io/zone: z2}}
status:
  allocatable: {cpu: "64", memory: 512Gi, pods: "110", nvidia.com/gpu: "8"}
)";

constexpr std::string_view kGangPolicies = R"(
---
apiVersion: scheduling.x-k8s.io/v1alpha1
kind: PodGroup
metadata: {name: fits, namespace: ml}
spec: {minMember: 2}
---
apiVersion: scheduling.k8s.io/v1alpha1
kind: Workload
metadata: {name: big, namespace: ml}
spec:
  podGroups:
  - name: workers
    policy: {gang: {minCount: 3}}
)";

std::string Member(std::string_view name, std::string_view label_or_ref, int gpus) {
  const bool workload = label_or_ref == "workload";
  return std::string("---\napiVersion: v1\nkind: Pod\nmetadata: {name: ") + std::string(name) +
         ", namespace: ml" +
         (workload
              ? std::string("}\n")
              : ", labels: {scheduling.x-k8s.io/pod-group: " + std::string(label_or_ref) + "}}\n") +
         "spec:\n" +
         (workload ? "  workloadRef: {name: big, podGroup: workers}\n" : std::string()) +
         "  containers:\n  - name: main\n    resources:\n      limits: {nvidia.com/gpu: \"" +
         std::to_string(gpus) + "\"}\n";
}

TEST(GangSimTest, PodGroupsAndWorkloadsFromManifestsAreReportedPerGang) {
  std::string text = std::string(kTwoNodes) + std::string(kGangPolicies);
  text += Member("fits-0", "fits", 4) + Member("fits-1", "fits", 4);
  // Three members of 8 GPUs on 16 GPUs: never fits; pod by pod two would bind.
  text += Member("big-0", "workload", 8) + Member("big-1", "workload", 8) +
          Member("big-2", "workload", 8);
  Workload w;
  ASSERT_TRUE(AppendManifests(text, "gangs.yaml", w).ok());
  ASSERT_EQ(w.pod_groups.size(), 2u);
  auto sim = NewSim();
  ASSERT_TRUE(sim->Run(w).ok());
  Report r = BuildReport(*sim, "gangs.yaml");
  ASSERT_EQ(r.gangs.size(), 2u);
  EXPECT_EQ(r.gangs[0].gang, "PodGroup ml/fits");
  EXPECT_EQ(r.gangs[0].state, "Placed");
  EXPECT_EQ(r.gangs[0].bound, 2);
  EXPECT_EQ(r.gangs[1].gang, "Workload ml/big/workers");
  EXPECT_EQ(r.gangs[1].state, "Waiting");
  EXPECT_EQ(r.gangs[1].members, 3);
  EXPECT_EQ(r.gangs[1].bound, 0);
  const std::string report = FormatReportText(r);
  EXPECT_NE(report.find("Gangs: 2, 1 Placed, 1 Waiting"), std::string::npos) << report;
  EXPECT_NE(report.find("Workload ml/big/workers [Waiting]: 0/3 bound (minMember 3)"),
            std::string::npos)
      << report;
  const std::string json = FormatJson(ReportToJson(r));
  EXPECT_NE(json.find("\"gang\": \"PodGroup ml/fits\""), std::string::npos) << json;
}

// A Kubernetes 1.37 file: a native PodGroup (scheduling.k8s.io/v1beta1) with a topology
// constraint and pods naming it in spec.schedulingGroup. Zone z1's node has 4 GPUs taken, so the
// gang of 2 x 4 GPUs lands whole on zone z2's node (pod by pod, packing would put one member into
// z1's free half).
TEST(GangSimTest, ANativePodGroupFromAFileIsAGangWithItsTopology) {
  std::string text = std::string(kTwoNodes) + R"(
---
apiVersion: v1
kind: Pod
metadata: {name: busy, namespace: ml}
spec:
  nodeName: a
  containers:
  - name: main
    resources:
      limits: {nvidia.com/gpu: "4"}
---
apiVersion: scheduling.k8s.io/v1beta1
kind: PodGroup
metadata: {name: train-0, namespace: ml}
spec:
  schedulingPolicy: {gang: {minCount: 2}}
  schedulingConstraints:
    topology: [{key: topology.kubernetes.io/zone}]
)";
  for (std::string_view name : {"t-0", "t-1"}) {
    text += "---\napiVersion: v1\nkind: Pod\nmetadata: {name: " + std::string(name) +
            ", namespace: ml}\nspec:\n  schedulingGroup: {podGroupName: train-0}\n"
            "  containers:\n  - name: main\n    resources:\n      limits: {nvidia.com/gpu: "
            "\"4\"}\n";
  }
  // The Workload the PodGroup was made from is not needed, and the reader says so.
  text += R"(---
apiVersion: scheduling.k8s.io/v1beta1
kind: Workload
metadata: {name: train, namespace: ml}
spec:
  podGroupTemplates:
  - {name: workers, schedulingPolicy: {gang: {minCount: 2}}}
)";
  Workload w;
  ASSERT_TRUE(AppendManifests(text, "native.yaml", w).ok());
  ASSERT_EQ(w.pod_groups.size(), 1u);
  EXPECT_TRUE(w.rejected.empty());
  EXPECT_THAT(
      w.warnings,
      ::testing::ElementsAre("native.yaml: skipped Workload \"train\" (scheduling.k8s.io/v1beta1): "
                             "the scheduler reads the PodGroups made from its podGroupTemplates; "
                             "give those, or the Job"));
  auto sim = NewSim();
  ASSERT_TRUE(sim->Run(w).ok());
  Report r = BuildReport(*sim, "native.yaml");
  ASSERT_EQ(r.gangs.size(), 1u);
  EXPECT_EQ(r.gangs[0].gang, "PodGroup ml/train-0 (scheduling.k8s.io)");
  EXPECT_EQ(r.gangs[0].state, "Placed");
  EXPECT_EQ(r.gangs[0].bound, 2);
  int members = 0;
  for (const PlacementRow& p : r.placements) {
    if (!p.pod.starts_with("ml/t-")) continue;
    ++members;
    EXPECT_EQ(p.node, "b") << p.pod;
  }
  EXPECT_EQ(members, 2);
}

// A Kubernetes 1.37 Job that asks for a gang (spec.scheduling, WorkloadWithJob): the simulator
// creates the native PodGroup the Job controller would (minCount: the parallelism) and places
// the Job's pods all or nothing. 3 x 8 GPUs on 2 x 8: nothing binds, where a Job without the
// gang policy gets 2 of its 3 pods bound.
TEST(GangSimTest, AJobAskingForAGangGetsItsNativePodGroup) {
  auto job = [](std::string_view name, std::string_view scheduling) {
    return "---\napiVersion: batch/v1\nkind: Job\nmetadata: {name: " + std::string(name) +
           ", namespace: ml}\nspec:\n  completionMode: Indexed\n  completions: 3\n"
           "  parallelism: 3\n" +
           std::string(scheduling) +
           "  template:\n    spec:\n      restartPolicy: Never\n      containers:\n"
           "      - name: main\n        resources:\n          limits: {nvidia.com/gpu: \"8\"}\n";
  };
  for (const bool gang : {true, false}) {
    SCOPED_TRACE(gang ? "gang" : "basic");
    Workload w;
    ASSERT_TRUE(AppendManifests(std::string(kTwoNodes) +
                                    job("train", gang ? "  scheduling:\n    schedulingPolicy:\n"
                                                        "      gang: {}\n"
                                                      : ""),
                                "job.yaml", w)
                    .ok());
    ExpandControllers(w);
    auto sim = NewSim();
    ASSERT_TRUE(sim->Run(w).ok());
    Report r = BuildReport(*sim, "job.yaml");
    int bound = 0;
    for (const PlacementRow& p : r.placements) bound += p.node.empty() ? 0 : 1;
    if (!gang) {
      EXPECT_EQ(bound, 2);
      EXPECT_TRUE(r.gangs.empty());
      continue;
    }
    EXPECT_EQ(bound, 0) << "all or nothing";
    ASSERT_EQ(r.gangs.size(), 1u);
    EXPECT_TRUE(r.gangs[0].gang.starts_with("PodGroup ml/train-")) << r.gangs[0].gang;
    EXPECT_TRUE(r.gangs[0].gang.ends_with(" (scheduling.k8s.io)")) << r.gangs[0].gang;
    EXPECT_EQ(r.gangs[0].members, 3);
    EXPECT_EQ(r.gangs[0].state, "Waiting");
  }
}

// Issue #36 as a new user met it with `gpusched simulate`: two 8-GPU nodes with one low-priority
// 1-GPU pod each, then a PodGroup (minMember 4) and an Indexed Job of 4 x 4 GPUs of higher
// priority. Both small pods must go; then the whole gang binds, two members per node. Before the
// fix both were evicted and the gang stayed Waiting, 0/4 bound, on an empty cluster.
TEST(GangSimTest, AGangWithTwoMembersPerNodePreemptsThenBindsWhole) {
  std::string text = R"(
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: low}
value: 10
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
---
apiVersion: scheduling.x-k8s.io/v1alpha1
kind: PodGroup
metadata: {name: ft, namespace: ml}
spec: {minMember: 4}
)";
  for (const char* node : {"a100-a", "a100-b"}) {
    text += std::string("---\napiVersion: v1\nkind: Node\nmetadata: {name: ") + node +
            "}\nstatus:\n  allocatable: {cpu: \"64\", memory: 512Gi, pods: \"110\", "
            "nvidia.com/gpu: \"8\"}\n";
    text += std::string("---\napiVersion: v1\nkind: Pod\nmetadata: {name: low-") + node +
            ", namespace: ml}\nspec:\n  nodeName: " + node +
            "\n  priorityClassName: low\n  containers:\n  - name: main\n    resources:\n"
            "      limits: {nvidia.com/gpu: \"1\"}\n";
  }
  text += R"(---
apiVersion: batch/v1
kind: Job
metadata: {name: ft, namespace: ml}
spec:
  completionMode: Indexed
  completions: 4
  parallelism: 4
  template:
    metadata:
      labels: {scheduling.x-k8s.io/pod-group: ft}
    spec:
      restartPolicy: Never
      priorityClassName: high
      containers:
      - name: main
        resources:
          limits: {nvidia.com/gpu: "4"}
)";
  Workload w;
  ASSERT_TRUE(AppendManifests(text, "ft.yaml", w).ok());
  ExpandControllers(w);
  ASSERT_TRUE(w.rejected.empty()) << w.rejected[0].ToString();
  ASSERT_EQ(w.pod_groups.size(), 1u);
  ASSERT_EQ(w.pods.size(), 6u);
  auto sim = NewSim();
  ASSERT_TRUE(sim->Run(w).ok());
  Report r = BuildReport(*sim, "ft.yaml");
  ASSERT_EQ(r.gangs.size(), 1u);
  EXPECT_EQ(r.gangs[0].state, "Placed");
  EXPECT_EQ(r.gangs[0].bound, 4);
  std::map<std::string, int> per_node;
  std::set<std::string> evicted;
  for (const Preemption& p : r.preemptions) {
    for (const std::string& v : p.victims) evicted.insert(v);
  }
  EXPECT_EQ(evicted, (std::set<std::string>{"ml/low-a100-a", "ml/low-a100-b"}));
  for (const PlacementRow& p : r.placements) {
    if (p.pod.rfind("ml/ft-", 0) == 0) ++per_node[p.node];
  }
  EXPECT_EQ(per_node, (std::map<std::string, int>{{"a100-a", 2}, {"a100-b", 2}}));
}

TEST(GangSimTest, MalformedPodGroupNamesTheField) {
  Workload w;
  common::Status s = AppendManifests(
      "apiVersion: scheduling.x-k8s.io/v1alpha1\nkind: PodGroup\nmetadata: {name: g, namespace: "
      "ml}\nspec: {minMember: many}\n",
      "bad.yaml", w);
  ASSERT_TRUE(s.ok()) << s.ToString();  // rejected and reported, the rest simulated
  ASSERT_EQ(w.rejected.size(), 1u);
  EXPECT_TRUE(w.pod_groups.empty());
  const std::string why = w.rejected[0].ToString();
  EXPECT_NE(why.find("bad.yaml"), std::string::npos) << why;
  EXPECT_NE(why.find("spec.minMember"), std::string::npos) << why;
}

// The 200-node mix. Gangs: 2-16 members of 1, 2, 4 or 8 GPUs; plain pods: 1-4 GPUs; everything
// arrives shuffled, so members of different gangs interleave (the pod-by-pod deadlock).
struct Mix {
  Workload workload;
  std::map<std::string, int32_t> min_member;  // gang name -> minMember (both runs)
};

Mix MakeMix(bool with_pod_groups, uint64_t seed) {
  Mix m;
  common::Random rng(seed);
  for (int i = 0; i < 200; ++i) {
    m.workload.nodes.push_back(MakeNode("node-" + std::to_string(i))
                                   .Cpu("96")
                                   .Memory("1Ti")
                                   .Gpus(8)
                                   .Label("topology.kubernetes.io/zone", i < 100 ? "z1" : "z2")
                                   .Ptr());
  }
  std::vector<api::PodPtr> pods;
  constexpr int kGpuChoices[] = {1, 2, 4, 8};
  for (int g = 0; g < 100; ++g) {
    const std::string name = "gang-" + std::to_string(g);
    const int members = 2 + static_cast<int>(rng.Uniform(15));
    const int gpus = kGpuChoices[rng.Uniform(4)];
    m.min_member[name] = members;
    if (with_pod_groups) {
      auto pg = std::make_shared<api::PodGroup>();
      pg->api = api::GangApi::kPodGroup;
      pg->namespace_ = "ml";
      pg->name = name;
      pg->min_member = members;
      m.workload.pod_groups.push_back(pg);
    }
    for (int i = 0; i < members; ++i) {
      testing::PodBuilder b = MakePod("ml", name + "-" + std::to_string(i));
      if (with_pod_groups) b.Label(api::kPodGroupLabel, name);  // pod by pod: plain pods
      pods.push_back(b.Cpu("4").Gpus(gpus).Ptr());
    }
  }
  for (int i = 0; i < 400; ++i) {
    pods.push_back(MakePod("ml", "plain-" + std::to_string(i))
                       .Cpu("2")
                       .Gpus(1 + static_cast<int>(rng.Uniform(4)))
                       .Ptr());
  }
  for (size_t i = pods.size(); i > 1; --i) std::swap(pods[i - 1], pods[rng.Uniform(i)]);
  m.workload.pods = std::move(pods);
  return m;
}

struct Allocation {
  int64_t useful_gpus = 0;    // plain pods and gangs with at least minMember bound
  int64_t stranded_gpus = 0;  // members of gangs bound below minMember: held, never useful
  int32_t partial_gangs = 0;
  int32_t whole_gangs = 0;
};

Allocation Measure(const Simulator& sim, const std::map<std::string, int32_t>& min_member) {
  std::map<std::string, std::pair<int32_t, int64_t>> gangs;  // bound members, GPUs
  Allocation a;
  for (const PodOutcome& o : sim.outcomes()) {
    if (o.state != PodState::kScheduled) continue;
    const int64_t gpus = o.pod->gpu.TotalMilli() / 1000;
    const std::string& name = o.pod->meta.name;  // gang-G-i: member i of gang G
    if (name.rfind("gang-", 0) != 0) {
      a.useful_gpus += gpus;
      continue;
    }
    auto& [bound, held] = gangs[name.substr(0, name.rfind('-'))];
    ++bound;
    held += gpus;
  }
  for (const auto& [name, g] : gangs) {
    if (g.first >= min_member.at(name)) {
      ++a.whole_gangs;
      a.useful_gpus += g.second;
    } else {
      ++a.partial_gangs;
      a.stranded_gpus += g.second;
    }
  }
  return a;
}

TEST(GangSimTest, TwoHundredNodesHundredGangsNeverPartialUnlikePodByPod) {
  for (uint64_t seed : {1u, 2u, 3u}) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Mix gangs = MakeMix(true, seed);
    Mix plain = MakeMix(false, seed);
    auto with = NewSim();
    auto without = NewSim();
    for (const auto& g : gangs.workload.pod_groups)
      ASSERT_TRUE(with->cluster().AddPodGroup(g).ok());
    for (const auto& n : gangs.workload.nodes) {
      ASSERT_TRUE(with->AddNode(n).ok());
      ASSERT_TRUE(without->AddNode(n).ok());
    }
    for (size_t i = 0; i < gangs.workload.pods.size(); ++i) {
      ASSERT_TRUE(with->SubmitPod(gangs.workload.pods[i]).ok());
      ASSERT_TRUE(without->SubmitPod(plain.workload.pods[i]).ok());
      // After every arrival: no gang partly bound.
      ASSERT_EQ(Measure(*with, gangs.min_member).partial_gangs, 0) << "after pod " << i;
    }
    const Allocation g = Measure(*with, gangs.min_member);
    const Allocation p = Measure(*without, plain.min_member);
    std::printf(
        "MEASURED seed %llu, 1600 GPUs: gang scheduling %lld useful GPUs (%d whole gangs, %d "
        "partial, %lld stranded); pod by pod %lld useful (%d whole gangs, %d partial, %lld GPUs "
        "stranded)\n",
        static_cast<unsigned long long>(seed), static_cast<long long>(g.useful_gpus), g.whole_gangs,
        g.partial_gangs, static_cast<long long>(g.stranded_gpus),
        static_cast<long long>(p.useful_gpus), p.whole_gangs, p.partial_gangs,
        static_cast<long long>(p.stranded_gpus));
    EXPECT_EQ(g.stranded_gpus, 0);
    EXPECT_GT(p.partial_gangs, 0) << "the mix should overload the cluster";
    EXPECT_GT(g.useful_gpus, p.useful_gpus);
    Report r = BuildReport(*with, "mix");
    for (const GangRow& row : r.gangs) EXPECT_NE(row.state, "Partial") << row.gang;
  }
}

}  // namespace
}  // namespace gpusched::sim
