// SPDX-License-Identifier: Apache-2.0
// Time replay (`gpusched simulate --replay`): pods arrive at their times and leave when their run
// is over, so GPU allocation can be followed over a day or a week and compared between profiles.
//
//   arrival    annotation gpusched.io/arrival (a Go duration after the start: "90m"), else
//              metadata.creationTimestamp (relative to the earliest one), else one second after
//              the previous pod; pods arrive in that order (ties in input order)
//   departure  annotation gpusched.io/duration (a Go duration: "2h30m"), counted from the moment
//              the pod is placed; a pod without one never leaves. The openb trace gives its pods
//              deletion_time - creation_time (OpenbOptions::keep_times).
//
// Events run in time order, departures before arrivals at the same instant: a departure deletes
// the pod (SimCluster::DeletePod, as the kubelet's final delete would) and lets the scheduler
// place what now fits (pods waiting as unschedulable are retried on that event, as in a
// cluster, once their backoff is over: time runs on up to 11 s, never past the next event, and
// the sample is taken at the departure); an arrival submits the pod (and when it preempted,
// time runs on the same way so that it binds once its victims are gone). After every event the GPU
// allocation is sampled, from SimCluster's ledger and the Simulator's live counts (O(nodes) with
// no allocation, O(1)). The Simulator must be made with SimOptions::arrival_interval = 0 (replay
// sets the clock itself). Single-threaded, like the Simulator.
//
// Saturated replay (ReplayOptions::load > 0, `--load`): the pods' own arrival times are not used.
// They arrive in input order as a Poisson process (ReplayOptions::seed) over
// ReplayOptions::window, starting over at the first pod when the list runs out (the k-th repeat
// of a pod is named <name>-r<k>, uid cleared), at the rate that makes the offered GPU load L:
//   rate × mean over the pods of (milli-GPU asked × min(duration, window)) = L × cluster milli-GPU
// (a pod without a duration counts for the whole window: it never leaves). Durations are the
// pods' own; the replay ends with the window (departures after it are not replayed; pods still
// waiting count as never placed). Time compression alone cannot do it: replayed at any speed, a
// finite list offers at most its total GPU request (98 % of capacity for openb's default list, half
// of it on average over the window), so the list repeats.
//
// A pod the simulator creates as a controller would (the replacement of a preempted pod,
// Simulator::outcomes()[i].replaces) leaves after its gpusched.io/duration too; it is not an
// arrival and has no wait.
//
// Waits: every pod the scheduler placed or tried to place waits from its arrival to its first
// placement (0 when placed at arrival; a pod never placed waits until the replay's end);
// ReplayWaits sums them per pod size. A pod never placed that fits no node even with every node
// empty (the profile's filters on a second Simulator with the same cluster objects and no pod) is
// counted apart (ReplayWaits::fit_no_node): its wait is not for room, no placement could shorten
// it, and it would hide what does.
#pragma once

#include <boost/json/fwd.hpp>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/common/clock.h"
#include "src/common/status.h"
#include "src/sim/simulator.h"
#include "src/sim/workload.h"

namespace gpusched::sim {

inline constexpr std::string_view kArrivalAnnotation = "gpusched.io/arrival";
inline constexpr std::string_view kDurationAnnotation = "gpusched.io/duration";

struct ReplaySample {
  double hours = 0;           // since the first arrival
  double gpu_allocation = 0;  // % of the cluster's milli-GPU allocated
  int64_t running = 0;        // pods placed and not departed
  int64_t waiting = 0;        // pods whose last attempt failed, not departed
  // The same % per GPU model and per node group (as the report names them), sorted by name.
  std::vector<std::pair<std::string, double>> by_model;
  std::vector<std::pair<std::string, double>> by_group;
};

struct ReplayOptions {
  double load = 0;  // > 0: the saturated replay (see the file comment)
  common::Duration window = std::chrono::hours(24);
  uint64_t seed = 42;
  // Set: the replay stops at this time after the start (`gpusched explain --at`): no event after
  // it is replayed, and a preemptor still waiting for its victims is left waiting, so the
  // Simulator holds the cluster as it was then.
  std::optional<common::Duration> until;
};

// The waits of the pods of one size, from arrival to first placement (see the file comment).
struct ReplayWaits {
  std::string size;  // GPUs asked: "0", "<1" (a share of one GPU), "1", "2", ...; "total"
  // Never placed, and no node could take them even empty (an 8-GPU pod asking more cpu than any
  // 8-GPU node has): they wait for no room, so they are counted here and in nothing below.
  int64_t fit_no_node = 0;
  int64_t pods = 0;
  int64_t waited = 0;        // not placed at arrival
  int64_t never_placed = 0;  // not placed by the end
  // Nearest-rank percentiles and the maximum over all `pods` (those placed at once wait 0), s.
  double p50_s = 0;
  double p90_s = 0;
  double p99_s = 0;
  double max_s = 0;
  double pending_gpu_hours = 0;  // Σ wait × GPUs asked (a memory-only share: as placed, else 0)
};

struct ReplayResult {
  std::vector<ReplaySample> samples;  // one per event, in time order
  double span_hours = 0;              // first arrival to last event
  double mean_gpu_allocation = 0;     // time-weighted over the span, %
  double peak_gpu_allocation = 0;     // %
  int64_t departed = 0;               // pods that left
  int64_t arrivals = 0;               // pods submitted
  int64_t placements = 0;             // binds, replacements included
  int64_t moves = 0;                  // pods moved by consolidation
  int64_t moved_again = 0;            // moves of a pod that replaced a moved pod
  // Ascending size, then the total; sizes with no pod are left out.
  std::vector<ReplayWaits> waits;
  ReplayOptions options;  // as run (load 0: the pods' own times)
};

// Replays `workload` on `sim`: Simulator::AddClusterObjects first (every kind a static run
// reads), SubmitWorkloadPod per arrival, and SettleNominated at the end, as Simulator::Run does.
// Errors: an invalid arrival or duration annotation names the pod and the value; an invariant
// violation; with a load, a load the pods cannot offer (none asks for a GPU).
common::StatusOr<ReplayResult> RunReplay(Simulator& sim, const Workload& workload,
                                         const ReplayOptions& options = {});

// "t_hours,gpu_allocation_percent,running_pods,waiting_pods" and one row per sample.
std::string ReplayCurveCsv(const ReplayResult& result);
// "Replay: ..." lines and the waits table for the text report, and the JSON object (`replay`,
// samples and waits included).
std::string FormatReplayText(const ReplayResult& result);
boost::json::value ReplayToJson(const ReplayResult& result);

}  // namespace gpusched::sim
