// SPDX-License-Identifier: Apache-2.0
// Extended resources backed by DRA (KEP-5004), as a property over random mixed clusters run
// through the simulator with the default profile: DRA-only nodes (a slice of 1-8 GPUs), nodes
// with the device plugin (allocatable nvidia.com/gpu), nodes with both, and plain pods asking for
// nvidia.com/gpu (or the class's implicit name) in their containers and init containers. After
// every run:
//   - the DRA view's and the cluster ledger's invariants hold (no device in two claims, no node
//     over its allocatable);
//   - a pod bound to a node that advertises its resource has no claim; one bound to a node that
//     does not has exactly one claim, owned by it, annotated, allocated with the devices its
//     requests ask for (BuildExtendedResourceRequests), all of that node's pool, reserved for it
//     and named in its status.extendedResourceClaimStatus;
//   - completeness (the oracle): a pod left pending fits on no node, neither in the free device
//     plugin GPUs nor in the free devices of the node's slice. Every pod has the same priority
//     and nothing leaves, so free room only shrinks: a pod that fits nowhere at the end fit
//     nowhere when it was last tried.
// Cases: GPUSCHED_EXTENDED_CASES (default 1000).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "src/api/dra.h"
#include "src/common/clock.h"
#include "src/common/random.h"
#include "src/plugins/dynamic_resources/extended_resources.h"
#include "src/plugins/in_tree_registry.h"
#include "src/sim/simulator.h"
#include "src/sim/workload.h"

