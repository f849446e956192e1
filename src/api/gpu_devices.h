// SPDX-License-Identifier: Apache-2.0
// Device-level GPU math shared by the cache (to account pods that arrive without a recorded
// device choice) and by GPU plugins (Filter, Score, Reserve). Pure functions over a node's GPU
// facts and per-device usage; no allocation except the returned assignment.
//
// A request's per-device share is resolved against the node first (api::ResolveGpuShare: memory
// percentages and memory-derived compute shares depend on the node's device memory). NVLink
// islands are api::NodeGpuInfo::island (all 0, i.e. one island, when the node publishes none).
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "src/api/gpu.h"

namespace gpusched::api {

// Device-level placement policy: binpack fills partly used devices (and the smallest island that
// fits) first; spread takes the emptiest devices (and the largest island) first.
enum class DevicePolicy : uint8_t { kBinpack, kSpread };

// True when device `d` can take a share of `milli` compute and `memory_mib` memory.
inline bool DeviceFits(const api::NodeGpuInfo& info, const api::GpuDeviceState& d, int device,
                       int32_t milli, int64_t memory_mib) {
  if (!info.Healthy(device)) return false;
  if (d.used_milli + milli > api::kMilliPerGpu) return false;
  if (memory_mib > 0 && info.memory_mib > 0 && d.used_memory_mib + memory_mib > info.memory_mib) {
    return false;
  }
  return true;
}

// `req` with its per-device share resolved on this node (milli and share_memory_mib set from
// api::ResolveGpuShare, also for a whole-GPU request on a node that shares its GPUs as replicas;
// a share that does not resolve becomes a whole device, which GpuFit's
// Filter has already rejected). Models are not copied: allocation-free, for per-node use by
// plugins written against GpuRequest::milli.
api::GpuRequest ResolvedOnNode(const api::GpuRequest& req, const api::NodeGpuInfo& info);

// A whole-GPU count on a node whose GPUs are shared as replicas (time-slicing or MPS): the pod
// asks `count` replicas, and the device plugin may hand out several replicas of one GPU.
inline bool IsReplicaRequest(const api::NodeGpuInfo& info, const api::GpuRequest& req) {
  return info.replicas > 1 && !req.empty() && !req.shared();
}

// Bit i set: device i can take one device's worth of `req` (whole requests: a fully free healthy
// device; shared: DeviceFits with the resolved share). 0 when the share does not resolve.
uint32_t FittingDevices(const api::NodeGpuInfo& info, std::span<const api::GpuDeviceState> devices,
                        const api::GpuRequest& req);

// Whether the request can be placed on these devices at all: count fitting devices, or for a
// replica request count free replicas on the node's devices together.
bool GpuRequestFits(const api::NodeGpuInfo& info, std::span<const api::GpuDeviceState> devices,
                    const api::GpuRequest& req);

// Whether `req.count` fitting devices (replica requests: free replicas) exist inside one NVLink
// island. A single-device request always qualifies when it fits.
bool FitsInOneIsland(const api::NodeGpuInfo& info, std::span<const api::GpuDeviceState> devices,
                     const api::GpuRequest& req);

// Chooses `req.count` devices. Order of devices: binpack = least free milli first, spread = most
// free first, lower index on ties (whole requests: lowest-index free devices). A multi-device
// request is placed inside one island when one has room (binpack: the island with the fewest
// fitting devices, spread: the most; lower island id on ties); otherwise across islands, unless
// `require_island`, then nullopt. nullopt when it does not fit. A replica request takes its
// replicas as the NVIDIA device plugin's default "distributed" policy does, whatever `policy`
// says: each from the device with the most free compute (lower index on ties), a device listed
// once per replica it gives.
std::optional<api::GpuAssignment> ChooseDevices(const api::NodeGpuInfo& info,
                                                std::span<const api::GpuDeviceState> devices,
                                                const api::GpuRequest& req, DevicePolicy policy,
                                                bool require_island = false);

// The paper's "best fit" device choice (docs/gpu-placement.md, "The FGD paper's definitions"):
// ChooseDevices with kBinpack.
std::optional<api::GpuAssignment> ChooseDevicesBestFit(const api::NodeGpuInfo& info,
                                                       std::span<const api::GpuDeviceState> devices,
                                                       const api::GpuRequest& req);

// Adds (sign=+1) or removes (sign=-1) an assignment's usage (a device listed n times takes n
// shares). Returns false (and changes nothing) when adding would over-commit a device or an index
// is out of range.
bool ApplyAssignment(const api::NodeGpuInfo& info, std::span<api::GpuDeviceState> devices,
                     const api::GpuAssignment& a, int sign);

}  // namespace gpusched::api
