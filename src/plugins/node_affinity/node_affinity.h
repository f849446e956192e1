// SPDX-License-Identifier: Apache-2.0
// NodeAffinity: kube-scheduler's nodeaffinity plugin.
//   PreFilter  Skip when the pod has neither a nodeSelector nor required node affinity and no
//              addedAffinity.required is configured. When every required term of the pod names
//              nodes (metadata.name In), writes them as framework::PreFilterNodes (upstream's
//              PreFilterResult): no other node is filtered, each counts as "node(s) didn't
//              satisfy plugin(s) [NodeAffinity]"; no name in common: "pod affinity terms
//              conflict" (both UnschedulableAndUnresolvable).
//   Filter     rejects a node that fails addedAffinity.required ("node(s) didn't match
//              scheduler-enforced node affinity"), or the pod's nodeSelector or
//              requiredDuringSchedulingIgnoredDuringExecution ("node(s) didn't match Pod's node
//              affinity/selector"); both UnschedulableAndUnresolvable.
//   PreScore   Skip when there are no preferred terms (pod or addedAffinity).
//   Score      sum of the weights of the matching preferred terms (pod's plus addedAffinity's);
//   NormalizeScore  DefaultNormalizeScore to 0..100 (the best node gets 100).
// Empty node selector terms match nothing and weight-0 preferred terms are ignored, as upstream.
//
// Args (NodeAffinityArgs): addedAffinity: a v1 NodeAffinity applied to every pod of the profile
// (decoded with the api decoder; errors name the path under addedAffinity).
// Filter and Score are allocation-free and may run concurrently.
#pragma once

#include <boost/json/fwd.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "src/api/types.h"
#include "src/common/status.h"
#include "src/framework/handle.h"
#include "src/framework/plugin.h"
#include "src/framework/registry.h"

namespace gpusched::plugins::node_affinity {

// PreFilter: required terms that each name nodes (metadata.name In) but no node in common
// (upstream's errReasonConflict), and the reason of the nodes such terms leave out.
inline constexpr std::string_view kReasonTermsConflict = "pod affinity terms conflict";
inline constexpr std::string_view kReasonNotNamed =
    "node(s) didn't satisfy plugin(s) [NodeAffinity]";
inline constexpr std::string_view kReasonPod = "node(s) didn't match Pod's node affinity/selector";
inline constexpr std::string_view kReasonEnforced =
    "node(s) didn't match scheduler-enforced node affinity";

// Decoded NodeAffinityArgs.
struct Args {
  api::NodeAffinity added_affinity;
};
common::StatusOr<Args> ParseArgs(const boost::json::value& args);

class NodeAffinity final : public framework::PreFilterPlugin,
                           public framework::FilterPlugin,
                           public framework::PreScorePlugin,
                           public framework::ScorePlugin,
                           public framework::EnqueueExtensions {
 public:
  static common::StatusOr<framework::PluginPtr> Create(const boost::json::value& args,
                                                       framework::Handle& handle);
  explicit NodeAffinity(Args args);

  std::string_view Name() const override;
  // The cluster events that can make a pod this plugin rejected schedulable, with their hints
  // (upstream's EventsToRegister and isSchedulableAfter* functions).
  std::vector<framework::ClusterEventWithHint> EventsToRegister() const override;
  // Filter and raw Score read only the pod's equivalence-key fields and the one NodeInfo.
  bool NodeLocal() const override { return true; }
  // Unless the pod's node selector or affinity, or the args' addedAffinity, names the
  // kubernetes.io/hostname label or a field (metadata.name).
  bool SameForTwinNodes(const framework::CycleState& state, const api::Pod& pod) const override;
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
  bool HasNormalizeScore() const override { return true; }
  // the preferred terms that match weigh N
  std::string ExplainScore(const framework::CycleState& state, const api::Pod& pod,
                           const framework::NodeInfo& node, int64_t raw) const override;
  framework::Status NormalizeScore(const framework::CycleState& state, const api::Pod& pod,
                                   std::span<int64_t> scores) const override;

 private:
  int64_t ScoreOne(const api::Pod& pod, const framework::NodeInfo& node) const;
  // The node passes Filter for the pod (the enforced affinity, nodeSelector, required affinity).
  bool RequiredMatch(const api::Pod& pod, const api::Node& node) const;

  api::NodeAffinity added_;
};

}  // namespace gpusched::plugins::node_affinity
