// SPDX-License-Identifier: Apache-2.0
// The structured-parameters device allocator of the DynamicResources plugin: for one node, picks
// devices for every request of every claim the pod still needs allocated, as upstream's
// k8s.io/dynamic-resource-allocation/structured allocator decides feasibility:
//   - `exactly` requests with allocationMode ExactCount (count devices) or All (every matching
//     device the node reaches, at least one, none of them held by another claim);
//   - `firstAvailable` subrequests, tried in order (the result names "<request>/<subrequest>");
//   - matchAttribute constraints: every device of the named requests (all when none are named)
//     has the attribute, with one value;
//   - adminAccess: held devices may be picked (and are not held by this claim afterwards);
//   - devices held by other claims, taken by an earlier request of this pod, or with a
//     NoSchedule/NoExecute taint the request does not tolerate are skipped.
// A backtracking search over the node's devices in the caller's order (the plugin orders them so
// that the fullest NVLink island / PCIe root goes first: fragmentation-aware packing), bounded by
// kMaxSteps device picks; allocates nothing when the pod has no claim to allocate.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "src/api/dra.h"
#include "src/framework/dra_view.h"

namespace gpusched::plugins::dynamic_resources {

// Per device number of a DeviceIndex: whether the device satisfies a DeviceChoice (its class's
// selectors and its own), computed once per (choice, index version) by SelectorCache.
struct ChoiceMatches {
  std::vector<uint8_t> match;
  // The first CEL runtime error seen while matching ("" when none; such a device does not
  // match), for `gpusched explain`.
  std::string error;
};

struct Alternative {
  std::string result_request;  // "<request>" or "<request>/<subrequest>"
  const api::DeviceChoice* choice = nullptr;
  std::shared_ptr<const ChoiceMatches> matches;
};

struct RequestPlan {
  std::string name;
  std::vector<Alternative> alternatives;  // one for `exactly`; firstAvailable in order
};

struct ConstraintPlan {
  std::vector<size_t> requests;  // indices into ClaimPlan::requests
  std::string attribute;         // fully qualified
};

struct ClaimPlan {
  api::ResourceClaimPtr claim;
  std::vector<RequestPlan> requests;
  std::vector<ConstraintPlan> constraints;
};

// One device position of the node: its number in the DeviceIndex and whether another claim holds
// it.
struct NodeDevice {
  uint32_t device = 0;
  bool busy = false;
};

inline constexpr int kMaxSteps = 100000;

// Allocates every claim of `claims` from `node_devices` (in preference order). Returns false when
// impossible (or the step bound is hit). With `out`, fills one vector of results per claim; with
// `held`, the device numbers the allocation holds (admin access picks hold none).
bool Allocate(std::span<const ClaimPlan> claims, const framework::DeviceIndex& index,
              std::span<const NodeDevice> node_devices,
              std::vector<std::vector<api::DeviceResult>>* out,
              std::vector<uint32_t>* held = nullptr);

}  // namespace gpusched::plugins::dynamic_resources
