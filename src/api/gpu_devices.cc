// SPDX-License-Identifier: Apache-2.0
#include "src/api/gpu_devices.h"

#include <algorithm>
#include <array>
#include <bit>

namespace gpusched::api {
namespace {

bool WholeFree(const api::NodeGpuInfo& info, const api::GpuDeviceState& d, int device) {
  return info.Healthy(device) && d.used_milli == 0 && d.used_memory_mib == 0;
}

// Fitting devices per island id (island ids are < kMaxGpusPerNode).
std::array<uint32_t, api::kMaxGpusPerNode> ByIsland(const api::NodeGpuInfo& info,
                                                    uint32_t fitting) {
  std::array<uint32_t, api::kMaxGpusPerNode> out{};
  for (int i = 0; i < info.count && i < api::kMaxGpusPerNode; ++i) {
    if (fitting >> i & 1u)
      out[info.island[static_cast<size_t>(i)] % api::kMaxGpusPerNode] |= 1u << i;
  }
  return out;
}

// Whether device i can take one `share` (a whole share: the device is free).
bool TakesOne(const api::NodeGpuInfo& info, const api::GpuDeviceState& d, int device,
              const api::GpuShare& share) {
  const bool whole = share.milli >= api::kMilliPerGpu && share.memory_mib == 0;
  return whole ? WholeFree(info, d, device)
               : DeviceFits(info, d, device, share.milli, share.memory_mib);
}

// Bit i set: device i can take one `share`.
uint32_t FittingMask(const api::NodeGpuInfo& info, std::span<const api::GpuDeviceState> devices,
                     const api::GpuShare& share) {
  uint32_t mask = 0;
  const int n = std::min<int>(info.count, static_cast<int>(devices.size()));
  for (int i = 0; i < n && i < api::kMaxGpusPerNode; ++i) {
    if (TakesOne(info, devices[static_cast<size_t>(i)], i, share)) mask |= 1u << i;
  }
  return mask;
}

// Shares of `share` that device i can still take: by compute and, when accounted, by memory.
int FreeShares(const api::NodeGpuInfo& info, const api::GpuDeviceState& d, int device,
               const api::GpuShare& share) {
  if (!info.Healthy(device) || share.milli <= 0) return 0;
  int64_t n = (api::kMilliPerGpu - d.used_milli) / share.milli;
  if (share.memory_mib > 0 && info.memory_mib > 0) {
    n = std::min<int64_t>(n, (info.memory_mib - d.used_memory_mib) / share.memory_mib);
  }
  return static_cast<int>(std::max<int64_t>(n, 0));
}

// Free replicas on the devices of `mask`.
int FreeReplicas(const api::NodeGpuInfo& info, std::span<const api::GpuDeviceState> devices,
                 const api::GpuShare& share, uint32_t mask) {
  int total = 0;
  const int n = std::min<int>(info.count, static_cast<int>(devices.size()));
  for (int i = 0; i < n && i < api::kMaxGpusPerNode; ++i) {
    if (mask >> i & 1u) total += FreeShares(info, devices[static_cast<size_t>(i)], i, share);
  }
  return total;
}

// Whether the devices of `mask` can take the request: `count` replicas in all (replica requests),
// else `count` fitting devices.
bool MaskTakes(const api::NodeGpuInfo& info, std::span<const api::GpuDeviceState> devices,
               const api::GpuRequest& req, const api::GpuShare& share, uint32_t mask) {
  if (IsReplicaRequest(info, req)) return FreeReplicas(info, devices, share, mask) >= req.count;
  return std::popcount(mask) >= req.count;
}

// The device plugin's default ("distributed") choice of replicas: each replica from the device
// with the most free compute that can still take one (lower index on ties), so a pod asking
// more replicas than `candidates` has devices gets several replicas of one GPU.
void ChooseReplicas(const api::NodeGpuInfo& info, std::span<const api::GpuDeviceState> devices,
                    const api::GpuShare& share, uint32_t candidates, int count,
                    api::GpuAssignment& out) {
  std::array<api::GpuDeviceState, api::kMaxGpusPerNode> used{};
  for (int i = 0; i < api::kMaxGpusPerNode; ++i) {
    if (candidates >> i & 1u) used[static_cast<size_t>(i)] = devices[static_cast<size_t>(i)];
  }
  for (int taken = 0; taken < count; ++taken) {
    int pick = -1;
    for (int i = 0; i < api::kMaxGpusPerNode; ++i) {
      const auto& d = used[static_cast<size_t>(i)];
      if (!(candidates >> i & 1u) || FreeShares(info, d, i, share) == 0) continue;
      if (pick < 0 || d.used_milli < used[static_cast<size_t>(pick)].used_milli) pick = i;
    }
    if (pick < 0) return;  // the caller checked MaskTakes: not reached
    used[static_cast<size_t>(pick)].used_milli += share.milli;
    used[static_cast<size_t>(pick)].used_memory_mib += share.memory_mib;
    out.devices.push_back(static_cast<int8_t>(pick));
  }
}

}  // namespace

api::GpuRequest ResolvedOnNode(const api::GpuRequest& req, const api::NodeGpuInfo& info) {
  api::GpuRequest out;
  out.count = req.count;
  out.milli = req.milli;
  out.min_device_memory_mib = req.min_device_memory_mib;
  if (req.shared() || info.replicas > 1) {
    const std::optional<api::GpuShare> share = api::ResolveGpuShare(req, info);
    out.milli = share ? share->milli : api::kMilliPerGpu;
    out.share_memory_mib = share ? share->memory_mib : 0;
  }
  return out;
}

uint32_t FittingDevices(const api::NodeGpuInfo& info, std::span<const api::GpuDeviceState> devices,
                        const api::GpuRequest& req) {
  if (req.empty()) return 0;
  const std::optional<api::GpuShare> share = api::ResolveGpuShare(req, info);
  return share ? FittingMask(info, devices, *share) : 0;
}

bool GpuRequestFits(const api::NodeGpuInfo& info, std::span<const api::GpuDeviceState> devices,
                    const api::GpuRequest& req) {
  if (req.empty()) return true;
  const std::optional<api::GpuShare> share = api::ResolveGpuShare(req, info);
  if (!share) return false;
  // MaskTakes(FittingMask(...)), counted device by device so that it stops as soon as the
  // devices give enough (GpuFit's Filter path).
  const bool replicas = IsReplicaRequest(info, req);
  int found = 0;
  const int n = std::min<int>(info.count, static_cast<int>(devices.size()));
  for (int i = 0; i < n && i < api::kMaxGpusPerNode; ++i) {
    const auto& d = devices[static_cast<size_t>(i)];
    found += replicas ? FreeShares(info, d, i, *share) : (TakesOne(info, d, i, *share) ? 1 : 0);
    if (found >= req.count) return true;
  }
  return false;
}

bool FitsInOneIsland(const api::NodeGpuInfo& info, std::span<const api::GpuDeviceState> devices,
                     const api::GpuRequest& req) {
  if (req.empty()) return true;
  const std::optional<api::GpuShare> share = api::ResolveGpuShare(req, info);
  if (!share) return false;
  const uint32_t fitting = FittingMask(info, devices, *share);
  for (uint32_t m : ByIsland(info, fitting)) {
    if (MaskTakes(info, devices, req, *share, m)) return true;
  }
  return false;
}

std::optional<api::GpuAssignment> ChooseDevices(const api::NodeGpuInfo& info,
                                                std::span<const api::GpuDeviceState> devices,
                                                const api::GpuRequest& req, DevicePolicy policy,
                                                bool require_island) {
  api::GpuAssignment out;
  if (req.empty()) return out;
  const std::optional<api::GpuShare> share = api::ResolveGpuShare(req, info);
  if (!share) return std::nullopt;
  out.milli = share->milli;
  out.memory_mib = share->memory_mib;
  const uint32_t fitting = FittingMask(info, devices, *share);
  if (!MaskTakes(info, devices, req, *share, fitting)) return std::nullopt;

  // Candidate set: one island when possible (multi-device requests).
  uint32_t candidates = fitting;
  if (req.count > 1) {
    int best = -1;
    int best_n = 0;
    const auto islands = ByIsland(info, fitting);
    for (int k = 0; k < api::kMaxGpusPerNode; ++k) {
      const uint32_t island = islands[static_cast<size_t>(k)];
      if (!MaskTakes(info, devices, req, *share, island)) continue;
      const int n = std::popcount(island);
      const bool better = best < 0 || (policy == DevicePolicy::kBinpack ? n < best_n : n > best_n);
      if (better) {
        best = k;
        best_n = n;
      }
    }
    if (best >= 0) {
      candidates = islands[static_cast<size_t>(best)];
    } else if (require_island) {
      return std::nullopt;
    }
  }

  if (IsReplicaRequest(info, req)) {
    ChooseReplicas(info, devices, *share, candidates, req.count, out);
    std::sort(out.devices.begin(), out.devices.end());
    return out;
  }
  // Take devices in policy order: free milli ascending (binpack) or descending (spread).
  for (int taken = 0; taken < req.count; ++taken) {
    int pick = -1;
    int32_t pick_free = 0;
    for (int i = 0; i < api::kMaxGpusPerNode; ++i) {
      if (!(candidates >> i & 1u)) continue;
      const int32_t free = api::kMilliPerGpu - devices[static_cast<size_t>(i)].used_milli;
      const bool better =
          pick < 0 || (policy == DevicePolicy::kBinpack ? free < pick_free : free > pick_free);
      if (better) {
        pick = i;
        pick_free = free;
      }
    }
    candidates &= ~(1u << pick);
    out.devices.push_back(static_cast<int8_t>(pick));
  }
  std::sort(out.devices.begin(), out.devices.end());
  return out;
}

std::optional<api::GpuAssignment> ChooseDevicesBestFit(const api::NodeGpuInfo& info,
                                                       std::span<const api::GpuDeviceState> devices,
                                                       const api::GpuRequest& req) {
  return ChooseDevices(info, devices, req, DevicePolicy::kBinpack);
}
bool ApplyAssignment(const api::NodeGpuInfo& info, std::span<api::GpuDeviceState> devices,
                     const api::GpuAssignment& a, int sign) {
  // Shares per device: a device listed n times (replicas of one GPU) takes n shares.
  std::array<int32_t, api::kMaxGpusPerNode> times{};
  for (int8_t idx : a.devices) {
    if (idx < 0 || idx >= info.count || static_cast<size_t>(idx) >= devices.size()) return false;
    ++times[static_cast<size_t>(idx)];
  }
  for (size_t i = 0; i < times.size(); ++i) {
    if (sign > 0 && times[i] > 0 &&
        devices[i].used_milli + times[i] * a.milli > api::kMilliPerGpu) {
      return false;
    }
  }
  for (size_t i = 0; i < times.size(); ++i) {
    if (times[i] == 0) continue;
    auto& d = devices[i];
    d.used_milli = std::max(0, d.used_milli + sign * times[i] * a.milli);
    d.used_memory_mib = std::max<int64_t>(0, d.used_memory_mib + sign * times[i] * a.memory_mib);
    d.pods = std::max(0, d.pods + sign);
  }
  return true;
}

}  // namespace gpusched::api
