// SPDX-License-Identifier: Apache-2.0
// The network-locality acceptance test (issue #7): on both built-in microservice examples,
// gpusched's locality profile (deploy/config/network-locality.yaml) cuts the cross-zone traffic
// cost by at least 50 % against the default-like profile (deploy/config/network-default-like.yaml:
// LeastAllocated + zone spread), while every multi-replica service still spans >= 2 zones.
// Both profiles are the checked-in files, read from GPUSCHED_SOURCE_DIR.
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "src/common/clock.h"
#include "src/config/config.h"
#include "src/framework/registry.h"
#include "src/plugins/in_tree_registry.h"
#include "src/sim/microservices.h"
#include "src/sim/simulator.h"
#include "src/sim/traffic_report.h"
#include "src/sim/workload.h"

namespace gpusched::sim {
namespace {

std::string SourceDir() {
  const char* dir = std::getenv("GPUSCHED_SOURCE_DIR");
  return dir ? dir : ".";
}

config::SchedulerConfig LoadProfile(const std::string& file) {
  std::string path = SourceDir() + "/deploy/config/" + file;
  auto text = ReadFile(path);
  EXPECT_TRUE(text.ok()) << text.status().ToString();
  if (!text.ok()) return SimulationDefaultConfig();
  std::vector<std::string> warnings;
  auto c = config::ParseSchedulerConfig(*text, path, &warnings);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return c.ok() ? *c : SimulationDefaultConfig();
}

TrafficReport RunProfile(const Workload& w, const config::SchedulerConfig& config, uint64_t seed) {
  framework::Registry registry;
  EXPECT_TRUE(plugins::RegisterInTreePlugins(registry).ok());
  common::FakeClock wall;
  SimOptions opts;
  opts.seed = seed;
  opts.check_invariants = true;
  auto sim = Simulator::Create(config, {registry, wall}, opts);
  EXPECT_TRUE(sim.ok()) << sim.status().ToString();
  if (!sim.ok()) return {};
  EXPECT_TRUE((*sim)->Run(w).ok());
  SimStats stats = (*sim)->Stats();
  EXPECT_EQ(stats.scheduled + stats.pre_bound, stats.pods) << "every pod must be placed";
  return BuildTrafficReport(**sim);
}

TEST(NetworkLocalitySimTest, LocalityHalvesCrossZoneCostAndKeepsZoneSpread) {
  const config::SchedulerConfig baseline = LoadProfile("network-default-like.yaml");
  const config::SchedulerConfig locality = LoadProfile("network-locality.yaml");
  for (const std::string& example : MicroserviceExampleNames()) {
    auto w = MicroserviceExample(example);
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    ASSERT_TRUE(HasTrafficDeclarations(*w));
    for (uint64_t seed : {1, 42, 7}) {
      SCOPED_TRACE(example + " seed " + std::to_string(seed));
      TrafficReport base = RunProfile(*w, baseline, seed);
      TrafficReport loc = RunProfile(*w, locality, seed);
      EXPECT_TRUE(base.summary.errors.empty());
      EXPECT_GT(base.summary.total_mbps, 0);
      EXPECT_DOUBLE_EQ(base.summary.total_mbps, loc.summary.total_mbps);
      EXPECT_GT(base.cross_zone_dollars_per_month, 0);
      EXPECT_LE(loc.cross_zone_dollars_per_month, 0.5 * base.cross_zone_dollars_per_month)
          << "default-like $" << base.cross_zone_dollars_per_month << "/month, locality $"
          << loc.cross_zone_dollars_per_month << "/month";
      EXPECT_GE(base.min_zones_multi_replica, 2);
      EXPECT_GE(loc.min_zones_multi_replica, 2);
      for (const WorkloadSpan& s : loc.spans) {
        if (s.replicas >= 2) {
          EXPECT_GE(s.zones, 2) << s.workload;
        }
      }
    }
  }
}

// The default profile (no config: what `gpusched simulate --example microservices` runs) has
// NetworkLocality too: at least 50 % below the default-like profile (the default profile before
// issue #16), every multi-replica service still in at least two zones.
TEST(NetworkLocalitySimTest, TheDefaultProfileHalvesCrossZoneCostToo) {
  const config::SchedulerConfig baseline = LoadProfile("network-default-like.yaml");
  for (const std::string& example : MicroserviceExampleNames()) {
    auto w = MicroserviceExample(example);
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    for (uint64_t seed : {1, 42, 7}) {
      SCOPED_TRACE(example + " seed " + std::to_string(seed));
      TrafficReport base = RunProfile(*w, baseline, seed);
      TrafficReport def = RunProfile(*w, SimulationDefaultConfig(), seed);
      EXPECT_GT(base.cross_zone_dollars_per_month, 0);
      EXPECT_LE(def.cross_zone_dollars_per_month, 0.5 * base.cross_zone_dollars_per_month)
          << "default-like $" << base.cross_zone_dollars_per_month << "/month, default $"
          << def.cross_zone_dollars_per_month << "/month";
      for (const WorkloadSpan& s : def.spans) {
        if (s.replicas >= 2) {
          EXPECT_GE(s.zones, 2) << s.workload;
        }
      }
    }
  }
}

// The simulator reads AppGroups and NetworkTopologies from its input, as `gpusched scheduler`
// reads them from the cluster: six replicas of p1, which depends on p2 (placed in us-east-1) with
// maxNetworkCost 15, all land in us-east-1, where NetworkLocality's Filter (AppGroup mode) keeps
// them; the west region costs 20. Without the AppGroup the profile's zone spread would put some
// of them in the west.
TEST(NetworkLocalitySimTest, AppGroupsAndTopologiesInTheInputDriveThePlacement) {
  std::string items;
  auto add = [&](const std::string& object) { items += (items.empty() ? "" : ",") + object; };
  add(R"({"apiVersion":"networktopology.diktyo.x-k8s.io/v1alpha1","kind":"NetworkTopology",
    "metadata":{"name":"nt-default"},
    "spec":{"configmapName":"netperf","weights":[{"name":"UserDefined","topologyList":[
      {"topologyKey":"topology.kubernetes.io/region","originList":[
        {"origin":"us-west-1","costList":[{"destination":"us-east-1","networkCost":20}]},
        {"origin":"us-east-1","costList":[{"destination":"us-west-1","networkCost":20}]}]},
      {"topologyKey":"topology.kubernetes.io/zone","originList":[
        {"origin":"Z1","costList":[{"destination":"Z2","networkCost":5}]},
        {"origin":"Z2","costList":[{"destination":"Z1","networkCost":5}]},
        {"origin":"Z3","costList":[{"destination":"Z4","networkCost":10}]},
        {"origin":"Z4","costList":[{"destination":"Z3","networkCost":10}]}]}]}]}})");
  add(R"({"apiVersion":"appgroup.diktyo.x-k8s.io/v1alpha1","kind":"AppGroup",
    "metadata":{"name":"basic"},
    "spec":{"numMembers":2,"workloads":[
      {"workload":{"kind":"Deployment","name":"p1","selector":"p1","apiVersion":"apps/v1",
                   "namespace":"default"},
       "dependencies":[{"workload":{"kind":"Deployment","name":"p2","selector":"p2",
                        "apiVersion":"apps/v1","namespace":"default"},"maxNetworkCost":15}]},
      {"workload":{"kind":"Deployment","name":"p2","selector":"p2","apiVersion":"apps/v1",
                   "namespace":"default"}}]}})");
  const char* zones[][2] = {
      {"us-west-1", "Z1"}, {"us-west-1", "Z2"}, {"us-east-1", "Z3"}, {"us-east-1", "Z4"}};
  for (int i = 0; i < 8; ++i) {
    add(R"({"apiVersion":"v1","kind":"Node","metadata":{"name":"n-)" + std::to_string(i + 1) +
        R"(","labels":{"topology.kubernetes.io/region":")" + zones[i / 2][0] +
        R"(","topology.kubernetes.io/zone":")" + zones[i / 2][1] +
        R"("}},"status":{"allocatable":{"cpu":"8","memory":"16Gi","pods":"110"}}})");
  }
  auto pod = [](const std::string& name, const std::string& workload, const std::string& node) {
    return R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")" + name +
           R"(","namespace":"default","labels":{"appgroup.diktyo.x-k8s.io":"basic",)" +
           R"("appgroup.diktyo.x-k8s.io.workload":")" + workload + R"("}},"spec":{)" +
           (node.empty() ? "" : R"("nodeName":")" + node + R"(",)") +
           R"("containers":[{"name":"c","resources":{"requests":{"cpu":"1"}}}]}})";
  };
  add(pod("p2-0", "p2", "n-5"));
  for (int i = 0; i < 6; ++i) add(pod("p1-" + std::to_string(i), "p1", ""));
  Workload w;
  ASSERT_TRUE(AppendManifests(R"({"apiVersion":"v1","kind":"List","items":[)" + items + "]}",
                              "appgroup.json", w)
                  .ok());
  EXPECT_TRUE(w.warnings.empty()) << w.warnings.front();
  EXPECT_TRUE(w.rejected.empty()) << w.rejected.front().ToString();
  ASSERT_EQ(w.network.size(), 2u);

  framework::Registry registry;
  ASSERT_TRUE(plugins::RegisterInTreePlugins(registry).ok());
  common::FakeClock wall;
  auto sim = Simulator::Create(LoadProfile("network-locality.yaml"), {registry, wall}, {});
  ASSERT_TRUE(sim.ok()) << sim.status().ToString();
  ASSERT_TRUE((*sim)->Run(w).ok());
  const framework::NetworkView* network = (*sim)->scheduler().network();
  ASSERT_NE(network, nullptr);
  EXPECT_NE(network->Current()->FindAppGroup("default", "basic"), nullptr);
  int placed = 0;
  for (const PodOutcome& o : (*sim)->outcomes()) {
    if (o.pod->meta.name.rfind("p1-", 0) != 0) continue;
    ++placed;
    EXPECT_TRUE(o.node == "n-5" || o.node == "n-6" || o.node == "n-7" || o.node == "n-8")
        << o.pod->meta.name << " on " << o.node;
  }
  EXPECT_EQ(placed, 6);
}

TEST(NetworkLocalitySimTest, ExamplesRoundTripAndUnknownNamesFail) {
  for (const std::string& example : MicroserviceExampleNames()) {
    auto w = MicroserviceExample(example);
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    EXPECT_GE(w->nodes.size(), 12u);
    EXPECT_TRUE(w->warnings.empty());
  }
  auto bad = MicroserviceExample("nope");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("nope"), std::string_view::npos);
}

}  // namespace
}  // namespace gpusched::sim
