// SPDX-License-Identifier: Apache-2.0
// What the scheduler does with a Consolidation plan (PostFilterResult::destinations): the moved
// pods are evicted through the Eviction API, in order, stopping at the first refusal (a
// PodDisruptionBudget's 429, any error): nothing more is moved and the waiting pod is not
// nominated. Each evicted pod gets a "Moved" event, and its controller's replacement gets the
// room planned for it: a placeholder (a copy of the moved pod under the uid
// "consolidation:<uid>") is nominated to the destination, so pods of its priority or lower
// count it there, until the first pod of the same controller is scheduled (ClaimPlannedRoom: the
// placeholder's nomination becomes that pod's, so its destination is tried first) or
// kPlannedRoomHold has passed.
#include <spdlog/spdlog.h>

#include <string>

#include "src/scheduler/pod_event.h"
#include "src/scheduler/scheduler.h"

namespace gpusched::scheduler {

size_t Scheduler::MovePods(const api::Pod& pod, const framework::PostFilterResult& pf) {
  const std::string controller(common::Str(pod.scheduler_name));
  size_t moved = 0;
  for (size_t i = 0; i < pf.victims.size() && i < pf.destinations.size(); ++i) {
    const api::Pod& v = *pf.victims[i];
    common::Status s = deps_.api.EvictPod(v);
    if (!s.ok() && s.code() != common::StatusCode::kNotFound) {
      spdlog::info("consolidation for {}: evicting {} refused, no more pods move: {}", pod.Key(),
                   v.Key(), s.ToString());
      break;
    }
    ++moved;
    HoldRoom(v, pf.destinations[i]);
    const std::string note = "Moved to node " + pf.destinations[i] + " to make room for pod " +
                             pod.Key() + " on node " + pf.nominated_node;
    s = deps_.api.CreateEvent(PodEvent(v, "Normal", "Moved", "Consolidating", note, controller));
    if (!s.ok()) spdlog::warn("recording Moved event for {}: {}", v.Key(), s.ToString());
  }
  if (deps_.metrics != nullptr) deps_.metrics->CountConsolidation(moved, pf.victims.size());
  return moved;
}

void Scheduler::HoldRoom(const api::Pod& moved, const std::string& node) {
  const api::OwnerReference* owner = moved.meta.ControllerRef();
  if (owner == nullptr) return;
  auto placeholder = std::make_shared<api::Pod>(moved);
  placeholder->meta.uid = "consolidation:" + moved.meta.uid;
  placeholder->node_name.clear();
  placeholder->nominated_node_name = node;
  nominator_.Set(placeholder, node);
  planned_rooms_[owner->uid].push_back(
      {placeholder->meta.uid, node, deps_.clock.Now() + kPlannedRoomHold});
}

void Scheduler::ClaimPlannedRoom(const api::PodPtr& pod) {
  if (planned_rooms_.empty() || !pod->node_name.empty()) return;
  const api::OwnerReference* owner = pod->meta.ControllerRef();
  if (owner == nullptr) return;
  auto it = planned_rooms_.find(owner->uid);
  if (it == planned_rooms_.end()) return;
  const PlannedRoom room = it->second.front();
  it->second.erase(it->second.begin());
  if (it->second.empty()) planned_rooms_.erase(it);
  nominator_.Remove(room.placeholder_uid);
  nominator_.Set(pod, room.node);
}

void Scheduler::ExpirePlannedRooms() {
  const common::TimePoint now = deps_.clock.Now();
  for (auto it = planned_rooms_.begin(); it != planned_rooms_.end();) {
    std::vector<PlannedRoom>& rooms = it->second;
    std::erase_if(rooms, [&](const PlannedRoom& r) {
      if (r.until > now) return false;
      nominator_.Remove(r.placeholder_uid);
      return true;
    });
    it = rooms.empty() ? planned_rooms_.erase(it) : std::next(it);
  }
}

}  // namespace gpusched::scheduler
