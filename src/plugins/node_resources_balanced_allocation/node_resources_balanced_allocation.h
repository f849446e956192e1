// SPDX-License-Identifier: Apache-2.0
// NodeResourcesBalancedAllocation: kube-scheduler's noderesources.BalancedAllocation. Prefers the
// node on which the pod would leave the configured resources equally used.
//   PreScore  the pod's requests of the configured resources (real requests: no defaults for
//             containers that request nothing); kSkip for a pod that requests none of them (a
//             best-effort pod would otherwise pile onto one node, kubernetes#129138).
//   Score     for each resource with non-zero allocatable, fraction = min(1, (node requested +
//             pod request) / allocatable); extended (scalar) resources the pod does not request,
//             "pods" and resources the node does not have are left out. Two fractions:
//             std = |f0 − f1| / 2; more: the population standard deviation; one or none: 0.
//             Score = int64((1 − std) · 100).
//
// Args (NodeResourcesBalancedAllocationArgs):
//   resources: [{name, weight}]  default [{cpu, 1}, {memory, 1}]; names unique and non-empty;
//                                weight must be 1 (absent or 0 reads as 1), as upstream.
//
// Known difference: none in the formula. Node-local (the pod's requests are in its equivalence
// key). Score is allocation-free and may run concurrently for different nodes.
#pragma once

#include <boost/json/fwd.hpp>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "src/api/types.h"
#include "src/common/interner.h"
#include "src/common/status.h"
#include "src/framework/handle.h"
#include "src/framework/plugin.h"
#include "src/framework/registry.h"

namespace gpusched::plugins::node_resources_balanced_allocation {

// Decoded, defaulted and validated NodeResourcesBalancedAllocationArgs.
struct Args {
  std::vector<std::string> resources;  // defaulted to {cpu, memory}
};

// Decodes and validates; the error lists every bad field by path.
common::StatusOr<Args> ParseArgs(const boost::json::value& args);

// The score of fractions `requested[i] / allocatable[i]` (entries with allocatable 0 left out),
// upstream's balancedResourceScorer. REQUIRES: equal sizes.
int64_t BalancedScore(std::span<const int64_t> requested, std::span<const int64_t> allocatable);

class BalancedAllocation final : public framework::PreScorePlugin, public framework::ScorePlugin {
 public:
  static common::StatusOr<framework::PluginPtr> Create(const boost::json::value& args,
                                                       framework::Handle& handle);
  explicit BalancedAllocation(const Args& args);

  std::string_view Name() const override;
  // Raw Score reads only the pod's requests (in the equivalence key) and the one NodeInfo.
  bool NodeLocal() const override { return true; }
  // Reads no node identity (framework/plugin.h).
  bool SameForTwinNodes(const framework::CycleState& /*state*/,
                        const api::Pod& /*pod*/) const override {
    return true;
  }
  framework::Status PreScore(framework::CycleState& state, const api::Pod& pod,
                             const framework::Snapshot& snapshot,
                             std::span<const framework::NodeIndex> feasible) override;
  void ScoreNodes(const framework::CycleState& state, const api::Pod& pod,
                  const framework::Snapshot& snapshot, std::span<const framework::NodeIndex> nodes,
                  std::span<int64_t> out) const override;

 private:
  enum class Kind : uint8_t { kCpu, kMemory, kEphemeralStorage, kPods, kScalar, kOther };
  struct Resource {
    common::Atom name;
    Kind kind = Kind::kOther;
  };
  struct PreScoreState;

  static int64_t AmountOf(const api::ResourceList& list, const Resource& r);
  int64_t ScoreOne(const PreScoreState& s, const framework::NodeInfo& node) const;

  std::vector<Resource> resources_;
};

}  // namespace gpusched::plugins::node_resources_balanced_allocation
