// SPDX-License-Identifier: Apache-2.0
#include "src/cel/value.h"

#include <cmath>
#include <cstdio>

#include "src/cel/semver.h"

namespace gpusched::cel {

Value Value::Owned(Kind k, std::string s) {
  auto owned = std::make_shared<const std::string>(std::move(s));
  Value v(k);
  v.text_ = *owned;
  v.owner_ = std::move(owned);
  return v;
}

Value Value::List(std::shared_ptr<const ListValue> list) {
  Value v(Kind::kList);
  v.ptr_ = list.get();
  v.owner_ = std::move(list);
  return v;
}

Value Value::ListView(const ListValue* list) {
  Value v(Kind::kList);
  v.ptr_ = list;
  return v;
}

Value Value::Map(std::shared_ptr<const MapValue> map) {
  Value v(Kind::kMap);
  v.ptr_ = map.get();
  v.owner_ = std::move(map);
  return v;
}

Value Value::MapView(const MapValue* map) {
  Value v(Kind::kMap);
  v.ptr_ = map;
  return v;
}

Value Value::Quantity(api::Quantity q) {
  auto owned = std::make_shared<const api::Quantity>(q);
  Value v(Kind::kQuantity);
  v.ptr_ = owned.get();
  v.owner_ = std::move(owned);
  return v;
}

Value Value::QuantityView(const api::Quantity* q) {
  Value v(Kind::kQuantity);
  v.ptr_ = q;
  return v;
}

std::string_view Value::TypeName() const {
  switch (kind_) {
    case Kind::kNull: return "null_type";
    case Kind::kBool: return "bool";
    case Kind::kInt: return "int";
    case Kind::kUint: return "uint";
    case Kind::kDouble: return "double";
    case Kind::kString: return "string";
    case Kind::kBytes: return "bytes";
    case Kind::kList: return "list";
    case Kind::kMap: return "map";
    case Kind::kType: return "type";
    case Kind::kQuantity: return "kubernetes.Quantity";
    case Kind::kSemver: return "kubernetes.Semver";
    case Kind::kError: return "error";
  }
  return "unknown";
}

bool MapValue::Contains(const Value& key) const {
  Value unused;
  return Find(key, &unused);
}

bool VectorMap::Find(const Value& key, Value* out) const {
  for (const auto& [k, v] : entries_) {
    if (Equal(k, key)) {
      *out = v;
      return true;
    }
  }
  return false;
}

bool VectorMap::Insert(Value key, Value value) {
  Value unused;
  if (Find(key, &unused)) return false;
  entries_.emplace_back(std::move(key), std::move(value));
  return true;
}

namespace {

bool IsNumber(Kind k) { return k == Kind::kInt || k == Kind::kUint || k == Kind::kDouble; }

int Sign3(bool less, bool greater) { return less ? -1 : (greater ? 1 : 0); }

// cel-go's cross-type numeric comparisons (common/types/compare.go).
int CompareIntUint(int64_t i, uint64_t u) {
  if (i < 0) return -1;
  return Sign3(static_cast<uint64_t>(i) < u, static_cast<uint64_t>(i) > u);
}

int CompareDouble(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return 2;
  return Sign3(a < b, a > b);
}

int CompareIntDouble(int64_t i, double d) {
  if (std::isnan(d)) return 2;
  if (d < -9223372036854775808.0) return 1;
  if (d > 9223372036854775808.0) return -1;
  return CompareDouble(static_cast<double>(i), d);
}

int CompareUintDouble(uint64_t u, double d) {
  if (std::isnan(d)) return 2;
  if (d < 0) return 1;
  if (d > 18446744073709551616.0) return -1;
  return CompareDouble(static_cast<double>(u), d);
}

int CompareNumbers(const Value& a, const Value& b) {
  switch (a.kind()) {
    case Kind::kInt:
      if (b.kind() == Kind::kInt) return Sign3(a.int_value() < b.int_value(), a.int_value() > b.int_value());
      if (b.kind() == Kind::kUint) return CompareIntUint(a.int_value(), b.uint_value());
      return CompareIntDouble(a.int_value(), b.double_value());
    case Kind::kUint:
      if (b.kind() == Kind::kUint) {
        return Sign3(a.uint_value() < b.uint_value(), a.uint_value() > b.uint_value());
      }
      if (b.kind() == Kind::kInt) return -CompareIntUint(b.int_value(), a.uint_value());
      return CompareUintDouble(a.uint_value(), b.double_value());
    default: {
      if (b.kind() == Kind::kDouble) return CompareDouble(a.double_value(), b.double_value());
      int c = b.kind() == Kind::kInt ? CompareIntDouble(b.int_value(), a.double_value())
                                     : CompareUintDouble(b.uint_value(), a.double_value());
      return c == 2 ? 2 : -c;
    }
  }
}

bool ListsEqual(const ListValue& a, const ListValue& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!Equal(a.at(i), b.at(i))) return false;
  }
  return true;
}

