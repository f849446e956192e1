// SPDX-License-Identifier: Apache-2.0
#include "src/plugins/node_unschedulable/node_unschedulable.h"

#include <memory>

#include "src/plugins/helper/args.h"
#include "src/plugins/helper/taints.h"
#include "src/plugins/names.h"

namespace gpusched::plugins::node_unschedulable {

common::StatusOr<framework::PluginPtr> NodeUnschedulable::Create(const boost::json::value& args,
                                                                 framework::Handle& /*handle*/) {
  helper::ArgErrors errors;
  if (const boost::json::object* obj = helper::ArgsObject(args, errors)) {
    helper::CheckKnownFields(*obj, "", {}, errors, /*allow_type_meta=*/true);
  }
  GPUSCHED_RETURN_IF_ERROR(errors.ToStatus());
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

}  // namespace gpusched::plugins::node_unschedulable
