// SPDX-License-Identifier: Apache-2.0
// NodeUnschedulable: Filter that rejects nodes with spec.unschedulable (cordoned) unless the pod
// tolerates the taint node.kubernetes.io/unschedulable:NoSchedule, as kube-scheduler's
// nodeunschedulable plugin. No args. Filter is allocation-free and thread-safe.
#pragma once

#include <boost/json/fwd.hpp>
#include <string_view>
#include <vector>

#include "src/api/types.h"
#include "src/common/status.h"
#include "src/framework/handle.h"
#include "src/framework/plugin.h"
#include "src/framework/registry.h"

namespace gpusched::plugins::node_unschedulable {

// Filter reason (UnschedulableAndUnresolvable).
inline constexpr std::string_view kReasonUnschedulable = "node(s) were unschedulable";
// The taint a pod must tolerate to land on a cordoned node.
inline constexpr std::string_view kTaintNodeUnschedulable = "node.kubernetes.io/unschedulable";

class NodeUnschedulable final : public framework::FilterPlugin,
                                public framework::EnqueueExtensions {
 public:
  static common::StatusOr<framework::PluginPtr> Create(const boost::json::value& args,
                                                       framework::Handle& handle);
  NodeUnschedulable();

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

 private:
  api::Taint unschedulable_taint_;  // node.kubernetes.io/unschedulable:NoSchedule, interned once
};

}  // namespace gpusched::plugins::node_unschedulable
