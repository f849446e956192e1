// SPDX-License-Identifier: Apache-2.0
// The gang part of a simulation report (report.h): per gang (api/gang.h), its policy, how many
// members arrived and were bound, on which nodes, and its state:
//
//   Placed    at least minMember members bound
//   Waiting   fewer than minMember bound: tried and not placed, or still missing members
//   TimedOut  not placed within its schedule timeout (sim time)
//   Partial   some but fewer than minMember members bound — the all-or-nothing rule broken; the
//             scheduler never leaves a gang so (tests assert it), so seeing it is a bug
#pragma once

#include <boost/json/fwd.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "src/sim/simulator.h"

namespace gpusched::sim {

struct GangRow {
  std::string gang;  // "PodGroup ml/train", "Volcano PodGroup ml/job", "Workload ml/llm/workers"
  int32_t min_member = 0;
  int32_t members = 0;  // submitted
  int32_t bound = 0;
  std::string state;
  std::vector<std::string> nodes;  // where its members are bound, sorted
  int64_t gpu_milli_bound = 0;
};

// Every gang with a known policy or at least one submitted member, sorted by name.
std::vector<GangRow> BuildGangRows(const Simulator& sim);
// "Gangs: N placed, W waiting, T timed out" and a table; empty when there are no gangs.
std::string FormatGangsText(const std::vector<GangRow>& rows, size_t max_listed);
boost::json::value GangsToJson(const std::vector<GangRow>& rows);

}  // namespace gpusched::sim
