// SPDX-License-Identifier: Apache-2.0
// DraView: what the DynamicResources plugin (and explain, and the simulator's report) reads of the
// cluster's Dynamic Resource Allocation objects (DeviceClasses, ResourceSlices, ResourceClaims,
// DeviceTaintRules; src/api/dra.h), offered by the Handle (Handle::dra()):
//   - the device index: every device of the newest generation of each pool, flat, numbered, by
//     node (devices of slices with spec.nodeName) and the rest (node selectors, allNodes), each
//     with the taints of the DeviceTaintRules that match it added to its own (as upstream's
//     ResourceSlice tracker patches slices); immutable once read;
//   - the usage: which claim holds each device (allocated claims, informer or assumed, without
//     adminAccess results), by device number; immutable once read, so a scheduling cycle keeps
//     the one it read;
//   - the claim assume cache (as VolumeView's): Reserve records the claim with its allocation and
//     reservedFor before PreBind writes it; reads return it until RestoreClaim() or until the
//     informer delivers a version at least as new (with an allocation, if the assumed one has
//     one: PreBind's finalizer write comes back first);
//   - the claims waiting for an allocation (PendingClaims) and the pods waiting for them
//     (WaitingClaims orders the claims by their pods and says how many pods each serves);
//   - which DeviceClass backs each extended resource (KEP-5004: a class's
//     spec.extendedResourceName, and "deviceclass.resource.kubernetes.io/<class>");
//   - the API writes PreBind makes (the claim's status; for extended resources backed by DRA,
//     the claim itself and the pod's status) through a DraWriter.
// This header holds the contract and its vocabulary only; the store that implements it, and how
// it is fed, is cache::DraStore (src/cache/dra_store.h).
// Thread safety: every method is thread-safe; objects are immutable and shared.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "src/api/dra.h"
#include "src/common/clock.h"
#include "src/common/status.h"

