// SPDX-License-Identifier: Apache-2.0
// GpuFit: the GPU plugin ("GPUTopologyPlugin", the seed's name, is a registry alias). It checks a
// pod's GPU request (api::GpuRequest, decoded from the pod's GPU dialects) against each node's GPUs
// and their per-device usage, scores candidate nodes, and picks the exact devices at Reserve.
//
//   PreFilter  pod.gpu_error set -> UnschedulableAndUnresolvable with that text. No GPU request ->
//              Skip (Filter skipped). Otherwise stores the request and, for each distinct node GPU
//              model in the snapshot (memoised per node_set_version), whether it satisfies the
//              pod's model list.
//   Filter     in this order (reasons are literals):
//                the node has no GPUs:            "Insufficient nvidia.com/gpu"  Unresolvable
//                a model list is set and the node model is unknown or not in it:
//                                                 "GPU model mismatch"           Unresolvable
//                per-GPU memory unknown or below the pod's minimum, or the pod's memory share
//                does not resolve on the node (api::ResolveGpuShare: a percentage or a memory-
//                derived compute share on a node of unknown memory, a share above one device):
//                                                 "Insufficient GPU memory"      Unresolvable
//                fewer healthy devices than requested:
//                                                 "Insufficient nvidia.com/gpu"  Unresolvable
//                NVLink island required (multi-GPU pods only) and the node publishes no islands:
//                                                 "NVLink topology unknown"      Unresolvable
//                not enough FREE devices (whole: fully free healthy devices; shared: devices
//                with room for the share):        "Insufficient nvidia.com/gpu"  Unschedulable
//                NVLink island required and no island has enough of them:
//                                                 "No NVLink island with enough free GPUs"
//                                                                                 Unschedulable
//   PreScore   Default mode: Skip for pods without GPUs. BestFit mode scores every pod.
//   Score      Default: (fitWeight * fit + utilizationWeight * util) / (fitWeight +
//              utilizationWeight), where with node policy Binpack fit = 100 * requested milli-GPU
//              / free milli-GPU (an exact fit scores 100), with Spread fit = 100 * (free -
//              requested) / total milli-GPU (the emptiest node scores highest), and util = 100 *
//              (1 - NodeInfo::gpu_utilization), 50 when unknown. A multi-GPU pod scores half on
//              a node that publishes NVLink islands (nvlink_known) when its free devices of no
//              single island suffice. BestFit (FGD paper baseline): floor(100 * (1 - [(Cfree - c) /
//              2 / 128000 + (Ifree - k*d) / 2 / 8000])) with free CPU millicores and idle GPU
//              milli, then min-max normalized to 0..100 over the feasible nodes in NormalizeScore.
//   Reserve    chooses devices with api::ChooseDevices under the GPU-level policy (binpack:
//              partly used devices first, spread: emptiest first; multi-GPU pods inside one
//              NVLink island when possible), stores them in state.allocation().gpu and as
//              annotation gpusched.io/gpu-devices; Unreserve clears both.
//
// Args (GpuFitArgs): fitWeight 0..100 (default 70), utilizationWeight 0..100 (default 30), not
// both 0; scoreMode Default (default) | BestFit; nodePolicy Binpack (default) | Spread (Default
// score mode only); gpuPolicy Binpack (default) | Spread; requireNvlinkIsland bool (default
// false); hamiAnnotations bool (default false): at Reserve, on nodes that publish
// hami.io/node-nvidia-register, also write HAMi's hand-off annotations
// (hami.io/vgpu-devices-to-allocate with the devices' UUIDs, hami.io/vgpu-node, vgpu-time,
// bind-time, bind-phase=allocating) so HAMi's device plugin enforces the choice; a malformed
// register annotation makes that node unschedulable for the pod with a message naming it.
//
// Per-pod overrides (annotations; a malformed value makes the pod unschedulable with a message
// naming the annotation and value):
//   gpusched.io/gpu-policy     binpack | spread (both levels) or "<node>/<gpu>", e.g.
//                              "spread/binpack" (the syntax GpuFragmentation reads too)
//   gpusched.io/nvlink-island  required | preferred
//
// Extended resources backed by DRA (KEP-5004): when a DeviceClass backs `nvidia.com/gpu` (its
// spec.extendedResourceName), a pod asking for whole GPUs through that resource passes Filter
// and Reserve on a node that does not advertise it (allocatable 0): DynamicResources allocates
// the GPUs from the node's devices there, as upstream.
//
// Filter and Score allocate nothing, take no lock and may run concurrently.
#pragma once

#include <boost/json/fwd.hpp>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "src/api/types.h"
#include "src/common/clock.h"
#include "src/common/status.h"
#include "src/framework/dra_view.h"
#include "src/framework/handle.h"
#include "src/framework/plugin.h"
#include "src/framework/registry.h"

