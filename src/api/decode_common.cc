// SPDX-License-Identifier: Apache-2.0
// The pieces of Kubernetes objects that pods and nodes share: the Kubernetes wording of
// JsonReader, metadata, label and resource maps, conditions, taint effects and label selectors.
// Boost.JSON is used only through its non-throwing accessors, so no exception leaves this file.
#include <algorithm>
#include <charconv>
#include <string>
#include <utility>

#include "src/api/decode.h"
#include "src/api/decode_internal.h"
#include "src/common/strings.h"

namespace gpusched::api::decode_internal {

namespace json = boost::json;

// ---------------------------------------------------------------------------------------------
// The Kubernetes dialect

std::string_view KindName(const json::value& v) {
  switch (v.kind()) {
    case json::kind::null: return "null";
    case json::kind::bool_: return "bool";
    case json::kind::int64:
    case json::kind::uint64:
    case json::kind::double_: return "number";
    case json::kind::string: return "string";
    case json::kind::array: return "array";
    case json::kind::object: return "object";
  }
  return "unknown";
}

namespace {

std::string_view TypeName(JsonType t) {
  switch (t) {
    case JsonType::kObject: return "object";
    case JsonType::kArray: return "array";
    case JsonType::kString: return "string";
    case JsonType::kBool: return "bool";
    case JsonType::kInteger: return "integer";
    case JsonType::kNumber: return "number";
    case JsonType::kQuantity: return "quantity string";
  }
  return "value";
}

std::string KubernetesTypeError(JsonType want, const json::value& got) {
  std::string why = "expected ";
  why += TypeName(want);
  why += ", got ";
  why += KindName(got);
  return why;
}

std::string KubernetesRangeError(const json::value&, std::optional<int64_t>, int64_t lo,
                                 int64_t hi) {
  return "value out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
}

constexpr Dialect kKubernetes{PathStyle::kBracketed, &KubernetesTypeError, &KubernetesRangeError,
                              nullptr};

std::string_view MetaString(const json::object& root, std::string_view key) {
  const json::value* meta = root.if_contains("metadata");
  const json::object* m = meta != nullptr ? meta->if_object() : nullptr;
  const json::value* v = m != nullptr ? m->if_contains(key) : nullptr;
  const json::string* s = v != nullptr ? v->if_string() : nullptr;
  return s != nullptr ? std::string_view(*s) : std::string_view();
}

std::string_view StringOrEmpty(const json::value& v) {
  const json::string* s = v.if_string();
  return s ? std::string_view(*s) : std::string_view();
}

}  // namespace

ObjectReader::ObjectReader() : JsonReader(kKubernetes) {}

void ObjectReader::InvalidValue(const FieldPath& path, std::string_view value,
                                std::string_view want) {
  std::string why = "invalid value ";
  why += common::Quote(value);
  why += " (want ";
  why += want;
  why += ")";
  Error(path, why);
}

bool ObjectReader::IsNonString(const json::object& o, std::string_view key) {
  const json::value* v = Member(o, key);
  return v != nullptr && !v->is_string();
}

void ObjectReader::RequireNonEmpty(const json::object& o, std::string_view key,
                                   std::string_view value, const FieldPath& parent) {
  if (value.empty() && !IsNonString(o, key)) Required(parent.Key(key));
}

std::string_view ObjectReader::RequiredString(const json::object& o, std::string_view key,
                                              const FieldPath& parent) {
  const std::string_view s = StringOr(o, key, parent);
  RequireNonEmpty(o, key, s, parent);
  return s;
}

std::string Subject(std::string_view kind, const json::object& root) {
  const std::string_view name = MetaString(root, "name");
  std::string out(kind);
  out += ' ';
  if (name.empty()) {
    out += "(no name)";
    return out;
  }
  if (kind == "pod" || kind == "poddisruptionbudget" || kind == "podgroup" || kind == "workload" ||
      kind == "persistentvolumeclaim" || kind == "resourceclaim" ||
      kind == "resourceclaimtemplate" || kind == "deployment" || kind == "replicaset" ||
      kind == "statefulset" || kind == "daemonset" || kind == "job") {
    const std::string_view ns = MetaString(root, "namespace");
    out += ns.empty() ? std::string_view("default") : ns;
    out += '/';
  }
  out += name;
  return out;
}

std::vector<std::string> ErrorsOf(const ObjectReader& r, std::string_view kind,
                                  const json::object& root) {
  const std::string subject = Subject(kind, root);
  std::vector<std::string> out;
  out.reserve(r.errors().size());
  for (const std::string& e : r.errors().list()) out.push_back(subject + ": " + e);
  return out;
}

common::Status NotAnObject(std::string_view kind, const json::value& v) {
  std::string msg(kind);
  msg += ": expected object, got ";
  msg += KindName(v);
  return common::InvalidArgumentError(std::move(msg));
}

void CheckKind(ObjectReader& r, const json::object& root, std::string_view want) {
  const FieldPath rp;
  const std::string_view kind = r.StringOr(root, "kind", rp);
  if (!kind.empty() && kind != want) r.InvalidValue(rp.Key("kind"), kind, want);
}

// ---------------------------------------------------------------------------------------------
// Metadata

std::optional<common::TimePoint> DecodeTime(ObjectReader& r, const json::object& o,
                                            std::string_view key, const FieldPath& p) {
  const std::string_view s = r.StringOr(o, key, p);
  if (s.empty()) return std::nullopt;
  std::optional<common::TimePoint> t = ParseRfc3339(s);
  if (!t) r.InvalidValue(p.Key(key), s, "RFC 3339 time, e.g. 2024-05-01T12:00:00Z");
  return t;
}

namespace {

// The object member `key` whose values must be strings (or null); records an error per value of
// another type.
const json::object* StringMap(ObjectReader& r, const json::object& o, std::string_view key,
                              const FieldPath& p) {
  const json::object* m = r.Object(o, key, p);
  if (m == nullptr) return nullptr;
  const FieldPath mp = p.Key(key);
  for (const auto& kv : *m) {
    if (!kv.value().is_string() && !kv.value().is_null()) {
      r.TypeError(mp.Key(kv.key()), JsonType::kString, kv.value());
    }
  }
  return m;
}

std::vector<std::pair<std::string, std::string>> DecodeAnnotations(ObjectReader& r,
                                                                   const json::object& m,
                                                                   const FieldPath& p) {
  std::vector<std::pair<std::string, std::string>> out;
  const json::object* ann = StringMap(r, m, "annotations", p);
  if (ann == nullptr) return out;
  out.reserve(ann->size());
  for (const auto& kv : *ann) {
    out.emplace_back(std::string(kv.key()), std::string(StringOrEmpty(kv.value())));
  }
  std::sort(out.begin(), out.end());
  return out;
}

OwnerReference DecodeOwnerReference(ObjectReader& r, const json::object& e, const FieldPath& p) {
  OwnerReference ref;
  ref.api_version = r.StringOr(e, "apiVersion", p);
  ref.kind = r.StringOr(e, "kind", p);
  ref.name = r.StringOr(e, "name", p);
  ref.uid = r.StringOr(e, "uid", p);
  ref.controller = r.Bool(e, "controller", p).value_or(false);
  return ref;
}

}  // namespace

Labels DecodeLabels(ObjectReader& r, const json::object& o, std::string_view key,
                    const FieldPath& p) {
  Labels out;
  const json::object* m = StringMap(r, o, key, p);
  if (m == nullptr) return out;
  for (const auto& kv : *m) out.Set(kv.key(), StringOrEmpty(kv.value()));
  return out;
}

ObjectMeta DecodeMeta(ObjectReader& r, const json::object& root, const FieldPath& rp) {
  ObjectMeta meta;
  const json::object* m = r.Object(root, "metadata", rp);
  if (m == nullptr) return meta;
  const FieldPath p = rp.Key("metadata");
  meta.name = r.StringOr(*m, "name", p);
  meta.namespace_ = r.StringOr(*m, "namespace", p);
  meta.uid = r.StringOr(*m, "uid", p);
  meta.resource_version = r.StringOr(*m, "resourceVersion", p);
  meta.labels = DecodeLabels(r, *m, "labels", p);
  meta.annotations = DecodeAnnotations(r, *m, p);
  meta.owner_references = r.MapObjects<OwnerReference>(
      *m, "ownerReferences", p,
      [&](const json::object& e, const FieldPath& ip) { return DecodeOwnerReference(r, e, ip); });
  meta.creation_timestamp = DecodeTime(r, *m, "creationTimestamp", p);
  meta.deletion_timestamp = DecodeTime(r, *m, "deletionTimestamp", p);
  return meta;
}

// ---------------------------------------------------------------------------------------------
// Resources, conditions, effects

ResourceList DecodeResourceMap(ObjectReader& r, const json::object& m, const FieldPath& mp) {
  ResourceList out;
  const Atom cpu = Names().cpu;
  for (const auto& kv : m) {
    std::optional<Quantity> q = r.AsQuantity(kv.value(), mp.Key(kv.key()));
    if (!q) continue;
    const Atom name = common::Intern(kv.key());
    out.Set(name, name == cpu ? q->MilliValue() : q->Value());
  }
  return out;
}

ResourceList DecodeResources(ObjectReader& r, const json::object& o, std::string_view key,
                             const FieldPath& p) {
  const json::object* m = r.Object(o, key, p);
  return m == nullptr ? ResourceList() : DecodeResourceMap(r, *m, p.Key(key));
}

std::vector<Condition> DecodeConditions(ObjectReader& r, const json::object& status,
                                        const FieldPath& p) {
  return r.MapObjects<Condition>(
      status, "conditions", p, [&](const json::object& o, const FieldPath& ip) {
        Condition cond;
        cond.type = r.StringOr(o, "type", ip);
        cond.status = r.StringOr(o, "status", ip);
        cond.reason = r.StringOr(o, "reason", ip);
        cond.message = r.StringOr(o, "message", ip);
        cond.last_transition_time = DecodeTime(r, o, "lastTransitionTime", ip);
        return cond;
      });
}

PreemptionPolicy DecodePreemptionPolicy(ObjectReader& r, const json::object& o,
                                        const FieldPath& p) {
  const std::string_view v = r.StringOr(o, "preemptionPolicy", p);
  if (v.empty() || v == "PreemptLowerPriority") return PreemptionPolicy::kPreemptLowerPriority;
  if (v == "Never") return PreemptionPolicy::kNever;
  r.InvalidValue(p.Key("preemptionPolicy"), v, "PreemptLowerPriority or Never");
  return PreemptionPolicy::kPreemptLowerPriority;
}

TaintEffect DecodeEffect(ObjectReader& r, const json::object& o, const FieldPath& p,
                         bool allow_empty) {
  const std::optional<std::string_view> read = r.String(o, "effect", p);
  if (!read && ObjectReader::IsNonString(o, "effect")) return TaintEffect::kNoSchedule;
  const std::string_view effect = read.value_or("");
  if (effect == "NoSchedule") return TaintEffect::kNoSchedule;
  if (effect == "PreferNoSchedule") return TaintEffect::kPreferNoSchedule;
  if (effect == "NoExecute") return TaintEffect::kNoExecute;
  if (effect.empty() && allow_empty) return TaintEffect::kAll;
  r.InvalidValue(p.Key("effect"), effect,
                 allow_empty ? "empty, NoSchedule, PreferNoSchedule or NoExecute"
                             : "NoSchedule, PreferNoSchedule or NoExecute");
  return TaintEffect::kNoSchedule;
}

// ---------------------------------------------------------------------------------------------
// Label selectors

namespace {

std::optional<SelectorOp> ParseOp(std::string_view op, bool allow_gt_lt) {
  if (op == "In") return SelectorOp::kIn;
  if (op == "NotIn") return SelectorOp::kNotIn;
  if (op == "Exists") return SelectorOp::kExists;
  if (op == "DoesNotExist") return SelectorOp::kDoesNotExist;
  if (allow_gt_lt && op == "Gt") return SelectorOp::kGt;
  if (allow_gt_lt && op == "Lt") return SelectorOp::kLt;
  return std::nullopt;
}

// The values of an In or NotIn requirement.
std::vector<Atom> DecodeSetValues(ObjectReader& r, const json::array* values, const FieldPath& vp) {
  std::vector<Atom> out;
  if (values == nullptr || values->empty()) {
    r.Error(vp, "must be non-empty for In and NotIn");
    return out;
  }
  out.reserve(values->size());
  for (size_t i = 0; i < values->size(); ++i) {
    if (std::optional<std::string_view> s = r.AsString((*values)[i], vp.At(i))) {
      out.push_back(common::Intern(*s));
    }
  }
  return out;
}

// The one integer value of a Gt or Lt requirement (0 when malformed).
int64_t DecodeNumberValue(ObjectReader& r, const json::array* values, const FieldPath& vp) {
  if (values == nullptr || values->size() != 1) {
    r.Error(vp, "must hold exactly one integer for Gt and Lt");
    return 0;
  }
  const std::optional<std::string_view> s = r.AsString((*values)[0], vp.At(0));
  if (!s) return 0;
  std::string_view text = *s;
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  int64_t number = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), number);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size()) {
    r.InvalidValue(vp.At(0), *s, "an integer");
  }
  return number;
}

}  // namespace

