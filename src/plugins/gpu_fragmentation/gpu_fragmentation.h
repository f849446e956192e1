// SPDX-License-Identifier: Apache-2.0
// GpuFragmentation: fragmentation-aware GPU placement (FGD, Weng et al., USENIX ATC '23) and the
// paper's baselines as one score + reserve plugin (../shared/reference/openb-trace-and-fgd.md
// §4–6; docs/gpu-placement.md). It filters nothing: run it beside GpuFit, which filters, and
// disable GpuFit at Reserve so that this plugin chooses the devices.
//
//   PreFilter  records the pod's type (cpu, GPU count, milli, models) in the online typical-pod
//              learner (FGD, Learned). Never rejects.
//   PreScore   FGD/Learned: snapshots the learned distribution M and, per distinct node GPU model
//              of the snapshot, which types may use it. All per-pod allocation happens here.
//   Score      policy (args.policy):
//                FGD      floor(100 * sigmoid(-Δ/1000)), Δ = F_{n'}(M) - F_n(M), the best Δ over
//                         the candidate GPUs (sharing pods), lowest-index free GPUs otherwise.
//                Learned  gpusched's default: the same Δ plus a CPU cost, w * c * I' / C' (c the
//                         pod's CPU, I' and C' the node's idle GPU milli and free CPU after the
//                         placement, w = cpuCostPermille / 1000): the idle GPU whose CPU the pod
//                         takes. With exactScores the score is -(Δ + cost) in deltaQuantum steps
//                         with a packing tie-break (less idle GPU, then less CPU left on the node
//                         wins) instead of the coarse sigmoid; device ties go to the fullest GPU.
//                BestFit, DotProd, GpuClustering, GpuPacking, Random: §6 of the reference.
//   Reserve    chooses the devices (FGD/Learned: those of the best Δ; Random: a random fitting GPU
//              for sharing pods; others: best fit) and records them as state.allocation().gpu and
//              annotation gpusched.io/gpu-devices. Unreserve clears both.
//
// Args: policy FGD|Learned (default)|BestFit|DotProd|GpuClustering|GpuPacking|Random;
// decay (per observed pod, 0 < decay <= 1, given in millionths: decayPpm 1..1000000, default
// 999500, i.e. a half-life of ~1400 pods); maxTypes 1..256 (default 128); coveragePercent 1..100
// (default: FGD 95 as in the paper, Learned 100, so rare multi-GPU types count too); exactScores
// bool (default false: scores stay in 0..100; true is for profiles where this is the only score
// plugin, e.g. the simulator); deltaQuantum 1..1000000 in 1/16 milli-GPU (Learned exact scores:
// Δ is compared in steps of this size and ties go to the packing tie-break; default 800, i.e.
// 50 milli-GPU, measured best on the openb default trace); seed (Random's device choice);
// distributionRefreshPods 1..100000 (default 64): FGD/Learned score with the distribution M as
// re-taken from the learner after this many observed pods, and sooner while the learner is young
// (whenever its observation count has doubled), so early pods are not scored against a
// one-pod M; the learner itself observes every pod (a memory-only share at Reserve, with the milli
// it resolves to on the chosen node); 1 re-takes M for every pod. Between
// refreshes the plugin's scores depend only on the pod and the node, so the runtime reuses them
// for equivalent pods (framework/plugin.h, NodeLocal). 64 is within seed noise of 1 on the
// openb traces and makes replays ~2x faster (BENCHMARKS.md); cpuCostPermille 0..10000 (Learned;
// default 250, measured best on the openb traces, docs/gpu-placement.md; 0 = off); typicalPods
// [{cpuMilli, gpuCount, gpuMilli, models, weight}] (FGD/Learned: a fixed M, weights renormalised;
// nothing is learned; the simulator's fgd-trace baseline passes the trace's own M, as the paper).
//
// Per-pod override: annotation gpusched.io/gpu-policy = binpack | spread (both levels) or
// "<node>/<gpu>", e.g. "spread/binpack". When present the node score becomes 100 * used/total GPU
// milli after placement (binpack) or its complement (spread), and the device choice best fit
// (binpack) or the emptiest fitting device (spread). An unparsable value is ignored.
//
// Threading: PreFilter, PreScore and Reserve run on the scheduling thread; Score/ScoreNodes read
// only CycleState and the NodeInfo and allocate nothing.
#pragma once

