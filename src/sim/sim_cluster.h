// SPDX-License-Identifier: Apache-2.0
// SimCluster: the simulator's in-memory cluster. It plays the API server for the Scheduler: it
// implements kube::ApiClient (bind, PodScheduled condition, events) and delivers the cluster
// changes it makes to one kube::ClusterEventHandler (the scheduler's events()), synchronously and
// in order.
//
//   AddNode    -> OnNodeAdd
//   CreatePod  -> OnPodAdd
//   DeletePod  -> OnPodDelete
//   BindPod    -> a new PodPtr with spec.nodeName set and the annotations applied -> OnPodUpdate
//                 (before BindPod returns, so with an InlineExecutor the bind is confirmed in the
//                 scheduler's cache before ScheduleOne returns)
//   SetPodUnschedulable, CreateEvent -> counted only; no event is delivered (kube-scheduler ignores
//                 status-only updates of its own pods, and the Scheduler here would requeue).
//   PatchPodCondition, SetNominatedNodeName -> a new PodPtr with the condition replaced (by type)
//                 or added / status.nominatedNodeName set -> OnPodUpdate(old, new); nothing when
//                 the pod already says so. No clock here: a condition keeps the
//                 last_transition_time it was given (or the old one while its status is the same).
//   DeletePod(pod) -> as DeletePod(uid) when the uid is still there (NotFound otherwise: deleted,
//                 or re-created under another uid) -> OnPodDelete. Counted in `api_deletes`.
//   AddPdb     -> OnPdbAdd. EvictPod(pod) -> the eviction subresource: 429 (kResourceExhausted)
//                 when the pod's PodDisruptionBudget allows no disruption, an error when two
//                 budgets select it; else the budget's disruptionsAllowed drops by one and the pod
//                 joins its disruptedPods (OnPdbUpdate), and the pod is deleted as by
//                 DeletePod(uid). Counted in `api_evictions`.
//   AddPodGroup -> OnPodGroupAdd. UpdatePodGroupStatus -> the last status per PodGroup is kept
//                 (PodGroupStatuses); nothing is delivered.
//   AddStorage -> OnStorageAdd (PVs, PVCs, StorageClasses, CSINodes, CSIDrivers).
//   AddNetwork -> OnNetworkUpsert (AppGroups, NetworkTopologies).
//   BindPersistentVolume / SetPvcSelectedNode play the API server and the PV controller (and a
//                 provisioner) at once: the PV gets the claimRef and phase Bound, the claim its
//                 volumeName and pv.kubernetes.io/bind-completed; a claim given a selected node
//                 gets a new bound PV "pvc-<claim uid or name>" of its class and size (without
//                 node affinity: the simulated volume follows the pod). Each change is delivered
//                 as OnStorageAdd/OnStorageUpdate.
//   AddDra     -> OnDraAdd / OnDraUpdate for a DeviceClass, ResourceSlice, DeviceTaintRule or
//                 ResourceClaim (as the resource.k8s.io informers deliver them);
//                 ResourceClaimTemplates are kept here for the resourceclaim controller below and
//                 delivered to no one.
//   UpdateResourceClaimStatus (DynamicResources' PreBind, through the scheduler's DraWriter) ->
//                 the claim's allocation and reservedFor stored under a new resourceVersion
//                 (Aborted when the claim changed since the writer read it, as the API server's
//                 conflict) -> OnDraUpdate.
//   CreateResourceClaim / DeleteResourceClaim (extended resources backed by DRA: PreBind,
//                 Unreserve) -> the claim stored with a uid and resourceVersion / removed ->
//                 OnDraAdd / OnDraDelete; SetPodExtendedResourceClaimStatus is kept per pod.
//   kube-controller-manager's resourceclaim controller is played too: CreatePod creates, for each
//                 pod claim with resourceClaimTemplateName and no status yet, the claim
//                 "<pod>-<podClaimName>-<5 chars>" (the chars derived from the names: reproducible)
//                 in the pod's namespace from the template, owned by the pod (controller: true),
//                 and sets the pod's status.resourceClaimStatuses (OnPodUpdate) — for a claim
//                 its native PodGroup lists the same way (KEP-5729), one claim
//                 "<podgroup>-<claim>-<5 chars>" owned by the PodGroup, shared by its pods;
//                 DeletePod drops the pod from every claim's reservedFor, deallocates a claim
//                 reserved for no one any more (a PodGroup's reservation stays, as upstream's,
//                 while the PodGroup exists), and deletes the claims the pod owns (the garbage
//                 collector's part). Every claim change is delivered as OnDraAdd / OnDraUpdate /
//                 OnDraDelete.
//
// Ledger: independently of the scheduler's cache, SimCluster keeps per node the summed requests
// of its bound pods and, per GPU device, the milli-GPU written in the pods' gpusched.io/gpu-devices
// annotations. A bind that over-commits a device (> 1000 milli), names a device the node does not
// have, or exceeds the node's allocatable cpu, memory or pods is recorded as a violation
// (LedgerStatus()); the bind itself still succeeds, as an API server would let it.
//
// Ownership: SimCluster owns its node and pod objects (shared, immutable PodPtr/NodePtr); the
// handler is borrowed. Thread safety: every method is thread-safe; the handler is called without
// SimCluster's lock held, from the thread that made the change.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "src/api/dra.h"
#include "src/api/gpu.h"
#include "src/api/types.h"
#include "src/common/mutex.h"
#include "src/common/status.h"
#include "src/framework/plugin.h"
#include "src/kube/api_client.h"
#include "src/sim/workload.h"

