// SPDX-License-Identifier: Apache-2.0
// JSON -> Node: taints, unschedulable, capacity, allocatable, conditions and images, then the GPU
// facts (DeriveNodeGpuInfo). Every error is recorded in the ObjectReader, in document order.
#include "src/api/decode_internal.h"

namespace gpusched::api::decode_internal {

namespace json = boost::json;

Taint DecodeTaint(ObjectReader& r, const json::object& o, const FieldPath& p) {
  Taint t;
  const std::string_view key = r.StringOr(o, "key", p);
  const std::string_view value = r.StringOr(o, "value", p);
  r.RequireNonEmpty(o, "key", key, p);
  t.key = common::Intern(key);
  t.value = common::Intern(value);
  t.effect = DecodeEffect(r, o, p, false);
  return t;
}

namespace {

// One status.images entry: names (strings) and sizeBytes (>= 0).
ContainerImage DecodeImage(ObjectReader& r, const json::object& o, const FieldPath& p) {
  ContainerImage image;
  image.names = DecodeStringList(r, o, "names", p);
  image.size_bytes = r.Int(o, "sizeBytes", p, 0).value_or(0);
  return image;
}

}  // namespace

Node DecodeNodeObject(ObjectReader& r, const json::object& root) {
  Node node;
  const FieldPath rp;
  CheckKind(r, root, "Node");
  node.meta = DecodeMeta(r, root);
  if (const json::object* spec = r.Object(root, "spec", rp)) {
    const FieldPath sp = rp.Key("spec");
    node.unschedulable = r.Bool(*spec, "unschedulable", sp).value_or(false);
    node.taints = r.MapObjects<Taint>(
        *spec, "taints", sp,
        [&](const json::object& o, const FieldPath& ip) { return DecodeTaint(r, o, ip); });
  }
  if (const json::object* status = r.Object(root, "status", rp)) {
    const FieldPath tp = rp.Key("status");
    node.capacity = DecodeResources(r, *status, "capacity", tp);
    node.allocatable = DecodeResources(r, *status, "allocatable", tp);
    node.conditions = DecodeConditions(r, *status, tp);
    node.images = r.MapObjects<ContainerImage>(
        *status, "images", tp,
        [&](const json::object& o, const FieldPath& ip) { return DecodeImage(r, o, ip); });
  }
  if (r.ok()) DeriveNodeGpuInfo(node);
  return node;
}

}  // namespace gpusched::api::decode_internal
