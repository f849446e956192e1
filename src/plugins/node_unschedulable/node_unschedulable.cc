// SPDX-License-Identifier: Apache-2.0
#include "src/plugins/node_unschedulable/node_unschedulable.h"

#include <memory>

#include "src/plugins/helper/args.h"
#include "src/plugins/helper/queueing_hints.h"
#include "src/plugins/helper/taints.h"
#include "src/plugins/names.h"

namespace gpusched::plugins::node_unschedulable {

common::StatusOr<framework::PluginPtr> NodeUnschedulable::Create(const boost::json::value& args,
                                                                 framework::Handle& /*handle*/) {
  GPUSCHED_RETURN_IF_ERROR(helper::ReadNoArgs(args));
  return framework::PluginPtr(std::make_unique<NodeUnschedulable>());
}

NodeUnschedulable::NodeUnschedulable() {
  unschedulable_taint_.key = common::Intern(kTaintNodeUnschedulable);
  unschedulable_taint_.effect = api::TaintEffect::kNoSchedule;
}

std::string_view NodeUnschedulable::Name() const { return names::kNodeUnschedulable; }

framework::Status NodeUnschedulable::Filter(const framework::CycleState& /*state*/,
                                            const api::Pod& pod,
                                            const framework::NodeInfo& node) const {
  if (!node.node->unschedulable) return framework::Status::Success();
  if (helper::TolerationsTolerateTaint(pod.tolerations, unschedulable_taint_)) {
    return framework::Status::Success();
  }
  return framework::Status::Unresolvable(kReasonUnschedulable);
}

using framework::ClusterEvent;
using framework::ClusterEventWithHint;
using framework::EventObjects;
using framework::EventResource;
using framework::QueueingHint;

namespace {

// A node added schedulable, or uncordoned.
QueueingHint AfterNodeChange(const api::Pod& /*pod*/, const ClusterEvent& /*event*/,
                             const EventObjects& o) {
  if (o.new_node == nullptr) return QueueingHint::kQueue;
  if (o.new_node->unschedulable) return QueueingHint::kSkip;
  if (o.old_node == nullptr || o.old_node->unschedulable) return QueueingHint::kQueue;
  return QueueingHint::kSkip;
}

}  // namespace

std::vector<ClusterEventWithHint> NodeUnschedulable::EventsToRegister() const {
  return {{ClusterEvent{EventResource::kNode, framework::kAdd | framework::kUpdateNodeTaint},
           AfterNodeChange}};
}

}  // namespace gpusched::plugins::node_unschedulable
