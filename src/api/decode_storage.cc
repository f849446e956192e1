// SPDX-License-Identifier: Apache-2.0
// JSON -> PersistentVolume, PersistentVolumeClaim, StorageClass, CSINode, CSIDriver: the fields
// the volume plugins read. Every error is recorded in the ObjectReader, in document order; the
// entry points return the first.
#include "src/api/decode_storage.h"

#include <algorithm>
#include <limits>
#include <string>
#include <utility>

#include "src/api/decode_internal.h"
#include "src/common/strings.h"

namespace gpusched::api {
namespace decode_internal {
namespace {

namespace json = boost::json;

constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();

// The class: the beta annotation wins over spec.storageClassName (GetPersistentVolume(Claim)Class).
std::string ClassOf(const ObjectMeta& meta, std::string_view spec_class) {
  if (const std::string* beta = meta.Annotation(kAnnBetaStorageClass)) return *beta;
  return std::string(spec_class);
}

uint8_t DecodeAccessModes(ObjectReader& r, const json::object& spec, const FieldPath& sp) {
  uint8_t out = 0;
  const json::array* a = r.Array(spec, "accessModes", sp);
  if (a == nullptr) return out;
  const FieldPath ap = sp.Key("accessModes");
  for (size_t i = 0; i < a->size(); ++i) {
    const FieldPath ip = ap.At(i);
    const std::optional<std::string_view> m = r.AsString((*a)[i], ip);
    if (!m) continue;
    if (*m == "ReadWriteOnce") {
      out |= kReadWriteOnce;
    } else if (*m == "ReadOnlyMany") {
      out |= kReadOnlyMany;
    } else if (*m == "ReadWriteMany") {
      out |= kReadWriteMany;
    } else if (*m == "ReadWriteOncePod") {
      out |= kReadWriteOncePod;
    } else {
      r.InvalidValue(ip, *m, "ReadWriteOnce, ReadOnlyMany, ReadWriteMany or ReadWriteOncePod");
    }
  }
  return out;
}

VolumeMode DecodeVolumeMode(ObjectReader& r, const json::object& spec, const FieldPath& sp) {
  const std::string_view m = r.StringOr(spec, "volumeMode", sp);
  if (m.empty() || m == "Filesystem") return VolumeMode::kFilesystem;
  if (m == "Block") return VolumeMode::kBlock;
  r.InvalidValue(sp.Key("volumeMode"), m, "Filesystem or Block");
  return VolumeMode::kFilesystem;
}

// The `storage` entry of a resource map member (`capacity`, `requests`), in bytes rounded up.
int64_t DecodeStorageBytes(ObjectReader& r, const json::object& o, std::string_view key,
                           const FieldPath& p) {
  const json::object* m = r.Object(o, key, p);
  if (m == nullptr) return 0;
  const FieldPath mp = p.Key(key);
  const std::optional<Quantity> q = r.QuantityOf(*m, "storage", mp);
  if (!q) return 0;
  if (q->MilliValue() < 0) {
    r.Error(mp.Key("storage"), "must be non-negative");
    return 0;
  }
  return q->Value();
}

// The in-tree or CSI source of a PV, for NodeVolumeLimits and CSI migration.
void DecodePvSource(ObjectReader& r, const json::object& spec, const FieldPath& sp,
                    PersistentVolume& pv) {
  if (const json::object* csi = r.Object(spec, "csi", sp)) {
    const FieldPath cp = sp.Key("csi");
    pv.csi_driver = r.RequiredString(*csi, "driver", cp);
    pv.csi_volume_handle = r.RequiredString(*csi, "volumeHandle", cp);
    return;
  }
  struct InTree {
    std::string_view field;
    std::string_view id;
    InlineSource source;
  };
  static constexpr InTree kInTree[] = {
      {"gcePersistentDisk", "pdName", InlineSource::kGcePersistentDisk},
      {"awsElasticBlockStore", "volumeID", InlineSource::kAwsElasticBlockStore},
      {"azureDisk", "diskName", InlineSource::kAzureDisk},
      {"cinder", "volumeID", InlineSource::kCinder},
  };
  for (const InTree& t : kInTree) {
    if (const json::object* o = r.Object(spec, t.field, sp)) {
      pv.in_tree_source = t.source;
      pv.in_tree_id = r.RequiredString(*o, t.id, sp.Key(t.field));
      return;
    }
  }
}

std::optional<NodeSelector> DecodePvNodeAffinity(ObjectReader& r, const json::object& spec,
                                                 const FieldPath& sp) {
  const json::object* na = r.Object(spec, "nodeAffinity", sp);
  if (na == nullptr) return std::nullopt;
  const FieldPath np = sp.Key("nodeAffinity");
  const json::object* req = r.Object(*na, "required", np);
  if (req == nullptr) return std::nullopt;
  NodeSelector out;
  out.terms = r.MapObjects<NodeSelectorTerm>(
      *req, "nodeSelectorTerms", np.Key("required"),
      [&](const json::object& t, const FieldPath& ip) { return DecodeNodeSelectorTerm(r, t, ip); });
  return out;
}

PersistentVolume::Phase DecodePvPhase(ObjectReader& r, const json::object& root,
                                      const FieldPath& rp) {
  using Phase = PersistentVolume::Phase;
  const json::object* status = r.Object(root, "status", rp);
  if (status == nullptr) return Phase::kPending;
  const FieldPath tp = rp.Key("status");
  const std::string_view phase = r.StringOr(*status, "phase", tp);
  if (phase.empty() || phase == "Pending") return Phase::kPending;
  if (phase == "Available") return Phase::kAvailable;
  if (phase == "Bound") return Phase::kBound;
  if (phase == "Released") return Phase::kReleased;
  if (phase == "Failed") return Phase::kFailed;
  r.InvalidValue(tp.Key("phase"), phase, "Pending, Available, Bound, Released or Failed");
  return Phase::kPending;
}

PersistentVolumeClaim::Phase DecodePvcPhase(ObjectReader& r, const json::object& root,
                                            const FieldPath& rp) {
  using Phase = PersistentVolumeClaim::Phase;
  const json::object* status = r.Object(root, "status", rp);
  if (status == nullptr) return Phase::kPending;
  const FieldPath tp = rp.Key("status");
  const std::string_view phase = r.StringOr(*status, "phase", tp);
  if (phase.empty() || phase == "Pending") return Phase::kPending;
  if (phase == "Bound") return Phase::kBound;
  if (phase == "Lost") return Phase::kLost;
  r.InvalidValue(tp.Key("phase"), phase, "Pending, Bound or Lost");
  return Phase::kPending;
}

TopologySelectorTerm DecodeTopologyTerm(ObjectReader& r, const json::object& t,
                                        const FieldPath& p) {
  TopologySelectorTerm out;
  out.requirements = r.MapObjects<TopologyRequirement>(
      t, "matchLabelExpressions", p, [&](const json::object& e, const FieldPath& ep) {
        TopologyRequirement req;
        req.key = common::Intern(r.RequiredString(e, "key", ep));
        for (const std::string& v : DecodeStringList(r, e, "values", ep)) {
          req.values.push_back(common::Intern(v));
        }
        return req;
      });
  return out;
}

}  // namespace

PersistentVolume DecodePvObject(ObjectReader& r, const json::object& root) {
  PersistentVolume pv;
  const FieldPath rp;
  CheckKind(r, root, "PersistentVolume");
  pv.meta = DecodeMeta(r, root);
  std::string_view spec_class;
  if (const json::object* spec = r.Object(root, "spec", rp)) {
    const FieldPath sp = rp.Key("spec");
    spec_class = r.StringOr(*spec, "storageClassName", sp);
    pv.capacity_bytes = DecodeStorageBytes(r, *spec, "capacity", sp);
    pv.access_modes = DecodeAccessModes(r, *spec, sp);
    pv.volume_mode = DecodeVolumeMode(r, *spec, sp);
    pv.volume_attributes_class = r.StringOr(*spec, "volumeAttributesClassName", sp);
    pv.node_affinity = DecodePvNodeAffinity(r, *spec, sp);
    if (const json::object* ref = r.Object(*spec, "claimRef", sp)) {
      const FieldPath cp = sp.Key("claimRef");
      ClaimRef c;
      c.namespace_ = r.StringOr(*ref, "namespace", cp);
      c.name = r.StringOr(*ref, "name", cp);
      c.uid = r.StringOr(*ref, "uid", cp);
      pv.claim_ref = std::move(c);
    }
    DecodePvSource(r, *spec, sp, pv);
  }
  pv.storage_class = ClassOf(pv.meta, spec_class);
  pv.phase = DecodePvPhase(r, root, rp);
  return pv;
}

PersistentVolumeClaim DecodePvcObject(ObjectReader& r, const json::object& root) {
  PersistentVolumeClaim pvc;
  const FieldPath rp;
  CheckKind(r, root, "PersistentVolumeClaim");
  pvc.meta = DecodeMeta(r, root);
  if (pvc.meta.namespace_.empty()) pvc.meta.namespace_ = "default";
  std::string_view spec_class;
  if (const json::object* spec = r.Object(root, "spec", rp)) {
    const FieldPath sp = rp.Key("spec");
    spec_class = r.StringOr(*spec, "storageClassName", sp);
    pvc.access_modes = DecodeAccessModes(r, *spec, sp);
    pvc.volume_mode = DecodeVolumeMode(r, *spec, sp);
    pvc.volume_attributes_class = r.StringOr(*spec, "volumeAttributesClassName", sp);
    pvc.volume_name = r.StringOr(*spec, "volumeName", sp);
    if (const json::object* res = r.Object(*spec, "resources", sp)) {
      pvc.request_bytes = DecodeStorageBytes(r, *res, "requests", sp.Key("resources"));
    }
    if (const json::object* sel = r.Object(*spec, "selector", sp)) {
      pvc.selector = DecodeLabelSelectorObject(r, *sel, sp.Key("selector"));
    }
  }
  pvc.storage_class = ClassOf(pvc.meta, spec_class);
  if (const std::string* node = pvc.meta.Annotation(kAnnSelectedNode)) pvc.selected_node = *node;
  pvc.bind_completed = pvc.meta.Annotation(kAnnBindCompleted) != nullptr;
  pvc.phase = DecodePvcPhase(r, root, rp);
  return pvc;
}

StorageClass DecodeStorageClassObject(ObjectReader& r, const json::object& root) {
  StorageClass sc;
  const FieldPath rp;
  CheckKind(r, root, "StorageClass");
  sc.meta = DecodeMeta(r, root);
  sc.meta.labels = {};
  sc.meta.annotations.clear();
  sc.name = sc.meta.name;
  sc.provisioner = r.StringOr(root, "provisioner", rp);
  const std::string_view mode = r.StringOr(root, "volumeBindingMode", rp);
  if (mode == "WaitForFirstConsumer") {
    sc.binding_mode = StorageClass::BindingMode::kWaitForFirstConsumer;
  } else if (!mode.empty() && mode != "Immediate") {
    r.InvalidValue(rp.Key("volumeBindingMode"), mode, "Immediate or WaitForFirstConsumer");
  }
  sc.allowed_topologies = r.MapObjects<TopologySelectorTerm>(
      root, "allowedTopologies", rp,
      [&](const json::object& t, const FieldPath& ip) { return DecodeTopologyTerm(r, t, ip); });
  return sc;
}

CSINode DecodeCSINodeObject(ObjectReader& r, const json::object& root) {
  CSINode node;
  const FieldPath rp;
  CheckKind(r, root, "CSINode");
  ObjectMeta meta = DecodeMeta(r, root);
  node.name = meta.name;
  if (const std::string* migrated = meta.Annotation(kAnnMigratedPlugins)) {
    for (std::string_view name : common::Split(*migrated, ',')) {
      name = common::Trim(name);
      if (!name.empty()) node.migrated_plugins.emplace_back(name);
    }
    std::sort(node.migrated_plugins.begin(), node.migrated_plugins.end());
  }
  meta.labels = {};
  meta.annotations.clear();
  node.meta = std::move(meta);
  if (const json::object* spec = r.Object(root, "spec", rp)) {
    const FieldPath sp = rp.Key("spec");
    node.drivers = r.MapObjects<CSINodeDriver>(
        *spec, "drivers", sp, [&](const json::object& d, const FieldPath& dp) {
          CSINodeDriver driver;
          driver.name = r.RequiredString(d, "name", dp);
          driver.node_id = r.StringOr(d, "nodeID", dp);
          driver.topology_keys = DecodeStringList(r, d, "topologyKeys", dp);
          if (const json::object* alloc = r.Object(d, "allocatable", dp)) {
            if (std::optional<int64_t> count =
                    r.Int(*alloc, "count", dp.Key("allocatable"), 0, kInt32Max)) {
              driver.allocatable_count = static_cast<int32_t>(*count);
            }
          }
          return driver;
        });
  }
  return node;
}

CSIDriver DecodeCSIDriverObject(ObjectReader& r, const json::object& root) {
  CSIDriver driver;
  const FieldPath rp;
  CheckKind(r, root, "CSIDriver");
  driver.meta = DecodeMeta(r, root);
  driver.meta.labels = {};
  driver.meta.annotations.clear();
  driver.name = driver.meta.name;
  if (const json::object* spec = r.Object(root, "spec", rp)) {
    const FieldPath sp = rp.Key("spec");
    driver.attach_required = r.Bool(*spec, "attachRequired", sp).value_or(true);
    driver.storage_capacity = r.Bool(*spec, "storageCapacity", sp).value_or(false);
  }
  return driver;
}

}  // namespace decode_internal

common::StatusOr<PersistentVolume> DecodePersistentVolume(const boost::json::value& json) {
  return decode_internal::DecodeRoot<PersistentVolume>("persistentvolume", json,
                                                       decode_internal::DecodePvObject);
}

common::StatusOr<PersistentVolumeClaim> DecodePersistentVolumeClaim(
    const boost::json::value& json) {
  return decode_internal::DecodeRoot<PersistentVolumeClaim>("persistentvolumeclaim", json,
                                                            decode_internal::DecodePvcObject);
}

common::StatusOr<StorageClass> DecodeStorageClass(const boost::json::value& json) {
  return decode_internal::DecodeRoot<StorageClass>("storageclass", json,
                                                   decode_internal::DecodeStorageClassObject);
}

common::StatusOr<CSINode> DecodeCSINode(const boost::json::value& json) {
  return decode_internal::DecodeRoot<CSINode>("csinode", json,
                                              decode_internal::DecodeCSINodeObject);
}

common::StatusOr<CSIDriver> DecodeCSIDriver(const boost::json::value& json) {
  return decode_internal::DecodeRoot<CSIDriver>("csidriver", json,
                                                decode_internal::DecodeCSIDriverObject);
}

}  // namespace gpusched::api