namespace gpusched::sim {
namespace {

struct NodeSpec {
  std::string name;
  int64_t plugin_gpus = 0;  // allocatable nvidia.com/gpu
  int64_t dra_gpus = 0;     // devices in its slice
};

struct PodSpec {
  std::string name;
  std::vector<int64_t> init;  // nvidia.com/gpu of each init container (0: none)
  std::vector<int64_t> main;  // of each container
};

struct Case {
  std::vector<NodeSpec> nodes;
  std::vector<PodSpec> pods;
  std::string resource;  // what the pods ask for
};

Case Generate(common::Random& rng) {
  Case c;
  c.resource =
      rng.Uniform(5) == 0 ? "deviceclass.resource.kubernetes.io/gpu.nvidia.com" : "nvidia.com/gpu";
  const int nodes = 1 + static_cast<int>(rng.Uniform(5));
  for (int i = 0; i < nodes; ++i) {
    NodeSpec n{"n" + std::to_string(i)};
    switch (rng.Uniform(4)) {
      case 0: n.plugin_gpus = 1 + static_cast<int64_t>(rng.Uniform(8)); break;
      case 1:  // both: the device plugin's resource is used
        n.plugin_gpus = 1 + static_cast<int64_t>(rng.Uniform(8));
        n.dra_gpus = 1 + static_cast<int64_t>(rng.Uniform(8));
        break;
      default: n.dra_gpus = 1 + static_cast<int64_t>(rng.Uniform(8)); break;
    }
    c.nodes.push_back(n);
  }
  const int pods = 1 + static_cast<int>(rng.Uniform(14));
  for (int i = 0; i < pods; ++i) {
    PodSpec p{"p" + std::to_string(i)};
    if (rng.Uniform(4) == 0) p.init.push_back(static_cast<int64_t>(rng.Uniform(4)));
    const int containers = 1 + static_cast<int>(rng.Uniform(2));
    for (int k = 0; k < containers; ++k) p.main.push_back(static_cast<int64_t>(rng.Uniform(4)));
    if (p.main[0] == 0) p.main[0] = 1;
    c.pods.push_back(p);
  }
  return c;
}

std::string Containers(const std::string& key, const std::vector<int64_t>& gpus,
                       const std::string& resource) {
  if (gpus.empty()) return "";
  std::string out = "  " + key + ":\n";
  for (size_t i = 0; i < gpus.size(); ++i) {
    out += "  - name: " + key.substr(0, 4) + std::to_string(i) + "\n    image: x\n";
    out += "    resources: {requests: {cpu: 100m";
    if (gpus[i] > 0) out += ", " + resource + ": " + std::to_string(gpus[i]);
    out += "}, limits: {";
    if (gpus[i] > 0) out += resource + ": " + std::to_string(gpus[i]);
    out += "}}\n";
  }
  return out;
}

std::string Manifests(const Case& c) {
  std::string y = R"(apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu.nvidia.com}
spec:
  selectors: [{cel: {expression: "device.driver == 'gpu.nvidia.com'"}}]
  extendedResourceName: nvidia.com/gpu
)";
  for (const NodeSpec& n : c.nodes) {
    y += "---\napiVersion: v1\nkind: Node\nmetadata: {name: " + n.name + "}\n";
    y += "status: {allocatable: {cpu: \"64\", memory: 256Gi, pods: \"110\"";
    if (n.plugin_gpus > 0) y += ", nvidia.com/gpu: \"" + std::to_string(n.plugin_gpus) + "\"";
    y += "}}\n";
    if (n.dra_gpus == 0) continue;
    y += "---\napiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: " + n.name +
         "-gpus}\nspec:\n  driver: gpu.nvidia.com\n  nodeName: " + n.name +
         "\n  pool: {name: " + n.name + ", generation: 1, resourceSliceCount: 1}\n  devices:\n";
    for (int64_t g = 0; g < n.dra_gpus; ++g) y += "  - {name: gpu-" + std::to_string(g) + "}\n";
  }
  for (const PodSpec& p : c.pods) {
    y += "---\napiVersion: v1\nkind: Pod\nmetadata: {name: " + p.name + ", namespace: ml}\nspec:\n";
    y += Containers("initContainers", p.init, c.resource);
    y += Containers("containers", p.main, c.resource);
  }
  return y;
}

// The devices a pod's claim asks for, and what the device plugin would charge (pod.requests).
int64_t ClaimDevices(const api::Pod& pod, const std::string& resource) {
  const std::vector<plugins::dynamic_resources::BackedResource> backed = {
      {common::Intern(resource), "gpu.nvidia.com"}};
  int64_t n = 0;
  for (const api::DeviceRequest& r :
       plugins::dynamic_resources::BuildExtendedResourceRequests(pod, backed).requests) {
    n += r.exactly->count;
  }
  return n;
}

bool IsExtendedClaimOf(const api::ResourceClaim& claim, const api::Pod& pod) {
  const std::string* a = claim.meta.Annotation(api::kExtendedResourceClaimAnnotation);
  if (a == nullptr || *a != "true") return false;
  for (const api::OwnerReference& r : claim.meta.owner_references) {
    if (r.controller && r.uid == pod.meta.uid) return true;
  }
  return false;
}

struct Tally {
  int64_t by_claim = 0;   // pods bound with a claim the scheduler made
  int64_t by_plugin = 0;  // pods bound to a device-plugin node
  int64_t pending = 0;
};

void CheckCase(const Case& c, const std::string& trace, Tally& tally) {
  SCOPED_TRACE(trace);
  common::FakeClock clock;
  auto created = Simulator::Create(SimulationDefaultConfig(), {plugins::InTreeRegistry(), clock},
                                   SimOptions{.check_invariants = true});
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  Simulator& sim = **created;
  Workload w;
  ASSERT_TRUE(AppendManifests(Manifests(c), "case.yaml", w).ok());
  ASSERT_TRUE(sim.Run(w).ok());
  ASSERT_TRUE(sim.dra().CheckInvariants().ok()) << sim.dra().CheckInvariants().ToString();
  ASSERT_TRUE(sim.cluster().LedgerStatus().ok()) << sim.cluster().LedgerStatus().ToString();

  const common::Atom resource = common::Intern(c.resource);
  const bool plugin_serves = c.resource == "nvidia.com/gpu";
  std::map<std::string, bool> advertises;  // by node: the device plugin serves the resource
  std::map<std::string, int64_t> plugin_free;
  std::map<std::string, int64_t> dra_free;
  for (const NodeSpec& n : c.nodes) {
    advertises[n.name] = plugin_serves && n.plugin_gpus > 0;
    plugin_free[n.name] = plugin_serves ? n.plugin_gpus : 0;
    dra_free[n.name] = n.dra_gpus;
  }
  const std::vector<api::ResourceClaimPtr> claims = sim.cluster().Claims();
  const auto statuses = sim.cluster().ExtendedResourceClaimStatuses();
  std::vector<api::PodPtr> pending;
  for (const PodSpec& p : c.pods) {
    const api::PodPtr pod = sim.cluster().GetPod("sim:ml/" + p.name);
    ASSERT_NE(pod, nullptr);
    std::vector<api::ResourceClaimPtr> own;
    for (const api::ResourceClaimPtr& claim : claims) {
      if (IsExtendedClaimOf(*claim, *pod)) own.push_back(claim);
    }
    if (pod->node_name.empty()) {
      EXPECT_TRUE(own.empty()) << p.name << " is pending with a claim";
      pending.push_back(pod);
      ++tally.pending;
      continue;
    }
    if (advertises[pod->node_name]) {
      EXPECT_TRUE(own.empty()) << p.name << " on a device-plugin node has a claim";
      plugin_free[pod->node_name] -= pod->requests.Get(resource);
      ++tally.by_plugin;
      continue;
    }
    ASSERT_EQ(own.size(), 1u) << p.name << " on " << pod->node_name;
    const api::ResourceClaim& claim = *own[0];
    ASSERT_TRUE(claim.allocation.has_value()) << p.name;
    EXPECT_EQ(static_cast<int64_t>(claim.allocation->devices.size()),
              ClaimDevices(*pod, c.resource))
        << p.name;
    for (const api::DeviceResult& r : claim.allocation->devices) {
      EXPECT_EQ(r.pool, pod->node_name) << p.name;
    }
    ASSERT_EQ(claim.reserved_for.size(), 1u);
    EXPECT_EQ(claim.reserved_for[0].uid, pod->meta.uid);
    auto st = statuses.find(pod->meta.uid);
    ASSERT_NE(st, statuses.end()) << p.name << " has no extendedResourceClaimStatus";
    EXPECT_EQ(st->second.resource_claim_name, claim.meta.name);
    dra_free[pod->node_name] -= static_cast<int64_t>(claim.allocation->devices.size());
    ++tally.by_claim;
  }
  for (const auto& [node, free] : plugin_free) EXPECT_GE(free, 0) << node;
  for (const auto& [node, free] : dra_free) EXPECT_GE(free, 0) << node;
  for (const api::PodPtr& pod : pending) {
    for (const NodeSpec& n : c.nodes) {
      if (advertises[n.name]) {
        EXPECT_LT(plugin_free[n.name], pod->requests.Get(resource))
            << pod->meta.name << " pending but fits " << n.name << "'s device plugin GPUs";
      } else {
        EXPECT_LT(dra_free[n.name], ClaimDevices(*pod, c.resource))
            << pod->meta.name << " pending but fits " << n.name << "'s DRA GPUs";
      }
    }
  }
}

TEST(ExtendedResourcesPropertyTest, ClaimsAreValidAndNoPendingPodFits) {
  const char* env = std::getenv("GPUSCHED_EXTENDED_CASES");
  const int cases = env != nullptr ? std::atoi(env) : 1000;
  common::Random rng(0xe47e);
  Tally tally;
  for (int i = 0; i < cases; ++i) {
    const Case c = Generate(rng);
    CheckCase(c, "case " + std::to_string(i) + ":\n" + Manifests(c), tally);
    if (::testing::Test::HasFailure()) break;
  }
  std::printf("%d cases: %lld pods bound with a claim, %lld by the device plugin, %lld pending\n",
              cases, static_cast<long long>(tally.by_claim),
              static_cast<long long>(tally.by_plugin), static_cast<long long>(tally.pending));
}

}  // namespace
}  // namespace gpusched::sim
