// SPDX-License-Identifier: Apache-2.0
#include "src/events/volume_events.h"

#include <memory>
#include <variant>

#include "src/common/overloaded.h"

namespace gpusched::events {

using common::Overloaded;

void ApplyStorageEvent(cache::VolumeStore& store, const kube::StorageObject* old_obj,
                       const kube::StorageObject* obj) {
  if (obj == nullptr) {  // delete
    std::visit(Overloaded{
                   [&](const api::PersistentVolumePtr& pv) { store.DeletePv(pv->name()); },
                   [&](const api::PersistentVolumeClaimPtr& pvc) {
                     store.DeletePvc(pvc->namespace_(), pvc->name());
                   },
                   [&](const api::StorageClassPtr& sc) { store.DeleteStorageClass(sc->name); },
                   [&](const api::CSINodePtr& n) { store.DeleteCSINode(n->name); },
                   [&](const api::CSIDriverPtr& d) { store.DeleteCSIDriver(d->name); },
               },
               *old_obj);
    return;
  }
  std::visit(Overloaded{
                 [&](const api::PersistentVolumePtr& pv) { store.UpsertPv(pv); },
                 [&](const api::PersistentVolumeClaimPtr& pvc) { store.UpsertPvc(pvc); },
                 [&](const api::StorageClassPtr& sc) { store.UpsertStorageClass(sc); },
                 [&](const api::CSINodePtr& n) { store.UpsertCSINode(n); },
                 [&](const api::CSIDriverPtr& d) { store.UpsertCSIDriver(d); },
             },
             *obj);
}

queue::QueueEvent StorageQueueEvent(const kube::StorageObject* old_obj,
                                    const kube::StorageObject& obj) {
  using framework::EventResource;
  queue::QueueEvent e;
  e.event.resource = std::visit(
      Overloaded{
          [](const api::PersistentVolumePtr&) { return EventResource::kPersistentVolume; },
          [](const api::PersistentVolumeClaimPtr&) {
            return EventResource::kPersistentVolumeClaim;
          },
          [](const api::StorageClassPtr&) { return EventResource::kStorageClass; },
          [](const api::CSINodePtr&) { return EventResource::kCSINode; },
          [](const api::CSIDriverPtr&) { return EventResource::kCSIDriver; },
      },
      obj);
  e.event.actions = old_obj == nullptr ? framework::kAdd : framework::kUpdateOther;
  auto as_void = [](const auto& ptr) { return std::shared_ptr<const void>(ptr); };
  e.new_obj = std::visit(as_void, obj);
  if (old_obj != nullptr) e.old_obj = std::visit(as_void, *old_obj);
  return e;
}

}  // namespace gpusched::events
