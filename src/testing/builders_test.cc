// SPDX-License-Identifier: Apache-2.0
#include "src/testing/builders.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "src/api/decode.h"
#include "src/testing/plugin_fixture.h"

namespace gpusched::testing {
namespace {

using api::Names;
using common::Intern;
using common::Str;

std::string LabelValue(const api::Labels& labels, std::string_view key) {
  common::Atom v;
  return labels.Get(Intern(key), &v) ? std::string(Str(v)) : std::string("<absent>");
}

TEST(PodBuilderTest, BuildsTheDocumentedExampleWithDerivedFields) {
  api::Pod pod = MakePod("ns", "name")
                     .Cpu("500m")
                     .Memory("1Gi")
                     .Gpus(2)
                     .GpuModel("A100|H100")
                     .GpuMemoryMiB(20000)
                     .SchedulerName("gpu-scheduler")
                     .Priority(10)
                     .Label("app", "x")
                     .NodeSelector("k", "v")
                     .Toleration("nvidia.com/gpu", "present", api::TaintEffect::kNoSchedule)
                     .Annotation("team", "research")
                     .NodeName("n1")
                     .Obj();
  EXPECT_EQ(pod.Key(), "ns/name");
  EXPECT_EQ(pod.meta.uid, "ns/name");
  EXPECT_EQ(pod.requests.milli_cpu, 500);
  EXPECT_EQ(pod.requests.memory, 1LL << 30);
  EXPECT_EQ(pod.requests.pods, 1);
  EXPECT_EQ(pod.requests.Get(Names().nvidia_gpu), 2);
  EXPECT_EQ(pod.gpu.count, 2);
  EXPECT_EQ(pod.gpu.milli, api::kMilliPerGpu);
  EXPECT_EQ(pod.gpu.min_device_memory_mib, 20000);
  ASSERT_EQ(pod.gpu.models.size(), 2u);
  EXPECT_EQ(Str(pod.gpu.models[1]), "H100");
  EXPECT_EQ(pod.gpu_error, "");
  EXPECT_EQ(Str(pod.scheduler_name), "gpu-scheduler");
  EXPECT_EQ(pod.priority, 10);
  EXPECT_EQ(LabelValue(pod.meta.labels, "app"), "x");
  EXPECT_EQ(LabelValue(pod.node_selector, "k"), "v");
  ASSERT_EQ(pod.tolerations.size(), 1u);
  EXPECT_TRUE(pod.tolerations[0].Tolerates(
      api::Taint{Intern("nvidia.com/gpu"), Intern("present"), api::TaintEffect::kNoSchedule}));
  ASSERT_NE(pod.meta.Annotation("team"), nullptr);
  ASSERT_NE(pod.meta.Annotation(api::kPodGpuModelAnnotation), nullptr);
  EXPECT_EQ(pod.node_name, "n1");
  api::PodPtr ptr = MakePod("ns", "name").Gpus(1).Ptr();
  ASSERT_NE(ptr, nullptr);
  EXPECT_EQ(ptr->gpu.count, 1);
}

TEST(PodBuilderTest, DerivesLikeTheDecoder) {
  struct Case {
    std::string name;
    PodBuilder builder;
    std::string json;
  };
  const std::vector<Case> cases = {
      {"a default pod matches an empty spec", MakePod("", "p"),
       R"({"metadata":{"name":"p"},"spec":{}})"},
      {"init containers, sidecars and overhead are derived",
       MakePod("ns", "p")
           .Cpu("1")
           .Container("logger", {{"cpu", "100m"}, {"memory", "64Mi"}})
           .InitContainer("fetch", {{"cpu", "4"}})
           .Sidecar("proxy", {{"cpu", "250m"}})
           .Overhead("cpu", "50m"),
       R"({"metadata":{"name":"p","namespace":"ns"},"spec":{
          "containers":[{"name":"main","resources":{"requests":{"cpu":"1"}}},
                        {"name":"logger","resources":{"requests":{"cpu":"100m","memory":"64Mi"}}}],
          "initContainers":[{"name":"fetch","resources":{"requests":{"cpu":"4"}}},
                            {"name":"proxy","restartPolicy":"Always",
                             "resources":{"requests":{"cpu":"250m"}}}],
          "overhead":{"cpu":"50m"}}})"},
      {"a malformed GPU annotation sets the error like the decoder",
       MakePod("ns", "p").Gpus(1).Annotation("gpu.nvidia.com/memory", "abc"),
       R"({"metadata":{"name":"p","namespace":"ns","annotations":{"gpu.nvidia.com/memory":"abc"}},
          "spec":{"containers":[{"name":"main","resources":{"limits":{"nvidia.com/gpu":"1"}}}]}})"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto json = api::ParseJson(c.json, "test");
    ASSERT_TRUE(json.ok()) << json.status().ToString();
    auto decoded = api::DecodePod(*json);
    ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
    api::Pod built = c.builder.Obj();
    EXPECT_EQ(built.requests, decoded->requests);
    EXPECT_EQ(built.gpu, decoded->gpu);
    EXPECT_EQ(built.gpu_error, decoded->gpu_error);
    EXPECT_EQ(built.has_restartable_init_containers, decoded->has_restartable_init_containers);
    EXPECT_EQ(built.scheduler_name, decoded->scheduler_name);
    EXPECT_EQ(built.Key(), decoded->Key());
  }
}

