// SPDX-License-Identifier: Apache-2.0
// The scheduler's Dynamic Resource Allocation data (issue #23): the DraStore (src/cache) the
// DynamicResources plugin reads through Handle::dra(), fed by the resource.k8s.io informers
// (EventHandler::OnDra*), and the DraWriter that sends the plugin's PreBind write (the
// claim's status) through the scheduler's ApiClient. As volume_events.h for the volume plugins.
#pragma once

#include <optional>

#include "src/cache/dra_store.h"
#include "src/kube/api_client.h"
#include "src/queue/scheduling_queue.h"

namespace gpusched::events {

class ApiDraWriter final : public framework::DraWriter {
 public:
  explicit ApiDraWriter(kube::ApiClient& api) : api_(api) {}
  common::StatusOr<api::ResourceClaimPtr> UpdateResourceClaimStatus(
      const api::ResourceClaim& claim) override {
    return api_.UpdateResourceClaimStatus(claim);
  }
  common::StatusOr<api::ResourceClaimPtr> CreateResourceClaim(
      const api::ResourceClaim& claim) override {
    return api_.CreateResourceClaim(claim);
  }
  common::Status DeleteResourceClaim(const api::ResourceClaim& claim) override {
    return api_.DeleteResourceClaim(claim);
  }
  common::Status SetPodExtendedResourceClaimStatus(
      const api::Pod& pod, const api::PodExtendedResourceClaimStatus& status) override {
    return api_.SetPodExtendedResourceClaimStatus(pod, status);
  }

 private:
  kube::ApiClient& api_;
};

// The store with its writer set to `api`; null: no writer (its writes fail).
struct DraData {
  explicit DraData(kube::ApiClient* api) {
    if (api == nullptr) return;
    writer.emplace(*api);
    store.set_writer(&*writer);
  }
  std::optional<ApiDraWriter> writer;
  cache::DraStore store;
};

// Applies one DRA event to `store`: an add (old_obj null), an update, or a delete (obj null).
void ApplyDraEvent(cache::DraStore& store, const kube::DraObject* old_obj,
                   const kube::DraObject* obj);

// The queue event of a DRA add (old_obj null), update or delete (obj null): the resource kind
// (kDeviceClass, kResourceSlice, kResourceClaim), kAdd / kUpdateOther / kDelete, and the objects
// (api::DeviceClass, api::ResourceSlice, api::ResourceClaim) in old_obj/new_obj for the plugin's
// queueing hints. A DeviceTaintRule's is a ResourceSlice kUpdateOther without objects (the
// slices it matches changed).
queue::QueueEvent DraQueueEvent(const kube::DraObject* old_obj, const kube::DraObject* obj);

}  // namespace gpusched::events
