// SPDX-License-Identifier: Apache-2.0
// GPUs shared by the NVIDIA device plugin (time-slicing, MPS) and GPU labels that disagree.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "src/api/gpu.h"
#include "src/api/gpu_devices.h"
#include "src/api/resources.h"
#include "src/api/types.h"

namespace gpusched::api {
namespace {

using ::testing::HasSubstr;

Node NodeWith(const std::vector<std::pair<std::string, std::string>>& labels, int64_t allocatable) {
  Node node;
  for (const auto& [k, v] : labels) node.meta.labels.Set(k, v);
  node.allocatable.Set(Names().nvidia_gpu, allocatable);
  DeriveNodeGpuInfo(node);
  return node;
}

TEST(GpuSharingTest, ReplicasComeFromTheLabelOrFromAllocatable) {
  const std::string product(kGfdProductLabel), count(kGfdCountLabel);
  const std::string replicas(kGfdReplicasLabel), strategy(kGfdSharingStrategyLabel);
  const Node labelled = NodeWith({{product, "Tesla-T4-SHARED"}, {count, "4"}, {replicas, "4"}}, 16);
  EXPECT_EQ(labelled.gpu.count, 4);
  EXPECT_EQ(labelled.gpu.replicas, 4);
  EXPECT_FALSE(labelled.gpu.mps);
  EXPECT_EQ(labelled.gpu_error, "");
  const Node derived = NodeWith({{product, "Tesla-T4-SHARED"}, {count, "4"}}, 12);
  EXPECT_EQ(derived.gpu.replicas, 3);
  const Node mps = NodeWith({{product, "NVIDIA-A100-SXM4-40GB-SHARED"},
                             {count, "8"},
                             {replicas, "2"},
                             {strategy, "mps"},
                             {std::string(kGfdMemoryLabel), "40960"}},
                            16);
  EXPECT_EQ(mps.gpu.replicas, 2);
  EXPECT_TRUE(mps.gpu.mps);
  const Node plain = NodeWith({{product, "Tesla-T4"}, {count, "4"}, {replicas, "4"}}, 4);
  EXPECT_EQ(plain.gpu.replicas, 1);  // not shared: the label says nothing
  const Node bad = NodeWith({{product, "Tesla-T4-SHARED"}, {count, "4"}, {replicas, "0"}}, 16);
  EXPECT_EQ(bad.gpu.replicas, 4);  // allocatable / count
  EXPECT_THAT(bad.gpu_error, HasSubstr("label nvidia.com/gpu.replicas: invalid value \"0\""));
}

TEST(GpuSharingTest, AWholeGpuRequestTakesOneReplicaPerGpu) {
  GpuRequest one;
  one.count = 1;
  one.milli = kMilliPerGpu;
  NodeGpuInfo sliced;
  sliced.count = 4;
  sliced.replicas = 4;
  sliced.memory_mib = 15360;
  EXPECT_EQ(ResolveGpuShare(one, sliced), (GpuShare{250, 0}));
  sliced.mps = true;
  EXPECT_EQ(ResolveGpuShare(one, sliced), (GpuShare{250, 3840}));
  sliced.mps = false;
  std::vector<GpuDeviceState> devices(4);
  for (int i = 0; i < 16; ++i) {
    std::optional<GpuAssignment> a = ChooseDevicesBestFit(sliced, devices, one);
    ASSERT_TRUE(a.has_value()) << i;
    EXPECT_EQ(a->milli, 250);
    ASSERT_TRUE(ApplyAssignment(sliced, devices, *a, +1));
  }
  EXPECT_FALSE(GpuRequestFits(sliced, devices, one));
  NodeGpuInfo whole = sliced;
  whole.replicas = 1;
  EXPECT_EQ(ResolveGpuShare(one, whole), (GpuShare{}));
}

// More replicas than GPUs: the device plugin gives one GPU's replicas to one pod. Each replica
// comes from the GPU with the most free compute (its default "distributed" policy).
TEST(GpuSharingTest, APodMayTakeSeveralReplicasOfOneGpu) {
  NodeGpuInfo sliced;
  sliced.count = 2;
  sliced.replicas = 4;
  GpuRequest five;
  five.count = 5;
  five.milli = kMilliPerGpu;
  EXPECT_TRUE(IsReplicaRequest(sliced, five));
  std::vector<GpuDeviceState> devices(2);
  devices[0].used_milli = 250;
  devices[0].pods = 1;
  ASSERT_TRUE(GpuRequestFits(sliced, devices, five));  // 3 + 4 replicas free
  const std::optional<GpuAssignment> a =
      ChooseDevices(sliced, devices, five, DevicePolicy::kBinpack);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->devices, (std::vector<int8_t>{0, 0, 1, 1, 1}));  // GPU 1, 0, 1, 0, 1 by free compute
  EXPECT_EQ(FormatGpuAssignment(*a), "0:250m,0:250m,1:250m,1:250m,1:250m");
  ASSERT_TRUE(ApplyAssignment(sliced, devices, *a, +1));
  EXPECT_EQ(devices[0].used_milli, 750);
  EXPECT_EQ(devices[1].used_milli, 750);
  EXPECT_EQ(devices[1].pods, 1);  // one pod, three replicas
  GpuRequest three = five;
  three.count = 3;
  EXPECT_FALSE(GpuRequestFits(sliced, devices, three));  // 1 + 1 left
  EXPECT_FALSE(ChooseDevices(sliced, devices, three, DevicePolicy::kSpread).has_value());
  // Applying a repeated device counts each share: 750 + 2 × 250 would over-commit GPU 0.
  GpuAssignment twice{{0, 0}, 250, 0};
  EXPECT_FALSE(ApplyAssignment(sliced, devices, twice, +1));
  EXPECT_EQ(devices[0].used_milli, 750);
  ASSERT_TRUE(ApplyAssignment(sliced, devices, *a, -1));
  EXPECT_EQ(devices[0].used_milli, 250);
  EXPECT_EQ(devices[1].used_milli, 0);
  // A whole-GPU node gives distinct GPUs only.
  NodeGpuInfo whole = sliced;
  whole.replicas = 1;
  GpuRequest two = five;
  two.count = 2;
  EXPECT_FALSE(IsReplicaRequest(whole, two));
  std::vector<GpuDeviceState> free(2);
  EXPECT_EQ(ChooseDevices(whole, free, two, DevicePolicy::kBinpack)->devices,
            (std::vector<int8_t>{0, 1}));
}

TEST(GpuSharingTest, AnAssignmentListsAGpuOncePerReplica) {
  const common::StatusOr<GpuAssignment> replicas = ParseGpuAssignment("0:250m,0:250m,1:250m");
  ASSERT_TRUE(replicas.ok()) << replicas.status().message();
  EXPECT_EQ(replicas->devices, (std::vector<int8_t>{0, 0, 1}));
  EXPECT_EQ(FormatGpuAssignment(*replicas), "0:250m,0:250m,1:250m");
  EXPECT_THAT(ParseGpuAssignment("0,0").status().message(), HasSubstr("device 0 listed twice"));
  EXPECT_THAT(ParseGpuAssignment("2:500m,2:500m,2:500m").status().message(),
              HasSubstr("device 2 is given more than 1000m"));
}

// renameByDefault: the replicas are nvidia.com/gpu.shared, the product keeps its plain name.
TEST(GpuSharingTest, RenamedReplicasAreReadFromNvidiaGpuShared) {
  Node node;
  node.meta.labels.Set(std::string(kGfdProductLabel), "Tesla-T4");
  node.meta.labels.Set(std::string(kGfdCountLabel), "4");
  node.meta.labels.Set(std::string(kGfdReplicasLabel), "4");
  node.allocatable.Set(Names().nvidia_gpu_shared, 16);
  DeriveNodeGpuInfo(node);
  EXPECT_EQ(node.gpu.count, 4);
  EXPECT_EQ(node.gpu.replicas, 4);
  EXPECT_EQ(std::string(common::Str(node.gpu.model)), "T4");
  EXPECT_EQ(node.gpu_error, "");
  Node unlabelled;  // no replicas label: allocatable / count
  unlabelled.meta.labels.Set(std::string(kGfdCountLabel), "2");
  unlabelled.allocatable.Set(Names().nvidia_gpu_shared, 6);
  DeriveNodeGpuInfo(unlabelled);
  EXPECT_EQ(unlabelled.gpu.count, 2);
  EXPECT_EQ(unlabelled.gpu.replicas, 3);
}

TEST(GpuSharingTest, APodAsksReplicasAsNvidiaGpuShared) {
  auto pod_asking = [](const std::vector<std::pair<common::Atom, int64_t>>& limits) {
    Pod pod;
    Container c;
    for (const auto& [name, n] : limits) c.limits.Set(name, n);
    pod.containers.push_back(c);
    DeriveGpuRequest(pod);
    return pod;
  };
  const Pod shared = pod_asking({{Names().nvidia_gpu_shared, 2}});
  EXPECT_EQ(shared.gpu_error, "");
  EXPECT_EQ(shared.gpu.count, 2);
  EXPECT_EQ(shared.gpu.milli, kMilliPerGpu);
  EXPECT_EQ(pod_asking({{Names().nvidia_gpu_shared, -1}}).gpu_error,
            "resource nvidia.com/gpu.shared: negative count");
  const Pod both = pod_asking({{Names().nvidia_gpu, 1}, {Names().nvidia_gpu_shared, 1}});
  EXPECT_THAT(both.gpu_error, HasSubstr("nvidia.com/gpu and nvidia.com/gpu.shared"));
  EXPECT_TRUE(both.gpu.empty());
}

TEST(GpuLabelConflictTest, ModelsAndMemoriesThatDisagreeAreFlagged) {
  const std::string seed_model(kSeedModelLabel), gfd_product(kGfdProductLabel);
  const std::string seed_memory(kSeedMemoryLabel), gfd_memory(kGfdMemoryLabel);
  const Node conflict = NodeWith({{seed_model, "A100"}, {gfd_product, "NVIDIA-H100-80GB-HBM3"}}, 8);
  EXPECT_EQ(std::string(common::Str(conflict.gpu.model)), "A100");
  EXPECT_THAT(conflict.gpu_error,
              HasSubstr("label gpu.nvidia.com/model=A100 (A100) disagrees with "
                        "nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3 (H100-80GB-HBM3); using "
                        "A100"));
  // A less specific seed model is the same GPU, and so is GFD's exact MiB for "80Gi".
  const Node same = NodeWith({{seed_model, "H100"},
                              {gfd_product, "NVIDIA-H100-80GB-HBM3"},
                              {seed_memory, "80Gi"},
                              {gfd_memory, "81559"}},
                             8);
  EXPECT_EQ(same.gpu_error, "");
  const Node memory = NodeWith({{seed_memory, "40960"}, {gfd_memory, "81920"}}, 8);
  EXPECT_EQ(memory.gpu.memory_mib, 40960);
  EXPECT_THAT(memory.gpu_error, HasSubstr("label gpu.nvidia.com/memory=40960 disagrees with "
                                          "nvidia.com/gpu.memory=81920; using 40960 MiB"));
}

}  // namespace
}  // namespace gpusched::api
