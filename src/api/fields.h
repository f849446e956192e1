// SPDX-License-Identifier: Apache-2.0
// The one reader of decoded JSON/YAML documents: Kubernetes objects (decode.h), the scheduler
// config, the NetworkAware CRDs, plugin args, HPA specs and policy files all walk their
// boost::json::value through a JsonReader. It
//
//   - returns values (std::optional, or a pointer that is null when absent) and never takes
//     out-parameters;
//   - records every error with its field path and goes on, so one pass reports all the mistakes
//     of a document, in document order:
//       spec.containers[2].resources.limits[nvidia.com/gpu]: invalid quantity "two"
//   - builds no text while a document decodes cleanly: a FieldPath is a chain of string_views
//     linked to its parent on the stack, spelled out only when an error is recorded.
//
// Absent and null members read as "not there" (std::nullopt, nullptr) without an error; a member
// of the wrong type reads as not there and records an error. Values read with As*() (array
// elements, map values) must have the wanted type, null included.
//
// Each decoder keeps its own wording and path spelling (existing tests and users compare them)
// through a Dialect: how a type error, an integer out of range and a bad quantity read, and how
// member names join (PathStyle).
//
// Thread-safety: FieldPath and Dialect are immutable values; a JsonReader, FieldErrors or
// ObjectFields is not thread-safe (one per document being decoded).
#ifndef GPUSCHED_SRC_API_FIELDS_H_
#define GPUSCHED_SRC_API_FIELDS_H_

#include <boost/json.hpp>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/api/quantity.h"
#include "src/common/status.h"

namespace gpusched::api {

// How member names join a path.
enum class PathStyle : uint8_t {
  kDotted,     // a.b[0].c: every name as is (policy files, HPA specs, CRDs, plugin args)
  kBracketed,  // names holding '.' or '/' in brackets: limits[nvidia.com/gpu] (Kubernetes objects)
  kQuoted,     // names other than [A-Za-z0-9_-]+ quoted: a."b c" (the scheduler config)
};

// A place in a JSON document: the root, or one step (a member name or an array index) below its
// parent. Steps live on the stack and point at their parent and at the member name (a
// string_view into the document or a literal), so descending allocates nothing. A FieldPath must
// not outlive its parent or the name it was given: children are made only from named paths (see
// Key), and passed down or kept as named locals.
class FieldPath {
 public:
  constexpr FieldPath() = default;  // the document root, spelled ""
  // A root spelled `text` verbatim: a path formatted earlier ("profiles[0]", "spec.rules").
  static constexpr FieldPath Text(std::string_view text) {
    FieldPath p;
    p.name_ = text;
    p.kind_ = Kind::kText;
    return p;
  }

  // The child steps. Only a named path has children: a child of a temporary would dangle, so
  // p.Key("a").Key("b") does not compile (name the middle step).
  FieldPath Key(std::string_view name) const& { return FieldPath(this, name, Kind::kKey, 0); }
  FieldPath At(size_t index) const& { return FieldPath(this, {}, Kind::kIndex, index); }
  FieldPath Key(std::string_view name) const&& = delete;
  FieldPath At(size_t index) const&& = delete;

  std::string ToString(PathStyle style) const;
  void AppendTo(PathStyle style, std::string& out) const;

 private:
  enum class Kind : uint8_t { kRoot, kText, kKey, kIndex };
  constexpr FieldPath(const FieldPath* parent, std::string_view name, Kind kind, size_t index)
      : parent_(parent), name_(name), index_(index), kind_(kind) {}

  const FieldPath* parent_ = nullptr;
  std::string_view name_;
  size_t index_ = 0;
  Kind kind_ = Kind::kRoot;
};

// The errors of one document, each "path: message" (just the message at the root), in the order
// they were found.
class FieldErrors {
 public:
  void Add(std::string error) { errors_.push_back(std::move(error)); }
  void Add(std::string_view path, std::string_view message);
  bool empty() const { return errors_.empty(); }
  size_t size() const { return errors_.size(); }
  const std::vector<std::string>& list() const { return errors_; }
  std::vector<std::string> Take() { return std::move(errors_); }
  // "e1; e2; ...".
  std::string Join() const;
  // OK when empty; otherwise InvalidArgument "subject: e1; e2; ..." ("e1; e2" without a subject).
  common::Status ToStatus(std::string_view subject = {}) const;

