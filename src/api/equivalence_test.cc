// SPDX-License-Identifier: Apache-2.0
#include "src/api/equivalence.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

namespace gpusched::api {
namespace {

using common::Intern;

Pod BasePod() {
  Pod p;
  p.meta.name = "web-0";
  p.meta.namespace_ = "default";
  p.meta.uid = "uid-0";
  p.meta.labels.Set("app", "web");
  p.scheduler_name = Intern("gpu-scheduler");
  Container c;
  c.name = "main";
  c.requests.milli_cpu = 500;
  c.requests.memory = 1 << 30;
  p.containers.push_back(c);
  ComputeEffectiveRequests(p);
  return p;
}

std::string Key(const Pod& p) {
  std::string k;
  SchedulingEquivalenceKey(p, k);
  return k;
}

TEST(EquivalenceKeyTest, PodsDifferingOnlyInIdentityShareTheKey) {
  Pod a = BasePod();
  Pod b = BasePod();
  b.meta.name = "web-1";
  b.meta.uid = "uid-1";
  b.meta.resource_version = "42";
  b.meta.labels.Set("batch.kubernetes.io/job-completion-index", "1");
  b.meta.annotations.emplace_back("kubectl.kubernetes.io/last-applied-configuration", "{}");
  b.containers[0].image = "web:v2";  // only ImageLocality reads images; it is not node-local
  EXPECT_EQ(Key(a), Key(b));
  EXPECT_EQ(HashEquivalenceKey(Key(a)), HashEquivalenceKey(Key(b)));
}

TEST(EquivalenceKeyTest, EverySchedulingFieldChangesTheKey) {
  struct Case {
    std::string name;
    std::function<void(Pod&)> change;
  };
  auto term = [](std::string_view key, std::string_view value) {
    NodeSelectorTerm t;
    Requirement r;
    r.key = Intern(key);
    r.op = SelectorOp::kIn;
    r.values.push_back(Intern(value));
    t.match_expressions.push_back(r);
    return t;
  };
  auto pod_term = [](std::string_view topology) {
    PodAffinityTerm t;
    Requirement r;
    r.key = Intern("app");
    r.op = SelectorOp::kIn;
    r.values.push_back(Intern("db"));
    t.label_selector.requirements.push_back(r);
    t.topology_key = Intern(topology);
    return t;
  };
  const std::vector<Case> cases = {
      {"the namespace", [](Pod& p) { p.meta.namespace_ = "other"; }},
      {"a gpusched.io annotation (per-pod GPU policy)",
       [](Pod& p) { p.meta.annotations.emplace_back("gpusched.io/gpu-policy", "spread"); }},
      {"the scheduler name", [](Pod& p) { p.scheduler_name = Intern("default-scheduler"); }},
      {"spec.nodeName", [](Pod& p) { p.node_name = "node-1"; }},
      {"the priority", [](Pod& p) { p.priority = 1000; }},
      {"the node selector", [](Pod& p) { p.node_selector.Set("zone", "a"); }},
      {"a required node affinity term",
       [&](Pod& p) {
         p.affinity.node_affinity.required.emplace();
         p.affinity.node_affinity.required->terms.push_back(term("zone", "a"));
       }},
      {"an empty required node affinity (matches nothing)",
       [](Pod& p) { p.affinity.node_affinity.required.emplace(); }},
      {"a matchFields term",
       [](Pod& p) {
         p.affinity.node_affinity.required.emplace();
         NodeSelectorTerm t;
         t.match_fields_names_in.push_back("node-3");
         p.affinity.node_affinity.required->terms.push_back(t);
       }},
      {"a preferred node affinity term",
       [&](Pod& p) {
         p.affinity.node_affinity.preferred.push_back({10, term("zone", "a")});
       }},
      {"the weight of a preferred node affinity term",
       [&](Pod& p) {
         p.affinity.node_affinity.preferred.push_back({20, term("zone", "a")});
       }},
      {"a required pod affinity term",
       [&](Pod& p) { p.affinity.pod_affinity.required.push_back(pod_term("zone")); }},
      {"a required pod anti-affinity term",
       [&](Pod& p) { p.affinity.pod_anti_affinity.required.push_back(pod_term("zone")); }},
      {"a preferred pod anti-affinity term",
       [&](Pod& p) {
         p.affinity.pod_anti_affinity.preferred.push_back({5, pod_term("host")});
       }},
      {"a pod affinity term's namespaces",
       [&](Pod& p) {
         PodAffinityTerm t = pod_term("zone");
         t.namespaces.push_back("ml");
         p.affinity.pod_affinity.required.push_back(t);
       }},
      {"a toleration",
       [](Pod& p) {
         Toleration t;
         t.key = Intern("nvidia.com/gpu");
         t.op = Toleration::Op::kExists;
         p.tolerations.push_back(t);
       }},
      {"a toleration's tolerationSeconds",
       [](Pod& p) {
         Toleration t;
         t.key = Intern("nvidia.com/gpu");
         t.op = Toleration::Op::kExists;
         t.toleration_seconds = 30;
         p.tolerations.push_back(t);
       }},
      {"a topology spread constraint",
       [](Pod& p) {
         TopologySpreadConstraint c;
         c.topology_key = Intern("zone");
         p.topology_spread_constraints.push_back(c);
       }},
      {"a topology spread constraint's maxSkew",
       [](Pod& p) {
         TopologySpreadConstraint c;
         c.topology_key = Intern("zone");
         c.max_skew = 2;
         p.topology_spread_constraints.push_back(c);
       }},
      {"the overhead",
       [](Pod& p) {
         p.overhead.milli_cpu = 100;
         ComputeEffectiveRequests(p);
       }},
      {"a container's cpu request",
       [](Pod& p) {
         p.containers[0].requests.milli_cpu = 600;
         ComputeEffectiveRequests(p);
       }},
      {"a container's memory request",
       [](Pod& p) {
         p.containers[0].requests.memory += 1;
         ComputeEffectiveRequests(p);
       }},
      {"an extended resource request",
       [](Pod& p) {
         p.containers[0].requests.Set(Intern("example.com/fpga"), 1);
         ComputeEffectiveRequests(p);
       }},
      {"a container's limits", [](Pod& p) { p.containers[0].limits.milli_cpu = 2000; }},
      {"a second container with no requests (non-zero scoring defaults)",
       [](Pod& p) {
         Container c;
         c.name = "sidecar";
         p.containers.push_back(c);
         ComputeEffectiveRequests(p);
       }},
      {"a host port",
       [](Pod& p) {
         p.containers[0].ports.push_back({8080, 80, Intern("TCP"), ""});
       }},
      {"a host port's protocol",
       [](Pod& p) {
         p.containers[0].ports.push_back({8080, 80, Intern("UDP"), ""});
       }},
      {"a host port's address",
       [](Pod& p) {
         p.containers[0].ports.push_back({8080, 80, Intern("TCP"), "10.0.0.1"});
       }},
      {"an init container",
       [](Pod& p) {
         Container c;
         c.name = "init";
         c.requests.milli_cpu = 100;
         p.init_containers.push_back(c);
       }},
      {"the GPU count",
       [](Pod& p) {
         p.gpu.count = 1;
         p.gpu.milli = 1000;
       }},
      {"the GPU compute share",
       [](Pod& p) {
         p.gpu.count = 1;
         p.gpu.milli = 500;
       }},
      {"the GPU memory share", [](Pod& p) { p.gpu.share_memory_mib = 4096; }},
      {"the GPU memory share in permille", [](Pod& p) { p.gpu.share_memory_permille = 250; }},
      {"the minimum GPU memory", [](Pod& p) { p.gpu.min_device_memory_mib = 40000; }},
      {"the GPU models", [](Pod& p) { p.gpu.models.push_back(Intern("A100")); }},
      {"a GPU annotation error", [](Pod& p) { p.gpu_error = "bad gpusched.io/gpu-milli"; }},
  };
  const Pod base = BasePod();
  const std::string base_key = Key(base);
  std::vector<std::string> seen = {base_key};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Pod p = BasePod();
    c.change(p);
    const std::string k = Key(p);
    EXPECT_NE(k, base_key);
    EXPECT_NE(HashEquivalenceKey(k), HashEquivalenceKey(base_key));
    seen.push_back(k);
  }
  // The encoding is unambiguous: no two of the changes above collide with each other either,
  // except the pairs that change the same field to the same value (none here).
  for (size_t i = 0; i < seen.size(); ++i) {
    for (size_t j = i + 1; j < seen.size(); ++j) {
      EXPECT_NE(seen[i], seen[j]) << "cases " << i << " and " << j;
    }
  }
}

Node BaseNode(std::string_view name) {
  Node n;
  n.meta.name = std::string(name);
  n.meta.uid = "uid-" + std::string(name);
  n.meta.resource_version = "7";
  n.meta.labels.Set("kubernetes.io/hostname", name);
  n.meta.labels.Set("topology.kubernetes.io/zone", "zone-a");
  n.allocatable.milli_cpu = 32000;
  n.capacity.milli_cpu = 32000;
  n.gpu.count = 4;
  n.gpu.model = Intern("A100-SXM4-40GB");
  return n;
}

std::string TwinKey(const Node& n) {
  std::string k;
  NodeTwinKey(n, k);
  return k;
}

TEST(NodeTwinKeyTest, NodesDifferingOnlyInIdentityShareTheKey) {
  Node a = BaseNode("gpu-0");
  Node b = BaseNode("gpu-1");
  b.meta.uid = "other";
  b.meta.resource_version = "99";
  b.meta.creation_timestamp = common::TimePoint{} + std::chrono::hours(1);
  EXPECT_EQ(TwinKey(a), TwinKey(b));
}

TEST(NodeTwinKeyTest, EveryOtherFieldChangesTheKey) {
  struct Case {
    std::string name;
    std::function<void(Node&)> change;
  };
  const std::vector<Case> cases = {
      {"a label", [](Node& n) { n.meta.labels.Set("rack", "r1"); }},
      {"a label's value", [](Node& n) { n.meta.labels.Set("topology.kubernetes.io/zone", "b"); }},
      {"no hostname label", [](Node& n) { n.meta.labels = Labels{}; }},
      {"an annotation", [](Node& n) { n.meta.annotations.emplace_back("a", "b"); }},
      {"deletion", [](Node& n) { n.meta.deletion_timestamp = common::TimePoint{}; }},
      {"capacity", [](Node& n) { n.capacity.milli_cpu = 1; }},
      {"allocatable", [](Node& n) { n.allocatable.memory = 1; }},
      {"a taint",
       [](Node& n) {
         n.taints.push_back(Taint{Intern("k"), Intern("v"), TaintEffect::kNoSchedule});
       }},
      {"unschedulable", [](Node& n) { n.unschedulable = true; }},
      {"a condition",
       [](Node& n) {
         n.conditions.push_back(Condition{"Ready", "False", "", "", {}});
       }},
      {"an image",
       [](Node& n) {
         n.images.push_back(ContainerImage{{"img"}, 1});
       }},
      {"GPU count", [](Node& n) { n.gpu.count = 8; }},
      {"an unhealthy GPU", [](Node& n) { n.gpu.unhealthy_mask = 2; }},
      {"NVLink islands", [](Node& n) { n.gpu.island[1] = 1; }},
      {"replicas", [](Node& n) { n.gpu.replicas = 4; }},
      {"a GPU error", [](Node& n) { n.gpu_error = "bad"; }},
  };
  const std::string base = TwinKey(BaseNode("gpu-0"));
  for (const Case& c : cases) {
    Node n = BaseNode("gpu-0");
    c.change(n);
    EXPECT_NE(TwinKey(n), base) << c.name;
  }
  // The hostname label is left out, yet a node without it is not the twin of one with it and
  // one more label: the encoding stays unambiguous.
  Node with = BaseNode("gpu-0");
  Node without = BaseNode("gpu-0");
  without.meta.labels = Labels{};
  without.meta.labels.Set("topology.kubernetes.io/zone", "zone-a");
  without.meta.labels.Set("x", "y");
  EXPECT_NE(TwinKey(with), TwinKey(without));
}

TEST(EquivalenceKeyTest, KeyBufferIsReplacedNotAppended) {
  std::string k = "stale contents";
  SchedulingEquivalenceKey(BasePod(), k);
  EXPECT_EQ(k, Key(BasePod()));
}

}  // namespace
}  // namespace gpusched::api
