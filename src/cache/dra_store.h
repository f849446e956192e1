// SPDX-License-Identifier: Apache-2.0
// DraStore: the scheduler's store of the cluster's Dynamic Resource Allocation objects, the one
// implementation of framework::DraView (src/framework/dra_view.h has the contract). Fed by the
// scheduler's informers, the simulator and `--from-cluster` through the Upsert*/Delete* calls
// (the scheduler's event handler), by hand in tests. How it keeps what the view offers:
//   - the device index is a cache of the slices and DeviceTaintRules: a change marks it stale and
//     the next read rebuilds it (once per batch of changes, e.g. an informer's list);
//   - the usage is copy-on-write: a claim change updates it in place unless a cycle still holds
//     the version it read;
//   - the claims waiting for an allocation are kept as claims change, the pods waiting for them
//     as the pod informer reports them (ObservePod).
// Thread safety: every method is thread-safe; objects are immutable and shared.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "src/api/dra.h"
#include "src/common/clock.h"
#include "src/common/mutex.h"
#include "src/common/status.h"
#include "src/framework/dra_view.h"

namespace gpusched::cache {

class DraStore final : public framework::DraView {
 public:
  DraStore() = default;
  DraStore(const DraStore&) = delete;
  DraStore& operator=(const DraStore&) = delete;

  // --- Feeding (the event handler, simulator input, tests) ---
  void UpsertDeviceClass(api::DeviceClassPtr c);
  void DeleteDeviceClass(std::string_view name);
  void UpsertSlice(api::ResourceSlicePtr s);
  void DeleteSlice(std::string_view name);
  void UpsertTaintRule(api::DeviceTaintRulePtr r);
  void DeleteTaintRule(std::string_view name);
  void UpsertClaim(api::ResourceClaimPtr c);
  void DeleteClaim(std::string_view ns, std::string_view name);
  // A pod's previous and current version (null: added / deleted). A pod with claims waits for
  // them while it has no node, is not terminal and not being deleted.
  void ObservePod(const api::Pod* before, const api::Pod* after);
  // Not owned; must outlive the store. Null: writes fail (kUnavailable).
  void set_writer(framework::DraWriter* writer);

  // Recomputes from the claims' latest versions which claim holds each device and what the held
  // devices draw on each counter: a device held by two claims, a counter drawn beyond its
  // capacity, or a usage that differs from the recomputed one is an error naming them (the
  // simulator's invariant check, tests).
  common::Status CheckInvariants() const;

  // --- framework::DraView ---
  api::DeviceClassPtr GetDeviceClass(std::string_view name) const override;
  api::ResourceClaimPtr GetClaim(std::string_view ns, std::string_view name) const override;
  api::ResourceClaimPtr InformerClaim(std::string_view ns, std::string_view name) const override;
  std::vector<api::ResourceClaimPtr> ListClaims() const override;
  std::vector<api::ResourceClaimPtr> PendingClaims() const override;
  size_t PendingCount() const override;
  std::vector<framework::WaitingClaim> WaitingClaims() const override;
  std::shared_ptr<const framework::DeviceIndex> devices() const override;
  std::shared_ptr<const framework::DeviceUsage> usage() const override;
  uint64_t class_version() const override;
  api::DeviceClassPtr ExtendedResourceClass(std::string_view resource) const override;
  api::ResourceClaimPtr ExtendedResourceClaimOf(std::string_view pod_uid) const override;
  common::Status AssumeClaim(api::ResourceClaimPtr claim) override;
  common::Status AssumeNewClaim(api::ResourceClaimPtr claim) override;
  void RestoreClaim(std::string_view ns, std::string_view name) override;
  common::StatusOr<api::ResourceClaimPtr> UpdateClaimStatus(
      const api::ResourceClaim& claim) override;
  framework::DraWriter* writer() const override;
  uint64_t generation() const override;
  uint64_t WaitForChange(uint64_t seen, std::chrono::milliseconds timeout) const override;

