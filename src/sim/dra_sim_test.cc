// SPDX-License-Identifier: Apache-2.0
// Dynamic Resource Allocation in the simulator (issue #23): DeviceClasses, ResourceSlices,
// ResourceClaims and ResourceClaimTemplates in the input (bad ones rejected, the rest simulated);
// SimCluster as the DraWriter and as kube-controller-manager's resourceclaim controller (template
// claims created and owned by their pod, the pod's status.resourceClaimStatuses, a shared claim
// reserved for two pods, deallocation when the pods leave; a native PodGroup's claim, KEP-5729,
// made once and reserved for the PodGroup); a DeviceTaintRule keeping new claims off a device;
// the report's `claims`.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <memory>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "src/api/dra.h"
#include "src/cache/dra_store.h"
#include "src/common/clock.h"
#include "src/events/dra_events.h"
#include "src/plugins/in_tree_registry.h"
#include "src/sim/report.h"
#include "src/sim/sim_cluster.h"
#include "src/sim/simulator.h"
#include "src/sim/workload.h"

namespace gpusched::sim {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// One node with a slice of two GPUs, a DeviceClass, a template and a shared claim.
constexpr std::string_view kCluster = R"(
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "32", memory: 64Gi, pods: "110"}}
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu.nvidia.com}
spec:
  selectors:
  - cel: {expression: "device.driver == 'gpu.nvidia.com'"}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: n1-gpu}
spec:
  driver: gpu.nvidia.com
  nodeName: n1
  pool: {name: n1, generation: 1, resourceSliceCount: 1}
  devices:
  - name: gpu-0
    attributes:
      productName: {string: NVIDIA H100 80GB HBM3}
      cliqueId: {string: "c0"}
    capacity: {memory: {value: 80Gi}}
  - name: gpu-1
    attributes:
      productName: {string: NVIDIA H100 80GB HBM3}
      cliqueId: {string: "c0"}
    capacity: {memory: {value: 80Gi}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: one-gpu, namespace: ml}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly: {deviceClassName: gpu.nvidia.com}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: shared, namespace: ml}
spec:
  devices:
    requests:
    - name: gpu
      exactly: {deviceClassName: gpu.nvidia.com}
)";

std::string Pod(std::string_view name, std::string_view claims) {
  return "---\napiVersion: v1\nkind: Pod\nmetadata: {name: " + std::string(name) +
         ", namespace: ml}\nspec:\n  containers:\n  - name: c\n    resources:\n      claims: "
         "[{name: gpu}]\n  resourceClaims:\n" +
         std::string(claims);
}

Workload Read(const std::string& text) {
  Workload w;
  common::Status s = AppendManifests(text, "dra.yaml", w);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return w;
}

template <typename T>
size_t Count(const Workload& w) {
  size_t n = 0;
  for (const DraObject& o : w.dra) n += std::holds_alternative<T>(o) ? 1 : 0;
  return n;
}

TEST(DraSimInputTest, ReadsTheFourKindsAndRejectsABadObject) {
  Workload w = Read(std::string(kCluster) + R"(
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: bad, namespace: ml}
spec:
  devices:
    requests:
    - name: gpu
      exactly: {deviceClassName: gpu.nvidia.com, allocationMode: Some}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: n2-gpu}
spec:
  driver: gpu.nvidia.com
  nodeName: n2
  pool: {name: n2}
  devices:
  - name: gpu-0
    atributes: {}
)");
  EXPECT_EQ(Count<api::DeviceClassPtr>(w), 1u);
  EXPECT_EQ(Count<api::ResourceSlicePtr>(w), 2u);
  EXPECT_EQ(Count<api::ResourceClaimTemplatePtr>(w), 1u);
  EXPECT_EQ(Count<api::ResourceClaimPtr>(w), 1u);
  ASSERT_EQ(w.rejected.size(), 1u);
  EXPECT_EQ(w.rejected[0].ToString(),
            "dra.yaml: document 6: ResourceClaim ml/bad: spec.devices.requests[0].exactly."
            "allocationMode: invalid value \"Some\" (want ExactCount or All)");
  bool warned = false;
  for (const std::string& warning : w.warnings) {
    if (warning.find("document 7: ResourceSlice n2-gpu: spec.devices[0].atributes: unknown field "
                     "(did you mean \"attributes\"?)") != std::string::npos) {
      warned = true;
    }
    EXPECT_THAT(warning, Not(HasSubstr("skipped")));
  }
  EXPECT_TRUE(warned) << ::testing::PrintToString(w.warnings);
}

