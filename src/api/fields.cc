// SPDX-License-Identifier: Apache-2.0
#include "src/api/fields.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "src/common/strings.h"

namespace gpusched::api {

namespace json = boost::json;

// ---------------------------------------------------------------------------------------------
// FieldPath

namespace {

// A member name the scheduler config spells without quotes.
bool IsPlainName(std::string_view name) {
  if (name.empty()) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
  });
}

void AppendName(PathStyle style, std::string_view name, std::string& out) {
  switch (style) {
    case PathStyle::kDotted:
      if (!out.empty()) out += '.';
      out += name;
      return;
    case PathStyle::kBracketed:
      if (name.empty()) return;
      if (name.find_first_of("./") != std::string_view::npos) {
        out += '[';
        out += name;
        out += ']';
        return;
      }
      if (!out.empty()) out += '.';
      out += name;
      return;
    case PathStyle::kQuoted:
      if (!out.empty()) out += '.';
      out += IsPlainName(name) ? std::string(name) : common::Quote(name);
      return;
  }
}

}  // namespace

void FieldPath::AppendTo(PathStyle style, std::string& out) const {
  if (parent_ != nullptr) parent_->AppendTo(style, out);
  switch (kind_) {
    case Kind::kRoot: return;
    case Kind::kText: out += name_; return;
    case Kind::kKey: AppendName(style, name_, out); return;
    case Kind::kIndex:
      out += '[';
      out += std::to_string(index_);
      out += ']';
      return;
  }
}

std::string FieldPath::ToString(PathStyle style) const {
  std::string out;
  AppendTo(style, out);
  return out;
}

// ---------------------------------------------------------------------------------------------
// FieldErrors

void FieldErrors::Add(std::string_view path, std::string_view message) {
  if (path.empty()) {
    errors_.emplace_back(message);
    return;
  }
  std::string e;
  e.reserve(path.size() + 2 + message.size());
  e += path;
  e += ": ";
  e += message;
  errors_.push_back(std::move(e));
}

std::string FieldErrors::Join() const {
  std::string out;
  for (size_t i = 0; i < errors_.size(); ++i) {
    if (i > 0) out += "; ";
    out += errors_[i];
  }
  return out;
}

common::Status FieldErrors::ToStatus(std::string_view subject) const {
  if (errors_.empty()) return common::Status::Ok();
  if (subject.empty()) return common::InvalidArgumentError(Join());
  std::string msg(subject);
  msg += ": ";
  msg += Join();
  return common::InvalidArgumentError(std::move(msg));
}

// ---------------------------------------------------------------------------------------------
// Scalars

