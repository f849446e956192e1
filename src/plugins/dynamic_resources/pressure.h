// SPDX-License-Identifier: Apache-2.0
// Device pressure: how much of each free device the claims still waiting for an allocation will
// need, so that a pod that could use many devices takes those that fewer waiting pods can use
// (gpusched's model pressure for device-plugin GPUs, GpuFragmentation's ModelPressure, applied
// to DRA devices).
//
// Only restricted requests count: a request whose choice (its first alternative) matches fewer
// free devices than its DeviceClass does (a product name, a memory floor, an architecture). Such
// a request for D devices matching F free devices puts D / F on each of them; a device's
// pressure is the sum over the waiting restricted requests. A device at pressure 1 or more is
// spoken for. Requests with allocationMode All and adminAccess requests do not count (All takes
// what is there; admin access holds nothing).
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "src/api/dra.h"
#include "src/framework/dra_view.h"
#include "src/plugins/dynamic_resources/selectors.h"

namespace gpusched::plugins::dynamic_resources {

// Per device number of `index`: the pressure on the device (0 for busy devices). Empty when no
// waiting restricted request puts pressure on any device. `pending`: the claims waiting for an
// allocation (DraView::PendingClaims), less `exclude` (the pod's own). A claim whose choice cannot
// be matched (missing class, bad selector) is left out.
std::vector<float> DevicePressure(SelectorCache& selectors, const framework::DraView& view,
                                  const framework::DeviceIndex& index,
                                  const framework::DeviceUsage& usage,
                                  std::span<const api::ResourceClaimPtr> pending,
                                  std::span<const api::ResourceClaimPtr> exclude);

}  // namespace gpusched::plugins::dynamic_resources
