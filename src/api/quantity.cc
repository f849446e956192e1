// SPDX-License-Identifier: Apache-2.0
// Quantity parsing with k8s.io/apimachinery semantics. The parse is exact: the value is computed
// in nano units (10^-9) as ceil(digits * 2^binary_exponent * 10^decimal_exponent), rounded away
// from zero and capped at (2^63-1) whole units, with 128-bit integers for up to 27 significant
// digits and a digit vector beyond that. No floating point is involved anywhere.
#include "src/api/quantity.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "src/common/strings.h"

namespace gpusched::api {
namespace {

__extension__ typedef __int128 Int128;
__extension__ typedef unsigned __int128 UInt128;

constexpr int32_t kNanoExp10 = -9;
constexpr int64_t kMaxExponent = 1000;
constexpr Int128 kInt64Max = std::numeric_limits<int64_t>::max();
constexpr Int128 kInt64Min = std::numeric_limits<int64_t>::min();
// (2^63-1) whole units in nano: 9223372036854775807000000000, 28 decimal digits.
constexpr Int128 kMaxNano = kInt64Max * 1'000'000'000;
constexpr size_t kMaxNanoDigits = 28;
// 10^38 < 2^127 - 1 < 10^39.
constexpr int kMaxPow10 = 38;
// A significand of at most 27 digits is below 10^27 < kMaxNano, so it fits with room to spare.
constexpr size_t kFastDigits = 27;

Int128 Pow10(int n) {  // REQUIRES: 0 <= n <= kMaxPow10
  Int128 r = 1;
  for (int i = 0; i < n; ++i) r *= 10;
  return r;
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

common::Status QuantityError(std::string_view text, std::string_view why) {
  std::string msg = "invalid quantity ";
  msg += common::Quote(text);
  msg += ": ";
  msg += why;
  return common::InvalidArgumentError(std::move(msg));
}

struct Suffix {
  int base2 = 0;      // multiply by 2^base2
  int64_t exp10 = 0;  // multiply by 10^exp10
};

// Interprets the text after the number. Returns false for an unknown suffix; sets *range_error
// for a decimal exponent beyond kMaxExponent.
bool InterpretSuffix(std::string_view s, Suffix* out, bool* range_error) {
  *out = Suffix{};
  if (s.empty()) return true;
  if (s.size() == 1) {
    switch (s[0]) {
      case 'n': out->exp10 = -9; return true;
      case 'u': out->exp10 = -6; return true;
      case 'm': out->exp10 = -3; return true;
      case 'k': out->exp10 = 3; return true;
      case 'M': out->exp10 = 6; return true;
      case 'G': out->exp10 = 9; return true;
      case 'T': out->exp10 = 12; return true;
      case 'P': out->exp10 = 15; return true;
      case 'E': out->exp10 = 18; return true;
      default: return false;
    }
  }
  if (s.size() == 2 && s[1] == 'i') {
    switch (s[0]) {
      case 'K': out->base2 = 10; return true;
      case 'M': out->base2 = 20; return true;
      case 'G': out->base2 = 30; return true;
      case 'T': out->base2 = 40; return true;
      case 'P': out->base2 = 50; return true;
      case 'E': out->base2 = 60; return true;
      default: break;
    }
  }
  if (s[0] != 'e' && s[0] != 'E') return false;
  // Decimal exponent: [eE][+-]?[0-9]+
  size_t i = 1;
  bool negative = false;
  if (s[i] == '+' || s[i] == '-') {
    negative = s[i] == '-';
    ++i;
  }
  if (i == s.size()) return false;
  int64_t e = 0;
  for (; i < s.size(); ++i) {
    if (!IsDigit(s[i])) return false;
    if (e <= kMaxExponent) e = e * 10 + (s[i] - '0');  // stops growing once out of range
  }
  if (e > kMaxExponent) {
    *range_error = true;
    return false;
  }
  out->exp10 = negative ? -e : e;
  return true;
}

// Fast path: `sig` (no leading zeros, at most kFastDigits digits). Returns false when the exact
// value cannot be computed in 128 bits (the caller then takes the slow path).
bool NanoFast(std::string_view sig, int base2, int64_t e, Int128* out) {
  Int128 d = 0;
  for (char c : sig) d = d * 10 + (c - '0');
  if (d == 0) {
    *out = 0;
    return true;
  }
  constexpr Int128 kInt128Max = static_cast<Int128>((~static_cast<UInt128>(0)) >> 1);
  if (d > (kInt128Max >> base2)) {
    if (e >= 0) {
      *out = kMaxNano;  // already beyond the cap, and the scale only grows it
      return true;
    }
    return false;
  }
  d <<= base2;
  if (e >= 0) {
    for (int64_t i = 0; i < e; ++i) {
      if (d > kMaxNano) break;
      d *= 10;  // d <= kMaxNano < 10^28, so d * 10 < 10^29 cannot overflow
    }
    *out = d > kMaxNano ? kMaxNano : d;
    return true;
  }
  int64_t k = -e;
  if (k > kMaxPow10) {
    *out = 1;  // 0 < d < 2^127 < 10^39 <= 10^k: a positive fraction of a nano rounds up to 1
    return true;
  }
  Int128 p = Pow10(static_cast<int>(k));
  Int128 q = d / p;
  if (d % p != 0) ++q;
  *out = q > kMaxNano ? kMaxNano : q;
  return true;
}

// Slow path: exact decimal arithmetic on a digit vector, for long significands.
Int128 NanoSlow(std::string_view sig, int base2, int64_t e) {
  std::vector<uint8_t> d;  // most significant first
  d.reserve(sig.size() + 20);
  for (char c : sig) d.push_back(static_cast<uint8_t>(c - '0'));
  for (int i = 0; i < base2 / 10; ++i) {  // multiply by 1024 per binary step of 10
    uint32_t carry = 0;
    for (size_t j = d.size(); j-- > 0;) {
      uint32_t v = d[j] * 1024u + carry;
      d[j] = static_cast<uint8_t>(v % 10);
      carry = v / 10;
    }
    std::vector<uint8_t> head;
    while (carry > 0) {
      head.push_back(static_cast<uint8_t>(carry % 10));
      carry /= 10;
    }
    d.insert(d.begin(), head.rbegin(), head.rend());
  }
  size_t lead = 0;
  while (lead < d.size() && d[lead] == 0) ++lead;
  d.erase(d.begin(), d.begin() + static_cast<std::ptrdiff_t>(lead));
  if (d.empty()) return 0;
  if (e >= 0) {
    if (d.size() + static_cast<uint64_t>(e) > kMaxNanoDigits) return kMaxNano;
    Int128 v = 0;
    for (uint8_t x : d) v = v * 10 + x;
    for (int64_t i = 0; i < e; ++i) v *= 10;
    return v > kMaxNano ? kMaxNano : v;
  }
  uint64_t k = static_cast<uint64_t>(-e);
  if (d.size() <= k) return 1;  // a positive value below one nano
  size_t int_len = d.size() - k;
  if (int_len > kMaxNanoDigits) return kMaxNano;
  Int128 v = 0;
  for (size_t i = 0; i < int_len; ++i) v = v * 10 + d[i];
  for (size_t i = int_len; i < d.size(); ++i) {
    if (d[i] != 0) {
      ++v;
      break;
    }
  }
  return v > kMaxNano ? kMaxNano : v;
}

void AppendInt128(std::string& out, Int128 v) {
  if (v < 0) out += '-';
  UInt128 u = v < 0 ? static_cast<UInt128>(0) - static_cast<UInt128>(v) : static_cast<UInt128>(v);
  char buf[48];
  int n = 0;
  do {
    buf[n++] = static_cast<char>('0' + static_cast<int>(u % 10));
    u /= 10;
  } while (u != 0);
  while (n > 0) out += buf[--n];
}

}  // namespace

common::StatusOr<Quantity> Quantity::Parse(std::string_view text) {
  if (text.empty()) return QuantityError(text, "empty string");
  size_t pos = 0;
  bool negative = false;
  if (text[0] == '+' || text[0] == '-') {
    negative = text[0] == '-';
    ++pos;
  }
  size_t num_begin = pos;
  while (pos < text.size() && IsDigit(text[pos])) ++pos;
  size_t num_end = pos;
  size_t denom_begin = pos;
  size_t denom_end = pos;
  if (pos < text.size() && text[pos] == '.') {
    denom_begin = ++pos;
    while (pos < text.size() && IsDigit(text[pos])) ++pos;
    denom_end = pos;
  }
  if (num_begin == num_end && denom_begin == denom_end) return QuantityError(text, "no digits");
  std::string_view suffix = text.substr(pos);
  Suffix sfx;
  bool range_error = false;
  if (!InterpretSuffix(suffix, &sfx, &range_error)) {
    if (range_error) return QuantityError(text, "exponent out of range (at most 1000)");
    std::string why = "unknown suffix ";
    why += common::Quote(suffix);
    return QuantityError(text, why);
  }

  // The significand: integer and fraction digits without leading zeros. Its scale in nano units
  // is exp10 - (number of fraction digits) + 9.
  std::string_view num = text.substr(num_begin, num_end - num_begin);
  std::string_view denom = text.substr(denom_begin, denom_end - denom_begin);
  int64_t e = sfx.exp10 - static_cast<int64_t>(denom.size()) - kNanoExp10;
  Int128 nano = 0;
  size_t num_lead = 0;
  while (num_lead < num.size() && num[num_lead] == '0') ++num_lead;
  num.remove_prefix(num_lead);
  if (num.empty()) {
    size_t denom_lead = 0;
    while (denom_lead < denom.size() && denom[denom_lead] == '0') ++denom_lead;
    denom.remove_prefix(denom_lead);  // leading fraction zeros do not change the integer
  }
  size_t sig_digits = num.size() + denom.size();
  bool done = false;
  if (sig_digits <= kFastDigits) {
    char buf[kFastDigits];
    size_t n = 0;
    for (char c : num) buf[n++] = c;
    for (char c : denom) buf[n++] = c;
    done = NanoFast(std::string_view(buf, n), sfx.base2, e, &nano);
  }
  if (!done) {
    std::string sig;
    sig.reserve(sig_digits);
    sig.append(num);
    sig.append(denom);
    nano = NanoSlow(sig, sfx.base2, e);
  }
  Quantity q;
  q.mantissa_ = negative ? -nano : nano;
  q.exp10_ = kNanoExp10;
  return q;
}

Quantity Quantity::FromMilli(int64_t milli) {
  Quantity q;
  q.mantissa_ = milli;
  q.exp10_ = -3;
  return q;
}

Quantity Quantity::FromValue(int64_t value) {
  Quantity q;
  q.mantissa_ = value;
  q.exp10_ = 0;
  return q;
}

int64_t Quantity::ScaledValue(int32_t target_exp10) const {
  if (mantissa_ == 0) return 0;
  Int128 m = mantissa_;
  bool negative = m < 0;
  // |mantissa_| <= 2^127-1 here: every constructor stores at most a 28-digit or int64 value.
  Int128 mag = negative ? -m : m;
  int64_t d = static_cast<int64_t>(exp10_) - target_exp10;
  if (d >= 0) {
    for (int64_t i = 0; i < d && mag <= kInt64Max; ++i) mag *= 10;  // mag <= 2^63 before *10
  } else if (-d > kMaxPow10) {
    mag = 1;  // a positive fraction of the target unit rounds up (away from zero) to one
  } else {
    Int128 p = Pow10(static_cast<int>(-d));
    Int128 q = mag / p;
    if (mag % p != 0) ++q;
    mag = q;
  }
  if (negative) {
    Int128 v = -mag;
    return v < kInt64Min ? std::numeric_limits<int64_t>::min() : static_cast<int64_t>(v);
  }
  return mag > kInt64Max ? std::numeric_limits<int64_t>::max() : static_cast<int64_t>(mag);
}

int64_t Quantity::Value() const { return ScaledValue(0); }

int Quantity::Compare(const Quantity& other) const {
  // Every constructed value has |mantissa| < 10^29 and exp10 in [-9, 0]: aligning both to the
  // smaller exponent multiplies by at most 10^9, which stays inside 128 bits.
  Int128 a = mantissa_;
  Int128 b = other.mantissa_;
  int32_t e = std::min(exp10_, other.exp10_);
  for (int32_t i = e; i < exp10_; ++i) a *= 10;
  for (int32_t i = e; i < other.exp10_; ++i) b *= 10;
  return a < b ? -1 : (a > b ? 1 : 0);
}

double Quantity::AsApproximateDouble() const {
  double v = static_cast<double>(mantissa_);
  for (int32_t i = 0; i < exp10_; ++i) v *= 10;
  for (int32_t i = exp10_; i < 0; ++i) v /= 10;
  return v;
}
int64_t Quantity::MilliValue() const { return ScaledValue(-3); }

std::string Quantity::ToString() const {
  std::string out;
  if (mantissa_ == 0) return "0";
  // Print in the largest of (units, m, u, n) that holds the value exactly.
  Int128 m = mantissa_;
  int32_t e = exp10_;
  while (e < 0 && m % 10 == 0) {
    m /= 10;
    ++e;
  }
  if (e >= 0) {
    AppendInt128(out, m);
    for (int32_t i = 0; i < e; ++i) out += '0';
    return out;
  }
  // -9 <= e < 0 for every constructed value; pad to the next multiple of 3.
  int32_t target = e >= -3 ? -3 : (e >= -6 ? -6 : -9);
  for (int32_t i = target; i < e; ++i) m *= 10;
  AppendInt128(out, m);
  out += target == -3 ? "m" : (target == -6 ? "u" : "n");
  return out;
}

}  // namespace gpusched::api
