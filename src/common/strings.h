// SPDX-License-Identifier: Apache-2.0
// Small string helpers used by parsers. No allocation unless a std::string is returned.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace gpusched::common {

std::string_view Trim(std::string_view s);
// Splits on `sep`; keeps empty fields.
std::vector<std::string_view> Split(std::string_view s, char sep);
bool StartsWith(std::string_view s, std::string_view prefix);
bool EndsWith(std::string_view s, std::string_view suffix);
std::string ToLower(std::string_view s);
// ASCII case-insensitive equality (HTTP header names, tokens).
bool EqualsIgnoreCase(std::string_view a, std::string_view b);
// Strict parses: the whole (trimmed) string must be a number; nullopt otherwise.
std::optional<int64_t> ParseInt64(std::string_view s);
std::optional<double> ParseDouble(std::string_view s);
// Quotes a value for an error message: "value" with control characters escaped, cut at 80 chars.
std::string Quote(std::string_view s);

// The known name closest to `name` within a small edit distance (at most a third of its length,
// 1..3), or differing only in case; "" when none is close: the "did you mean" of errors and
// warnings (config fields, plugin names, manifest fields).
std::string ClosestName(std::string_view name, std::span<const std::string_view> known);

// k8s.io/apimachinery/pkg/util/rand's alphabet of generated names and SafeEncodeString (no
// vowels, no 0, 1 or 3).
inline constexpr std::string_view kGeneratedNameAlphabet = "bcdfghjklmnpqrstvwxz2456789";

// FNV-1a, 64 bits.
uint64_t Fnv1a64(std::string_view s);

// What the API server makes of metadata.generateName `base` (k8s.io/apiserver
// names.SimpleNameGenerator): `base` cut to 58 characters, then 5 characters of
// kGeneratedNameAlphabet, here drawn from `hash` instead of at random, so that a simulation
// repeats.
std::string GeneratedName(std::string_view base, uint64_t hash);

}  // namespace gpusched::common
