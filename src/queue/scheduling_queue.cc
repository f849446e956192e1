// SPDX-License-Identifier: Apache-2.0
#include "src/queue/scheduling_queue.h"

#include <algorithm>

#include "src/api/gang.h"
#include "src/common/backoff.h"

namespace gpusched::queue {

using framework::QueuedPodInfo;

namespace {

// `since` + `stay`, saturating at the end of time.
common::TimePoint DueAfter(common::TimePoint since, common::Duration stay) {
  return stay >= common::TimePoint::max() - since ? common::TimePoint::max() : since + stay;
}

}  // namespace

bool SchedulingQueue::ActiveCompare::operator()(const HeapEntry& a, const HeapEntry& b) const {
  // std::priority_queue pops the "largest"; the next pod to schedule must be on top, so return
  // true when `a` should be scheduled after `b`.
  if ((*less_)(*b.key, *a.key)) return true;
  if ((*less_)(*a.key, *b.key)) return false;
  return a.order > b.order;
}

SchedulingQueue::SchedulingQueue(const common::Clock& clock, LessFn less, QueueOptions options)
    : clock_(clock), less_(std::move(less)), options_(options), active_(ActiveCompare(&less_)) {}

common::Duration SchedulingQueue::BackoffFor(int32_t attempts) const {
  return common::ExponentialBackoff(options_.initial_backoff, options_.max_backoff, attempts);
}

void SchedulingQueue::CountIncomingLocked(std::string_view queue, std::string_view event) {
  for (auto& [k, v] : incoming_) {
    if (k.size() == queue.size() + 1 + event.size() && k.compare(0, queue.size(), queue) == 0 &&
        std::string_view(k).substr(queue.size() + 1) == event) {
      ++v;
      return;
    }
  }
  incoming_.emplace_back(std::string(queue) + "|" + std::string(event), 1);
}

SchedulingQueue::Item* SchedulingQueue::LiveLocked(uint64_t id, uint64_t seq, Where where) {
  auto it = items_.find(id);
  if (it == items_.end() || it->second.seq != seq || it->second.where != where) return nullptr;
  return &it->second;
}

void SchedulingQueue::PushActiveLocked(Item& item, std::string_view event) {
  item.where = Where::kActive;
  item.seq = ++next_seq_;
  item.info.timestamp = clock_.Now();
  active_.push(
      HeapEntry{item.id, item.seq, item.order, std::make_shared<const QueuedPodInfo>(item.info)});
  ++counts_.active;
  CountIncomingLocked("active", event);
  cv_.notify_one();
}

void SchedulingQueue::PushBackoffLocked(Item& item, std::string_view event) {
  item.where = Where::kBackoff;
  item.seq = ++next_seq_;
  item.backoff_expiry = clock_.Now() + BackoffFor(std::max(item.info.attempts, 1));
  backoff_.push(BackoffEntry{item.backoff_expiry, item.id, item.seq});
  ++counts_.backoff;
  CountIncomingLocked("backoff", event);
}

void SchedulingQueue::MoveToUnschedulableLocked(Item& item) {
  item.where = Where::kUnschedulable;
  item.seq = ++next_seq_;
  item.unschedulable_since = clock_.Now();
  unschedulable_due_ = std::min(
      unschedulable_due_, DueAfter(item.unschedulable_since, options_.max_unschedulable_stay));
  ++counts_.unschedulable;
  CountIncomingLocked("unschedulable", "ScheduleAttemptFailure");
}

void SchedulingQueue::Add(api::PodPtr pod) {
  common::MutexLock lock(mu_);
  if (closed_) return;
  const std::string& uid = pod->meta.uid;
  if (ids_.count(uid) != 0) return;
  uint64_t id = ++next_seq_;
  ids_.emplace(uid, id);
  Item& item = items_[id];
  item.id = id;
  item.order = id;
  item.info.pod = std::move(pod);
  item.gang = api::GangKey(*item.info.pod);
  IndexGangLocked(item);
  if (!item.info.pod->scheduling_gates.empty()) {
    item.where = Where::kGated;
    ++counts_.gated;
    return;
  }
  PushActiveLocked(item, "PodAdd");
}

void SchedulingQueue::Update(api::PodPtr pod) {
  common::MutexLock lock(mu_);
  auto id = ids_.find(pod->meta.uid);
  if (id == ids_.end()) return;
  Item& item = items_.at(id->second);
  bool gated = !pod->scheduling_gates.empty();
  if (std::string gang = api::GangKey(*pod); gang != item.gang) {
    UnindexGangLocked(item);
    item.gang = std::move(gang);
    IndexGangLocked(item);
  }
  switch (item.where) {
    case Where::kGated:
      item.info.pod = std::move(pod);
      if (!gated) {
        --counts_.gated;
        PushActiveLocked(item, "PodUpdate");
      }
      break;
    case Where::kUnschedulable:
      item.info.pod = std::move(pod);
      --counts_.unschedulable;
      if (gated) {
        item.where = Where::kGated;
        ++counts_.gated;
      } else {
        PushActiveLocked(item, "PodUpdate");
      }
      break;
    case Where::kActive: {
      // The heap orders by the pod; replace the item so live heap entries never see a changed
      // key: the old entry turns stale, a new one is pushed.
      --counts_.active;
      item.info.pod = std::move(pod);
      PushActiveLocked(item, "PodUpdate");
      break;
    }
    case Where::kBackoff:
      item.info.pod = std::move(pod);  // used on the next attempt
      break;
    case Where::kInFlight:
      item.info.pod = std::move(pod);
      item.updated_in_flight = true;
      break;
  }
}

void SchedulingQueue::Delete(const std::string& uid) {
  common::MutexLock lock(mu_);
  auto id = ids_.find(uid);
  if (id == ids_.end()) return;
  auto it = items_.find(id->second);
  if (it->second.where == Where::kInFlight) LeaveFlightLocked(it->second);
  UncountLocked(it->second);
  UnindexGangLocked(it->second);
  items_.erase(it);  // its heap entries turn stale
  ids_.erase(id);
}

void SchedulingQueue::UncountLocked(const Item& item) {
  switch (item.where) {
    case Where::kActive: --counts_.active; break;
    case Where::kBackoff: --counts_.backoff; break;
    case Where::kUnschedulable: --counts_.unschedulable; break;
    case Where::kGated: --counts_.gated; break;
    case Where::kInFlight: --counts_.in_flight; break;
  }
}

void SchedulingQueue::IndexGangLocked(const Item& item) {
  if (!item.gang.empty()) gangs_[item.gang].push_back(item.id);
}

void SchedulingQueue::UnindexGangLocked(const Item& item) {
  if (item.gang.empty()) return;
  auto it = gangs_.find(item.gang);
  if (it == gangs_.end()) return;
  std::erase(it->second, item.id);
  if (it->second.empty()) gangs_.erase(it);
}

void SchedulingQueue::TakeLocked(Item& item) {
  UncountLocked(item);
  ++counts_.in_flight;
  item.where = Where::kInFlight;
  item.seq = ++next_seq_;  // its heap or backoff entries turn stale
  item.events_seen = last_event_;
  ++in_flight_marks_[last_event_];
  item.info.attempts++;
  if (item.info.attempts == 1) item.info.initial_attempt_timestamp = clock_.Now();
}

std::vector<QueuedPodInfo> SchedulingQueue::PopGang(const std::string& key) {
  std::vector<QueuedPodInfo> out;
  common::MutexLock lock(mu_);
  auto g = gangs_.find(key);
  if (g == gangs_.end()) return out;
  for (uint64_t id : g->second) {
    Item& item = items_.at(id);
    if (item.where == Where::kGated || item.where == Where::kInFlight) continue;
    TakeLocked(item);
    out.push_back(item.info);
  }
  return out;
}

std::vector<QueuedPodInfo> SchedulingQueue::PeekGang(const std::string& key) const {
  std::vector<QueuedPodInfo> out;
  common::MutexLock lock(mu_);
  auto g = gangs_.find(key);
  if (g == gangs_.end()) return out;
  for (uint64_t id : g->second) {
    const Item& item = items_.at(id);
    if (item.where != Where::kGated && item.where != Where::kInFlight) out.push_back(item.info);
  }
  return out;
}

size_t SchedulingQueue::GangSize(const std::string& key) const {
  common::MutexLock lock(mu_);
  auto g = gangs_.find(key);
  return g == gangs_.end() ? 0 : g->second.size();
}

void SchedulingQueue::ActivateGang(const std::string& key, std::string_view event) {
  common::MutexLock lock(mu_);
  auto g = gangs_.find(key);
  if (g == gangs_.end()) return;
  for (uint64_t id : g->second) {
    Item& item = items_.at(id);
    if (item.where != Where::kUnschedulable && item.where != Where::kBackoff) continue;
    UncountLocked(item);
    PushActiveLocked(item, event);
  }
}

void SchedulingQueue::FlushBackoffLocked() {
  common::TimePoint now = clock_.Now();
  while (!backoff_.empty() && backoff_.top().expiry <= now) {
    BackoffEntry e = backoff_.top();
    backoff_.pop();
    Item* item = LiveLocked(e.id, e.seq, Where::kBackoff);
    if (item == nullptr) continue;
    --counts_.backoff;
    PushActiveLocked(*item, "BackoffComplete");
  }
}

std::optional<QueuedPodInfo> SchedulingQueue::PopLocked() {
  FlushBackoffLocked();
  while (!active_.empty()) {
    HeapEntry e = active_.top();
    active_.pop();
    Item* item = LiveLocked(e.id, e.seq, Where::kActive);
    if (item == nullptr) continue;
    TakeLocked(*item);
    return item->info;
  }
  return std::nullopt;
}

std::optional<QueuedPodInfo> SchedulingQueue::PopFor(common::Duration max_wait) {
  using std::chrono::milliseconds;
  const auto give_up = std::chrono::steady_clock::now() + max_wait;
  common::MutexLock lock(mu_);
  for (;;) {
    if (closed_) return std::nullopt;
    auto p = PopLocked();
    if (p) return p;
    const auto now = std::chrono::steady_clock::now();
    if (now >= give_up) return std::nullopt;
    auto wait = std::chrono::duration_cast<milliseconds>(give_up - now) + milliseconds(1);
    if (!backoff_.empty()) {
      // Wake up to flush backoff at the next expiry, or on a push / Close.
      wait = std::min(
          wait, std::chrono::duration_cast<milliseconds>(backoff_.top().expiry - clock_.Now()) +
                    milliseconds(1));
    }
    lock.WaitFor(cv_, wait);
  }
}

std::optional<QueuedPodInfo> SchedulingQueue::Pop() {
  common::MutexLock lock(mu_);
  for (;;) {
    if (closed_) return std::nullopt;
    auto p = PopLocked();
    if (p) return p;
    // Wake up to flush backoff at the next expiry, or on a push / Close.
    if (!backoff_.empty()) {
      auto wait = backoff_.top().expiry - clock_.Now();
      lock.WaitFor(cv_, std::chrono::duration_cast<std::chrono::milliseconds>(wait) +
                            std::chrono::milliseconds(1));
    } else {
      lock.WaitFor(cv_, std::chrono::seconds(1));
    }
  }
}

std::optional<QueuedPodInfo> SchedulingQueue::TryPop() {
  common::MutexLock lock(mu_);
  return PopLocked();
}

void SchedulingQueue::Requeue(QueuedPodInfo info, bool error,
                              const std::vector<std::string>& pending_plugins) {
  common::MutexLock lock(mu_);
  auto id = ids_.find(info.pod->meta.uid);
  if (id == ids_.end()) return;  // deleted while in flight
  Item& item = items_.at(id->second);
  if (item.where != Where::kInFlight) return;
  --counts_.in_flight;
  item.info.attempts = info.attempts;
  item.info.initial_attempt_timestamp = info.initial_attempt_timestamp;
  item.info.unschedulable_plugins = std::move(info.unschedulable_plugins);
  SetRejectorsLocked(item, item.info.unschedulable_plugins, pending_plugins);
  const Strategy strategy =
      error || item.updated_in_flight ? Strategy::kAfterBackoff : InFlightStrategyLocked(item);
  item.updated_in_flight = false;
  LeaveFlightLocked(item);
  switch (strategy) {
    case Strategy::kSkip: MoveToUnschedulableLocked(item); break;
    case Strategy::kAfterBackoff:
      // An error, or an event during the attempt that may help: retry after backoff.
      PushBackoffLocked(item, error ? "ScheduleAttemptFailure" : "MoveDuringAttempt");
      break;
    case Strategy::kImmediately: PushActiveLocked(item, "MoveDuringAttempt"); break;
  }
}

void SchedulingQueue::Done(const std::string& uid) {
  common::MutexLock lock(mu_);
  auto id = ids_.find(uid);
  if (id == ids_.end()) return;
  auto it = items_.find(id->second);
  if (it->second.where != Where::kInFlight) return;
  --counts_.in_flight;
  LeaveFlightLocked(it->second);
  UnindexGangLocked(it->second);
  items_.erase(it);
  ids_.erase(id);
}

void SchedulingQueue::SetProfileHints(std::string_view scheduler_name,
                                      framework::ProfileHints hints) {
  common::MutexLock lock(mu_);
  for (Profile& p : profiles_) {
    if (p.name == scheduler_name) {
      p.hints = std::move(hints);
      return;
    }
  }
  profiles_.push_back(Profile{std::string(scheduler_name), std::move(hints)});
}

void SchedulingQueue::SetHintsEnabled(bool on) {
  common::MutexLock lock(mu_);
  hints_enabled_ = on;
}

int32_t SchedulingQueue::RejectorIndexLocked(int32_t profile, const std::string& plugin) const {
  if (profile < 0) return kAnyEvent;
  const framework::ProfileHints& hints = profiles_[static_cast<size_t>(profile)].hints;
  for (size_t i = 0; i < hints.size(); ++i) {
    if (hints[i].plugin == plugin) return static_cast<int32_t>(i);
  }
  return kAnyEvent;
}

void SchedulingQueue::SetRejectorsLocked(Item& item, const std::vector<std::string>& unschedulable,
                                         const std::vector<std::string>& pending) {
  item.rejectors.clear();
  item.pending.clear();
  item.profile = -1;
  const std::string_view profile = common::Str(item.info.pod->scheduler_name);
  for (size_t i = 0; i < profiles_.size(); ++i) {
    if (profiles_[i].name == profile) item.profile = static_cast<int32_t>(i);
  }
  for (const std::string& plugin : unschedulable) {
    item.rejectors.push_back(RejectorIndexLocked(item.profile, plugin));
  }
  for (const std::string& plugin : pending) {
    const int32_t r = RejectorIndexLocked(item.profile, plugin);
    item.pending.push_back(r);
    if (std::find(item.rejectors.begin(), item.rejectors.end(), r) == item.rejectors.end()) {
      item.rejectors.push_back(r);
    }
  }
}

SchedulingQueue::Strategy SchedulingQueue::WorthRequeuingLocked(const Item& item,
                                                                const QueueEvent& event) const {
  if (!hints_enabled_ || item.rejectors.empty() || item.profile < 0 ||
      event.event.resource == framework::EventResource::kWildCard) {
    return Strategy::kAfterBackoff;
  }
  const framework::ProfileHints& hints = profiles_[static_cast<size_t>(item.profile)].hints;
  const framework::EventObjects objects = event.Objects();
  Strategy strategy = Strategy::kSkip;
  for (int32_t r : item.rejectors) {
    bool queue = r == kAnyEvent;
    if (!queue) {
      for (const framework::ClusterEventWithHint& reg : hints[static_cast<size_t>(r)].events) {
        if (!reg.event.Matches(event.event)) continue;
        if (!reg.hint ||
            reg.hint(*item.info.pod, event.event, objects) == framework::QueueingHint::kQueue) {
          queue = true;
          break;
        }
      }
    }
    if (!queue) continue;
    if (std::find(item.pending.begin(), item.pending.end(), r) != item.pending.end()) {
      return Strategy::kImmediately;  // a Pending plugin's kQueue: no backoff (upstream)
    }
    strategy = Strategy::kAfterBackoff;
    if (item.pending.empty()) break;
  }
  return strategy;
}

SchedulingQueue::Strategy SchedulingQueue::InFlightStrategyLocked(const Item& item) const {
  if (item.events_seen < lost_through_) return Strategy::kAfterBackoff;
  auto first = std::partition_point(in_flight_events_.begin(), in_flight_events_.end(),
                                    [&](const auto& e) { return e.first <= item.events_seen; });
  Strategy strategy = Strategy::kSkip;
  for (auto it = first; it != in_flight_events_.end(); ++it) {
    switch (WorthRequeuingLocked(item, *it->second)) {
      case Strategy::kSkip: break;
      case Strategy::kImmediately: return Strategy::kImmediately;
      case Strategy::kAfterBackoff: strategy = Strategy::kAfterBackoff; break;
    }
  }
  return strategy;
}

void SchedulingQueue::RecordInFlightEventLocked(const QueueEvent& event) {
  in_flight_events_.emplace_back(++last_event_, std::make_shared<const QueueEvent>(event));
  if (in_flight_events_.size() > kMaxInFlightEvents) {
    lost_through_ = in_flight_events_.front().first;
    in_flight_events_.pop_front();
  }
}

void SchedulingQueue::LeaveFlightLocked(const Item& item) {
  auto mark = in_flight_marks_.find(item.events_seen);
  if (mark != in_flight_marks_.end() && --mark->second == 0) in_flight_marks_.erase(mark);
  if (in_flight_marks_.empty()) {
    in_flight_events_.clear();
    return;
  }
  const uint64_t oldest = in_flight_marks_.begin()->first;
  while (!in_flight_events_.empty() && in_flight_events_.front().first <= oldest) {
    in_flight_events_.pop_front();
  }
}

void SchedulingQueue::MoveFromPoolLocked(Item& item, Strategy strategy, std::string_view label,
                                         common::TimePoint now) {
  --counts_.unschedulable;
  const common::TimePoint expiry = item.unschedulable_since + BackoffFor(item.info.attempts);
  if (strategy == Strategy::kAfterBackoff && expiry > now) {
    PushBackoffLocked(item, label);
  } else {
    PushActiveLocked(item, label);
  }
}

void SchedulingQueue::MoveOnEvent(const QueueEvent& event) {
  common::MutexLock lock(mu_);
  if (counts_.in_flight > 0) RecordInFlightEventLocked(event);
  if (counts_.unschedulable == 0) return;
  const std::string label = event.label.empty() ? framework::EventLabel(event.event) : event.label;
  const common::TimePoint now = clock_.Now();
  for (auto& [id, item] : items_) {
    if (item.where != Where::kUnschedulable) continue;
    const Strategy strategy = WorthRequeuingLocked(item, event);
    if (strategy != Strategy::kSkip) MoveFromPoolLocked(item, strategy, label, now);
  }
}

void SchedulingQueue::MoveAllToActiveOrBackoff(std::string_view event) {
  QueueEvent any;
  any.label = std::string(event);
  MoveOnEvent(any);
}

void SchedulingQueue::Flush() {
  common::MutexLock lock(mu_);
  FlushBackoffLocked();
  common::TimePoint now = clock_.Now();
  if (counts_.unschedulable == 0 || now < unschedulable_due_) return;
  unschedulable_due_ = common::TimePoint::max();
  for (auto& [id, item] : items_) {
    if (item.where != Where::kUnschedulable) continue;
    const common::TimePoint due =
        DueAfter(item.unschedulable_since, options_.max_unschedulable_stay);
    if (now >= due) {
      --counts_.unschedulable;
      PushActiveLocked(item, "UnschedulableTimeout");
    } else {
      unschedulable_due_ = std::min(unschedulable_due_, due);
    }
  }
}

void SchedulingQueue::Close() {
  {
    common::MutexLock lock(mu_);
    closed_ = true;
  }
  cv_.notify_all();
}

QueueCounts SchedulingQueue::Counts() const {
  common::MutexLock lock(mu_);
  return counts_;
}

bool SchedulingQueue::Contains(const std::string& uid) const {
  common::MutexLock lock(mu_);
  return ids_.count(uid) != 0;
}

std::vector<std::pair<std::string, int64_t>> SchedulingQueue::IncomingCountsForMetrics() const {
  common::MutexLock lock(mu_);
  return incoming_;
}

std::vector<SchedulingQueue::UnschedulablePluginCount>
SchedulingQueue::UnschedulablePluginCountsForMetrics() const {
  std::vector<UnschedulablePluginCount> out;
  common::MutexLock lock(mu_);
  for (const auto& [id, item] : items_) {
    if (item.where != Where::kUnschedulable) continue;
    std::string_view profile = common::Str(item.info.pod->scheduler_name);
    for (const auto& plugin : item.info.unschedulable_plugins) {
      auto it = std::find_if(out.begin(), out.end(), [&](const UnschedulablePluginCount& c) {
        return c.plugin == plugin && c.profile == profile;
      });
      if (it == out.end()) {
        out.push_back({plugin, std::string(profile), 1});
      } else {
        ++it->pods;
      }
    }
  }
  return out;
}

}  // namespace gpusched::queue
