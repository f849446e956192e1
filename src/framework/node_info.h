// SPDX-License-Identifier: Apache-2.0
// NodeInfo and Snapshot: the per-cycle, read-only view of the cluster that plugins see.
//
// The snapshot is a flat array of NodeInfo indexed by a dense NodeIndex that stays stable for the
// life of a node (the cache assigns it). Each NodeInfo aggregates what the hot path needs: the
// node, the summed requests of its pods, and its GPUs' per-device usage in a fixed inline array,
// so Filter and Score touch one contiguous record per node and allocate nothing.
//
// Thread safety: a Snapshot is written only by Cache::UpdateSnapshot on the scheduling thread,
// between cycles; during a cycle it is read-only and may be read from several threads.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "src/api/gpu.h"
#include "src/api/types.h"
#include "src/common/interner.h"

namespace gpusched::framework {

using NodeIndex = int32_t;
inline constexpr NodeIndex kNoNode = -1;

// The devices charged for one pod on its node, in a fixed-size form, so that copying a NodeInfo
// (the preemption dry run) allocates nothing per pod: bit d of `devices` set means device d holds
// `milli` compute and `memory_mib` memory of the pod.
struct PodDevices {
  uint32_t devices = 0;
  int32_t milli = 0;
  int64_t memory_mib = 0;
  bool empty() const { return devices == 0; }
  static PodDevices From(const api::GpuAssignment& a);
  api::GpuAssignment ToAssignment() const;
};
static_assert(api::kMaxGpusPerNode <= 32, "PodDevices::devices is a 32-bit mask");

// One host port a pod binds on its node (v1.ContainerPort with a hostPort, as NodePorts reads
// it), in a flat form: `ip` is the interned hostIP, Atom{} for 0.0.0.0 (every address, also when
// unset); `protocol` is the interned protocol ("TCP" when unset).
struct HostPort {
  common::Atom ip;
  common::Atom protocol;
  int32_t port = 0;
  bool operator==(const HostPort&) const = default;
};

// Appends the host ports of `pod` to `out`: those of its containers and of its sidecar init
// containers (restartPolicy Always; other init containers have exited before the pod runs), as
// upstream's GetHostPorts. Interns each hostIP (takes the interner's lock).
void AppendHostPorts(const api::Pod& pod, std::vector<HostPort>& out);
// Whether binding `want` conflicts with a port in `used` (upstream's HostPortInfo.CheckConflict):
// same protocol and port, and either side binds 0.0.0.0 or both bind the same address.
bool HostPortConflicts(std::span<const HostPort> used, const HostPort& want);

struct NodeInfo {
  api::NodePtr node;  // null for an empty slot (deleted node)
  NodeIndex index = kNoNode;
  uint64_t generation = 0;  // bumped by the cache on every change

  api::ResourceList requested;  // sum of the requests of non-terminal pods on the node
  int32_t pod_count = 0;
  // Usage of each GPU; entries >= node->gpu.count are unused.
  std::array<api::GpuDeviceState, api::kMaxGpusPerNode> gpus{};
  // Pods placed on (or assumed onto) this node. For plugins that look at pods (spread,
  // affinity); immutable pods shared with the cache. Unordered.
  std::vector<api::PodPtr> pods;
  // Parallel to pods: the devices charged for pods[i] (empty when it holds none: no GPU request,
  // or a device choice that could not be charged).
  std::vector<PodDevices> pod_devices;
  // Parallel to pods: pods[i]->priority, flat, so preemption finds the lower-priority pods of many
  // nodes without touching each pod object.
  std::vector<int32_t> pod_priorities;
  // Host ports bound by the pods on the node, one entry per pod port (the multiset union of
  // AppendHostPorts over pods, unordered; empty on most nodes, so no allocation there).
  std::vector<HostPort> used_ports;
  // Average GPU utilization 0..1 from the utilization source; negative when unknown.
  double gpu_utilization = -1;

  bool valid() const { return node != nullptr; }
  std::string_view name() const { return node->meta.name; }
  int32_t gpu_count() const { return node->gpu.count; }
  // Devices with no pod on them, healthy.
  int32_t FreeWholeGpus() const;
  // Sum over healthy devices of (1000 - used_milli).
  int64_t FreeGpuMilli() const;

  // Adds `pod`: its requests, its count, its host ports and, when `gpu` is non-empty and the node
  // can take it (api::ApplyAssignment), its devices. The pod is added either way; returns whether
  // the devices were charged. The caller keeps `generation`. The cache and the preemption dry run
  // both use these two, so a node's accounting has one definition.
  bool AddPod(api::PodPtr pod, const api::GpuAssignment& gpu);
  bool AddPod(api::PodPtr pod, PodDevices gpu);
  // Removes pods[i] (the last pod takes its place), releasing what AddPod charged.
  // REQUIRES: i < pods.size().
  void RemovePodAt(size_t i);
  // Index of `pod` in pods (the same object, else the same uid), or -1.
  int32_t IndexOfPod(const api::Pod& pod) const;

