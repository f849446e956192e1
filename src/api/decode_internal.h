// SPDX-License-Identifier: Apache-2.0
// Internal to src/api/decode*.cc (not for use elsewhere): the Kubernetes wording of JsonReader
// and the pieces of metadata and spec that the pod and node decoders share.
//
// Every function reads through an ObjectReader, records each error it finds (with its path) and
// goes on; what it returns is meaningful only while the reader has no errors. Paths are
// PathStyle::kBracketed ("spec.containers[0].resources.limits[nvidia.com/gpu]") and the messages
// are those decode.h documents:
//   expected object, got array
//   invalid value "Near" (want In, NotIn, Exists or DoesNotExist)
//   value out of range [1, 100]
// Thread-safety: as decode.h (an ObjectReader belongs to one decode).
#pragma once

#include <boost/json.hpp>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "src/api/fields.h"
#include "src/api/storage.h"
#include "src/api/types.h"
#include "src/common/status.h"

namespace gpusched::api::decode_internal {

// A JsonReader in the Kubernetes wording, for one object.
class ObjectReader : public JsonReader {
 public:
  ObjectReader();

  // invalid value "value" (want `want`)
  void InvalidValue(const FieldPath& path, std::string_view value, std::string_view want);
  void Required(const FieldPath& path) { Error(path, "required"); }
  // Whether member `key` is there (not null) and not a string: its reader recorded a type error.
  static bool IsNonString(const boost::json::object& o, std::string_view key);
  // Records "required" at parent.key when `value` (what member `key` read as) is "" and the member
  // is not of a wrong type (that has its type error already).
  void RequireNonEmpty(const boost::json::object& o, std::string_view key, std::string_view value,
                       const FieldPath& parent);
  // The string member `key`, then RequireNonEmpty. "" when not there.
  std::string_view RequiredString(const boost::json::object& o, std::string_view key,
                                  const FieldPath& parent);
};

// "object", "array", ... as the Kubernetes messages name JSON kinds.
std::string_view KindName(const boost::json::value& v);

// "pod default/train-1", "node n1", "pod (no name)": how messages name the object `root`.
std::string Subject(std::string_view kind, const boost::json::object& root);
// The reader's errors, each prefixed "subject: ".
std::vector<std::string> ErrorsOf(const ObjectReader& r, std::string_view kind,
                                  const boost::json::object& root);
// InvalidArgument "kind: expected object, got <kind of v>".
common::Status NotAnObject(std::string_view kind, const boost::json::value& v);

// The object `decode(reader, root)` builds from `json`, or its first error as InvalidArgument
// "kind name: path: why" (the top-level decoders of PDBs, PriorityClasses and storage objects).
template <typename T, typename Decode>
common::StatusOr<T> DecodeRoot(std::string_view kind, const boost::json::value& json,
                               Decode decode) {
  const boost::json::object* o = json.if_object();
  if (o == nullptr) return NotAnObject(kind, json);
  ObjectReader r;
  T object = decode(r, *o);
  if (r.ok()) return object;
  return common::InvalidArgumentError(Subject(kind, *o) + ": " + r.errors().list().front());
}

// Records an error unless `kind` (the root's "kind") is absent, empty or `want`.
void CheckKind(ObjectReader& r, const boost::json::object& root, std::string_view want);

// The metadata member of `root` (an object at `rp`: the document, or a pod template).
ObjectMeta DecodeMeta(ObjectReader& r, const boost::json::object& root,
                      const FieldPath& rp = FieldPath());
// An RFC 3339 time member; nullopt when absent or empty.
std::optional<common::TimePoint> DecodeTime(ObjectReader& r, const boost::json::object& o,
                                            std::string_view key, const FieldPath& p);
// A map of strings (labels, nodeSelector); non-string values are errors, null reads as "".
Labels DecodeLabels(ObjectReader& r, const boost::json::object& o, std::string_view key,
                    const FieldPath& p);
// A map of resource name -> quantity (`m` at path `mp`). cpu is stored in millicores, everything
// else in whole units (rounded up).
ResourceList DecodeResourceMap(ObjectReader& r, const boost::json::object& m, const FieldPath& mp);
// The resource map member `key` of `o` (absent or null: empty).
ResourceList DecodeResources(ObjectReader& r, const boost::json::object& o, std::string_view key,
                             const FieldPath& p);
std::vector<Condition> DecodeConditions(ObjectReader& r, const boost::json::object& status,
                                        const FieldPath& p);
// The "preemptionPolicy" member of `o` (a pod spec, a PriorityClass): PreemptLowerPriority (also
// when absent or empty) or Never.
PreemptionPolicy DecodePreemptionPolicy(ObjectReader& r, const boost::json::object& o,
                                        const FieldPath& p);
// The "effect" member of a taint or toleration; "" only when `allow_empty` (TaintEffect::kAll).
TaintEffect DecodeEffect(ObjectReader& r, const boost::json::object& o, const FieldPath& p,
                         bool allow_empty);

// spec.resourceClaims and status.resourceClaimStatuses of `root` (a pod, or a native PodGroup:
// KEP-5729 uses the same shape); null when it has no claim.
std::shared_ptr<const PodResourceClaims> DecodeClaimReferences(ObjectReader& r,
                                                               const boost::json::object& root,
                                                               const FieldPath& rp);

// A toleration (pods, DRA device requests) and a taint (nodes, DRA devices).
Toleration DecodeToleration(ObjectReader& r, const boost::json::object& o, const FieldPath& p);
Taint DecodeTaint(ObjectReader& r, const boost::json::object& o, const FieldPath& p);

// A matchExpressions entry (metav1.LabelSelectorRequirement or v1.NodeSelectorRequirement; the
// latter also allows Gt and Lt).
Requirement DecodeRequirement(ObjectReader& r, const boost::json::object& o, const FieldPath& p,
                              bool allow_gt_lt);
// metav1.LabelSelector from an object (matchLabels become In requirements).
LabelSelector DecodeLabelSelectorObject(ObjectReader& r, const boost::json::object& o,
                                        const FieldPath& p);
// A label selector member where null means "matches nothing" (affinity terms, spread
// constraints).
LabelSelector DecodeLabelSelector(ObjectReader& r, const boost::json::object& o,
                                  std::string_view key, const FieldPath& p);
// A list of non-empty strings, interned (matchLabelKeys, mismatchLabelKeys).
std::vector<Atom> DecodeLabelKeys(ObjectReader& r, const boost::json::object& o,
                                  std::string_view key, const FieldPath& p);
// A list of strings (namespaces, matchFields values).
std::vector<std::string> DecodeStringList(ObjectReader& r, const boost::json::object& o,
                                          std::string_view key, const FieldPath& p);

// A v1.NodeSelectorTerm (matchExpressions, matchFields on metadata.name): node affinity, PV node
// affinity.
NodeSelectorTerm DecodeNodeSelectorTerm(ObjectReader& r, const boost::json::object& o,
                                        const FieldPath& p);

// The whole-object decoders (decode_pod.cc, decode_node.cc, decode_pdb.cc). The reader holds
// the errors.
Pod DecodePodObject(ObjectReader& r, const boost::json::object& root);
// A v1.PodTemplateSpec at `tp` (metadata and spec) as the Pod it makes: requests defaulted and
// summed as a Pod's (the namespace is left as written).
Pod DecodePodTemplate(ObjectReader& r, const boost::json::object& tmpl, const FieldPath& tp);
Node DecodeNodeObject(ObjectReader& r, const boost::json::object& root);
PodDisruptionBudget DecodePdbObject(ObjectReader& r, const boost::json::object& root);
PriorityClass DecodePriorityClassObject(ObjectReader& r, const boost::json::object& root);
// decode_storage.cc
PersistentVolume DecodePvObject(ObjectReader& r, const boost::json::object& root);
PersistentVolumeClaim DecodePvcObject(ObjectReader& r, const boost::json::object& root);
StorageClass DecodeStorageClassObject(ObjectReader& r, const boost::json::object& root);
CSINode DecodeCSINodeObject(ObjectReader& r, const boost::json::object& root);
CSIDriver DecodeCSIDriverObject(ObjectReader& r, const boost::json::object& root);

}  // namespace gpusched::api::decode_internal