std::unique_ptr<Simulator> NewSimulator(const common::Clock& clock) {
  auto sim = Simulator::Create(SimulationDefaultConfig(), {plugins::InTreeRegistry(), clock},
                               SimOptions{.check_invariants = true});
  EXPECT_TRUE(sim.ok()) << sim.status().ToString();
  return sim.ok() ? std::move(*sim) : nullptr;
}

TEST(DraSimControllerTest, TemplateClaimCreatedOwnedByThePodAndDeletedWithIt) {
  common::FakeClock clock;
  std::unique_ptr<Simulator> sim = NewSimulator(clock);
  ASSERT_NE(sim, nullptr);
  Workload w = Read(std::string(kCluster) +
                    Pod("train", "  - {name: gpu, resourceClaimTemplateName: one-gpu}\n") +
                    Pod("lost", "  - {name: gpu, resourceClaimTemplateName: missing}\n"));
  ASSERT_TRUE(sim->Run(w).ok());
  EXPECT_EQ(sim->scheduler().dra(), &sim->dra());  // the simulated handle's

  const api::PodPtr train = sim->cluster().GetPod("sim:ml/train");
  ASSERT_NE(train, nullptr);
  ASSERT_NE(train->resource_claims, nullptr);
  ASSERT_EQ(train->resource_claims->statuses.size(), 1u);
  const std::string generated = train->resource_claims->statuses[0].second;
  EXPECT_EQ(train->resource_claims->statuses[0].first, "gpu");
  ASSERT_EQ(generated.size(), std::string("train-gpu-").size() + 5) << generated;
  EXPECT_TRUE(generated.starts_with("train-gpu-")) << generated;
  EXPECT_EQ(generated.find_first_not_of("bcdfghjklmnpqrstvwxz2456789", 10), std::string::npos)
      << generated;
  EXPECT_EQ(train->resource_claims->ClaimName(0), generated);

  const api::ResourceClaimPtr claim = sim->cluster().GetClaim("ml", generated);
  ASSERT_NE(claim, nullptr);
  ASSERT_EQ(claim->meta.owner_references.size(), 1u);
  EXPECT_EQ(claim->meta.owner_references[0].kind, "Pod");
  EXPECT_EQ(claim->meta.owner_references[0].name, "train");
  EXPECT_EQ(claim->meta.owner_references[0].uid, "sim:ml/train");
  EXPECT_TRUE(claim->meta.owner_references[0].controller);
  ASSERT_EQ(claim->spec.requests.size(), 1u);
  EXPECT_EQ(claim->spec.requests[0].exactly->device_class, "gpu.nvidia.com");
  EXPECT_EQ(sim->dra().GetClaim("ml", generated), claim);  // the view is fed

  // The same input gives the same name.
  std::unique_ptr<Simulator> again = NewSimulator(clock);
  ASSERT_TRUE(again->Run(w).ok());
  EXPECT_NE(again->cluster().GetClaim("ml", generated), nullptr);

  // A template that does not exist: no claim, no status (the controller would retry).
  const api::PodPtr lost = sim->cluster().GetPod("sim:ml/lost");
  ASSERT_NE(lost, nullptr);
  EXPECT_TRUE(lost->resource_claims->statuses.empty());
  EXPECT_EQ(sim->cluster().Counters().claims_created, 1);

  // The pod leaves: its generated claim goes with it.
  ASSERT_TRUE(sim->RemovePod("sim:ml/train").ok());
  EXPECT_EQ(sim->cluster().GetClaim("ml", generated), nullptr);
  EXPECT_EQ(sim->dra().GetClaim("ml", generated), nullptr);
  EXPECT_EQ(sim->cluster().Counters().claims_deleted, 1);
  EXPECT_NE(sim->cluster().GetClaim("ml", "shared"), nullptr);
}

api::PodPtr BarePod(std::string_view name) {
  auto p = std::make_shared<api::Pod>();
  p->meta.name = std::string(name);
  p->meta.namespace_ = "ml";
  p->meta.uid = "uid-" + std::string(name);
  auto claims = std::make_shared<api::PodResourceClaims>();
  claims->claims.push_back(api::PodClaimSource{"gpu", "shared", ""});
  p->resource_claims = std::move(claims);
  return p;
}

