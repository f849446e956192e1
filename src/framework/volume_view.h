// SPDX-License-Identifier: Apache-2.0
// VolumeView: the cluster's storage objects (PersistentVolumes, PersistentVolumeClaims,
// StorageClasses, CSINodes, CSIDrivers; src/api/storage.h) a plugin may read beyond the
// snapshot, offered by the Handle (Handle::volumes()), with the assume cache the VolumeBinding
// plugin keeps its chosen bindings in between Reserve and PreBind (upstream's AssumeCache), and
// the two API writes its PreBind makes.
//
// Assume cache (as upstream's): Assume*(obj) records a newer version of a PV or PVC that the
// scheduler is about to write; reads return it instead of the informer's until Restore*() drops
// it, or the informer delivers a version at least as new (by resourceVersion) or deletes the
// object. Informer* reads ignore assumed versions (PreBind's wait reads what the API server said).
//
// This header holds the contract only; the store that implements it, and how it is fed, is
// cache::VolumeStore (src/cache/volume_store.h). The API writes go to the VolumeWriter its owner
// sets (the scheduler: kube::ApiClient; the simulator: its SimCluster); without one they fail.
//
// Thread safety: every method is thread-safe; objects are immutable and shared.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "src/api/storage.h"
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

// The interface the volume plugins read and write the storage objects through; see the top of
// this file.
class VolumeView {
 public:
  virtual ~VolumeView() = default;

  // --- Reads (null when unknown) ---
  virtual api::PersistentVolumeClaimPtr GetPvc(std::string_view ns,
                                               std::string_view name) const = 0;
  virtual api::PersistentVolumePtr GetPv(std::string_view name) const = 0;
  virtual api::StorageClassPtr GetStorageClass(std::string_view name) const = 0;
  virtual api::CSINodePtr GetCSINode(std::string_view name) const = 0;
  virtual api::CSIDriverPtr GetCSIDriver(std::string_view name) const = 0;
  // The PVs whose class is `storage_class` (assumed versions where assumed), by name.
  virtual std::vector<api::PersistentVolumePtr> ListPvs(std::string_view storage_class) const = 0;
  // Every PVC (assumed versions where assumed), for VolumeRestrictions' ReadWriteOncePod check.
  virtual std::vector<api::PersistentVolumeClaimPtr> ListPvcs() const = 0;
  // The informer's versions, ignoring assumed ones.
  virtual api::PersistentVolumeClaimPtr InformerPvc(std::string_view ns,
                                                    std::string_view name) const = 0;
  virtual api::PersistentVolumePtr InformerPv(std::string_view name) const = 0;

  // --- Assume cache ---
  // Errors: NotFound when the informer has no such object; FailedPrecondition when `obj` is
  // older than the version the view holds.
  virtual common::Status AssumePv(api::PersistentVolumePtr pv) = 0;
  virtual common::Status AssumePvc(api::PersistentVolumeClaimPtr pvc) = 0;
  virtual void RestorePv(std::string_view name) = 0;
  virtual void RestorePvc(std::string_view ns, std::string_view name) = 0;

  // --- API writes (through the writer) ---
  virtual common::StatusOr<std::string> BindPersistentVolume(const api::PersistentVolume& pv,
                                                             bool bound_by_controller) = 0;
  virtual common::StatusOr<std::string> SetSelectedNode(const api::PersistentVolumeClaim& pvc,
                                                        std::string_view node) = 0;

  // A counter bumped on every change.
  virtual uint64_t generation() const = 0;
  // Blocks until generation() differs from `seen` or `timeout` passes (real time); returns the
  // generation then. For PreBind's wait on the PV controller.
  virtual uint64_t WaitForChange(uint64_t seen, std::chrono::milliseconds timeout) const = 0;
};

}  // namespace gpusched::framework