bool MapsEqual(const MapValue& a, const MapValue& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    Value key = a.KeyAt(i);
    Value va;
    Value vb;
    if (!a.Find(key, &va) || !b.Find(key, &vb) || !Equal(va, vb)) return false;
  }
  return true;
}

}  // namespace

bool Equal(const Value& a, const Value& b) {
  if (IsNumber(a.kind()) && IsNumber(b.kind())) return CompareNumbers(a, b) == 0;
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Kind::kNull: return true;
    case Kind::kBool: return a.bool_value() == b.bool_value();
    case Kind::kString:
    case Kind::kBytes:
    case Kind::kType:
    case Kind::kError: return a.text() == b.text();
    case Kind::kList: return ListsEqual(a.list(), b.list());
    case Kind::kMap: return MapsEqual(a.map(), b.map());
    case Kind::kQuantity: return a.quantity().Compare(b.quantity()) == 0;
    case Kind::kSemver: return CompareSemver(a.text(), b.text()) == 0;
    default: return false;
  }
}

bool Compare(const Value& a, const Value& b, int* out) {
  if (IsNumber(a.kind()) && IsNumber(b.kind())) {
    *out = CompareNumbers(a, b);
    return true;
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Kind::kBool: *out = Sign3(!a.bool_value() && b.bool_value(), a.bool_value() && !b.bool_value()); return true;
    case Kind::kString:
    case Kind::kBytes: {
      int c = a.text().compare(b.text());
      *out = Sign3(c < 0, c > 0);
      return true;
    }
    default: return false;
  }
}

namespace {

void AppendQuoted(std::string& out, std::string_view s) {
  out += '"';
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  out += '"';
}

}  // namespace

std::string DebugString(const Value& v) {
  switch (v.kind()) {
    case Kind::kNull: return "null";
    case Kind::kBool: return v.bool_value() ? "true" : "false";
    case Kind::kInt: return std::to_string(v.int_value());
    case Kind::kUint: return std::to_string(v.uint_value()) + "u";
    case Kind::kDouble: {
      char buf[64];
      std::snprintf(buf, sizeof(buf), "%.17g", v.double_value());
      return buf;
    }
    case Kind::kString: {
      std::string out;
      AppendQuoted(out, v.text());
      return out;
    }
    case Kind::kBytes: {
      std::string out = "b";
      AppendQuoted(out, v.text());
      return out;
    }
    case Kind::kList: {
      std::string out = "[";
      for (size_t i = 0; i < v.list().size(); ++i) {
        if (i > 0) out += ", ";
        out += DebugString(v.list().at(i));
      }
      return out + "]";
    }
    case Kind::kMap: {
      std::string out = "{";
      for (size_t i = 0; i < v.map().size(); ++i) {
        if (i > 0) out += ", ";
        Value key = v.map().KeyAt(i);
        Value val;
        v.map().Find(key, &val);
        out += DebugString(key) + ": " + DebugString(val);
      }
      return out + "}";
    }
    case Kind::kType: return std::string(v.text());
    case Kind::kQuantity: return "quantity(\"" + v.quantity().ToString() + "\")";
    case Kind::kSemver: return "semver(\"" + std::string(v.text()) + "\")";
    case Kind::kError: return "error: " + std::string(v.text());
  }
  return "?";
}

}  // namespace gpusched::cel
