// SPDX-License-Identifier: Apache-2.0
// A client of the Prometheus HTTP API's instant query endpoint, keeping each series' labels:
//
//   HttpGetter (injected: libcurl in cmd/, a fake in tests)
//     └─► QueryVector: GET <base>/api/v1/query?query=<PromQL> ──► ParseQueryVector
//
// Nothing from the network can crash the caller: a malformed payload, an API error or an HTTP
// error is a Status naming what was wrong. Thread-safe if the HttpGetter is.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/common/clock.h"
#include "src/common/status.h"

namespace gpusched::telemetry::prometheus {

struct HttpResult {
  int status = 0;
  std::string body;
  std::string content_type;
};

// A plain HTTP GET. Implementations must honour `timeout` and cap the body (kResourceExhausted).
class HttpGetter {
 public:
  virtual ~HttpGetter() = default;
  // Transport errors are kUnavailable / kDeadlineExceeded; any HTTP answer is returned.
  virtual common::StatusOr<HttpResult> Get(const std::string& url, common::Duration timeout) = 0;
};
using HttpGetterPtr = std::unique_ptr<HttpGetter>;

// One series of an instant vector.
struct Series {
  std::vector<std::pair<std::string, std::string>> labels;  // sorted by name
  double value = 0;
  // The value of label `name`, "" when absent.
  std::string_view Label(std::string_view name) const;
};

// Percent-encodes a query component (RFC 3986 unreserved characters stay).
std::string UrlEncode(std::string_view s);

// A sample value as Prometheus writes it (Go's strconv.ParseFloat for the forms used): decimal
// floats, NaN, +Inf, Inf, -Inf; the whole token must be consumed (no hex, no "nan(...)").
// nullopt when it is not one.
std::optional<double> ParseSampleValue(std::string_view tok);

// Parses an /api/v1/query answer. A vector gives its series (an empty vector: no series); a
// scalar gives one series without labels. Values accept decimal floats, NaN, +Inf, -Inf. Errors
// (kInvalidArgument) name the payload's problem or the API's errorType/error.
common::StatusOr<std::vector<Series>> ParseQueryVector(std::string_view body);

// GET <base_url>/api/v1/query?query=<promql> and ParseQueryVector. Non-2xx answers are errors
// naming the status (and the API's error message when the body carries one).
common::StatusOr<std::vector<Series>> QueryVector(HttpGetter& http, const std::string& base_url,
                                                  const std::string& promql,
                                                  common::Duration timeout);

}  // namespace gpusched::telemetry::prometheus
