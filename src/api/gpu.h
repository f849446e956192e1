// SPDX-License-Identifier: Apache-2.0
// GPU vocabulary: what a pod asks for (GpuRequest) and what a node has (NodeGpuInfo), normalised
// from the dialects in ../shared/reference/gpu-dialects.md, plus a node's per-device usage
// (GpuDeviceState). Parsing happens once, on decode; the scheduling cycle only compares integers.
//
// Pod request dialects read here (issue 2 set; more are added by the GPU-sharing work):
//   limits["nvidia.com/gpu"]            whole GPUs (count)
//   annotation gpu.nvidia.com/model     acceptable models, "A100" or "A100|H100"
//   annotation gpu.nvidia.com/memory    minimum memory per GPU, MiB
// Node facts, in order of precedence:
//   labels gpu.nvidia.com/{model,memory,count}     (seed labels; memory in MiB)
//   labels nvidia.com/gpu.{product,memory,count}   (GPU Feature Discovery; -SHARED, -MIG- handled)
//   allocatable nvidia.com/gpu                      (count only)
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "src/common/interner.h"
#include "src/common/status.h"

namespace gpusched::api {

inline constexpr int kMaxGpusPerNode = 16;
inline constexpr int32_t kMilliPerGpu = 1000;

// A pod's GPU request, per device. A whole-GPU request has milli == 1000 and count >= 1; a shared
// request has count == 1 and milli < 1000 (or share_memory_mib > 0).
struct GpuRequest {
  int32_t count = 0;                 // devices wanted; 0 = no GPU request
  int32_t milli = 0;                 // compute share of each device, 1..1000
  int64_t share_memory_mib = 0;      // memory consumed on each device when shared; 0 = none
  int64_t min_device_memory_mib = 0; // each device must have at least this much memory; 0 = any
  std::vector<common::Atom> models;  // normalised acceptable models (see NormalizeGpuModel); empty = any

  bool empty() const { return count == 0; }
  bool shared() const { return count > 0 && milli < kMilliPerGpu; }
  // Total milli-GPU the pod takes: count * milli.
  int64_t TotalMilli() const { return static_cast<int64_t>(count) * milli; }
  friend bool operator==(const GpuRequest&, const GpuRequest&) = default;
};

// A node's GPUs as published by its labels.
struct NodeGpuInfo {
  int32_t count = 0;               // physical GPUs (<= kMaxGpusPerNode)
  common::Atom model;              // normalised model, e.g. "A100-SXM4-40GB"; empty if unknown
  common::Atom model_family;       // first token of the model, e.g. "A100"; empty if unknown
  int64_t memory_mib = 0;          // memory of one GPU; 0 if unknown
  uint32_t unhealthy_mask = 0;     // bit i set: device i must never be allocated
  // NVLink islands: island[i] is the island id of device i (all 0 when unknown: one island).
  std::array<uint8_t, kMaxGpusPerNode> island{};
  std::string source;              // which dialect supplied the facts, for explain/debug

  bool Healthy(int device) const { return (unhealthy_mask >> device & 1u) == 0; }
  friend bool operator==(const NodeGpuInfo&, const NodeGpuInfo&) = default;
};

// Usage of one device on a node, kept by the cache.
struct GpuDeviceState {
  int32_t used_milli = 0;       // 0..1000
  int64_t used_memory_mib = 0;  // by shared pods
  int32_t pods = 0;             // pods holding a share of this device
  friend bool operator==(const GpuDeviceState&, const GpuDeviceState&) = default;
};

// Devices assigned to one pod: device indices and the share taken on each.
struct GpuAssignment {
  std::vector<int8_t> devices;
  int32_t milli = 0;            // per device
  int64_t memory_mib = 0;       // per device (shared pods)
  bool empty() const { return devices.empty(); }
  friend bool operator==(const GpuAssignment&, const GpuAssignment&) = default;
};

// Normalises a model string for matching (gpu-dialects.md §1.3): drop a trailing "-SHARED", cut a
// "-MIG-<profile>" suffix, drop "NVIDIA-"/"Tesla-" prefixes, treat '-', '_' and ' ' alike ('-'),
// fold to upper case. "NVIDIA-A100-SXM4-40GB" -> "A100-SXM4-40GB"; "Tesla_T4" -> "T4".
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
// Parsing rejects indices outside [0, kMaxGpusPerNode), duplicate indices, milli outside
// [1, 1000], a memory of 0, mixed whole/shared entries and entries with different shares.
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
// Node annotations written by operators or health checkers:
//   gpusched.io/unhealthy-gpus  "1,3": devices never to allocate (unhealthy_mask)
//   gpusched.io/nvlink-islands  "0,1,2,3;4,5,6,7": NVLink groups (island); devices listed in no
//                               group get an island of their own
inline constexpr std::string_view kNodeUnhealthyGpusAnnotation = "gpusched.io/unhealthy-gpus";
inline constexpr std::string_view kNodeNvlinkIslandsAnnotation = "gpusched.io/nvlink-islands";

struct Pod;
struct Node;
// Fill pod.gpu / pod.gpu_error and node.gpu / node.gpu_error from the decoded fields (called by
// the decoders; exposed for test builders).
//
// DeriveGpuRequest: count = sum over containers of limits["nvidia.com/gpu"] (requests when there
// is no limit), at least the largest init container (sidecars add, as for CPU); the annotations are
// read only when count > 0. The memory annotation is an integer MiB or a quantity with a unit
// ("16Gi", read as bytes, rounded up to MiB). Any malformed value clears pod.gpu and sets
// pod.gpu_error, e.g.
//   annotation gpu.nvidia.com/memory: invalid value "abc" (want MiB, e.g. 16384)
//
// DeriveNodeGpuInfo: each fact comes from the first source that has a valid value, in the order
// seed labels, GFD labels, allocatable nvidia.com/gpu (count only). node.gpu_error collects
// warnings ("; "-separated), the node stays usable:
//   - a malformed count or memory label is skipped (next source);
//   - "-SHARED" models: allocatable counts replicas, so the count comes from a count label (or
//     allocatable / nvidia.com/gpu.replicas);
//   - "-MIG-" models (MIG single strategy): gpu.count counts MIG devices, so the count comes from
//     the seed count label, else allocatable, with the warning "MIG single strategy: counts MIG
//     devices";
//   - a plain memory value below 1024 is taken as GB (x1024) and flagged "probably GB";
//   - a count above kMaxGpusPerNode is clamped; seed and GFD counts that disagree are flagged;
//   - invalid unhealthy-gpus entries are skipped, an invalid nvlink-islands value is ignored.
void DeriveGpuRequest(Pod& pod);
void DeriveNodeGpuInfo(Node& node);

}  // namespace gpusched::api
