// SPDX-License-Identifier: Apache-2.0
// The per-decision log line, kube-scheduler style: cmd/ installs LogDecision as (part of) the
// Scheduler's DecisionObserver. At -v=2 it writes one structured line per scheduling attempt:
//
//   placed:        "Successfully bound pod to node" pod node evaluatedNodes feasibleNodes
//                  totalNodes topScores="gpu-1=180,gpu-2=120,gpu-3=90" [gpuDevices]
//   no fit:        "Unable to schedule pod; no fit; waiting" pod evaluatedNodes feasibleNodes
//                  totalNodes reasons="0/5 nodes are available: ..." unschedulablePlugins
//   error:         "Error scheduling pod; retrying" pod err
//
// Thread-safe (it only formats the Decision and logs).
#pragma once

#include <string>

#include "src/scheduler/scheduler.h"

namespace gpusched::scheduler {

// Logs `d` at verbosity 2 (nothing below it).
void LogDecision(const Decision& d);

// "gpu-1=180,gpu-2=120": the decision's top scores, best first; empty when none.
std::string FormatTopScores(const Decision& d);

}  // namespace gpusched::scheduler