namespace gpusched::framework {

// The API writes DynamicResources makes (kube::ApiClient's, which has their contracts): a claim's
// status (allocation and reservedFor, guarded by claim.meta.resource_version); for a pod's
// extended resources backed by DRA, the claim's creation, its deletion when the pod does not
// bind, and the pod's status.extendedResourceClaimStatus. Each returns what the API server
// stored.
class DraWriter {
 public:
  virtual ~DraWriter() = default;
  virtual common::StatusOr<api::ResourceClaimPtr> UpdateResourceClaimStatus(
      const api::ResourceClaim& claim) = 0;
  virtual common::StatusOr<api::ResourceClaimPtr> CreateResourceClaim(
      const api::ResourceClaim& claim) = 0;
  virtual common::Status DeleteResourceClaim(const api::ResourceClaim& claim) = 0;
  virtual common::Status SetPodExtendedResourceClaimStatus(
      const api::Pod& pod, const api::PodExtendedResourceClaimStatus& status) = 0;
};

// The attributes that name a device's interconnect island (an NVLink clique, else a PCIe root),
// first present wins; devices of one node with the same value share an island.
inline constexpr std::string_view kIslandAttributes[] = {"gpu.nvidia.com/cliqueId",
                                                         "resource.kubernetes.io/pcieRoot"};

// A claim waiting for an allocation and the unbound pods that wait for it (DraView::WaitingClaims).
struct WaitingClaim {
  api::ResourceClaimPtr claim;
  int32_t pods = 0;  // 0: no waiting pod known (e.g. not created yet)
};

// One counter of a pool's counter set (spec.sharedCounters, KEP-4815), in thousandths of its
// unit (Quantity::MilliValue).
struct SharedCounter {
  // "<driver>/<pool>/<counter set>/<counter>"; a shared device's capacity:
  // "<driver>/<pool>/<device>/<capacity>"
  std::string key;
  int64_t capacity = 0;
  uint32_t set = 0;  // the counter set's number; a set's counters are numbered one after another
};

// What an allocated device takes from one counter, in thousandths.
struct CounterDraw {
  uint32_t counter = 0;  // in DeviceIndex::counters
  int64_t amount = 0;
};

// DeviceEntry::node_slot of a device whose changes count for every node.
inline constexpr uint32_t kNoNodeSlot = UINT32_MAX;

// One allocatable device.
struct DeviceEntry {
  const api::ResourceSlice* slice = nullptr;
  const api::Device* device = nullptr;
  std::string key;  // "<driver>/<pool>/<device>", as `gpusched` reports it
  // The nodes that reach it when not one named node: the device's or slice's node selector, or
  // every node (both null/false: node-local, see DeviceIndex::by_node).
  const api::NodeSelector* node_selector = nullptr;
  bool all_nodes = false;
  // The device's island: 0 when it has none of kIslandAttributes, else a number shared by the
  // devices of the same pool with the same value.
  uint32_t island = 0;
  // Its counter draws: DeviceIndex::draws[draws_begin, draws_end).
  uint32_t draws_begin = 0;
  uint32_t draws_end = 0;
  // It allows multiple allocations (KEP-5075): claims hold shares of it, each consuming part of
  // its capacities, whose counters are DeviceIndex::counters[capacity_begin, capacity_end) in the
  // order of device->capacity (empty when it publishes no capacity: shares are unlimited). Its
  // counter draws are taken once, while it has any share.
  bool shared = false;
  uint32_t capacity_begin = 0;
  uint32_t capacity_end = 0;
  // How many other devices drawing on its counter set (a MIG partition's GPU) it cannot be
  // allocated beside, counters full: the shapes taking it rules out (0 when it draws on none).
  uint32_t conflicts = 0;
  // Its pool's counters are inconsistent (DeviceIndex::invalid_pools): never allocated, as
  // upstream skips invalid pools.
  bool invalid = false;
  // The number of its node among DeviceIndex::by_node (DeviceUsage::node_version); kNoNodeSlot
  // when it is not node-local, or draws on a counter that devices of another node (or of none)
  // draw on too: a change to its usage then counts for every node.
  uint32_t node_slot = kNoNodeSlot;
};

struct DeviceIndex {
  uint64_t version = 0;
  std::vector<DeviceEntry> devices;
  std::unordered_map<std::string, uint32_t> by_key;
  std::map<std::string, std::vector<uint32_t>, std::less<>> by_node;  // spec.nodeName devices
  std::vector<uint32_t> not_node_local;       // node selectors and allNodes (checked per node)
  std::vector<std::string> incomplete_pools;  // "<driver>/<pool>": fewer slices than announced
  // "<driver>/<pool>: <why>": a counter set defined twice, or a device drawing on a counter set
  // or counter the pool does not define (upstream's allocator marks such a pool invalid).
  std::vector<std::string> invalid_pools;
  // The counters of the newest generation of every pool's counter sets, then one set per
  // shared device with its capacities.
  std::vector<SharedCounter> counters;
  std::vector<CounterDraw> draws;  // every device's, by DeviceEntry::draws_begin
  // Keeps the entries' pointers alive: the slices as stored, or their copies with the taints of
  // DeviceTaintRules.
  std::vector<api::ResourceSlicePtr> slices;
  uint32_t node_slots = 0;  // by_node.size(): slots number its nodes in order

  // The devices node `node` reaches locally (spec.nodeName), empty when none.
  std::span<const uint32_t> NodeDevices(std::string_view node) const;
  std::span<const CounterDraw> Draws(uint32_t device) const {
    const DeviceEntry& e = devices[device];
    return std::span<const CounterDraw>(draws).subspan(e.draws_begin, e.draws_end - e.draws_begin);
  }
  bool PoolIncomplete(std::string_view driver, std::string_view pool) const;
};

// Per device number of a DeviceIndex: the claim holding it whole (null: none) and how many
// shares of it claims hold (shared devices); per counter, what the held devices draw on it and
// what the shares consume of a shared device's capacity.
struct DeviceUsage {
  uint64_t index_version = 0;
  std::vector<api::ResourceClaimPtr> holder;
  std::vector<uint32_t> shares;
  std::vector<int64_t> counter_used;  // thousandths, by DeviceIndex::counters
  // Bumped by every change to the holder, shares or counters of a device of that node slot
  // (DeviceEntry::node_slot), and, in shared_version, of a device of none. A node whose slot's
  // number and shared_version did not move, in a usage of the same index, sees the same usage
  // (copies carry the numbers on, so they never repeat for different contents).
  std::vector<uint64_t> node_version;  // by node slot
  uint64_t shared_version = 0;
};

// The interface a plugin reads and writes the DRA data through; see the top of this file.
class DraView {
 public:
  virtual ~DraView() = default;

