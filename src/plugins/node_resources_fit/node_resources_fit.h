// SPDX-License-Identifier: Apache-2.0
// NodeResourcesFit: kube-scheduler's noderesources.Fit.
//   PreFilter  computes the pod's request once (cpu, memory, ephemeral-storage, extended
//              resources minus the ignored ones) into CycleState.
//   Filter     rejects a node whose allocatable minus requested cannot hold the pod, or that
//              already runs allocatable.pods pods; reasons "Too many pods", "Insufficient cpu",
//              "Insufficient memory", "Insufficient ephemeral-storage", "Insufficient <name>"
//              (kUnschedulable). Every failing check is reported, as upstream's Status.Reasons:
//              several are joined into one interned reason (framework/reasons.h), from a table
//              of the combinations built once per distinct set of requested resources (at most
//              kMaxCombinedReasons checks combine; a further failing one is reported alone).
//   PreScore   computes the pod's request per scored resource (cpu and memory count the
//              upstream defaults 100m / 200Mi per container that requests none).
//   Score      0..100 by the scoring strategy, weighted over the configured resources.
//
// Args (NodeResourcesFitArgs):
//   ignoredResources: [name]        extended resources Filter does not check
//   ignoredResourceGroups: [group]  extended resources whose "group/" prefix Filter ignores
//   scoringStrategy:
//     type: LeastAllocated (default) | MostAllocated | RequestedToCapacityRatio
//     resources: [{name, weight}]   default [{cpu, 1}, {memory, 1}]; weight 1..100, absent = 1
//     requestedToCapacityRatio: {shape: [{utilization 0..100, score 0..10}]}  (required for
//                                   RequestedToCapacityRatio; utilizations strictly increasing)
//
// Known differences: existing pods count with their actual requests when scoring (NodeInfo keeps
// no "non-zero requested" sum); only the incoming pod gets the defaults. The container resources
// of the GPU-sharing dialects (HAMi nvidia.com/gpumem, gpumem-percentage, gpucores; gpushare
// aliyun.com/gpu-mem; Koordinator koordinator.sh/gpu-memory-ratio, gpu-core, gpu-memory,
// gpu.shared) are checked only on nodes that advertise them: elsewhere GpuFit accounts for them
// per device, so every documented dialect works under the default profile without
// ignoredResources (upstream would answer "Insufficient nvidia.com/gpumem"). An extended resource
// a DeviceClass backs (KEP-5004: its spec.extendedResourceName, or
// deviceclass.resource.kubernetes.io/<class>) is not checked on a node that does not advertise
// it: DynamicResources allocates it from the node's devices there, as upstream.
//
// Filter and Score are allocation-free and may run concurrently for different nodes.
#pragma once

#include <boost/json/fwd.hpp>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "src/api/types.h"
#include "src/common/interner.h"
#include "src/common/mutex.h"
#include "src/common/status.h"
#include "src/framework/dra_view.h"
#include "src/framework/handle.h"
#include "src/framework/plugin.h"
#include "src/framework/registry.h"
#include "src/plugins/helper/shape.h"

namespace gpusched::plugins::node_resources_fit {

inline constexpr std::string_view kReasonTooManyPods = "Too many pods";
inline constexpr size_t kMaxCombinedReasons = 8;
inline constexpr std::string_view kReasonInsufficientCpu = "Insufficient cpu";
inline constexpr std::string_view kReasonInsufficientMemory = "Insufficient memory";
inline constexpr std::string_view kReasonInsufficientEphemeralStorage =
    "Insufficient ephemeral-storage";

enum class ScoringStrategyType { kLeastAllocated, kMostAllocated, kRequestedToCapacityRatio };

struct ResourceSpec {
  std::string name;
  int64_t weight = 1;  // 1..100
};

// Decoded, defaulted and validated NodeResourcesFitArgs.
struct Args {
  std::vector<std::string> ignored_resources;
  std::vector<std::string> ignored_resource_groups;
  ScoringStrategyType type = ScoringStrategyType::kLeastAllocated;
  std::vector<ResourceSpec> resources;  // defaulted to cpu:1, memory:1
  // RequestedToCapacityRatio shape as configured (score 0..10, not yet scaled).
  std::vector<helper::FunctionShapePoint> shape;
};

// Decodes and validates; the error lists every bad field by path.
common::StatusOr<Args> ParseArgs(const boost::json::value& args);

class NodeResourcesFit final : public framework::PreFilterPlugin,
                               public framework::FilterPlugin,
                               public framework::PreScorePlugin,
                               public framework::ScorePlugin,
                               public framework::EnqueueExtensions {
 public:
  static common::StatusOr<framework::PluginPtr> Create(const boost::json::value& args,
                                                       framework::Handle& handle);
  // `dra`: the DRA objects (null: none), for extended resources a DeviceClass backs.
  explicit NodeResourcesFit(Args args, const framework::DraView* dra = nullptr);

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

 private:
  enum class Kind : uint8_t { kCpu, kMemory, kEphemeralStorage, kPods, kScalar };
  struct Resource {
    common::Atom name;
    Kind kind = Kind::kScalar;
    int64_t weight = 1;
  };
  struct PreScoreState;

  bool Ignored(common::Atom name) const;
  // The interned reason for every subset (bit i = reasons[i]) of `reasons`, built on first use
  // and kept for the plugin's life (so Filter can return any combination without allocating).
  const std::vector<std::string_view>& CombinedReasons(std::vector<std::string_view> reasons);
  static int64_t AmountOf(const api::ResourceList& list, const Resource& r);
  int64_t ScoreOne(const PreScoreState& s, const framework::NodeInfo& node) const;
  int64_t ResourceScore(int64_t requested, int64_t allocatable) const;

  ScoringStrategyType type_;
  std::vector<Resource> resources_;
  std::vector<helper::FunctionShapePoint> shape_;  // scores scaled to 0..100
  std::vector<common::Atom> ignored_resources_;
  std::vector<std::string> ignored_groups_;
  const framework::DraView* dra_;
  common::Mutex combined_mu_;  // PreFilter may run on several threads (the extender)
  std::map<std::vector<std::string_view>, std::vector<std::string_view>> combined_
      GPUSCHED_GUARDED_BY(combined_mu_);
};

}  // namespace gpusched::plugins::node_resources_fit
