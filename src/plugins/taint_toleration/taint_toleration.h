// SPDX-License-Identifier: Apache-2.0
// TaintToleration: kube-scheduler's tainttoleration plugin.
//   Filter     rejects a node with a NoSchedule or NoExecute taint the pod does not tolerate:
//              "node(s) had untolerated taint(s)" (UnschedulableAndUnresolvable), upstream's
//              v1.35 text (older releases named the taint).
//   Score      the number of PreferNoSchedule taints the pod does not tolerate;
//   NormalizeScore  reversed DefaultNormalizeScore: fewer intolerable taints score higher.
// No args. Filter and Score are allocation-free and may run concurrently.
#pragma once

#include <boost/json/fwd.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "src/api/types.h"
#include "src/common/status.h"
#include "src/framework/handle.h"
#include "src/framework/plugin.h"
#include "src/framework/registry.h"

namespace gpusched::plugins::taint_toleration {

inline constexpr std::string_view kReasonUntolerated = "node(s) had untolerated taint(s)";

class TaintToleration final : public framework::FilterPlugin,
                              public framework::ScorePlugin,
                              public framework::EnqueueExtensions {
 public:
  static common::StatusOr<framework::PluginPtr> Create(const boost::json::value& args,
                                                       framework::Handle& handle);

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
  framework::Status Filter(const framework::CycleState& state, const api::Pod& pod,
                           const framework::NodeInfo& node) const override;
  void ScoreNodes(const framework::CycleState& state, const api::Pod& pod,
                  const framework::Snapshot& snapshot, std::span<const framework::NodeIndex> nodes,
                  std::span<int64_t> out) const override;
  bool HasNormalizeScore() const override { return true; }
  // N PreferNoSchedule taints not tolerated
  std::string ExplainScore(const framework::CycleState& state, const api::Pod& pod,
                           const framework::NodeInfo& node, int64_t raw) const override;
  framework::Status NormalizeScore(const framework::CycleState& state, const api::Pod& pod,
                                   std::span<int64_t> scores) const override;
};

}  // namespace gpusched::plugins::taint_toleration
