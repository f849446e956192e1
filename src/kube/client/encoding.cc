// SPDX-License-Identifier: Apache-2.0
#include "src/kube/client/encoding.h"

#include <array>
#include <cstdint>
#include <cstdio>
#include <limits>

#include "src/api/decode.h"

namespace gpusched::kube::client {
namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

constexpr std::array<int8_t, 256> MakeDecodeTable() {
  std::array<int8_t, 256> t{};
  for (auto& v : t) v = -1;
  for (int i = 0; i < 64; ++i) t[static_cast<unsigned char>(kAlphabet[i])] = static_cast<int8_t>(i);
  return t;
}
constexpr std::array<int8_t, 256> kDecode = MakeDecodeTable();

bool IsSpace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

struct Civil {
  int64_t y, m, d, hh, mm, ss, nanos;
};

Civil ToCivil(common::TimePoint t) {
  int64_t ns = t.time_since_epoch().count();
  int64_t secs = ns / 1'000'000'000;
  int64_t nanos = ns % 1'000'000'000;
  if (nanos < 0) {
    nanos += 1'000'000'000;
    --secs;
  }
  int64_t days = secs / 86400;
  int64_t rem = secs % 86400;
  if (rem < 0) {
    rem += 86400;
    --days;
  }
  // civil_from_days (H. Hinnant).
  int64_t z = days + 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const int64_t doe = z - era * 146097;
  const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const int64_t mp = (5 * doy + 2) / 153;
  const int64_t d = doy - (153 * mp + 2) / 5 + 1;
  const int64_t m = mp < 10 ? mp + 3 : mp - 9;
  const int64_t y = yoe + era * 400 + (m <= 2 ? 1 : 0);
  return Civil{y, m, d, rem / 3600, rem % 3600 / 60, rem % 60, nanos};
}

}  // namespace

std::optional<std::string> Base64Decode(std::string_view in) {
  std::string out;
  out.reserve(in.size() / 4 * 3 + 3);
  uint32_t acc = 0;
  int bits = 0;
  size_t symbols = 0;
  size_t padding = 0;
  for (char c : in) {
    if (IsSpace(c)) continue;
    if (c == '=') {
      ++padding;
      continue;
    }
    if (padding > 0) return std::nullopt;  // data after padding
    int8_t v = kDecode[static_cast<unsigned char>(c)];
    if (v < 0) return std::nullopt;
    ++symbols;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xFF));
    }
  }
  if (symbols % 4 == 1 || padding > 2) return std::nullopt;
  if (padding > 0 && (symbols + padding) % 4 != 0) return std::nullopt;
  return out;
}

std::string Base64Encode(std::string_view in) {
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= in.size(); i += 3) {
    uint32_t v = (static_cast<uint32_t>(static_cast<unsigned char>(in[i])) << 16) |
                 (static_cast<uint32_t>(static_cast<unsigned char>(in[i + 1])) << 8) |
                 static_cast<uint32_t>(static_cast<unsigned char>(in[i + 2]));
    out.push_back(kAlphabet[(v >> 18) & 63]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out.push_back(kAlphabet[(v >> 6) & 63]);
    out.push_back(kAlphabet[v & 63]);
  }
  size_t rest = in.size() - i;
  if (rest > 0) {
    uint32_t v = static_cast<uint32_t>(static_cast<unsigned char>(in[i])) << 16;
    if (rest == 2) v |= static_cast<uint32_t>(static_cast<unsigned char>(in[i + 1])) << 8;
    out.push_back(kAlphabet[(v >> 18) & 63]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out.push_back(rest == 2 ? kAlphabet[(v >> 6) & 63] : '=');
    out.push_back('=');
  }
  return out;
}

std::optional<common::TimePoint> ParseRfc3339(std::string_view s) { return api::ParseRfc3339(s); }

std::string FormatRfc3339(common::TimePoint t) {
  Civil c = ToCivil(t);
  char buf[40];
  std::snprintf(buf, sizeof buf, "%04lld-%02lld-%02lldT%02lld:%02lld:%02lldZ",
                static_cast<long long>(c.y), static_cast<long long>(c.m),
                static_cast<long long>(c.d), static_cast<long long>(c.hh),
                static_cast<long long>(c.mm), static_cast<long long>(c.ss));
  return buf;
}

std::string FormatRfc3339Micro(common::TimePoint t) {
  Civil c = ToCivil(t);
  char buf[48];
  std::snprintf(buf, sizeof buf, "%04lld-%02lld-%02lldT%02lld:%02lld:%02lld.%06lldZ",
                static_cast<long long>(c.y), static_cast<long long>(c.m),
                static_cast<long long>(c.d), static_cast<long long>(c.hh),
                static_cast<long long>(c.mm), static_cast<long long>(c.ss),
                static_cast<long long>(c.nanos / 1000));
  return buf;
}

std::string EscapeQueryComponent(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '.' || c == '_' || c == '~') {
      out += ch;
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

std::string EncodeQuery(const std::vector<std::pair<std::string, std::string>>& query) {
  std::string out;
  for (const auto& [k, v] : query) {
    out += out.empty() ? '?' : '&';
    out += EscapeQueryComponent(k);
    out += '=';
    out += EscapeQueryComponent(v);
  }
  return out;
}

}  // namespace gpusched::kube::client
