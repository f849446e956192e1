// SPDX-License-Identifier: Apache-2.0
#include "src/scheduler/dra_events.h"

#include <memory>
#include <variant>

#include "src/common/overloaded.h"
#include "src/scheduler/scheduler.h"

namespace gpusched::scheduler {

using common::Overloaded;

void ApplyDraEvent(cache::DraStore& store, const kube::DraObject* old_obj,
                   const kube::DraObject* obj) {
  if (obj == nullptr) {  // delete
    std::visit(Overloaded{
                   [&](const api::DeviceClassPtr& c) { store.DeleteDeviceClass(c->name); },
                   [&](const api::ResourceSlicePtr& s) { store.DeleteSlice(s->name); },
                   [&](const api::ResourceClaimPtr& c) {
                     store.DeleteClaim(c->meta.namespace_, c->meta.name);
                   },
                   [&](const api::DeviceTaintRulePtr& r) { store.DeleteTaintRule(r->name); },
               },
               *old_obj);
    return;
  }
  std::visit(Overloaded{
                 [&](const api::DeviceClassPtr& c) { store.UpsertDeviceClass(c); },
                 [&](const api::ResourceSlicePtr& s) { store.UpsertSlice(s); },
                 [&](const api::ResourceClaimPtr& c) { store.UpsertClaim(c); },
                 [&](const api::DeviceTaintRulePtr& r) { store.UpsertTaintRule(r); },
             },
             *obj);
}

queue::QueueEvent DraQueueEvent(const kube::DraObject* old_obj, const kube::DraObject* obj) {
  using framework::EventResource;
  queue::QueueEvent e;
  const kube::DraObject& any = obj != nullptr ? *obj : *old_obj;
  e.event.resource =
      std::visit(Overloaded{
                     [](const api::DeviceClassPtr&) { return EventResource::kDeviceClass; },
                     [](const api::ResourceSlicePtr&) { return EventResource::kResourceSlice; },
                     [](const api::ResourceClaimPtr&) { return EventResource::kResourceClaim; },
                     [](const api::DeviceTaintRulePtr&) { return EventResource::kResourceSlice; },
                 },
                 any);
  if (std::holds_alternative<api::DeviceTaintRulePtr>(any)) {
    // A rule changes the taints of the slices it matches: upstream's tracker sends their update.
    e.event.actions = framework::kUpdateOther;
    return e;
  }
  if (obj == nullptr) {
    e.event.actions = framework::kDelete;
  } else if (old_obj == nullptr) {
    e.event.actions = framework::kAdd;
  } else {
    e.event.actions = framework::kUpdateOther;
  }
  auto as_void = [](const auto& ptr) { return std::shared_ptr<const void>(ptr); };
  if (obj != nullptr) e.new_obj = std::visit(as_void, *obj);
  if (old_obj != nullptr) e.old_obj = std::visit(as_void, *old_obj);
  return e;
}

void Scheduler::OnDraAdd(const kube::DraObject& obj) {
  ApplyDraEvent(dra_data_.store, nullptr, &obj);
  OnClusterEvent(DraQueueEvent(nullptr, &obj));
}

void Scheduler::OnDraUpdate(const kube::DraObject& old_obj, const kube::DraObject& obj) {
  ApplyDraEvent(dra_data_.store, &old_obj, &obj);
  OnClusterEvent(DraQueueEvent(&old_obj, &obj));
}

// A deleted claim frees its devices; a deleted slice or class helps no pod (the plugin
// registers no delete for them, and the hints skip what they did not register).
void Scheduler::OnDraDelete(const kube::DraObject& obj) {
  ApplyDraEvent(dra_data_.store, &obj, nullptr);
  OnClusterEvent(DraQueueEvent(&obj, nullptr));
}

}  // namespace gpusched::scheduler
