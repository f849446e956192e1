// SPDX-License-Identifier: Apache-2.0
#include "src/metrics/component_metrics.h"

#include <string>

#include "src/metrics/catalog.h"

namespace gpusched::metrics {

ApiClientMetrics::ApiClientMetrics(Registry& registry)
    : requests_(AddCounter(registry, names::kApiRequests)),
      duration_(AddHistogram(registry, names::kApiRequestDuration)),
      limiter_wait_(AddHistogram(registry, names::kApiRateLimiterWait).With({})) {}

void ApiClientMetrics::ObserveRequest(std::string_view verb, int code, double seconds) {
  std::string v(verb);
  requests_.With({v, code == 0 ? std::string("error") : std::to_string(code)})->Inc();
  if (seconds >= 0) duration_.With({v})->Observe(seconds);
}

ExtenderMetrics::ExtenderMetrics(Registry& registry)
    : requests_(AddCounter(registry, names::kExtenderRequests)),
      duration_(AddHistogram(registry, names::kExtenderRequestDuration)) {}

void ExtenderMetrics::ObserveRequest(std::string_view verb, int code, double seconds) {
  std::string v(verb);
  requests_.With({v, std::to_string(code)})->Inc();
  duration_.With({v})->Observe(seconds);
}

}  // namespace gpusched::metrics
