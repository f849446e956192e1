// SPDX-License-Identifier: Apache-2.0
// NodePorts: kube-scheduler's nodeports plugin. A pod that binds host ports (containers' and
// sidecar init containers' ports with a hostPort) fits a node only if none of them conflicts with
// a host port already bound there (NodeInfo::used_ports): same protocol and port, and either side
// binds 0.0.0.0 (or no hostIP) or both bind the same address.
//   PreFilter  collects the pod's host ports into CycleState; kSkip when it has none (most pods).
//   Filter     "node(s) didn't have free ports for the requested pod ports" (kUnschedulable).
//   EventsToRegister  a pod deleted (hint: Queue only when it was bound or nominated and one of
//              its host ports conflicts with one of the rejected pod's), a node added (no hint).
// No args. Node-local: the pod's host ports are in its equivalence key. Filter is
// allocation-free and may run concurrently for different nodes.
#pragma once

#include <boost/json/fwd.hpp>
#include <string_view>
#include <vector>

#include "src/api/types.h"
#include "src/common/status.h"
#include "src/framework/handle.h"
#include "src/framework/plugin.h"
#include "src/framework/registry.h"

namespace gpusched::plugins::node_ports {

// Filter reason (kUnschedulable), upstream's ErrReason.
inline constexpr std::string_view kReasonPortsInUse =
    "node(s) didn't have free ports for the requested pod ports";

class NodePorts final : public framework::PreFilterPlugin,
                        public framework::FilterPlugin,
                        public framework::EnqueueExtensions {
 public:
  static common::StatusOr<framework::PluginPtr> Create(const boost::json::value& args,
                                                       framework::Handle& handle);

  std::string_view Name() const override;
  // Filter reads only the pod's host ports (in the equivalence key) and the one NodeInfo.
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
  std::vector<framework::ClusterEventWithHint> EventsToRegister() const override;
};

// Whether `pod` fits `node` as far as host ports go (upstream's Fits; allocates).
bool Fits(const api::Pod& pod, const framework::NodeInfo& node);

// The hint for a deleted pod (objects.old_pod): kQueue when it was bound or nominated to a node
// and frees a host port that conflicts with one of `pod`'s, kSkip otherwise (upstream's
// isSchedulableAfterPodDeleted). A missing old pod is kQueue (never strand a pod).
framework::QueueingHint HintAfterPodDeleted(const api::Pod& pod,
                                            const framework::ClusterEvent& event,
                                            const framework::EventObjects& objects);

}  // namespace gpusched::plugins::node_ports