// The scheduler's informer side for a bare SimCluster: its DRA changes into a view, counted.
class DraFeed final : public kube::ClusterEventHandler {
 public:
  explicit DraFeed(cache::DraStore& view) : view_(view) {}
  void OnNodeAdd(api::NodePtr) override {}
  void OnNodeUpdate(api::NodePtr, api::NodePtr) override {}
  void OnNodeDelete(api::NodePtr) override {}
  void OnPodAdd(api::PodPtr) override {}
  void OnPodUpdate(api::PodPtr, api::PodPtr) override {}
  void OnPodDelete(api::PodPtr) override {}
  void OnDraAdd(const kube::DraObject& o) override { Apply(nullptr, &o); }
  void OnDraUpdate(const kube::DraObject& old, const kube::DraObject& o) override {
    Apply(&old, &o);
  }
  void OnDraDelete(const kube::DraObject& o) override { Apply(&o, nullptr); }
  int claim_events = 0;

 private:
  void Apply(const kube::DraObject* old_obj, const kube::DraObject* obj) {
    const kube::DraObject& any = obj != nullptr ? *obj : *old_obj;
    claim_events += std::holds_alternative<api::ResourceClaimPtr>(any) ? 1 : 0;
    events::ApplyDraEvent(view_, old_obj, obj);
  }
  cache::DraStore& view_;
};

TEST(DraSimControllerTest, SharedClaimReservedForTwoPodsIsDeallocatedWhenBothLeave) {
  cache::DraStore view;
  SimCluster cluster;
  DraFeed feed(view);
  cluster.SetHandler(&feed);
  events::ApiDraWriter writer(cluster);
  view.set_writer(&writer);
  const int& claim_events = feed.claim_events;
  for (const DraObject& o : Read(std::string(kCluster)).dra) cluster.AddDra(o);
  ASSERT_TRUE(cluster.CreatePod(BarePod("a")).ok());
  ASSERT_TRUE(cluster.CreatePod(BarePod("b")).ok());

  const api::ResourceClaimPtr read = view.GetClaim("ml", "shared");
  ASSERT_NE(read, nullptr);
  ASSERT_FALSE(read->meta.resource_version.empty());
  api::ResourceClaim update = *read;
  api::AllocationResult alloc;
  alloc.devices.push_back(api::DeviceResult{"gpu", "gpu.nvidia.com", "n1", "gpu-1", false});
  update.allocation = alloc;
  update.reserved_for = {{"pods", "a", "uid-a"}, {"pods", "b", "uid-b"}};
  common::StatusOr<api::ResourceClaimPtr> stored = view.UpdateClaimStatus(update);
  ASSERT_TRUE(stored.ok()) << stored.status().ToString();
  EXPECT_NE((*stored)->meta.resource_version, read->meta.resource_version);
  EXPECT_EQ(view.GetClaim("ml", "shared"), *stored);
  // The device is held in the view's usage.
  const auto index = view.devices();
  const uint32_t gpu1 = index->by_key.at("gpu.nvidia.com/n1/gpu-1");
  EXPECT_EQ(view.usage()->holder[gpu1], *stored);

  // A write from the old version conflicts, as the API server's.
  common::StatusOr<api::ResourceClaimPtr> stale = cluster.UpdateResourceClaimStatus(update);
  ASSERT_FALSE(stale.ok());
  EXPECT_EQ(stale.status().code(), common::StatusCode::kAborted);

  // One pod leaves: the claim stays allocated for the other.
  ASSERT_TRUE(cluster.DeletePod("uid-a").ok());
  api::ResourceClaimPtr now = cluster.GetClaim("ml", "shared");
  ASSERT_TRUE(now->allocation.has_value());
  ASSERT_EQ(now->reserved_for.size(), 1u);
  EXPECT_EQ(now->reserved_for[0].uid, "uid-b");
  EXPECT_NE(view.usage()->holder[gpu1], nullptr);

  // The other leaves too: deallocated, the device free, the claim kept (it is not generated).
  ASSERT_TRUE(cluster.DeletePod("uid-b").ok());
  now = cluster.GetClaim("ml", "shared");
  ASSERT_NE(now, nullptr);
  EXPECT_FALSE(now->allocation.has_value());
  EXPECT_TRUE(now->reserved_for.empty());
  EXPECT_EQ(view.usage()->holder[gpu1], nullptr);
  EXPECT_EQ(view.GetClaim("ml", "shared"), now);
  EXPECT_EQ(cluster.Counters().claims_deallocated, 1);
  EXPECT_EQ(cluster.Counters().claim_status_updates, 1);
  EXPECT_EQ(claim_events, 4);  // added, status written, a removed, b removed
}

