// SPDX-License-Identifier: Apache-2.0
#include "src/plugins/helper/taints.h"

namespace gpusched::plugins::helper {

bool TolerationsTolerateTaint(std::span<const api::Toleration> tolerations,
                              const api::Taint& taint) {
  for (const api::Toleration& tol : tolerations) {
    if (tol.Tolerates(taint)) return true;
  }
  return false;
}

}  // namespace gpusched::plugins::helper
