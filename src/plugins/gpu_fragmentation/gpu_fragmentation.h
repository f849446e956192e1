// SPDX-License-Identifier: Apache-2.0
// GpuFragmentation: fragmentation-aware GPU placement (FGD, Weng et al., USENIX ATC '23) and the
// paper's baselines as one score + reserve plugin (docs/gpu-placement.md, "The FGD paper's
// definitions"). It filters nothing: run it beside GpuFit, which filters, and
// disable GpuFit at Reserve so that this plugin chooses the devices.
//
//   PreFilter  records the pod's type (cpu, GPU count, milli, models) in the online typical-pod
//              learner (FGD, Learned). Never rejects.
//   PreScore   FGD/Learned: snapshots the learned distribution M and, per distinct node GPU model
//              of the snapshot, which types may use it (kept while neither M nor the node objects
//              change). All per-pod allocation happens here.
//   Score      policy (args.policy):
//                FGD      floor(100 * sigmoid(-Δ/1000)), Δ = F_{n'}(M) - F_n(M), the best Δ over
//                         the candidate GPUs (sharing pods), lowest-index free GPUs otherwise.
//                Learned  gpusched's default (and the default profile's): the same Δ plus three
//                         costs, all in milli-GPU: CPU, w_c * c * I' / C' (c the pod's CPU, I' and
//                         C' the node's idle GPU milli and free CPU after the placement: the idle
//                         GPU whose CPU the pod takes); model, w_m * g * pressure(model) (g the GPU
//                         milli the pod takes; pressure: the share of the model's idle GPU that
//                         pods restricted to some models will need, ModelPressure); utilization,
//                         w_u * g * measured GPU utilization. The key is -(Δ + costs) in steps of
//                         the pod's Δ step (deltaQuantumPermille of g, at least deltaQuantum;
//                         cpuPodDeltaQuantum for a pod without GPUs, which also loses 2^20 steps
//                         on every GPU node, so it prefers any node without GPUs that fits), then
//                         a packing tie-break (less idle GPU, then less CPU left). With exactScores
//                         the key is the score; without (the default profile), Score is on the
//                         0..100 scale every plugin shares, one point per step below the best
//                         node (NormalizeScore), and the key breaks ties between equal totals
//                         (TieBreakRule kRawScore). Device ties go to the fullest GPU.
//                BestFit, DotProd, GpuClustering, GpuPacking, Random: the paper's formulas
//                         (docs/gpu-placement.md, "The FGD paper's definitions").
//   Reserve    chooses the devices (FGD/Learned: those of the best Δ; Random: a random fitting GPU
//              for sharing pods; others: best fit) and records them as state.allocation().gpu and
//              annotation gpusched.io/gpu-devices. Unreserve clears both.
//
// Args: policy FGD|Learned (default)|BestFit|DotProd|GpuClustering|GpuPacking|Random;
// decay (per observed pod, 0 < decay <= 1, given in millionths: decayPpm 1..1000000, default
// 999500, i.e. a half-life of ~1400 pods); maxTypes 1..256 (default 128); coveragePercent 1..100
// (default: FGD 95 as in the paper, Learned 100, so rare multi-GPU types count too); exactScores
// bool (default false: scores stay in 0..100; true is for profiles where this is the only score
// plugin, e.g. the simulator's --policy); deltaQuantum 1..1000000 in 1/16 milli-GPU (Learned: the
// smallest Δ step, default 800, i.e. 50 milli-GPU); deltaQuantumPermille 0..1000 (Learned: the
// step of a GPU pod as thousandths of the GPU milli it takes, default 250); cpuPodDeltaQuantum
// 1..1000000 in 1/16 milli-GPU (Learned: the step of a pod without GPUs, default 20480, i.e. 1280
// milli-GPU); seed (Random's device choice); tieBreak Random (default) | NodeOrder (FGD and the
// paper's other baselines: ties go to the first node in the cluster's order, as the paper's
// artifact breaks them; Learned and Random ignore it);
// distributionRefreshPods 1..100000 (default 64): FGD/Learned score with the distribution M as
// re-taken from the learner after this many observed pods, and sooner while the learner is young
// (whenever its observation count has doubled), so early pods are not scored against a
// one-pod M; the learner itself observes every pod (a memory-only share at Reserve, with the milli
// it resolves to on the chosen node); 1 re-takes M for every pod. Between
// refreshes the plugin's scores depend only on the pod and the node, so the runtime reuses them
// for equivalent pods (framework/plugin.h, NodeLocal). 64 is within seed noise of 1 on the
// openb traces and makes replays ~2x faster (BENCHMARKS.md); cpuCostPermille 0..10000 (Learned;
// default 250; 0 = off); modelCostPermille 0..10000 (Learned; default 1000); utilizationCost-
// Permille 0..10000 (Learned; default 1000); typicalPods
// [{cpuMilli, gpuCount, gpuMilli, models, weight}] (FGD/Learned: a fixed M, weights renormalised;
// nothing is learned; the simulator's fgd-trace baseline passes the trace's own M, as the paper).
// The defaults were measured on the openb traces (docs/gpu-placement.md).
//
// Per-pod override: annotation gpusched.io/gpu-policy = binpack | spread (both levels) or
// "<node>/<gpu>", e.g. "spread/binpack". When present the node score becomes 100 * used/total GPU
// milli after placement (binpack) or its complement (spread), and the device choice best fit
// (binpack) or the emptiest fitting device (spread). An unparsable value is ignored.
//
// Threading: PreFilter, PreScore and Reserve run on the scheduling thread; Score/ScoreNodes read
// only CycleState and the NodeInfo, and allocate nothing (ScoreNodes: once its per-thread table
// has grown).
#pragma once