TEST(PodBuilderTest, AffinityAndSpreadHelpersBuildMatchingTerms) {
  api::Pod pod =
      MakePod("ns", "p")
          .NodeAffinityIn("zone", {"a", "b"})
          .NodeAffinityGt("gpu.nvidia.com/memory", 16384)
          .PreferredNodeAffinity(10, "zone", {"a"})
          .PodAntiAffinity("kubernetes.io/hostname", "app", "x")
          .PreferredPodAffinity(5, "topology.kubernetes.io/zone", "app", "y")
          .SpreadConstraint(1, "topology.kubernetes.io/zone",
                            api::TopologySpreadConstraint::WhenUnsatisfiable::kDoNotSchedule, "app",
                            "x")
          .SchedulingGate("wait")
          .OwnerReference("ReplicaSet", "rs")
          .Phase(api::PodPhase::kRunning)
          .Obj();
  ASSERT_TRUE(pod.affinity.node_affinity.required.has_value());
  const api::NodeSelector& required = *pod.affinity.node_affinity.required;
  ASSERT_EQ(required.terms.size(), 2u);
  api::Labels zone_b;
  zone_b.Set("zone", "b");
  api::Labels big;
  big.Set("gpu.nvidia.com/memory", "40960");
  EXPECT_TRUE(required.Matches(zone_b, "n"));
  EXPECT_TRUE(required.Matches(big, "n"));
  EXPECT_FALSE(required.Matches(api::Labels{}, "n"));
  EXPECT_EQ(pod.affinity.node_affinity.preferred[0].weight, 10);
  api::Labels app_x;
  app_x.Set("app", "x");
  ASSERT_EQ(pod.affinity.pod_anti_affinity.required.size(), 1u);
  EXPECT_TRUE(pod.affinity.pod_anti_affinity.required[0].label_selector.Matches(app_x));
  EXPECT_EQ(pod.affinity.pod_affinity.preferred[0].weight, 5);
  ASSERT_EQ(pod.topology_spread_constraints.size(), 1u);
  EXPECT_TRUE(pod.topology_spread_constraints[0].label_selector.Matches(app_x));
  EXPECT_EQ(pod.scheduling_gates, std::vector<std::string>{"wait"});
  ASSERT_EQ(pod.meta.owner_references.size(), 1u);
  EXPECT_EQ(pod.meta.owner_references[0].api_version, "apps/v1");
  EXPECT_TRUE(pod.meta.owner_references[0].controller);
  EXPECT_EQ(pod.phase, api::PodPhase::kRunning);
}

TEST(NodeBuilderTest, BuildsTheDocumentedExampleWithDerivedGpuFacts) {
  api::Node node = MakeNode("n1")
                       .Cpu("32")
                       .Memory("256Gi")
                       .Pods(110)
                       .Gpus(8)
                       .GpuModel("A100-SXM4-40GB")
                       .GpuMemoryMiB(40960)
                       .Label("topology.kubernetes.io/zone", "us-east-1a")
                       .Taint("k", "v", api::TaintEffect::kNoSchedule)
                       .Unschedulable()
                       .Obj();
  EXPECT_EQ(node.meta.name, "n1");
  EXPECT_EQ(LabelValue(node.meta.labels, "kubernetes.io/hostname"), "n1");
  EXPECT_EQ(LabelValue(node.meta.labels, "gpu.nvidia.com/count"), "8");
  EXPECT_EQ(LabelValue(node.meta.labels, "gpu.nvidia.com/model"), "A100-SXM4-40GB");
  EXPECT_EQ(LabelValue(node.meta.labels, "gpu.nvidia.com/memory"), "40960");
  EXPECT_EQ(node.allocatable.milli_cpu, 32000);
  EXPECT_EQ(node.allocatable.memory, 256LL << 30);
  EXPECT_EQ(node.allocatable.pods, 110);
  EXPECT_EQ(node.allocatable.Get(Names().nvidia_gpu), 8);
  EXPECT_EQ(node.capacity, node.allocatable);
  EXPECT_TRUE(node.unschedulable);
  ASSERT_EQ(node.taints.size(), 1u);
  EXPECT_EQ(node.gpu.count, 8);
  EXPECT_EQ(Str(node.gpu.model), "A100-SXM4-40GB");
  EXPECT_EQ(Str(node.gpu.model_family), "A100");
  EXPECT_EQ(node.gpu.memory_mib, 40960);
  EXPECT_EQ(node.gpu_error, "");
  api::NodePtr ptr = MakeNode("n2").Gpus(4).Ptr();
  ASSERT_NE(ptr, nullptr);
  EXPECT_EQ(ptr->gpu.count, 4);
}