Requirement DecodeRequirement(ObjectReader& r, const json::object& o, const FieldPath& p,
                              bool allow_gt_lt) {
  Requirement out;
  const std::string_view key = r.StringOr(o, "key", p);
  const std::string_view op_text = r.StringOr(o, "operator", p);
  r.RequireNonEmpty(o, "key", key, p);
  out.key = common::Intern(key);
  const std::optional<SelectorOp> op = ParseOp(op_text, allow_gt_lt);
  if (!op) {
    if (!ObjectReader::IsNonString(o, "operator")) {
      r.InvalidValue(p.Key("operator"), op_text,
                     allow_gt_lt ? "In, NotIn, Exists, DoesNotExist, Gt or Lt"
                                 : "In, NotIn, Exists or DoesNotExist");
    }
    return out;
  }
  out.op = *op;
  const json::array* values = r.Array(o, "values", p);
  const FieldPath vp = p.Key("values");
  switch (out.op) {
    case SelectorOp::kIn:
    case SelectorOp::kNotIn: out.values = DecodeSetValues(r, values, vp); break;
    case SelectorOp::kExists:
    case SelectorOp::kDoesNotExist:
      if (values != nullptr && !values->empty()) {
        r.Error(vp, "must be empty for Exists and DoesNotExist");
      }
      break;
    case SelectorOp::kGt:
    case SelectorOp::kLt: out.number = DecodeNumberValue(r, values, vp); break;
  }
  return out;
}