namespace gpusched::sim {

// What the bound pods of one node use, from the API's point of view.
struct NodeUsage {
  int64_t milli_cpu = 0;
  int64_t memory = 0;  // bytes
  int32_t pods = 0;
  // Milli-GPU per device from the pods' gpusched.io/gpu-devices annotations.
  std::array<int32_t, api::kMaxGpusPerNode> gpu_milli{};
  // Bound pods that asked for GPUs but carry no device annotation (placed without a GPU plugin,
  // or bound by another scheduler); counted in gpu_milli on the devices the cache would charge.
  int32_t gpu_pods_without_devices = 0;
};

// Counters for the report.
struct ClusterCounters {
  int64_t binds = 0;
  int64_t bind_errors = 0;
  std::map<std::string, int64_t> events_by_reason;      // "Scheduled", "FailedScheduling"
  std::map<std::string, int64_t> conditions_by_reason;  // PodScheduled=False reasons
  int64_t api_deletes = 0;                              // DeletePod(pod): preemption victims
  int64_t api_evictions = 0;                            // EvictPod: consolidation's moves
  int64_t claims_created = 0;        // by the resourceclaim controller (from templates)
  int64_t claims_deleted = 0;        // generated claims of pods that left
  int64_t claim_status_updates = 0;  // UpdateResourceClaimStatus (DynamicResources' PreBind)
  int64_t claims_deallocated = 0;    // claims reserved for no pod any more
};

class SimCluster final : public kube::ApiClient {
 public:
  SimCluster() = default;
  SimCluster(const SimCluster&) = delete;
  SimCluster& operator=(const SimCluster&) = delete;

  // The receiver of cluster changes. REQUIRES: set before the first AddNode/CreatePod; `handler`
  // outlives this object or is reset to nullptr first.
  void SetHandler(kube::ClusterEventHandler* handler);

  // Adds a node. AlreadyExists when a node of that name exists.
  common::Status AddNode(api::NodePtr node);
  // Adds a pod. REQUIRES: a non-empty meta.uid. AlreadyExists when the uid or namespace/name is
  // taken. A pod that already names a node is counted in that node's ledger.
  common::Status CreatePod(api::PodPtr pod);
  // Deletes a pod by uid. NotFound when absent.
  common::Status DeletePod(std::string_view uid);
  // Adds or replaces a PodDisruptionBudget (namespace/name), for EvictPod and the handler.
  void AddPdb(api::PdbPtr pdb);
  // Adds a gang policy (a PodGroup, or one pod group of a Workload). AlreadyExists when its key
  // is taken.
  common::Status AddPodGroup(api::PodGroupPtr group);
  // A storage object (PV, PVC, StorageClass, CSINode, CSIDriver). Replaces one of the same name.
  void AddStorage(const kube::StorageObject& obj);
  // A DRA object. Replaces one of the same name (namespace/name for claims and templates). A
  // claim without a resourceVersion gets one.
  void AddDra(const DraObject& obj);
  // An AppGroup or NetworkTopology (passed to the handler; the cluster keeps no copy).
  void AddNetwork(const kube::NetworkObject& obj);

