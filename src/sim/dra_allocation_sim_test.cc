// SPDX-License-Identifier: Apache-2.0
// DRA through the default profile in the simulator (issue #23): docs/examples/dra scheduled, the
// DynamicResources plugin's allocations written through SimCluster, a shared claim reserved for
// two pods and deallocated when both leave, a generated claim deleted with its pod.
#include <gtest/gtest.h>

#include <cstdlib>
#include <initializer_list>
#include <memory>
#include <set>
#include <string>
#include <utility>

#include "src/common/clock.h"
#include "src/plugins/in_tree_registry.h"
#include "src/sim/simulator.h"
#include "src/sim/workload.h"

namespace gpusched::sim {
namespace {

Workload DocsExample(std::initializer_list<const char*> files = {
                         "docs/examples/dra/cluster.yaml", "docs/examples/dra/workloads.yaml"}) {
  Workload w;
  for (const char* f : files) {
    const char* root = std::getenv("GPUSCHED_SOURCE_DIR");  // set by ctest
    const std::string path = std::string(root != nullptr ? root : ".") + "/" + f;
    common::StatusOr<std::string> text = ReadFile(path);
    EXPECT_TRUE(text.ok()) << text.status().ToString();
    if (text.ok()) {
      EXPECT_TRUE(AppendManifests(*text, path, w).ok());
    }
  }
  EXPECT_TRUE(w.rejected.empty());
  return w;
}

// The default profile's simulator with invariants checked after every placement.
struct DraAllocationSim {
  void Start() {
    ASSERT_TRUE(plugins::RegisterInTreePlugins(registry).ok());
    auto created = Simulator::Create(SimulationDefaultConfig(), {registry, clock},
                                     SimOptions{.check_invariants = true});
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    sim = std::move(*created);
  }
  framework::Registry registry;
  common::FakeClock clock;
  std::unique_ptr<Simulator> sim;
};

TEST(DraAllocationSimTest, ClaimsAllocatedSharedAndReleased) {
  DraAllocationSim fixture;
  ASSERT_NO_FATAL_FAILURE(fixture.Start());
  Simulator& s = *fixture.sim;
  ASSERT_TRUE(s.Run(DocsExample()).ok());
  EXPECT_EQ(s.Stats().scheduled, 5);
  EXPECT_EQ(s.Stats().unschedulable, 1);  // 8 GPUs of one island: no node has them

  std::set<std::string> used;
  for (const api::ResourceClaimPtr& c : s.cluster().Claims()) {
    if (!c->allocation) continue;
    for (const api::DeviceResult& d : c->allocation->devices) {
      EXPECT_TRUE(used.insert(d.pool + "/" + d.device).second) << "allocated twice: " << d.device;
    }
  }
  EXPECT_EQ(used.size(), 11u);  // 1 + 4 + 4 + 2

  const api::ResourceClaimPtr shared = s.cluster().GetClaim("ml", "team-gpus");
  ASSERT_NE(shared, nullptr);
  ASSERT_TRUE(shared->allocation.has_value());
  ASSERT_EQ(shared->reserved_for.size(), 2u);
  EXPECT_EQ(shared->reserved_for[0].name, "eval-a");
  EXPECT_EQ(shared->reserved_for[1].name, "eval-b");
  // Both pods run where the shared claim's devices are.
  const std::string node = s.cluster().GetPod("sim:ml/eval-a")->node_name;
  EXPECT_EQ(s.cluster().GetPod("sim:ml/eval-b")->node_name, node);
  EXPECT_EQ(shared->allocation->devices[0].pool, node);

  ASSERT_TRUE(s.RemovePod("sim:ml/eval-a").ok());
  EXPECT_TRUE(s.cluster().GetClaim("ml", "team-gpus")->allocation.has_value());
  ASSERT_TRUE(s.RemovePod("sim:ml/eval-b").ok());
  EXPECT_FALSE(s.cluster().GetClaim("ml", "team-gpus")->allocation.has_value());

  const api::PodPtr train = s.cluster().GetPod("sim:ml/train-0");
  ASSERT_NE(train, nullptr);
  const std::string generated = *train->resource_claims->ClaimName(0);
  ASSERT_NE(s.cluster().GetClaim("ml", generated), nullptr);
  ASSERT_TRUE(s.RemovePod("sim:ml/train-0").ok());
  EXPECT_EQ(s.cluster().GetClaim("ml", generated), nullptr);
  EXPECT_EQ(s.dra().GetClaim("ml", generated), nullptr);
}

TEST(DraAllocationSimTest, MigPartitionsNeverOverDrawTheGpu) {
  // Issue #42's case: one A100 80GB published as a counter set and its MIG partitions; three pods
  // ask for 3g.40gb and one for 7g.80gb. The two 3g.40gb placements take the whole GPU.
  DraAllocationSim fixture;
  ASSERT_NO_FATAL_FAILURE(fixture.Start());
  Simulator& s = *fixture.sim;
  ASSERT_TRUE(s.Run(DocsExample({"docs/examples/dra/mig.yaml"})).ok());
  EXPECT_EQ(s.Stats().scheduled, 2);
  EXPECT_EQ(s.Stats().unschedulable, 2);
  std::set<std::string> devices;
  for (const api::ResourceClaimPtr& c : s.cluster().Claims()) {
    if (!c->allocation) continue;
    for (const api::DeviceResult& d : c->allocation->devices) devices.insert(d.device);
  }
  EXPECT_EQ(devices, (std::set<std::string>{"gpu-0-mig-3g-0", "gpu-0-mig-3g-4"}));
  EXPECT_TRUE(s.dra().CheckInvariants().ok());
}

}  // namespace
}  // namespace gpusched::sim
