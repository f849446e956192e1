// SPDX-License-Identifier: Apache-2.0
// The scheduler's volume data (issue #22): the VolumeStore (src/cache) the volume plugins read
// through Handle::volumes(), fed by the storage informers (EventHandler::OnStorage*), and
// the VolumeWriter that sends VolumeBinding's PreBind writes through the scheduler's ApiClient.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "src/cache/volume_store.h"
#include "src/kube/api_client.h"
#include "src/queue/scheduling_queue.h"

namespace gpusched::events {

class ApiVolumeWriter final : public framework::VolumeWriter {
 public:
  explicit ApiVolumeWriter(kube::ApiClient& api) : api_(api) {}
  common::StatusOr<std::string> BindPersistentVolume(const api::PersistentVolume& pv,
                                                     bool bound_by_controller) override {
    return api_.BindPersistentVolume(pv, bound_by_controller);
  }
  common::StatusOr<std::string> SetSelectedNode(const api::PersistentVolumeClaim& pvc,
                                                std::string_view node) override {
    return api_.SetPvcSelectedNode(pvc, node);
  }

 private:
  kube::ApiClient& api_;
};

// The store with its writer set to `api`; null: no writer (its writes fail).
struct VolumeData {
  explicit VolumeData(kube::ApiClient* api) {
    if (api == nullptr) return;
    writer.emplace(*api);
    store.set_writer(&*writer);
  }
  std::optional<ApiVolumeWriter> writer;
  cache::VolumeStore store;
};

// Applies one storage event to `store`: an add (old_obj null), an update, or a delete (obj null).
void ApplyStorageEvent(cache::VolumeStore& store, const kube::StorageObject* old_obj,
                       const kube::StorageObject* obj);

// The queue event of a storage add (old_obj null) or update: the resource kind, kAdd or
// kUpdateOther, and the objects (api::PersistentVolume, ...) for the plugins' queueing hints.
queue::QueueEvent StorageQueueEvent(const kube::StorageObject* old_obj,
                                    const kube::StorageObject& obj);

}  // namespace gpusched::events
