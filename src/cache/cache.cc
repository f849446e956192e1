// SPDX-License-Identifier: Apache-2.0
#include "src/cache/cache.h"

#include <algorithm>

#include "src/api/gpu_devices.h"
#include "src/common/strings.h"

namespace gpusched::cache {

using framework::kNoNode;
using framework::NodeIndex;
using framework::NodeInfo;

namespace {
size_t U(NodeIndex i) { return static_cast<size_t>(i); }
}  // namespace

Cache::Cache(const common::Clock& clock, common::Duration assumed_ttl)
    : clock_(clock), assumed_ttl_(assumed_ttl) {}

double Cache::ParseUtilization(const api::Node& node) {
  const std::string* v = node.meta.Annotation(api::kNodeGpuUtilizationAnnotation);
  if (v == nullptr) return -1;
  auto d = common::ParseDouble(*v);
  if (!d || *d < 0 || *d > 1) return -1;
  return *d;
}

double Cache::UtilizationLocked(const api::Node& node) const {
  auto it = external_utilization_.find(node.meta.name);
  return it != external_utilization_.end() ? it->second : ParseUtilization(node);
}

void Cache::SetGpuUtilization(std::string_view node, double utilization) {
  common::MutexLock lock(mu_);
  const std::string name(node);
  if (utilization >= 0) {
    external_utilization_[name] = std::min(utilization, 1.0);
  } else {
    external_utilization_.erase(name);
  }
  auto it = by_name_.find(name);
  if (it == by_name_.end()) return;
  NodeInfo& ni = nodes_[U(it->second)];
  if (ni.node == nullptr) return;
  const double effective = UtilizationLocked(*ni.node);
  if (effective != ni.gpu_utilization) {
    ni.gpu_utilization = effective;
    MarkDirtyLocked(it->second);
  }
}

void Cache::MarkDirtyLocked(NodeIndex i) {
  nodes_[U(i)].generation = ++generation_;
  if (is_dirty_.size() <= U(i)) is_dirty_.resize(U(i) + 1, false);
  if (!is_dirty_[U(i)]) {
    is_dirty_[U(i)] = true;
    dirty_.push_back(i);
  }
}

NodeIndex Cache::IndexOfLocked(std::string_view name) const {
  auto it = by_name_.find(std::string(name));
  return it == by_name_.end() ? kNoNode : it->second;
}

NodeIndex Cache::SlotForLocked(const std::string& name) {
  if (auto it = by_name_.find(name); it != by_name_.end()) return it->second;
  NodeIndex i;
  if (!free_slots_.empty()) {
    i = free_slots_.back();
    free_slots_.pop_back();
  } else {
    i = static_cast<NodeIndex>(nodes_.size());
    nodes_.emplace_back();
  }
  nodes_[U(i)] = NodeInfo{};
  nodes_[U(i)].index = i;
  by_name_.emplace(name, i);
  return i;
}

void Cache::MaybeFreeSlotLocked(NodeIndex i) {
  NodeInfo& ni = nodes_[U(i)];
  if (ni.node != nullptr || !ni.pods.empty()) return;
  for (auto it = by_name_.begin(); it != by_name_.end(); ++it) {
    if (it->second == i) {
      removed_names_.push_back(it->first);
      by_name_.erase(it);
      break;
    }
  }
  ni = NodeInfo{};
  ni.index = i;
  free_slots_.push_back(i);
  MarkDirtyLocked(i);
}

void Cache::ChargeLocked(PodState& ps) {
  if (ps.hidden) return;
  NodeInfo& ni = nodes_[U(ps.node)];
  const api::Pod& pod = *ps.pod;
  const bool wants_gpu = !pod.gpu.empty() && ni.node != nullptr;
  if (wants_gpu && ps.gpu.empty()) {
    if (auto a = api::ChooseDevicesBestFit(ni.node->gpu, ni.gpus, pod.gpu)) ps.gpu = *a;
  }
  static const api::GpuAssignment kNone;
  ps.gpu_applied = ni.AddPod(ps.pod, wants_gpu ? ps.gpu : kNone);
  ps.counted_overcommit = wants_gpu && !ps.gpu_applied;
  if (ps.counted_overcommit) ++overcommitted_;
  MarkDirtyLocked(ps.node);
}

void Cache::UnchargeLocked(PodState& ps) {
  NodeInfo& ni = nodes_[U(ps.node)];
  const int32_t i = ni.IndexOfPod(*ps.pod);
  if (i >= 0) ni.RemovePodAt(static_cast<size_t>(i));
  if (ps.counted_overcommit) --overcommitted_;
  ps.gpu_applied = false;
  ps.counted_overcommit = false;
  MarkDirtyLocked(ps.node);
}

void Cache::HidePods(std::span<const api::PodPtr> pods) {
  common::MutexLock lock(mu_);
  for (const api::PodPtr& p : pods) {
    auto it = pods_.find(p->meta.uid);
    if (it == pods_.end() || it->second.hidden) continue;
    UnchargeLocked(it->second);
    it->second.hidden = true;
    hidden_.push_back(p->meta.uid);
  }
}

void Cache::ShowHiddenPods() {
  common::MutexLock lock(mu_);
  for (const std::string& uid : hidden_) {
    auto it = pods_.find(uid);
    if (it == pods_.end() || !it->second.hidden) continue;
    it->second.hidden = false;
    ChargeLocked(it->second);
  }
  hidden_.clear();
}

void Cache::RecomputeNodeLocked(NodeIndex i) {
  NodeInfo& ni = nodes_[U(i)];
  std::vector<api::PodPtr> pods = std::move(ni.pods);
  ni.pods.clear();
  ni.pod_devices.clear();
  ni.pod_priorities.clear();
  ni.used_ports.clear();
  ni.requested = api::ResourceList{};
  ni.pod_count = 0;
  ni.gpus = {};
  for (const auto& p : pods) {
    auto it = pods_.find(p->meta.uid);
    if (it == pods_.end()) continue;
    if (it->second.counted_overcommit) --overcommitted_;
    ChargeLocked(it->second);
  }
  MarkDirtyLocked(i);
}

void Cache::AddNode(api::NodePtr node) {
  common::MutexLock lock(mu_);
  NodeIndex i = SlotForLocked(node->meta.name);
  NodeInfo& ni = nodes_[U(i)];
  bool was_valid = ni.node != nullptr;
  bool gpu_changed = !was_valid || !(ni.node->gpu == node->gpu);
  ni.gpu_utilization = UtilizationLocked(*node);
  ni.node = std::move(node);
  if (!was_valid) ++num_nodes_;
  if (gpu_changed && !ni.pods.empty()) {
    RecomputeNodeLocked(i);
  } else {
    MarkDirtyLocked(i);
  }
}

void Cache::UpdateNode(api::NodePtr node) { AddNode(std::move(node)); }

api::NodePtr Cache::NodeObject(std::string_view name) const {
  common::MutexLock lock(mu_);
  NodeIndex i = IndexOfLocked(name);
  return i == kNoNode ? nullptr : nodes_[U(i)].node;
}

void Cache::RemoveNode(std::string_view name) {
  common::MutexLock lock(mu_);
  NodeIndex i = IndexOfLocked(name);
  if (i == kNoNode || nodes_[U(i)].node == nullptr) return;
  NodeInfo& ni = nodes_[U(i)];
  --num_nodes_;
  // Pods stay on a placeholder until they are removed; their device usage is cleared with the
  // node (and recomputed if the node comes back).
  for (const auto& p : ni.pods) {
    auto it = pods_.find(p->meta.uid);
    if (it == pods_.end()) continue;
    it->second.gpu_applied = false;
    if (it->second.counted_overcommit) {
      it->second.counted_overcommit = false;
      --overcommitted_;
    }
  }
  ni.node = nullptr;
  ni.gpus = {};
  std::fill(ni.pod_devices.begin(), ni.pod_devices.end(), framework::PodDevices{});
  MarkDirtyLocked(i);
  MaybeFreeSlotLocked(i);
}

common::Status Cache::AssumePod(api::PodPtr pod, std::string_view node,
                                const api::GpuAssignment& gpu) {
  common::MutexLock lock(mu_);
  const std::string uid = pod->meta.uid;  // a copy: `pod` may be replaced below
  if (pods_.count(uid) != 0) {
    return common::AlreadyExistsError("pod " + pod->Key() + " (uid " + uid +
                                      ") is already in the cache");
  }
  NodeIndex i = IndexOfLocked(node);
  if (i == kNoNode || nodes_[U(i)].node == nullptr) {
    return common::NotFoundError("assume pod " + pod->Key() + ": node " + std::string(node) +
                                 " is not in the cache");
  }
  if (pod->node_name != node) {
    auto copy = std::make_shared<api::Pod>(*pod);
    copy->node_name = std::string(node);
    pod = std::move(copy);
  }
  PodState ps;
  ps.pod = std::move(pod);
  ps.node = i;
  ps.gpu = gpu;
  ps.assumed = true;
  auto [it, inserted] = pods_.emplace(uid, std::move(ps));
  ChargeLocked(it->second);
  return common::Status::Ok();
}

common::Status Cache::FinishBinding(std::string_view uid) {
  common::MutexLock lock(mu_);
  auto it = pods_.find(std::string(uid));
  if (it == pods_.end() || !it->second.assumed) {
    return common::NotFoundError("finish binding: pod uid " + std::string(uid) + " is not assumed");
  }
  it->second.binding_finished = true;
  if (assumed_ttl_.count() > 0) {
    it->second.deadline = clock_.Now() + assumed_ttl_;
    expiring_.insert(it->first);
  }
  return common::Status::Ok();
}

void Cache::ErasePodLocked(std::unordered_map<std::string, PodState>::iterator it) {
  NodeIndex i = it->second.node;
  UnchargeLocked(it->second);
  if (it->second.deadline) expiring_.erase(it->first);
  pods_.erase(it);
  MaybeFreeSlotLocked(i);
}

common::Status Cache::ForgetPod(std::string_view uid) {
  common::MutexLock lock(mu_);
  auto it = pods_.find(std::string(uid));
  if (it == pods_.end() || !it->second.assumed) {
    return common::NotFoundError("forget: pod uid " + std::string(uid) + " is not assumed");
  }
  ErasePodLocked(it);
  return common::Status::Ok();
}

void Cache::AddPod(api::PodPtr pod) {
  if (pod->node_name.empty()) return;
  if (pod->Terminal()) {
    RemovePod(pod->meta.uid);
    return;
  }
  common::MutexLock lock(mu_);
  std::optional<api::GpuAssignment> annotated;
  if (const std::string* a = pod->meta.Annotation(api::kPodGpuDevicesAnnotation)) {
    auto parsed = api::ParseGpuAssignment(*a);
    if (parsed.ok()) annotated = std::move(parsed).value();
  }
  auto it = pods_.find(pod->meta.uid);
  if (it != pods_.end()) {
    PodState& ps = it->second;
    NodeIndex target = SlotForLocked(pod->node_name);
    bool same_node = target == ps.node;
    bool same_requests = ps.pod->requests == pod->requests && ps.pod->gpu == pod->gpu;
    bool same_gpu = !annotated || *annotated == ps.gpu;
    ps.assumed = false;
    if (ps.deadline) expiring_.erase(it->first);
    ps.deadline.reset();
    if (same_node && same_requests && same_gpu) {
      // Confirmation of an assumption, or a metadata-only update: swap the object.
      NodeInfo& ni = nodes_[U(ps.node)];
      std::replace(ni.pods.begin(), ni.pods.end(), ps.pod, pod);
      ps.pod = std::move(pod);
      MarkDirtyLocked(ps.node);
      return;
    }
    NodeIndex old = ps.node;
    UnchargeLocked(ps);
    ps.pod = std::move(pod);
    ps.node = target;
    if (annotated)
      ps.gpu = *annotated;
    else if (!same_node || !same_requests)
      ps.gpu = {};
    ChargeLocked(ps);
    MaybeFreeSlotLocked(old);
    return;
  }
  PodState ps;
  ps.node = SlotForLocked(pod->node_name);
  ps.pod = std::move(pod);
  if (annotated) ps.gpu = *annotated;
  auto [ins, ok] = pods_.emplace(ps.pod->meta.uid, std::move(ps));
  ChargeLocked(ins->second);
}

void Cache::UpdatePod(api::PodPtr pod) {
  if (pod->node_name.empty()) return;
  AddPod(std::move(pod));
}

void Cache::RemovePod(std::string_view uid) {
  common::MutexLock lock(mu_);
  auto it = pods_.find(std::string(uid));
  if (it == pods_.end()) return;
  ErasePodLocked(it);
}

int Cache::CleanupExpiredAssumedPods() {
  common::MutexLock lock(mu_);
  common::TimePoint now = clock_.Now();
  std::vector<std::string> expired;
  for (const std::string& uid : expiring_) {
    if (*pods_.at(uid).deadline < now) expired.push_back(uid);
  }
  for (const std::string& uid : expired) ErasePodLocked(pods_.find(uid));
  return static_cast<int>(expired.size());
}

bool Cache::IsAssumed(std::string_view uid) const {
  common::MutexLock lock(mu_);
  auto it = pods_.find(std::string(uid));
  return it != pods_.end() && it->second.assumed;
}

bool Cache::Contains(std::string_view uid) const {
  common::MutexLock lock(mu_);
  return pods_.count(std::string(uid)) != 0;
}

std::optional<std::string> Cache::NodeOf(std::string_view uid) const {
  common::MutexLock lock(mu_);
  auto it = pods_.find(std::string(uid));
  if (it == pods_.end()) return std::nullopt;
  return it->second.pod->node_name;
}

std::optional<api::GpuAssignment> Cache::GpuAssignmentOf(std::string_view uid) const {
  common::MutexLock lock(mu_);
  auto it = pods_.find(std::string(uid));
  if (it == pods_.end()) return std::nullopt;
  return it->second.gpu;
}

void Cache::UpdateSnapshot(framework::Snapshot& snapshot) {
  common::MutexLock lock(mu_);
  bool node_objects_changed = !removed_names_.empty() || snapshot.node_set_version() == 0;
  for (const std::string& name : removed_names_) snapshot.UnindexNameForCache(name);
  removed_names_.clear();
  for (NodeIndex i : dirty_) {
    const NodeInfo& src = nodes_[U(i)];
    NodeInfo& dst = snapshot.MutableSlotForCache(i);
    if (dst.node != src.node) node_objects_changed = true;
    snapshot.CountPodsForCache(dst.pods, -1);
    dst = src;
    snapshot.SetGenerationForCache(i, src.generation);
    snapshot.SetTwinForCache(i, twins_.GroupOf(i, src));
    snapshot.CountPodsForCache(dst.pods, +1);
    if (src.node != nullptr) snapshot.IndexNameForCache(src.node->meta.name, i);
    is_dirty_[U(i)] = false;
  }
  dirty_.clear();
  if (!hidden_.empty() || !snapshot.hidden_pods().empty()) snapshot.SetHiddenPodsForCache(hidden_);
  if (node_objects_changed) snapshot.BumpNodeSetVersionForCache();
  snapshot.SetNumTwinGroupsForCache(twins_.num_groups());
  snapshot.SetNodeCountForCache(num_nodes_, generation_);
}

int32_t Cache::NodeCount() const {
  common::MutexLock lock(mu_);
  return num_nodes_;
}

int32_t Cache::PodCount() const {
  common::MutexLock lock(mu_);
  return static_cast<int32_t>(pods_.size());
}

int32_t Cache::AssumedPodCount() const {
  common::MutexLock lock(mu_);
  int32_t n = 0;
  for (const auto& [uid, ps] : pods_) n += ps.assumed ? 1 : 0;
  return n;
}

void Cache::VisitNodes(const std::function<void(const framework::NodeInfo&)>& fn) const {
  common::MutexLock lock(mu_);
  for (const auto& ni : nodes_) {
    if (ni.valid()) fn(ni);
  }
}

int32_t Cache::OvercommittedPods() const {
  common::MutexLock lock(mu_);
  return overcommitted_;
}

common::Status Cache::CheckInvariants() const {
  common::MutexLock lock(mu_);
  std::vector<api::ResourceList> requested(nodes_.size());
  std::vector<std::array<int32_t, api::kMaxGpusPerNode>> milli(nodes_.size());
  for (auto& m : milli) m.fill(0);
  for (const auto& [uid, ps] : pods_) {
    if (ps.hidden) continue;  // out of the accounting until shown (HidePods)
    requested[U(ps.node)].Add(ps.pod->requests);
    if (ps.gpu_applied) {
      for (int8_t d : ps.gpu.devices) milli[U(ps.node)][static_cast<size_t>(d)] += ps.gpu.milli;
    }
  }
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const NodeInfo& ni = nodes_[i];
    std::string name = ni.node ? ni.node->meta.name : "slot " + std::to_string(i);
    if (ni.pod_devices.size() != ni.pods.size() || ni.pod_priorities.size() != ni.pods.size()) {
      return common::InternalError("node " + name + ": pod_devices does not match its pods");
    }
    for (size_t k = 0; k < ni.pods.size(); ++k) {
      auto it = pods_.find(ni.pods[k]->meta.uid);
      const framework::PodDevices want = it != pods_.end() && it->second.gpu_applied
                                             ? framework::PodDevices::From(it->second.gpu)
                                             : framework::PodDevices{};
      const framework::PodDevices& got = ni.pod_devices[k];
      if (got.devices != want.devices || got.milli != want.milli ||
          got.memory_mib != want.memory_mib) {
        return common::InternalError("node " + name + ": the devices recorded for pod " +
                                     ni.pods[k]->Key() + " are not the ones it was charged");
      }
    }
    if (!(requested[i] == ni.requested)) {
      return common::InternalError("node " + name + ": requested resources do not match its pods");
    }
    for (size_t d = 0; d < api::kMaxGpusPerNode; ++d) {
      const auto& dev = ni.gpus[d];
      if (dev.used_milli < 0 || dev.used_milli > api::kMilliPerGpu) {
        return common::InternalError("node " + name + ": GPU " + std::to_string(d) +
                                     " over-committed: " + std::to_string(dev.used_milli) + "m");
      }
      if (dev.used_milli != milli[i][d]) {
        return common::InternalError("node " + name + ": GPU " + std::to_string(d) + " shows " +
                                     std::to_string(dev.used_milli) + "m used but its pods hold " +
                                     std::to_string(milli[i][d]) + "m");
      }
    }
  }
  return common::Status::Ok();
}

}  // namespace gpusched::cache
