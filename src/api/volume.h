// SPDX-License-Identifier: Apache-2.0
// The volume model the volume plugins read (issue #22): a pod's volumes that matter to scheduling.
// Kept out of types.h (Pod holds a shared_ptr<const PodVolumes>) so that this model can grow
// without recompiling every user of Pod.
#pragma once

#include <string>
#include <vector>

namespace gpusched::api {

// One entry of a pod's spec.volumes that scheduling cares about: a PersistentVolumeClaim (direct
// or through an ephemeral volume, whose claim is named <pod>-<volume>), or an inline source that
// VolumeRestrictions or NodeVolumeLimits count. Others (emptyDir, configMap, secret, ...) are not
// kept.
struct PodVolume {
  std::string name;
  std::string claim_name;  // the PVC's name (ephemeral: "<pod name>-<volume name>"); "" if none
  bool ephemeral = false;
  bool read_only = false;
  bool operator==(const PodVolume&) const = default;
};

struct PodVolumes {
  std::vector<PodVolume> volumes;
  bool operator==(const PodVolumes&) const = default;
};

}  // namespace gpusched::api
