// SPDX-License-Identifier: Apache-2.0
// The kube CONTRACT: how the scheduler writes to the cluster (ApiClient) and how cluster changes
// reach it (ClusterEventHandler). Implementations: the HTTP client against a real API server
// (real-cluster mode) and sim::SimCluster (the in-memory cluster of the simulator). The scheduler
// cannot tell them apart.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "src/api/dra.h"
#include "src/api/network_crd.h"
#include "src/api/storage.h"
#include "src/api/types.h"
#include "src/common/clock.h"
#include "src/common/status.h"

namespace gpusched::kube {

// An events.k8s.io/v1 Event about a pod.
struct EventRecord {
  std::string namespace_;
  std::string pod_name;
  std::string pod_uid;
  std::string type;                  // "Normal" or "Warning"
  std::string reason;                // "Scheduled", "FailedScheduling"
  std::string action;                // "Binding", "Scheduling"
  std::string note;                  // at most 1024 bytes; longer notes are cut to end in " ..."
  std::string reporting_controller;  // the scheduler name
  // When it happened; it also names the event, so that a retried send of the same record
  // meets 409 AlreadyExists instead of writing it twice. The epoch (default): when it is sent.
  common::TimePoint event_time{};
};

class ApiClient {
 public:
  virtual ~ApiClient() = default;
  // Binds the pod to `node` (pods/binding), with `annotations` (if any) set on the pod: the real
  // client (kube/client KubeApiClient) carries them on the Binding, which the API server merges
  // into the pod in the same write. Thread-safe: called from the binding cycle.
  virtual common::Status BindPod(
      const api::Pod& pod, std::string_view node,
      const std::vector<std::pair<std::string, std::string>>& annotations) = 0;
  // Patches the PodScheduled condition (status False, reason "Unschedulable" or
  // "SchedulerError", message).
  virtual common::Status SetPodUnschedulable(const api::Pod& pod, std::string_view reason,
                                             std::string_view message) = 0;
  virtual common::Status CreateEvent(const EventRecord& event) = 0;

  // Preemption's writes (kube-scheduler's PreemptPod: the DisruptionTarget condition, then the
  // delete; util.PatchPodStatus / util.DeletePod). Thread-safe. A pod that no longer exists is
  // kNotFound, which the caller treats as already gone.
  //
  // Adds or replaces `condition` (matched by type) in the pod's status.conditions: a strategic
  // merge patch of pods/{name}/status. A condition without last_transition_time takes the
  // current time, or the old condition's when its status is unchanged (v1 pod
  // UpdatePodCondition). No write when the pod already carries the same type, status, reason
  // and message.
  virtual common::Status PatchPodCondition(const api::Pod& pod,
                                           const api::Condition& condition) = 0;
  // Deletes the pod (DELETE pods/{name}, default grace period) with pod.meta.uid as the
  // precondition, so a re-created pod of the same name is not deleted: that is kNotFound too
  // (the pod meant is gone).
  virtual common::Status DeletePod(const api::Pod& pod) = 0;
  // Consolidation's write: evicts the pod through the Eviction API (POST pods/{name}/eviction,
  // policy/v1, with pod.meta.uid as the precondition), so the API server applies the pod's
  // PodDisruptionBudgets. kResourceExhausted when a budget forbids it (429, not retried);
  // kNotFound when the pod is gone or was replaced.
  virtual common::Status EvictPod(const api::Pod& pod) = 0;
  // Sets status.nominatedNodeName to `node`; an empty `node` clears it. No write when
  // pod.nominated_node_name already equals `node`.
  virtual common::Status SetNominatedNodeName(const api::Pod& pod, std::string_view node) = 0;
  // Writes `status` into the PodGroup `group` (scheduler-plugins or Volcano; the status
  // subresource, a merge patch). No default: a decorator that forgot it would drop every write.
  virtual common::Status UpdatePodGroupStatus(const api::PodGroup& group,
                                              const api::PodGroupStatus& status) = 0;

  // VolumeBinding's PreBind writes (upstream's binder updates the objects; these patch only the
  // fields it changes), each guarded by the object's resourceVersion (a conflict is kAborted).
  // Both return the object's new resourceVersion. Thread-safe: called from the binding cycle.
  //
  // Binds the PV to the claim in pv.claim_ref (spec.claimRef: namespace, name, uid; plus
  // annotation pv.kubernetes.io/bound-by-controller: "yes" when `bound_by_controller`).
  virtual common::StatusOr<std::string> BindPersistentVolume(const api::PersistentVolume& pv,
                                                             bool bound_by_controller) = 0;
  // Sets annotation volume.kubernetes.io/selected-node: `node` on the claim, which asks its
  // provisioner to create a volume reachable from that node.
  virtual common::StatusOr<std::string> SetPvcSelectedNode(const api::PersistentVolumeClaim& pvc,
                                                           std::string_view node) = 0;

