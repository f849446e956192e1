// SPDX-License-Identifier: Apache-2.0
// Quantity: Kubernetes resource quantities with exact semantics (k8s.io/apimachinery
// pkg/api/resource). "100m", "1.5", "40Gi", "2e3", "1Ki", "0.5Gi", "+1", "-2" are valid;
// "1.2.3", "Gi", "1 Gi", "1gi", "1e", "--1" and anything with trailing garbage are rejected with a
// message naming the value.
//
// Internally a value is an exact decimal: an integer mantissa times 10^exp10 (binary suffixes are
// converted exactly to integers). Value() and MilliValue() round up, as Kubernetes does.
//
// Exactly as Kubernetes: a parsed value is rounded up to a whole nano (away from zero) and capped
// at +-(2^63-1) whole units; "rounded up" means away from zero, so "-100m" has Value() -1.
// Deliberate differences: strings without a digit ("", ".", "+", "Gi"), which Kubernetes reads as
// zero, are rejected, and so are decimal exponents beyond +-1000 ("1e1000000000"), which
// Kubernetes accepts but cannot evaluate in reasonable time. Value() and MilliValue() saturate at
// the int64 limits instead of overflowing. Parsing allocates nothing unless the number has more
// than 27 significant digits.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "src/common/status.h"

namespace gpusched::api {

class Quantity {
 public:
  Quantity() = default;
  // Parses `text`. The error message is: invalid quantity "text": <why>.
  static common::StatusOr<Quantity> Parse(std::string_view text);
  static Quantity FromMilli(int64_t milli);
  static Quantity FromValue(int64_t value);

  // The value in whole units, rounded up (away from zero, as Kubernetes does: "-100m" -> -1),
  // saturating at int64 limits. "100m" -> 1, "1.5" -> 2, "40Gi" -> 42949672960.
  int64_t Value() const;
  // The value in thousandths, rounded up (away from zero), saturating. "100m" -> 100,
  // "1.5" -> 1500, "1u" -> 1, "-1u" -> -1.
  int64_t MilliValue() const;
  bool IsZero() const { return mantissa_ == 0; }
  // Exact comparison of the two values: -1, 0 or 1 (CEL's quantity compareTo, DRA capacity).
  int Compare(const Quantity& other) const;
  bool operator==(const Quantity& other) const { return Compare(other) == 0; }
  // The value as a double (CEL's asApproximateFloat).
  double AsApproximateDouble() const;
  // Canonical-ish text for messages ("1500m", "40Gi" is printed as the integer value).
  std::string ToString() const;

 private:
  // __extension__ keeps -Wpedantic quiet about the GCC/Clang 128-bit integer.
  __extension__ typedef __int128 Int128;
  // The value rounded away from zero to a multiple of 10^target_exp10, divided by it, saturated.
  int64_t ScaledValue(int32_t target_exp10) const;

  Int128 mantissa_ = 0;  // value = mantissa_ * 10^exp10_
  int32_t exp10_ = 0;
};

}  // namespace gpusched::api