  // --- Reads ---
  virtual api::DeviceClassPtr GetDeviceClass(std::string_view name) const = 0;
  // The assumed version where assumed; null when unknown.
  virtual api::ResourceClaimPtr GetClaim(std::string_view ns, std::string_view name) const = 0;
  virtual api::ResourceClaimPtr InformerClaim(std::string_view ns, std::string_view name) const = 0;
  virtual std::vector<api::ResourceClaimPtr> ListClaims() const = 0;
  // The claims waiting for an allocation: no status.allocation (assumed ones included), not
  // being deleted.
  virtual std::vector<api::ResourceClaimPtr> PendingClaims() const = 0;
  virtual size_t PendingCount() const = 0;
  // PendingClaims with their waiting pods, in the order those pods will likely be scheduled: the
  // earliest waiting pod's priority (higher first), creation time, then namespace/name (the
  // queue's order); claims no waiting pod uses last, by their own creation time and key. A pod
  // waits for a claim it names (spec.resourceClaims[].resourceClaimName) or that it owns (made
  // from its template).
  virtual std::vector<WaitingClaim> WaitingClaims() const = 0;
  virtual std::shared_ptr<const DeviceIndex> devices() const = 0;
  virtual std::shared_ptr<const DeviceUsage> usage() const = 0;
  // Bumped by every DeviceClass change (selector memos depend on classes and the index).
  virtual uint64_t class_version() const = 0;
  // The class backing extended resource `resource` (KEP-5004), as upstream's
  // ExtendedResourceCache: "deviceclass.resource.kubernetes.io/<class>" names that class; a
  // spec.extendedResourceName names the newest class that declares it (creation time, then the
  // smaller name). Null when none.
  virtual api::DeviceClassPtr ExtendedResourceClass(std::string_view resource) const = 0;
  // The extended resource claim (api::IsExtendedResourceClaim) the pod of `pod_uid` owns, its
  // latest version; null when none. O(1).
  virtual api::ResourceClaimPtr ExtendedResourceClaimOf(std::string_view pod_uid) const = 0;

  // --- Assume cache ---
  // NotFound when the informer has no such claim; FailedPrecondition when `claim` is older.
  virtual common::Status AssumeClaim(api::ResourceClaimPtr claim) = 0;
  // Assumes a claim the API server does not have yet (an extended resource claim, made in
  // PreBind): AlreadyExists when a claim of that name is known. It stays assumed, as a claim
  // AssumeClaim assumed, until the informer delivers it allocated, or RestoreClaim.
  virtual common::Status AssumeNewClaim(api::ResourceClaimPtr claim) = 0;
  virtual void RestoreClaim(std::string_view ns, std::string_view name) = 0;

  // --- API writes (through the writer; kUnavailable without one) ---
  virtual common::StatusOr<api::ResourceClaimPtr> UpdateClaimStatus(
      const api::ResourceClaim& claim) = 0;
  virtual DraWriter* writer() const = 0;

  // A counter bumped on every change.
  virtual uint64_t generation() const = 0;
  // Blocks until generation() differs from `seen` or `timeout` passes (real time); returns the
  // generation then.
  virtual uint64_t WaitForChange(uint64_t seen, std::chrono::milliseconds timeout) const = 0;
};

}  // namespace gpusched::framework
