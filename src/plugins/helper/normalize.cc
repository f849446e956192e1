// SPDX-License-Identifier: Apache-2.0
#include "src/plugins/helper/normalize.h"

#include <algorithm>

namespace gpusched::plugins::helper {

void DefaultNormalizeScore(int64_t max_priority, bool reverse, std::span<int64_t> scores) {
  int64_t max_count = 0;
  for (int64_t s : scores) max_count = std::max(max_count, s);
  if (max_count == 0) {
    if (reverse) std::fill(scores.begin(), scores.end(), max_priority);
    // Upstream leaves the (zero or negative) scores as they are; clamp negatives to stay in range.
    if (!reverse) {
      for (int64_t& s : scores) s = std::max<int64_t>(s, 0);
    }
    return;
  }
  for (int64_t& s : scores) {
    int64_t v = max_priority * s / max_count;
    if (reverse) v = max_priority - v;
    s = std::clamp<int64_t>(v, 0, max_priority);
  }
}

void MinMaxNormalizeScore(std::span<int64_t> scores) {
  if (scores.empty()) return;
  auto [lo, hi] = std::minmax_element(scores.begin(), scores.end());
  const int64_t min = *lo;
  const int64_t max = *hi;
  if (max == min) {
    std::fill(scores.begin(), scores.end(), 0);
    return;
  }
  for (int64_t& s : scores) s = (s - min) * 100 / (max - min);
}

}  // namespace gpusched::plugins::helper
