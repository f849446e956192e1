// SPDX-License-Identifier: Apache-2.0
// VolumeStore: the scheduler's store of the cluster's storage objects with the volume assume
// cache, the one implementation of framework::VolumeView (src/framework/volume_view.h has the
// contract). Fed by the scheduler's informers, the simulator and `--from-cluster` through the
// Upsert*/Delete* calls (the scheduler's event handler), by hand in tests.
// Thread safety: every method is thread-safe; objects are immutable and shared.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "src/api/storage.h"
#include "src/common/mutex.h"
#include "src/common/status.h"
#include "src/framework/volume_view.h"

namespace gpusched::cache {

class VolumeStore final : public framework::VolumeView {
 public:
  VolumeStore() = default;
  VolumeStore(const VolumeStore&) = delete;
  VolumeStore& operator=(const VolumeStore&) = delete;

  // --- Feeding (the event handler, simulator input, tests) ---
  void UpsertPv(api::PersistentVolumePtr pv);
  void DeletePv(std::string_view name);
  void UpsertPvc(api::PersistentVolumeClaimPtr pvc);
  void DeletePvc(std::string_view ns, std::string_view name);
  void UpsertStorageClass(api::StorageClassPtr sc);
  void DeleteStorageClass(std::string_view name);
  void UpsertCSINode(api::CSINodePtr node);
  void DeleteCSINode(std::string_view name);
  void UpsertCSIDriver(api::CSIDriverPtr driver);
  void DeleteCSIDriver(std::string_view name);
  // Not owned; must outlive the store. Null: writes fail (kUnavailable).
  void set_writer(framework::VolumeWriter* writer);

  // --- framework::VolumeView ---
  api::PersistentVolumeClaimPtr GetPvc(std::string_view ns, std::string_view name) const override;
  api::PersistentVolumePtr GetPv(std::string_view name) const override;
  api::StorageClassPtr GetStorageClass(std::string_view name) const override;
  api::CSINodePtr GetCSINode(std::string_view name) const override;
  api::CSIDriverPtr GetCSIDriver(std::string_view name) const override;
  std::vector<api::PersistentVolumePtr> ListPvs(std::string_view storage_class) const override;
  std::vector<api::PersistentVolumeClaimPtr> ListPvcs() const override;
  api::PersistentVolumeClaimPtr InformerPvc(std::string_view ns,
                                            std::string_view name) const override;
  api::PersistentVolumePtr InformerPv(std::string_view name) const override;
  common::Status AssumePv(api::PersistentVolumePtr pv) override;
  common::Status AssumePvc(api::PersistentVolumeClaimPtr pvc) override;
  void RestorePv(std::string_view name) override;
  void RestorePvc(std::string_view ns, std::string_view name) override;
  common::StatusOr<std::string> BindPersistentVolume(const api::PersistentVolume& pv,
                                                     bool bound_by_controller) override;
  common::StatusOr<std::string> SetSelectedNode(const api::PersistentVolumeClaim& pvc,
                                                std::string_view node) override;
  uint64_t generation() const override;
  uint64_t WaitForChange(uint64_t seen, std::chrono::milliseconds timeout) const override;

 private:
  template <typename T>
  struct Entry {
    std::shared_ptr<const T> informer;
    std::shared_ptr<const T> assumed;
    const std::shared_ptr<const T>& latest() const { return assumed ? assumed : informer; }
  };
  static std::string PvcKey(std::string_view ns, std::string_view name);

  mutable common::Mutex mu_;
  mutable std::condition_variable changed_;
  std::map<std::string, Entry<api::PersistentVolume>, std::less<>> pvs_ GPUSCHED_GUARDED_BY(mu_);
  std::map<std::string, Entry<api::PersistentVolumeClaim>, std::less<>> pvcs_
      GPUSCHED_GUARDED_BY(mu_);
  std::map<std::string, api::StorageClassPtr, std::less<>> classes_ GPUSCHED_GUARDED_BY(mu_);
  std::map<std::string, api::CSINodePtr, std::less<>> csi_nodes_ GPUSCHED_GUARDED_BY(mu_);
  std::map<std::string, api::CSIDriverPtr, std::less<>> csi_drivers_ GPUSCHED_GUARDED_BY(mu_);
  framework::VolumeWriter* writer_ GPUSCHED_GUARDED_BY(mu_) = nullptr;
  uint64_t generation_ GPUSCHED_GUARDED_BY(mu_) = 0;
};

}  // namespace gpusched::cache