  // kube::ApiClient
  common::Status BindPod(
      const api::Pod& pod, std::string_view node,
      const std::vector<std::pair<std::string, std::string>>& annotations) override;
  common::Status SetPodUnschedulable(const api::Pod& pod, std::string_view reason,
                                     std::string_view message) override;
  common::Status CreateEvent(const kube::EventRecord& event) override;
  common::Status PatchPodCondition(const api::Pod& pod, const api::Condition& condition) override;
  common::Status DeletePod(const api::Pod& pod) override;
  common::Status EvictPod(const api::Pod& pod) override;
  common::Status SetNominatedNodeName(const api::Pod& pod, std::string_view node) override;
  common::Status UpdatePodGroupStatus(const api::PodGroup& group,
                                      const api::PodGroupStatus& status) override;
  common::StatusOr<std::string> BindPersistentVolume(const api::PersistentVolume& pv,
                                                     bool bound_by_controller) override;
  common::StatusOr<std::string> SetPvcSelectedNode(const api::PersistentVolumeClaim& pvc,
                                                   std::string_view node) override;
  common::StatusOr<api::ResourceClaimPtr> UpdateResourceClaimStatus(
      const api::ResourceClaim& claim) override;
  common::StatusOr<api::ResourceClaimPtr> CreateResourceClaim(
      const api::ResourceClaim& claim) override;
  common::Status DeleteResourceClaim(const api::ResourceClaim& claim) override;
  common::Status SetPodExtendedResourceClaimStatus(
      const api::Pod& pod, const api::PodExtendedResourceClaimStatus& status) override;
  // The extended resource claim status written per pod uid (SetPodExtendedResourceClaimStatus).
  std::map<std::string, api::PodExtendedResourceClaimStatus> ExtendedResourceClaimStatuses() const;

  // The ResourceClaims as stored, by namespace/name.
  std::vector<api::ResourceClaimPtr> Claims() const;
  api::ResourceClaimPtr GetClaim(std::string_view ns, std::string_view name) const;

  // The current object, or nullptr.
  api::PodPtr GetPod(std::string_view uid) const;
  api::NodePtr GetNode(std::string_view name) const;
  // Nodes in the order they were added.
  std::vector<api::NodePtr> Nodes() const;
  // Usage of the named node (zero when unknown).
  NodeUsage UsageOf(std::string_view node) const;
  // Nodes with their usage, in the order they were added.
  std::vector<std::pair<api::NodePtr, NodeUsage>> NodesWithUsage() const;
  // The milli-GPU used on each node's devices (0..count-1), in the same order, into `out`
  // (resized): what the replay samples after every event, a copy of a flat array the ledger
  // keeps.
  void GpuMilliUsed(std::vector<int64_t>& out) const;
  // Their sum over every node, kept by the ledger as pods come and go: O(1).
  int64_t GpuMilliUsedTotal() const;
  size_t NodeCount() const;
  int64_t PodCount() const;
  // The last status written per PodGroup key (api::PodGroup::Key).
  std::map<std::string, api::PodGroupStatus> PodGroupStatuses() const;
  ClusterCounters Counters() const;
  // OK, or the first ledger violation seen (see the file comment).
  common::Status LedgerStatus() const;

 private:
  struct NodeEntry {
    api::NodePtr node;
    NodeUsage usage;
  };
  // Adds (sign=+1) or removes (sign=-1) a bound pod's usage on its node.
  void ChargeLocked(const api::Pod& pod, int sign) GPUSCHED_REQUIRES(mu_);
  void ViolationLocked(std::string what) GPUSCHED_REQUIRES(mu_);
  // One stored DRA change (before null: added; after null: deleted), delivered after the lock
  // is released.
  struct DraChange {
    std::optional<kube::DraObject> before;
    std::optional<kube::DraObject> after;
  };
  // Stores `after` (null: deletes the claim of `before`) and records the change.
  void PutClaimLocked(const api::ResourceClaimPtr& before, api::ResourceClaimPtr after,
                      std::vector<DraChange>& changes) GPUSCHED_REQUIRES(mu_);
  std::string NextClaimVersionLocked() GPUSCHED_REQUIRES(mu_);
  // The resourceclaim controller for a new pod: its template claims, and the pod with
  // status.resourceClaimStatuses (null when nothing changed). A claim its native PodGroup lists
  // the same way (KEP-5729) is the PodGroup's: made once, owned by it, shared by its pods.
  api::PodPtr CreateTemplateClaimsLocked(const api::PodPtr& pod, std::vector<DraChange>& changes)
      GPUSCHED_REQUIRES(mu_);
  // A new claim from template `t` for `owner`'s claim `claim_name` in `ns`, with a generated name
  // no stored claim has; not stored yet.
  api::ResourceClaimPtr NewClaimFromTemplateLocked(std::string_view ns, api::OwnerReference owner,
                                                   std::string_view claim_name,
                                                   const api::ResourceClaimTemplate& t)
      GPUSCHED_REQUIRES(mu_);
  // The name of `group`'s claim for `src` (the name the PodGroup was read with, else the one
  // made earlier, else a new one from the template, stored); nullopt while the template is
  // missing.
  std::optional<std::string> PodGroupClaimLocked(const api::PodGroup& group,
                                                 const api::PodClaimSource& src,
                                                 std::vector<DraChange>& changes)
      GPUSCHED_REQUIRES(mu_);
  // The resourceclaim controller and the garbage collector for a pod that left.
  void ReleasePodClaimsLocked(const api::Pod& pod, std::vector<DraChange>& changes)
      GPUSCHED_REQUIRES(mu_);
  void DeliverDraChanges(const std::vector<DraChange>& changes);
  // Replaces the stored pod of `uid` with update(copy) and delivers OnPodUpdate(old, new);
  // nothing when update returns false. NotFound when the uid is not there.
  common::Status UpdateStoredPod(const api::Pod& pod, const std::function<bool(api::Pod&)>& update);

