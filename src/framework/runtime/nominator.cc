// SPDX-License-Identifier: Apache-2.0
#include "src/framework/runtime/nominator.h"

#include <algorithm>
#include <utility>

namespace gpusched::framework::runtime {

void Nominator::Set(api::PodPtr pod, std::string_view node) {
  common::MutexLock lock(mu_);
  const std::string& uid = pod->meta.uid;
  if (node.empty()) {
    if (by_uid_.erase(uid) == 0) return;
  } else {
    Entry& e = by_uid_[uid];
    e.pod = std::move(pod);
    e.node = std::string(node);
  }
  count_.store(by_uid_.size(), std::memory_order_relaxed);
  version_.fetch_add(1, std::memory_order_release);
}

void Nominator::Update(const api::Pod* old_pod, api::PodPtr pod) {
  if (!pod->node_name.empty()) {
    Remove(pod->meta.uid);
    return;
  }
  if (!pod->nominated_node_name.empty()) {
    const std::string node = pod->nominated_node_name;
    Set(std::move(pod), node);
    return;
  }
  // No nomination in the new object. It was cleared if the old object had one; otherwise the
  // informer has not yet seen the scheduler's own write: keep the nomination, with the new pod.
  if (old_pod != nullptr && !old_pod->nominated_node_name.empty()) {
    Remove(pod->meta.uid);
    return;
  }
  common::MutexLock lock(mu_);
  auto it = by_uid_.find(pod->meta.uid);
  if (it == by_uid_.end()) return;
  it->second.pod = std::move(pod);
  version_.fetch_add(1, std::memory_order_release);
}

void Nominator::Remove(std::string_view uid) {
  if (count_.load(std::memory_order_relaxed) == 0) return;
  common::MutexLock lock(mu_);
  if (by_uid_.erase(std::string(uid)) == 0) return;
  count_.store(by_uid_.size(), std::memory_order_relaxed);
  version_.fetch_add(1, std::memory_order_release);
}

void Nominator::Suspend(std::string_view uid) { SetSuspended(uid, true); }

void Nominator::Resume(std::string_view uid) { SetSuspended(uid, false); }

void Nominator::SetSuspended(std::string_view uid, bool suspended) {
  if (count_.load(std::memory_order_relaxed) == 0) return;
  common::MutexLock lock(mu_);
  auto it = by_uid_.find(std::string(uid));
  if (it == by_uid_.end() || it->second.suspended == suspended) return;
  it->second.suspended = suspended;
  version_.fetch_add(1, std::memory_order_release);
}

std::string Nominator::NodeOf(std::string_view uid) const {
  if (count_.load(std::memory_order_relaxed) == 0) return {};
  common::MutexLock lock(mu_);
  auto it = by_uid_.find(std::string(uid));
  return it == by_uid_.end() ? std::string() : it->second.node;
}

std::vector<api::PodPtr> Nominator::PodsFor(std::string_view node) const {
  std::vector<api::PodPtr> out;
  common::MutexLock lock(mu_);
  for (const auto& [uid, e] : by_uid_) {
    if (e.node == node) out.push_back(e.pod);
  }
  return out;
}

size_t Nominator::size() const { return count_.load(std::memory_order_relaxed); }

const NominatedView& Nominator::View(const Snapshot& snapshot) {
  const uint64_t v = version_.load(std::memory_order_acquire);
  if (v != view_version_ || &snapshot != view_snapshot_ ||
      snapshot.node_set_version() != view_node_set_ || snapshot.node_set_version() == 0) {
    view_version_ = v;
    view_snapshot_ = &snapshot;
    view_node_set_ = snapshot.node_set_version();
    Rebuild(snapshot);
  }
  return view_;
}

void Nominator::Rebuild(const Snapshot& snapshot) {
  for (NodeIndex n : view_.filled_) view_.by_node_[static_cast<size_t>(n)].clear();
  view_.filled_.clear();
  view_.total_ = 0;
  if (count_.load(std::memory_order_relaxed) == 0) return;
  if (view_.by_node_.size() < snapshot.nodes().size()) {
    view_.by_node_.resize(snapshot.nodes().size());
  }
  common::MutexLock lock(mu_);
  for (const auto& [uid, e] : by_uid_) {
    if (e.suspended) continue;
    const NodeInfo* ni = snapshot.Get(e.node);
    if (ni == nullptr) continue;  // a node not (or no longer) in the cluster
    auto& pods = view_.by_node_[static_cast<size_t>(ni->index)];
    if (pods.empty()) view_.filled_.push_back(ni->index);
    pods.push_back(e.pod);
    ++view_.total_;
  }
  std::sort(view_.filled_.begin(), view_.filled_.end());
}

size_t NominatedView::NextAtOrAfter(size_t n, size_t end) const {
  auto it = std::lower_bound(filled_.begin(), filled_.end(), static_cast<NodeIndex>(n));
  return it == filled_.end() ? end : std::min(end, static_cast<size_t>(*it));
}

}  // namespace gpusched::framework::runtime
