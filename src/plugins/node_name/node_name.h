// SPDX-License-Identifier: Apache-2.0
// NodeName: Filter that, for a pod whose spec.nodeName is set, rejects every other node
// (kube-scheduler's nodename plugin). No args. Filter is allocation-free and thread-safe.
#pragma once

#include <boost/json/fwd.hpp>
#include <string_view>
#include <vector>

#include "src/api/types.h"
#include "src/common/status.h"
#include "src/framework/handle.h"
#include "src/framework/plugin.h"
#include "src/framework/registry.h"

namespace gpusched::plugins::node_name {

// Filter reason (UnschedulableAndUnresolvable).
inline constexpr std::string_view kReasonNodeName = "node(s) didn't match the requested node name";

class NodeName final : public framework::FilterPlugin, public framework::EnqueueExtensions {
 public:
  static common::StatusOr<framework::PluginPtr> Create(const boost::json::value& args,
                                                       framework::Handle& handle);

  std::string_view Name() const override;
  // The cluster events that can make a pod this plugin rejected schedulable, with their hints
  // (upstream's EventsToRegister and isSchedulableAfter* functions).
  std::vector<framework::ClusterEventWithHint> EventsToRegister() const override;
  // Filter and raw Score read only the pod's equivalence-key fields and the one NodeInfo.
  bool NodeLocal() const override { return true; }
  // Reads the node's name only for a pod that names a node.
  bool SameForTwinNodes(const framework::CycleState& /*state*/,
                        const api::Pod& pod) const override {
    return pod.node_name.empty();
  }
  framework::Status Filter(const framework::CycleState& state, const api::Pod& pod,
                           const framework::NodeInfo& node) const override;
};

}  // namespace gpusched::plugins::node_name
