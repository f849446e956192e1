// SPDX-License-Identifier: Apache-2.0
#include "src/cel/semver.h"

#include <algorithm>

namespace gpusched::cel {
namespace {

bool AllDigits(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool AllAlnumOrDash(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-';
  });
}

std::string Quoted(std::string_view s) { return "\"" + std::string(s) + "\""; }

// strconv.ParseUint of an all-digit string.
bool ParseNumber(std::string_view s, uint64_t* out, std::string* why) {
  if (s.empty()) {
    *why = "strconv.ParseUint: parsing \"\": invalid syntax";
    return false;
  }
  uint64_t v = 0;
  for (char c : s) {
    if (v > (UINT64_MAX - static_cast<uint64_t>(c - '0')) / 10) {
      *why = "strconv.ParseUint: parsing " + Quoted(s) + ": value out of range";
      return false;
    }
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  *out = v;
  return true;
}

bool ParseComponent(std::string_view s, const char* name, const char* cap, uint64_t* out,
                    std::string* why) {
  if (!AllDigits(s)) {
    *why = std::string("Invalid character(s) found in ") + name + " number " + Quoted(s);
    return false;
  }
  if (s.size() > 1 && s[0] == '0') {
    *why = std::string(cap) + " number must not contain leading zeroes " + Quoted(s);
    return false;
  }
  return ParseNumber(s, out, why);
}

// Calls fn(part) for each '.'-separated part of s; stops at the first false.
template <typename Fn>
bool ForEachPart(std::string_view s, Fn fn) {
  while (true) {
    size_t dot = s.find('.');
    if (!fn(s.substr(0, dot))) return false;
    if (dot == std::string_view::npos) return true;
    s.remove_prefix(dot + 1);
  }
}

bool ValidPrerelease(std::string_view part, std::string* why) {
  if (part.empty()) {
    *why = "Prerelease is empty";
    return false;
  }
  if (AllDigits(part)) {
    if (part.size() > 1 && part[0] == '0') {
      *why = "Numeric PreRelease version must not contain leading zeroes " + Quoted(part);
      return false;
    }
    uint64_t unused = 0;
    return ParseNumber(part, &unused, why);
  }
  if (!AllAlnumOrDash(part)) {
    *why = "Invalid character(s) found in prerelease " + Quoted(part);
    return false;
  }
  return true;
}

int ComparePrereleasePart(std::string_view a, std::string_view b) {
  bool na = AllDigits(a);
  bool nb = AllDigits(b);
  if (na && nb) {
    if (a.size() != b.size()) return a.size() < b.size() ? -1 : 1;  // no leading zeroes
  } else if (na != nb) {
    return na ? -1 : 1;
  }
  int c = a.compare(b);
  return c < 0 ? -1 : (c > 0 ? 1 : 0);
}

int Cmp(uint64_t a, uint64_t b) { return a < b ? -1 : (a > b ? 1 : 0); }

}  // namespace

std::optional<SemverParts> ParseSemver(std::string_view text, std::string* why) {
  if (text.empty()) {
    *why = "Version string empty";
    return std::nullopt;
  }
  size_t d1 = text.find('.');
  size_t d2 = d1 == std::string_view::npos ? d1 : text.find('.', d1 + 1);
  if (d2 == std::string_view::npos) {
    *why = "No Major.Minor.Patch elements found";
    return std::nullopt;
  }
  SemverParts p;
  if (!ParseComponent(text.substr(0, d1), "major", "Major", &p.major, why) ||
      !ParseComponent(text.substr(d1 + 1, d2 - d1 - 1), "minor", "Minor", &p.minor, why)) {
    return std::nullopt;
  }
  std::string_view rest = text.substr(d2 + 1);
  bool has_build = false;
  bool has_pre = false;
  if (size_t plus = rest.find('+'); plus != std::string_view::npos) {
    p.build = rest.substr(plus + 1);
    has_build = true;
    rest = rest.substr(0, plus);
  }
  if (size_t dash = rest.find('-'); dash != std::string_view::npos) {
    p.pre = rest.substr(dash + 1);
    has_pre = true;
    rest = rest.substr(0, dash);
  }
  if (!ParseComponent(rest, "patch", "Patch", &p.patch, why)) return std::nullopt;
  if (has_pre && !ForEachPart(p.pre, [&](std::string_view s) { return ValidPrerelease(s, why); })) {
    return std::nullopt;
  }
  if (has_build && !ForEachPart(p.build, [&](std::string_view s) {
        if (s.empty()) {
          *why = "Build meta data is empty";
          return false;
        }
        if (!AllAlnumOrDash(s)) {
          *why = "Invalid character(s) found in build meta data " + Quoted(s);
          return false;
        }
        return true;
      })) {
    return std::nullopt;
  }
  return p;
}

std::optional<std::string> NormalizeSemver(std::string_view text, std::string* why) {
  if (!text.empty() && text[0] == 'v') text.remove_prefix(1);
  std::string parts[3];
  int n = 0;
  while (n < 2) {
    size_t dot = text.find('.');
    if (dot == std::string_view::npos) break;
    parts[n++] = std::string(text.substr(0, dot));
    text.remove_prefix(dot + 1);
  }
  parts[n++] = std::string(text);
  for (int i = 0; i < n; ++i) {
    std::string& p = parts[i];
    if (p.size() > 1) {
      size_t nz = p.find_first_not_of('0');
      p = nz == std::string::npos ? std::string() : p.substr(nz);
      if (p.empty() || p[0] < '0' || p[0] > '9') p = "0" + p;
    }
  }
  if (n < 3) {
    if (parts[n - 1].find_first_of("+-") != std::string::npos) {
      *why = "short version cannot contain PreRelease/Build meta data";
      return std::nullopt;
    }
    while (n < 3) parts[n++] = "0";
  }
  std::string out = parts[0] + "." + parts[1] + "." + parts[2];
  if (!ParseSemver(out, why)) return std::nullopt;
  return out;
}

int CompareSemver(std::string_view a, std::string_view b) {
  std::string why;
  std::optional<SemverParts> pa = ParseSemver(a, &why);
  std::optional<SemverParts> pb = ParseSemver(b, &why);
  if (!pa || !pb) return a.compare(b) < 0 ? -1 : (a == b ? 0 : 1);
  if (int c = Cmp(pa->major, pb->major); c != 0) return c;
  if (int c = Cmp(pa->minor, pb->minor); c != 0) return c;
  if (int c = Cmp(pa->patch, pb->patch); c != 0) return c;
  bool has_a = a.find('-') != std::string_view::npos && !pa->pre.empty();
  bool has_b = b.find('-') != std::string_view::npos && !pb->pre.empty();
  if (!has_a || !has_b) return has_a == has_b ? 0 : (has_a ? -1 : 1);
  std::string_view ra = pa->pre;
  std::string_view rb = pb->pre;
  while (true) {
    size_t da = ra.find('.');
    size_t db = rb.find('.');
    if (int c = ComparePrereleasePart(ra.substr(0, da), rb.substr(0, db)); c != 0) return c;
    if (da == std::string_view::npos || db == std::string_view::npos) {
      return da == db ? 0 : (da == std::string_view::npos ? -1 : 1);
    }
    ra.remove_prefix(da + 1);
    rb.remove_prefix(db + 1);
  }
}

}  // namespace gpusched::cel
