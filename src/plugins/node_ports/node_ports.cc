// SPDX-License-Identifier: Apache-2.0
#include "src/plugins/node_ports/node_ports.h"

#include <memory>
#include <utility>

#include "src/plugins/helper/args.h"
#include "src/plugins/names.h"

namespace gpusched::plugins::node_ports {
namespace {

const framework::StateKey kPreFilterKey{"NodePorts/PreFilter"};

struct PreFilterState final : framework::StateData {
  std::vector<framework::HostPort> ports;  // the pod's, never empty
};

// Whether any of `want` conflicts with a port in `used`.
bool AnyConflict(std::span<const framework::HostPort> want,
                 std::span<const framework::HostPort> used) {
  for (const framework::HostPort& p : want) {
    if (framework::HostPortConflicts(used, p)) return true;
  }
  return false;
}

}  // namespace

common::StatusOr<framework::PluginPtr> NodePorts::Create(const boost::json::value& args,
                                                         framework::Handle& /*handle*/) {
  GPUSCHED_RETURN_IF_ERROR(helper::ReadNoArgs(args));
  return framework::PluginPtr(std::make_unique<NodePorts>());
}

std::string_view NodePorts::Name() const { return names::kNodePorts; }

framework::Status NodePorts::PreFilter(framework::CycleState& state, const api::Pod& pod,
                                       const framework::Snapshot& /*snapshot*/) {
  auto s = std::make_unique<PreFilterState>();
  framework::AppendHostPorts(pod, s->ports);
  if (s->ports.empty()) return framework::Status::Skip();
  state.Write(kPreFilterKey, std::move(s));
  return framework::Status::Success();
}

framework::Status NodePorts::Filter(const framework::CycleState& state, const api::Pod& /*pod*/,
                                    const framework::NodeInfo& node) const {
  const auto* s = state.Get<PreFilterState>(kPreFilterKey);
  if (s == nullptr) return framework::Status::Error("NodePorts: PreFilter state missing");
  if (AnyConflict(s->ports, node.used_ports)) {
    return framework::Status::Unschedulable(kReasonPortsInUse);
  }
  return framework::Status::Success();
}

std::vector<framework::ClusterEventWithHint> NodePorts::EventsToRegister() const {
  using framework::ClusterEvent;
  using framework::EventResource;
  // A deleted pod may free a port: bound pods, and unbound ones nominated to a node (the hint
  // skips the rest). A new node has every port free. Node updates never free ports.
  return {
      {ClusterEvent{EventResource::kAssignedPod, framework::kDelete}, &HintAfterPodDeleted},
      {ClusterEvent{EventResource::kUnscheduledPod, framework::kDelete}, &HintAfterPodDeleted},
      {ClusterEvent{EventResource::kNode, framework::kAdd}, nullptr},
  };
}

bool Fits(const api::Pod& pod, const framework::NodeInfo& node) {
  std::vector<framework::HostPort> want;
  framework::AppendHostPorts(pod, want);
  return !AnyConflict(want, node.used_ports);
}

framework::QueueingHint HintAfterPodDeleted(const api::Pod& pod,
                                            const framework::ClusterEvent& /*event*/,
                                            const framework::EventObjects& objects) {
  const api::Pod* deleted = objects.old_pod;
  if (deleted == nullptr) return framework::QueueingHint::kQueue;
  if (deleted->node_name.empty() && deleted->nominated_node_name.empty()) {
    return framework::QueueingHint::kSkip;
  }
  std::vector<framework::HostPort> freed;
  framework::AppendHostPorts(*deleted, freed);
  if (freed.empty()) return framework::QueueingHint::kSkip;
  std::vector<framework::HostPort> want;
  framework::AppendHostPorts(pod, want);
  return AnyConflict(want, freed) ? framework::QueueingHint::kQueue
                                  : framework::QueueingHint::kSkip;
}

}  // namespace gpusched::plugins::node_ports
