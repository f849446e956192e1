// SPDX-License-Identifier: Apache-2.0
// PrioritySort: the default QueueSort plugin. Pods with higher spec.priority go first; among equal
// priorities, the one added to the active queue earlier goes first (kube-scheduler's
// queuesort.PrioritySort). No args. Stateless, so Less may be called from any thread.
#pragma once

#include <boost/json/fwd.hpp>
#include <string_view>

#include "src/common/status.h"
#include "src/framework/handle.h"
#include "src/framework/plugin.h"
#include "src/framework/registry.h"

namespace gpusched::plugins::priority_sort {

class PrioritySort final : public framework::QueueSortPlugin {
 public:
  // Accepts null or an empty object; any field is an error.
  static common::StatusOr<framework::PluginPtr> Create(const boost::json::value& args,
                                                       framework::Handle& handle);

  std::string_view Name() const override;
  bool Less(const framework::QueuedPodInfo& a, const framework::QueuedPodInfo& b) const override;
};

}  // namespace gpusched::plugins::priority_sort
