// SPDX-License-Identifier: Apache-2.0
// PodTopologySpread and InterPodAffinity through the whole scheduler: manifests are decoded, the
// simulator's default profile (which enables both plugins) places the pods, and the placements are
// checked per zone and per node.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "src/common/clock.h"
#include "src/plugins/in_tree_registry.h"
#include "src/sim/simulator.h"
#include "src/sim/workload.h"

namespace gpusched::sim {
namespace {

// Zone a has two large nodes, zones b and c one small node each: the default profile alone packs
// all pods onto one node, so spreading has to come from the spread/affinity plugins.
std::string Nodes() {
  std::string out;
  auto node = [&](const std::string& name, const std::string& zone, const std::string& cpu) {
    out += "apiVersion: v1\nkind: Node\nmetadata:\n  name: " + name +
           "\n  labels:\n    kubernetes.io/hostname: " + name +
           "\n    topology.kubernetes.io/zone: " + zone + "\nstatus:\n  allocatable: {cpu: \"" +
           cpu +
           "\", memory: 64Gi, pods: \"110\"}\n"
           "  capacity: {cpu: \"" +
           cpu + "\", memory: 64Gi, pods: \"110\"}\n---\n";
  };
  node("a-1", "zone-a", "64");
  node("a-2", "zone-a", "64");
  node("b-1", "zone-b", "16");
  node("c-1", "zone-c", "16");
  return out;
}

// `replicas` pods of one ReplicaSet (as its Deployment would create them), with `extra_spec`
// (indented by four spaces) added to each pod's spec.
std::string Replicas(const std::string& app, int replicas, const std::string& extra_spec) {
  std::string out;
  for (int i = 0; i < replicas; ++i) {
    out += "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + app + "-" + std::to_string(i) +
           "\n  namespace: default\n  labels: {app: " + app +
           "}\n"
           "  ownerReferences:\n  - {apiVersion: apps/v1, kind: ReplicaSet, name: " +
           app + "-rs, uid: " + app +
           "-rs-uid, controller: true}\n"
           "spec:\n  containers:\n  - name: main\n"
           "    resources: {requests: {cpu: \"1\", memory: 1Gi}}\n" +
           extra_spec + "---\n";
  }
  return out;
}

struct Result {
  std::map<std::string, int> per_zone;
  std::map<std::string, int> per_node;
  int unschedulable = 0;
  std::vector<std::string> reasons;
};

Result Simulate(const std::string& pods_yaml) {
  Workload w;
  common::Status s = AppendManifests(Nodes() + pods_yaml, "test.yaml", w);
  EXPECT_TRUE(s.ok()) << s.ToString();
  static const common::FakeClock wall;
  SimOptions opts;
  opts.check_invariants = true;
  auto sim = Simulator::Create(SimulationDefaultConfig(), {plugins::InTreeRegistry(), wall}, opts);
  EXPECT_TRUE(sim.ok()) << sim.status().ToString();
  Result r;
  if (!sim.ok()) return r;
  s = (*sim)->Run(w);
  EXPECT_TRUE(s.ok()) << s.ToString();
  for (const PodOutcome& o : (*sim)->outcomes()) {
    if (o.state != PodState::kScheduled) {
      ++r.unschedulable;
      r.reasons.insert(r.reasons.end(), o.reasons.begin(), o.reasons.end());
      continue;
    }
    ++r.per_node[o.node];
    ++r.per_zone[std::string("zone-") + o.node.substr(0, 1)];
  }
  return r;
}

TEST(SpreadAffinitySimTest, ZoneSpreadDoNotScheduleLandsTwoPerZone) {
  const Result r = Simulate(Replicas("web", 6,
                                     "  topologySpreadConstraints:\n"
                                     "  - maxSkew: 1\n"
                                     "    topologyKey: topology.kubernetes.io/zone\n"
                                     "    whenUnsatisfiable: DoNotSchedule\n"
                                     "    labelSelector: {matchLabels: {app: web}}\n"));
  EXPECT_EQ(r.unschedulable, 0);
  EXPECT_EQ(r.per_zone, (std::map<std::string, int>{{"zone-a", 2}, {"zone-b", 2}, {"zone-c", 2}}));
}

TEST(SpreadAffinitySimTest, WithoutConstraintsOrControllerOneZoneTakesAll) {
  // The control: the same pods without an owner (no default constraints) and no spread
  // constraint are packed by the default profile (GpuFragmentation packs CPU where no GPU is at
  // stake) onto one node, so the test above measures the plugin.
  std::string pods;
  for (int i = 0; i < 6; ++i) {
    pods += "apiVersion: v1\nkind: Pod\nmetadata: {name: web-" + std::to_string(i) +
            ", labels: {app: web}}\nspec:\n  containers:\n  - name: main\n"
            "    resources: {requests: {cpu: \"1\", memory: 1Gi}}\n---\n";
  }
  Result r = Simulate(pods);
  ASSERT_EQ(r.per_zone.size(), 1u);
  EXPECT_EQ(r.per_zone.begin()->second, 6);
}

TEST(SpreadAffinitySimTest, MaxSkewTwoAllowsUnevenZones) {
  const Result r = Simulate(Replicas("web", 6,
                                     "  topologySpreadConstraints:\n"
                                     "  - maxSkew: 2\n"
                                     "    topologyKey: topology.kubernetes.io/zone\n"
                                     "    whenUnsatisfiable: DoNotSchedule\n"
                                     "    labelSelector: {matchLabels: {app: web}}\n"));
  EXPECT_EQ(r.unschedulable, 0);
  int lo = 100;
  int hi = 0;
  for (const auto& [zone, n] : r.per_zone) {
    lo = std::min(lo, n);
    hi = std::max(hi, n);
  }
  EXPECT_EQ(r.per_zone.size(), 3u);
  EXPECT_LE(hi - lo, 2);
}

TEST(SpreadAffinitySimTest, RequiredAntiAffinityOnHostnameOnePerNode) {
  const Result r = Simulate(Replicas("db", 5,
                                     "  affinity:\n    podAntiAffinity:\n"
                                     "      requiredDuringSchedulingIgnoredDuringExecution:\n"
                                     "      - topologyKey: kubernetes.io/hostname\n"
                                     "        labelSelector: {matchLabels: {app: db}}\n"));
  EXPECT_EQ(r.per_node,
            (std::map<std::string, int>{{"a-1", 1}, {"a-2", 1}, {"b-1", 1}, {"c-1", 1}}));
  EXPECT_EQ(r.unschedulable, 1);
  EXPECT_EQ(r.reasons, std::vector<std::string>{"node(s) didn't match pod anti-affinity rules"});
}

TEST(SpreadAffinitySimTest, DataProcessorPreferredAntiAffinitySpreadsOverNodes) {
  // The seed's data-processor Deployment: preferred anti-affinity (weight 100) on hostname.
  const Result r = Simulate(Replicas("data-processor", 4,
                                     "  affinity:\n    podAntiAffinity:\n"
                                     "      preferredDuringSchedulingIgnoredDuringExecution:\n"
                                     "      - weight: 100\n        podAffinityTerm:\n"
                                     "          topologyKey: kubernetes.io/hostname\n"
                                     "          labelSelector:\n"
                                     "            matchLabels: {app: data-processor}\n"));
  EXPECT_EQ(r.unschedulable, 0);
  EXPECT_EQ(r.per_node,
            (std::map<std::string, int>{{"a-1", 1}, {"a-2", 1}, {"b-1", 1}, {"c-1", 1}}));
}

}  // namespace
}  // namespace gpusched::sim