 private:
  std::vector<std::string> errors_;
};

// The JSON types a reader asks for, as named in type errors.
enum class JsonType : uint8_t { kObject, kArray, kString, kBool, kInteger, kNumber, kQuantity };

// One decoder's wording. The functions build the message of an error (without the path); they
// run only when the error is recorded.
struct Dialect {
  PathStyle path_style = PathStyle::kDotted;
  // `got` is not of type `want` (for kNumber: also a non-finite double).
  std::string (*type_error)(JsonType want, const boost::json::value& got) = nullptr;
  // `got` is an integer outside [lo, hi]; `value` is it when it fits in int64.
  std::string (*range_error)(const boost::json::value& got, std::optional<int64_t> value,
                             int64_t lo, int64_t hi) = nullptr;
  // `got` is a string or number that Quantity::Parse rejects with `why` ("invalid quantity
  // \"x\": ..."). nullptr: the message is `why`.
  std::string (*quantity_error)(const boost::json::value& got, std::string_view why) = nullptr;
  // Member names also match case-insensitively when none matches exactly, as Go's encoding/json
  // decodes struct fields (the extender's wire types, whose Go structs have no JSON tags).
  bool fold_case = false;
};

// Reads members and values of one document, recording errors in the dialect's wording.
class JsonReader {
 public:
  explicit JsonReader(const Dialect& dialect) : dialect_(&dialect) {}

  const Dialect& dialect() const { return *dialect_; }
  PathStyle style() const { return dialect_->path_style; }
  std::string Spell(const FieldPath& path) const { return path.ToString(style()); }

  // Records `message` at `path`.
  void Error(const FieldPath& path, std::string_view message);
  void TypeError(const FieldPath& path, JsonType want, const boost::json::value& got);
  bool ok() const { return errors_.empty(); }
  size_t error_count() const { return errors_.size(); }
  const FieldErrors& errors() const { return errors_; }
  FieldErrors& errors() { return errors_; }

  // Records "unknown field" at path.key for each member of `o` not in `known`, with a
  // ` (did you mean "x"?)` hint when one of `known` is close: the one unknown-field check of the
  // strict readers (the scheduler config, plugin args, policy files; see also ObjectFields).
  void CheckKnownFields(const boost::json::object& o, const FieldPath& path,
                        std::span<const std::string_view> known);

  // Member `key` of `o`; nullptr when absent or null. Records nothing.
  static const boost::json::value* Member(const boost::json::object& o, std::string_view key) {
    const boost::json::value* v = o.if_contains(key);
    return v == nullptr || v->is_null() ? nullptr : v;
  }
  // Member() as this reader's dialect matches names (Dialect::fold_case).
  const boost::json::value* Find(const boost::json::object& o, std::string_view key) const {
    const boost::json::value* v = o.if_contains(key);
    if (v == nullptr && dialect_->fold_case) v = FindFoldingCase(o, key);
    return v == nullptr || v->is_null() ? nullptr : v;
  }

  // Member readers: absent and null read as nullopt/nullptr without an error; a member of
  // another type records an error at parent.key and reads as absent. (Inline: the decoders of
  // the informers' hot path call them once per field.)
  const boost::json::object* Object(const boost::json::object& o, std::string_view key,
                                    const FieldPath& parent) {
    const boost::json::value* v = Find(o, key);
    if (v == nullptr) return nullptr;
    if (const boost::json::object* r = v->if_object()) return r;
    TypeError(parent.Key(key), JsonType::kObject, *v);
    return nullptr;
  }
  const boost::json::array* Array(const boost::json::object& o, std::string_view key,
                                  const FieldPath& parent) {
    const boost::json::value* v = Find(o, key);
    if (v == nullptr) return nullptr;
    if (const boost::json::array* r = v->if_array()) return r;
    TypeError(parent.Key(key), JsonType::kArray, *v);
    return nullptr;
  }
  std::optional<std::string_view> String(const boost::json::object& o, std::string_view key,
                                         const FieldPath& parent) {
    const boost::json::value* v = Find(o, key);
    if (v == nullptr) return std::nullopt;
    if (const boost::json::string* r = v->if_string()) return std::string_view(*r);
    TypeError(parent.Key(key), JsonType::kString, *v);
    return std::nullopt;
  }
  // String() with absent, null and type errors read as "".
  std::string_view StringOr(const boost::json::object& o, std::string_view key,
                            const FieldPath& parent) {
    return String(o, key, parent).value_or(std::string_view());
  }
  std::optional<bool> Bool(const boost::json::object& o, std::string_view key,
                           const FieldPath& parent) {
    const boost::json::value* v = Find(o, key);
    if (v == nullptr) return std::nullopt;
    if (const bool* r = v->if_bool()) return *r;
    TypeError(parent.Key(key), JsonType::kBool, *v);
    return std::nullopt;
  }
  // An integer within [lo, hi]: a JSON integer or an integral double (YAML "2.0", JSON 1e3).
  std::optional<int64_t> Int(const boost::json::object& o, std::string_view key,
                             const FieldPath& parent,
                             int64_t lo = std::numeric_limits<int64_t>::min(),
                             int64_t hi = std::numeric_limits<int64_t>::max()) {
    const boost::json::value* v = Find(o, key);
    if (v == nullptr) return std::nullopt;
    return AsInt(*v, parent.Key(key), lo, hi);
  }
  // Any finite number.
  std::optional<double> Number(const boost::json::object& o, std::string_view key,
                               const FieldPath& parent) {
    const boost::json::value* v = Find(o, key);
    if (v == nullptr) return std::nullopt;
    return AsNumber(*v, parent.Key(key));
  }
  // A resource.Quantity, given as a string ("500m", "2Gi") or a number (YAML "cpu: 2").
  std::optional<Quantity> QuantityOf(const boost::json::object& o, std::string_view key,
                                     const FieldPath& parent) {
    const boost::json::value* v = Find(o, key);
    if (v == nullptr) return std::nullopt;
    return AsQuantity(*v, parent.Key(key));
  }

