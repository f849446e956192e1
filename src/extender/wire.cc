// SPDX-License-Identifier: Apache-2.0
#include "src/extender/wire.h"

#include <memory>
#include <optional>
#include <utility>

#include "src/api/decode.h"
#include "src/api/fields.h"

namespace gpusched::extender {
namespace {

namespace json = boost::json;
using api::FieldPath;
using api::JsonReader;
using api::JsonType;

// Go's names: an array, not a list. The value is not quoted (the verbs never did).
std::string WireTypeError(JsonType want, const json::value& /*got*/) {
  if (want == JsonType::kArray) return "want an array";
  return "want " + std::string(api::WantedTypeName(want));
}

std::string WireRangeError(const json::value& /*got*/, std::optional<int64_t> /*value*/,
                           int64_t /*lo*/, int64_t /*hi*/) {
  return "want an integer";  // only an integer beyond int64 (Go's int)
}

const api::Dialect& WireDialect() {
  static const api::Dialect d{.path_style = api::PathStyle::kDotted,
                              .type_error = &WireTypeError,
                              .range_error = &WireRangeError,
                              .quantity_error = nullptr,
                              .fold_case = true};
  return d;
}

// The body as an object, or an error naming the wire type.
const json::object* Body(JsonReader& r, const json::value& root, std::string_view type) {
  const json::object* o = root.if_object();
  if (o == nullptr) r.Error(FieldPath(), "want an " + std::string(type) + " object");
  return o;
}

// The member `key` decoded as a Pod (its decoder's errors at the member's path), or null.
api::PodPtr DecodePodMember(JsonReader& r, const json::object& o, std::string_view key) {
  const json::value* v = r.Find(o, key);
  if (v == nullptr) {
    r.Error(FieldPath(), std::string(key) + " is required");
    return nullptr;
  }
  common::StatusOr<api::Pod> pod = api::DecodePod(*v);
  if (!pod.ok()) {
    r.Error(FieldPath::Text(key), pod.status().message());
    return nullptr;
  }
  return std::make_shared<const api::Pod>(std::move(pod).value());
}

// Nodes (a NodeList): each item decoded, kept with its JSON for the reply.
void DecodeNodeList(JsonReader& r, const json::value& list, ExtenderArgs& out) {
  const FieldPath path = FieldPath::Text("Nodes");
  const json::object* o = list.if_object();
  if (o == nullptr) {
    r.Error(path, "want a NodeList object");
    return;
  }
  r.ForEachElement(*o, "items", path, [&](const json::value& item, const FieldPath& ip) {
    common::StatusOr<api::Node> n = api::DecodeNode(item);
    if (!n.ok()) {
      r.Error(ip, n.status().message());
      return;
    }
    out.names.push_back(n->meta.name);
    out.nodes.push_back(std::make_shared<const api::Node>(std::move(n).value()));
    out.raw.push_back(&item);
  });
}

// One Victims (whole pods) or MetaVictims (UIDs) value at `path` into `out`.
void DecodeVictims(JsonReader& r, const json::value& v, const FieldPath& path, bool meta,
                   PreemptionArgs::Node& out) {
  const json::object* o = v.if_object();
  if (o == nullptr) {
    r.Error(path, meta ? "want a MetaVictims object" : "want a Victims object");
    return;
  }
  out.pdb_violations = r.Int(*o, "NumPDBViolations", path).value_or(0);
  // Pods absent or null: Go's nil slice, no victims.
  r.ForEachElement(*o, "Pods", path, [&](const json::value& item, const FieldPath& ip) {
    if (meta) {
      const json::object* mp = item.if_object();
      if (mp == nullptr) return r.Error(ip, "want a MetaPod object");
      const json::value* uid = r.Find(*mp, "UID");
      const json::string* s = uid != nullptr ? uid->if_string() : nullptr;
      if (s == nullptr || s->empty()) return r.Error(ip.Key("UID"), "want a non-empty string");
      out.uids.emplace_back(*s);
      return;
    }
    common::StatusOr<api::Pod> pod = api::DecodePod(item);
    if (!pod.ok()) return r.Error(ip, pod.status().message());
    if (pod->meta.uid.empty()) {
      const FieldPath mp = ip.Key("metadata");
      return r.Error(mp.Key("uid"), "is required");
    }
    out.uids.push_back(pod->meta.uid);
  });
}

}  // namespace

common::StatusOr<ExtenderArgs> DecodeExtenderArgs(std::string_view body) {
  ExtenderArgs a;
  GPUSCHED_ASSIGN_OR_RETURN(a.root, api::ParseJson(body, "request"));
  JsonReader r(WireDialect());
  const json::object* o = Body(r, a.root, "ExtenderArgs");
  if (o == nullptr) return r.errors().ToStatus("request");
  a.pod = DecodePodMember(r, *o, "Pod");
  if (r.Find(*o, "NodeNames") != nullptr) {
    a.node_cache_capable = true;
    r.ForEachString(*o, "NodeNames", FieldPath(),
                    [&](std::string_view name, const FieldPath&) { a.names.emplace_back(name); });
  } else if (const json::value* nodes = r.Find(*o, "Nodes")) {
    DecodeNodeList(r, *nodes, a);
  } else {
    r.Error(FieldPath(), "one of NodeNames or Nodes is required");
  }
  if (!r.ok()) return r.errors().ToStatus("request");
  return a;
}

common::StatusOr<PreemptionArgs> DecodePreemptionArgs(std::string_view body) {
  GPUSCHED_ASSIGN_OR_RETURN(json::value root, api::ParseJson(body, "request"));
  JsonReader r(WireDialect());
  const json::object* o = Body(r, root, "ExtenderPreemptionArgs");
  if (o == nullptr) return r.errors().ToStatus("request");
  PreemptionArgs a;
  a.pod = DecodePodMember(r, *o, "Pod");
  // nodeCacheCapable: UIDs only; otherwise whole pods. kube-scheduler sends one (the other null).
  bool meta = true;
  std::string_view key = "NodeNameToMetaVictims";
  const json::value* map = r.Find(*o, key);
  if (map == nullptr) {
    meta = false;
    key = "NodeNameToVictims";
    map = r.Find(*o, key);
  }
  const json::object* nodes = map != nullptr ? map->if_object() : nullptr;
  if (map == nullptr) {
    r.Error(FieldPath(), "one of NodeNameToMetaVictims or NodeNameToVictims is required");
  } else if (nodes == nullptr) {
    r.Error(FieldPath::Text(key), "want an object of node name to victims");
  } else {
    for (const auto& kv : *nodes) {
      PreemptionArgs::Node n;
      n.name = std::string(kv.key());
      const std::string spelled = std::string(key) + "[" + n.name + "]";
      DecodeVictims(r, kv.value(), FieldPath::Text(spelled), meta, n);
      a.nodes.push_back(std::move(n));
    }
  }
  if (!r.ok()) return r.errors().ToStatus("request");
  return a;
}

common::StatusOr<BindingArgs> DecodeBindingArgs(std::string_view body) {
  GPUSCHED_ASSIGN_OR_RETURN(json::value root, api::ParseJson(body, "request"));
  JsonReader r(WireDialect());
  const json::object* o = Body(r, root, "ExtenderBindingArgs");
  if (o == nullptr) return r.errors().ToStatus("request");
  const FieldPath top;
  BindingArgs a;
  a.pod_name = r.StringOr(*o, "PodName", top);
  a.pod_namespace = r.StringOr(*o, "PodNamespace", top);
  a.pod_uid = r.StringOr(*o, "PodUID", top);
  a.node = r.StringOr(*o, "Node", top);
  if (r.ok() && (a.pod_name.empty() || a.pod_uid.empty() || a.node.empty())) {
    r.Error(top, "PodName, PodUID and Node are required");
  }
  if (!r.ok()) return r.errors().ToStatus("request");
  return a;
}

}  // namespace gpusched::extender
