// SPDX-License-Identifier: Apache-2.0
#include "src/events/dra_events.h"

#include <memory>
#include <variant>

#include "src/common/overloaded.h"

namespace gpusched::events {

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

}  // namespace gpusched::events
