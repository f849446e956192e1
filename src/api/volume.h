// SPDX-License-Identifier: Apache-2.0
// The volume model the volume plugins read (issue #22): a pod's volumes that matter to scheduling.
// Kept out of types.h (Pod holds a shared_ptr<const PodVolumes>) so that this model can grow
// without recompiling every user of Pod. The cluster's storage objects (PersistentVolume,
// PersistentVolumeClaim, StorageClass, CSINode, CSIDriver) are in src/api/storage.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gpusched::api {

// The inline volume sources that VolumeRestrictions (conflicting disks) and NodeVolumeLimits
// (attach counts) look at. kNone: the volume is a claim (or something scheduling ignores).
enum class InlineSource : uint8_t {
  kNone,
  kGcePersistentDisk,     // disk_id = pdName
  kAwsElasticBlockStore,  // disk_id = volumeID
  kRbd,                   // disk_id = image, rbd_pool, monitors
  kIscsi,                 // disk_id = iqn, target_portal, iscsi_lun
  kAzureDisk,             // disk_id = diskName (counted by NodeVolumeLimits when migrated)
  kCinder,                // disk_id = volumeID (counted by NodeVolumeLimits when migrated)
  kCsi,                   // csi_driver (inline CSI ephemeral volume)
};

// One entry of a pod's spec.volumes that scheduling cares about: a PersistentVolumeClaim (direct
// or through an ephemeral volume, whose claim is named <pod>-<volume>), or an inline source that
// VolumeRestrictions or NodeVolumeLimits count. Others (emptyDir, configMap, secret, ...) are not
// kept.
struct PodVolume {
  std::string name;
  std::string claim_name;  // the PVC's name (ephemeral: "<pod name>-<volume name>"); "" if none
  bool ephemeral = false;
  bool read_only = false;
  // Inline sources (claim_name == "").
  InlineSource source = InlineSource::kNone;
  std::string disk_id;
  std::string rbd_pool;               // "rbd" when unset
  std::vector<std::string> monitors;  // RBD monitors
  std::string target_portal;          // iSCSI
  int32_t iscsi_lun = 0;              // iSCSI
  std::string csi_driver;             // kCsi
  bool operator==(const PodVolume&) const = default;
  bool IsClaim() const { return !claim_name.empty(); }
};

struct PodVolumes {
  std::vector<PodVolume> volumes;
  // True when some volume is a claim (persistentVolumeClaim or ephemeral).
  bool has_claims = false;
  // True when an emptyDir or hostPath volume keeps data on the node (not in `volumes`): such a
  // pod loses it when it moves, so consolidation never moves it (the descheduler's rule).
  bool local_storage = false;
  bool operator==(const PodVolumes&) const = default;
};

}  // namespace gpusched::api
