// SPDX-License-Identifier: Apache-2.0
// Volumes in the simulator (issue #22): StorageClasses, PersistentVolumes and claims in the input;
// the simulator plays the PV controller and a provisioner, so VolumeBinding's PreBind completes:
// a WaitForFirstConsumer claim binds to the static PV of its zone, a claim of a provisioning class
// gets a selected node in an allowed zone, an Immediate claim nobody binds leaves its pod pending.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <variant>

#include "src/api/storage.h"
#include "src/common/clock.h"
#include "src/plugins/in_tree_registry.h"
#include "src/sim/simulator.h"
#include "src/sim/workload.h"

namespace gpusched::sim {
namespace {

constexpr std::string_view kCluster = R"(
apiVersion: v1
kind: Node
metadata: {name: a1, labels: {topology.kubernetes.io/zone: zone-a}}
status: {allocatable: {cpu: "32", memory: 64Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: b1, labels: {topology.kubernetes.io/zone: zone-b}}
status: {allocatable: {cpu: "32", memory: 64Gi, pods: "110"}}
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: static}
provisioner: kubernetes.io/no-provisioner
volumeBindingMode: WaitForFirstConsumer
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: dynamic}
provisioner: ebs.csi.aws.com
volumeBindingMode: WaitForFirstConsumer
allowedTopologies:
- matchLabelExpressions:
  - {key: topology.kubernetes.io/zone, values: [zone-a]}
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: immediate}
provisioner: ebs.csi.aws.com
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: pv-b, resourceVersion: "1", labels: {topology.kubernetes.io/zone: zone-b}}
spec:
  capacity: {storage: 10Gi}
  accessModes: [ReadWriteOnce]
  storageClassName: static
  nodeAffinity:
    required:
      nodeSelectorTerms:
      - matchExpressions:
        - {key: topology.kubernetes.io/zone, operator: In, values: [zone-b]}
status: {phase: Available}
)";

std::string Claim(std::string_view name, std::string_view cls) {
  return std::string("---\napiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: ") +
         std::string(name) + ", namespace: ml, uid: uid-" + std::string(name) +
         ", resourceVersion: \"1\"}\nspec:\n  accessModes: [ReadWriteOnce]\n"
         "  storageClassName: " +
         std::string(cls) + "\n  resources: {requests: {storage: 1Gi}}\n";
}

std::string PodUsing(std::string_view name, std::string_view claim) {
  return std::string("---\napiVersion: v1\nkind: Pod\nmetadata: {name: ") + std::string(name) +
         ", namespace: ml}\nspec:\n  containers:\n  - name: main\n    resources: {requests: "
         "{cpu: 100m}}\n  volumes:\n  - name: data\n    persistentVolumeClaim: {claimName: " +
         std::string(claim) + "}\n";
}

TEST(VolumesSimTest, ClaimsBindAndProvisionWhereTheirVolumesCanAttach) {
  std::string text(kCluster);
  text += Claim("static-claim", "static") + Claim("dynamic-claim", "dynamic") +
          Claim("immediate-claim", "immediate");
  text += PodUsing("uses-static", "static-claim") + PodUsing("uses-dynamic", "dynamic-claim") +
          PodUsing("uses-immediate", "immediate-claim");
  Workload w;
  ASSERT_TRUE(AppendManifests(text, "volumes.yaml", w).ok());
  ASSERT_TRUE(w.rejected.empty()) << w.rejected.front().ToString();
  ASSERT_EQ(w.storage.size(), 7u);
  static const common::FakeClock wall;
  auto sim =
      Simulator::Create(SimulationDefaultConfig(), {plugins::InTreeRegistry(), wall}, SimOptions{});
  ASSERT_TRUE(sim.ok()) << sim.status().ToString();
  ASSERT_TRUE((*sim)->Run(w).ok());
  std::map<std::string, const PodOutcome*> by_name;
  for (const PodOutcome& o : (*sim)->outcomes()) by_name[o.pod->meta.name] = &o;
  ASSERT_EQ(by_name.size(), 3u);
  EXPECT_EQ(by_name["uses-static"]->node, "b1") << by_name["uses-static"]->message;
  EXPECT_EQ(by_name["uses-dynamic"]->node, "a1") << by_name["uses-dynamic"]->message;
  EXPECT_TRUE(by_name["uses-immediate"]->node.empty());
  EXPECT_NE(
      by_name["uses-immediate"]->message.find("pod has unbound immediate PersistentVolumeClaims"),
      std::string::npos)
      << by_name["uses-immediate"]->message;
}

TEST(VolumesSimTest, MalformedStorageObjectNamesTheField) {
  Workload w;
  ASSERT_TRUE(AppendManifests("apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: pv}\n"
                              "spec: {capacity: {storage: ten}}\n",
                              "bad.yaml", w)
                  .ok());
  ASSERT_EQ(w.rejected.size(), 1u);
  const std::string why = w.rejected[0].ToString();
  EXPECT_NE(why.find("spec.capacity.storage"), std::string::npos) << why;
  EXPECT_TRUE(w.storage.empty());
}

}  // namespace
}  // namespace gpusched::sim
