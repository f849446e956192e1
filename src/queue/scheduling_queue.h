// SPDX-License-Identifier: Apache-2.0
// SchedulingQueue: the pending pods of this scheduler, in three sub-queues as kube-scheduler's
// (backend/queue):
//
//   Add ──> activeQ ──Pop──> in flight ──Done (scheduled)──> (gone)
//             ^                 |
//             |                 ├─ unschedulable ──> unschedulablePods ──(cluster event)──┐
//             |                 └─ error ──────────> backoffQ                              │
//             |                                         │ (backoff expired: Flush)          │
//             └─────────────────────────────────────────┴──────────────────────────────────┘
//   A cluster event (MoveAllToActiveOrBackoff) sends unschedulable pods to backoffQ while their
//   backoff (initial·2^(attempts−1), capped at max) runs, else straight to activeQ. Pods stuck in
//   unschedulablePods longer than `max_unschedulable_stay` are flushed back periodically. An event
//   that arrives while a pod is in flight makes its rejection go to backoff, not to the pool, so
//   the event is not lost. Pods with scheduling gates are held apart (counted as gated, in no
//   sub-queue, untouched by events and Flush) until an Update clears their gates.
//
// Ordering: the profile's QueueSort Less; ties by insertion order (FIFO), so a simulation with
// equal timestamps replays in arrival order.
//
// Thread safety: all methods are thread-safe. Pop() blocks until a pod is ready or Close().
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <queue>
#include <string>
#include <unordered_map>
#include <vector>

#include "src/common/clock.h"
#include "src/common/mutex.h"
#include "src/framework/plugin.h"

namespace gpusched::queue {

using LessFn =
    std::function<bool(const framework::QueuedPodInfo&, const framework::QueuedPodInfo&)>;

struct QueueOptions {
  common::Duration initial_backoff = std::chrono::seconds(1);
  common::Duration max_backoff = std::chrono::seconds(10);
  common::Duration max_unschedulable_stay = std::chrono::minutes(5);
};

struct QueueCounts {
  int64_t active = 0;
  int64_t backoff = 0;
  int64_t unschedulable = 0;
  int64_t gated = 0;
  int64_t in_flight = 0;
};

class SchedulingQueue {
 public:
  SchedulingQueue(const common::Clock& clock, LessFn less, QueueOptions options = {});

  // A new pending pod. Ignored if already present.
  void Add(api::PodPtr pod);
  // The pod object changed (spec, gates, labels). A pod in the unschedulable pool moves to the
  // active queue (its rejection may no longer hold).
  void Update(api::PodPtr pod);
  // The pod was deleted or bound by someone else.
  void Delete(const std::string& uid);

  // Blocks until a pod is ready (moving expired backoff pods first) or Close() was called.
  std::optional<framework::QueuedPodInfo> Pop();
  // As Pop, but gives up after `max_wait` (real time): nullopt when closed or nothing was ready.
  std::optional<framework::QueuedPodInfo> PopFor(common::Duration max_wait);
  // Non-blocking: the next ready pod, or nullopt.
  std::optional<framework::QueuedPodInfo> TryPop();

  // After a failed attempt of a popped pod. `error` means an infrastructure error (backoff).
  void Requeue(framework::QueuedPodInfo info, bool error);
  // After a successful attempt (assumed; the binding cycle owns it now).
  void Done(const std::string& uid);

  // A cluster event that may make unschedulable pods fit (node added/changed, pod deleted).
  void MoveAllToActiveOrBackoff(std::string_view event);

  // Gangs (api/gang.h): pods are indexed by api::GangKey. PopGang takes every other member of
  // gang `key` that waits in a sub-queue (active, backoff or unschedulable; not gated, not in
  // flight) as Pop would, so that the scheduler places the gang in one cycle; each counts an
  // attempt. ActivateGang moves the members waiting in backoff or the unschedulable pool to the
  // active queue (a member arrived, the gang's policy object appeared).
  std::vector<framework::QueuedPodInfo> PopGang(const std::string& key);
  void ActivateGang(const std::string& key, std::string_view event);
  // Copies of the members PopGang would take, leaving them queued (explain's dry gang trial).
  std::vector<framework::QueuedPodInfo> PeekGang(const std::string& key) const;
  // How many members of gang `key` the queue holds (any sub-queue, gated, in flight).
  size_t GangSize(const std::string& key) const;
  // Moves pods whose backoff expired to activeQ and flushes pods that stayed too long in the
  // unschedulable pool. Called periodically (every second) by the scheduler.
  void Flush();