#include <boost/json/fwd.hpp>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "src/common/random.h"
#include "src/common/status.h"
#include "src/framework/dra_view.h"
#include "src/framework/handle.h"
#include "src/framework/plugin.h"
#include "src/framework/registry.h"
#include "src/plugins/gpu_fragmentation/frag.h"

namespace gpusched::plugins::gpu_fragmentation {

enum class Policy { kFgd, kLearned, kBestFit, kDotProd, kGpuClustering, kGpuPacking, kRandom };
// How the paper's baselines break ties between nodes of equal score: at random (kube-scheduler's
// selectHost) or toward the first node in the cluster's order (the paper's artifact;
// docs/gpu-placement.md, "Reproducing the paper's baselines: the tie-break"). Learned and Random
// ignore it.
enum class TieOrder { kRandom, kNodeOrder };

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

// Learned's default Δ step of exact scores, in 1/16 milli-GPU: 800/16 = 50 milli-GPU.
inline constexpr int64_t kDefaultDeltaQuantum = 800;

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
  // modelCostPermille (Learned): weight, in thousandths, of the model cost: the GPU milli a pod
  // takes times the pressure on the node's model from pods that may use only some models.
  int32_t model_cost_permille = 1000;
  // Learned's Δ step (DeltaStep in the .cc): deltaQuantumPermille (0..1000, default 250) of the
  // GPU milli a GPU pod takes, at least deltaQuantum; cpuPodDeltaQuantum (1/16 milli-GPU,
  // 1..1000000, default 20480 = 1280 milli-GPU) for a pod without GPUs.
  int64_t delta_quantum_permille = 250;
  int64_t cpu_pod_delta_quantum = 20480;
  // utilizationCostPermille (Learned): weight, in thousandths, of the GPU milli a pod takes times
  // the node's measured GPU utilization (0 when unknown).
  int32_t utilization_cost_permille = 1000;
  TieOrder tie_break = TieOrder::kRandom;  // tieBreak: Random | NodeOrder
};
common::StatusOr<Args> ParseArgs(const boost::json::value& args);
// `a` with the policy-dependent defaults filled in (its 0 fields).
Args WithDefaults(Args a);

