// SPDX-License-Identifier: Apache-2.0
#include "src/config/duration.h"

#include <limits>

namespace gpusched::config {
namespace {

constexpr uint64_t kNanosecond = 1;
constexpr uint64_t kMicrosecond = 1000 * kNanosecond;
constexpr uint64_t kMillisecond = 1000 * kMicrosecond;
constexpr uint64_t kSecond = 1000 * kMillisecond;
constexpr uint64_t kMinute = 60 * kSecond;
constexpr uint64_t kHour = 60 * kMinute;
constexpr uint64_t kLimit = uint64_t{1} << 63;  // |min int64|

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

std::optional<uint64_t> UnitNanos(std::string_view unit) {
  if (unit == "ns") return kNanosecond;
  if (unit == "us" || unit == "\xC2\xB5s" || unit == "\xCE\xBCs") return kMicrosecond;  // µ, μ
  if (unit == "ms") return kMillisecond;
  if (unit == "s") return kSecond;
  if (unit == "m") return kMinute;
  if (unit == "h") return kHour;
  return std::nullopt;
}

}  // namespace

// A transcription of Go's time.ParseDuration, which works in uint64 up to 1<<63.
std::optional<int64_t> ParseGoDurationNanos(std::string_view s) {
  bool neg = false;
  if (!s.empty() && (s.front() == '-' || s.front() == '+')) {
    neg = s.front() == '-';
    s.remove_prefix(1);
  }
  if (s == "0") return 0;
  if (s.empty()) return std::nullopt;
  uint64_t total = 0;
  while (!s.empty()) {
    if (!(s.front() == '.' || IsDigit(s.front()))) return std::nullopt;
    // Integer part.
    uint64_t v = 0;
    size_t n = 0;
    while (n < s.size() && IsDigit(s[n])) {
      if (v > (kLimit - 1) / 10) return std::nullopt;
      v = v * 10 + static_cast<uint64_t>(s[n] - '0');
      if (v > kLimit) return std::nullopt;
      ++n;
    }
    const bool pre = n > 0;
    s.remove_prefix(n);
    // Fraction part: digits beyond what fits are dropped, as in Go.
    uint64_t frac = 0;
    double scale = 1;
    bool post = false;
    if (!s.empty() && s.front() == '.') {
      s.remove_prefix(1);
      n = 0;
      bool overflow = false;
      while (n < s.size() && IsDigit(s[n])) {
        if (!overflow) {
          if (frac > (std::numeric_limits<int64_t>::max)() / 10) {
            overflow = true;
          } else {
            frac = frac * 10 + static_cast<uint64_t>(s[n] - '0');
            scale *= 10;
          }
        }
        ++n;
      }
      post = n > 0;
      s.remove_prefix(n);
    }
    if (!pre && !post) return std::nullopt;
    // Unit: everything up to the next '.' or digit.
    n = 0;
    while (n < s.size() && s[n] != '.' && !IsDigit(s[n])) ++n;
    if (n == 0) return std::nullopt;  // missing unit
    std::optional<uint64_t> unit = UnitNanos(s.substr(0, n));
    if (!unit) return std::nullopt;
    s.remove_prefix(n);
    if (v > kLimit / *unit) return std::nullopt;
    v *= *unit;
    if (frac > 0) {
      v += static_cast<uint64_t>(static_cast<double>(frac) * (static_cast<double>(*unit) / scale));
      if (v > kLimit) return std::nullopt;
    }
    total += v;
    if (total > kLimit) return std::nullopt;
  }
  if (neg) {
    return total == kLimit ? (std::numeric_limits<int64_t>::min)() : -static_cast<int64_t>(total);
  }
  if (total > kLimit - 1) return std::nullopt;
  return static_cast<int64_t>(total);
}

}  // namespace gpusched::config
