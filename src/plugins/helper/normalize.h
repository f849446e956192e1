// SPDX-License-Identifier: Apache-2.0
// Score normalization shared by Score plugins. Pure functions over a pod's score buffer (one entry
// per feasible node); they allocate nothing and may run on the scheduling thread only (the runtime
// calls NormalizeScore once per pod).
#pragma once

#include <cstdint>
#include <span>

namespace gpusched::plugins::helper {

// kube-scheduler's helper.DefaultNormalizeScore: scales scores so the largest becomes
// `max_priority` (score * max_priority / max, integer division); with `reverse`, each score s
// becomes max_priority - s. When every score is 0 (or negative), all become 0, or max_priority when
// `reverse` (every node is equally good).
void DefaultNormalizeScore(int64_t max_priority, bool reverse, std::span<int64_t> scores);

// Min-max normalization to 0..100, as the FGD paper's baselines do:
// floor((s - min) * 100 / (max - min)); all 0 when max == min (including an empty buffer).
void MinMaxNormalizeScore(std::span<int64_t> scores);

// floor(a / b) for b > 0 (C++ division truncates toward zero).
inline int64_t FloorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

}  // namespace gpusched::plugins::helper
