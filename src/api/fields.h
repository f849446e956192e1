// SPDX-License-Identifier: Apache-2.0
// FieldReader: typed reads of the members of a decoded YAML/JSON document — policy files, HPA
// specs, custom resources — that record every error with its path and go on, so that one pass
// reports all the mistakes in a file:
//
//   policies[0].terms[4].weight: want a number, got "ten"
//
// Absent and null members read as std::nullopt (nullptr for objects and lists) without an error;
// a member of the wrong type reads as absent and records an error. Callers add their own
// semantic checks with Error(). Not thread-safe; one reader per document.
#ifndef GPUSCHED_SRC_API_FIELDS_H_
#define GPUSCHED_SRC_API_FIELDS_H_

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json.hpp>

namespace gpusched::api {

class FieldReader {
 public:
  // Records "path: message" (just the message when path is empty).
  void Error(const std::string& path, const std::string& message);
  const std::vector<std::string>& errors() const { return errors_; }

  // "path.key", or "key" when path is empty.
  static std::string Join(const std::string& path, std::string_view key);
  // A value for an error message: a quoted string, or its JSON text cut at 60 characters.
  static std::string Describe(const boost::json::value& v);

  // Records "unknown field" for each member of `o` not in `known`.
  void Known(const boost::json::object& o, const std::string& path,
             std::initializer_list<std::string_view> known);

  const boost::json::object* Object(const boost::json::object& o, std::string_view key,
                                    const std::string& path);
  const boost::json::array* Array(const boost::json::object& o, std::string_view key,
                                  const std::string& path);
  std::optional<std::string> String(const boost::json::object& o, std::string_view key,
                                    const std::string& path);
  std::optional<bool> Bool(const boost::json::object& o, std::string_view key,
                           const std::string& path);
  // Any finite number.
  std::optional<double> Number(const boost::json::object& o, std::string_view key,
                               const std::string& path);
  // An integer (an integral double such as 2.0 from YAML counts) within [lo, hi].
  std::optional<int64_t> Int(const boost::json::object& o, std::string_view key,
                             const std::string& path,
                             int64_t lo = std::numeric_limits<int64_t>::min(),
                             int64_t hi = std::numeric_limits<int64_t>::max());
  // A resource.Quantity, given as a string ("500m", "2Gi") or a number, in milli-units.
  std::optional<int64_t> QuantityMilli(const boost::json::object& o, std::string_view key,
                                       const std::string& path);

 private:
  std::vector<std::string> errors_;
};

}  // namespace gpusched::api

#endif  // GPUSCHED_SRC_API_FIELDS_H_
