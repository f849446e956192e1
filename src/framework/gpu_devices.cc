// SPDX-License-Identifier: Apache-2.0
#include "src/framework/gpu_devices.h"

namespace gpusched::framework {

bool GpuRequestFits(const api::NodeGpuInfo& info, std::span<const api::GpuDeviceState> devices,
                    const api::GpuRequest& req) {
  if (req.empty()) return true;
  int fit = 0;
  for (int i = 0; i < info.count; ++i) {
    if (DeviceFits(info, devices[static_cast<size_t>(i)], i, req.milli, req.share_memory_mib)) {
      if (++fit >= req.count) return true;
    }
  }
  return false;
}

std::optional<api::GpuAssignment> ChooseDevicesBestFit(const api::NodeGpuInfo& info,
                                                       std::span<const api::GpuDeviceState> devices,
                                                       const api::GpuRequest& req) {
  api::GpuAssignment out;
  out.milli = req.milli;
  out.memory_mib = req.share_memory_mib;
  if (req.empty()) return out;
  if (req.shared()) {
    int best = -1;
    int32_t best_free = api::kMilliPerGpu + 1;
    for (int i = 0; i < info.count; ++i) {
      const auto& d = devices[static_cast<size_t>(i)];
      if (!DeviceFits(info, d, i, req.milli, req.share_memory_mib)) continue;
      int32_t free = api::kMilliPerGpu - d.used_milli;
      if (free < best_free) {
        best_free = free;
        best = i;
      }
    }
    if (best < 0) return std::nullopt;
    out.devices.push_back(static_cast<int8_t>(best));
    return out;
  }
  for (int i = 0; i < info.count && static_cast<int32_t>(out.devices.size()) < req.count; ++i) {
    const auto& d = devices[static_cast<size_t>(i)];
    if (info.Healthy(i) && d.used_milli == 0 && d.used_memory_mib == 0) {
      out.devices.push_back(static_cast<int8_t>(i));
    }
  }
  if (static_cast<int32_t>(out.devices.size()) < req.count) return std::nullopt;
  return out;
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

}  // namespace gpusched::framework