namespace {

// The text Quantity::Parse reads for a JSON value: a string as is, a number formatted into `buf`
// (shortest round-trip form). nullopt for other types.
std::optional<std::string_view> QuantityText(const json::value& v, char (&buf)[64]) {
  if (const json::string* s = v.if_string()) return std::string_view(*s);
  std::to_chars_result r{};
  if (const int64_t* i = v.if_int64()) {
    r = std::to_chars(buf, buf + sizeof buf, *i);
  } else if (const uint64_t* u = v.if_uint64()) {
    r = std::to_chars(buf, buf + sizeof buf, *u);
  } else if (const double* d = v.if_double()) {
    r = std::to_chars(buf, buf + sizeof buf, *d);
  } else {
    return std::nullopt;
  }
  if (r.ec != std::errc()) return std::nullopt;
  return std::string_view(buf, static_cast<size_t>(r.ptr - buf));
}

// A JSON value read as an int64: a JSON integer or an integral double that fits.
struct Int64Read {
  enum class Problem : uint8_t { kNone, kNotInteger, kBeyondInt64 };
  Problem problem = Problem::kNone;
  int64_t value = 0;
};

Int64Read ReadInt64(const json::value& v) {
  using Problem = Int64Read::Problem;
  if (const int64_t* i = v.if_int64()) return {Problem::kNone, *i};
  if (const uint64_t* u = v.if_uint64()) {
    if (*u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return {Problem::kBeyondInt64, 0};
    }
    return {Problem::kNone, static_cast<int64_t>(*u)};
  }
  if (const double* d = v.if_double(); d != nullptr && std::isfinite(*d) && std::trunc(*d) == *d) {
    // Range first: converting an out-of-range double to int64 is undefined behaviour.
    constexpr double kTwo63 = 9223372036854775808.0;
    if (*d < -kTwo63 || *d >= kTwo63) return {Problem::kBeyondInt64, 0};
    return {Problem::kNone, static_cast<int64_t>(*d)};
  }
  return {Problem::kNotInteger, 0};
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// JsonReader

void JsonReader::Error(const FieldPath& path, std::string_view message) {
  errors_.Add(path.ToString(style()), message);
}

void JsonReader::TypeError(const FieldPath& path, JsonType want, const json::value& got) {
  Error(path, dialect_->type_error(want, got));
}

void JsonReader::CheckKnownFields(const json::object& o, const FieldPath& path,
                                  std::span<const std::string_view> known) {
  for (const auto& kv : o) {
    const std::string_view key = kv.key();
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    std::string message = "unknown field";
    if (std::string near = common::ClosestName(key, known); !near.empty()) {
      message += " (did you mean " + common::Quote(near) + "?)";
    }
    Error(path.Key(key), message);
  }
}

const json::value* JsonReader::FindFoldingCase(const json::object& o, std::string_view key) {
  for (const auto& kv : o) {
    if (common::EqualsIgnoreCase(kv.key(), key)) return &kv.value();
  }
  return nullptr;
}

std::optional<int64_t> JsonReader::AsIntSlow(const json::value& v, const FieldPath& path,
                                             int64_t lo, int64_t hi) {
  const Int64Read read = ReadInt64(v);
  switch (read.problem) {
    case Int64Read::Problem::kNotInteger:
      TypeError(path, JsonType::kInteger, v);
      return std::nullopt;
    case Int64Read::Problem::kBeyondInt64:
      Error(path, dialect_->range_error(v, std::nullopt, lo, hi));
      return std::nullopt;
    case Int64Read::Problem::kNone: break;
  }
  if (read.value < lo || read.value > hi) {
    Error(path, dialect_->range_error(v, read.value, lo, hi));
    return std::nullopt;
  }
  return read.value;
}

std::optional<double> JsonReader::AsNumber(const json::value& v, const FieldPath& path) {
  if (const int64_t* i = v.if_int64()) return static_cast<double>(*i);
  if (const uint64_t* u = v.if_uint64()) return static_cast<double>(*u);
  if (const double* d = v.if_double(); d != nullptr && std::isfinite(*d)) return *d;
  TypeError(path, JsonType::kNumber, v);
  return std::nullopt;
}

std::optional<Quantity> JsonReader::AsQuantity(const json::value& v, const FieldPath& path) {
  char buf[64];
  std::optional<std::string_view> text = QuantityText(v, buf);
  if (!text) {
    TypeError(path, JsonType::kQuantity, v);
    return std::nullopt;
  }
  common::StatusOr<Quantity> q = Quantity::Parse(*text);
  if (!q.ok()) {
    const std::string_view why = q.status().message();
    if (dialect_->quantity_error == nullptr) {
      Error(path, why);
    } else {
      Error(path, dialect_->quantity_error(v, why));
    }
    return std::nullopt;
  }
  return *q;
}

// ---------------------------------------------------------------------------------------------
// ObjectFields

void ObjectFields::Finish() {
  if (finished_) return;
  finished_ = true;
  reader_.CheckKnownFields(object_, path_, declared_);
}

// ---------------------------------------------------------------------------------------------
// The plain dialect

namespace {

std::string PlainTypeError(JsonType want, const json::value& got) {
  return "want " + std::string(WantedTypeName(want)) + ", got " + DescribeValue(got);
}

std::string PlainRangeError(const json::value& got, std::optional<int64_t> value, int64_t lo,
                            int64_t hi) {
  if (!value) return PlainTypeError(JsonType::kInteger, got);
  return "must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " +
         std::to_string(*value);
}

constexpr Dialect kPlainDialect{PathStyle::kDotted, &PlainTypeError, &PlainRangeError, nullptr};

}  // namespace

const Dialect& PlainDialect() { return kPlainDialect; }

std::string_view WantedTypeName(JsonType want) {
  switch (want) {
    case JsonType::kObject: return "an object";
    case JsonType::kArray: return "a list";
    case JsonType::kString: return "a string";
    case JsonType::kBool: return "true or false";
    case JsonType::kInteger: return "an integer";
    case JsonType::kNumber: return "a number";
    case JsonType::kQuantity: return "a quantity";
  }
  return "a value";
}

std::string DescribeValue(const json::value& v) {
  if (v.is_string()) return common::Quote(v.get_string());
  std::string s = json::serialize(v);
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

}  // namespace gpusched::api
