// SPDX-License-Identifier: Apache-2.0
// The Dynamic Resource Allocation model (resource.k8s.io/v1, issue #23): a pod's claims
// (PodResourceClaims, held by Pod behind a pointer so this model grows without recompiling every
// user of Pod) and the cluster's DeviceClasses, ResourceSlices, ResourceClaims and
// ResourceClaimTemplates as the DynamicResources plugin, the allocator and the simulator read
// them. Decoded by src/api/decode_dra.h; every name below is upstream's field.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/api/labels.h"
#include "src/api/quantity.h"
#include "src/api/types.h"

namespace gpusched::api {

// --- The pod's side ---------------------------------------------------------------------------

// One entry of pod.spec.resourceClaims: exactly one of claim_name / template_name is set.
struct PodClaimSource {
  std::string name;           // the pod-level name containers refer to
  std::string claim_name;     // resourceClaimName: an existing claim in the pod's namespace
  std::string template_name;  // resourceClaimTemplateName: kube-controller-manager makes a claim
  bool operator==(const PodClaimSource&) const = default;
};

struct PodResourceClaims {
  std::vector<PodClaimSource> claims;
  // status.resourceClaimStatuses: pod claim name -> the generated claim's name ("" when the
  // controller decided no claim is needed).
  std::vector<std::pair<std::string, std::string>> statuses;
  bool operator==(const PodResourceClaims&) const = default;

  // The claim object's name for claims[i]: claim_name, or the generated name from statuses;
  // nullopt while the controller has not created it yet.
  std::optional<std::string> ClaimName(size_t i) const;
};

// --- DeviceClass --------------------------------------------------------------------------------

struct DeviceClass {
  std::string name;
  std::string resource_version;
  std::optional<common::TimePoint> creation_timestamp;  // which class an extended resource maps
  std::vector<std::string> selectors;  // spec.selectors[].cel.expression, all must hold
  std::string extended_resource_name;  // spec.extendedResourceName ("" when unset)
};

// The implicit extended resource name of every DeviceClass: "<prefix><class name>" (KEP-5004,
// resource.k8s.io/v1 ResourceDeviceClassPrefix).
inline constexpr std::string_view kDeviceClassResourcePrefix =
    "deviceclass.resource.kubernetes.io/";

// --- ResourceSlice ------------------------------------------------------------------------------

// A device attribute value (resource.k8s.io/v1 DeviceAttribute): exactly one kind.
struct DeviceAttribute {
  enum class Kind : uint8_t { kInt, kBool, kString, kVersion };
  Kind kind = Kind::kString;
  int64_t int_value = 0;
  bool bool_value = false;
  std::string string_value;  // kString, and kVersion (a semantic version, e.g. "12.4.0")
  bool operator==(const DeviceAttribute&) const = default;
};

// Counters by name (resource.k8s.io/v1 Counter: `{value: <quantity>}`), sorted by name.
using Counters = std::vector<std::pair<std::string, Quantity>>;

// spec.sharedCounters[] (KEP-4815 partitionable devices): counters that the devices of the pool
// draw on, e.g. the memory slices and multiprocessors of one physical GPU whose MIG partitions
// are published as devices. Names are unique within the pool (driver, pool name).
struct CounterSet {
  std::string name;
  Counters counters;
};

// spec.devices[].consumesCounters[]: how much of a counter set of the same pool the device takes
// while it is allocated.
struct DeviceCounterConsumption {
  std::string counter_set;
  Counters counters;
};

// spec.devices[].capacity[].requestPolicy (KEP-5075 consumable capacity): how one allocation of
// a device that allows several (allowMultipleAllocations) takes from the capacity. At most one of
// valid_values / range_min is set; default_value is set with either.
struct CapacityRequestPolicy {
  std::optional<Quantity> default_value;  // taken by a request that does not name the capacity
  std::vector<Quantity> valid_values;     // ascending: a request is rounded up to one of them
  // validRange: a request is rounded up to min, then to min + k * step; max caps it.
  std::optional<Quantity> range_min;
  std::optional<Quantity> range_max;
  std::optional<Quantity> range_step;
  bool operator==(const CapacityRequestPolicy&) const = default;
};

struct Device {
  std::string name;
  // Attributes and capacities by fully qualified name "<domain>/<id>" (a name without a domain
  // in the slice gets the driver's name as its domain, as upstream), sorted by name.
  std::vector<std::pair<std::string, DeviceAttribute>> attributes;
  std::vector<std::pair<std::string, Quantity>> capacity;
  // The request policies of `capacity`, by the same qualified names (only those that have one).
  std::vector<std::pair<std::string, CapacityRequestPolicy>> capacity_policies;
  std::vector<DeviceCounterConsumption> consumes_counters;
  // KEP-5075: several claims may hold the device at once, each taking part of its capacity.
  bool allow_multiple_allocations = false;
  // perDeviceNodeSelection: where this device is reachable (otherwise the slice's nodes).
  std::string node_name;
  std::optional<NodeSelector> node_selector;
  bool all_nodes = false;
  // spec.devices[].taints, and in a DraView's device index also those its DeviceTaintRules add
  // (ApplyTaintRules). NoSchedule/NoExecute keep it unallocated (UntoleratedTaint).
  std::vector<Taint> taints;

