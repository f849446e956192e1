// SPDX-License-Identifier: Apache-2.0
// The cluster's storage objects as the volume plugins read them (issue #22): PersistentVolume,
// PersistentVolumeClaim (core/v1), StorageClass, CSINode and CSIDriver (storage.k8s.io/v1),
// decoded straight from JSON into these compact structs (decode_storage.h). Immutable once
// decoded and shared as shared_ptr<const T>, like pods and nodes.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "src/api/labels.h"
#include "src/api/types.h"
#include "src/api/volume.h"

namespace gpusched::api {

// Annotations the binder reads and writes (k8s.io/component-helpers/storage/volume).
inline constexpr std::string_view kAnnSelectedNode = "volume.kubernetes.io/selected-node";
inline constexpr std::string_view kAnnBindCompleted = "pv.kubernetes.io/bind-completed";
inline constexpr std::string_view kAnnBoundByController = "pv.kubernetes.io/bound-by-controller";
inline constexpr std::string_view kAnnBetaStorageClass = "volume.beta.kubernetes.io/storage-class";
inline constexpr std::string_view kAnnMigratedPlugins =
    "storage.alpha.kubernetes.io/migrated-plugins";

// v1.PersistentVolumeAccessMode as a bit set.
enum AccessMode : uint8_t {
  kReadWriteOnce = 1U << 0,
  kReadOnlyMany = 1U << 1,
  kReadWriteMany = 1U << 2,
  kReadWriteOncePod = 1U << 3,
};

enum class VolumeMode : uint8_t { kFilesystem, kBlock };

struct ClaimRef {
  std::string namespace_;
  std::string name;
  std::string uid;
  bool operator==(const ClaimRef&) const = default;
};

struct PersistentVolume {
  enum class Phase : uint8_t { kPending, kAvailable, kBound, kReleased, kFailed };
  ObjectMeta meta;
  // The class: the beta annotation when present, else spec.storageClassName.
  std::string storage_class;
  int64_t capacity_bytes = 0;  // spec.capacity.storage, rounded up
  uint8_t access_modes = 0;    // AccessMode bits
  VolumeMode volume_mode = VolumeMode::kFilesystem;
  std::string volume_attributes_class;
  // spec.nodeAffinity.required; nullopt when there is none.
  std::optional<NodeSelector> node_affinity;
  std::optional<ClaimRef> claim_ref;
  Phase phase = Phase::kPending;
  // The volume source, for NodeVolumeLimits: CSI driver name and volume handle, or an in-tree
  // source that CSI migration translates (source + disk_id).
  std::string csi_driver;
  std::string csi_volume_handle;
  InlineSource in_tree_source = InlineSource::kNone;
  std::string in_tree_id;

  const std::string& name() const { return meta.name; }
};

struct PersistentVolumeClaim {
  enum class Phase : uint8_t { kPending, kBound, kLost };
  ObjectMeta meta;
  // The class: the beta annotation when present, else spec.storageClassName ("" when unset).
  std::string storage_class;
  int64_t request_bytes = 0;  // spec.resources.requests.storage, rounded up
  uint8_t access_modes = 0;   // AccessMode bits
  VolumeMode volume_mode = VolumeMode::kFilesystem;
  std::string volume_attributes_class;
  std::optional<LabelSelector> selector;  // spec.selector; nullopt: any PV
  std::string volume_name;                // spec.volumeName
  Phase phase = Phase::kPending;
  // Annotations the binder reads.
  std::optional<std::string> selected_node;  // volume.kubernetes.io/selected-node
  bool bind_completed = false;               // pv.kubernetes.io/bind-completed present

  const std::string& name() const { return meta.name; }
  const std::string& namespace_() const { return meta.namespace_; }
  // Bound as far as the scheduler is concerned (upstream's isPVCFullyBound).
  bool FullyBound() const { return !volume_name.empty() && bind_completed; }
};

// v1.TopologySelectorTerm: every requirement must hold (key In values).
struct TopologyRequirement {
  Atom key;
  std::vector<Atom> values;
};
struct TopologySelectorTerm {
  std::vector<TopologyRequirement> requirements;
};

struct StorageClass {
  enum class BindingMode : uint8_t { kImmediate, kWaitForFirstConsumer };
  ObjectMeta meta;   // name, uid, resourceVersion (labels and annotations are not kept)
  std::string name;  // meta.name
  std::string provisioner;
  BindingMode binding_mode = BindingMode::kImmediate;
  // allowedTopologies; empty: no restriction.
  std::vector<TopologySelectorTerm> allowed_topologies;
};

struct CSINodeDriver {
  std::string name;
  std::string node_id;
  std::vector<std::string> topology_keys;
  std::optional<int32_t> allocatable_count;  // allocatable.count
};

struct CSINode {
  ObjectMeta meta;   // name, uid, resourceVersion (labels and annotations are not kept)
  std::string name;  // meta.name
  std::vector<CSINodeDriver> drivers;
  // storage.alpha.kubernetes.io/migrated-plugins: in-tree plugin names ("kubernetes.io/gce-pd").
  std::vector<std::string> migrated_plugins;
  const CSINodeDriver* Driver(std::string_view driver) const {
    for (const CSINodeDriver& d : drivers) {
      if (d.name == driver) return &d;
    }
    return nullptr;
  }
};

struct CSIDriver {
  ObjectMeta meta;   // name, uid, resourceVersion (labels and annotations are not kept)
  std::string name;  // meta.name
  bool attach_required = true;
  bool storage_capacity = false;
};

using PersistentVolumePtr = std::shared_ptr<const PersistentVolume>;
using PersistentVolumeClaimPtr = std::shared_ptr<const PersistentVolumeClaim>;
using StorageClassPtr = std::shared_ptr<const StorageClass>;
using CSINodePtr = std::shared_ptr<const CSINode>;
using CSIDriverPtr = std::shared_ptr<const CSIDriver>;

// Whether `pv` is bound (or prebound) to `pvc`: claimRef names it, and its uid if set
// (component-helpers IsVolumeBoundToClaim).
bool IsVolumeBoundToClaim(const PersistentVolume& pv, const PersistentVolumeClaim& pvc);
// PV node affinity against a node's labels (CheckNodeAffinity: a node known by its labels only).
bool PvNodeAffinityMatches(const PersistentVolume& pv, const Labels& node_labels);
// Whether the terms allow the labels (MatchTopologySelectorTerms: empty list matches all).
bool TopologyTermsMatch(const std::vector<TopologySelectorTerm>& terms, const Labels& labels);

}  // namespace gpusched::api
