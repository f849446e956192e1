// SPDX-License-Identifier: Apache-2.0
// Small codecs the API client needs: base64 (kubeconfig *-data fields, ExecCredential cluster
// info), RFC 3339 times (expirationTimestamp, event and condition times) and query strings.
// Pure functions, thread-safe, no allocation beyond the returned string.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/common/clock.h"

namespace gpusched::kube::client {

// Standard base64 (RFC 4648 §4) with padding. ASCII whitespace is ignored (PEM-style line
// breaks); missing trailing padding is accepted. nullopt on any other character or a bad length.
std::optional<std::string> Base64Decode(std::string_view in);
std::string Base64Encode(std::string_view in);

// RFC 3339 with optional fraction and a Z or ±hh:mm offset; nullopt when malformed.
std::optional<common::TimePoint> ParseRfc3339(std::string_view s);
// "2024-05-01T12:00:00Z" (metav1.Time: whole seconds, UTC).
std::string FormatRfc3339(common::TimePoint t);
// "2024-05-01T12:00:00.123456Z" (metav1.MicroTime: events.k8s.io eventTime).
std::string FormatRfc3339Micro(common::TimePoint t);

// Percent-encodes a query component (RFC 3986: everything but A-Z a-z 0-9 - . _ ~).
std::string EscapeQueryComponent(std::string_view s);
// "?k=v&k2=v2" with both sides escaped, or "" for no parameters.
std::string EncodeQuery(const std::vector<std::pair<std::string, std::string>>& query);

}  // namespace gpusched::kube::client
