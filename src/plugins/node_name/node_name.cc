// SPDX-License-Identifier: Apache-2.0
#include "src/plugins/node_name/node_name.h"

#include <memory>

#include "src/plugins/helper/args.h"
#include "src/plugins/helper/queueing_hints.h"
#include "src/plugins/names.h"

namespace gpusched::plugins::node_name {

common::StatusOr<framework::PluginPtr> NodeName::Create(const boost::json::value& args,
                                                        framework::Handle& /*handle*/) {
  GPUSCHED_RETURN_IF_ERROR(helper::ReadNoArgs(args));
  return framework::PluginPtr(std::make_unique<NodeName>());
}

std::string_view NodeName::Name() const { return names::kNodeName; }

framework::Status NodeName::Filter(const framework::CycleState& /*state*/, const api::Pod& pod,
                                   const framework::NodeInfo& node) const {
  if (pod.node_name.empty() || pod.node_name == node.name()) return framework::Status::Success();
  return framework::Status::Unresolvable(kReasonNodeName);
}

using framework::ClusterEvent;
using framework::ClusterEventWithHint;
using framework::EventObjects;
using framework::EventResource;
using framework::QueueingHint;

namespace {

// Only the node the pod names can help it.
QueueingHint AfterNodeAdd(const api::Pod& pod, const ClusterEvent& /*event*/,
                          const EventObjects& o) {
  const api::Node* node = helper::EventNode(o);
  if (pod.node_name.empty() || node == nullptr || node->meta.name == pod.node_name) {
    return QueueingHint::kQueue;
  }
  return QueueingHint::kSkip;
}

}  // namespace

std::vector<ClusterEventWithHint> NodeName::EventsToRegister() const {
  return {{ClusterEvent{EventResource::kNode, framework::kAdd}, AfterNodeAdd}};
}

}  // namespace gpusched::plugins::node_name
