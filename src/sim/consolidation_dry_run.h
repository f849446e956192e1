// SPDX-License-Identifier: Apache-2.0
// `gpusched consolidate --dry-run` (issue #41): the moves that would make room for the largest GPU
// pods now, for a platform team to review before it opts pods in to the Consolidation plugin. The
// moves are planned by the plugin itself, in the production Scheduler over the simulated cluster
// (one path: what the dry run lists is what the scheduler would do for such pods):
//
//   for each probe size, largest first (every GPU node's GPU count and its halvings down to 2):
//     submit a probe pod asking that many GPUs: priority the highest of the running pods (so every
//     opted-in pod is movable for it), preemptionPolicy Never (DefaultPreemption evicts nothing),
//     tolerating the GPU nodes' own NoSchedule/NoExecute taints (not node.kubernetes.io/ ones)
//       - it binds at once: the room was free already (counted, taken: the next probe needs more)
//       - Consolidation planned moves: the moved pods are evicted, their controllers' replacements
//         placed where the plan held room, the probe nominated (its room held)
//       - neither: the probe is deleted and the size ends, with the probe's message as the reason
//   then every probe binds (Settle), the moves' real destinations are read from the replacements,
//   and the probes are deleted: `after` is the cluster with the moves made.
//
// Sim time does not advance between probes, so the plugin's maxMovesPerMinute is the dry run's
// budget: DryRunConfig sets it to --max-moves. maxMovesPerPod and the movable policy are the
// config's (gpusched.io/movable, movablePriorityClasses, movableNamespaces).
//
// Threading: single-threaded (it drives the Simulator).
#pragma once

#include <boost/json/fwd.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "src/common/status.h"
#include "src/config/config.h"
#include "src/sim/simulator.h"

namespace gpusched::sim {

// Free whole GPUs (no milli-GPU of any pod on the device) over the GPU nodes.
struct FreeGpus {
  int32_t gpu_nodes = 0;
  int64_t gpus = 0;
  int64_t free_gpus = 0;
  int32_t free_nodes = 0;  // GPU nodes with every GPU free
  int64_t free_gpus_on_free_nodes = 0;
  int32_t largest_free_block = 0;  // the most free GPUs on one node
};
FreeGpus FreeGpusOf(const SimCluster& cluster);

struct PlannedMove {
  std::string pod;   // namespace/name of the moved pod
  std::string from;  // its node
  std::string to;    // where its replacement runs; "" when it did not bind (see `message`)
  std::string message;
};

// Room made for one probe.
struct RoomPlan {
  std::string probe;  // namespace/name of the probe pod the room is for
  int32_t gpus = 0;
  std::string node;
  std::string model;  // the node's GPU model ("" when unknown)
  std::vector<PlannedMove> moves;
  bool held = false;  // the probe bound on `node` once the moves were made
};

// One probe size: rooms free already, rooms made by moves, and why no further one.
struct SizeRow {
  int32_t gpus = 0;
  int32_t free_now = 0;
  int32_t made = 0;
  std::string next;  // the last probe's scheduling message
};

struct DryRunResult {
  FreeGpus before;
  FreeGpus after;
  std::vector<SizeRow> sizes;
  std::vector<RoomPlan> plans;
  int32_t moves = 0;
  int32_t max_moves = 0;
  std::string profile;
};

// `config` with its first profile's Consolidation args' maxMovesPerMinute set to `max_moves`.
config::SchedulerConfig DryRunConfig(config::SchedulerConfig config, int32_t max_moves);

// Runs the probes on `sim` (its cluster as Run left it; `sim` built from DryRunConfig). Errors:
// InvalidArgument when the first profile does not run Consolidation at postFilter; an invariant
// violation or a probe the simulator refuses (kInternal).
common::StatusOr<DryRunResult> PlanConsolidationMoves(Simulator& sim, int32_t max_moves);

std::string FormatDryRunText(const DryRunResult& result);
boost::json::value DryRunJson(const DryRunResult& result);

}  // namespace gpusched::sim
