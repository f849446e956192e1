// SPDX-License-Identifier: Apache-2.0
#include "src/scheduler/decision_log.h"

#include "src/common/logging.h"

namespace gpusched::scheduler {

std::string FormatTopScores(const Decision& d) {
  std::string out;
  for (const auto& ns : d.top_scores) {
    if (!out.empty()) out += ',';
    out += ns.node;
    out += '=';
    out += std::to_string(ns.score);
  }
  return out;
}

void LogDecision(const Decision& d) {
  if (!common::V(2) || d.pod == nullptr) return;
  const std::string pod = d.pod->Key();
  if (d.scheduled) {
    common::InfoS(2, "Successfully bound pod to node",
                  {{"pod", pod},
                   {"node", d.node},
                   {"profile", d.profile},
                   {"evaluatedNodes", d.counts.evaluated},
                   {"feasibleNodes", d.counts.feasible},
                   {"totalNodes", d.counts.total},
                   {"topScores", FormatTopScores(d)},
                   {"gpuDevices", api::FormatGpuAssignment(d.gpu)}});
  } else if (d.error) {
    common::InfoS(2, "Error scheduling pod; retrying",
                  {{"pod", pod}, {"profile", d.profile}, {"err", d.message}});
  } else {
    std::string plugins;
    for (const auto& p : d.diagnosis.unschedulable_plugins) {
      if (!plugins.empty()) plugins += ',';
      plugins += p;
    }
    common::InfoS(2, "Unable to schedule pod; no fit; waiting",
                  {{"pod", pod},
                   {"profile", d.profile},
                   {"evaluatedNodes", d.counts.evaluated},
                   {"feasibleNodes", d.counts.feasible},
                   {"totalNodes", d.counts.total},
                   {"reasons", d.message},
                   {"unschedulablePlugins", plugins}});
  }
}

}  // namespace gpusched::scheduler
