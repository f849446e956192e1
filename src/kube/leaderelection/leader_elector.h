// SPDX-License-Identifier: Apache-2.0
// LeaderElector: client-go's leader election over a coordination.k8s.io/v1 Lease (LeaseLock), so
// that of several gpusched replicas exactly one schedules. Durations and semantics follow
// kube-scheduler's --leader-elect defaults: leaseDuration 15 s, renewDeadline 10 s, retryPeriod 2
// s.
//
//            ┌─ lease absent/free/expired: create or take it ─> OnStartedLeading ─┐
//            │                                                                     v
//   Follower ┤  held by another (renewed within its leaseDuration, as *we* saw it)  Leader
//     ^  ^   └─ retry every retryPeriod·(1..2.2) (jittered; at the latest when that │  renew every
//     │  │        lease expires by our clock)                                        │
//     │  │                                                                          │  retryPeriod
//     │  └───── no successful renew for renewDeadline, or another holder seen ──────┤
//     │              (OnStoppedLeading)                                             │
//     └──────── Stop()/Release(): holderIdentity "", leaseDurationSeconds 1 ────────┘
//                  (client-go's ReleaseOnCancel; OnStoppedLeading)
//
// Expiry is judged as client-go does, by the local time at which this elector last saw the lease
// record change plus the record's leaseDurationSeconds — never by comparing the holder's renewTime
// with our clock, so clock skew between replicas does not matter. A fresh candidate therefore
// waits one leaseDuration before taking over a lease whose holder died.
//
// Safety: renewDeadline < leaseDuration, so a leader that cannot renew stops leading before any
// other candidate may take the lease. Writes are guarded by resourceVersion, so of two candidates
// racing for an expired lease one gets 409 Conflict and stays a follower.
//
// Threading: Run() (or Step()) is called from one thread, which also calls the callbacks; the
// callbacks must not block (start work on another thread). Stop(), IsLeader() and GetLeader()
// may be called from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "src/common/clock.h"
#include "src/common/mutex.h"
#include "src/common/random.h"
#include "src/common/status.h"
#include "src/kube/leaderelection/lease_lock.h"
#include "src/kube/rest_client.h"

namespace gpusched::kube::leaderelection {

struct LeaderElectionConfig {
  std::string lease_namespace = "kube-system";
  std::string lease_name = "gpu-scheduler";
  // This candidate's name in holderIdentity; unique per process (cmd/ uses hostname_uuid).
  std::string identity;
  // How long a lease is valid after the holder last renewed it; followers wait this long.
  common::Duration lease_duration = std::chrono::seconds(15);
  // How long the leader keeps trying to renew before it gives up leading. < lease_duration.
  common::Duration renew_deadline = std::chrono::seconds(10);
  // Between attempts. renew_deadline > 1.2 * retry_period (client-go's jitter factor).
  common::Duration retry_period = std::chrono::seconds(2);
  // Run() releases the lease when it returns while leading.
  bool release_on_cancel = true;
  uint64_t seed = 1;  // retry jitter
};

// Reports every error: the identity, the ordering of the durations, the names.
common::Status Validate(const LeaderElectionConfig& config);

struct LeaderCallbacks {
  std::function<void()> on_started_leading;
  // Leadership ended: lost (renew failed for renewDeadline, or another holder seen) or released.
  std::function<void()> on_stopped_leading;
  // The observed holder changed (also to ourselves). Never called with "".
  std::function<void(std::string_view identity)> on_new_leader;
};

class LeaderElector {
 public:
  // `client` and `clock` are borrowed and must outlive the elector.
  static common::StatusOr<std::unique_ptr<LeaderElector>> Create(RestClient& client,
                                                                 const common::Clock& clock,
                                                                 LeaderElectionConfig config,
                                                                 LeaderCallbacks callbacks);
  LeaderElector(const LeaderElector&) = delete;
  LeaderElector& operator=(const LeaderElector&) = delete;

  // One acquire-or-renew attempt at clock.Now() and the transition it causes (callbacks run
  // before it returns). Returns IsLeader() afterwards. Waits for nothing but the API.
  bool Step();
  // Repeats Step() (every retry_period while leading, jittered while following) until Stop();
  // then releases the lease if leading and release_on_cancel.
  void Run();
  // Makes Run() return after the attempt in progress. Thread-safe, does not block.
  void Stop();
  // Gives the lease up now if we hold it (holderIdentity "", leaseDurationSeconds 1), so a
  // follower takes over at its next attempt instead of after leaseDuration.
  common::Status Release();

  // How long Run() waits before the next Step(): retry_period while leading; while following,
  // retry_period x [1, 2.2] (client-go's jitter), but never past the moment the current holder's
  // lease expires as we judge it, so a dead leader is replaced without oversleeping.
  common::Duration NextWait();

  bool IsLeader() const;
  // The holder we saw last ("" if none or not known yet).
  std::string GetLeader() const;
  const LeaderElectionConfig& config() const { return config_; }

 private:
  LeaderElector(RestClient& client, const common::Clock& clock, LeaderElectionConfig config,
                LeaderCallbacks callbacks);
  // True when we hold the lease after this attempt; sets lost_ when another holder was seen.
  bool TryAcquireOrRenew(common::TimePoint now);
  // Records `record` as observed at `now` (if it changed) and reports a new holder.
  void Observe(const LeaderElectionRecord& record, common::TimePoint now);

  const common::Clock& clock_;
  const LeaderElectionConfig config_;
  const LeaderCallbacks callbacks_;
  LeaseLock lock_;  // used on the Step() thread only
  common::Random random_;

  // Step() thread only.
  LeaderElectionRecord observed_record_;
  bool observed_any_ = false;
  common::TimePoint observed_time_{};
  common::TimePoint last_renew_{};
  bool lost_ = false;
  // When the lease we saw held by another expires (by our clock); unset otherwise.
  std::optional<common::TimePoint> other_expiry_;

  mutable common::Mutex mu_;
  std::condition_variable_any cv_;
  bool leader_ GPUSCHED_GUARDED_BY(mu_) = false;
  bool stopping_ GPUSCHED_GUARDED_BY(mu_) = false;
  std::string observed_holder_ GPUSCHED_GUARDED_BY(mu_);
};

}  // namespace gpusched::kube::leaderelection
