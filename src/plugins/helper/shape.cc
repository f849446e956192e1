// SPDX-License-Identifier: Apache-2.0
#include "src/plugins/helper/shape.h"

namespace gpusched::plugins::helper {

int64_t BrokenLinear(std::span<const FunctionShapePoint> shape, int64_t p) {
  for (size_t i = 0; i < shape.size(); ++i) {
    if (p <= shape[i].utilization) {
      if (i == 0) return shape[0].score;
      const FunctionShapePoint& a = shape[i - 1];
      const FunctionShapePoint& b = shape[i];
      return a.score + (b.score - a.score) * (p - a.utilization) / (b.utilization - a.utilization);
    }
  }
  return shape.empty() ? 0 : shape.back().score;
}

}  // namespace gpusched::plugins::helper
