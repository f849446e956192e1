// SPDX-License-Identifier: Apache-2.0
#include "src/scheduler/volume_events.h"

#include <variant>

#include "src/scheduler/scheduler.h"

namespace gpusched::scheduler {
namespace {

template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};
template <class... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;

}  // namespace

std::string_view ApplyStorageEvent(framework::VolumeView& view, const kube::StorageObject* old_obj,
                                   const kube::StorageObject* obj) {
  const bool add = old_obj == nullptr;
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
    return {};
  }
  return std::visit(Overloaded{
                        [&](const api::PersistentVolumePtr& pv) -> std::string_view {
                          view.UpsertPv(pv);
                          return add ? "PersistentVolumeAdd" : "PersistentVolumeUpdate";
                        },
                        [&](const api::PersistentVolumeClaimPtr& pvc) -> std::string_view {
                          view.UpsertPvc(pvc);
                          return add ? "PersistentVolumeClaimAdd" : "PersistentVolumeClaimUpdate";
                        },
                        [&](const api::StorageClassPtr& sc) -> std::string_view {
                          view.UpsertStorageClass(sc);
                          return add ? "StorageClassAdd" : "StorageClassUpdate";
                        },
                        [&](const api::CSINodePtr& n) -> std::string_view {
                          view.UpsertCSINode(n);
                          return add ? "CSINodeAdd" : "CSINodeUpdate";
                        },
                        [&](const api::CSIDriverPtr& d) -> std::string_view {
                          view.UpsertCSIDriver(d);
                          return add ? "" : "CSIDriverUpdate";
                        },
                    },
                    *obj);
}

void Scheduler::OnStorageAdd(const kube::StorageObject& obj) {
  const std::string_view event = ApplyStorageEvent(volume_data_.view, nullptr, &obj);
  if (!event.empty()) queue_->MoveAllToActiveOrBackoff(event);
}

void Scheduler::OnStorageUpdate(const kube::StorageObject& old_obj,
                                const kube::StorageObject& obj) {
  const std::string_view event = ApplyStorageEvent(volume_data_.view, &old_obj, &obj);
  if (!event.empty()) queue_->MoveAllToActiveOrBackoff(event);
}

void Scheduler::OnStorageDelete(const kube::StorageObject& obj) {
  (void)ApplyStorageEvent(volume_data_.view, &obj, nullptr);
}

}  // namespace gpusched::scheduler
