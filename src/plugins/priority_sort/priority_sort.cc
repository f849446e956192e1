// SPDX-License-Identifier: Apache-2.0
#include "src/plugins/priority_sort/priority_sort.h"

#include <memory>

#include "src/plugins/helper/args.h"
#include "src/plugins/names.h"

namespace gpusched::plugins::priority_sort {

common::StatusOr<framework::PluginPtr> PrioritySort::Create(const boost::json::value& args,
                                                            framework::Handle& /*handle*/) {
  GPUSCHED_RETURN_IF_ERROR(helper::ReadNoArgs(args));
  return framework::PluginPtr(std::make_unique<PrioritySort>());
}

std::string_view PrioritySort::Name() const { return names::kPrioritySort; }

bool PrioritySort::Less(const framework::QueuedPodInfo& a,
                        const framework::QueuedPodInfo& b) const {
  const int32_t pa = a.pod->priority;
  const int32_t pb = b.pod->priority;
  return pa > pb || (pa == pb && a.timestamp < b.timestamp);
}

}  // namespace gpusched::plugins::priority_sort