LabelSelector DecodeLabelSelectorObject(ObjectReader& r, const json::object& o,
                                        const FieldPath& p) {
  LabelSelector out;
  if (const json::object* ml = StringMap(r, o, "matchLabels", p)) {
    for (const auto& kv : *ml) {
      out.requirements.push_back(Requirement{common::Intern(kv.key()),
                                             SelectorOp::kIn,
                                             {common::Intern(StringOrEmpty(kv.value()))},
                                             0});
    }
  }
  r.ForEachObject(o, "matchExpressions", p, [&](const json::object& e, const FieldPath& ep) {
    out.requirements.push_back(DecodeRequirement(r, e, ep, false));
  });
  return out;
}

LabelSelector DecodeLabelSelector(ObjectReader& r, const json::object& o, std::string_view key,
                                  const FieldPath& p) {
  const json::object* s = r.Object(o, key, p);
  if (s == nullptr) return LabelSelector::Nothing();
  return DecodeLabelSelectorObject(r, *s, p.Key(key));
}

std::vector<Atom> DecodeLabelKeys(ObjectReader& r, const json::object& o, std::string_view key,
                                  const FieldPath& p) {
  std::vector<Atom> out;
  const json::array* a = r.Array(o, key, p);
  if (a == nullptr) return out;
  const FieldPath ap = p.Key(key);
  out.reserve(a->size());
  for (size_t i = 0; i < a->size(); ++i) {
    const std::optional<std::string_view> s = r.AsString((*a)[i], ap.At(i));
    if (!s) continue;
    if (s->empty()) {
      r.Error(ap.At(i), "must be a non-empty label key");
      continue;
    }
    out.push_back(common::Intern(*s));
  }
  return out;
}

std::vector<std::string> DecodeStringList(ObjectReader& r, const json::object& o,
                                          std::string_view key, const FieldPath& p) {
  std::vector<std::string> out;
  const json::array* a = r.Array(o, key, p);
  if (a == nullptr) return out;
  const FieldPath ap = p.Key(key);
  out.reserve(a->size());
  for (size_t i = 0; i < a->size(); ++i) {
    if (std::optional<std::string_view> s = r.AsString((*a)[i], ap.At(i))) out.emplace_back(*s);
  }
  return out;
}

}  // namespace gpusched::api::decode_internal
