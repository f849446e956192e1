// SPDX-License-Identifier: Apache-2.0
#include "src/plugins/helper/args.h"

namespace gpusched::plugins::helper {
namespace {

using api::JsonType;

std::string ArgsTypeError(JsonType want, const boost::json::value&) {
  switch (want) {
    case JsonType::kObject: return "must be an object";
    case JsonType::kArray: return "must be a list";
    case JsonType::kString: return "must be a string";
    case JsonType::kBool: return "must be true or false";
    case JsonType::kInteger: return "must be an integer";
    case JsonType::kNumber: return "must be a number";
    case JsonType::kQuantity: return "must be a quantity";
  }
  return "must be a value";
}

// Only integers beyond int64 reach here: callers check ranges with CheckRange.
std::string ArgsRangeError(const boost::json::value& got, std::optional<int64_t>, int64_t,
                           int64_t) {
  return ArgsTypeError(JsonType::kInteger, got);
}

constexpr api::Dialect kArgsDialect{api::PathStyle::kDotted, &ArgsTypeError, &ArgsRangeError,
                                    nullptr};

}  // namespace

ArgErrors::ArgErrors() : reader_(kArgsDialect) {}

std::string FieldPath(std::string_view parent, std::string_view field) {
  const api::FieldPath p = api::FieldPath::Text(parent);
  return p.Key(field).ToString(api::PathStyle::kDotted);
}

std::string IndexPath(std::string_view parent, size_t i) {
  const api::FieldPath p = api::FieldPath::Text(parent);
  return p.At(i).ToString(api::PathStyle::kDotted);
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
  return errors.reader().AsInt(value, api::FieldPath::Text(path));
}

std::optional<std::string_view> AsString(const boost::json::value& value, std::string_view path,
                                         ArgErrors& errors) {
  if (value.is_null()) return std::nullopt;
  return errors.reader().AsString(value, api::FieldPath::Text(path));
}

const boost::json::array* AsArray(const boost::json::value& value, std::string_view path,
                                  ArgErrors& errors) {
  if (value.is_null()) return nullptr;
  return errors.reader().AsArray(value, api::FieldPath::Text(path));
}

const boost::json::object* AsObject(const boost::json::value& value, std::string_view path,
                                    ArgErrors& errors) {
  if (value.is_null()) return nullptr;
  return errors.reader().AsObject(value, api::FieldPath::Text(path));
}

std::optional<int64_t> GetInt(const boost::json::object& obj, std::string_view key,
                              std::string_view parent, ArgErrors& errors) {
  return errors.reader().Int(obj, key, api::FieldPath::Text(parent));
}

std::optional<std::string_view> GetString(const boost::json::object& obj, std::string_view key,
                                          std::string_view parent, ArgErrors& errors) {
  return errors.reader().String(obj, key, api::FieldPath::Text(parent));
}

const boost::json::array* GetArray(const boost::json::object& obj, std::string_view key,
                                   std::string_view parent, ArgErrors& errors) {
  return errors.reader().Array(obj, key, api::FieldPath::Text(parent));
}

const boost::json::object* GetObject(const boost::json::object& obj, std::string_view key,
                                     std::string_view parent, ArgErrors& errors) {
  return errors.reader().Object(obj, key, api::FieldPath::Text(parent));
}

bool CheckRange(int64_t v, int64_t lo, int64_t hi, std::string_view path, ArgErrors& errors) {
  if (v >= lo && v <= hi) return true;
  errors.Add(path, "must be in " + std::to_string(lo) + ".." + std::to_string(hi) + ", got " +
                       std::to_string(v));
  return false;
}

}  // namespace gpusched::plugins::helper
