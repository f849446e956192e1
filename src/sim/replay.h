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
// the sample is taken at the departure); an arrival submits the pod. After every event the GPU
// allocation is sampled. The
// Simulator must be made with SimOptions::arrival_interval = 0 (replay sets the clock itself).
// Single-threaded, like the Simulator.
#pragma once

#include <boost/json/fwd.hpp>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

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

struct ReplayResult {
  std::vector<ReplaySample> samples;  // one per event, in time order
  double span_hours = 0;              // first arrival to last event
  double mean_gpu_allocation = 0;     // time-weighted over the span, %
  double peak_gpu_allocation = 0;     // %
  int64_t departed = 0;               // pods that left
};

// Replays `workload` on `sim`: Simulator::AddClusterObjects first (every kind a static run
// reads), SubmitWorkloadPod per arrival, and SettleNominated at the end, as Simulator::Run does.
// Errors: an invalid arrival or duration annotation names the pod and the value; an invariant
// violation.
common::StatusOr<ReplayResult> RunReplay(Simulator& sim, const Workload& workload);

// "t_hours,gpu_allocation_percent,running_pods,waiting_pods" and one row per sample.
std::string ReplayCurveCsv(const ReplayResult& result);
// "Replay: ..." lines for the text report, and the JSON object (`replay`, samples included).
std::string FormatReplayText(const ReplayResult& result);
boost::json::value ReplayToJson(const ReplayResult& result);

}  // namespace gpusched::sim