  const DeviceAttribute* Attribute(std::string_view qualified) const;
  const CapacityRequestPolicy* Policy(std::string_view qualified) const;
};

struct ResourceSlice {
  std::string name;
  std::string resource_version;
  std::string driver;
  std::string pool;
  int64_t pool_generation = 0;
  int64_t pool_slice_count = 1;
  // Which nodes can reach the devices: exactly one of these (or per_device_node_selection).
  std::string node_name;
  std::optional<NodeSelector> node_selector;
  bool all_nodes = false;
  bool per_device_node_selection = false;
  std::vector<Device> devices;
  // Upstream allows devices or shared counters in one slice, not both (1.35+); both are read.
  std::vector<CounterSet> shared_counters;
};

// --- DeviceTaintRule ----------------------------------------------------------------------------

// resource.k8s.io/v1 DeviceTaintRule (KEP-5055, GA and on by default in Kubernetes 1.37): one
// taint added to every device its selector matches, as if the driver had published it in the
// device's ResourceSlice (upstream's ResourceSlice tracker patches the slices it hands the
// scheduler the same way).
struct DeviceTaintRule {
  std::string name;
  std::string resource_version;
  // spec.deviceSelector: absent, it matches no device; each field that is set must equal the
  // slice's spec.driver, spec.pool.name or the device's name (so an empty one matches all).
  bool has_selector = false;
  std::optional<std::string> driver;
  std::optional<std::string> pool;
  std::optional<std::string> device;
  Taint taint;  // spec.taint (effect None, or unknown: kNone)

