// SPDX-License-Identifier: Apache-2.0
// GPU vocabulary: what a pod asks for (GpuRequest) and what a node has (NodeGpuInfo), normalised
// from the dialects in docs/gpu-request-dialects.md, plus a node's per-device usage
// (GpuDeviceState). Parsing happens once, on decode; the scheduling cycle only compares integers.
//
// Pod request dialects read here (docs/gpu-placement.md "Request dialects" has the full table):
//   limits["nvidia.com/gpu"]            whole GPUs (count)
//   annotation gpu.nvidia.com/model     acceptable models, "A100" or "A100|H100"
//   annotation gpu.nvidia.com/memory    minimum memory per GPU, MiB
//   sharing: gpusched.io/gpu-{milli,memory,memory-percent} annotations (ours), HAMi
//   nvidia.com/{gpumem,gpumem-percentage,gpucores} resources, alibabacloud.com/gpu-{milli,count}
//   annotations, aliyun.com/gpu-mem resource, KAI gpu-fraction / gpu-memory /
//   gpu-fraction-num-devices annotations, Koordinator koordinator.sh/{gpu-memory-ratio,gpu-core,
//   gpu-memory,gpu.shared} resources.
// Node facts, in order of precedence:
//   labels gpu.nvidia.com/{model,memory,count}     (seed labels; memory in MiB)
//   labels nvidia.com/gpu.{product,memory,count}   (GPU Feature Discovery; -SHARED, -MIG- handled)
//   allocatable nvidia.com/gpu                      (count only)
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "src/common/interner.h"
#include "src/common/status.h"

namespace gpusched::api {

inline constexpr int kMaxGpusPerNode = 16;
inline constexpr int32_t kMilliPerGpu = 1000;

// A pod's GPU request, per device. A whole-GPU request has milli == 1000 and count >= 1; a shared
// request has count >= 1 and milli < 1000: the same share on each of `count` devices. Memory
// shares that depend on the node (a percentage of a device, or a compute share derived from a
// memory share) are resolved per node by ResolveGpuShare.
struct GpuRequest {
  int32_t count = 0;                  // devices wanted; 0 = no GPU request
  int32_t milli = 0;                  // compute share of each device, 1..1000; 0 (shared only) =
                                      // the memory share's fraction of the node's device memory
  int64_t share_memory_mib = 0;       // memory consumed on each device when shared; 0 = none
  int32_t share_memory_permille = 0;  // memory share as 1/1000 of each device's memory; 0 = none
                                      // (never set together with share_memory_mib)
  int64_t min_device_memory_mib = 0;  // each device must have at least this much memory; 0 = any
  std::vector<common::Atom>
      models;  // normalised acceptable models (see NormalizeGpuModel); empty = any

  bool empty() const { return count == 0; }
  bool shared() const { return count > 0 && milli < kMilliPerGpu; }
  // Total milli-GPU the pod takes: count * milli.
  int64_t TotalMilli() const { return static_cast<int64_t>(count) * milli; }
  friend bool operator==(const GpuRequest&, const GpuRequest&) = default;
};

// A node's GPUs as published by its labels.
struct NodeGpuInfo {
  int32_t count = 0;            // physical GPUs (<= kMaxGpusPerNode)
  common::Atom model;           // normalised model, e.g. "A100-SXM4-40GB"; empty if unknown
  common::Atom model_family;    // first token of the model, e.g. "A100"; empty if unknown
  int64_t memory_mib = 0;       // memory of one GPU; 0 if unknown
  uint32_t unhealthy_mask = 0;  // bit i set: device i must never be allocated
  // NVLink islands: island[i] is the island id of device i (all 0 when unknown: one island).
  std::array<uint8_t, kMaxGpusPerNode> island{};
  bool nvlink_known = false;  // island comes from a valid nvlink-islands annotation, or the
                              // node has a GFD nvidia.com/gpu.clique label (one island)
  // GPU sharing by the NVIDIA device plugin (time-slicing or MPS, a "-SHARED" product label):
  // each GPU is advertised as `replicas` nvidia.com/gpu, and a pod asking N GPUs gets N replicas
  // (ResolveGpuShare: 1/replicas of a device each). With MPS each replica also gets 1/replicas of
  // the device's memory.
  int32_t replicas = 1;
  bool mps = false;
  std::string source;  // which dialect supplied the facts, for explain/debug

