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
//     NoSchedule/NoExecute taint the request does not tolerate are skipped;
//   - partitionable devices (KEP-4815): a device is picked only while every counter it draws on
//     has what it takes left, counting the devices picked before it (a MIG partition and the
//     whole GPU it is cut from, drawing on one counter set, are never both allocated);
//   - consumable capacity (KEP-5075): a device that allows multiple allocations is never held
//     whole; each pick takes a share of its capacities (the request's capacity.requests rounded
//     by the device's request policies, all of a capacity the request does not name unless the
//     policy has a default) while what the other shares left suffices; the result names the
//     share (shareID, deterministic per claim, request and device) and what it consumes. One
//     allocation takes at most one share of a device;
//   - devices of an invalid pool (DeviceIndex::invalid_pools) are never picked.
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

// One device position of the node: its number in the DeviceIndex and whether it is busy: another
// claim holds it, or it cannot be allocated (the counters it draws on are short, its pool is
// invalid).
struct NodeDevice {
  uint32_t device = 0;
  bool busy = false;
  // A shared device (KEP-5075) that claims already hold shares of: its counter draws are taken,
  // a new share takes only capacity.
  bool shared_in_use = false;
};

// What a counter the node's devices draw on has left once the held devices' draws are taken.
struct CounterLeft {
  uint32_t counter = 0;  // in DeviceIndex::counters
  int64_t left = 0;      // thousandths
};

// The devices one node offers the allocator (GatherNodeDevices, node_devices.h), in the order
// they should be tried, and what the counters they draw on have left.
struct NodeDevices {
  std::vector<NodeDevice> devices;
  std::vector<CounterLeft> counters;  // ascending by counter

  // The entry of `counter`; null when no device here draws on it.
  CounterLeft* Find(uint32_t counter);
  const CounterLeft* Find(uint32_t counter) const;
  // Whether the free device `nd` can still draw what it needs (nothing more for a shared device
  // in use).
  bool CountersAllow(const framework::DeviceIndex& index, const NodeDevice& nd) const;
  // Whether device `d` can give one allocation for `choice` what it asks of the device's
  // capacities (api::ConsumedCapacity: the request policy allows the amounts, and they fit in
  // what a shared device's capacity counters have left, or in any other device's capacity); with
  // `out`, the amounts (thousandths, by device->capacity; left empty for a device that is not
  // shared). Always true for a device that is not shared and a choice that asks no capacity.
  bool CapacityAllows(const framework::DeviceIndex& index, uint32_t d,
                      const api::DeviceChoice& choice, std::vector<int64_t>* out) const;
  // Marks the devices `held` (device numbers) busy and takes their draws from the counters (a
  // nominated pod's claims, a waiting claim replayed here; a shared device is held whole, which
  // errs on the safe side), then marks busy the devices that can no longer draw what they need.
  void Take(const framework::DeviceIndex& index, std::span<const uint32_t> held);
  // Marks busy every free device whose pool is invalid or whose counters are short.
  void MarkUnallocatable(const framework::DeviceIndex& index);
};

inline constexpr int kMaxSteps = 100000;

// Allocates every claim of `claims` from `node_devices` (in preference order). Returns false when
// impossible (or the step bound is hit). With `out`, fills one vector of results per claim; with
// `held`, the device numbers the allocation holds (admin access picks hold none).
bool Allocate(std::span<const ClaimPlan> claims, const framework::DeviceIndex& index,
              const NodeDevices& node_devices, std::vector<std::vector<api::DeviceResult>>* out,
              std::vector<uint32_t>* held = nullptr);

}  // namespace gpusched::plugins::dynamic_resources