  // Value readers: `v` must have the wanted type (null is an error too).
  const boost::json::object* AsObject(const boost::json::value& v, const FieldPath& path) {
    if (const boost::json::object* r = v.if_object()) return r;
    TypeError(path, JsonType::kObject, v);
    return nullptr;
  }
  const boost::json::array* AsArray(const boost::json::value& v, const FieldPath& path) {
    if (const boost::json::array* r = v.if_array()) return r;
    TypeError(path, JsonType::kArray, v);
    return nullptr;
  }
  std::optional<std::string_view> AsString(const boost::json::value& v, const FieldPath& path) {
    if (const boost::json::string* r = v.if_string()) return std::string_view(*r);
    TypeError(path, JsonType::kString, v);
    return std::nullopt;
  }
  std::optional<int64_t> AsInt(const boost::json::value& v, const FieldPath& path,
                               int64_t lo = std::numeric_limits<int64_t>::min(),
                               int64_t hi = std::numeric_limits<int64_t>::max()) {
    if (const int64_t* i = v.if_int64(); i != nullptr && *i >= lo && *i <= hi) return *i;
    return AsIntSlow(v, path, lo, hi);
  }
  std::optional<double> AsNumber(const boost::json::value& v, const FieldPath& path);
  std::optional<Quantity> AsQuantity(const boost::json::value& v, const FieldPath& path);

  // Calls fn(element, element path) for each element of the array member `key` (absent or null:
  // none).
  template <typename Fn>
  void ForEachElement(const boost::json::object& o, std::string_view key, const FieldPath& parent,
                      Fn&& fn) {
    const boost::json::array* a = Array(o, key, parent);
    if (a == nullptr) return;
    const FieldPath ap = parent.Key(key);
    for (size_t i = 0; i < a->size(); ++i) {
      const FieldPath ip = ap.At(i);
      fn((*a)[i], ip);
    }
  }
  // ForEachElement over the elements that are objects (resp. strings); the others record an
  // error and are skipped.
  template <typename Fn>
  void ForEachObject(const boost::json::object& o, std::string_view key, const FieldPath& parent,
                     Fn&& fn) {
    ForEachElement(o, key, parent, [&](const boost::json::value& v, const FieldPath& ip) {
      if (const boost::json::object* e = AsObject(v, ip)) fn(*e, ip);
    });
  }
  template <typename Fn>
  void ForEachString(const boost::json::object& o, std::string_view key, const FieldPath& parent,
                     Fn&& fn) {
    ForEachElement(o, key, parent, [&](const boost::json::value& v, const FieldPath& ip) {
      if (std::optional<std::string_view> s = AsString(v, ip)) fn(*s, ip);
    });
  }

  // One T per object element of the array member `key`: fn(element, element path) -> T.
  // Elements that are not objects record an error and give nothing.
  template <typename T, typename Fn>
  std::vector<T> MapObjects(const boost::json::object& o, std::string_view key,
                            const FieldPath& parent, Fn&& fn) {
    std::vector<T> out;
    if (const boost::json::value* v = o.if_contains(key); v != nullptr && v->is_array()) {
      out.reserve(v->get_array().size());
    }
    ForEachObject(o, key, parent, [&](const boost::json::object& e, const FieldPath& ip) {
      out.push_back(fn(e, ip));
    });
    return out;
  }

 private:
  std::optional<int64_t> AsIntSlow(const boost::json::value& v, const FieldPath& path, int64_t lo,
                                   int64_t hi);
  static const boost::json::value* FindFoldingCase(const boost::json::object& o,
                                                   std::string_view key);

