// SPDX-License-Identifier: Apache-2.0
// GangStore: the record of gangs (api/gang.h) — what framework::Gangs offers the GangScheduling
// plugin, plus what the scheduler's gang cycle (src/scheduler/gang_cycle.cc), its status writer
// and the metrics need:
//
//   policies   the PodGroup policies by PolicyKey, from the PodGroup/Workload informers or the
//              simulator's input (SetPolicy / RemovePolicy);
//   members    per gang (GangKey), each member's uid with whether it is reserved (the plugin's
//              Reserve, or bound: seen with spec.nodeName) and its phase; a terminal or deleted
//              member leaves the reservation;
//   trial      the domain the gang cycle currently restricts a gang to (SetTrial / ClearTrial);
//   episodes   per gang, since when it has been tried without success (the schedule timeout
//              counts from there), whether it timed out, and when it was last placed.
//
// Threading: all methods are thread-safe (one mutex).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "src/api/gang.h"
#include "src/api/types.h"
#include "src/common/clock.h"
#include "src/common/mutex.h"
#include "src/framework/gangs.h"

namespace gpusched::cache {

class GangStore final : public framework::Gangs {
 public:
  // framework::Gangs
  api::PodGroupPtr PolicyOf(const api::Pod& pod) const override;
  api::PodGroupPtr Policy(const std::string& policy_key) const override;
  void Reserve(const api::Pod& pod) override;
  void Unreserve(const api::Pod& pod) override;
  std::vector<std::string> ReservedMembers(std::string_view gang_key) const override;
  std::optional<Domain> TrialDomain(std::string_view gang_key) const override;
  uint64_t TrialVersion() const override;

  // Policies (informers, simulator).
  void SetPolicy(api::PodGroupPtr policy);
  void RemovePolicy(const std::string& policy_key);

  // A member as the informer reports it: bound (spec.nodeName set) and not terminal counts as
  // reserved; terminal or deleted (`gone`) leaves. Pods in no gang are ignored.
  void ObserveMember(const api::Pod& pod, bool gone);

  // The gang cycle's domain for `gang_key`.
  void SetTrial(const std::string& gang_key, Domain domain);
  void ClearTrial(const std::string& gang_key);

  // Episodes. BeginAttempt starts one at `now` unless one is running; Placed ends it (and
  // returns how long it ran).
  void BeginAttempt(const std::string& gang_key, common::TimePoint now);
  std::optional<common::Duration> Placed(const std::string& gang_key, common::TimePoint now);
  // Marks every gang whose episode has run longer than its policy's schedule timeout
  // (framework::ScheduleTimeoutOf) as timed out, once, and returns them with their members.
  struct MemberRef {
    std::string namespace_;
    std::string name;
    std::string uid;
  };
  struct TimedOut {
    std::string gang_key;
    api::PodGroupPtr policy;
    std::vector<MemberRef> members;
  };
  std::vector<TimedOut> ExpireTimeouts(common::TimePoint now);

  // One gang's state, for status writes, metrics and reports.
  struct GangState {
    std::string gang_key;
    api::PodGroupPtr policy;  // null when its policy object is unknown
    int32_t members = 0;      // known members (reserved or not)
    int32_t reserved = 0;
    int32_t running = 0;
    int32_t succeeded = 0;
    int32_t failed = 0;
    bool waiting = false;  // tried and not placed
    bool timed_out = false;
    bool placed = false;  // placed at least once
  };
  std::vector<GangState> States() const;

 private:
  struct Member {
    bool reserved = false;
    api::PodPhase phase = api::PodPhase::kPending;
    std::string namespace_;
    std::string name;
  };
  Member& MemberFor(const api::Pod& pod) GPUSCHED_REQUIRES(mu_);
  struct Gang {
    std::string policy_key;
    std::unordered_map<std::string, Member> members;  // by uid
    std::optional<common::TimePoint> attempt_since;
    bool timed_out = false;
    bool placed = false;
  };
  Gang& GangFor(const api::Pod& pod) GPUSCHED_REQUIRES(mu_);

  mutable common::Mutex mu_;
  std::unordered_map<std::string, api::PodGroupPtr> policies_ GPUSCHED_GUARDED_BY(mu_);
  std::map<std::string, Gang> gangs_ GPUSCHED_GUARDED_BY(mu_);  // by gang key, sorted
  std::unordered_map<std::string, Domain> trials_ GPUSCHED_GUARDED_BY(mu_);
  uint64_t trial_version_ GPUSCHED_GUARDED_BY(mu_) = 0;
};

}  // namespace gpusched::cache