  // DynamicResources' PreBind write (upstream's bindClaim), guarded by
  // claim.meta.resource_version (a conflict is kAborted): first the finalizer
  // resource.kubernetes.io/delete-protection is added to the claim if it lacks it, then its
  // status subresource gets claim.allocation (unless the stored claim is already allocated,
  // which is immutable) and claim.reserved_for. Returns the claim as the API server stored it.
  // Errors name the claim. Thread-safe: called from the binding cycle. No default: a decorator
  // that forgot it would drop every allocation.
  virtual common::StatusOr<api::ResourceClaimPtr> UpdateResourceClaimStatus(
      const api::ResourceClaim& claim) = 0;
  // Extended resources backed by DRA (KEP-5004): DynamicResources' PreBind creates the claim it
  // allocated for a pod (metadata name, namespace, ownerReferences, annotations; spec) and
  // returns it as stored, then names it in the pod's status.extendedResourceClaimStatus; its
  // Unreserve deletes it again (the finalizer UpdateResourceClaimStatus added removed first; a
  // claim already gone is OK). Errors name the object. Thread-safe. No defaults, as above.
  virtual common::StatusOr<api::ResourceClaimPtr> CreateResourceClaim(
      const api::ResourceClaim& claim) = 0;
  virtual common::Status DeleteResourceClaim(const api::ResourceClaim& claim) = 0;
  virtual common::Status SetPodExtendedResourceClaimStatus(
      const api::Pod& pod, const api::PodExtendedResourceClaimStatus& status) = 0;
};

// A storage object (api/storage.h) as the storage informers deliver it.
using StorageObject = std::variant<api::PersistentVolumePtr, api::PersistentVolumeClaimPtr,
                                   api::StorageClassPtr, api::CSINodePtr, api::CSIDriverPtr>;

// A Dynamic Resource Allocation object (api/dra.h) as the resource.k8s.io informers deliver it.
using DraObject = std::variant<api::DeviceClassPtr, api::ResourceSlicePtr, api::ResourceClaimPtr,
                               api::DeviceTaintRulePtr>;

// A NetworkAware object (api/network_crd.h) as the CRD watch or the simulator delivers it.
using NetworkObject = std::variant<api::AppGroupPtr, api::NetworkTopologyPtr>;

// Receives cluster changes (from informers, or from the simulator). Called serially per object
// kind (nodes, pods, PodDisruptionBudgets, PodGroups); implementations must be thread-safe across
// kinds.
class ClusterEventHandler {
 public:
  virtual ~ClusterEventHandler() = default;
  virtual void OnNodeAdd(api::NodePtr node) = 0;
  virtual void OnNodeUpdate(api::NodePtr old_node, api::NodePtr node) = 0;
  virtual void OnNodeDelete(api::NodePtr node) = 0;
  virtual void OnPodAdd(api::PodPtr pod) = 0;
  virtual void OnPodUpdate(api::PodPtr old_pod, api::PodPtr pod) = 0;
  virtual void OnPodDelete(api::PodPtr pod) = 0;
  // policy/v1 PodDisruptionBudgets (kube-scheduler's preemption reads them). Default: ignored,
  // so handlers that do not care need not override them.
  virtual void OnPdbAdd(api::PdbPtr /*pdb*/) {}
  virtual void OnPdbUpdate(api::PdbPtr /*old_pdb*/, api::PdbPtr /*pdb*/) {}
  virtual void OnPdbDelete(api::PdbPtr /*pdb*/) {}
  // Gang policies (api/gang.h): scheduler-plugins and Volcano PodGroups, and one per pod group
  // of a Workload. Default: ignored.
  virtual void OnPodGroupAdd(api::PodGroupPtr /*group*/) {}
  virtual void OnPodGroupUpdate(api::PodGroupPtr /*old_group*/, api::PodGroupPtr /*group*/) {}
  virtual void OnPodGroupDelete(api::PodGroupPtr /*group*/) {}
  // Storage objects (PersistentVolumes, PersistentVolumeClaims, StorageClasses, CSINodes,
  // CSIDrivers) for the volume plugins; an update's old and new objects hold the same
  // alternative. Default: ignored.
  virtual void OnStorageAdd(const StorageObject& /*obj*/) {}
  virtual void OnStorageUpdate(const StorageObject& /*old_obj*/, const StorageObject& /*obj*/) {}
  virtual void OnStorageDelete(const StorageObject& /*obj*/) {}
  // DRA objects (DeviceClasses, ResourceSlices, ResourceClaims, DeviceTaintRules) for the
  // DynamicResources plugin; an update's old and new objects hold the same alternative. Default:
  // ignored.
  virtual void OnDraAdd(const DraObject& /*obj*/) {}
  virtual void OnDraUpdate(const DraObject& /*old_obj*/, const DraObject& /*obj*/) {}
  virtual void OnDraDelete(const DraObject& /*obj*/) {}
  // NetworkAware objects (AppGroups, NetworkTopologies) for the NetworkLocality plugin; a delete
  // needs only the object's namespace and name. Default: ignored.
  virtual void OnNetworkUpsert(const NetworkObject& /*obj*/) {}
  virtual void OnNetworkDelete(const NetworkObject& /*obj*/) {}
};

// Cuts an event note to the events API's 1024-byte limit, ending in " ..." when cut.
std::string TruncateEventNote(std::string note);

}  // namespace gpusched::kube
