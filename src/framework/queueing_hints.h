// SPDX-License-Identifier: Apache-2.0
// The queueing hints of one profile, as the scheduling queue consumes them: for each plugin that
// can reject a pod (PreFilter, Filter, Reserve, Permit), the cluster events it registered
// (EnqueueExtensions::EventsToRegister in plugin.h) with their hint functions. Built once per
// profile by the framework runtime (runtime::Framework::QueueingHints) and handed to the queue
// (queue::SchedulingQueue::SetProfileHints); read-only afterwards.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "src/framework/plugin.h"

namespace gpusched::framework {

struct PluginEvents {
  std::string plugin;  // the plugin's Name()
  // What moves a pod this plugin rejected. A plugin that does not implement EnqueueExtensions
  // gets one entry: every event (kWildCard, kAllActions) with no hint.
  std::vector<ClusterEventWithHint> events;
};

// One entry per rejecting plugin of the profile, in the order the profile first lists them.
using ProfileHints = std::vector<PluginEvents>;

// The registration upstream gives a plugin without EnqueueExtensions.
inline ClusterEventWithHint EveryEvent() { return {ClusterEvent{}, nullptr}; }

// "NodeAdd", "AssignedPodDelete", "NodeUpdateNodeLabel"...: kube-scheduler's ClusterEvent labels
// (the `event` label of scheduler_queue_incoming_pods_total). An update with several action bits
// is labelled "<Resource>Update".
std::string EventLabel(const ClusterEvent& event);

}  // namespace gpusched::framework
