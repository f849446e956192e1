// SPDX-License-Identifier: Apache-2.0
// Semantic versions as the Kubernetes CEL semver library reads them (github.com/blang/semver/v4
// Parse: "MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD]", no leading zeroes, build metadata ignored by
// comparisons). A CEL semver value keeps the validated text and compares it on the fly, so that a
// device's version attribute needs no allocation per evaluation.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gpusched::cel {

struct SemverParts {
  uint64_t major = 0;
  uint64_t minor = 0;
  uint64_t patch = 0;
  std::string_view pre;    // dot-separated prerelease identifiers, "" when none
  std::string_view build;  // build metadata, "" when none
};

// Parses `text` strictly; on failure returns nullopt and sets *why (blang/semver's words).
std::optional<SemverParts> ParseSemver(std::string_view text, std::string* why);

// The normalized form semver(s, true) parses: an optional "v" prefix removed, leading zeroes
// removed, missing minor/patch filled with 0. nullopt and *why when it cannot be normalized.
std::optional<std::string> NormalizeSemver(std::string_view text, std::string* why);

// -1, 0, 1. REQUIRES: both parse.
int CompareSemver(std::string_view a, std::string_view b);

}  // namespace gpusched::cel
