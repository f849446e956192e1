// SPDX-License-Identifier: Apache-2.0
// The FGD paper's replay protocol (Weng et al., USENIX ATC '23;
// docs/simulator.md, "Replaying the openb trace"), run with the production scheduler:
//
//   1. cluster: the trace's node list, added in a seeded random order (only tie-breaking order
//      changes, as the paper's renaming does);
//   2. pods: the trace's pods, shuffled with the seed;
//   3. inflate to `inflation` x cluster milli-GPU (1.3 = 130 %): while the total demand is below
//      the target, draw a pod uniformly with replacement from the original list, name it
//      "<name>-tuned-<i>" and append it; stop when the next draw would pass the target. As in the
//      artifact, the stop test adds the drawn pod's per-GPU milli d, while the total adds k*d, so a
//      final multi-GPU draw can overshoot slightly. Above the target, pods are removed uniformly
//      at random until the total is at or below it;
//   4. each pod is submitted once, in order, with retry = false (a pod that fits nowhere is
//      deleted and never retried); no pod ever departs;
//   5. after every pod: arrived % = sum of k*d over pods tried so far (failed ones included) and
//      allocation % = sum of k*d over placed pods, both over the cluster's milli-GPU;
//      unallocated % = 100 - allocation %;
//   6. curve: samples are bucketed by arrived % rounded to an integer (round half to even, as the
//      artifact's analysis script's Python round() does), allocation % rounded to two decimals
//      and averaged per bucket; an empty bucket takes the samples within +-1 of it (the script's
//      fallback). The headline is the unallocated % of bucket 100.
//
// Random streams: the workload (shuffle, inflation) and the node order use generators seeded
// from `seed` that are separate from the scheduler's tie-breaking generator, so every policy sees
// the same pod sequence for a seed. Our generator differs from Go's math/rand, so per-seed numbers
// differ from the paper's; distributions over seeds are what compare.
//
// Cost: per pod, one scheduling cycle plus O(1) bookkeeping (no per-node or per-pod scans).
#pragma once

#include <boost/json/fwd.hpp>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "src/api/types.h"
#include "src/common/status.h"
#include "src/config/config.h"
#include "src/sim/simulator.h"
#include "src/sim/workload.h"

namespace gpusched::sim::trace {

// The paper's BestFit baseline as a configuration: SimulationDefaultConfig() whose profile scores
// with GpuFit alone (scoreMode BestFit), every default score plugin disabled, and GpuFit (not
// GpuFragmentation) choosing the devices at Reserve. The paper gives the
// policy plugin weight 1000; our config validation caps weights at 100, and with a single score
// plugin the weight only scales the totals, so the chosen node is the same.
config::SchedulerConfig BestFitSchedulerConfig();

// A GpuFragmentation policy as a configuration (docs/gpu-placement.md): SimulationDefaultConfig()
// plus GpuFragmentation (args {policy, exactScores: true}) as the only score plugin and the
// device chooser at Reserve (GpuFit keeps filtering). `policy` is a GpuFragmentation policy name:
// FGD, Learned, BestFit, DotProd, GpuClustering, GpuPacking or Random.
config::SchedulerConfig FragmentationSchedulerConfig(std::string_view policy);

// The paper's typical pods of `trace` (docs/simulator.md, "Typical pods"): its pods grouped by
// (CPU milli, GPU count, milli per GPU, models), groups sorted by pod count (ties: the larger key
// first), the shortest prefix covering >= `coverage` of the pods; as GpuFragmentation
// `typicalPods` args (weight = pod count; the plugin renormalises).
boost::json::array TraceTypicalPods(const Workload& trace, double coverage = 0.95);

// The paper's FGD baseline: FragmentationSchedulerConfig("FGD") with M read from the evaluated
// trace's own pod list (TraceTypicalPods), as the paper's artifact does. Only for reproducing the
// paper; gpusched's policies never read the trace (`gpusched simulate --policy fgd-trace`).
config::SchedulerConfig TraceFgdSchedulerConfig(const Workload& trace);

struct FgdOptions {
  uint64_t seed = 42;      // the paper uses 42..51
  double inflation = 1.3;  // target demand, in multiples of cluster GPU capacity; <= 0: none
  bool check_invariants = false;
};

// One bucket of the curve.
struct FgdPoint {
  int32_t arrived_pct = 0;
  double allocated_pct = 0;
  double unallocated_pct = 0;
  int64_t samples = 0;  // samples averaged (from neighbours when the bucket itself is empty)
};

struct FgdResult {
  uint64_t seed = 0;
  int32_t nodes = 0;
  int64_t cluster_gpu_milli = 0;
  int64_t original_pods = 0;
  int64_t original_demand_milli = 0;
  int64_t appended_pods = 0;  // resampled "-tuned-" pods
  int64_t removed_pods = 0;
  int64_t tried_pods = 0;
  int64_t placed_pods = 0;
  int64_t failed_pods = 0;
  int64_t arrived_milli = 0;                 // at the end
  int64_t allocated_milli = 0;               // at the end
  std::optional<double> unallocated_at_100;  // nullopt when arrivals never reach ~100 %
  std::vector<FgdPoint> curve;               // arrived 0..max, ascending
  int64_t decisions = 0;
  double wall_seconds = 0;  // scheduling wall time, from the caller's clock
};

// Steps 2–3: the pod sequence for `seed`. Copies are made only for appended pods.
std::vector<api::PodPtr> FgdPodSequence(std::span<const api::PodPtr> pods,
                                        int64_t cluster_gpu_milli, const FgdOptions& options,
                                        int64_t* appended, int64_t* removed);

// The pods of `seq` that have arrived by the curve's bucket `arrived_pct` (step 6): the length
// of the longest prefix whose arrived % rounds (half to even) to at most `arrived_pct`. Every
// sample of that bucket comes from a prefix no longer than it.
size_t FgdArrivedPrefix(std::span<const api::PodPtr> seq, int64_t cluster_gpu_milli,
                        int32_t arrived_pct);

// Buckets per-pod samples (arrived %, allocation %) into the curve (step 6).
std::vector<FgdPoint> FgdCurve(std::span<const std::pair<double, double>> samples);

struct FgdRun {
  std::unique_ptr<Simulator> sim;  // the finished simulation (for the report)
  FgdResult result;
};

// Runs the whole protocol on `trace` with `config` (one profile; percentageOfNodesToScore 100 is
// the protocol's, the caller sets it). Fails on an invalid config, an empty cluster or an
// invariant violation (with check_invariants).
common::StatusOr<FgdRun> RunFgdProtocol(const Workload& trace,
                                        const config::SchedulerConfig& config, Simulator::Deps deps,
                                        const FgdOptions& options);

// The curve as CSV: arrived_pct,allocated_pct,unallocated_pct,samples.
std::string FgdCurveCsv(const FgdResult& result);
boost::json::value FgdToJson(const FgdResult& result);
std::string FgdSummaryText(const FgdResult& result);

}  // namespace gpusched::sim::trace
