// SPDX-License-Identifier: Apache-2.0
// Non-throwing readers for plugin args (the pluginConfig args object, as a JSON value) and an error
// collector, so every factory validates all its fields and reports every error at once, each
// naming its path: "scoringStrategy.resources[0].weight: must be in 1..100, got 0".
//
// A thin string-path face of api::JsonReader (src/api/fields.h) in the plugin args wording
// ("must be an integer", no value) with dotted paths. Not thread-safe: one ArgErrors per decode.
#pragma once

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "src/api/fields.h"
#include "src/common/status.h"

namespace gpusched::plugins::helper {

// Collects validation errors, each "path: message".
class ArgErrors {
 public:
  ArgErrors();
  void Add(std::string_view path, std::string_view message) { reader_.errors().Add(path, message); }
  bool empty() const { return reader_.ok(); }
  const std::vector<std::string>& errors() const { return reader_.errors().list(); }
  // OK when no error was added; otherwise InvalidArgument with every error, joined by "; ".
  common::Status ToStatus() const { return reader_.errors().ToStatus(); }
  // The reader the Get* and As* functions record through.
  api::JsonReader& reader() { return reader_; }

 private:
  api::JsonReader reader_;
};

// "parent.field", or "field" when parent is empty.
std::string FieldPath(std::string_view parent, std::string_view field);
// "parent[i]".
std::string IndexPath(std::string_view parent, size_t i);

// The args object; nullptr when args is null or an empty object (use the defaults). Adds an error
// when args is neither null nor an object.
const boost::json::object* ArgsObject(const boost::json::value& args, ArgErrors& errors);

// Adds "path.key: unknown field" for every key of `obj` not in `known`. The type-meta keys
// "apiVersion" and "kind" are accepted when `allow_type_meta` (top level of an args object).
void CheckKnownFields(const boost::json::object& obj, std::string_view path,
                      std::initializer_list<std::string_view> known, ArgErrors& errors,
                      bool allow_type_meta = false);

// Typed readers of `value` at `path`. They return nullopt/nullptr for null, and add
// "path: must be <type>" when the value has another type. Integers accept JSON integers and
// integral floating-point numbers.
std::optional<int64_t> AsInt(const boost::json::value& value, std::string_view path,
                             ArgErrors& errors);
std::optional<std::string_view> AsString(const boost::json::value& value, std::string_view path,
                                         ArgErrors& errors);
const boost::json::array* AsArray(const boost::json::value& value, std::string_view path,
                                  ArgErrors& errors);
const boost::json::object* AsObject(const boost::json::value& value, std::string_view path,
                                    ArgErrors& errors);

// The same, for field `key` of `obj` (path = FieldPath(parent, key)); absent reads as null.
std::optional<int64_t> GetInt(const boost::json::object& obj, std::string_view key,
                              std::string_view parent, ArgErrors& errors);
std::optional<std::string_view> GetString(const boost::json::object& obj, std::string_view key,
                                          std::string_view parent, ArgErrors& errors);
const boost::json::array* GetArray(const boost::json::object& obj, std::string_view key,
                                   std::string_view parent, ArgErrors& errors);
const boost::json::object* GetObject(const boost::json::object& obj, std::string_view key,
                                     std::string_view parent, ArgErrors& errors);

// Checks lo <= v <= hi, adding "path: must be in lo..hi, got v" otherwise. Returns whether it is.
bool CheckRange(int64_t v, int64_t lo, int64_t hi, std::string_view path, ArgErrors& errors);

}  // namespace gpusched::plugins::helper