  void Close();
  QueueCounts Counts() const;
  bool Contains(const std::string& uid) const;
  // Incremented per pod entering a queue: (queue name, event) -> count, for
  // scheduler_queue_incoming_pods_total.
  std::vector<std::pair<std::string, int64_t>> IncomingCountsForMetrics() const;
  // Pods in the unschedulable pool by (plugin that rejected them, scheduler name), for
  // scheduler_unschedulable_pods. O(pods in the queue); called at scrape time.
  struct UnschedulablePluginCount {
    std::string plugin;
    std::string profile;
    int64_t pods = 0;
  };
  std::vector<UnschedulablePluginCount> UnschedulablePluginCountsForMetrics() const;

 private:
  enum class Where : uint8_t { kActive, kBackoff, kUnschedulable, kGated, kInFlight };
  struct Item {
    framework::QueuedPodInfo info;
    Where where = Where::kActive;
    uint64_t id = 0;
    uint64_t seq = 0;    // bumped on each (re)insert; heap entries with another seq are stale
    uint64_t order = 0;  // FIFO tie-break
    common::TimePoint backoff_expiry;
    common::TimePoint unschedulable_since;
    uint64_t moves_seen = 0;  // move-request counter at Pop time
    std::string gang;         // api::GangKey of the pod; "" when in no gang
  };
  // Heap entries refer to items by id and the item's seq at push time; an entry whose item is
  // gone or has another seq is stale and skipped when it surfaces (lazy deletion).
  struct HeapEntry {
    uint64_t id;
    uint64_t seq;
    uint64_t order;
    // The sort key as it was at push time, so an update never changes a key inside the heap.
    std::shared_ptr<const framework::QueuedPodInfo> key;
  };
  struct BackoffEntry {
    common::TimePoint expiry;
    uint64_t id;
    uint64_t seq;
    bool operator>(const BackoffEntry& o) const { return expiry > o.expiry; }
  };
  class ActiveCompare {
   public:
    explicit ActiveCompare(const LessFn* less) : less_(less) {}
    bool operator()(const HeapEntry& a, const HeapEntry& b) const;  // max-heap: "a after b"
   private:
    const LessFn* less_;
  };
  // The live item for a heap entry, or nullptr when stale.
  Item* LiveLocked(uint64_t id, uint64_t seq, Where where) GPUSCHED_REQUIRES(mu_);

  void PushActiveLocked(Item& item, std::string_view event) GPUSCHED_REQUIRES(mu_);
  void PushBackoffLocked(Item& item, std::string_view event) GPUSCHED_REQUIRES(mu_);
  void MoveToUnschedulableLocked(Item& item) GPUSCHED_REQUIRES(mu_);
  void FlushBackoffLocked() GPUSCHED_REQUIRES(mu_);
  std::optional<framework::QueuedPodInfo> PopLocked() GPUSCHED_REQUIRES(mu_);
  // Marks `item` in flight (from any sub-queue but gated), counting an attempt.
  void TakeLocked(Item& item) GPUSCHED_REQUIRES(mu_);
  void IndexGangLocked(const Item& item) GPUSCHED_REQUIRES(mu_);
  void UnindexGangLocked(const Item& item) GPUSCHED_REQUIRES(mu_);
  // Removes the item from whichever sub-queue counts it.
  void UncountLocked(const Item& item) GPUSCHED_REQUIRES(mu_);
  common::Duration BackoffFor(int32_t attempts) const;
  void CountIncomingLocked(std::string_view queue, std::string_view event) GPUSCHED_REQUIRES(mu_);

  const common::Clock& clock_;
  LessFn less_;
  const QueueOptions options_;
  mutable common::Mutex mu_;
  std::condition_variable_any cv_;
  std::unordered_map<uint64_t, Item> items_ GPUSCHED_GUARDED_BY(mu_);       // by id
  std::unordered_map<std::string, uint64_t> ids_ GPUSCHED_GUARDED_BY(mu_);  // uid -> id
  // gang key -> ids of its members in the queue (any sub-queue or in flight)
  std::unordered_map<std::string, std::vector<uint64_t>> gangs_ GPUSCHED_GUARDED_BY(mu_);
  std::priority_queue<HeapEntry, std::vector<HeapEntry>, ActiveCompare> active_
      GPUSCHED_GUARDED_BY(mu_);
  std::priority_queue<BackoffEntry, std::vector<BackoffEntry>, std::greater<>> backoff_
      GPUSCHED_GUARDED_BY(mu_);
  QueueCounts counts_ GPUSCHED_GUARDED_BY(mu_);
  uint64_t next_seq_ GPUSCHED_GUARDED_BY(mu_) = 0;
  uint64_t move_requests_ GPUSCHED_GUARDED_BY(mu_) = 0;
  bool closed_ GPUSCHED_GUARDED_BY(mu_) = false;
  std::vector<std::pair<std::string, int64_t>> incoming_ GPUSCHED_GUARDED_BY(mu_);
};

}  // namespace gpusched::queue
