// SPDX-License-Identifier: Apache-2.0
// Taint and toleration helpers (k8s.io/api core/v1 helpers): which taints a pod's tolerations
// leave untolerated. Allocation-free; safe to call from Filter.
#pragma once

#include <span>

#include "src/api/types.h"

namespace gpusched::plugins::helper {

// True when any toleration tolerates `taint` (v1helper.TolerationsTolerateTaint).
bool TolerationsTolerateTaint(std::span<const api::Toleration> tolerations,
                              const api::Taint& taint);

// True for the effects that forbid scheduling: NoSchedule and NoExecute
// (DoNotScheduleTaintsFilterFunc).
inline bool IsDoNotScheduleTaint(const api::Taint& t) {
  return t.effect == api::TaintEffect::kNoSchedule || t.effect == api::TaintEffect::kNoExecute;
}

// The first taint, in node order, that passes `filter` and is not tolerated; nullptr when none
// (v1helper.FindMatchingUntoleratedTaint).
template <typename Filter>
const api::Taint* FindMatchingUntoleratedTaint(std::span<const api::Taint> taints,
                                               std::span<const api::Toleration> tolerations,
                                               Filter filter) {
  for (const api::Taint& t : taints) {
    if (!filter(t)) continue;
    if (!TolerationsTolerateTaint(tolerations, t)) return &t;
  }
  return nullptr;
}

}  // namespace gpusched::plugins::helper
