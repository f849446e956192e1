// SPDX-License-Identifier: Apache-2.0
#include "src/plugins/helper/args.h"

#include <boost/json.hpp>
#include <limits>
#include <optional>
#include <string>

namespace gpusched::plugins::helper {
namespace {

using api::JsonType;

std::string ArgsTypeError(JsonType want, const boost::json::value&) {
  switch (want) {
    case JsonType::kObject: return "must be an object";
    case JsonType::kArray: return "must be a list";
    case JsonType::kString: return "must be a string";
    case JsonType::kBool: return "must be a boolean";
    case JsonType::kInteger: return "must be an integer";
    case JsonType::kNumber: return "must be a number";
    case JsonType::kQuantity: return "must be a quantity";
  }
  return "must be a value";
}

// An integer outside [lo, hi], or beyond int64 (`value` nullopt).
std::string ArgsRangeError(const boost::json::value& got, std::optional<int64_t> value, int64_t lo,
                           int64_t hi) {
  if (lo == std::numeric_limits<int64_t>::min() && hi == std::numeric_limits<int64_t>::max()) {
    return ArgsTypeError(JsonType::kInteger, got);
  }
  return "must be in " + std::to_string(lo) + ".." + std::to_string(hi) + ", got " +
         (value ? std::to_string(*value) : boost::json::serialize(got));
}

constexpr api::Dialect kArgsDialect{api::PathStyle::kDotted, &ArgsTypeError, &ArgsRangeError,
                                    nullptr};

}  // namespace

const api::Dialect& ArgsDialect() { return kArgsDialect; }

}  // namespace gpusched::plugins::helper
