// SPDX-License-Identifier: Apache-2.0
// Nominator: the pods nominated to nodes (kube-scheduler's PodNominator). A pod is nominated when
// preemption chose a node for it and is evicting the victims there (status.nominatedNodeName);
// until it binds, the scheduler keeps that room for it: pods of lower or equal priority are
// filtered on that node as if the nominated pod were already there (PostFilterContext::RunFilters
// and the Filter scan), so they do not take the space its victims free.
//
// Sources of nominations: the scheduler's own PostFilter result (at once, before the status write
// reaches the informer), and pods seen with status.nominatedNodeName (after a restart, or set by
// another scheduler instance). A pod's nomination ends when it binds, is deleted, is cleared by a
// later PostFilter result, or an update clears status.nominatedNodeName that had been set (an
// update that never had one keeps the in-memory nomination, as upstream: the informer may lag
// behind the scheduler's own write).
//
// Suspension: a gang's member reserved in a gang trial (Scheduler::TryPlaceGang) holds its room
// in the cache, so its nomination must not hold the same room a second time; Suspend hides it
// from View (the nomination itself is kept: NodeOf, PodsFor and updates still see it) until
// Resume, when the trial is rolled back, or Remove, when the member binds.
//
// View: the scheduling thread reads nominations per node index of its snapshot through View(),
// rebuilt only when a nomination changed or the snapshot's node set changed; a cycle with no
// nomination anywhere pays one atomic load.
//
// Thread safety: Set/Remove/NodeOf/PodsFor/size are thread-safe (informer threads and the
// scheduling thread). View() is for the one scheduling thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "src/api/types.h"
#include "src/common/mutex.h"
#include "src/framework/node_info.h"

namespace gpusched::framework::runtime {

// The nominations as one cycle sees them, by node index.
class NominatedView {
 public:
  bool empty() const { return total_ == 0; }
  std::span<const api::PodPtr> ForNode(NodeIndex n) const {
    if (n < 0 || static_cast<size_t>(n) >= by_node_.size()) return {};
    return by_node_[static_cast<size_t>(n)];
  }
  bool Has(size_t n) const { return n < by_node_.size() && !by_node_[n].empty(); }
  // The first slot >= n with nominated pods, or `end` when none is below it.
  size_t NextAtOrAfter(size_t n, size_t end) const;

 private:
  friend class Nominator;
  std::vector<std::vector<api::PodPtr>> by_node_;
  std::vector<NodeIndex> filled_;  // slots with pods, ascending
  size_t total_ = 0;
};

class Nominator {
 public:
  // Nominates `pod` to `node` (replacing an earlier nomination or pod object); an empty `node`
  // removes the nomination.
  void Set(api::PodPtr pod, std::string_view node);
  // Applies an informer update of an unbound pod: kube-scheduler's rule (see the file comment).
  void Update(const api::Pod* old_pod, api::PodPtr pod);
  // Ends the pod's nomination (bound or deleted); no-op when it has none.
  void Remove(std::string_view uid);
  // Hides the pod's nomination from View (it is reserved: see the file comment) / shows it again.
  // No-op when the pod has none. Scheduling thread.
  void Suspend(std::string_view uid);
  void Resume(std::string_view uid);
  // The node the pod is nominated to, or "".
  std::string NodeOf(std::string_view uid) const;
  // The pods nominated to `node`.
  std::vector<api::PodPtr> PodsFor(std::string_view node) const;
  size_t size() const;

  // The nominations by node index of `snapshot`. REQUIRES: the scheduling thread; the reference
  // is valid until the next call.
  const NominatedView& View(const Snapshot& snapshot);

 private:
  struct Entry {
    api::PodPtr pod;
    std::string node;
    bool suspended = false;
  };
  void SetSuspended(std::string_view uid, bool suspended);
  void Rebuild(const Snapshot& snapshot);

  mutable common::Mutex mu_;
  std::unordered_map<std::string, Entry> by_uid_ GPUSCHED_GUARDED_BY(mu_);
  std::atomic<uint64_t> version_{0};
  std::atomic<size_t> count_{0};
  // View state (scheduling thread).
  NominatedView view_;
  uint64_t view_version_ = ~uint64_t{0};
  const Snapshot* view_snapshot_ = nullptr;
  uint64_t view_node_set_ = 0;
};

}  // namespace gpusched::framework::runtime
