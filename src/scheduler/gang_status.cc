// SPDX-License-Identifier: Apache-2.0
// Gang policies from the informers (PodGroups, Workload pod groups) and the PodGroup statuses the
// scheduler keeps current (scheduler.h).
//
// Status (written through ApiClient::UpdatePodGroupStatus when it changes; a Workload has no
// status, so scheduler-plugins, Volcano and native PodGroups are written). With minMember m and
// the gang's members as the scheduler sees them:
//   scheduler-plugins phase   Finished  m members succeeded
//                             Failed    a member failed
//                             Running   m members running
//                             Scheduling m members reserved or bound, fewer running
//                             TimedOut  not placed within its schedule timeout (until placed)
//                             Pending   otherwise
//   Volcano phase             Completed, Running (for Running and Scheduling), Pending; waiting
//                             or timed out adds the Unschedulable condition (reason
//                             NotEnoughResources or TimedOut).
//   native condition          PodGroupInitiallyScheduled True (reason Scheduled) once m members
//                             were reserved or bound, for good (as upstream: it never goes back);
//                             False (reason Unschedulable) while tried and not placed or timed
//                             out; none before the first try.
#include <spdlog/spdlog.h>

#include "src/scheduler/scheduler.h"

namespace gpusched::scheduler {
namespace {

std::string_view PluginsPhase(const cache::GangStore::GangState& s, int32_t m) {
  if (s.succeeded >= m) return "Finished";
  if (s.failed > 0) return "Failed";
  if (s.running >= m) return "Running";
  if (s.reserved >= m) return "Scheduling";
  if (s.timed_out) return "TimedOut";
  return "Pending";
}

std::string UnschedulableMessage(const cache::GangStore::GangState& s) {
  return std::to_string(s.members) + "/" + std::to_string(s.policy->min_member) +
         " tasks in gang unschedulable";
}

api::PodGroupStatus NativeStatusOf(const cache::GangStore::GangState& s, std::string_view phase) {
  api::PodGroupStatus st;
  const bool placed = phase == "Finished" || phase == "Running" || phase == "Scheduling";
  if (placed || s.placed || s.policy->phase == api::kNativePhaseScheduled) {
    st.phase = std::string(api::kNativePhaseScheduled);
  } else if (s.waiting || s.timed_out) {
    st.phase = std::string(api::kNativePhaseUnschedulable);
    st.unschedulable = true;
    st.reason = std::string(api::kNativePhaseUnschedulable);
    st.message = UnschedulableMessage(s) + (s.timed_out ? " (schedule timeout)" : "");
  }
  return st;
}

api::PodGroupStatus StatusOf(const cache::GangStore::GangState& s) {
  const api::PodGroup& g = *s.policy;
  api::PodGroupStatus st;
  st.running = s.running;
  st.succeeded = s.succeeded;
  st.failed = s.failed;
  const std::string_view phase = PluginsPhase(s, g.min_member);
  if (g.api == api::GangApi::kNative) return NativeStatusOf(s, phase);
  if (g.api == api::GangApi::kPodGroup) {
    st.phase = std::string(phase);
    return st;
  }
  // Volcano's vocabulary.
  if (phase == "Finished") {
    st.phase = "Completed";
  } else if (phase == "Running" || phase == "Scheduling") {
    st.phase = "Running";
  } else {
    st.phase = "Pending";
    st.unschedulable = s.waiting || s.timed_out;
    st.reason = s.timed_out ? "TimedOut" : "NotEnoughResources";
    st.message = UnschedulableMessage(s);
  }
  return st;
}

}  // namespace

void Scheduler::SyncGangStatuses() {
  for (const cache::GangStore::GangState& s : gangs_.States()) {
    if (s.policy == nullptr || !s.policy->gang || s.policy->api == api::GangApi::kWorkload) {
      continue;
    }
    api::PodGroupStatus st = StatusOf(s);
    if (st.phase.empty()) continue;  // a native PodGroup not tried yet: nothing to say
    const std::string key = s.policy->Key();
    auto it = gang_status_written_.find(key);
    if (it != gang_status_written_.end() && it->second == st) continue;
    if (it == gang_status_written_.end() && st.phase == s.policy->phase && !st.unschedulable) {
      gang_status_written_[key] = st;  // the object already says so
      continue;
    }
    common::Status w = deps_.api.UpdatePodGroupStatus(*s.policy, st);
    if (!w.ok()) {
      spdlog::warn("updating the status of {}: {}", key, w.ToString());
      continue;
    }
    gang_status_written_[key] = std::move(st);
  }
}

}  // namespace gpusched::scheduler
