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
//   Queueing hints: a cluster event (MoveOnEvent) moves an unschedulable pod only when one of the
//   plugins that rejected it registered a matching event and that plugin's hint returns kQueue
//   for this pod (framework/queueing_hints.h; SetProfileHints gives each profile's table). A pod
//   rejected by no plugin, or by one the table does not know, moves on any event. A moved pod
//   goes to backoffQ while its backoff (initial·2^(attempts−1), capped at max) runs, else to
//   activeQ; a kQueue from a plugin that left the pod Pending sends it to activeQ at once. Pods
//   stuck in unschedulablePods longer than `max_unschedulable_stay` are flushed back
//   periodically. Events that arrive while a pod is in flight are kept (the in-flight event
//   list) and checked against the pod's rejecting plugins when it comes back unschedulable: a
//   match sends it to backoff instead of the pool, so the event is not lost. Pods with
//   scheduling gates are held apart (counted as gated, in no sub-queue, untouched by events and
//   Flush) until an Update clears their gates.
//
// Ordering: the profile's QueueSort Less; ties by insertion order (FIFO), so a simulation with
// equal timestamps replays in arrival order.
//
// Thread safety: all methods are thread-safe. Pop() blocks until a pod is ready or Close().
// Hint functions run under the queue's lock on the caller's thread.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <queue>
#include <string>
#include <unordered_map>
#include <vector>

#include "src/common/clock.h"
#include "src/common/mutex.h"
#include "src/framework/plugin.h"
#include "src/framework/queueing_hints.h"

namespace gpusched::queue {

using LessFn =
    std::function<bool(const framework::QueuedPodInfo&, const framework::QueuedPodInfo&)>;

struct QueueOptions {
  common::Duration initial_backoff = std::chrono::seconds(1);
  common::Duration max_backoff = std::chrono::seconds(10);
  common::Duration max_unschedulable_stay = std::chrono::minutes(5);
};

// One cluster event as the queue keeps it: what happened, its metric label, and the objects
// (owned, so that the event can be checked later against a pod that was in flight).
struct QueueEvent {
  framework::ClusterEvent event;
  std::string label;  // "" = framework::EventLabel(event)
  api::PodPtr old_pod;
  api::PodPtr new_pod;
  api::NodePtr old_node;
  api::NodePtr new_node;
  std::shared_ptr<const void> old_obj;  // other resources: the api object the resource names
  std::shared_ptr<const void> new_obj;
  framework::EventObjects Objects() const {
    return {old_pod.get(),  new_pod.get(), old_node.get(),
            new_node.get(), old_obj.get(), new_obj.get()};
  }
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

  // The queueing hints of profile `scheduler_name` (framework/queueing_hints.h). Pods of a profile
  // without a table move on any event. REQUIRES: before the profile's first pod is requeued.
  void SetProfileHints(std::string_view scheduler_name, framework::ProfileHints hints);
  // Off: every event moves every unschedulable pod, as before queueing hints (kube-scheduler's
  // SchedulerQueueingHints feature gate off); for comparisons (the bench's --hints off).
  void SetHintsEnabled(bool on);

  // After a failed attempt of a popped pod. `error` means an infrastructure error (backoff).
  // Otherwise info.unschedulable_plugins (and `pending_plugins`, those that returned Pending)
  // decide which events move it: the events received while it was in flight are checked first
  // (a match: backoff, or active for a Pending plugin), else it waits in the unschedulable pool.
  void Requeue(framework::QueuedPodInfo info, bool error,
               const std::vector<std::string>& pending_plugins = {});
  // After a successful attempt (assumed; the binding cycle owns it now).
  void Done(const std::string& uid);

