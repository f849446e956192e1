// SPDX-License-Identifier: Apache-2.0
#include "src/plugins/helper/args.h"

#include <cmath>
#include <limits>

namespace gpusched::plugins::helper {

void ArgErrors::Add(std::string_view path, std::string_view message) {
  std::string e(path);
  e += ": ";
  e += message;
  errors_.push_back(std::move(e));
}

common::Status ArgErrors::ToStatus() const {
  if (errors_.empty()) return common::Status::Ok();
  std::string msg;
  for (const std::string& e : errors_) {
    if (!msg.empty()) msg += "; ";
    msg += e;
  }
  return common::InvalidArgumentError(std::move(msg));
}

std::string FieldPath(std::string_view parent, std::string_view field) {
  std::string out(parent);
  if (!out.empty()) out += '.';
  out += field;
  return out;
}

std::string IndexPath(std::string_view parent, size_t i) {
  std::string out(parent);
  out += '[';
  out += std::to_string(i);
  out += ']';
  return out;
}

const boost::json::object* ArgsObject(const boost::json::value& args, ArgErrors& errors) {
  if (args.is_null()) return nullptr;
  const boost::json::object* obj = args.if_object();
  if (obj == nullptr) {
    errors.Add("args", "must be an object");
    return nullptr;
  }
  return obj->empty() ? nullptr : obj;
}

void CheckKnownFields(const boost::json::object& obj, std::string_view path,
                      std::initializer_list<std::string_view> known, ArgErrors& errors,
                      bool allow_type_meta) {
  for (const auto& kv : obj) {
    std::string_view key = kv.key();
    if (allow_type_meta && (key == "apiVersion" || key == "kind")) continue;
    bool found = false;
    for (std::string_view k : known) {
      if (k == key) {
        found = true;
        break;
      }
    }
    if (!found) errors.Add(FieldPath(path, key), "unknown field");
  }
}

std::optional<int64_t> AsInt(const boost::json::value& value, std::string_view path,
                             ArgErrors& errors) {
  if (value.is_null()) return std::nullopt;
  if (const int64_t* i = value.if_int64()) return *i;
  if (const uint64_t* u = value.if_uint64()) {
    if (*u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return static_cast<int64_t>(*u);
    }
  }
  if (const double* d = value.if_double()) {
    if (std::isfinite(*d) && std::trunc(*d) == *d && std::fabs(*d) < 9.0e18) {
      return static_cast<int64_t>(*d);
    }
  }
  errors.Add(path, "must be an integer");
  return std::nullopt;
}

std::optional<std::string_view> AsString(const boost::json::value& value, std::string_view path,
                                         ArgErrors& errors) {
  if (value.is_null()) return std::nullopt;
  if (const boost::json::string* s = value.if_string()) return std::string_view(*s);
  errors.Add(path, "must be a string");
  return std::nullopt;
}

const boost::json::array* AsArray(const boost::json::value& value, std::string_view path,
                                  ArgErrors& errors) {
  if (value.is_null()) return nullptr;
  if (const boost::json::array* a = value.if_array()) return a;
  errors.Add(path, "must be a list");
  return nullptr;
}

const boost::json::object* AsObject(const boost::json::value& value, std::string_view path,
                                    ArgErrors& errors) {
  if (value.is_null()) return nullptr;
  if (const boost::json::object* o = value.if_object()) return o;
  errors.Add(path, "must be an object");
  return nullptr;
}

namespace {
const boost::json::value& Field(const boost::json::object& obj, std::string_view key) {
  static const boost::json::value kNull;
  const boost::json::value* v = obj.if_contains(key);
  return v != nullptr ? *v : kNull;
}
}  // namespace

std::optional<int64_t> GetInt(const boost::json::object& obj, std::string_view key,
                              std::string_view parent, ArgErrors& errors) {
  const boost::json::value& v = Field(obj, key);
  if (v.is_null()) return std::nullopt;
  return AsInt(v, FieldPath(parent, key), errors);
}

std::optional<std::string_view> GetString(const boost::json::object& obj, std::string_view key,
                                          std::string_view parent, ArgErrors& errors) {
  const boost::json::value& v = Field(obj, key);
  if (v.is_null()) return std::nullopt;
  return AsString(v, FieldPath(parent, key), errors);
}

const boost::json::array* GetArray(const boost::json::object& obj, std::string_view key,
                                   std::string_view parent, ArgErrors& errors) {
  const boost::json::value& v = Field(obj, key);
  if (v.is_null()) return nullptr;
  return AsArray(v, FieldPath(parent, key), errors);
}

const boost::json::object* GetObject(const boost::json::object& obj, std::string_view key,
                                     std::string_view parent, ArgErrors& errors) {
  const boost::json::value& v = Field(obj, key);
  if (v.is_null()) return nullptr;
  return AsObject(v, FieldPath(parent, key), errors);
}

bool CheckRange(int64_t v, int64_t lo, int64_t hi, std::string_view path, ArgErrors& errors) {
  if (v >= lo && v <= hi) return true;
  errors.Add(path, "must be in " + std::to_string(lo) + ".." + std::to_string(hi) + ", got " +
                       std::to_string(v));
  return false;
}

}  // namespace gpusched::plugins::helper