  mutable common::Mutex mu_;
  kube::ClusterEventHandler* handler_ = nullptr;
  std::vector<NodeEntry> nodes_ GPUSCHED_GUARDED_BY(mu_);
  std::unordered_map<std::string, size_t> node_index_ GPUSCHED_GUARDED_BY(mu_);
  std::unordered_map<std::string, api::PodPtr> pods_ GPUSCHED_GUARDED_BY(mu_);  // by uid
  std::map<std::string, api::PodExtendedResourceClaimStatus> extended_claim_statuses_
      GPUSCHED_GUARDED_BY(mu_);  // by pod uid
  std::unordered_map<std::string, std::string> uid_by_key_ GPUSCHED_GUARDED_BY(mu_);
  ClusterCounters counters_ GPUSCHED_GUARDED_BY(mu_);
  std::map<std::string, api::PodGroupPtr> pod_groups_ GPUSCHED_GUARDED_BY(mu_);  // by key
  std::map<std::string, api::PdbPtr> pdbs_ GPUSCHED_GUARDED_BY(mu_);  // by namespace/name
  std::map<std::string, api::PodGroupStatus> pod_group_status_ GPUSCHED_GUARDED_BY(mu_);
  std::map<std::string, api::PersistentVolumePtr> pvs_ GPUSCHED_GUARDED_BY(mu_);
  std::map<std::string, api::PersistentVolumeClaimPtr> pvcs_ GPUSCHED_GUARDED_BY(mu_);  // ns/name
  uint64_t storage_version_ GPUSCHED_GUARDED_BY(mu_) = 1000;
  std::string violation_ GPUSCHED_GUARDED_BY(mu_);
  int64_t gpu_milli_used_total_ GPUSCHED_GUARDED_BY(mu_) = 0;          // GpuMilliUsedTotal
  std::vector<int64_t> node_gpu_milli_used_ GPUSCHED_GUARDED_BY(mu_);  // GpuMilliUsed, by node
  std::map<std::string, api::DeviceClassPtr> device_classes_ GPUSCHED_GUARDED_BY(mu_);
  std::map<std::string, api::ResourceSlicePtr> slices_ GPUSCHED_GUARDED_BY(mu_);
  std::map<std::string, api::DeviceTaintRulePtr> taint_rules_ GPUSCHED_GUARDED_BY(mu_);
  std::map<std::string, api::ResourceClaimPtr> claims_ GPUSCHED_GUARDED_BY(mu_);  // ns/name
  std::map<std::string, api::ResourceClaimTemplatePtr> claim_templates_ GPUSCHED_GUARDED_BY(mu_);
  // The claims made for native PodGroups: "<PodGroup key>#<claim name>" -> the claim's name.
  std::map<std::string, std::string> pod_group_claims_ GPUSCHED_GUARDED_BY(mu_);
  uint64_t claim_version_ GPUSCHED_GUARDED_BY(mu_) = 1000;
  // The devices charged for bound GPU pods without a device annotation, by uid.
  std::unordered_map<std::string, api::GpuAssignment> unannotated_devices_ GPUSCHED_GUARDED_BY(mu_);
};

}  // namespace gpusched::sim
