// SPDX-License-Identifier: Apache-2.0
// Cache: the scheduler's view of the cluster — nodes, the pods assigned to them, their summed
// requests and per-device GPU usage — fed by informer events and by the scheduler's own
// assumptions. It produces a consistent Snapshot per scheduling cycle.
//
// Pod life cycle in the cache (as kube-scheduler's backend/cache/interface.go):
//
//   Initial --AssumePod--> Assumed --AddPod(from informer)--> Added --RemovePod--> (gone)
//                            |  \--FinishBinding--> Assumed(bound, expiry armed)
//                            |                          |--Expire (no AddPod by deadline)--> (gone)
//                            \--ForgetPod (bind failed)--> (gone)
//   Initial --AddPod (a pod placed by someone else, or after a restart)--> Added
//   Added --UpdatePod--> Added (moved accounting if node/requests changed)
//
// Assumptions:
//  - A pod is identified by its UID. An assumed pod is counted on its node at once, so a GPU is
//    never promised twice while a bind is in flight.
//  - GPU devices: a pod's device choice comes from the Reserve allocation when assumed, or from
//    its `gpusched.io/gpu-devices` annotation when added; otherwise (a pod placed by another
//    scheduler) the cache picks devices itself (best fit). A device choice that would over-commit
//    a device is not applied; the pod is then counted as over-commit (OvercommittedPods()) and
//    the GPU requests are still charged to the node's totals.
//  - Terminal pods (Succeeded/Failed) release their resources.
//  - Pods may name a node the cache has not seen (informer order) and nodes may be deleted while
//    pods remain: such a node keeps a placeholder slot (NodeInfo::node == nullptr, invisible to
//    plugins) until its node arrives or its last pod leaves.
//  - A node update that changes the node's GPU facts (or re-adds a removed node) recomputes that
//    node's accounting from its pods (device choices kept); any other update only replaces the
//    node object.
//
// Snapshot: UpdateSnapshot copies only the NodeInfos changed since the previous call (a dirty
// list), so its cost scales with what changed. There is one snapshot consumer per Cache.
//
// Thread safety: every method is thread-safe (one mutex). Informer threads add/update/remove;
// the scheduling thread assumes, forgets and snapshots; binding threads finish binding.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "src/api/types.h"
#include "src/cache/twin_groups.h"
#include "src/common/clock.h"
#include "src/common/mutex.h"
#include "src/common/status.h"
#include "src/framework/node_info.h"

namespace gpusched::cache {

class Cache {
 public:
  // `assumed_ttl`: how long an assumed, bound pod may wait for its informer confirmation before
  // it is expired (kube-scheduler: 15 min in old releases, now unbounded = zero here).
  explicit Cache(const common::Clock& clock, common::Duration assumed_ttl = common::Duration(0));

  void AddNode(api::NodePtr node);
  void UpdateNode(api::NodePtr node);
  void RemoveNode(std::string_view name);

  // REQUIRES: pod not already in the cache. `node` must exist.
  common::Status AssumePod(api::PodPtr pod, std::string_view node, const api::GpuAssignment& gpu);
  // The bind call returned OK; arms the expiry deadline.
  common::Status FinishBinding(std::string_view uid);
  // The bind failed: undo the assumption.
  common::Status ForgetPod(std::string_view uid);

  // Informer events for pods with spec.nodeName set.
  void AddPod(api::PodPtr pod);
  void UpdatePod(api::PodPtr pod);
  void RemovePod(std::string_view uid);

  // Drops assumed pods whose deadline passed; returns how many.
  int CleanupExpiredAssumedPods();

  bool IsAssumed(std::string_view uid) const;
  bool Contains(std::string_view uid) const;
  // The node a pod is on (assumed or added), or nullopt.
  std::optional<std::string> NodeOf(std::string_view uid) const;
  // The node object named `name`, or nullptr (the queueing hints' view of where a pod ran).
  api::NodePtr NodeObject(std::string_view name) const;
  // The device assignment recorded for a pod.
  std::optional<api::GpuAssignment> GpuAssignmentOf(std::string_view uid) const;

  // Copies changed NodeInfos into `snapshot`. REQUIRES: one snapshot per cache, always the same.
  void UpdateSnapshot(framework::Snapshot& snapshot);

  int32_t NodeCount() const;
  int32_t PodCount() const;
  int32_t OvercommittedPods() const;
  // Pods assumed and not yet confirmed by the informer (scheduler_cache_size{type="assumed_pods"}).
  int32_t AssumedPodCount() const;
  // Calls `fn` for every valid node under the cache lock (metrics collection at scrape time;
  // `fn` must be quick and must not call back into the cache).
  void VisitNodes(const std::function<void(const framework::NodeInfo&)>& fn) const;