TEST(NodeBuilderTest, GpuHelpersSetAnnotationsAndDefaults) {
  struct Case {
    std::string name;
    NodeBuilder builder;
    int32_t count;
    uint32_t unhealthy;
    uint8_t island_of_device_2;
    int64_t pods;
  };
  const std::vector<Case> cases = {
      {"a bare node has no GPUs and 110 pods", MakeNode("a"), 0, 0, 0, 110},
      {"unhealthy devices are read from the annotation", MakeNode("b").Gpus(4).UnhealthyGpus("0,2"),
       4, 0b101, 0, 110},
      {"islands are read from the annotation", MakeNode("c").Gpus(4).NvlinkIslands("0,1;2,3"), 4, 0,
       1, 110},
      {"pods can be overridden", MakeNode("d").Pods(16), 0, 0, 0, 16},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    api::Node node = c.builder.Obj();
    EXPECT_EQ(node.gpu.count, c.count);
    EXPECT_EQ(node.gpu.unhealthy_mask, c.unhealthy);
    EXPECT_EQ(node.gpu.island[2], c.island_of_device_2);
    EXPECT_EQ(node.allocatable.pods, c.pods);
    EXPECT_EQ(node.gpu_error, "");
  }
}

TEST(PluginFixtureTest, SnapshotOfPlacesPodsByNodeName) {
  const std::vector<api::NodePtr> nodes = {MakeNode("n0").Ptr(), MakeNode("n1").Ptr()};
  const std::vector<api::PodPtr> pods = {MakePod("ns", "a").NodeName("n1").Ptr(),
                                         MakePod("ns", "b").NodeName("n1").Ptr(),
                                         MakePod("ns", "c").NodeName("elsewhere").Ptr()};
  const framework::Snapshot snapshot = SnapshotOf(nodes, pods);
  ASSERT_EQ(snapshot.nodes().size(), 2u);
  EXPECT_EQ(snapshot.num_nodes(), 2);
  EXPECT_EQ(snapshot.node_set_version(), 0u);
  for (size_t i = 0; i < nodes.size(); ++i) {
    EXPECT_EQ(snapshot.nodes()[i].index, static_cast<framework::NodeIndex>(i));
    EXPECT_EQ(snapshot.nodes()[i].node, nodes[i]);
  }
  EXPECT_EQ(snapshot.nodes()[0].pod_count, 0);
  ASSERT_EQ(snapshot.nodes()[1].pods.size(), 2u);
  EXPECT_EQ(snapshot.nodes()[1].pod_count, 2);
  EXPECT_EQ(snapshot.nodes()[1].pods[0]->meta.name, "a");
  ASSERT_NE(snapshot.Get("n1"), nullptr);
  EXPECT_EQ(snapshot.Get("n1")->index, 1);
  EXPECT_EQ(snapshot.Get("elsewhere"), nullptr);
}

TEST(PluginFixtureTest, SnapshotOfInfosKeepsInfosAndSetsIndices) {
  std::vector<framework::NodeInfo> infos(2);
  infos[0].node = MakeNode("x").Ptr();
  infos[0].index = 7;
  infos[0].requested.milli_cpu = 1500;
  infos[1].node = MakeNode("y").Ptr();
  const framework::Snapshot snapshot = SnapshotOfInfos(std::move(infos));
  ASSERT_EQ(snapshot.nodes().size(), 2u);
  EXPECT_EQ(snapshot.nodes()[0].index, 0);
  EXPECT_EQ(snapshot.nodes()[0].requested.milli_cpu, 1500);
  EXPECT_EQ(snapshot.nodes()[1].name(), "y");
  ASSERT_NE(snapshot.Get("y"), nullptr);
  EXPECT_EQ(snapshot.Get("y")->index, 1);
}

}  // namespace
}  // namespace gpusched::testing
