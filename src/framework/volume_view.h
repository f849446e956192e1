// SPDX-License-Identifier: Apache-2.0
// VolumeView: the cluster's storage objects (PersistentVolumes, PersistentVolumeClaims,
// StorageClasses, CSINodes, CSIDrivers; src/api/storage.h) a plugin may read beyond the
// snapshot, offered by the Handle (Handle::volumes()), with the assume cache the VolumeBinding
// plugin keeps its chosen bindings in between Reserve and PreBind (upstream's AssumeCache), and
// the two API writes its PreBind makes.
//
// One concrete class: the scheduler's informers (and the simulator's input) feed it through the
// Upsert*/Delete* calls; unit tests fill it by hand. The API writes go to a VolumeWriter the owner
// sets (the scheduler: kube::ApiClient; the simulator: its SimCluster); without one they fail.
//
// Assume cache (as upstream's): Assume*(obj) records a newer version of a PV or PVC that the
// scheduler is about to write; reads return it instead of the informer's until Restore*() drops
// it, or the informer delivers a version at least as new (by resourceVersion) or deletes the
// object. Informer* reads ignore assumed versions (PreBind's wait reads what the API server said).
//
// Thread safety: every method is thread-safe; objects are immutable and shared.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/api/storage.h"
#include "src/common/mutex.h"
#include "src/common/status.h"

namespace gpusched::framework {

// The API writes VolumeBinding's PreBind makes (upstream's binder updates the objects).
class VolumeWriter {
 public:
  virtual ~VolumeWriter() = default;
  // Writes spec.claimRef of `pv` (and its pv.kubernetes.io/bound-by-controller annotation when
  // `bound_by_controller`) to the API server, guarded by pv.meta.resource_version. Returns the
  // PV's new resourceVersion.
  virtual common::StatusOr<std::string> BindPersistentVolume(const api::PersistentVolume& pv,
                                                             bool bound_by_controller) = 0;
  // Sets the volume.kubernetes.io/selected-node annotation of the claim to `node`, guarded by
  // pvc.meta.resource_version. Returns the claim's new resourceVersion.
  virtual common::StatusOr<std::string> SetSelectedNode(const api::PersistentVolumeClaim& pvc,
                                                        std::string_view node) = 0;
};

class VolumeView {
 public:
  VolumeView() = default;
  VolumeView(const VolumeView&) = delete;
  VolumeView& operator=(const VolumeView&) = delete;

  // --- Feeding (informers, simulator input, tests) ---
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
  // Not owned; must outlive the view. Null: writes fail (kUnavailable).
  void set_writer(VolumeWriter* writer);

  // --- Reads (null when unknown) ---
  api::PersistentVolumeClaimPtr GetPvc(std::string_view ns, std::string_view name) const;
  api::PersistentVolumePtr GetPv(std::string_view name) const;
  api::StorageClassPtr GetStorageClass(std::string_view name) const;
  api::CSINodePtr GetCSINode(std::string_view name) const;
  api::CSIDriverPtr GetCSIDriver(std::string_view name) const;
  // The PVs whose class is `storage_class` (assumed versions where assumed), by name.
  std::vector<api::PersistentVolumePtr> ListPvs(std::string_view storage_class) const;
  // Every PVC (assumed versions where assumed), for VolumeRestrictions' ReadWriteOncePod check.
  std::vector<api::PersistentVolumeClaimPtr> ListPvcs() const;
  // The informer's versions, ignoring assumed ones.
  api::PersistentVolumeClaimPtr InformerPvc(std::string_view ns, std::string_view name) const;
  api::PersistentVolumePtr InformerPv(std::string_view name) const;

  // --- Assume cache ---
  // Errors: NotFound when the informer has no such object; FailedPrecondition when `obj` is
  // older than the version the view holds.
  common::Status AssumePv(api::PersistentVolumePtr pv);
  common::Status AssumePvc(api::PersistentVolumeClaimPtr pvc);
  void RestorePv(std::string_view name);
  void RestorePvc(std::string_view ns, std::string_view name);

  // --- API writes (through the writer) ---
  common::StatusOr<std::string> BindPersistentVolume(const api::PersistentVolume& pv,
                                                     bool bound_by_controller);
  common::StatusOr<std::string> SetSelectedNode(const api::PersistentVolumeClaim& pvc,
                                                std::string_view node);

  // A counter bumped on every change.
  uint64_t generation() const;
  // Blocks until generation() differs from `seen` or `timeout` passes (real time); returns the
  // generation then. For PreBind's wait on the PV controller.
  uint64_t WaitForChange(uint64_t seen, std::chrono::milliseconds timeout) const;

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
  VolumeWriter* writer_ GPUSCHED_GUARDED_BY(mu_) = nullptr;
  uint64_t generation_ GPUSCHED_GUARDED_BY(mu_) = 0;
};

// resourceVersion order: numeric when both parse as integers (the API server's are), else
// lexicographic. Used by the assume cache.
int CompareResourceVersions(std::string_view a, std::string_view b);

}  // namespace gpusched::framework