  // GPU utilization (0..1) of `node` from an external source (the DCGM/Prometheus refresher);
  // it takes precedence over the node's gpusched.io/gpu-utilization annotation. A negative
  // value clears it (back to the annotation, or unknown). Kept for nodes not seen yet. Marks the
  // node dirty only when its effective value changes.
  void SetGpuUtilization(std::string_view node, double utilization);

  // Gang preemption's plan (Scheduler::PlanGangPreemption): the pods leave their nodes'
  // accounting, as if deleted, until ShowHiddenPods; they keep their state (assumed or bound,
  // device choice) and every other call works as usual (a hidden pod that is updated stays
  // hidden; one that is removed is gone). Unknown uids are skipped.
  void HidePods(std::span<const api::PodPtr> pods);
  void ShowHiddenPods();

  // Verifies the invariants: per node, the sum of pod requests equals `requested`, and per device
  // used_milli is within [0, 1000] and equals the sum of the assignments on it. Returns the first
  // violation. Used by tests and the simulator after every placement.
  common::Status CheckInvariants() const;

 private:
  struct PodState {
    api::PodPtr pod;
    framework::NodeIndex node = framework::kNoNode;
    api::GpuAssignment gpu;
    bool gpu_applied = false;         // charged per device
    bool counted_overcommit = false;  // wants GPUs on a known node but could not be charged
    bool assumed = false;
    bool binding_finished = false;
    bool hidden = false;  // HidePods: never charged until ShowHiddenPods
    std::optional<common::TimePoint> deadline;
  };

  // Charges `ps` to node slot `ps.node` (choosing devices if ps.gpu is empty and the pod wants
  // GPUs), or uncharges it.
  void ChargeLocked(PodState& ps) GPUSCHED_REQUIRES(mu_);
  void UnchargeLocked(PodState& ps) GPUSCHED_REQUIRES(mu_);
  // Index of the slot for `name`, creating a placeholder slot when absent.
  framework::NodeIndex SlotForLocked(const std::string& name) GPUSCHED_REQUIRES(mu_);
  void MaybeFreeSlotLocked(framework::NodeIndex i) GPUSCHED_REQUIRES(mu_);
  void RecomputeNodeLocked(framework::NodeIndex i) GPUSCHED_REQUIRES(mu_);
  void ErasePodLocked(std::unordered_map<std::string, PodState>::iterator it)
      GPUSCHED_REQUIRES(mu_);
  void MarkDirtyLocked(framework::NodeIndex i) GPUSCHED_REQUIRES(mu_);
  framework::NodeIndex IndexOfLocked(std::string_view name) const GPUSCHED_REQUIRES(mu_);
  static double ParseUtilization(const api::Node& node);
  double UtilizationLocked(const api::Node& node) const GPUSCHED_REQUIRES(mu_);

  const common::Clock& clock_;
  const common::Duration assumed_ttl_;
  mutable common::Mutex mu_;
  std::vector<framework::NodeInfo> nodes_ GPUSCHED_GUARDED_BY(mu_);
  std::vector<framework::NodeIndex> free_slots_ GPUSCHED_GUARDED_BY(mu_);
  std::unordered_map<std::string, framework::NodeIndex> by_name_ GPUSCHED_GUARDED_BY(mu_);
  std::unordered_map<std::string, PodState> pods_ GPUSCHED_GUARDED_BY(mu_);
  // Uids of the pods with a deadline (assumed, bound, unconfirmed): what the 1 s ticker scans.
  std::unordered_set<std::string> expiring_ GPUSCHED_GUARDED_BY(mu_);
  std::vector<std::string> hidden_ GPUSCHED_GUARDED_BY(mu_);  // uids, HidePods
  // SetGpuUtilization values by node name.
  std::unordered_map<std::string, double> external_utilization_ GPUSCHED_GUARDED_BY(mu_);
  std::vector<framework::NodeIndex> dirty_ GPUSCHED_GUARDED_BY(mu_);
  std::vector<bool> is_dirty_ GPUSCHED_GUARDED_BY(mu_);
  // Names removed since the last snapshot (to unindex them there).
  std::vector<std::string> removed_names_ GPUSCHED_GUARDED_BY(mu_);
  uint64_t generation_ GPUSCHED_GUARDED_BY(mu_) = 0;
  int32_t num_nodes_ GPUSCHED_GUARDED_BY(mu_) = 0;
  int32_t overcommitted_ GPUSCHED_GUARDED_BY(mu_) = 0;
  TwinGroups twins_ GPUSCHED_GUARDED_BY(mu_);  // Snapshot::twins
};

}  // namespace gpusched::cache