#include <boost/json/value.hpp>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "src/common/random.h"
#include "src/common/status.h"
#include "src/framework/handle.h"
#include "src/framework/plugin.h"
#include "src/framework/registry.h"
#include "src/plugins/gpu_fragmentation/frag.h"

namespace gpusched::plugins::gpu_fragmentation {

enum class Policy { kFgd, kLearned, kBestFit, kDotProd, kGpuClustering, kGpuPacking, kRandom };

// The policy's name as written in args ("FGD", "Learned", ...).
std::string_view PolicyName(Policy p);

inline constexpr int32_t kMaxTypes = 256;
inline constexpr std::string_view kGpuPolicyAnnotation = "gpusched.io/gpu-policy";

// The parsed per-pod override: each level kNone (policy decides), kBinpack or kSpread.
enum class Pack : uint8_t { kNone, kBinpack, kSpread };
struct PackOverride {
  Pack node = Pack::kNone;
  Pack gpu = Pack::kNone;
};
// Parses the annotation value; both kNone when malformed.
PackOverride ParsePackOverride(std::string_view value);

struct Args {
  Policy policy = Policy::kLearned;
  int64_t decay_ppm = 999500;
  int32_t max_types = 128;
  int32_t coverage_percent = 0;  // 0: the policy's default (FGD 95, Learned 100)
  bool exact_scores = false;
  uint64_t seed = 0x5eed;
  int64_t delta_quantum = 0;  // 0: the default, 800 (50 milli-GPU)
  int32_t refresh_pods = 64;  // distributionRefreshPods
  // cpuCostPermille (Learned): weight, in thousandths, of the CPU cost c * I' / C' added to Δ.
  int32_t cpu_cost_permille = 250;
  // typicalPods: a fixed distribution M (weights renormalised; the learner is then unused). Empty:
  // learn M online. The simulator's fgd-trace baseline passes the trace's own M, as the paper does.
  std::vector<TypicalPod> typical_pods;
};
common::StatusOr<Args> ParseArgs(const boost::json::value& args);

class GpuFragmentation final : public framework::PreFilterPlugin,
                               public framework::PreScorePlugin,
                               public framework::ScorePlugin,
                               public framework::ReservePlugin {
 public:
  static common::StatusOr<framework::PluginPtr> Create(const boost::json::value& args,
                                                       framework::Handle& handle);
  explicit GpuFragmentation(Args args);

  std::string_view Name() const override;
  // Scores read the pod's key fields, the one NodeInfo and the scoring distribution M, whose
  // refreshes StateVersion counts (GpuClustering reads the node's pods: still node-local).
  bool NodeLocal() const override { return true; }
  uint64_t StateVersion() const override { return scoring_version_; }
  framework::Status PreFilter(framework::CycleState& state, const api::Pod& pod,
                              const framework::Snapshot& snapshot) override;
  framework::Status PreScore(framework::CycleState& state, const api::Pod& pod,
                             const framework::Snapshot& snapshot,
                             std::span<const framework::NodeIndex> feasible) override;
  int64_t Score(const framework::CycleState& state, const api::Pod& pod,
                const framework::NodeInfo& node) const override;
  bool HasNormalizeScore() const override { return args_.policy == Policy::kBestFit; }
  framework::Status NormalizeScore(const framework::CycleState& state, const api::Pod& pod,
                                   std::span<int64_t> scores) const override;
  framework::Status Reserve(framework::CycleState& state, const api::Pod& pod,
                            const framework::NodeInfo& node) override;
  void Unreserve(framework::CycleState& state, const api::Pod& pod,
                 std::string_view node) override;

  const TypicalPodLearner& learner() const { return learner_; }
  // Whether M is learned online (FGD/Learned without fixed typicalPods).
  bool Learns() const;

  // Per-pod state built in PreScore (public for the implementation's helpers).
  struct PodState;

 private:
  Args args_;
  TypicalPodLearner learner_;
  common::Random random_;
  // The distribution M that scores use, re-taken from learner_ every args_.refresh_pods
  // observations; scoring_version_ counts the refreshes.
  std::vector<TypicalPod> scoring_types_;
  bool scoring_types_valid_ = false;
  int64_t observed_since_refresh_ = 0;
  int64_t observations_at_refresh_ = 0;
  uint64_t scoring_version_ = 0;
};

}  // namespace gpusched::plugins::gpu_fragmentation