// A NoSchedule DeviceTaintRule on gpu-0 (KEP-5055): the first pod's claim gets gpu-1, the second
// waits, and a pod whose request tolerates the taint gets gpu-0.
TEST(DraSimTaintRuleTest, ANoScheduleRuleKeepsNewClaimsOffItsDeviceUnlessTolerated) {
  common::FakeClock clock;
  std::unique_ptr<Simulator> sim = NewSimulator(clock);
  ASSERT_NE(sim, nullptr);
  Workload w = Read(std::string(kCluster) + R"(
---
apiVersion: resource.k8s.io/v1
kind: DeviceTaintRule
metadata: {name: gpu-0-xid-79}
spec:
  deviceSelector: {driver: gpu.nvidia.com, pool: n1, device: gpu-0}
  taint: {key: example.com/xid, value: "79", effect: NoSchedule}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: tolerant, namespace: ml}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly:
          deviceClassName: gpu.nvidia.com
          tolerations: [{key: example.com/xid, operator: Exists, effect: NoSchedule}]
)" + Pod("a", "  - {name: gpu, resourceClaimTemplateName: one-gpu}\n") +
                    Pod("b", "  - {name: gpu, resourceClaimTemplateName: one-gpu}\n") +
                    Pod("c", "  - {name: gpu, resourceClaimTemplateName: tolerant}\n"));
  EXPECT_EQ(Count<api::DeviceTaintRulePtr>(w), 1u);
  EXPECT_TRUE(w.rejected.empty());
  ASSERT_TRUE(sim->Run(w).ok());
  EXPECT_EQ(sim->Stats().scheduled, 2);
  EXPECT_EQ(sim->Stats().unschedulable, 1);
  auto device_of = [&](const char* pod) -> std::string {
    const api::PodPtr p = sim->cluster().GetPod(std::string("sim:ml/") + pod);
    if (p == nullptr || p->node_name.empty()) return "";
    const api::ResourceClaimPtr c =
        sim->cluster().GetClaim("ml", *p->resource_claims->ClaimName(0));
    return c != nullptr && c->allocation ? c->allocation->devices[0].device : "";
  };
  EXPECT_EQ(device_of("a"), "gpu-1");
  EXPECT_EQ(device_of("b"), "");
  EXPECT_EQ(device_of("c"), "gpu-0");
}

TEST(DraSimReportTest, ClaimsInTheJsonReport) {
  common::FakeClock clock;
  std::unique_ptr<Simulator> sim = NewSimulator(clock);
  ASSERT_NE(sim, nullptr);
  Workload w = Read(std::string(kCluster) + R"(
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: held, namespace: ml, resourceVersion: "5"}
spec:
  devices:
    requests:
    - name: gpus
      exactly: {deviceClassName: gpu.nvidia.com, count: 2}
status:
  allocation:
    devices:
      results:
      - {request: gpus, driver: gpu.nvidia.com, pool: n1, device: gpu-0}
      - {request: gpus, driver: gpu.nvidia.com, pool: n1, device: gpu-1}
    nodeSelector:
      nodeSelectorTerms:
      - matchFields:
        - {key: metadata.name, operator: In, values: [n1]}
)");
  ASSERT_TRUE(sim->Run(w).ok());
  Report report = BuildReport(*sim, "dra.yaml");
  const boost::json::value json = ReportToJson(report);
  EXPECT_EQ(boost::json::serialize(json.at("claims")),
            R"([{"claim":"ml/held","node":"n1","devices":["gpu.nvidia.com/n1/gpu-0",)"
            R"("gpu.nvidia.com/n1/gpu-1"]},{"claim":"ml/shared","node":null,"devices":[]}])");
  // The two DRA GPUs of n1 are counted under their model, both held by ml/held.
  EXPECT_EQ(boost::json::serialize(json.at("gpuModels")),
            R"([{"model":"H100-80GB-HBM3","nodes":1,"gpusTotal":2,"gpusAllocated":2,)"
            R"("milliTotal":2000,"milliAllocated":2000,"draGpusTotal":2,"draGpusAllocated":2}])");
  const std::string text = FormatReportText(report);
  EXPECT_THAT(text, HasSubstr("OF THEM DRA"));
  EXPECT_THAT(text, HasSubstr("Resource claims: 2, allocated 1\n"));
  EXPECT_THAT(text, HasSubstr("ml/held    n1    gpu.nvidia.com/n1/gpu-0,gpu.nvidia.com/n1/gpu-1"));
}

