// SPDX-License-Identifier: Apache-2.0
// JSON -> Pod / Node. Boost.JSON is used only through its non-throwing accessors (if_object,
// if_contains, ...), so no exception leaves this file. Field paths for error messages live on the
// stack (Path) and are formatted only when an error is returned: the success path builds no text.
#include "src/api/decode.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <span>
#include <string>
#include <utility>

#include <boost/json.hpp>

#include "src/api/quantity.h"
#include "src/common/strings.h"

namespace gpusched::api {
namespace {

namespace json = boost::json;
using common::Status;

// ---------------------------------------------------------------------------------------------
// Paths and errors

// One step of a JSON path, linked to its parent on the stack.
struct Path {
  const Path* parent = nullptr;
  std::string_view key;  // member name; empty for an array element (index >= 0) or the root
  int64_t index = -1;

  Path Key(std::string_view k) const { return Path{this, k, -1}; }
  Path At(size_t i) const { return Path{this, {}, static_cast<int64_t>(i)}; }

  // "spec.containers[0].resources.limits[nvidia.com/gpu]"
  std::string ToString() const {
    std::vector<const Path*> chain;
    for (const Path* p = this; p != nullptr; p = p->parent) chain.push_back(p);
    std::string out;
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      const Path& p = **it;
      if (p.index >= 0) {
        out += '[';
        out += std::to_string(p.index);
        out += ']';
      } else if (!p.key.empty()) {
        if (p.key.find_first_of("./") != std::string_view::npos) {
          out += '[';
          out += p.key;
          out += ']';
        } else {
          if (!out.empty()) out += '.';
          out += p.key;
        }
      }
    }
    return out;
  }
};

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

// Decoding context: names the object in error messages ("pod default/train-1", "node n1").
class Ctx {
 public:
  Ctx(std::string_view kind, const json::object& root) : kind_(kind) {
    if (const json::value* meta = root.if_contains("metadata")) {
      if (const json::object* m = meta->if_object()) {
        if (const json::value* n = m->if_contains("name")) {
          if (const json::string* s = n->if_string()) name_ = *s;
        }
        if (const json::value* n = m->if_contains("namespace")) {
          if (const json::string* s = n->if_string()) namespace_ = *s;
        }
      }
    }
  }

  // "pod default/x: spec.containers[0]: why"
  Status Error(const Path& path, std::string_view why) const {
    std::string msg(kind_);
    msg += ' ';
    if (name_.empty()) {
      msg += "(no name)";
    } else {
      if (kind_ == "pod") {
        msg += namespace_.empty() ? std::string_view("default") : namespace_;
        msg += '/';
      }
      msg += name_;
    }
    std::string p = path.ToString();
    if (!p.empty()) {
      msg += ": ";
      msg += p;
    }
    msg += ": ";
    msg += why;
    return common::InvalidArgumentError(std::move(msg));
  }

  Status TypeError(const Path& path, std::string_view want, const json::value& got) const {
    std::string why = "expected ";
    why += want;
    why += ", got ";
    why += KindName(got);
    return Error(path, why);
  }

  Status InvalidValue(const Path& path, std::string_view value, std::string_view want) const {
    std::string why = "invalid value ";
    why += common::Quote(value);
    why += " (want ";
    why += want;
    why += ")";
    return Error(path, why);
  }

  // --- Typed accessors for a member of `o`. Absent and null members leave *out untouched and
  // --- succeed; a member of the wrong type is an error naming its path.

  Status Obj(const json::object& o, std::string_view key, const Path& p,
             const json::object** out) const {
    *out = nullptr;
    const json::value* v = o.if_contains(key);
    if (v == nullptr || v->is_null()) return Status::Ok();
    *out = v->if_object();
    return *out ? Status::Ok() : TypeError(p.Key(key), "object", *v);
  }

  Status Arr(const json::object& o, std::string_view key, const Path& p,
             const json::array** out) const {
    *out = nullptr;
    const json::value* v = o.if_contains(key);
    if (v == nullptr || v->is_null()) return Status::Ok();
    *out = v->if_array();
    return *out ? Status::Ok() : TypeError(p.Key(key), "array", *v);
  }

  Status StrView(const json::object& o, std::string_view key, const Path& p,
                 std::string_view* out) const {
    const json::value* v = o.if_contains(key);
    if (v == nullptr || v->is_null()) return Status::Ok();
    const json::string* s = v->if_string();
    if (s == nullptr) return TypeError(p.Key(key), "string", *v);
    *out = *s;
    return Status::Ok();
  }

  Status Str(const json::object& o, std::string_view key, const Path& p, std::string* out) const {
    std::string_view s;
    GPUSCHED_RETURN_IF_ERROR(StrView(o, key, p, &s));
    if (!s.empty()) out->assign(s);
    return Status::Ok();
  }

  Status Bool(const json::object& o, std::string_view key, const Path& p, bool* out) const {
    const json::value* v = o.if_contains(key);
    if (v == nullptr || v->is_null()) return Status::Ok();
    const bool* b = v->if_bool();
    if (b == nullptr) return TypeError(p.Key(key), "bool", *v);
    *out = *b;
    return Status::Ok();
  }

  // An integer in [lo, hi]; `present` (optional) says whether the member was there.
  Status Int(const json::object& o, std::string_view key, const Path& p, int64_t lo, int64_t hi,
             int64_t* out, bool* present = nullptr) const {
    if (present) *present = false;
    const json::value* v = o.if_contains(key);
    if (v == nullptr || v->is_null()) return Status::Ok();
    return IntValue(*v, p.Key(key), lo, hi, out, present);
  }

  Status IntValue(const json::value& v, const Path& path, int64_t lo, int64_t hi, int64_t* out,
                  bool* present = nullptr) const {
    bool ok = false;
    bool in_range = true;
    int64_t r = 0;
    if (const int64_t* i = v.if_int64()) {
      r = *i;
      ok = true;
    } else if (const uint64_t* u = v.if_uint64()) {
      ok = true;
      in_range = *u <= static_cast<uint64_t>(hi < 0 ? 0 : hi);
      r = in_range ? static_cast<int64_t>(*u) : 0;
    } else if (const double* d = v.if_double()) {
      // YAML "1.0" or JSON 1e3: accept integral values only.
      if (std::isfinite(*d) && std::trunc(*d) == *d) {
        ok = true;
        in_range = *d >= static_cast<double>(lo) && *d <= static_cast<double>(hi);
        r = in_range ? static_cast<int64_t>(*d) : 0;
      }
    }
    if (!ok) return TypeError(path, "integer", v);
    if (!in_range || r < lo || r > hi) {
      return Error(path, "value out of range [" + std::to_string(lo) + ", " + std::to_string(hi) +
                             "]");
    }
    *out = r;
    if (present) *present = true;
    return Status::Ok();
  }