class GpuFragmentation final : public framework::PreFilterPlugin,
                               public framework::PreScorePlugin,
                               public framework::ScorePlugin,
                               public framework::ReservePlugin,
                               public framework::EnqueueExtensions {
 public:
  static common::StatusOr<framework::PluginPtr> Create(const boost::json::value& args,
                                                       framework::Handle& handle);
  // `dra`: the DRA objects (null: none): whole GPUs left to DRA are not chosen here at Reserve.
  explicit GpuFragmentation(Args args, const framework::DraView* dra = nullptr);

  std::string_view Name() const override;
  // The cluster events that can make a pod this plugin rejected schedulable, with their hints
  // (upstream's EventsToRegister and isSchedulableAfter* functions).
  std::vector<framework::ClusterEventWithHint> EventsToRegister() const override;
  // Scores read the pod's key fields, the one NodeInfo and the scoring distribution M, whose
  // refreshes StateVersion counts (GpuClustering reads the node's pods: still node-local).
  bool NodeLocal() const override { return true; }
  // Reads no node identity, and the node's pods one by one only under GpuClustering.
  bool SameForTwinNodes(const framework::CycleState& state, const api::Pod& pod) const override;
  uint64_t StateVersion() const override { return scoring_version_; }
  framework::Status PreFilter(framework::CycleState& state, const api::Pod& pod,
                              const framework::Snapshot& snapshot) override;
  framework::Status PreScore(framework::CycleState& state, const api::Pod& pod,
                             const framework::Snapshot& snapshot,
                             std::span<const framework::NodeIndex> feasible) override;
  // Each node on its own, except that FGD and Learned score nodes in the same state (model, GPU
  // count, health, GPU memory, free CPU, utilization, each device's used milli and memory; not
  // NVLink-island nodes) once per call: equal to scoring each node alone. Allocation-free after
  // warm-up (a per-thread table).
  void ScoreNodes(const framework::CycleState& state, const api::Pod& pod,
                  const framework::Snapshot& snapshot, std::span<const framework::NodeIndex> nodes,
                  std::span<int64_t> out) const override;
  bool HasNormalizeScore() const override;
  framework::Status NormalizeScore(const framework::CycleState& state, const api::Pod& pod,
                                   std::span<int64_t> scores) const override;
  // Learned on the shared scale: kRawScore (the exact key); FGD and the paper's other baselines
  // with tieBreak NodeOrder: kFirstNode.
  TieBreak TieBreakRule() const override;
  // Learned: the cost in GPUs (fragmentation Δ, model, CPU and utilization terms), its Δ steps
  // and the packing tie-break; FGD: Δ; the per-pod override: the node's GPU used after.
  std::string ExplainScore(const framework::CycleState& state, const api::Pod& pod,
                           const framework::NodeInfo& node, int64_t raw) const override;
  framework::Status Reserve(framework::CycleState& state, const api::Pod& pod,
                            const framework::NodeInfo& node) override;
  void Unreserve(framework::CycleState& state, const api::Pod& pod, std::string_view node) override;

  const TypicalPodLearner& learner() const { return learner_; }
  // Whether M is learned online (FGD/Learned without fixed typicalPods).
  bool Learns() const;

  // Per-pod state built in PreScore, and the tables it shares with the other pods scored between
  // two refreshes of M (public for the implementation's helpers).
  struct PodState;
  struct Tables;

 private:
  Args args_;
  const framework::DraView* dra_;
  TypicalPodLearner learner_;
  common::Random random_;
  // The distribution M that scores use, re-taken from learner_ every args_.refresh_pods
  // observations; scoring_version_ counts the refreshes.
  // Learned without exactScores: scores on the 0..100 scale that every plugin shares (one point
  // per Δ step) and the exact key as the tie-break.
  bool LearnedOnSharedScale() const {
    return args_.policy == Policy::kLearned && !args_.exact_scores;
  }

  std::vector<TypicalPod> scoring_types_;
  // The tables of the current M and node set (TablesFor: M, which types may use which model,
  // the model pressure), and what they were built from.
  std::shared_ptr<const Tables> TablesFor(const api::Pod& pod, const framework::Snapshot& snapshot);
  std::shared_ptr<const Tables> tables_;
  uint64_t tables_version_ = 0;
  const framework::Snapshot* tables_snapshot_ = nullptr;
  uint64_t tables_node_set_ = 0;
  bool scoring_types_valid_ = false;
  int64_t observed_since_refresh_ = 0;
  int64_t observations_at_refresh_ = 0;
  uint64_t scoring_version_ = 0;
};

}  // namespace gpusched::plugins::gpu_fragmentation
