// SPDX-License-Identifier: Apache-2.0
// Exponential backoff, written once for every retry loop (the scheduling queue's pod backoff,
// the REST client's retries, the informers' relists, the deletion-cost controller's requeues):
// the wait before retry `attempt` (1: the first) is initial · 2^(attempt − 1), capped at `max`,
// as kube-scheduler's podBackoffQ and client-go's wait.Backoff (without jitter: callers that
// want it add their own). An attempt below 1 counts as 1; the doubling stops at the cap, so any
// attempt count is safe.
#pragma once

#include <algorithm>
#include <cstdint>

#include "src/common/clock.h"

namespace gpusched::common {

inline Duration ExponentialBackoff(Duration initial, Duration max, int64_t attempt) {
  Duration d = initial;
  for (int64_t i = 1; i < attempt && d < max; ++i) d *= 2;
  return std::min(d, max);
}

}  // namespace gpusched::common
