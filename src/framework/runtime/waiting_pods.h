// SPDX-License-Identifier: Apache-2.0
// WaitingPodMap: the runtime's table of pods held at Permit (framework/waiting_pods.h says what a
// waiting pod is). Framework::RunPermit adds a pod when a plugin returns kWait; the binding cycle
// asks to be told the outcome (OnDecided); plugins Allow or Reject through the Handle; the
// scheduler's tick expires timeouts (ExpireDue) on its injected clock. One map is shared by every
// profile of a scheduler (as kube-scheduler's waitingPods).
//
// Life of an entry:   Add ──► waiting ──Allow by every holder──► decided(Success)
//                                    ├──Reject / ExpireDue────► decided(Unschedulable, plugin)
//                      decided + OnDecided ──► the callback runs once, the entry is gone
// The callback runs on the thread that completed the pair (OnDecided's caller if the pod was
// already decided, else the Allow/Reject/ExpireDue caller), never under the map's lock.
//
// Thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "src/common/clock.h"
#include "src/common/mutex.h"
#include "src/framework/status.h"
#include "src/framework/waiting_pods.h"

namespace gpusched::framework::runtime {

// Permit timeouts are capped as kube-scheduler caps them (maxTimeout).
inline constexpr common::Duration kMaxPermitWait = std::chrono::minutes(15);

class WaitingPodMap final : public WaitingPods {
 public:
  using Decided = std::function<void(Status)>;
  // One Permit plugin holding the pod, until `deadline`.
  struct Hold {
    std::string_view plugin;  // the plugin's Name() literal
    common::TimePoint deadline;
  };

  // Registers `pod`, reserved on `node`, held by `holds` (not empty) since `now`.
  // REQUIRES: the pod is not in the map.
  void Add(api::PodPtr pod, std::string node, std::vector<Hold> holds, common::TimePoint now);
  // Runs `decided` once with the pod's outcome: now if it is already decided, else when it is.
  // A pod not in the map is treated as allowed (decided(Success) at once).
  void OnDecided(std::string_view uid, Decided decided);
  // Drops `uid` from the map whatever its state, without running a callback (a pod whose binding
  // half never started: BindingCycle::Abandon). False when it was not there.
  bool Remove(std::string_view uid);
  // Rejects every pod whose earliest deadline is at or before `now`. Returns how many.
  int ExpireDue(common::TimePoint now);
  // Pods added and not yet handed to their OnDecided callback.
  size_t size() const;

  // WaitingPods
  std::vector<Info> List() const override;
  bool Allow(std::string_view uid, std::string_view plugin) override;
  bool Reject(std::string_view uid, std::string_view plugin, std::string_view message) override;

 private:
  struct Entry {
    api::PodPtr pod;
    std::string node;
    std::vector<Hold> holds;  // the plugins still holding it
    common::TimePoint since;
    uint64_t order = 0;
    std::optional<Status> outcome;
    Decided decided;
  };
  // Records `outcome` for the entry at `it`; if its callback is already there, takes it out of
  // the map and returns the call to make once the lock is released.
  std::function<void()> DecideLocked(std::unordered_map<std::string, Entry>::iterator it,
                                     Status outcome) GPUSCHED_REQUIRES(mu_);

  mutable common::Mutex mu_;
  std::unordered_map<std::string, Entry> entries_ GPUSCHED_GUARDED_BY(mu_);
  uint64_t next_order_ GPUSCHED_GUARDED_BY(mu_) = 0;
};

// Go's time.Duration formatting of whole and fractional seconds as kube-scheduler prints a Permit
// timeout: "30s", "1m30s", "1.5s", "250ms".
std::string FormatWait(common::Duration d);

}  // namespace gpusched::framework::runtime
