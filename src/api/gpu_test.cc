// SPDX-License-Identifier: Apache-2.0
#include "src/api/gpu.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "src/api/types.h"

namespace gpusched::api {
namespace {

using common::Intern;
using common::Str;
using ::testing::HasSubstr;

TEST(NormalizeGpuModelTest, NormalisesEveryDialect) {
  struct Case {
    std::string name;
    std::string raw;
    std::string want;
  };
  const std::vector<Case> cases = {
      {"the NVIDIA prefix is dropped", "NVIDIA-A100-SXM4-40GB", "A100-SXM4-40GB"},
      {"the Tesla prefix is dropped with underscores", "Tesla_T4", "T4"},
      {"the Tesla prefix is dropped with dashes", "Tesla-T4", "T4"},
      {"both prefixes are dropped, case folded (GKE style)", "nvidia-tesla-t4", "T4"},
      {"spaces become dashes and case is folded", "NVIDIA A100 80GB PCIe", "A100-80GB-PCIE"},
      {"CoreWeave underscores become dashes", "A100_PCIE_80GB", "A100-PCIE-80GB"},
      {"CoreWeave Tesla names lose the prefix", "Tesla_V100", "V100"},
      {"a SHARED suffix is dropped", "A100-SXM4-40GB-SHARED", "A100-SXM4-40GB"},
      {"a MIG profile is cut", "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb", "A100-SXM4-40GB"},
      {"a shared MIG profile is cut", "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb-SHARED", "A100-SXM4-40GB"},
      {"lower case is folded", "h100", "H100"},
      {"surrounding blanks are trimmed", "  A100  ", "A100"},
      {"runs of separators collapse", "A100__SXM4", "A100-SXM4"},
      {"an empty model stays empty", "", ""},
      {"a bare vendor name is kept", "NVIDIA", "NVIDIA"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(NormalizeGpuModel(c.raw), c.want);
  }
}

TEST(GpuModelMatchesTest, MatchesWholeTokenRuns) {
  struct Case {
    std::string name;
    std::string node_model;
    std::string want;
    bool match;
  };
  const std::vector<Case> cases = {
      {"the family matches the full model", "A100-SXM4-40GB", "A100", true},
      {"the full model matches itself", "A100-SXM4-40GB", "A100-SXM4-40GB", true},
      {"a trailing token run matches", "A100-SXM4-40GB", "SXM4-40GB", true},
      {"a different memory size does not match", "A100-SXM4-80GB", "40GB", false},
      {"a token prefix is not a match", "A100-PCIE-40GB", "A10", false},
      {"a longer model does not match a shorter node", "A10", "A100", false},
      {"a later occurrence on a token boundary matches", "XA100-A100", "A100", true},
      {"an unknown node model matches nothing", "", "A100", false},
      {"an empty want matches nothing", "A100", "", false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(GpuModelMatches(c.node_model, c.want), c.match);
  }
}

Container GpuContainer(int64_t limit, int64_t request, bool restartable = false) {
  Container c;
  if (limit) c.limits.Set(Names().nvidia_gpu, limit);
  if (request) c.requests.Set(Names().nvidia_gpu, request);
  c.restartable = restartable;
  return c;
}

TEST(DeriveGpuRequestTest, ReadsCountModelsAndMemory) {
  struct Case {
    std::string name;
    std::vector<Container> containers;
    std::vector<Container> init;
    std::vector<std::pair<std::string, std::string>> annotations;  // sorted by key
    int32_t count;
    std::vector<std::string> models;
    int64_t min_memory;
    std::string error;  // substring; empty = no error
  };
  const std::string kModel(kPodGpuModelAnnotation);
  const std::string kMemory(kPodGpuMemoryAnnotation);
  const std::vector<Case> cases = {
      {"a pod without GPUs has an empty request", {GpuContainer(0, 0)}, {}, {}, 0, {}, 0, ""},
      {"the limit gives the count", {GpuContainer(2, 2)}, {}, {}, 2, {}, 0, ""},
      {"requests count when there is no limit", {GpuContainer(0, 3)}, {}, {}, 3, {}, 0, ""},
      {"containers are summed", {GpuContainer(1, 1), GpuContainer(2, 2)}, {}, {}, 3, {}, 0, ""},
      {"a larger init container dominates",
       {GpuContainer(1, 1)},
       {GpuContainer(4, 4)},
       {},
       4,
       {},
       0,
       ""},
      {"a sidecar adds to the containers",
       {GpuContainer(1, 1)},
       {GpuContainer(1, 1, true)},
       {},
       2,
       {},
       0,
       ""},
      {"models are split and normalised",
       {GpuContainer(1, 1)},
       {},
       {{kModel, "A100|nvidia-h100-80gb"}},
       1,
       {"A100", "H100-80GB"},
       0,
       ""},
      {"duplicate models are kept once",
       {GpuContainer(1, 1)},
       {},
       {{kModel, "A100|a100"}},
       1,
       {"A100"},
       0,
       ""},
      {"an integer memory is MiB",
       {GpuContainer(1, 1)},
       {},
       {{kMemory, "16384"}},
       1,
       {},
       16384,
       ""},
      {"a binary quantity is converted to MiB",
       {GpuContainer(1, 1)},
       {},
       {{kMemory, "16Gi"}},
       1,
       {},
       16384,
       ""},
      {"a decimal quantity rounds up to MiB",
       {GpuContainer(1, 1)},
       {},
       {{kMemory, "16G"}},
       1,
       {},
       15259,
       ""},
      {"blanks around the memory are ignored",
       {GpuContainer(1, 1)},
       {},
       {{kMemory, " 20000 "}},
       1,
       {},
       20000,
       ""},
      {"annotations are ignored without a GPU count", {}, {}, {{kMemory, "abc"}}, 0, {}, 0, ""},
      {"garbage memory is an error naming the value",
       {GpuContainer(1, 1)},
       {},
       {{kMemory, "abc"}},
       0,
       {},
       0,
       "annotation gpu.nvidia.com/memory: invalid value \"abc\" (want MiB, e.g. 16384)"},
      {"negative memory is an error",
       {GpuContainer(1, 1)},
       {},
       {{kMemory, "-1"}},
       0,
       {},
       0,
       "invalid value \"-1\""},
      {"a negative quantity is an error",
       {GpuContainer(1, 1)},
       {},
       {{kMemory, "-16Gi"}},
       0,
       {},
       0,
       "invalid value \"-16Gi\""},
      {"a fractional plain number is an error",
       {GpuContainer(1, 1)},
       {},
       {{kMemory, "1.5"}},
       0,
       {},
       0,
       "invalid value \"1.5\""},
      {"an empty model in the list is an error",
       {GpuContainer(1, 1)},
       {},
       {{kModel, "A100||H100"}},
       0,
       {},
       0,
       "annotation gpu.nvidia.com/model: invalid value \"A100||H100\" (empty model name"},
      {"an empty model annotation is an error",
       {GpuContainer(1, 1)},
       {},
       {{kModel, ""}},
       0,
       {},
       0,
       "annotation gpu.nvidia.com/model: invalid value \"\""},
      {"both errors are reported",
       {GpuContainer(1, 1)},
       {},
       {{kModel, "|"}, {kMemory, "x"}},
       0,
       {},
       0,
       "(empty model name; want e.g. \"A100|H100\"); annotation gpu.nvidia.com/memory"},
      {"a negative count is an error",
       {GpuContainer(-1, -1)},
       {},
       {},
       0,
       {},
       0,
       "resource nvidia.com/gpu: negative count"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Pod pod;
    pod.containers = c.containers;
    pod.init_containers = c.init;
    pod.meta.annotations = c.annotations;
    std::sort(pod.meta.annotations.begin(), pod.meta.annotations.end());
    DeriveGpuRequest(pod);
    EXPECT_EQ(pod.gpu.count, c.count);
    EXPECT_EQ(pod.gpu.milli, c.count > 0 ? kMilliPerGpu : 0);
    EXPECT_FALSE(pod.gpu.shared());
    EXPECT_EQ(pod.gpu.min_device_memory_mib, c.min_memory);
    std::vector<std::string> models;
    for (Atom a : pod.gpu.models) models.emplace_back(Str(a));
    EXPECT_EQ(models, c.models);
    if (c.error.empty()) {
      EXPECT_EQ(pod.gpu_error, "");
    } else {
      EXPECT_THAT(pod.gpu_error, HasSubstr(c.error));
      EXPECT_TRUE(pod.gpu.empty());
    }
  }
}

TEST(DeriveNodeGpuInfoTest, AppliesSourcePrecedenceAndWarnings) {
  using Kv = std::vector<std::pair<std::string, std::string>>;
  const std::string sm(kSeedModelLabel), smem(kSeedMemoryLabel), sc(kSeedCountLabel);
  const std::string gp(kGfdProductLabel), gmem(kGfdMemoryLabel), gc(kGfdCountLabel);
  const std::string gr(kGfdReplicasLabel);
  struct Case {
    std::string name;
    Kv labels;
    int64_t allocatable;
    int32_t count;
    std::string model;
    std::string family;
    int64_t memory;
    std::string source;
    std::string warning;  // substring; empty = none
  };
  const std::vector<Case> cases = {
      {"a node without GPU facts has none", {}, 0, 0, "", "", 0, "", ""},
      {"seed labels give every fact",
       {{sm, "A100-SXM4-40GB"}, {smem, "40960"}, {sc, "8"}},
       8,
       8,
       "A100-SXM4-40GB",
       "A100",
       40960,
       "model=seed count=seed memory=seed",
       ""},
      {"GFD labels give every fact",
       {{gp, "NVIDIA-A100-SXM4-80GB"}, {gmem, "81920"}, {gc, "8"}},
       8,
       8,
       "A100-SXM4-80GB",
       "A100",
       81920,
       "model=gfd count=gfd memory=gfd",
       ""},
      {"seed labels beat GFD labels",
       {{sm, "H100"}, {smem, "81920"}, {gp, "NVIDIA-A100-SXM4-40GB"}, {gmem, "40960"}},
       8,
       8,
       "H100",
       "H100",
       81920,
       "model=seed count=allocatable memory=seed",
       "label gpu.nvidia.com/model=H100 (H100) disagrees with nvidia.com/gpu.product=NVIDIA-A100-"
       "SXM4-40GB (A100-SXM4-40GB); using H100; label gpu.nvidia.com/memory=81920 disagrees with "
       "nvidia.com/gpu.memory=40960; using 81920 MiB"},
      {"allocatable gives the count alone", {}, 4, 4, "", "", 0, "count=allocatable", ""},
      {"a malformed seed count falls back to GFD",
       {{sc, "eight"}, {gc, "4"}},
       8,
       4,
       "",
       "",
       0,
       "count=gfd",
       "label gpu.nvidia.com/count: invalid value \"eight\" (want an integer count)"},
      {"a malformed seed memory falls back to GFD",
       {{smem, "lots"}, {gmem, "15360"}},
       0,
       0,
       "",
       "",
       15360,
       "memory=gfd",
       "label gpu.nvidia.com/memory: invalid value \"lots\""},
      {"a small memory value is read as GB",
       {{smem, "40"}},
       0,
       0,
       "",
       "",
       40960,
       "memory=seed",
       "is below 1024, probably GB; read as 40960 MiB"},
      {"a memory quantity is converted", {{smem, "40Gi"}}, 0, 0, "", "", 40960, "memory=seed", ""},
      {"a zero memory is malformed",
       {{smem, "0"}},
       0,
       0,
       "",
       "",
       0,
       "",
       "label gpu.nvidia.com/memory: invalid value \"0\""},
      {"a SHARED product keeps the GFD count, not allocatable replicas",
       {{gp, "Tesla-T4-SHARED"}, {gc, "1"}, {gr, "4"}},
       4,
       1,
       "T4",
       "T4",
       0,
       "model=gfd count=gfd",
       ""},
      {"a SHARED product without a count divides allocatable by replicas",
       {{gp, "Tesla-T4-SHARED"}, {gr, "4"}},
       8,
       2,
       "T4",
       "T4",
       0,
       "model=gfd count=allocatable",
       ""},
      {"a SHARED product without count or replicas is flagged",
       {{gp, "Tesla-T4-SHARED"}},
       8,
       8,
       "T4",
       "T4",
       0,
       "model=gfd count=allocatable",
       "shared GPUs without a count label"},
      {"a MIG product counts from allocatable with a warning",
       {{gp, "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb"}, {gc, "7"}, {gmem, "4864"}},
       7,
       7,
       "A100-SXM4-40GB",
       "A100",
       4864,
       "model=gfd count=allocatable memory=gfd",
       "MIG single strategy: counts MIG devices"},
      {"a MIG product still prefers the seed count",
       {{gp, "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb"}, {gc, "7"}, {sc, "1"}},
       7,
       1,
       "A100-SXM4-40GB",
       "A100",
       0,
       "model=gfd count=seed",
       "MIG single strategy"},
      {"a count above the maximum is clamped",
       {{sc, "32"}},
       32,
       kMaxGpusPerNode,
       "",
       "",
       0,
       "count=seed",
       "GPU count 32 exceeds 16; clamped"},
      {"seed and GFD counts that disagree are flagged",
       {{sc, "8"}, {gc, "4"}},
       8,
       8,
       "",
       "",
       0,
       "count=seed",
       "label gpu.nvidia.com/count=8 disagrees with nvidia.com/gpu.count=4"},
      {"an allocatable above the labelled count is flagged",
       {{sc, "4"}},
       8,
       4,
       "",
       "",
       0,
       "count=seed",
       "allocatable nvidia.com/gpu=8 is above the labelled GPU count 4; using 4"},
      {"an empty seed model falls back to GFD",
       {{sm, "--"}, {gp, "Tesla-T4"}},
       0,
       0,
       "T4",
       "T4",
       0,
       "model=gfd",
       "label gpu.nvidia.com/model: invalid value \"--\""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Node node;
    for (const auto& [k, v] : c.labels) node.meta.labels.Set(k, v);
    node.allocatable.Set(Names().nvidia_gpu, c.allocatable);
    DeriveNodeGpuInfo(node);
    EXPECT_EQ(node.gpu.count, c.count);
    EXPECT_EQ(Str(node.gpu.model), c.model);
    EXPECT_EQ(Str(node.gpu.model_family), c.family);
    EXPECT_EQ(node.gpu.memory_mib, c.memory);
    EXPECT_EQ(node.gpu.source, c.source);
    if (c.warning.empty()) {
      EXPECT_EQ(node.gpu_error, "");
    } else {
      EXPECT_THAT(node.gpu_error, HasSubstr(c.warning));
    }
  }
}

TEST(DeriveNodeGpuInfoTest, ReadsHealthAndIslandAnnotations) {
  using Islands = std::array<uint8_t, kMaxGpusPerNode>;
  struct Case {
    std::string name;
    std::string unhealthy;  // empty: annotation absent
    std::string islands;    // empty: annotation absent
    int32_t count;
    uint32_t mask;
    Islands island;
    std::string warning;
  };
  const std::vector<Case> cases = {
      {"no annotations mean healthy and one island", "", "", 8, 0, Islands{}, ""},
      {"unhealthy devices set mask bits", "1,3", "", 8, 0b1010, Islands{}, ""},
      {"bad unhealthy entries are skipped with a warning", "1, x,20", "", 8, 0b10, Islands{},
       "annotation gpusched.io/unhealthy-gpus: invalid device index \" x\""},
      {"two islands of four", "", "0,1,2,3;4,5,6,7", 8, 0, Islands{0, 0, 0, 0, 1, 1, 1, 1}, ""},
      {"unlisted devices get islands of their own", "", "0,1;2,3", 6, 0, Islands{0, 0, 1, 1, 2, 3},
       ""},
      {"a device in two islands invalidates the annotation", "", "0,1;1,2", 4, 0, Islands{},
       "annotation gpusched.io/nvlink-islands: invalid value \"0,1;1,2\" (device 1 listed twice), "
       "ignored"},
      {"an empty group invalidates the annotation", "", "0,1;;2", 4, 0, Islands{},
       "(empty group), ignored"},
      {"a bad index invalidates the annotation", "", "0,x", 4, 0, Islands{},
       "(invalid device index \"x\"), ignored"},
      {"an index beyond the maximum invalidates the annotation", "", "0,16", 4, 0, Islands{},
       "invalid device index \"16\""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Node node;
    node.meta.labels.Set(std::string(kSeedCountLabel), std::to_string(c.count));
    if (!c.islands.empty()) {
      node.meta.annotations.emplace_back(std::string(kNodeNvlinkIslandsAnnotation), c.islands);
    }
    if (!c.unhealthy.empty()) {
      node.meta.annotations.emplace_back(std::string(kNodeUnhealthyGpusAnnotation), c.unhealthy);
    }
    std::sort(node.meta.annotations.begin(), node.meta.annotations.end());
    DeriveNodeGpuInfo(node);
    EXPECT_EQ(node.gpu.count, c.count);
    EXPECT_EQ(node.gpu.unhealthy_mask, c.mask);
    EXPECT_EQ(node.gpu.island, c.island);
    for (int d = 0; d < kMaxGpusPerNode; ++d) {
      EXPECT_EQ(node.gpu.Healthy(d), (c.mask >> d & 1u) == 0);
    }
    if (c.warning.empty()) {
      EXPECT_EQ(node.gpu_error, "");
    } else {
      EXPECT_THAT(node.gpu_error, HasSubstr(c.warning));
    }
  }
}

TEST(DeriveNodeGpuInfoTest, AllocatableBelowTheLabelledCountMarksDevicesUnhealthy) {
  struct Case {
    std::string name;
    int64_t allocatable;
    std::string unhealthy;  // annotation; empty: absent
    uint32_t mask;
    bool warned;
  };
  const std::vector<Case> cases = {
      {"allocatable equal to the count changes nothing", 4, "", 0, false},
      {"one device missing marks the highest index unhealthy", 3, "", 0b1000, true},
      {"devices already unhealthy count toward the drop", 3, "3", 0b1000, true},
      {"an unhealthy low device and a drop of two mark one more", 2, "0", 0b1001, true},
      {"allocatable 0 (not reported yet) changes nothing", 0, "", 0, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Node node;
    node.meta.labels.Set(std::string(kSeedCountLabel), "4");
    if (c.allocatable > 0) node.allocatable.Set(Names().nvidia_gpu, c.allocatable);
    if (!c.unhealthy.empty()) {
      node.meta.annotations.emplace_back(std::string(kNodeUnhealthyGpusAnnotation), c.unhealthy);
    }
    DeriveNodeGpuInfo(node);
    EXPECT_EQ(node.gpu.count, 4);
    EXPECT_EQ(node.gpu.unhealthy_mask, c.mask);
    EXPECT_EQ(node.gpu_error.find("treated as unhealthy") != std::string::npos, c.warned)
        << node.gpu_error;
  }
}

// A container with the given resource limits (quantities already in stored units).
Container Limits(std::vector<std::pair<std::string, int64_t>> limits) {
  Container c;
  for (const auto& [k, v] : limits) c.limits.Set(Intern(k), v);
  return c;
}

TEST(DeriveGpuRequestTest, NormalisesSharingDialects) {
  struct Case {
    std::string name;
    std::vector<Container> containers;
    std::vector<std::pair<std::string, std::string>> annotations;
    int32_t count;
    int32_t milli;
    int64_t memory_mib;
    int32_t permille;
    int64_t min_memory;
    std::string error;  // substring; empty = no error
  };
  constexpr int64_t kGi = int64_t{1} << 30;
  const std::vector<Case> cases = {
      // gpusched.io/ (ours)
      {"our milli annotation alone is one shared GPU",
       {},
       {{"gpusched.io/gpu-milli", "250"}},
       1,
       250,
       0,
       0,
       0,
       ""},
      {"our milli with nvidia.com/gpu shares each of the devices",
       {Limits({{"nvidia.com/gpu", 2}})},
       {{"gpusched.io/gpu-milli", "500"}},
       2,
       500,
       0,
       0,
       0,
       ""},
      {"our memory annotation takes a quantity",
       {},
       {{"gpusched.io/gpu-memory", "8Gi"}},
       1,
       0,
       8192,
       0,
       0,
       ""},
      {"our memory percent becomes permille",
       {},
       {{"gpusched.io/gpu-memory-percent", "25"}},
       1,
       0,
       0,
       250,
       0,
       ""},
      {"our milli of 1000 is a whole GPU, its memory a minimum",
       {},
       {{"gpusched.io/gpu-memory", "4096"}, {"gpusched.io/gpu-milli", "1000"}},
       1,
       1000,
       0,
       0,
       4096,
       ""},
      {"our milli of 0 is rejected naming the value",
       {},
       {{"gpusched.io/gpu-milli", "0"}},
       0,
       0,
       0,
       0,
       0,
       "annotation gpusched.io/gpu-milli: invalid value \"0\" (want 1..1000 milli-GPU per device)"},
      {"our percent above 100 is rejected",
       {},
       {{"gpusched.io/gpu-memory-percent", "101"}},
       0,
       0,
       0,
       0,
       0,
       "annotation gpusched.io/gpu-memory-percent: invalid value \"101\""},
      // HAMi (per GPU)
      {"HAMi gpumem is MiB on each of the GPUs",
       {Limits({{"nvidia.com/gpu", 2}, {"nvidia.com/gpumem", 3000}})},
       {},
       2,
       0,
       3000,
       0,
       0,
       ""},
      {"HAMi gpucores is percent of each GPU",
       {Limits({{"nvidia.com/gpu", 1}, {"nvidia.com/gpumem", 3000}, {"nvidia.com/gpucores", 30}})},
       {},
       1,
       300,
       3000,
       0,
       0,
       ""},
      {"HAMi gpumem-percentage becomes permille",
       {Limits({{"nvidia.com/gpu", 1}, {"nvidia.com/gpumem-percentage", 50}})},
       {},
       1,
       0,
       0,
       500,
       0,
       ""},
      {"HAMi gpucores 100 is an exclusive GPU",
       {Limits({{"nvidia.com/gpu", 1}, {"nvidia.com/gpucores", 100}})},
       {},
       1,
       1000,
       0,
       0,
       0,
       ""},
      {"HAMi gpumem and gpumem-percentage together are rejected",
       {Limits({{"nvidia.com/gpu", 1},
                {"nvidia.com/gpumem", 3000},
                {"nvidia.com/gpumem-percentage", 50}})},
       {},
       0,
       0,
       0,
       0,
       0,
       "GPU memory: resource nvidia.com/gpumem=\"3000\" conflicts with resource "
       "nvidia.com/gpumem-percentage=\"50\""},
      {"HAMi gpucores above 100 is rejected",
       {Limits({{"nvidia.com/gpu", 1}, {"nvidia.com/gpucores", 150}})},
       {},
       0,
       0,
       0,
       0,
       0,
       "resource nvidia.com/gpucores: invalid value \"150\""},
      {"HAMi containers that disagree are rejected",
       {Limits({{"nvidia.com/gpu", 1}, {"nvidia.com/gpumem", 1000}}),
        Limits({{"nvidia.com/gpu", 1}, {"nvidia.com/gpumem", 2000}})},
       {},
       0,
       0,
       0,
       0,
       0,
       "resource nvidia.com/gpumem: containers disagree (1000 vs 2000)"},
      // Alibaba simulator (openb)
      {"an Alibaba milli is compute and implied memory",
       {},
       {{"alibabacloud.com/gpu-count", "1"}, {"alibabacloud.com/gpu-milli", "600"}},
       1,
       600,
       0,
       600,
       0,
       ""},
      {"Alibaba multi-GPU tasks are whole GPUs",
       {},
       {{"alibabacloud.com/gpu-count", "2"}, {"alibabacloud.com/gpu-milli", "1000"}},
       2,
       1000,
       0,
       0,
       0,
       ""},
      {"an Alibaba count alone is whole GPUs",
       {},
       {{"alibabacloud.com/gpu-count", "4"}},
       4,
       1000,
       0,
       0,
       0,
       ""},
      {"an Alibaba fraction with several GPUs is rejected naming both",
       {},
       {{"alibabacloud.com/gpu-count", "2"}, {"alibabacloud.com/gpu-milli", "500"}},
       0,
       0,
       0,
       0,
       0,
       "annotation alibabacloud.com/gpu-milli=\"500\" with annotation "
       "alibabacloud.com/gpu-count=\"2\": a GPU fraction is for one GPU only"},
      {"an Alibaba count that disagrees with nvidia.com/gpu is rejected",
       {Limits({{"nvidia.com/gpu", 1}})},
       {{"alibabacloud.com/gpu-count", "2"}},
       0,
       0,
       0,
       0,
       0,
       "GPU count: annotation alibabacloud.com/gpu-count=\"2\" conflicts with resource "
       "nvidia.com/gpu=\"1\""},
      // gpushare
      {"aliyun gpu-mem is GiB on one GPU",
       {Limits({{"aliyun.com/gpu-mem", 4}})},
       {},
       1,
       0,
       4096,
       0,
       0,
       ""},
      {"aliyun gpu-mem with two GPUs is rejected",
       {Limits({{"aliyun.com/gpu-mem", 4}, {"nvidia.com/gpu", 2}})},
       {},
       0,
       0,
       0,
       0,
       0,
       "GPU count: resource aliyun.com/gpu-mem=\"4\" conflicts with resource "
       "nvidia.com/gpu=\"2\""},
      // KAI
      {"a KAI fraction is a memory share accounted as compute too",
       {},
       {{"gpu-fraction", "0.5"}},
       1,
       500,
       0,
       500,
       0,
       ""},
      {"a KAI fraction on several devices",
       {},
       {{"gpu-fraction", "0.25"}, {"gpu-fraction-num-devices", "2"}},
       2,
       250,
       0,
       250,
       0,
       ""},
      {"KAI gpu-memory is MiB", {}, {{"gpu-memory", "4096"}}, 1, 0, 4096, 0, 0, ""},
      {"a KAI fraction of 1 or more is rejected",
       {},
       {{"gpu-fraction", "1.5"}},
       0,
       0,
       0,
       0,
       0,
       "annotation gpu-fraction: invalid value \"1.5\" (want a fraction 0 < f < 1, e.g. 0.5)"},
      {"a KAI fraction that is not a number is rejected",
       {},
       {{"gpu-fraction", "half"}},
       0,
       0,
       0,
       0,
       0,
       "annotation gpu-fraction: invalid value \"half\""},
      {"KAI fraction and memory together are rejected",
       {},
       {{"gpu-fraction", "0.5"}, {"gpu-memory", "4096"}},
       0,
       0,
       0,
       0,
       0,
       "annotation gpu-fraction=\"0.5\" and annotation gpu-memory=\"4096\": set only one"},
      {"KAI num-devices without a share is rejected",
       {},
       {{"gpu-fraction-num-devices", "2"}},
       0,
       0,
       0,
       0,
       0,
       "needs gpu-fraction or gpu-memory"},
      // Koordinator (totals over gpu.shared)
      {"Koordinator totals are divided over gpu.shared devices",
       {Limits({{"koordinator.sh/gpu-memory", 4 * kGi},
                {"koordinator.sh/gpu-core", 100},
                {"koordinator.sh/gpu.shared", 2}})},
       {},
       2,
       500,
       2048,
       0,
       0,
       ""},
      {"a Koordinator memory ratio becomes permille",
       {Limits({{"koordinator.sh/gpu-memory-ratio", 50}})},
       {},
       1,
       0,
       0,
       500,
       0,
       ""},
      {"a Koordinator ratio of 100 with core 100 is a whole GPU",
       {Limits({{"koordinator.sh/gpu-memory-ratio", 100}, {"koordinator.sh/gpu-core", 100}})},
       {},
       1,
       1000,
       0,
       0,
       0,
       ""},
      {"Koordinator shares mixed with nvidia.com/gpu are rejected",
       {Limits({{"koordinator.sh/gpu-memory-ratio", 50}, {"nvidia.com/gpu", 1}})},
       {},
       0,
       0,
       0,
       0,
       0,
       "resource nvidia.com/gpu=\"1\" with resource koordinator.sh/gpu-memory-ratio=\"50\": "
       "Koordinator GPU shares must not be mixed with whole GPUs"},
      {"a Koordinator core without memory is rejected",
       {Limits({{"koordinator.sh/gpu-core", 50}})},
       {},
       0,
       0,
       0,
       0,
       0,
       "resource koordinator.sh/gpu-core=\"50\": Koordinator GPU shares need"},
      {"a Koordinator ratio above 100 per GPU is rejected",
       {Limits({{"koordinator.sh/gpu-memory-ratio", 150}})},
       {},
       0,
       0,
       0,
       0,
       0,
       "resource koordinator.sh/gpu-memory-ratio: invalid value \"150\""},
      // Mixing dialects
      {"HAMi and KAI memory that agree are accepted",
       {Limits({{"nvidia.com/gpu", 1}, {"nvidia.com/gpumem", 4096}})},
       {{"gpu-memory", "4096"}},
       1,
       0,
       4096,
       0,
       0,
       ""},
      {"HAMi and KAI memory that disagree are rejected naming both",
       {Limits({{"nvidia.com/gpu", 1}, {"nvidia.com/gpumem", 4096}})},
       {{"gpu-memory", "8192"}},
       0,
       0,
       0,
       0,
       0,
       "GPU memory: resource nvidia.com/gpumem=\"4096\" conflicts with annotation "
       "gpu-memory=\"8192\""},
      {"our milli and an Alibaba milli that disagree are rejected",
       {},
       {{"alibabacloud.com/gpu-milli", "300"}, {"gpusched.io/gpu-milli", "500"}},
       0,
       0,
       0,
       0,
       0,
       "GPU compute share: annotation gpusched.io/gpu-milli=\"500\" conflicts with annotation "
       "alibabacloud.com/gpu-milli=\"300\""},
      {"a KAI fraction and HAMi percentage that agree are accepted",
       {Limits({{"nvidia.com/gpu", 1}, {"nvidia.com/gpumem-percentage", 50}})},
       {{"gpu-fraction", "0.5"}},
       1,
       500,
       0,
       500,
       0,
       ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Pod pod;
    pod.containers = c.containers;
    pod.meta.annotations = c.annotations;
    std::sort(pod.meta.annotations.begin(), pod.meta.annotations.end());
    DeriveGpuRequest(pod);
    if (!c.error.empty()) {
      EXPECT_THAT(pod.gpu_error, HasSubstr(c.error));
      EXPECT_TRUE(pod.gpu.empty());
      continue;
    }
    EXPECT_EQ(pod.gpu_error, "");
    EXPECT_EQ(pod.gpu.count, c.count);
    EXPECT_EQ(pod.gpu.milli, c.milli);
    EXPECT_EQ(pod.gpu.share_memory_mib, c.memory_mib);
    EXPECT_EQ(pod.gpu.share_memory_permille, c.permille);
    EXPECT_EQ(pod.gpu.min_device_memory_mib, c.min_memory);
    EXPECT_EQ(pod.gpu.shared(), c.milli < kMilliPerGpu);
  }
}

TEST(ResolveGpuShareTest, ResolvesAgainstTheNodeMemory) {
  struct Case {
    std::string name;
    GpuRequest req;
    int64_t node_memory_mib;
    std::optional<GpuShare> want;
  };
  auto shared = [](int32_t milli, int64_t mib, int32_t permille) {
    GpuRequest r;
    r.count = 1;
    r.milli = milli;
    r.share_memory_mib = mib;
    r.share_memory_permille = permille;
    return r;
  };
  GpuRequest whole;
  whole.count = 2;
  whole.milli = kMilliPerGpu;
  const std::vector<Case> cases = {
      {"a whole request takes whole devices", whole, 0, GpuShare{1000, 0}},
      {"an explicit milli without memory needs nothing from the node", shared(300, 0, 0), 0,
       GpuShare{300, 0}},
      {"memory MiB derives milli, rounded up", shared(0, 10000, 0), 40000, GpuShare{250, 10000}},
      {"a tiny memory share still takes 1 milli", shared(0, 1, 0), 81920, GpuShare{1, 1}},
      {"a percentage resolves to MiB, rounded up", shared(0, 0, 250), 15109, GpuShare{250, 3778}},
      {"a percentage with milli keeps the milli", shared(100, 0, 500), 40000, GpuShare{100, 20000}},
      {"a percentage with milli on an unknown node is accounted by milli", shared(500, 0, 500), 0,
       GpuShare{500, 0}},
      {"a memory-derived milli needs the node memory", shared(0, 4096, 0), 0, std::nullopt},
      {"a percentage without milli needs the node memory", shared(0, 0, 500), 0, std::nullopt},
      {"a share above one device does not resolve", shared(0, 50000, 0), 40000, std::nullopt},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    NodeGpuInfo node;
    node.count = 4;
    node.memory_mib = c.node_memory_mib;
    EXPECT_EQ(ResolveGpuShare(c.req, node), c.want);
  }
}

TEST(DeriveNodeGpuInfoTest, CliqueLabelMakesOneKnownIsland) {
  Node node;
  node.meta.labels.Set(Intern(kSeedCountLabel), Intern("8"));
  node.meta.labels.Set(Intern(kGfdCliqueLabel), Intern("4f7d7d8a-1111-2222-3333-444444444444.1"));
  DeriveNodeGpuInfo(node);
  EXPECT_TRUE(node.gpu.nvlink_known);
  for (int d = 0; d < 8; ++d) EXPECT_EQ(node.gpu.island[static_cast<size_t>(d)], 0);
  Node plain;
  plain.meta.labels.Set(Intern(kSeedCountLabel), Intern("8"));
  DeriveNodeGpuInfo(plain);
  EXPECT_FALSE(plain.gpu.nvlink_known);
}

TEST(HamiProtocolTest, ParsesTheNodeRegisterAnnotation) {
  struct Case {
    std::string name;
    std::string text;
    std::vector<HamiDevice> want;
    std::string error;
  };
  const std::vector<Case> cases = {
      {"the documented 7-field form, indices by position",
       "GPU-0055,10,32768,100,NVIDIA-Tesla V100-PCIE-32GB,0,true:GPU-0fc3,10,32768,100,"
       "NVIDIA-Tesla V100-PCIE-32GB,0,false:",
       {{"GPU-0055", 0, 32768, "NVIDIA-Tesla V100-PCIE-32GB", true},
        {"GPU-0fc3", 1, 32768, "NVIDIA-Tesla V100-PCIE-32GB", false}},
       ""},
      {"the newer form carries the index and mode",
       "GPU-a,10,40960,100,NVIDIA-A100,0,true,3,hami-core:",
       {{"GPU-a", 3, 40960, "NVIDIA-A100", true}},
       ""},
      {"too few fields are rejected naming the entry",
       "GPU-a,10,40960:",
       {},
       "annotation hami.io/node-nvidia-register: device 0 \"GPU-a,10,40960\": want UUID"},
      {"a bad memory is rejected", "GPU-a,10,lots,100,T,0,true:", {}, "invalid memory \"lots\""},
      {"a bad health is rejected", "GPU-a,10,1,100,T,0,yes:", {}, "invalid health \"yes\""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto got = ParseHamiNodeRegister(c.text);
    if (!c.error.empty()) {
      ASSERT_FALSE(got.ok());
      EXPECT_THAT(std::string(got.status().message()), HasSubstr(c.error));
      continue;
    }
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(*got, c.want);
  }
}

TEST(HamiProtocolTest, FormatsDevicesToAllocate) {
  const std::vector<HamiDevice> devices = {{"GPU-a", 0, 40960, "NVIDIA-A100", true},
                                           {"GPU-b", 1, 40960, "NVIDIA-A100", true}};
  struct Case {
    std::string name;
    GpuAssignment a;
    int containers;
    int gpu_container;
    std::string want;
    std::string error;
  };
  const std::vector<Case> cases = {
      {"a memory share on one device", GpuAssignment{{1}, 250, 10240}, 1, 0,
       "GPU-b,NVIDIA,10240,25:;", ""},
      {"whole devices get the device memory and 100 cores", GpuAssignment{{0, 1}, 1000, 0}, 1, 0,
       "GPU-a,NVIDIA,40960,100:GPU-b,NVIDIA,40960,100:;", ""},
      {"a compute-only share gets the same fraction of memory", GpuAssignment{{0}, 300, 0}, 1, 0,
       "GPU-a,NVIDIA,12288,30:;", ""},
      {"other containers get empty entries", GpuAssignment{{0}, 500, 2048}, 3, 1,
       ";GPU-a,NVIDIA,2048,50:;;", ""},
      {"a device missing from the register is an error", GpuAssignment{{2}, 500, 0}, 1, 0, "",
       "device 2 is not in annotation hami.io/node-nvidia-register"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto got = FormatHamiDevicesToAllocate(c.a, devices, 40960, c.containers, c.gpu_container);
    if (!c.error.empty()) {
      ASSERT_FALSE(got.ok());
      EXPECT_THAT(std::string(got.status().message()), HasSubstr(c.error));
      continue;
    }
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(*got, c.want);
  }
}

TEST(GpuAssignmentTest, FormatsAndParsesBack) {
  struct Case {
    std::string name;
    GpuAssignment a;
    std::string text;
  };
  const std::vector<Case> cases = {
      {"whole GPUs are a list of indices", GpuAssignment{{0, 1}, 1000, 0}, "0,1"},
      {"a shared GPU carries its milli and memory", GpuAssignment{{3}, 500, 4096}, "3:500m:4096Mi"},
      {"a compute-only share omits memory", GpuAssignment{{2}, 250, 0}, "2:250m"},
      {"two shared devices repeat the share", GpuAssignment{{0, 1}, 250, 0}, "0:250m,1:250m"},
      {"the highest device index is accepted", GpuAssignment{{15}, 1000, 0}, "15"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(FormatGpuAssignment(c.a), c.text);
    auto parsed = ParseGpuAssignment(c.text);
    ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
    EXPECT_EQ(*parsed, c.a);
  }
  EXPECT_EQ(FormatGpuAssignment(GpuAssignment{}), "");
}

TEST(GpuAssignmentTest, RejectsMalformedAnnotations) {
  struct Case {
    std::string name;
    std::string text;
    std::string error;
  };
  const std::vector<Case> cases = {
      {"an empty value is rejected", "", "invalid GPU assignment \"\": empty"},
      {"an index beyond the maximum is rejected", "16",
       "invalid GPU assignment \"16\": invalid device index \"16\" (want 0..15)"},
      {"a negative index is rejected", "-1", "invalid device index \"-1\""},
      {"a non-numeric index is rejected", "a", "invalid device index \"a\""},
      {"a trailing comma is rejected", "0,", "invalid device index \"\""},
      {"a duplicate index is rejected", "0,0", "device 0 listed twice"},
      {"a zero share is rejected", "0:0m", "invalid share \"0m\" (want 1m..1000m)"},
      {"a share above one GPU is rejected", "0:1001m", "invalid share \"1001m\""},
      {"a share without its unit is rejected", "0:500", "invalid share \"500\""},
      {"a zero memory is rejected", "0:500m:0Mi", "invalid memory \"0Mi\""},
      {"a memory without its unit is rejected", "0:500m:4096", "invalid memory \"4096\""},
      {"too many fields are rejected", "0:500m:1Mi:x", "too many ':'"},
      {"whole and shared devices do not mix", "0,1:500m", "mixes whole and shared devices"},
      {"shared devices must share equally", "0:500m,1:250m", "devices have different shares"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto parsed = ParseGpuAssignment(c.text);
    ASSERT_FALSE(parsed.ok());
    EXPECT_THAT(std::string(parsed.status().message()), HasSubstr(c.error));
  }
}

}  // namespace
}  // namespace gpusched::api
