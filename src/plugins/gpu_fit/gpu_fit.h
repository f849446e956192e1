// SPDX-License-Identifier: Apache-2.0
// GpuFit: the GPU plugin ("GPUTopologyPlugin", the seed's name, is a registry alias). It checks a
// pod's GPU request (api::GpuRequest, decoded from the pod's GPU dialects) against each node's GPUs
// and their per-device usage, scores candidate nodes, and picks the exact devices at Reserve.
//
//   PreFilter  pod.gpu_error set -> UnschedulableAndUnresolvable with that text. No GPU request ->
//              Skip (Filter skipped). Otherwise stores the request and, for each distinct node GPU
//              model in the snapshot, whether it satisfies the pod's model list.
//   Filter     in this order (reasons are literals):
//                the node has no GPUs:            "Insufficient nvidia.com/gpu"  Unresolvable
//                a model list is set and the node model is unknown or not in it:
//                                                 "GPU model mismatch"           Unresolvable
//                per-GPU memory unknown or below the pod's minimum (or below a shared pod's share):
//                                                 "Insufficient GPU memory"      Unresolvable
//                fewer healthy devices than requested:
//                                                 "Insufficient nvidia.com/gpu"  Unresolvable
//                not enough FREE devices (whole: fully free healthy devices; shared: a device
//                with room for the share):        "Insufficient nvidia.com/gpu"  Unschedulable
//   PreScore   Default mode: Skip for pods without GPUs. BestFit mode scores every pod.
//   Score      Default: (fitWeight * fit + utilizationWeight * util) / (fitWeight +
//              utilizationWeight), where fit = 100 * requested milli-GPU / free milli-GPU (an
//              exact fit scores 100) and util = 100 * (1 - NodeInfo::gpu_utilization), 50 when
//              unknown. BestFit (FGD paper baseline): floor(100 * (1 - [(Cfree - c) / 2 / 128000 +
//              (Ifree - k*d) / 2 / 8000])) with free CPU millicores and idle GPU milli, then
//              min-max normalized to 0..100 over the feasible nodes in NormalizeScore.
//   Reserve    chooses devices with framework::ChooseDevicesBestFit, stores them in
//              state.allocation().gpu and as annotation gpusched.io/gpu-devices; Unreserve clears
//              both.
//
// Args (GpuFitArgs): fitWeight 0..100 (default 70), utilizationWeight 0..100 (default 30), not
// both 0; scoreMode Default (default) | BestFit.
//
// Filter and Score allocate nothing, take no lock and may run concurrently.
#pragma once

#include <boost/json/value.hpp>
#include <cstdint>
#include <span>
#include <string_view>

#include "src/api/types.h"
#include "src/common/status.h"
#include "src/framework/handle.h"
#include "src/framework/plugin.h"
#include "src/framework/registry.h"

namespace gpusched::plugins::gpu_fit {

inline constexpr std::string_view kReasonInsufficientGpu = "Insufficient nvidia.com/gpu";
inline constexpr std::string_view kReasonModelMismatch = "GPU model mismatch";
inline constexpr std::string_view kReasonInsufficientGpuMemory = "Insufficient GPU memory";

enum class ScoreMode { kDefault, kBestFit };

// Decoded and validated GpuFitArgs.
struct Args {
  int64_t fit_weight = 70;
  int64_t utilization_weight = 30;
  ScoreMode score_mode = ScoreMode::kDefault;
};
common::StatusOr<Args> ParseArgs(const boost::json::value& args);

class GpuFit final : public framework::PreFilterPlugin,
                     public framework::FilterPlugin,
                     public framework::PreScorePlugin,
                     public framework::ScorePlugin,
                     public framework::ReservePlugin {
 public:
  static common::StatusOr<framework::PluginPtr> Create(const boost::json::value& args,
                                                       framework::Handle& handle);
  explicit GpuFit(Args args) : args_(args) {}

  std::string_view Name() const override;
  framework::Status PreFilter(framework::CycleState& state, const api::Pod& pod,
                              const framework::Snapshot& snapshot) override;
  framework::Status Filter(const framework::CycleState& state, const api::Pod& pod,
                           const framework::NodeInfo& node) const override;
  framework::Status PreScore(framework::CycleState& state, const api::Pod& pod,
                             const framework::Snapshot& snapshot,
                             std::span<const framework::NodeIndex> feasible) override;
  int64_t Score(const framework::CycleState& state, const api::Pod& pod,
                const framework::NodeInfo& node) const override;
  void ScoreNodes(const framework::CycleState& state, const api::Pod& pod,
                  const framework::Snapshot& snapshot, std::span<const framework::NodeIndex> nodes,
                  std::span<int64_t> out) const override;
  bool HasNormalizeScore() const override { return args_.score_mode == ScoreMode::kBestFit; }
  framework::Status NormalizeScore(const framework::CycleState& state, const api::Pod& pod,
                                   std::span<int64_t> scores) const override;
  framework::Status Reserve(framework::CycleState& state, const api::Pod& pod,
                            const framework::NodeInfo& node) override;
  void Unreserve(framework::CycleState& state, const api::Pod& pod,
                 std::string_view node) override;

 private:
  struct PreScoreState;
  int64_t ScoreOne(const PreScoreState& s, const framework::NodeInfo& node) const;

  Args args_;
};

}  // namespace gpusched::plugins::gpu_fit
