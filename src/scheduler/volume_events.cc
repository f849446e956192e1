// SPDX-License-Identifier: Apache-2.0
#include "src/scheduler/volume_events.h"

#include <memory>
#include <variant>

#include "src/common/overloaded.h"
#include "src/scheduler/scheduler.h"

namespace gpusched::scheduler {

using common::Overloaded;

void ApplyStorageEvent(framework::VolumeView& view, const kube::StorageObject* old_obj,
                       const kube::StorageObject* obj) {
  if (obj == nullptr) {  // delete
    std::visit(Overloaded{
                   [&](const api::PersistentVolumePtr& pv) { view.DeletePv(pv->name()); },
                   [&](const api::PersistentVolumeClaimPtr& pvc) {
                     view.DeletePvc(pvc->namespace_(), pvc->name());
                   },
                   [&](const api::StorageClassPtr& sc) { view.DeleteStorageClass(sc->name); },
                   [&](const api::CSINodePtr& n) { view.DeleteCSINode(n->name); },
                   [&](const api::CSIDriverPtr& d) { view.DeleteCSIDriver(d->name); },
               },
               *old_obj);
    return;
  }
  std::visit(Overloaded{
                 [&](const api::PersistentVolumePtr& pv) { view.UpsertPv(pv); },
                 [&](const api::PersistentVolumeClaimPtr& pvc) { view.UpsertPvc(pvc); },
                 [&](const api::StorageClassPtr& sc) { view.UpsertStorageClass(sc); },
                 [&](const api::CSINodePtr& n) { view.UpsertCSINode(n); },
                 [&](const api::CSIDriverPtr& d) { view.UpsertCSIDriver(d); },
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

void Scheduler::OnStorageAdd(const kube::StorageObject& obj) {
  ApplyStorageEvent(volume_data_.view, nullptr, &obj);
  OnClusterEvent(StorageQueueEvent(nullptr, obj));
}

void Scheduler::OnStorageUpdate(const kube::StorageObject& old_obj,
                                const kube::StorageObject& obj) {
  ApplyStorageEvent(volume_data_.view, &old_obj, &obj);
  OnClusterEvent(StorageQueueEvent(&old_obj, obj));
}

void Scheduler::OnStorageDelete(const kube::StorageObject& obj) {
  ApplyStorageEvent(volume_data_.view, &obj, nullptr);
}

}  // namespace gpusched::scheduler
