// SPDX-License-Identifier: Apache-2.0
// Metric sources of the deletion-cost controller:
//
//   telemetry::prometheus::HttpGetter (injected: libcurl in cmd/, a fake in tests)
//     ├─► ScrapePod: GET the pod's /metrics ──► ParseExposition (Prometheus text format 0.0.4,
//     │             and the OpenMetrics subset that matters: "# EOF", exemplars ignored)
//     └─► QueryPrometheus: telemetry::prometheus::QueryVector ──► sum of the vector / scalar
//
// Nothing from the network can crash the controller: every malformed payload (a bad line, a
// non-JSON answer, an error status, an oversized body) is a Status naming what was wrong, and
// the caller counts the affected cost terms as 0 and reports the error. Thread-safe if the
// HttpGetter is.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/common/clock.h"
#include "src/common/status.h"
#include "src/telemetry/prometheus/query.h"

namespace gpusched::addons::deletion_cost {

// The project's one HTTP GET interface (src/telemetry/prometheus/query.h): implementations honour
// the timeout and cap the body (kResourceExhausted).
using telemetry::prometheus::HttpGetter;
using telemetry::prometheus::HttpGetterPtr;
using telemetry::prometheus::HttpResult;

// One sample of the exposition.
struct Sample {
  std::string name;
  std::vector<std::pair<std::string, std::string>> labels;  // sorted by name
  double value = 0;
};

// Limits of what is accepted from a pod.
inline constexpr size_t kMaxExpositionBytes = size_t{8} << 20;
inline constexpr size_t kMaxSamples = 200000;

// Parses the Prometheus text exposition format. Strict like Prometheus' own scraper: the first
// malformed line fails the whole payload (kInvalidArgument "line 7: ..."). Values accept
// Go float syntax plus NaN, +Inf, -Inf; timestamps are ignored; label values unescape \\ \" \n.
common::StatusOr<std::vector<Sample>> ParseExposition(std::string_view text);

// The sum of the samples named `name` whose labels include every `matchers` pair.
// kNotFound when no series matches.
common::StatusOr<double> SumSeries(
    const std::vector<Sample>& samples, std::string_view name,
    const std::vector<std::pair<std::string, std::string>>& matchers);

// GETs `url` and parses it. Non-2xx answers are errors naming the status.
common::StatusOr<std::vector<Sample>> ScrapePod(HttpGetter& http, const std::string& url,
                                                common::Duration timeout);

// Percent-encodes a query component (RFC 3986 unreserved characters stay).
using telemetry::prometheus::UrlEncode;

// Parses an /api/v1/query answer (telemetry::prometheus::ParseQueryVector): a vector (values
// summed; an empty vector is kNotFound) or a scalar. Errors name the payload's problem or the API's
// errorType/error.
common::StatusOr<double> ParsePrometheusQueryResponse(std::string_view body);

// telemetry::prometheus::QueryVector (GET <base_url>/api/v1/query?query=<promql>), summed as
// ParsePrometheusQueryResponse does.
common::StatusOr<double> QueryPrometheus(HttpGetter& http, const std::string& base_url,
                                         const std::string& promql, common::Duration timeout);

}  // namespace gpusched::addons::deletion_cost