  bool Healthy(int device) const { return (unhealthy_mask >> device & 1u) == 0; }
  friend bool operator==(const NodeGpuInfo&, const NodeGpuInfo&) = default;
};

// The share a request takes on each device of one node, resolved from a GpuRequest.
struct GpuShare {
  int32_t milli = kMilliPerGpu;  // 1..1000
  int64_t memory_mib = 0;        // 0 = memory not accounted
  friend bool operator==(const GpuShare&, const GpuShare&) = default;
};

// Resolves `req` against a node's per-GPU memory (O(1), allocation-free). Whole GPUs: {1000, 0};
// on a node whose GPUs are shared as replicas (NodeGpuInfo::replicas > 1): one replica,
// {1000 / replicas, MPS ? memory / replicas : 0}.
// Shared: memory = share_memory_mib, or ceil(share_memory_permille * node memory / 1000); milli =
// req.milli, or (milli 0) the permille, or ceil(1000 * memory / node memory) clamped to 1..1000.
// nullopt when the share cannot be placed on this node: it needs the node's memory and the node
// does not publish it, or the memory share exceeds one device. A percentage with an explicit milli
// on a node of unknown memory is accounted by milli only (memory 0).
std::optional<GpuShare> ResolveGpuShare(const GpuRequest& req, const NodeGpuInfo& node);

// Usage of one device on a node, kept by the cache.
struct GpuDeviceState {
  int32_t used_milli = 0;       // 0..1000
  int64_t used_memory_mib = 0;  // by shared pods
  int32_t pods = 0;             // pods holding a share of this device
  friend bool operator==(const GpuDeviceState&, const GpuDeviceState&) = default;
};

// Devices assigned to one pod: device indices and the share taken on each. A device is listed
// once per share it gives; only replicas of a shared GPU (api::IsReplicaRequest) list one twice.
struct GpuAssignment {
  std::vector<int8_t> devices;
  int32_t milli = 0;       // per device
  int64_t memory_mib = 0;  // per device (shared pods)
  bool empty() const { return devices.empty(); }
  friend bool operator==(const GpuAssignment&, const GpuAssignment&) = default;
};

// Normalises a model string for matching (docs/gpu-request-dialects.md §1.3): drop a trailing
// "-SHARED", cut a "-MIG-<profile>" suffix, drop "NVIDIA-"/"Tesla-" prefixes, treat '-', '_' and
// ' ' alike ('-'), fold to upper case. "NVIDIA-A100-SXM4-40GB" -> "A100-SXM4-40GB";
// "Tesla_T4" -> "T4".
std::string NormalizeGpuModel(std::string_view raw);

// True when a node whose normalised model is `node_model` satisfies the requested normalised model
// `want`: equal to the model or its family, or a whole '-'-separated token run of it ("A100" and
// "SXM4-40GB" match "A100-SXM4-40GB"; "A10" does not match "A100-PCIE-40GB", "40GB" does not match
// "A100-SXM4-80GB"). An empty `node_model` or `want` matches nothing.
// Precomputed by plugins in PreFilter per node model, never per node.
bool GpuModelMatches(std::string_view node_model, std::string_view want);

// Formats an assignment for the gpusched.io/gpu-devices annotation and parses it back:
//   whole GPUs (milli 1000, no memory)   "0,1"
//   shared                                "3:500m" or "3:500m:4096Mi" ("0:250m,1:250m" for two)
//   replicas of one shared GPU            "0:250m,0:250m"
// Parsing rejects indices outside [0, kMaxGpusPerNode), a whole device listed twice, milli outside
// [1, 1000], shares of one device above 1000m, a memory of 0, mixed whole/shared entries and
// entries with different shares.
std::string FormatGpuAssignment(const GpuAssignment& a);
common::StatusOr<GpuAssignment> ParseGpuAssignment(std::string_view text);

// Annotation and label keys.
inline constexpr std::string_view kPodGpuModelAnnotation = "gpu.nvidia.com/model";
inline constexpr std::string_view kPodGpuMemoryAnnotation = "gpu.nvidia.com/memory";
inline constexpr std::string_view kPodGpuDevicesAnnotation = "gpusched.io/gpu-devices";
inline constexpr std::string_view kNodeGpuUtilizationAnnotation = "gpusched.io/gpu-utilization";
inline constexpr std::string_view kSeedModelLabel = "gpu.nvidia.com/model";
inline constexpr std::string_view kSeedMemoryLabel = "gpu.nvidia.com/memory";
inline constexpr std::string_view kSeedCountLabel = "gpu.nvidia.com/count";
inline constexpr std::string_view kGfdProductLabel = "nvidia.com/gpu.product";
inline constexpr std::string_view kGfdMemoryLabel = "nvidia.com/gpu.memory";
inline constexpr std::string_view kGfdCountLabel = "nvidia.com/gpu.count";
inline constexpr std::string_view kGfdReplicasLabel = "nvidia.com/gpu.replicas";
inline constexpr std::string_view kGfdSharingStrategyLabel = "nvidia.com/gpu.sharing-strategy";
// GFD's NVLink fabric clique, "<cluster uuid>.<clique id>": all GPUs of the node are in one
// NVLink domain (docs/gpu-request-dialects.md §1.2).
inline constexpr std::string_view kGfdCliqueLabel = "nvidia.com/gpu.clique";
// Sharing dialects (docs/gpu-request-dialects.md §2). Ours, pod annotations, per device:
inline constexpr std::string_view kPodGpuMilliAnnotation = "gpusched.io/gpu-milli";
inline constexpr std::string_view kPodGpuShareMemoryAnnotation = "gpusched.io/gpu-memory";
inline constexpr std::string_view kPodGpuMemoryPercentAnnotation = "gpusched.io/gpu-memory-percent";
// HAMi container resources, per device.
inline constexpr std::string_view kHamiGpuMemResource = "nvidia.com/gpumem";
inline constexpr std::string_view kHamiGpuMemPercentResource = "nvidia.com/gpumem-percentage";
inline constexpr std::string_view kHamiGpuCoresResource = "nvidia.com/gpucores";
// Alibaba simulator (openb) pod annotations.
inline constexpr std::string_view kAlibabaGpuMilliAnnotation = "alibabacloud.com/gpu-milli";
inline constexpr std::string_view kAlibabaGpuCountAnnotation = "alibabacloud.com/gpu-count";
// gpushare container resource, GiB on one GPU.
inline constexpr std::string_view kAliyunGpuMemResource = "aliyun.com/gpu-mem";
// KAI pod annotations.
inline constexpr std::string_view kKaiGpuFractionAnnotation = "gpu-fraction";
inline constexpr std::string_view kKaiGpuMemoryAnnotation = "gpu-memory";
inline constexpr std::string_view kKaiNumDevicesAnnotation = "gpu-fraction-num-devices";
// Koordinator container resources, totals over gpu.shared devices.
inline constexpr std::string_view kKoordGpuMemoryRatioResource = "koordinator.sh/gpu-memory-ratio";
inline constexpr std::string_view kKoordGpuCoreResource = "koordinator.sh/gpu-core";
inline constexpr std::string_view kKoordGpuMemoryResource = "koordinator.sh/gpu-memory";
inline constexpr std::string_view kKoordGpuSharedResource = "koordinator.sh/gpu.shared";
// Node annotations written by operators or health checkers:
//   gpusched.io/unhealthy-gpus  "1,3": devices never to allocate (unhealthy_mask)
//   gpusched.io/nvlink-islands  "0,1,2,3;4,5,6,7": NVLink groups (island); devices listed in no
//                               group get an island of their own
inline constexpr std::string_view kNodeUnhealthyGpusAnnotation = "gpusched.io/unhealthy-gpus";
inline constexpr std::string_view kNodeNvlinkIslandsAnnotation = "gpusched.io/nvlink-islands";

// HAMi hand-off (docs/gpu-request-dialects.md §3; HAMi docs/develop/protocol.md). The node's
// device plugin publishes its devices; the scheduler writes the chosen devices on the pod so that
// HAMi's device plugin enforces them.
inline constexpr std::string_view kHamiNodeRegisterAnnotation = "hami.io/node-nvidia-register";
inline constexpr std::string_view kHamiDevicesToAllocateAnnotation =
    "hami.io/vgpu-devices-to-allocate";
inline constexpr std::string_view kHamiVgpuNodeAnnotation = "hami.io/vgpu-node";
inline constexpr std::string_view kHamiVgpuTimeAnnotation = "hami.io/vgpu-time";
inline constexpr std::string_view kHamiBindPhaseAnnotation = "hami.io/bind-phase";
inline constexpr std::string_view kHamiBindTimeAnnotation = "hami.io/bind-time";

// One device of hami.io/node-nvidia-register.
struct HamiDevice {
  std::string uuid;
  int32_t index = 0;       // the 8th field when present, else the position in the list
  int64_t memory_mib = 0;  // device memory limit
  std::string type;        // e.g. "NVIDIA-Tesla V100-PCIE-32GB"
  bool healthy = true;
  friend bool operator==(const HamiDevice&, const HamiDevice&) = default;
};

// Parses "UUID,split,memMiB,cores,type,numa,healthy[,index[,mode]]:..." (devices end in ':').
// Errors name the device entry and the field. (JSON encodings of some HAMi releases are not read.)
common::StatusOr<std::vector<HamiDevice>> ParseHamiNodeRegister(std::string_view text);

// hami.io/vgpu-devices-to-allocate for an assignment: one entry per container, each
// "UUID,NVIDIA,memMiB,cores:" per device, every container ended by ';'. The devices go to
// container `gpu_container` (0-based) of `containers`; the others get an empty entry. Memory is
// the share's MiB; whole devices get the device memory (`device_memory_mib`, else the registered
// one); a compute-only share gets the same fraction of it. cores = milli / 10. Fails (naming the
// index) when a chosen device is not in `devices`.
common::StatusOr<std::string> FormatHamiDevicesToAllocate(const GpuAssignment& a,
                                                          const std::vector<HamiDevice>& devices,
                                                          int64_t device_memory_mib, int containers,
                                                          int gpu_container);

struct Pod;
struct Node;
// Fill pod.gpu / pod.gpu_error and node.gpu / node.gpu_error from the decoded fields (called by
// the decoders; exposed for test builders).
//
// DeriveGpuRequest: count = sum over containers of limits["nvidia.com/gpu"] (requests when there
// is no limit), at least the largest init container (sidecars add, as for CPU). The sharing
// dialects (above) are read from annotations and from the containers' limits (requests when no
// limit; every container that sets one must agree); each gives per-device facts (count, milli,
// memory MiB or memory permille), and a fact given by two fields must agree, else the pod is
// rejected naming both, e.g.
//   GPU memory: resource nvidia.com/gpumem="4096" conflicts with annotation gpu-memory="8192"
// A share without any count source gets count 1. A compute share of 1000 is a whole GPU (a memory
// share then becomes the minimum device memory). The model/memory annotations are read only
// when count > 0. The memory annotation is an integer MiB or a quantity with a unit ("16Gi", read
// as bytes, rounded up to MiB). Any malformed value clears pod.gpu and sets pod.gpu_error, e.g.
//   annotation gpu.nvidia.com/memory: invalid value "abc" (want MiB, e.g. 16384)
//
// DeriveNodeGpuInfo: each fact comes from the first source that has a valid value, in the order
// seed labels, GFD labels, allocatable nvidia.com/gpu (count only). node.gpu_error collects
// warnings ("; "-separated), the node stays usable:
//   - a malformed count or memory label is skipped (next source);
//   - "-SHARED" models: allocatable counts replicas, so the count comes from a count label (or
//     allocatable / nvidia.com/gpu.replicas); replicas is nvidia.com/gpu.replicas, else
//     allocatable / count, and mps is nvidia.com/gpu.sharing-strategy=mps;
//   - seed and GFD model or memory labels that disagree are flagged (the seed label is used);
//   - "-MIG-" models (MIG single strategy): gpu.count counts MIG devices, so the count comes from
//     the seed count label, else allocatable, with the warning "MIG single strategy: counts MIG
//     devices";
//   - a plain memory value below 1024 is taken as GB (x1024) and flagged "probably GB";
//   - a count above kMaxGpusPerNode is clamped; seed and GFD counts that disagree are flagged;
//   - invalid unhealthy-gpus entries are skipped, an invalid nvlink-islands value is ignored.
void DeriveGpuRequest(Pod& pod);
void DeriveNodeGpuInfo(Node& node);

}  // namespace gpusched::api