  bool Matches(const ResourceSlice& slice, const Device& device) const;
};
using DeviceTaintRulePtr = std::shared_ptr<const DeviceTaintRule>;

// `slice` with the taints of the `rules` that match its devices appended to theirs (in the
// rules' order); `slice` itself when none matches (no copy).
using ResourceSlicePtr = std::shared_ptr<const ResourceSlice>;
ResourceSlicePtr ApplyTaintRules(ResourceSlicePtr slice, std::span<const DeviceTaintRulePtr> rules);

// The first NoSchedule or NoExecute taint of `device` that none of `tolerations` tolerates (a
// device request's), or null: upstream's allocator does not allocate such a device.
const Taint* UntoleratedTaint(const Device& device, std::span<const Toleration> tolerations);

// --- ResourceClaim ------------------------------------------------------------------------------

enum class AllocationMode : uint8_t { kExactCount, kAll };

// The device choice of one request (exactly) or one of its firstAvailable subrequests.
struct DeviceChoice {
  std::string device_class;
  std::vector<std::string> selectors;  // CEL expressions, all must hold
  AllocationMode mode = AllocationMode::kExactCount;
  int64_t count = 1;
  bool admin_access = false;
  std::vector<Toleration> tolerations;
  // capacity.requests (KEP-5075): how much of each named device capacity one device must give,
  // by name as written (a name without a domain means the driver's).
  Counters capacity_requests;
  bool operator==(const DeviceChoice&) const = default;
};

struct DeviceSubRequest {
  std::string name;
  DeviceChoice choice;
  bool operator==(const DeviceSubRequest&) const = default;
};

struct DeviceRequest {
  std::string name;
  std::optional<DeviceChoice> exactly;
  std::vector<DeviceSubRequest> first_available;  // tried in order when `exactly` is unset
  bool operator==(const DeviceRequest&) const = default;
};

struct DeviceConstraint {
  std::vector<std::string> requests;  // empty: every request of the claim
  std::string match_attribute;        // fully qualified attribute name
  bool operator==(const DeviceConstraint&) const = default;
};

struct ResourceClaimSpec {
  std::vector<DeviceRequest> requests;
  std::vector<DeviceConstraint> constraints;
  bool operator==(const ResourceClaimSpec&) const = default;
};

// One allocated device (status.allocation.devices.results[]).
struct DeviceResult {
  std::string request;  // "<request>" or "<request>/<subrequest>"
  std::string driver;
  std::string pool;
  std::string device;
  bool admin_access = false;
  // KEP-5075, for a device that allows multiple allocations: this allocation's share (a UUID)
  // and what it takes from each of the device's capacities (qualified names, sorted).
  std::string share_id;
  Counters consumed_capacity;
  bool operator==(const DeviceResult&) const = default;
};

struct AllocationResult {
  std::vector<DeviceResult> devices;
  std::optional<NodeSelector> node_selector;  // where the allocated devices are reachable
};

// status.reservedFor[]: who uses the claim: a pod ("pods" of the core group), or with KEP-5729
// the native PodGroup whose pods share it ("podgroups" of scheduling.k8s.io).
struct ClaimConsumer {
  std::string resource;  // "pods", "podgroups"
  std::string name;
  std::string uid;
  std::string api_group;  // "" for the core group
  bool operator==(const ClaimConsumer&) const = default;
};
inline constexpr std::string_view kPodGroupsResource = "podgroups";

// The consumer a pod's claim `pod_claim` (an index into pod.resource_claims) is reserved for
// (upstream's resourceclaim.BindTo): the pod's native PodGroup `group` (may be null) when that
// PodGroup's spec.resourceClaims has an entry of the same name with the same claim or template;
// else the pod.
ClaimConsumer ConsumerFor(const Pod& pod, size_t pod_claim, const PodGroup* group);

struct ResourceClaim {
  ObjectMeta meta;
  ResourceClaimSpec spec;
  std::optional<AllocationResult> allocation;
  std::vector<ClaimConsumer> reserved_for;
};

// Whether `claim` is reserved for `pod`: for the pod itself (by uid), or for the native PodGroup
// the pod names in spec.schedulingGroup (by name: a pod does not know its PodGroup's uid;
// upstream's IsReservedForPod).
bool IsReservedForPod(const ResourceClaim& claim, const Pod& pod);
// Whether `claim` was created for `pod` (a claim from a template): its controller is the pod, or
// the PodGroup the pod names in spec.schedulingGroup (kind PodGroup of scheduling.k8s.io, any
// version; upstream's IsForPod).
bool IsClaimForPod(const ResourceClaim& claim, const Pod& pod);

// KEP-5004: the annotation (value "true") of the claim the scheduler makes for a pod's extended
// resources backed by DRA, owned by the pod.
inline constexpr std::string_view kExtendedResourceClaimAnnotation =
    "resource.kubernetes.io/extended-resource-claim";

// Whether `claim` is such a claim (the annotation is "true"), and the uid of the pod that owns it
// (its controller owner reference; "" when none).
bool IsExtendedResourceClaim(const ResourceClaim& claim);
std::string_view ControllerUid(const ObjectMeta& meta);

// pod.status.extendedResourceClaimStatus: which request of that claim serves which container's
// extended resource.
struct ContainerExtendedResourceRequest {
  std::string container_name;
  std::string resource_name;
  std::string request_name;
  bool operator==(const ContainerExtendedResourceRequest&) const = default;
};

struct PodExtendedResourceClaimStatus {
  std::vector<ContainerExtendedResourceRequest> request_mappings;
  std::string resource_claim_name;
  bool operator==(const PodExtendedResourceClaimStatus&) const = default;
};

struct ResourceClaimTemplate {
  ObjectMeta meta;
  ResourceClaimSpec spec;
};

// What one allocation of `device` (published by `driver`) for a request asking `requests`
// (DeviceChoice::capacity_requests) takes from each of the device's capacities, in thousandths,
// in the order of device.capacity: upstream's consumable-capacity rules (KEP-5075). A capacity
// the request does not name takes its policy's default, else all of it; a named one takes the
// amount asked, rounded up by the policy (to the next valid value, or to validRange's min and
// then its next step), into `out` (the caller's buffer: no allocation once it has grown). False
// when the request names a capacity the device does not have, or an amount breaks the policy
// (above validRange's max, above every valid value). Whether the amounts still fit is the
// caller's to check.
bool ConsumedCapacity(const Device& device, std::string_view driver, const Counters& requests,
                      std::vector<int64_t>& out);

using DeviceClassPtr = std::shared_ptr<const DeviceClass>;
using ResourceClaimPtr = std::shared_ptr<const ResourceClaim>;
using ResourceClaimTemplatePtr = std::shared_ptr<const ResourceClaimTemplate>;

// The upper bound of devices one request may ask for, and of devices per slice
// (resource.k8s.io/v1 AllocationResultsMaxSize, ResourceSliceMaxDevices).
inline constexpr int64_t kAllocationResultsMaxSize = 32;
inline constexpr size_t kResourceSliceMaxDevices = 128;

}  // namespace gpusched::api