// A member of native PodGroup ml/train: the PodGroup's claim "fabric" and a GPU of its own, both
// from template one-gpu.
std::string TrainMember(std::string_view name) {
  return "---\napiVersion: v1\nkind: Pod\nmetadata: {name: " + std::string(name) +
         ", namespace: ml}\nspec:\n  schedulingGroup: {podGroupName: train}\n  containers:\n"
         "  - name: c\n    resources:\n      claims: [{name: gpu}, {name: fabric}]\n"
         "  resourceClaims:\n  - {name: fabric, resourceClaimTemplateName: one-gpu}\n"
         "  - {name: gpu, resourceClaimTemplateName: one-gpu}\n";
}

TEST(DraSimGangTest, APodGroupsClaimIsMadeOnceReservedForItAndSharedByItsPods) {
  common::FakeClock clock;
  std::unique_ptr<Simulator> sim = NewSimulator(clock);
  ASSERT_NE(sim, nullptr);
  // n1 has 2 GPUs, n2 has 3: the gang needs 3 on one node (1 shared, 1 per member). Packing puts
  // the first member on n1 (it fills it), where the second does not fit: the gang cycle tries
  // again node by node (gang_cycle.cc) and places it on n2.
  Workload w = Read(std::string(kCluster) + R"(
---
apiVersion: v1
kind: Node
metadata: {name: n2}
status: {allocatable: {cpu: "32", memory: 64Gi, pods: "110"}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: n2-gpu}
spec:
  driver: gpu.nvidia.com
  nodeName: n2
  pool: {name: n2, generation: 1, resourceSliceCount: 1}
  devices: [{name: gpu-0}, {name: gpu-1}, {name: gpu-2}]
---
apiVersion: scheduling.k8s.io/v1beta1
kind: PodGroup
metadata: {name: train, namespace: ml, uid: pg-1}
spec:
  schedulingPolicy: {gang: {minCount: 2}}
  resourceClaims:
  - {name: fabric, resourceClaimTemplateName: one-gpu}
)" + TrainMember("w-0") +
                    TrainMember("w-1"));
  EXPECT_THAT(w.warnings, ::testing::IsEmpty());  // spec.schedulingGroup is a known field
  ASSERT_TRUE(sim->Run(w).ok());

  for (const char* uid : {"sim:ml/w-0", "sim:ml/w-1"}) {
    api::PodPtr p = sim->cluster().GetPod(uid);
    ASSERT_NE(p, nullptr) << uid;
    EXPECT_EQ(p->node_name, "n2") << uid;
  }
  std::set<std::string> devices;
  int group_claims = 0;
  for (const api::ResourceClaimPtr& c : sim->cluster().Claims()) {
    if (c->meta.name == "shared") continue;  // kCluster's, unused here
    ASSERT_TRUE(c->allocation.has_value()) << c->meta.name;
    for (const api::DeviceResult& d : c->allocation->devices) {
      EXPECT_EQ(d.pool, "n2");
      EXPECT_TRUE(devices.insert(d.device).second) << d.device << " allocated twice";
    }
    if (c->meta.name.starts_with("train-fabric-")) {
      ++group_claims;
      EXPECT_EQ(c->meta.owner_references.at(0).kind, "PodGroup");
      EXPECT_EQ(
          c->reserved_for,
          (std::vector<api::ClaimConsumer>{{"podgroups", "train", "pg-1", "scheduling.k8s.io"}}));
    } else {
      ASSERT_EQ(c->reserved_for.size(), 1U);
      EXPECT_EQ(c->reserved_for[0].resource, "pods");
    }
  }
  EXPECT_EQ(group_claims, 1);
  EXPECT_EQ(devices.size(), 3U);
  EXPECT_EQ(sim->cluster().Counters().claims_created, 3);
  EXPECT_THAT(FormatReportText(BuildReport(*sim, "dra.yaml")), HasSubstr("ml/train (PodGroup)"));
}

}  // namespace
}  // namespace gpusched::sim
