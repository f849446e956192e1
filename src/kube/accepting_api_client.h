// SPDX-License-Identifier: Apache-2.0
// AcceptingApiClient: a kube::ApiClient for tests whose every write succeeds and changes nothing
// (OK; resourceVersion "1" for the volume writes; a claim written or created comes back as
// given). A test fake derives from it and overrides only the writes it records or fails, so a
// new ApiClient method is written once here, not in every fake. Not for production decorators:
// they must forward every write (api_client.h).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/kube/api_client.h"

namespace gpusched::kube {

class AcceptingApiClient : public ApiClient {
 public:
  common::Status BindPod(
      const api::Pod& /*pod*/, std::string_view /*node*/,
      const std::vector<std::pair<std::string, std::string>>& /*annotations*/) override {
    return common::Status::Ok();
  }
  common::Status SetPodUnschedulable(const api::Pod& /*pod*/, std::string_view /*reason*/,
                                     std::string_view /*message*/) override {
    return common::Status::Ok();
  }
  common::Status CreateEvent(const EventRecord& /*event*/) override { return common::Status::Ok(); }
  common::Status PatchPodCondition(const api::Pod& /*pod*/,
                                   const api::Condition& /*condition*/) override {
    return common::Status::Ok();
  }
  common::Status DeletePod(const api::Pod& /*pod*/) override { return common::Status::Ok(); }
  common::Status EvictPod(const api::Pod& /*pod*/) override { return common::Status::Ok(); }
  common::Status SetNominatedNodeName(const api::Pod& /*pod*/, std::string_view /*node*/) override {
    return common::Status::Ok();
  }
  common::Status UpdatePodGroupStatus(const api::PodGroup& /*group*/,
                                      const api::PodGroupStatus& /*status*/) override {
    return common::Status::Ok();
  }
  common::StatusOr<std::string> BindPersistentVolume(const api::PersistentVolume& /*pv*/,
                                                     bool /*bound_by_controller*/) override {
    return std::string("1");
  }
  common::StatusOr<std::string> SetPvcSelectedNode(const api::PersistentVolumeClaim& /*pvc*/,
                                                   std::string_view /*node*/) override {
    return std::string("1");
  }
  common::StatusOr<api::ResourceClaimPtr> UpdateResourceClaimStatus(
      const api::ResourceClaim& claim) override {
    return api::ResourceClaimPtr(std::make_shared<const api::ResourceClaim>(claim));
  }
  common::StatusOr<api::ResourceClaimPtr> CreateResourceClaim(
      const api::ResourceClaim& claim) override {
    return api::ResourceClaimPtr(std::make_shared<const api::ResourceClaim>(claim));
  }
  common::Status DeleteResourceClaim(const api::ResourceClaim& /*claim*/) override {
    return common::Status::Ok();
  }
  common::Status SetPodExtendedResourceClaimStatus(
      const api::Pod& /*pod*/, const api::PodExtendedResourceClaimStatus& /*status*/) override {
    return common::Status::Ok();
  }
};

}  // namespace gpusched::kube
