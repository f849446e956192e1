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
  if (!share) return 0;
  const bool whole = share->milli >= api::kMilliPerGpu && share->memory_mib == 0;
  uint32_t mask = 0;
  const int n = std::min<int>(info.count, static_cast<int>(devices.size()));
  for (int i = 0; i < n && i < api::kMaxGpusPerNode; ++i) {
    const auto& d = devices[static_cast<size_t>(i)];
    const bool fits =
        whole ? WholeFree(info, d, i) : DeviceFits(info, d, i, share->milli, share->memory_mib);
    if (fits) mask |= 1u << i;
  }
  return mask;
}

bool GpuRequestFits(const api::NodeGpuInfo& info, std::span<const api::GpuDeviceState> devices,
                    const api::GpuRequest& req) {
  if (req.empty()) return true;
  return std::popcount(FittingDevices(info, devices, req)) >= req.count;
}

bool FitsInOneIsland(const api::NodeGpuInfo& info, std::span<const api::GpuDeviceState> devices,
                     const api::GpuRequest& req) {
  if (req.empty()) return true;
  const uint32_t fitting = FittingDevices(info, devices, req);
  for (uint32_t m : ByIsland(info, fitting)) {
    if (std::popcount(m) >= req.count) return true;
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
  const uint32_t fitting = FittingDevices(info, devices, req);
  if (std::popcount(fitting) < req.count) return std::nullopt;

  // Candidate set: one island when possible (multi-device requests).
  uint32_t candidates = fitting;
  if (req.count > 1) {
    int best = -1;
    int best_n = 0;
    const auto islands = ByIsland(info, fitting);
    for (int k = 0; k < api::kMaxGpusPerNode; ++k) {
      const int n = std::popcount(islands[static_cast<size_t>(k)]);
      if (n < req.count) continue;
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
  for (int8_t idx : a.devices) {
    if (idx < 0 || idx >= info.count || static_cast<size_t>(idx) >= devices.size()) return false;
    if (sign > 0 && devices[static_cast<size_t>(idx)].used_milli + a.milli > api::kMilliPerGpu) {
      return false;
    }
  }
  for (int8_t idx : a.devices) {
    auto& d = devices[static_cast<size_t>(idx)];
    d.used_milli += sign * a.milli;
    d.used_memory_mib += sign * a.memory_mib;
    d.pods += sign;
    if (d.used_milli < 0) d.used_milli = 0;
    if (d.used_memory_mib < 0) d.used_memory_mib = 0;
    if (d.pods < 0) d.pods = 0;
  }
  return true;
}

}  // namespace gpusched::api