  const Dialect* dialect_;
  FieldErrors errors_;
};

// The members of one object of a strict document (plugin args), read by name: each read marks its
// member as declared, and Finish() (or the destructor) records "unknown field" (with a "did you
// mean" hint among the declared names) for every member of the object that no read asked for. So
// a decoder declares the fields of an object once, by reading them; a member accepted but not
// read (type meta) is declared with Allow().
//
//   ObjectFields f(reader, object, path);
//   f.Allow({"apiVersion", "kind"});
//   if (std::optional<int64_t> w = f.Int("weight", 1, 100)) ...
//
// Reads behave as JsonReader's member readers at path().Key(key). `object`, `path` and the
// names given must outlive it (a FieldPath is made on the stack: see FieldPath).
class ObjectFields {
 public:
  ObjectFields(JsonReader& reader, const boost::json::object& object, const FieldPath& path)
      : reader_(reader), object_(object), path_(path) {}
  ObjectFields(const ObjectFields&) = delete;
  ObjectFields& operator=(const ObjectFields&) = delete;
  ~ObjectFields() { Finish(); }

  JsonReader& reader() { return reader_; }
  const FieldPath& path() const { return path_; }
  const boost::json::object& object() const { return object_; }

  // Declares members without reading them.
  void Allow(std::initializer_list<std::string_view> keys) {
    declared_.insert(declared_.end(), keys.begin(), keys.end());
  }
  // Member `key` (declared); nullptr when absent or null.
  const boost::json::value* Value(std::string_view key) {
    Declare(key);
    return JsonReader::Member(object_, key);
  }
  // Records `message` at path().key.
  void Error(std::string_view key, std::string_view message) {
    reader_.Error(path_.Key(key), message);
  }

  const boost::json::object* Object(std::string_view key) {
    Declare(key);
    return reader_.Object(object_, key, path_);
  }
  const boost::json::array* Array(std::string_view key) {
    Declare(key);
    return reader_.Array(object_, key, path_);
  }
  std::optional<std::string_view> String(std::string_view key) {
    Declare(key);
    return reader_.String(object_, key, path_);
  }
  // A string member that must be there and not be "": records "required" when it is absent, null
  // or "" (a member of another type has its type error instead) and reads as nullopt then.
  std::optional<std::string_view> RequiredString(std::string_view key) {
    const size_t errors_before = reader_.error_count();
    std::optional<std::string_view> s = String(key);
    if (s && !s->empty()) return s;
    if (reader_.error_count() == errors_before) Error(key, "required");
    return std::nullopt;
  }
  std::optional<bool> Bool(std::string_view key) {
    Declare(key);
    return reader_.Bool(object_, key, path_);
  }
  std::optional<int64_t> Int(std::string_view key, int64_t lo = std::numeric_limits<int64_t>::min(),
                             int64_t hi = std::numeric_limits<int64_t>::max()) {
    Declare(key);
    return reader_.Int(object_, key, path_, lo, hi);
  }
  std::optional<double> Number(std::string_view key) {
    Declare(key);
    return reader_.Number(object_, key, path_);
  }
  // fn(element, element path) for each object element of the array member `key`.
  template <typename Fn>
  void ForEachObject(std::string_view key, Fn&& fn) {
    Declare(key);
    reader_.ForEachObject(object_, key, path_, std::forward<Fn>(fn));
  }
  // fn(element, element path) for each string element of the array member `key`.
  template <typename Fn>
  void ForEachString(std::string_view key, Fn&& fn) {
    Declare(key);
    reader_.ForEachString(object_, key, path_, std::forward<Fn>(fn));
  }

  // Records the unknown members (once).
  void Finish();

 private:
  void Declare(std::string_view key) { declared_.push_back(key); }

  JsonReader& reader_;
  const boost::json::object& object_;
  const FieldPath& path_;
  std::vector<std::string_view> declared_;
  bool finished_ = false;
};

// The wording of gpusched's own documents (deletion-cost policy files, the HPA specs `gpusched hpa`
// reads, the simulator's workload controllers), with dotted paths:
//
//   policies[0].terms[4].weight: want a number, got "ten"
//   spec.maxReplicas: must be in [1, 100], got 0
const Dialect& PlainDialect();
// What a type error says is wanted: "an object", "a list", "a string", "true or false",
// "an integer", "a number", "a quantity" (the plain dialect: "want <it>, got <value>").
std::string_view WantedTypeName(JsonType want);
// A value for an error message: a quoted string, or its JSON text cut at 60 characters.
std::string DescribeValue(const boost::json::value& v);

}  // namespace gpusched::api

#endif  // GPUSCHED_SRC_API_FIELDS_H_
