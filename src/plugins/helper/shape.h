// SPDX-License-Identifier: Apache-2.0
// Broken-linear scoring functions (kube-scheduler's helper.FunctionShape), used by the
// RequestedToCapacityRatio strategy of NodeResourcesFit.
#pragma once

#include <cstdint>
#include <span>

namespace gpusched::plugins::helper {

struct FunctionShapePoint {
  int64_t utilization = 0;  // 0..100, strictly increasing along a shape
  int64_t score = 0;        // already scaled to 0..kMaxNodeScore
};

// The broken-linear function through `shape` at `p` (BuildBrokenLinearFunction): below the first
// point it is the first score, above the last point the last score, and in between the linear
// interpolation with integer division. REQUIRES: shape is non-empty, utilizations increasing.
int64_t BrokenLinear(std::span<const FunctionShapePoint> shape, int64_t p);

}  // namespace gpusched::plugins::helper
