// SPDX-License-Identifier: Apache-2.0
// Value: one CEL value as the evaluator sees it (src/cel/README.md). null, bool, int (int64),
// uint (uint64), double, string, bytes, list, map, type, the Kubernetes opaque types quantity and
// semver, and error (an evaluation error travels as a value, so that && and || can absorb it).
//
// A Value either borrows what it points at (a string in the compiled program or in the device
// being matched, a capacity Quantity) or owns it through a shared pointer; copying a borrowing
// Value is a few word copies and no atomic operation. Values are immutable and may be read from
// any thread; a borrowing Value lives no longer than what it borrows (one evaluation).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/api/quantity.h"

namespace gpusched::cel {

enum class Kind : uint8_t {
  kNull,
  kBool,
  kInt,
  kUint,
  kDouble,
  kString,
  kBytes,
  kList,
  kMap,
  kType,
  kQuantity,
  kSemver,
  kError,
};

class Value;

// A list: elements by index.
class ListValue {
 public:
  virtual ~ListValue() = default;
  virtual size_t size() const = 0;
  virtual Value at(size_t i) const = 0;
};

// A map: lookup by key (CEL equality on keys: 1, 1u and 1.0 find the same entry) and iteration
// over its keys in a fixed order.
class MapValue {
 public:
  virtual ~MapValue() = default;
  virtual size_t size() const = 0;
  // True and *out set when `key` is present.
  virtual bool Find(const Value& key, Value* out) const = 0;
  // For `in`: whether `key` is an entry. Find may answer for more keys (a map with a default).
  virtual bool Contains(const Value& key) const;
  virtual Value KeyAt(size_t i) const = 0;
};

class Value {
 public:
  Value() = default;

  static Value Null() { return Value(); }
  static Value Bool(bool b) {
    Value v(Kind::kBool);
    v.b_ = b;
    return v;
  }
  static Value Int(int64_t i) {
    Value v(Kind::kInt);
    v.i_ = i;
    return v;
  }
  static Value Uint(uint64_t u) {
    Value v(Kind::kUint);
    v.u_ = u;
    return v;
  }
  static Value Double(double d) {
    Value v(Kind::kDouble);
    v.d_ = d;
    return v;
  }
  // Borrowed text: `s` outlives the value.
  static Value StringView(std::string_view s) { return WithText(Kind::kString, s); }
  static Value BytesView(std::string_view s) { return WithText(Kind::kBytes, s); }
  static Value String(std::string s) { return Owned(Kind::kString, std::move(s)); }
  static Value Bytes(std::string s) { return Owned(Kind::kBytes, std::move(s)); }
  // A type value; `name` is a static string or owned by the program.
  static Value Type(std::string_view name) { return WithText(Kind::kType, name); }
  static Value Error(std::string message) { return Owned(Kind::kError, std::move(message)); }
  static Value List(std::shared_ptr<const ListValue> list);
  static Value ListView(const ListValue* list);
  static Value Map(std::shared_ptr<const MapValue> map);
  static Value MapView(const MapValue* map);
  static Value Quantity(api::Quantity q);
  static Value QuantityView(const api::Quantity* q);
  // A semantic version; `text` has been validated by ParseSemver.
  static Value SemverView(std::string_view text) { return WithText(Kind::kSemver, text); }
  static Value Semver(std::string text) { return Owned(Kind::kSemver, std::move(text)); }

  Kind kind() const { return kind_; }
  bool is_error() const { return kind_ == Kind::kError; }
  bool bool_value() const { return b_; }
  int64_t int_value() const { return i_; }
  uint64_t uint_value() const { return u_; }
  double double_value() const { return d_; }
  // kString, kBytes, kType (the name), kError (the message), kSemver (the version text).
  std::string_view text() const { return text_; }
  const ListValue& list() const { return *static_cast<const ListValue*>(ptr_); }
  const MapValue& map() const { return *static_cast<const MapValue*>(ptr_); }
  const api::Quantity& quantity() const { return *static_cast<const api::Quantity*>(ptr_); }

  // The CEL type name: "int", "string", "list", "kubernetes.Quantity", ...
  std::string_view TypeName() const;

 private:
  explicit Value(Kind k) : kind_(k) {}
  static Value WithText(Kind k, std::string_view s) {
    Value v(k);
    v.text_ = s;
    return v;
  }
  static Value Owned(Kind k, std::string s);

  Kind kind_ = Kind::kNull;
  union {
    bool b_;
    int64_t i_ = 0;
    uint64_t u_;
    double d_;
    const void* ptr_;
  };
  std::string_view text_;
  std::shared_ptr<const void> owner_;  // keeps text_ or ptr_ alive when owned
};

// A list held in a vector.
class VectorList final : public ListValue {
 public:
  VectorList() = default;
  explicit VectorList(std::vector<Value> elems) : elems_(std::move(elems)) {}
  size_t size() const override { return elems_.size(); }
  Value at(size_t i) const override { return elems_[i]; }
  std::vector<Value>& elems() { return elems_; }

 private:
  std::vector<Value> elems_;
};

// A map held in a vector of entries (keys are unique by CEL equality; linear lookup, as maps
// written in expressions are small).
class VectorMap final : public MapValue {
 public:
  size_t size() const override { return entries_.size(); }
  bool Find(const Value& key, Value* out) const override;
  Value KeyAt(size_t i) const override { return entries_[i].first; }
  // False when `key` is already present.
  bool Insert(Value key, Value value);

 private:
  std::vector<std::pair<Value, Value>> entries_;
};

// CEL equality (heterogeneous: values of different types are unequal, numbers compare by value
// across int, uint and double; NaN equals nothing). REQUIRES: neither is an error.
bool Equal(const Value& a, const Value& b);

// Ordering for <, <=, >, >=: -1, 0 or 1 in *out, false when the kinds cannot be ordered. NaN
// compares as unordered: `*out` is 2.
bool Compare(const Value& a, const Value& b, int* out);

// A debugging / message rendering: 1, 1u, 1.5, "s", b"...", [..], {..}.
std::string DebugString(const Value& v);

}  // namespace gpusched::cel