  // Element `i` of an array as an object (null elements are an error).
  Status ElemObj(const json::value& v, const Path& path, const json::object** out) const {
    *out = v.if_object();
    return *out ? Status::Ok() : TypeError(path, "object", v);
  }

  // The array o[key] (absent or null: no elements), each element an object: calls
  // fn(element, element path) -> Status for each, stopping at the first error.
  template <typename Fn>
  Status EachObj(const json::object& o, std::string_view key, const Path& p, Fn&& fn) const {
    const json::array* a = nullptr;
    GPUSCHED_RETURN_IF_ERROR(Arr(o, key, p, &a));
    if (a == nullptr) return Status::Ok();
    const Path ap = p.Key(key);
    for (size_t i = 0; i < a->size(); ++i) {
      const json::object* e = nullptr;
      const Path ip = ap.At(i);
      GPUSCHED_RETURN_IF_ERROR(ElemObj((*a)[i], ip, &e));
      GPUSCHED_RETURN_IF_ERROR(fn(*e, ip));
    }
    return Status::Ok();
  }

  // EachObj that appends one T to *out per element: fn(element, element path, T&) -> Status.
  template <typename T, typename Fn>
  Status EachObjInto(const json::object& o, std::string_view key, const Path& p,
                     std::vector<T>* out, Fn&& fn) const {
    if (const json::value* v = o.if_contains(key); v != nullptr && v->is_array()) {
      out->reserve(out->size() + v->get_array().size());
    }
    return EachObj(o, key, p, [&](const json::object& e, const Path& ip) {
      return fn(e, ip, out->emplace_back());
    });
  }