  // A cluster event (node added/changed, assigned pod deleted, PV created...): moves the
  // unschedulable pods it may help (see the top of this file) and is remembered for the pods in
  // flight. Cost: one hint check per unschedulable pod whose rejecting plugins registered it.
  void MoveOnEvent(const QueueEvent& event);
  // An event no plugin can judge: every unschedulable pod moves (a wildcard MoveOnEvent labelled
  // `event`).
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
    uint64_t events_seen = 0;  // in-flight event sequence number at Pop time
    // The pod object changed during its attempt (e.g. kube-controller-manager wrote the names of
    // its generated ResourceClaims): the attempt judged a stale pod, so it is retried.
    bool updated_in_flight = false;
    std::string gang;  // api::GangKey of the pod; "" when in no gang
    // Who rejected it in its last attempt, as indices into its profile's hints (profiles_):
    // kAnyEvent for a plugin the table does not know. Empty with no rejecting plugin.
    int32_t profile = -1;  // index into profiles_, -1 when the profile has no table
    std::vector<int32_t> rejectors;
    std::vector<int32_t> pending;  // the subset of rejectors that returned Pending
  };
  static constexpr int32_t kAnyEvent = -1;
  // What an event means for one unschedulable pod (upstream's queueingStrategy).
  enum class Strategy : uint8_t { kSkip, kAfterBackoff, kImmediately };
  struct Profile {
    std::string name;
    framework::ProfileHints hints;
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
  // Hints: the rejectors of `item` from plugin names; the strategy of one event for one pod; the
  // strategy of the events received while the pod was in flight; moving one pool pod.
  void SetRejectorsLocked(Item& item, const std::vector<std::string>& unschedulable,
                          const std::vector<std::string>& pending) GPUSCHED_REQUIRES(mu_);
  int32_t RejectorIndexLocked(int32_t profile, const std::string& plugin) const
      GPUSCHED_REQUIRES(mu_);
  Strategy WorthRequeuingLocked(const Item& item, const QueueEvent& event) const
      GPUSCHED_REQUIRES(mu_);
  Strategy InFlightStrategyLocked(const Item& item) const GPUSCHED_REQUIRES(mu_);
  void MoveFromPoolLocked(Item& item, Strategy strategy, std::string_view label,
                          common::TimePoint now) GPUSCHED_REQUIRES(mu_);
  // In-flight events: remembered while pods are in flight, dropped once no in-flight pod was
  // popped before them.
  void RecordInFlightEventLocked(const QueueEvent& event) GPUSCHED_REQUIRES(mu_);
  void LeaveFlightLocked(const Item& item) GPUSCHED_REQUIRES(mu_);
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
  // No unschedulable pod is due for the timeout flush before this (a lower bound: pods that left
  // unschedulablePods since are not taken out), so that Flush is O(1) until one may be.
  common::TimePoint unschedulable_due_ GPUSCHED_GUARDED_BY(mu_) = common::TimePoint::max();
  uint64_t next_seq_ GPUSCHED_GUARDED_BY(mu_) = 0;
  std::vector<Profile> profiles_ GPUSCHED_GUARDED_BY(mu_);
  bool hints_enabled_ GPUSCHED_GUARDED_BY(mu_) = true;
  // The events received while pods were in flight, by sequence number (last_event_ the latest);
  // in_flight_marks_ counts the in-flight pods per events_seen. Events up to lost_through_ were
  // dropped (kMaxInFlightEvents): a pod popped before then treats its flight as "any event".
  static constexpr size_t kMaxInFlightEvents = 100000;
  std::deque<std::pair<uint64_t, std::shared_ptr<const QueueEvent>>> in_flight_events_
      GPUSCHED_GUARDED_BY(mu_);
  std::map<uint64_t, int32_t> in_flight_marks_ GPUSCHED_GUARDED_BY(mu_);
  uint64_t last_event_ GPUSCHED_GUARDED_BY(mu_) = 0;
  uint64_t lost_through_ GPUSCHED_GUARDED_BY(mu_) = 0;
  bool closed_ GPUSCHED_GUARDED_BY(mu_) = false;
  std::vector<std::pair<std::string, int64_t>> incoming_ GPUSCHED_GUARDED_BY(mu_);
};

}  // namespace gpusched::queue
