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

#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "src/api/dra.h"
#include "src/framework/dra_view.h"
#include "src/plugins/dynamic_resources/selectors.h"

namespace gpusched::plugins::dynamic_resources {

// Keeps, per waiting claim, which distinct choices (shapes) it asks for and how many devices, so
// that a cycle pays a hash look-up per waiting claim, not a selector match; forgotten when the
// device index or the classes change. Not thread-safe (the plugin's PreScore, on the scheduling
// thread).
class DevicePressure {
 public:
  // Per device number of `index`: the pressure on the device (0 for busy devices). Empty when no
  // waiting restricted request puts pressure on any device. `pending`: the claims waiting for an
  // allocation (DraView::PendingClaims), less `exclude` (the pod's own). A claim whose choice
  // cannot be matched (missing class, bad selector) is left out.
  std::vector<float> Compute(SelectorCache& selectors, const framework::DraView& view,
                             const framework::DeviceIndex& index,
                             const framework::DeviceUsage& usage,
                             std::span<const api::ResourceClaimPtr> pending,
                             std::span<const api::ResourceClaimPtr> exclude);

 private:
  struct Shape {
    std::shared_ptr<const ChoiceMatches> matches;
    std::shared_ptr<const ChoiceMatches> class_matches;
  };
  struct ClaimDemand {
    api::ResourceClaimPtr claim;                     // keeps the key's object alive
    std::vector<std::pair<uint32_t, int64_t>> asks;  // (shape, devices)
  };
  const ClaimDemand& DemandOf(SelectorCache& selectors, const framework::DraView& view,
                              const framework::DeviceIndex& index,
                              const api::ResourceClaimPtr& claim);
  uint32_t ShapeOf(SelectorCache& selectors, const framework::DraView& view,
                   const framework::DeviceIndex& index,
                   std::shared_ptr<const ChoiceMatches> matches, const api::DeviceChoice& choice);

  uint64_t index_version_ = 0;
  uint64_t class_version_ = 0;
  std::vector<Shape> shapes_;  // in the order first seen: the sums are deterministic
  std::unordered_map<const ChoiceMatches*, uint32_t> shape_of_;
  std::unordered_map<const api::ResourceClaim*, ClaimDemand> claims_;
};

}  // namespace gpusched::plugins::dynamic_resources
