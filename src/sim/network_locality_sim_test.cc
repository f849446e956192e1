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
