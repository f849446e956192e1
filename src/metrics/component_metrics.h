// SPDX-License-Identifier: Apache-2.0
// Instruments of the components below the scheduler, each a thin typed wrapper over catalog
// families (so the component depends on metrics, not on a Prometheus library):
//
//   ApiClientMetrics   gpusched_api_client_requests_total{verb,code},
//                      gpusched_api_client_request_duration_seconds{verb},
//                      gpusched_api_client_rate_limiter_wait_seconds   (kube/client)
//   ExtenderMetrics    gpusched_extender_requests_total{verb,code},
//                      gpusched_extender_request_duration_seconds{verb}  (cmd/ extender)
//
// Label values are small closed sets (HTTP verbs, status codes, extender verbs). Each observation
// is one resolution of the series (a map lookup under the family mutex) plus atomic adds: these
// sit on network calls, not on the scheduling hot path.
//
// Thread safety: every method is thread-safe.
#pragma once

#include <string_view>

#include "src/metrics/registry.h"

namespace gpusched::metrics {

class ApiClientMetrics {
 public:
  explicit ApiClientMetrics(Registry& registry);
  // One attempt of a request. `code` 0: a transport error (label "error"). `seconds` < 0: count
  // only (watch streams, whose duration is their lifetime, not a latency).
  void ObserveRequest(std::string_view verb, int code, double seconds);
  // Time an attempt waited for the client-side QPS/burst token bucket.
  void ObserveRateLimiterWait(double seconds) { limiter_wait_->Observe(seconds); }

 private:
  CounterFamily& requests_;
  HistogramFamily& duration_;
  Histogram* limiter_wait_;
};

class ExtenderMetrics {
 public:
  explicit ExtenderMetrics(Registry& registry);
  void ObserveRequest(std::string_view verb, int code, double seconds);

 private:
  CounterFamily& requests_;
  HistogramFamily& duration_;
};

}  // namespace gpusched::metrics