 private:
  std::string_view kind_;
  std::string_view name_;
  std::string_view namespace_;
};

// ---------------------------------------------------------------------------------------------
// Scalars

// The quantity text of a JSON value: strings as is, numbers formatted (YAML "cpu: 2", "0.5").
bool QuantityText(const json::value& v, char* buf, size_t size, std::string_view* out) {
  if (const json::string* s = v.if_string()) {
    *out = *s;
    return true;
  }
  std::to_chars_result r{};
  if (const int64_t* i = v.if_int64()) {
    r = std::to_chars(buf, buf + size, *i);
  } else if (const uint64_t* u = v.if_uint64()) {
    r = std::to_chars(buf, buf + size, *u);
  } else if (const double* d = v.if_double()) {
    r = std::to_chars(buf, buf + size, *d);
  } else {
    return false;
  }
  if (r.ec != std::errc()) return false;
  *out = std::string_view(buf, static_cast<size_t>(r.ptr - buf));
  return true;
}

int64_t DaysFromCivil(int64_t y, int64_t m, int64_t d) {  // H. Hinnant's algorithm
  y -= m <= 2 ? 1 : 0;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

}  // namespace

// RFC 3339: 2024-05-01T12:00:00Z, 2024-05-01T12:00:00.123456+02:00.
std::optional<common::TimePoint> ParseRfc3339(std::string_view s) {
  size_t pos = 0;
  auto digits = [&](size_t n, int64_t* out) {
    if (pos + n > s.size()) return false;
    int64_t v = 0;
    for (size_t i = 0; i < n; ++i) {
      char c = s[pos + i];
      if (c < '0' || c > '9') return false;
      v = v * 10 + (c - '0');
    }
    pos += n;
    *out = v;
    return true;
  };
  auto expect = [&](char a, char b) {
    if (pos >= s.size() || (s[pos] != a && s[pos] != b)) return false;
    ++pos;
    return true;
  };
  int64_t y, mo, d, h, mi, sec;
  if (!digits(4, &y) || !expect('-', '-') || !digits(2, &mo) || !expect('-', '-') ||
      !digits(2, &d) || !expect('T', 't') || !digits(2, &h) || !expect(':', ':') ||
      !digits(2, &mi) || !expect(':', ':') || !digits(2, &sec)) {
    return std::nullopt;
  }
  static constexpr int kDays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  if (mo < 1 || mo > 12 || d < 1 || d > kDays[mo - 1] || (mo == 2 && d == 29 && !leap) ||
      h > 23 || mi > 59 || sec > 59) {
    return std::nullopt;
  }
  int64_t nanos = 0;
  if (pos < s.size() && s[pos] == '.') {
    ++pos;
    size_t n = 0;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
      if (n < 9) nanos = nanos * 10 + (s[pos] - '0');
      ++n;
      ++pos;
    }
    if (n == 0) return std::nullopt;
    for (size_t i = n; i < 9; ++i) nanos *= 10;
  }
  int64_t offset = 0;
  if (expect('Z', 'z')) {
  } else if (pos < s.size() && (s[pos] == '+' || s[pos] == '-')) {
    int64_t sign = s[pos] == '-' ? -1 : 1;
    ++pos;
    int64_t oh, om;
    if (!digits(2, &oh) || !expect(':', ':') || !digits(2, &om) || oh > 23 || om > 59) {
      return std::nullopt;
    }
    offset = sign * (oh * 3600 + om * 60);
  } else {
    return std::nullopt;
  }
  if (pos != s.size()) return std::nullopt;
  int64_t secs = DaysFromCivil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec - offset;
  // Nanoseconds since the epoch must fit in int64: years 1678..2261.
  constexpr int64_t kLimit = std::numeric_limits<int64_t>::max() / 1'000'000'000 - 1;
  if (secs > kLimit || secs < -kLimit) return std::nullopt;
  return common::TimePoint(common::Duration(secs * 1'000'000'000 + nanos));
}

namespace {

// ---------------------------------------------------------------------------------------------
// Shared pieces of metadata and spec

Status DecodeTime(const Ctx& c, const json::object& o, std::string_view key, const Path& p,
                  std::optional<common::TimePoint>* out) {
  std::string_view s;
  GPUSCHED_RETURN_IF_ERROR(c.StrView(o, key, p, &s));
  if (s.empty()) return Status::Ok();
  *out = ParseRfc3339(s);
  if (!*out) return c.InvalidValue(p.Key(key), s, "RFC 3339 time, e.g. 2024-05-01T12:00:00Z");
  return Status::Ok();
}

Status DecodeStringMap(const Ctx& c, const json::object& o, std::string_view key, const Path& p,
                       const json::object** out) {
  GPUSCHED_RETURN_IF_ERROR(c.Obj(o, key, p, out));
  if (*out == nullptr) return Status::Ok();
  Path mp = p.Key(key);
  for (const auto& kv : **out) {
    if (!kv.value().is_string() && !kv.value().is_null()) {
      return c.TypeError(mp.Key(kv.key()), "string", kv.value());
    }
  }
  return Status::Ok();
}

std::string_view StringOrEmpty(const json::value& v) {
  const json::string* s = v.if_string();
  return s ? std::string_view(*s) : std::string_view();
}

Status DecodeLabels(const Ctx& c, const json::object& o, std::string_view key, const Path& p,
                    Labels* out) {
  const json::object* m = nullptr;
  GPUSCHED_RETURN_IF_ERROR(DecodeStringMap(c, o, key, p, &m));
  if (m == nullptr) return Status::Ok();
  for (const auto& kv : *m) out->Set(kv.key(), StringOrEmpty(kv.value()));
  return Status::Ok();
}

Status DecodeMeta(const Ctx& c, const json::object& root, const Path& root_path, ObjectMeta* meta) {
  const json::object* m = nullptr;
  GPUSCHED_RETURN_IF_ERROR(c.Obj(root, "metadata", root_path, &m));
  if (m == nullptr) return Status::Ok();
  Path p = root_path.Key("metadata");
  GPUSCHED_RETURN_IF_ERROR(c.Str(*m, "name", p, &meta->name));
  GPUSCHED_RETURN_IF_ERROR(c.Str(*m, "namespace", p, &meta->namespace_));
  GPUSCHED_RETURN_IF_ERROR(c.Str(*m, "uid", p, &meta->uid));
  GPUSCHED_RETURN_IF_ERROR(c.Str(*m, "resourceVersion", p, &meta->resource_version));
  GPUSCHED_RETURN_IF_ERROR(DecodeLabels(c, *m, "labels", p, &meta->labels));
  const json::object* ann = nullptr;
  GPUSCHED_RETURN_IF_ERROR(DecodeStringMap(c, *m, "annotations", p, &ann));
  if (ann != nullptr) {
    meta->annotations.reserve(ann->size());
    for (const auto& kv : *ann) {
      meta->annotations.emplace_back(std::string(kv.key()), std::string(StringOrEmpty(kv.value())));
    }
    std::sort(meta->annotations.begin(), meta->annotations.end());
  }
  GPUSCHED_RETURN_IF_ERROR(c.EachObjInto(
      *m, "ownerReferences", p, &meta->owner_references,
      [&](const json::object& e, const Path& ip, OwnerReference& ref) -> Status {
        GPUSCHED_RETURN_IF_ERROR(c.Str(e, "apiVersion", ip, &ref.api_version));
        GPUSCHED_RETURN_IF_ERROR(c.Str(e, "kind", ip, &ref.kind));
        GPUSCHED_RETURN_IF_ERROR(c.Str(e, "name", ip, &ref.name));
        GPUSCHED_RETURN_IF_ERROR(c.Str(e, "uid", ip, &ref.uid));
        return c.Bool(e, "controller", ip, &ref.controller);
      }));
  GPUSCHED_RETURN_IF_ERROR(DecodeTime(c, *m, "creationTimestamp", p, &meta->creation_timestamp));
  GPUSCHED_RETURN_IF_ERROR(DecodeTime(c, *m, "deletionTimestamp", p, &meta->deletion_timestamp));
  return Status::Ok();
}

// A map of resource name -> quantity. `cpu` is stored in millicores, everything else in whole
// units (rounded up).
Status DecodeResources(const Ctx& c, const json::object& o, std::string_view key, const Path& p,
                       ResourceList* out, const json::object** raw = nullptr) {
  const json::object* m = nullptr;
  GPUSCHED_RETURN_IF_ERROR(c.Obj(o, key, p, &m));
  if (raw) *raw = m;
  if (m == nullptr) return Status::Ok();
  const Atom cpu = Names().cpu;
  for (const auto& kv : *m) {
    char buf[64];
    std::string_view text;
    if (!QuantityText(kv.value(), buf, sizeof buf, &text)) {
      return c.TypeError(p.Key(key).Key(kv.key()), "quantity string", kv.value());
    }
    auto q = Quantity::Parse(text);
    if (!q.ok()) return c.Error(p.Key(key).Key(kv.key()), q.status().message());
    Atom name = common::Intern(kv.key());
    out->Set(name, name == cpu ? q->MilliValue() : q->Value());
  }
  return Status::Ok();
}

Status DecodeStringList(const Ctx& c, const json::object& o, std::string_view key, const Path& p,
                        std::vector<std::string>* out) {
  const json::array* a = nullptr;
  GPUSCHED_RETURN_IF_ERROR(c.Arr(o, key, p, &a));
  if (a == nullptr) return Status::Ok();
  out->reserve(a->size());
  for (size_t i = 0; i < a->size(); ++i) {
    const json::string* s = (*a)[i].if_string();
    if (s == nullptr) return c.TypeError(p.Key(key).At(i), "string", (*a)[i]);
    out->emplace_back(*s);
  }
  return Status::Ok();
}

// A list of label keys (matchLabelKeys, mismatchLabelKeys): non-empty strings, interned.
Status DecodeLabelKeys(const Ctx& c, const json::object& o, std::string_view key, const Path& p,
                       std::vector<Atom>* out) {
  const json::array* a = nullptr;
  GPUSCHED_RETURN_IF_ERROR(c.Arr(o, key, p, &a));
  if (a == nullptr) return Status::Ok();
  out->reserve(a->size());
  for (size_t i = 0; i < a->size(); ++i) {
    const json::string* s = (*a)[i].if_string();
    if (s == nullptr) return c.TypeError(p.Key(key).At(i), "string", (*a)[i]);
    if (s->empty()) return c.Error(p.Key(key).At(i), "must be a non-empty label key");
    out->push_back(common::Intern(std::string_view(s->data(), s->size())));
  }
  return Status::Ok();
}

// Merges matchLabelKeys (key In (value)) and mismatchLabelKeys (key NotIn (value)) into
// `selector` for the keys the pod's labels have, as the API server does on pod creation.
void MergeLabelKeys(const Labels& pod_labels, std::span<const Atom> match,
                    std::span<const Atom> mismatch, LabelSelector* selector) {
  for (int pass = 0; pass < 2; ++pass) {
    for (Atom key : pass == 0 ? match : mismatch) {
      Atom value;
      if (!pod_labels.Get(key, &value)) continue;
      Requirement r;
      r.key = key;
      r.op = pass == 0 ? SelectorOp::kIn : SelectorOp::kNotIn;
      r.values.push_back(value);
      selector->requirements.push_back(std::move(r));
    }
  }
}

void MergePodLabelKeys(Pod& pod) {
  for (TopologySpreadConstraint& t : pod.topology_spread_constraints) {
    MergeLabelKeys(pod.meta.labels, t.match_label_keys, {}, &t.label_selector);
  }
  for (PodAffinity* pa : {&pod.affinity.pod_affinity, &pod.affinity.pod_anti_affinity}) {
    for (PodAffinityTerm& t : pa->required) {
      MergeLabelKeys(pod.meta.labels, t.match_label_keys, t.mismatch_label_keys,
                     &t.label_selector);
    }
    for (WeightedPodAffinityTerm& w : pa->preferred) {
      MergeLabelKeys(pod.meta.labels, w.term.match_label_keys, w.term.mismatch_label_keys,
                     &w.term.label_selector);
    }
  }
}

// A matchExpressions entry (metav1.LabelSelectorRequirement or v1.NodeSelectorRequirement; the
// latter also allows Gt and Lt).
Status DecodeRequirement(const Ctx& c, const json::object& o, const Path& p, bool allow_gt_lt,
                         Requirement* out) {
  std::string_view key;
  std::string_view op;
  GPUSCHED_RETURN_IF_ERROR(c.StrView(o, "key", p, &key));
  GPUSCHED_RETURN_IF_ERROR(c.StrView(o, "operator", p, &op));
  if (key.empty()) return c.Error(p.Key("key"), "required");
  out->key = common::Intern(key);
  if (op == "In") {
    out->op = SelectorOp::kIn;
  } else if (op == "NotIn") {
    out->op = SelectorOp::kNotIn;
  } else if (op == "Exists") {
    out->op = SelectorOp::kExists;
  } else if (op == "DoesNotExist") {
    out->op = SelectorOp::kDoesNotExist;
  } else if (allow_gt_lt && op == "Gt") {
    out->op = SelectorOp::kGt;
  } else if (allow_gt_lt && op == "Lt") {
    out->op = SelectorOp::kLt;
  } else {
    return c.InvalidValue(p.Key("operator"), op,
                          allow_gt_lt ? "In, NotIn, Exists, DoesNotExist, Gt or Lt"
                                      : "In, NotIn, Exists or DoesNotExist");
  }
  const json::array* values = nullptr;
  GPUSCHED_RETURN_IF_ERROR(c.Arr(o, "values", p, &values));
  size_t n = values ? values->size() : 0;
  Path vp = p.Key("values");
  switch (out->op) {
    case SelectorOp::kIn:
    case SelectorOp::kNotIn:
      if (n == 0) return c.Error(vp, "must be non-empty for In and NotIn");
      out->values.reserve(n);
      for (size_t i = 0; i < n; ++i) {
        const json::string* s = (*values)[i].if_string();
        if (s == nullptr) return c.TypeError(vp.At(i), "string", (*values)[i]);
        out->values.push_back(common::Intern(*s));
      }
      break;
    case SelectorOp::kExists:
    case SelectorOp::kDoesNotExist:
      if (n != 0) return c.Error(vp, "must be empty for Exists and DoesNotExist");
      break;
    case SelectorOp::kGt:
    case SelectorOp::kLt: {
      if (n != 1) return c.Error(vp, "must hold exactly one integer for Gt and Lt");
      const json::string* s = (*values)[0].if_string();
      if (s == nullptr) return c.TypeError(vp.At(0), "string", (*values)[0]);
      std::string_view text = *s;
      if (!text.empty() && text.front() == '+') text.remove_prefix(1);
      auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out->number);
      if (text.empty() || ec != std::errc() || ptr != text.data() + text.size()) {
        return c.InvalidValue(vp.At(0), *s, "an integer");
      }
      break;
    }
  }
  return Status::Ok();
}

Status DecodeExpressions(const Ctx& c, const json::object& o, std::string_view key, const Path& p,
                         bool allow_gt_lt, std::vector<Requirement>* out) {
  return c.EachObjInto(o, key, p, out,
                       [&](const json::object& e, const Path& ep, Requirement& r) {
                         return DecodeRequirement(c, e, ep, allow_gt_lt, &r);
                       });
}

// metav1.LabelSelector from an object (matchLabels become In requirements).
Status DecodeLabelSelectorObject(const Ctx& c, const json::object& o, const Path& p,
                                 LabelSelector* out) {
  const json::object* ml = nullptr;
  GPUSCHED_RETURN_IF_ERROR(DecodeStringMap(c, o, "matchLabels", p, &ml));
  if (ml != nullptr) {
    for (const auto& kv : *ml) {
      out->requirements.push_back(Requirement{common::Intern(kv.key()), SelectorOp::kIn,
                                              {common::Intern(StringOrEmpty(kv.value()))}, 0});
    }
  }
  return DecodeExpressions(c, o, "matchExpressions", p, false, &out->requirements);
}

// A label selector member where null means "matches nothing" (affinity terms, spread
// constraints).
Status DecodeLabelSelector(const Ctx& c, const json::object& o, std::string_view key,
                           const Path& p, LabelSelector* out) {
  const json::object* s = nullptr;
  GPUSCHED_RETURN_IF_ERROR(c.Obj(o, key, p, &s));
  if (s == nullptr) {
    *out = LabelSelector::Nothing();
    return Status::Ok();
  }
  return DecodeLabelSelectorObject(c, *s, p.Key(key), out);
}

Status DecodeNodeSelectorTerm(const Ctx& c, const json::object& o, const Path& p,
                              NodeSelectorTerm* out) {
  GPUSCHED_RETURN_IF_ERROR(
      DecodeExpressions(c, o, "matchExpressions", p, true, &out->match_expressions));
  return c.EachObj(o, "matchFields", p, [&](const json::object& f, const Path& ip) -> Status {
    std::string_view key;
    std::string_view op;
    GPUSCHED_RETURN_IF_ERROR(c.StrView(f, "key", ip, &key));
    GPUSCHED_RETURN_IF_ERROR(c.StrView(f, "operator", ip, &op));
    if (key != "metadata.name") return c.InvalidValue(ip.Key("key"), key, "metadata.name");
    std::vector<std::string>* names = nullptr;
    if (op == "In") {
      names = &out->match_fields_names_in;
    } else if (op == "NotIn") {
      names = &out->match_fields_names_not_in;
    } else {
      return c.InvalidValue(ip.Key("operator"), op, "In or NotIn");
    }
    size_t before = names->size();
    GPUSCHED_RETURN_IF_ERROR(DecodeStringList(c, f, "values", ip, names));
    if (names->size() == before) return c.Error(ip.Key("values"), "must be non-empty");
    return Status::Ok();
  });
}

Status DecodeWeight(const Ctx& c, const json::object& o, const Path& p, int32_t* out) {
  int64_t w = 0;
  GPUSCHED_RETURN_IF_ERROR(c.Int(o, "weight", p, 1, 100, &w));
  *out = static_cast<int32_t>(w);
  return Status::Ok();
}

Status DecodeNodeAffinity(const Ctx& c, const json::object& o, const Path& p, NodeAffinity* out) {
  const json::object* req = nullptr;
  GPUSCHED_RETURN_IF_ERROR(c.Obj(o, "requiredDuringSchedulingIgnoredDuringExecution", p, &req));
  if (req != nullptr) {
    Path rp = p.Key("requiredDuringSchedulingIgnoredDuringExecution");
    NodeSelector& sel = out->required.emplace();
    GPUSCHED_RETURN_IF_ERROR(c.EachObjInto(
        *req, "nodeSelectorTerms", rp, &sel.terms,
        [&](const json::object& t, const Path& ip, NodeSelectorTerm& term) {
          return DecodeNodeSelectorTerm(c, t, ip, &term);
        }));
  }
  return c.EachObjInto(
      o, "preferredDuringSchedulingIgnoredDuringExecution", p, &out->preferred,
      [&](const json::object& e, const Path& ip, PreferredSchedulingTerm& term) -> Status {
        GPUSCHED_RETURN_IF_ERROR(DecodeWeight(c, e, ip, &term.weight));
        const json::object* pr = nullptr;
        GPUSCHED_RETURN_IF_ERROR(c.Obj(e, "preference", ip, &pr));
        if (pr == nullptr) return Status::Ok();
        return DecodeNodeSelectorTerm(c, *pr, ip.Key("preference"), &term.preference);
      });
}

Status DecodePodAffinityTerm(const Ctx& c, const json::object& o, const Path& p,
                             PodAffinityTerm* out) {
  GPUSCHED_RETURN_IF_ERROR(DecodeLabelSelector(c, o, "labelSelector", p, &out->label_selector));
  GPUSCHED_RETURN_IF_ERROR(DecodeStringList(c, o, "namespaces", p, &out->namespaces));
  const json::object* ns = nullptr;
  GPUSCHED_RETURN_IF_ERROR(c.Obj(o, "namespaceSelector", p, &ns));
  if (ns != nullptr) {
    GPUSCHED_RETURN_IF_ERROR(DecodeLabelSelectorObject(c, *ns, p.Key("namespaceSelector"),
                                                       &out->namespace_selector.emplace()));
  }
  std::string_view topology_key;
  GPUSCHED_RETURN_IF_ERROR(c.StrView(o, "topologyKey", p, &topology_key));
  if (topology_key.empty()) return c.Error(p.Key("topologyKey"), "required");
  out->topology_key = common::Intern(topology_key);
  GPUSCHED_RETURN_IF_ERROR(DecodeLabelKeys(c, o, "matchLabelKeys", p, &out->match_label_keys));
  GPUSCHED_RETURN_IF_ERROR(
      DecodeLabelKeys(c, o, "mismatchLabelKeys", p, &out->mismatch_label_keys));
  return Status::Ok();
}

Status DecodePodAffinity(const Ctx& c, const json::object& o, const Path& p, PodAffinity* out) {
  GPUSCHED_RETURN_IF_ERROR(c.EachObjInto(
      o, "requiredDuringSchedulingIgnoredDuringExecution", p, &out->required,
      [&](const json::object& t, const Path& ip, PodAffinityTerm& term) {
        return DecodePodAffinityTerm(c, t, ip, &term);
      }));
  return c.EachObjInto(
      o, "preferredDuringSchedulingIgnoredDuringExecution", p, &out->preferred,
      [&](const json::object& e, const Path& ip, WeightedPodAffinityTerm& w) -> Status {
        GPUSCHED_RETURN_IF_ERROR(DecodeWeight(c, e, ip, &w.weight));
        const json::object* t = nullptr;
        GPUSCHED_RETURN_IF_ERROR(c.Obj(e, "podAffinityTerm", ip, &t));
        if (t == nullptr) return c.Error(ip.Key("podAffinityTerm"), "required");
        return DecodePodAffinityTerm(c, *t, ip.Key("podAffinityTerm"), &w.term);
      });
}

Status DecodeAffinity(const Ctx& c, const json::object& spec, const Path& p, Affinity* out) {
  const json::object* a = nullptr;
  GPUSCHED_RETURN_IF_ERROR(c.Obj(spec, "affinity", p, &a));
  if (a == nullptr) return Status::Ok();
  Path ap = p.Key("affinity");
  const json::object* na = nullptr;
  GPUSCHED_RETURN_IF_ERROR(c.Obj(*a, "nodeAffinity", ap, &na));
  if (na != nullptr) {
    GPUSCHED_RETURN_IF_ERROR(
        DecodeNodeAffinity(c, *na, ap.Key("nodeAffinity"), &out->node_affinity));
  }
  const json::object* pa = nullptr;
  GPUSCHED_RETURN_IF_ERROR(c.Obj(*a, "podAffinity", ap, &pa));
  if (pa != nullptr) {
    GPUSCHED_RETURN_IF_ERROR(DecodePodAffinity(c, *pa, ap.Key("podAffinity"), &out->pod_affinity));
  }
  const json::object* paa = nullptr;
  GPUSCHED_RETURN_IF_ERROR(c.Obj(*a, "podAntiAffinity", ap, &paa));
  if (paa != nullptr) {
    GPUSCHED_RETURN_IF_ERROR(
        DecodePodAffinity(c, *paa, ap.Key("podAntiAffinity"), &out->pod_anti_affinity));
  }
  return Status::Ok();
}

Status DecodeEffect(const Ctx& c, const json::object& o, const Path& p, bool allow_empty,
                    TaintEffect* out) {
  std::string_view effect;
  GPUSCHED_RETURN_IF_ERROR(c.StrView(o, "effect", p, &effect));
  if (effect == "NoSchedule") {
    *out = TaintEffect::kNoSchedule;
  } else if (effect == "PreferNoSchedule") {
    *out = TaintEffect::kPreferNoSchedule;
  } else if (effect == "NoExecute") {
    *out = TaintEffect::kNoExecute;
  } else if (effect.empty() && allow_empty) {
    *out = TaintEffect::kAll;
  } else {
    return c.InvalidValue(p.Key("effect"), effect,
                          allow_empty ? "empty, NoSchedule, PreferNoSchedule or NoExecute"
                                      : "NoSchedule, PreferNoSchedule or NoExecute");
  }
  return Status::Ok();
}

Status DecodeTolerations(const Ctx& c, const json::object& spec, const Path& p,
                         std::vector<Toleration>* out) {
  return c.EachObjInto(
      spec, "tolerations", p, out,
      [&](const json::object& o, const Path& ip, Toleration& t) -> Status {
        std::string_view key;
        std::string_view op;
        std::string_view value;
        GPUSCHED_RETURN_IF_ERROR(c.StrView(o, "key", ip, &key));
        GPUSCHED_RETURN_IF_ERROR(c.StrView(o, "operator", ip, &op));
        GPUSCHED_RETURN_IF_ERROR(c.StrView(o, "value", ip, &value));
        if (op.empty() || op == "Equal") {
          t.op = Toleration::Op::kEqual;
        } else if (op == "Exists") {
          t.op = Toleration::Op::kExists;
        } else {
          return c.InvalidValue(ip.Key("operator"), op, "Equal or Exists");
        }
        t.key = common::Intern(key);
        t.value = common::Intern(value);
        GPUSCHED_RETURN_IF_ERROR(DecodeEffect(c, o, ip, true, &t.effect));
        int64_t seconds = 0;
        bool present = false;
        GPUSCHED_RETURN_IF_ERROR(c.Int(o, "tolerationSeconds", ip,
                                       std::numeric_limits<int64_t>::min(),
                                       std::numeric_limits<int64_t>::max(), &seconds, &present));
        if (present) t.toleration_seconds = seconds;
        return Status::Ok();
      });
}

Status DecodeSpreadConstraints(const Ctx& c, const json::object& spec, const Path& p,
                               std::vector<TopologySpreadConstraint>* out) {
  constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();
  return c.EachObjInto(
      spec, "topologySpreadConstraints", p, out,
      [&](const json::object& o, const Path& ip, TopologySpreadConstraint& t) -> Status {
        int64_t max_skew = 1;
        GPUSCHED_RETURN_IF_ERROR(c.Int(o, "maxSkew", ip, 1, kInt32Max, &max_skew));
        t.max_skew = static_cast<int32_t>(max_skew);
        std::string_view key;
        GPUSCHED_RETURN_IF_ERROR(c.StrView(o, "topologyKey", ip, &key));
        if (key.empty()) return c.Error(ip.Key("topologyKey"), "required");
        t.topology_key = common::Intern(key);
        std::string_view when;
        GPUSCHED_RETURN_IF_ERROR(c.StrView(o, "whenUnsatisfiable", ip, &when));
        if (when.empty() || when == "DoNotSchedule") {
          t.when_unsatisfiable = TopologySpreadConstraint::WhenUnsatisfiable::kDoNotSchedule;
        } else if (when == "ScheduleAnyway") {
          t.when_unsatisfiable = TopologySpreadConstraint::WhenUnsatisfiable::kScheduleAnyway;
        } else {
          return c.InvalidValue(ip.Key("whenUnsatisfiable"), when,
                                "DoNotSchedule or ScheduleAnyway");
        }
        GPUSCHED_RETURN_IF_ERROR(DecodeLabelSelector(c, o, "labelSelector", ip, &t.label_selector));
        int64_t min_domains = 0;
        bool present = false;
        GPUSCHED_RETURN_IF_ERROR(c.Int(o, "minDomains", ip, 1, kInt32Max, &min_domains, &present));
        if (present) t.min_domains = static_cast<int32_t>(min_domains);
        GPUSCHED_RETURN_IF_ERROR(DecodeLabelKeys(c, o, "matchLabelKeys", ip, &t.match_label_keys));
        using Policy = TopologySpreadConstraint::NodeInclusionPolicy;
        for (auto [field, policy] : {std::pair{"nodeAffinityPolicy", &t.node_affinity_policy},
                                     std::pair{"nodeTaintsPolicy", &t.node_taints_policy}}) {
          std::string_view v;
          GPUSCHED_RETURN_IF_ERROR(c.StrView(o, field, ip, &v));
          if (v == "Honor") {
            *policy = Policy::kHonor;
          } else if (v == "Ignore") {
            *policy = Policy::kIgnore;
          } else if (!v.empty()) {
            return c.InvalidValue(ip.Key(field), v, "Honor or Ignore");
          }
        }
        return Status::Ok();
      });
}

Status DecodeContainers(const Ctx& c, const json::object& spec, std::string_view key,
                        const Path& p, bool init, std::vector<Container>* out) {
  return c.EachObjInto(
      spec, key, p, out,
      [&](const json::object& o, const Path& ip, Container& ct) -> Status {
        GPUSCHED_RETURN_IF_ERROR(c.Str(o, "name", ip, &ct.name));
        if (init) {
          std::string_view policy;
          GPUSCHED_RETURN_IF_ERROR(c.StrView(o, "restartPolicy", ip, &policy));
          if (policy == "Always") {
            ct.restartable = true;
          } else if (!policy.empty()) {
            return c.InvalidValue(ip.Key("restartPolicy"), policy, "Always or unset");
          }
        }
        const json::object* res = nullptr;
        GPUSCHED_RETURN_IF_ERROR(c.Obj(o, "resources", ip, &res));
        if (res == nullptr) return Status::Ok();
        Path rp = ip.Key("resources");
        const json::object* raw_requests = nullptr;
        const json::object* raw_limits = nullptr;
        GPUSCHED_RETURN_IF_ERROR(
            DecodeResources(c, *res, "requests", rp, &ct.requests, &raw_requests));
        GPUSCHED_RETURN_IF_ERROR(DecodeResources(c, *res, "limits", rp, &ct.limits, &raw_limits));
        // API defaulting (SetDefaults_Pod): a resource with a limit and no request is requested at
        // its limit.
        if (raw_limits != nullptr) {
          for (const auto& kv : *raw_limits) {
            if (raw_requests == nullptr || !raw_requests->contains(kv.key())) {
              Atom name = common::Intern(kv.key());
              ct.requests.Set(name, ct.limits.Get(name));
            }
          }
        }
        return Status::Ok();
      });
}

Status DecodeConditions(const Ctx& c, const json::object& status, const Path& p,
                        std::vector<Condition>* out) {
  return c.EachObjInto(
      status, "conditions", p, out,
      [&](const json::object& o, const Path& ip, Condition& cond) -> Status {
        GPUSCHED_RETURN_IF_ERROR(c.Str(o, "type", ip, &cond.type));
        GPUSCHED_RETURN_IF_ERROR(c.Str(o, "status", ip, &cond.status));
        GPUSCHED_RETURN_IF_ERROR(c.Str(o, "reason", ip, &cond.reason));
        GPUSCHED_RETURN_IF_ERROR(c.Str(o, "message", ip, &cond.message));
        GPUSCHED_RETURN_IF_ERROR(
            DecodeTime(c, o, "lastTransitionTime", ip, &cond.last_transition_time));
        return Status::Ok();
      });
}

Status CheckKind(const Ctx& c, const json::object& root, std::string_view want) {
  std::string_view kind;
  GPUSCHED_RETURN_IF_ERROR(c.StrView(root, "kind", Path{}, &kind));
  if (!kind.empty() && kind != want) return c.InvalidValue(Path{}.Key("kind"), kind, want);
  return Status::Ok();
}

PodPhase ParsePhase(std::string_view s) {
  if (s.empty() || s == "Pending") return PodPhase::kPending;
  if (s == "Running") return PodPhase::kRunning;
  if (s == "Succeeded") return PodPhase::kSucceeded;
  if (s == "Failed") return PodPhase::kFailed;
  return PodPhase::kUnknown;
}

Status DecodePodInto(const json::object& root, Pod* pod) {
  Ctx c("pod", root);
  const Path rp;
  GPUSCHED_RETURN_IF_ERROR(CheckKind(c, root, "Pod"));
  GPUSCHED_RETURN_IF_ERROR(DecodeMeta(c, root, rp, &pod->meta));
  if (pod->meta.namespace_.empty()) pod->meta.namespace_ = "default";

  const json::object* spec = nullptr;
  GPUSCHED_RETURN_IF_ERROR(c.Obj(root, "spec", rp, &spec));
  pod->scheduler_name = Names().default_scheduler;
  if (spec != nullptr) {
    const Path sp = rp.Key("spec");
    GPUSCHED_RETURN_IF_ERROR(c.Str(*spec, "nodeName", sp, &pod->node_name));
    std::string_view scheduler;
    GPUSCHED_RETURN_IF_ERROR(c.StrView(*spec, "schedulerName", sp, &scheduler));
    if (!scheduler.empty()) pod->scheduler_name = common::Intern(scheduler);
    int64_t priority = 0;
    GPUSCHED_RETURN_IF_ERROR(c.Int(*spec, "priority", sp, std::numeric_limits<int32_t>::min(),
                                   std::numeric_limits<int32_t>::max(), &priority));
    pod->priority = static_cast<int32_t>(priority);
    GPUSCHED_RETURN_IF_ERROR(c.Str(*spec, "priorityClassName", sp, &pod->priority_class_name));
    GPUSCHED_RETURN_IF_ERROR(DecodeLabels(c, *spec, "nodeSelector", sp, &pod->node_selector));
    GPUSCHED_RETURN_IF_ERROR(DecodeAffinity(c, *spec, sp, &pod->affinity));
    GPUSCHED_RETURN_IF_ERROR(DecodeTolerations(c, *spec, sp, &pod->tolerations));
    GPUSCHED_RETURN_IF_ERROR(
        DecodeSpreadConstraints(c, *spec, sp, &pod->topology_spread_constraints));
    GPUSCHED_RETURN_IF_ERROR(DecodeContainers(c, *spec, "containers", sp, false, &pod->containers));
    GPUSCHED_RETURN_IF_ERROR(
        DecodeContainers(c, *spec, "initContainers", sp, true, &pod->init_containers));
    GPUSCHED_RETURN_IF_ERROR(DecodeResources(c, *spec, "overhead", sp, &pod->overhead));
    GPUSCHED_RETURN_IF_ERROR(c.EachObjInto(
        *spec, "schedulingGates", sp, &pod->scheduling_gates,
        [&](const json::object& g, const Path& ip, std::string& gate) -> Status {
          GPUSCHED_RETURN_IF_ERROR(c.Str(g, "name", ip, &gate));
          return gate.empty() ? c.Error(ip.Key("name"), "required") : Status::Ok();
        }));
  }

  const json::object* status = nullptr;
  GPUSCHED_RETURN_IF_ERROR(c.Obj(root, "status", rp, &status));
  if (status != nullptr) {
    const Path tp = rp.Key("status");
    std::string_view phase;
    GPUSCHED_RETURN_IF_ERROR(c.StrView(*status, "phase", tp, &phase));
    pod->phase = ParsePhase(phase);
    GPUSCHED_RETURN_IF_ERROR(DecodeConditions(c, *status, tp, &pod->conditions));
    GPUSCHED_RETURN_IF_ERROR(c.Str(*status, "nominatedNodeName", tp, &pod->nominated_node_name));
  }

  MergePodLabelKeys(*pod);
  ComputeEffectiveRequests(*pod);
  DeriveGpuRequest(*pod);
  return Status::Ok();
}

Status DecodeNodeInto(const json::object& root, Node* node) {
  Ctx c("node", root);
  const Path rp;
  GPUSCHED_RETURN_IF_ERROR(CheckKind(c, root, "Node"));
  GPUSCHED_RETURN_IF_ERROR(DecodeMeta(c, root, rp, &node->meta));

  const json::object* spec = nullptr;
  GPUSCHED_RETURN_IF_ERROR(c.Obj(root, "spec", rp, &spec));
  if (spec != nullptr) {
    const Path sp = rp.Key("spec");
    GPUSCHED_RETURN_IF_ERROR(c.Bool(*spec, "unschedulable", sp, &node->unschedulable));
    GPUSCHED_RETURN_IF_ERROR(c.EachObjInto(
        *spec, "taints", sp, &node->taints,
        [&](const json::object& o, const Path& ip, Taint& t) -> Status {
          std::string_view key;
          std::string_view value;
          GPUSCHED_RETURN_IF_ERROR(c.StrView(o, "key", ip, &key));
          GPUSCHED_RETURN_IF_ERROR(c.StrView(o, "value", ip, &value));
          if (key.empty()) return c.Error(ip.Key("key"), "required");
          t.key = common::Intern(key);
          t.value = common::Intern(value);
          return DecodeEffect(c, o, ip, false, &t.effect);
        }));
  }

  const json::object* status = nullptr;
  GPUSCHED_RETURN_IF_ERROR(c.Obj(root, "status", rp, &status));
  if (status != nullptr) {
    const Path tp = rp.Key("status");
    GPUSCHED_RETURN_IF_ERROR(DecodeResources(c, *status, "capacity", tp, &node->capacity));
    GPUSCHED_RETURN_IF_ERROR(DecodeResources(c, *status, "allocatable", tp, &node->allocatable));
    GPUSCHED_RETURN_IF_ERROR(DecodeConditions(c, *status, tp, &node->conditions));
  }

  DeriveNodeGpuInfo(*node);
  return Status::Ok();
}

Status NotAnObject(std::string_view kind, const json::value& v) {
  std::string msg(kind);
  msg += ": expected object, got ";
  msg += KindName(v);
  return common::InvalidArgumentError(std::move(msg));
}

// ---------------------------------------------------------------------------------------------
// Manifests

Status DecodeDocument(json::value& doc, std::vector<Object>* out, int depth);

Status DecodeItems(json::object& list, std::string_view list_kind, std::vector<Object>* out,
                   int depth) {
  json::value* items = list.if_contains("items");
  if (items == nullptr || items->is_null()) return Status::Ok();
  json::array* a = items->if_array();
  if (a == nullptr) {
    return common::InvalidArgumentError(std::string(list_kind) + ": items: expected array, got " +
                                        std::string(KindName(*items)));
  }
  // Items of a typed list may omit their kind ("PodList" items are pods).
  std::string_view item_kind;
  if (list_kind.size() > 4 && list_kind != "List") {
    item_kind = list_kind.substr(0, list_kind.size() - 4);
  }
  for (size_t i = 0; i < a->size(); ++i) {
    json::value& item = (*a)[i];
    if (json::object* o = item.if_object(); o != nullptr && !item_kind.empty()) {
      json::value* k = o->if_contains("kind");
      if (k == nullptr || k->is_null()) (*o)["kind"] = item_kind;
    }
    Status s = DecodeDocument(item, out, depth + 1);
    if (!s.ok()) return s.WithContext("items[" + std::to_string(i) + "]");
  }
  return Status::Ok();
}

Status DecodeDocument(json::value& doc, std::vector<Object>* out, int depth) {
  json::object* o = doc.if_object();
  if (o == nullptr) return NotAnObject("document", doc);
  std::string_view kind;
  if (const json::value* k = o->if_contains("kind")) {
    if (const json::string* s = k->if_string()) kind = *s;
  }
  if (kind.empty()) return common::InvalidArgumentError("missing \"kind\"");
  if (kind == "Pod") {
    Pod pod;
    GPUSCHED_RETURN_IF_ERROR(DecodePodInto(*o, &pod));
    out->emplace_back(std::move(pod));
    return Status::Ok();
  }
  if (kind == "Node") {
    Node node;
    GPUSCHED_RETURN_IF_ERROR(DecodeNodeInto(*o, &node));
    out->emplace_back(std::move(node));
    return Status::Ok();
  }
  if (common::EndsWith(kind, "List") && o->contains("items")) {
    if (depth > 8) return common::InvalidArgumentError("lists nested too deeply");
    std::string list_kind(kind);  // `kind` points into *o, which the items loop may change
    return DecodeItems(*o, list_kind, out, depth);
  }
  OtherObject other;
  other.kind = std::string(kind);
  if (const json::value* v = o->if_contains("apiVersion")) {
    if (const json::string* s = v->if_string()) other.api_version = std::string(*s);
  }
  if (const json::value* m = o->if_contains("metadata")) {
    if (const json::object* mo = m->if_object()) {
      if (const json::value* n = mo->if_contains("name")) {
        if (const json::string* s = n->if_string()) other.name = std::string(*s);
      }
    }
  }
  other.json = std::move(doc);
  out->emplace_back(std::move(other));
  return Status::Ok();
}

bool LooksLikeJson(std::string_view text) {
  for (char ch : text) {
    if (ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r') continue;
    return ch == '{' || ch == '[';
  }
  return false;
}

}  // namespace

common::StatusOr<Pod> DecodePod(const boost::json::value& json) {
  const json::object* o = json.if_object();
  if (o == nullptr) return NotAnObject("pod", json);
  Pod pod;
  GPUSCHED_RETURN_IF_ERROR(DecodePodInto(*o, &pod));
  return pod;
}

common::StatusOr<Node> DecodeNode(const boost::json::value& json) {
  const json::object* o = json.if_object();
  if (o == nullptr) return NotAnObject("node", json);
  Node node;
  GPUSCHED_RETURN_IF_ERROR(DecodeNodeInto(*o, &node));
  return node;
}

namespace {

// Feeds `text` to `p` (a fresh or reset parser) and finishes it; the error names `source` and the
// line, column and offset. The value is then p.release().
common::Status ParseInto(json::stream_parser& p, std::string_view text, std::string_view source) {
  auto error = [&](size_t offset, std::string_view why) {
    size_t line = 1;
    size_t column = 1;
    for (size_t i = 0; i < offset && i < text.size(); ++i) {
      if (text[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    std::string msg(source);
    msg += ": invalid JSON at line " + std::to_string(line) + ", column " +
           std::to_string(column) + " (offset " + std::to_string(offset) + "): ";
    msg += why;
    return common::InvalidArgumentError(std::move(msg));
  };
  try {
    boost::system::error_code ec;
    size_t n = p.write_some(text.data(), text.size(), ec);
    if (ec) return error(n, ec.message());
    for (size_t i = n; i < text.size(); ++i) {
      char ch = text[i];
      if (ch != ' ' && ch != '\t' && ch != '\n' && ch != '\r') {
        return error(i, "unexpected data after the JSON value");
      }
    }
    p.finish(ec);
    if (ec) return error(text.size(), ec.message());
    return common::Status::Ok();
  } catch (const std::exception& e) {  // only std::bad_alloc is expected here
    return error(0, e.what());
  }
}

json::parse_options ApiParseOptions() {
  json::parse_options opts;
  opts.max_depth = 128;  // managedFields nest deeper than Boost's default of 32
  return opts;
}

}  // namespace

common::StatusOr<boost::json::value> ParseJson(std::string_view text, std::string_view source,
                                               boost::json::storage_ptr storage) {
  try {
    json::stream_parser p(json::storage_ptr(), ApiParseOptions());
    p.reset(std::move(storage));
    GPUSCHED_RETURN_IF_ERROR(ParseInto(p, text, source));
    return p.release();
  } catch (const std::exception& e) {  // std::bad_alloc
    return common::ResourceExhaustedError(std::string(source) + ": " + e.what());
  }
}

struct JsonParser::Impl {
  explicit Impl(size_t arena_bytes)
      : buffer(new unsigned char[arena_bytes]),
        arena(buffer.get(), arena_bytes),
        parser(json::storage_ptr(), ApiParseOptions()) {}
  std::unique_ptr<unsigned char[]> buffer;
  json::monotonic_resource arena;
  json::stream_parser parser;
  json::value value;
};

JsonParser::JsonParser(size_t arena_bytes) : impl_(std::make_unique<Impl>(arena_bytes)) {}
JsonParser::~JsonParser() = default;

common::StatusOr<const boost::json::value*> JsonParser::Parse(std::string_view text,
                                                              std::string_view source) {
  Impl& m = *impl_;
  m.value = nullptr;  // release the previous value before the arena it lives in
  m.arena.release();
  try {
    m.parser.reset(json::storage_ptr(&m.arena));
    common::Status s = ParseInto(m.parser, text, source);
    if (!s.ok()) {
      m.parser.reset();
      return s;
    }
    m.value = m.parser.release();
    return &m.value;
  } catch (const std::exception& e) {  // std::bad_alloc
    return common::ResourceExhaustedError(std::string(source) + ": " + e.what());
  }
}

common::StatusOr<std::vector<Object>> DecodeManifests(std::string_view text,
                                                      std::string_view source) {
  std::vector<json::value> docs;
  Status json_error;
  if (LooksLikeJson(text)) {
    auto v = ParseJson(text, source);
    if (v.ok()) {
      if (json::array* a = v->if_array()) {
        docs.assign(std::make_move_iterator(a->begin()), std::make_move_iterator(a->end()));
      } else {
        docs.push_back(std::move(*v));
      }
    } else {
      json_error = std::move(v).status();
    }
  }
  if (docs.empty()) {
    // YAML (a flow-style YAML document may look like JSON). When JSON-looking text is neither,
    // the JSON error is the more useful one.
    auto yaml = ParseYamlDocuments(text, source);
    if (!yaml.ok()) return json_error.ok() ? std::move(yaml).status() : json_error;
    docs = std::move(*yaml);
  }
  std::vector<Object> out;
  out.reserve(docs.size());
  for (size_t i = 0; i < docs.size(); ++i) {
    Status s = DecodeDocument(docs[i], &out, 0);
    if (!s.ok()) {
      return s.WithContext(std::string(source) + ": document " + std::to_string(i + 1));
    }
  }
  return out;
}

}  // namespace gpusched::api
