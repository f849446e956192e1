// SPDX-License-Identifier: Apache-2.0
// Device-level GPU math shared by the cache (to account pods that arrive without a recorded
// device choice) and by GPU plugins (Filter, Reserve). Pure functions over a node's GPU facts and
// per-device usage; no allocation except the returned assignment.
#pragma once

#include <optional>
#include <span>

#include "src/api/gpu.h"

namespace gpusched::framework {

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

// Whether the request can be placed on these devices at all (count of fitting devices >= count).
bool GpuRequestFits(const api::NodeGpuInfo& info, std::span<const api::GpuDeviceState> devices,
                    const api::GpuRequest& req);

// The paper's "best fit" device choice (../shared/reference/openb-trace-and-fgd.md §6):
// a shared request takes the fitting device with the least free milli (lowest index on ties);
// a whole-GPU request takes the lowest-index fully free devices. nullopt when it does not fit.
std::optional<api::GpuAssignment> ChooseDevicesBestFit(const api::NodeGpuInfo& info,
                                                       std::span<const api::GpuDeviceState> devices,
                                                       const api::GpuRequest& req);

// Adds (sign=+1) or removes (sign=-1) an assignment's usage. Returns false (and changes nothing)
// when adding would over-commit a device or an index is out of range.
bool ApplyAssignment(const api::NodeGpuInfo& info, std::span<api::GpuDeviceState> devices,
                     const api::GpuAssignment& a, int sign);

}  // namespace gpusched::framework