 private:
  struct ClaimEntry {
    api::ResourceClaimPtr informer;
    api::ResourceClaimPtr assumed;
    const api::ResourceClaimPtr& latest() const { return assumed ? assumed : informer; }
  };
  static std::string ClaimKey(std::string_view ns, std::string_view name);
  void Changed() GPUSCHED_REQUIRES(mu_);
  void ClassesChanged() GPUSCHED_REQUIRES(mu_);
  // The device index and usage are a cache of slices_, taint_rules_ and claims_: a slice or rule
  // change marks them stale, and the next read (devices(), usage()) rebuilds them once, so that a
  // list of N slices costs one rebuild, not N.
  void EnsureIndex() const GPUSCHED_REQUIRES(mu_);
  void RebuildIndex() const GPUSCHED_REQUIRES(mu_);
  // Moves the usage of `before` to `after` (either may be null).
  void Reuse(const api::ResourceClaimPtr& before, const api::ResourceClaimPtr& after) const
      GPUSCHED_REQUIRES(mu_);
  // A claim's latest version went from `before` to `after` (either may be null): the usage, the
  // pending set and the generation follow.
  void Replaced(const api::ResourceClaimPtr& before, const api::ResourceClaimPtr& after)
      GPUSCHED_REQUIRES(mu_);
  framework::DeviceUsage& MutableUsage() const GPUSCHED_REQUIRES(mu_);

  // A pod waiting for claims (ObservePod): its queue order and the claims it names.
  struct WaitingPod {
    int32_t priority = 0;
    common::TimePoint created{};
    std::string key;                        // namespace/name
    std::vector<std::string> named_claims;  // ClaimKeys of resourceClaimName references
  };

  mutable common::Mutex mu_;
  mutable std::condition_variable changed_;
  std::map<std::string, api::DeviceClassPtr, std::less<>> classes_ GPUSCHED_GUARDED_BY(mu_);
  // spec.extendedResourceName -> the class it maps to (ExtendedResourceClass), kept with classes_.
  std::map<std::string, api::DeviceClassPtr, std::less<>> extended_ GPUSCHED_GUARDED_BY(mu_);
  std::map<std::string, api::ResourceSlicePtr, std::less<>> slices_ GPUSCHED_GUARDED_BY(mu_);
  std::map<std::string, api::DeviceTaintRulePtr, std::less<>> taint_rules_ GPUSCHED_GUARDED_BY(mu_);
  std::map<std::string, ClaimEntry, std::less<>> claims_ GPUSCHED_GUARDED_BY(mu_);
  // Pod uid -> the ClaimKey of the extended resource claim it owns (ExtendedResourceClaimOf).
  std::unordered_map<std::string, std::string> extended_claims_ GPUSCHED_GUARDED_BY(mu_);
  // The claims whose latest version waits for an allocation (PendingClaims), by ClaimKey.
  std::map<std::string, api::ResourceClaimPtr, std::less<>> pending_ GPUSCHED_GUARDED_BY(mu_);
  std::unordered_map<std::string, WaitingPod> waiting_pods_ GPUSCHED_GUARDED_BY(mu_);  // by uid
  mutable std::shared_ptr<const framework::DeviceIndex> index_ GPUSCHED_GUARDED_BY(mu_) =
      std::make_shared<framework::DeviceIndex>();
  mutable std::shared_ptr<framework::DeviceUsage> usage_ GPUSCHED_GUARDED_BY(mu_) =
      std::make_shared<framework::DeviceUsage>();
  mutable bool index_stale_ GPUSCHED_GUARDED_BY(mu_) = false;
  framework::DraWriter* writer_ GPUSCHED_GUARDED_BY(mu_) = nullptr;
  uint64_t generation_ GPUSCHED_GUARDED_BY(mu_) = 0;
  uint64_t class_version_ GPUSCHED_GUARDED_BY(mu_) = 0;
  mutable uint64_t index_versions_ GPUSCHED_GUARDED_BY(mu_) = 0;
};

}  // namespace gpusched::cache