namespace gpusched::plugins::gpu_fit {

inline constexpr std::string_view kReasonInsufficientGpu = "Insufficient nvidia.com/gpu";
inline constexpr std::string_view kReasonModelMismatch = "GPU model mismatch";
inline constexpr std::string_view kReasonInsufficientGpuMemory = "Insufficient GPU memory";

inline constexpr std::string_view kReasonNvlinkUnknown = "NVLink topology unknown";
inline constexpr std::string_view kReasonNoNvlinkIsland = "No NVLink island with enough free GPUs";
inline constexpr std::string_view kGpuPolicyAnnotation = "gpusched.io/gpu-policy";
inline constexpr std::string_view kNvlinkIslandAnnotation = "gpusched.io/nvlink-island";

enum class ScoreMode { kDefault, kBestFit };
enum class Pack : uint8_t { kBinpack, kSpread };

// Decoded and validated GpuFitArgs.
struct Args {
  int64_t fit_weight = 70;
  int64_t utilization_weight = 30;
  ScoreMode score_mode = ScoreMode::kDefault;
  Pack node_policy = Pack::kBinpack;
  Pack gpu_policy = Pack::kBinpack;
  bool require_nvlink_island = false;
  bool hami_annotations = false;
};
common::StatusOr<Args> ParseArgs(const boost::json::value& args);

// The pod's policies after its annotations; an error names the annotation and the value.
struct PodPolicy {
  Pack node = Pack::kBinpack;
  Pack gpu = Pack::kBinpack;
  bool require_island = false;
};
common::StatusOr<PodPolicy> ResolvePodPolicy(const Args& args, const api::Pod& pod);

class GpuFit final : public framework::PreFilterPlugin,
                     public framework::FilterPlugin,
                     public framework::PreScorePlugin,
                     public framework::ScorePlugin,
                     public framework::ReservePlugin,
                     public framework::EnqueueExtensions {
 public:
  static common::StatusOr<framework::PluginPtr> Create(const boost::json::value& args,
                                                       framework::Handle& handle);
  // `dra`: the DRA objects (null: none), for `nvidia.com/gpu` a DeviceClass backs.
  explicit GpuFit(Args args, const common::Clock* clock = nullptr,
                  const framework::DraView* dra = nullptr)
      : args_(args), clock_(clock), dra_(dra) {}

  std::string_view Name() const override;
  // The cluster events that can make a pod this plugin rejected schedulable, with their hints
  // (upstream's EventsToRegister and isSchedulableAfter* functions).
  std::vector<framework::ClusterEventWithHint> EventsToRegister() const override;
  // Filter and raw Score read only the pod's equivalence-key fields and the one NodeInfo.
  bool NodeLocal() const override { return true; }
  // Reads no node identity (framework/plugin.h).
  bool SameForTwinNodes(const framework::CycleState& /*state*/,
                        const api::Pod& /*pod*/) const override {
    return true;
  }
  // Whether a DeviceClass backs nvidia.com/gpu changes Filter's verdicts (see the file comment).
  uint64_t StateVersion() const override { return dra_ != nullptr ? dra_->class_version() : 0; }
  framework::Status PreFilter(framework::CycleState& state, const api::Pod& pod,
                              const framework::Snapshot& snapshot) override;
  framework::Status Filter(const framework::CycleState& state, const api::Pod& pod,
                           const framework::NodeInfo& node) const override;
  framework::Status PreScore(framework::CycleState& state, const api::Pod& pod,
                             const framework::Snapshot& snapshot,
                             std::span<const framework::NodeIndex> feasible) override;
  void ScoreNodes(const framework::CycleState& state, const api::Pod& pod,
                  const framework::Snapshot& snapshot, std::span<const framework::NodeIndex> nodes,
                  std::span<int64_t> out) const override;
  bool HasNormalizeScore() const override { return args_.score_mode == ScoreMode::kBestFit; }
  framework::Status NormalizeScore(const framework::CycleState& state, const api::Pod& pod,
                                   std::span<int64_t> scores) const override;
  framework::Status Reserve(framework::CycleState& state, const api::Pod& pod,
                            const framework::NodeInfo& node) override;
  void Unreserve(framework::CycleState& state, const api::Pod& pod, std::string_view node) override;

 private:
  struct PreScoreState;
  int64_t ScoreOne(const PreScoreState& s, const framework::NodeInfo& node) const;
  common::Status WriteHamiAnnotations(framework::CycleState& state, const api::Pod& pod,
                                      const framework::NodeInfo& node, const std::string& reg,
                                      const api::GpuAssignment& chosen) const;
  static void ClearHamiAnnotations(framework::CycleState& state);

  // The distinct GPU model atoms of the snapshot's nodes, sorted by id: memoised by snapshot
  // address + node_set_version (rebuilt only when a node object changes; always rebuilt for a
  // snapshot without a version), so PreFilter of a pod with a model list is O(distinct models),
  // not O(nodes). Scheduling thread only (PreFilter).
  const std::vector<common::Atom>& SnapshotModels(const framework::Snapshot& snapshot);

  Args args_;
  const common::Clock* clock_;  // for HAMi's vgpu-time; nullptr: 0
  const framework::DraView* dra_;
  std::vector<common::Atom> models_;
  const framework::Snapshot* models_snapshot_ = nullptr;
  uint64_t models_version_ = 0;
  size_t models_slots_ = 0;
};

}  // namespace gpusched::plugins::gpu_fit
