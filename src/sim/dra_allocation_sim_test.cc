// SPDX-License-Identifier: Apache-2.0
// DRA through the default profile in the simulator (issue #23): docs/examples/dra scheduled, the
// DynamicResources plugin's allocations written through SimCluster, a shared claim reserved for
// two pods and deallocated when both leave, a generated claim deleted with its pod.
#include <gtest/gtest.h>

#include <cstdlib>
#include <initializer_list>
#include <map>
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

TEST(DraAllocationSimTest, SharedGpuCapacityTakesTwoOfThreePods) {
  // docs/examples/dra/shared-gpu.yaml: one 80Gi GPU shared by capacity (KEP-5075); three pods
  // ask 30Gi (32Gi after the policy's step) and 25 % of compute.
  DraAllocationSim fixture;
  ASSERT_NO_FATAL_FAILURE(fixture.Start());
  Simulator& s = *fixture.sim;
  ASSERT_TRUE(s.Run(DocsExample({"docs/examples/dra/shared-gpu.yaml"})).ok());
  EXPECT_EQ(s.Stats().scheduled, 2);
  EXPECT_EQ(s.Stats().unschedulable, 1);
  std::set<std::string> shares;
  for (const api::ResourceClaimPtr& c : s.cluster().Claims()) {
    if (!c->allocation) continue;
    ASSERT_EQ(c->allocation->devices.size(), 1u);
    const api::DeviceResult& d = c->allocation->devices[0];
    EXPECT_EQ(d.device, "gpu-0");
    shares.insert(d.share_id);
    ASSERT_EQ(d.consumed_capacity.size(), 2u);
    EXPECT_EQ(d.consumed_capacity[0].second.Value(), 25);                 // compute
    EXPECT_EQ(d.consumed_capacity[1].second.Value(), int64_t{32} << 30);  // memory
  }
  EXPECT_EQ(shares.size(), 2u);
  EXPECT_EQ(s.dra().usage()->shares[0], 2u);
  EXPECT_TRUE(s.dra().CheckInvariants().ok()) << s.dra().CheckInvariants().ToString();
}

// A ResourceClaimTemplate and a pod asking for one MIG partition of `profile`, named `name`.
std::string MigPod(const std::string& name, const std::string& profile) {
  return "apiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\nmetadata: {name: " + name +
         ", namespace: ml}\nspec:\n  spec:\n    devices:\n      requests:\n      - name: mig\n"
         "        exactly:\n          deviceClassName: mig.nvidia.com\n          selectors:\n"
         "          - cel: {expression: \"device.attributes['gpu.nvidia.com'].profile == '" +
         profile + "'\"}\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: " + name +
         ", namespace: ml}\nspec:\n  schedulerName: gpu-scheduler\n  containers:\n  - name: "
         "main\n    resources: {claims: [{name: mig}]}\n  resourceClaims:\n  - {name: mig, "
         "resourceClaimTemplateName: " +
         name + "}\n---\n";
}

TEST(DraAllocationSimTest, SmallMigPartitionsLeaveTheLargeShapesOpen) {
  // mig.yaml's A100, then a 1g.10gb, a 4g.40gb and a 2g.20gb: all three fit only if the 1g slice
  // goes where it rules out the fewest other partitions (memory slice 6; slice 0, the first in
  // the slice, would rule out the 4g.40gb), and the 2g where the 1g and 4g leave room.
  DraAllocationSim fixture;
  ASSERT_NO_FATAL_FAILURE(fixture.Start());
  Simulator& s = *fixture.sim;
  Workload w = DocsExample({"docs/examples/dra/mig.yaml"});
  w.pods.clear();
  ASSERT_TRUE(AppendManifests(MigPod("small", "1g.10gb") + MigPod("large", "4g.40gb") +
                                  MigPod("medium", "2g.20gb"),
                              "mig-pods", w)
                  .ok());
  ASSERT_TRUE(s.Run(w).ok());
  EXPECT_EQ(s.Stats().scheduled, 3);
  std::map<std::string, std::string> device_of;
  for (const api::ResourceClaimPtr& c : s.cluster().Claims()) {
    if (!c->allocation) continue;
    for (const api::DeviceResult& d : c->allocation->devices) {
      device_of[c->reserved_for.empty() ? "" : c->reserved_for.front().name] = d.device;
    }
  }
  EXPECT_EQ(device_of, (std::map<std::string, std::string>{{"small", "gpu-0-mig-1g-6"},
                                                           {"large", "gpu-0-mig-4g-0"},
                                                           {"medium", "gpu-0-mig-2g-4"}}));
  EXPECT_TRUE(s.dra().CheckInvariants().ok());
}

}  // namespace
}  // namespace gpusched::sim
