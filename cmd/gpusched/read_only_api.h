// SPDX-License-Identifier: Apache-2.0
// An ApiClient that writes nothing, for the commands that run scheduler code without a cluster to
// change: explain (a cycle that reached Bind would be a bug, so every write fails loudly, naming
// the object) and the scheduler's check of its profiles before it connects. Stateless;
// thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/api/gang.h"
#include "src/common/status.h"
#include "src/kube/api_client.h"

namespace gpusched::cmd {

class ReadOnlyApi final : public kube::ApiClient {
 public:
  common::Status BindPod(const api::Pod& pod, std::string_view,
                         const std::vector<std::pair<std::string, std::string>>&) override {
    return common::InternalError("read-only: refusing to bind " + pod.Key());
  }
  common::Status SetPodUnschedulable(const api::Pod&, std::string_view, std::string_view) override {
    return common::Status::Ok();
  }
  common::Status CreateEvent(const kube::EventRecord&) override { return common::Status::Ok(); }
  common::Status PatchPodCondition(const api::Pod& pod, const api::Condition&) override {
    return common::InternalError("read-only: refusing to patch " + pod.Key());
  }
  common::Status DeletePod(const api::Pod& pod) override {
    return common::InternalError("read-only: refusing to delete " + pod.Key());
  }
  common::Status EvictPod(const api::Pod& pod) override {
    return common::InternalError("read-only: refusing to evict " + pod.Key());
  }
  common::Status SetNominatedNodeName(const api::Pod&, std::string_view) override {
    return common::Status::Ok();
  }
  common::Status UpdatePodGroupStatus(const api::PodGroup& group,
                                      const api::PodGroupStatus&) override {
    return common::InternalError("read-only: refusing to write the status of " + group.Key());
  }
  common::StatusOr<std::string> BindPersistentVolume(const api::PersistentVolume& pv,
                                                     bool) override {
    return common::InternalError("read-only: refusing to bind persistentvolume " + pv.name());
  }
  common::StatusOr<std::string> SetPvcSelectedNode(const api::PersistentVolumeClaim& pvc,
                                                   std::string_view) override {
    return common::InternalError("read-only: refusing to write persistentvolumeclaim " +
                                 pvc.namespace_() + "/" + pvc.name());
  }
  common::StatusOr<api::ResourceClaimPtr> UpdateResourceClaimStatus(
      const api::ResourceClaim& claim) override {
    return common::InternalError("read-only: refusing to write resourceclaim " +
                                 claim.meta.namespace_ + "/" + claim.meta.name);
  }
  common::StatusOr<api::ResourceClaimPtr> CreateResourceClaim(
      const api::ResourceClaim& claim) override {
    return common::InternalError("read-only: refusing to create resourceclaim " +
                                 claim.meta.namespace_ + "/" + claim.meta.name);
  }
  common::Status DeleteResourceClaim(const api::ResourceClaim& claim) override {
    return common::InternalError("read-only: refusing to delete resourceclaim " +
                                 claim.meta.namespace_ + "/" + claim.meta.name);
  }
  common::Status SetPodExtendedResourceClaimStatus(
      const api::Pod& pod, const api::PodExtendedResourceClaimStatus& /*status*/) override {
    return common::InternalError("read-only: refusing to write pod " + pod.Key());
  }
};

}  // namespace gpusched::cmd
