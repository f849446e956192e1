// SPDX-License-Identifier: Apache-2.0
// Two (or more) configurations on the same input, side by side (`gpusched simulate --compare
// A.yaml B.yaml`): one column per run, one row per figure — pods scheduled and unschedulable, GPU
// allocation at the end, GPUs partly used (fragments), idle GPU nodes, decisions, and with
// --replay the time-weighted mean and the peak GPU allocation. Pure functions.
#pragma once

#include <boost/json/fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "src/sim/replay.h"
#include "src/sim/report.h"

namespace gpusched::sim {

struct ComparedRun {
  std::string name;  // the config file
  Report report;
  std::optional<ReplayResult> replay;
};

std::string FormatComparisonText(const std::vector<ComparedRun>& runs);
// {"runs": [{"name", "report", "replay"?}]}
boost::json::value ComparisonToJson(const std::vector<ComparedRun>& runs);

}  // namespace gpusched::sim
