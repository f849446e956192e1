// SPDX-License-Identifier: Apache-2.0
#include "src/api/fields.h"

#include <algorithm>
#include <cmath>

#include "src/api/quantity.h"
#include "src/common/strings.h"

namespace gpusched::api {

namespace json = boost::json;

void FieldReader::Error(const std::string& path, const std::string& message) {
  errors_.push_back(path.empty() ? message : path + ": " + message);
}

std::string FieldReader::Join(const std::string& path, std::string_view key) {
  return path.empty() ? std::string(key) : path + "." + std::string(key);
}

std::string FieldReader::Describe(const json::value& v) {
  if (v.is_string()) return common::Quote(v.get_string());
  std::string s = json::serialize(v);
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

void FieldReader::Known(const json::object& o, const std::string& path,
                        std::initializer_list<std::string_view> known) {
  for (const auto& kv : o) {
    if (std::find(known.begin(), known.end(), std::string_view(kv.key())) == known.end()) {
      Error(Join(path, kv.key()), "unknown field");
    }
  }
}

const json::object* FieldReader::Object(const json::object& o, std::string_view key,
                                        const std::string& path) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr || v->is_null()) return nullptr;
  if (!v->is_object()) {
    Error(Join(path, key), "want an object, got " + Describe(*v));
    return nullptr;
  }
  return &v->get_object();
}

const json::array* FieldReader::Array(const json::object& o, std::string_view key,
                                      const std::string& path) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr || v->is_null()) return nullptr;
  if (!v->is_array()) {
    Error(Join(path, key), "want a list, got " + Describe(*v));
    return nullptr;
  }
  return &v->get_array();
}

std::optional<std::string> FieldReader::String(const json::object& o, std::string_view key,
                                               const std::string& path) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr || v->is_null()) return std::nullopt;
  if (!v->is_string()) {
    Error(Join(path, key), "want a string, got " + Describe(*v));
    return std::nullopt;
  }
  return std::string(v->get_string());
}

std::optional<bool> FieldReader::Bool(const json::object& o, std::string_view key,
                                      const std::string& path) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr || v->is_null()) return std::nullopt;
  if (!v->is_bool()) {
    Error(Join(path, key), "want true or false, got " + Describe(*v));
    return std::nullopt;
  }
  return v->get_bool();
}

std::optional<double> FieldReader::Number(const json::object& o, std::string_view key,
                                          const std::string& path) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr || v->is_null()) return std::nullopt;
  if (const int64_t* i = v->if_int64()) return static_cast<double>(*i);
  if (const uint64_t* u = v->if_uint64()) return static_cast<double>(*u);
  if (const double* d = v->if_double(); d != nullptr && std::isfinite(*d)) return *d;
  Error(Join(path, key), "want a number, got " + Describe(*v));
  return std::nullopt;
}

std::optional<int64_t> FieldReader::Int(const json::object& o, std::string_view key,
                                        const std::string& path, int64_t lo, int64_t hi) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr || v->is_null()) return std::nullopt;
  std::optional<int64_t> got;
  if (const int64_t* i = v->if_int64()) got = *i;
  if (const uint64_t* u = v->if_uint64();
      u != nullptr && *u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    got = static_cast<int64_t>(*u);
  }
  // Range first: converting an out-of-range double to int64 is undefined behaviour.
  if (const double* d = v->if_double();
      d != nullptr && std::isfinite(*d) && std::fabs(*d) < 9e18 && std::trunc(*d) == *d) {
    got = static_cast<int64_t>(*d);
  }
  if (!got) {
    Error(Join(path, key), "want an integer, got " + Describe(*v));
    return std::nullopt;
  }
  if (*got < lo || *got > hi) {
    Error(Join(path, key), "must be in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                               "], got " + std::to_string(*got));
    return std::nullopt;
  }
  return got;
}

std::optional<int64_t> FieldReader::QuantityMilli(const json::object& o, std::string_view key,
                                                  const std::string& path) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr || v->is_null()) return std::nullopt;
  std::string text;
  if (v->is_string()) {
    text = std::string(v->get_string());
  } else if (v->is_number()) {
    text = json::serialize(*v);
  } else {
    Error(Join(path, key), "want a quantity, got " + Describe(*v));
    return std::nullopt;
  }
  auto q = Quantity::Parse(text);
  if (!q.ok()) {
    Error(Join(path, key), std::string(q.status().message()));
    return std::nullopt;
  }
  return q->MilliValue();
}

}  // namespace gpusched::api