 private:
  // Removes one used_ports entry per host port of `pod` (RemovePodAt).
  void RemoveHostPortsOf(const api::Pod& pod);
};

class Snapshot {
 public:
  // All slots, including empty ones (check valid()). Index == NodeInfo::index.
  std::span<const NodeInfo> nodes() const { return nodes_; }
  const NodeInfo* Get(std::string_view name) const;
  const NodeInfo& at(NodeIndex i) const { return nodes_[static_cast<size_t>(i)]; }
  // Number of valid nodes.
  int32_t num_nodes() const { return num_nodes_; }
  uint64_t generation() const { return generation_; }
  // Changes whenever a slot's node object changes (node added, updated or removed), not when only
  // pods move; 0 when unknown (a snapshot filled without the cache). Lets a plugin memoise what
  // it derives from the node objects alone (e.g. TaintToleration's distinct taint lists) across
  // pods. Only meaningful together with the snapshot's address.
  uint64_t node_set_version() const { return node_set_version_; }

  // Writers (the cache). Mutable access to one slot; grows the array as needed.
  NodeInfo& MutableSlotForCache(NodeIndex i);
  void SetNodeCountForCache(int32_t n, uint64_t generation) {
    num_nodes_ = n;
    generation_ = generation;
  }
  void BumpNodeSetVersionForCache() { ++node_set_version_; }
  // Every slot's NodeInfo::generation in one flat array (0 where unknown), so a pass over all
  // nodes that only needs to know what changed (runtime/result_cache.h) reads 8 bytes per node
  // instead of a NodeInfo. Kept by the cache (SetGenerationForCache after it writes a slot); a
  // hand-filled snapshot leaves 0, which makes the runtime evaluate those nodes afresh.
  std::span<const uint64_t> generations() const { return generations_; }
  void SetGenerationForCache(NodeIndex i, uint64_t generation) {
    if (static_cast<size_t>(i) >= generations_.size())
      generations_.resize(static_cast<size_t>(i) + 1, 0);
    generations_[static_cast<size_t>(i)] = generation;
  }
  // Twin groups (cache/twin_groups.h): per slot, the group of its node; nodes in one group have
  // equal api::NodeTwinKey encodings, equal gpu_utilization and equal aggregates of their pods
  // (requested, pod_count, gpus, used_ports as a multiset), so they differ only in identity and
  // in which pods they hold (Plugin::SameForTwinNodes). -1 for an empty slot. Ids are dense,
  // below num_twin_groups(). Kept by the cache; a hand-filled snapshot has none, and neither has
  // a slot past the array's end.
  std::span<const int32_t> twins() const { return twins_; }
  int32_t num_twin_groups() const { return num_twin_groups_; }
  void SetTwinForCache(NodeIndex i, int32_t twin) {
    if (static_cast<size_t>(i) >= twins_.size()) twins_.resize(static_cast<size_t>(i) + 1, -1);
    twins_[static_cast<size_t>(i)] = twin;
  }
  void SetNumTwinGroupsForCache(int32_t n) { num_twin_groups_ = n; }
  // The pods the cache hides for now (Cache::HidePods: a gang preemption's plan treats them as
  // gone), by uid; usually none. DRA devices held only by them count as free (DynamicResources).
  std::span<const std::string> hidden_pods() const { return hidden_pods_; }
  void SetHiddenPodsForCache(std::span<const std::string> uids) {
    hidden_pods_.assign(uids.begin(), uids.end());
  }
  // Pods in the snapshot with any pod affinity/anti-affinity term, and with required
  // anti-affinity (upstream's HavePodsWithAffinityList / HavePodsWithRequiredAntiAffinityList),
  // so InterPodAffinity can skip ordinary pods in O(1); and the lowest priority of any pod
  // (INT32_MAX when there is none), so preemption knows in O(1) that no pod is below a
  // preemptor's priority. Kept by the cache, which calls CountPodsForCache(old pods, -1) and
  // (new pods, +1) for every slot it replaces; only meaningful when node_set_version() != 0 (a
  // hand-filled snapshot does not keep them).
  int64_t pods_with_affinity() const { return pods_with_affinity_; }
  int64_t pods_with_required_anti_affinity() const { return pods_with_required_anti_affinity_; }
  int32_t lowest_pod_priority() const {
    return pods_by_priority_.empty() ? INT32_MAX : pods_by_priority_.begin()->first;
  }
  void CountPodsForCache(std::span<const api::PodPtr> pods, int sign);
  void IndexNameForCache(const std::string& name, NodeIndex i) { by_name_[name] = i; }
  void UnindexNameForCache(const std::string& name) { by_name_.erase(name); }

 private:
  std::vector<std::string> hidden_pods_;
  std::vector<NodeInfo> nodes_;
  std::unordered_map<std::string, NodeIndex> by_name_;
  int32_t num_nodes_ = 0;
  uint64_t generation_ = 0;
  uint64_t node_set_version_ = 0;
  std::vector<uint64_t> generations_;
  std::vector<int32_t> twins_;
  int32_t num_twin_groups_ = 0;
  int64_t pods_with_affinity_ = 0;
  int64_t pods_with_required_anti_affinity_ = 0;
  std::map<int32_t, int64_t> pods_by_priority_;  // priority -> pods; no zero counts
};

}  // namespace gpusched::framework
