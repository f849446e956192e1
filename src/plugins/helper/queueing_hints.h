// SPDX-License-Identifier: Apache-2.0
// Building blocks of the plugins' queueing hints (EnqueueExtensions in framework/plugin.h): what
// a node or assigned-pod event changed, as the hints of several plugins need it. Each answers
// for one pod and one event, ignoring what other pods use (hints only decide whether a retry is
// worth it; the Filter decides). Quick and allocation-free: they run per unschedulable pod per
// event, under the queue's lock.
#pragma once

#include <vector>

#include "src/api/types.h"
#include "src/framework/plugin.h"

namespace gpusched::plugins::helper {

// The node of a node event (the new one; the old one on delete), or nullptr.
inline const api::Node* EventNode(const framework::EventObjects& o) {
  return o.new_node != nullptr ? o.new_node : o.old_node;
}

// Assigned-pod events carry the node the pod runs (ran) on in new_node when the scheduler knows
// it (EventHandler::OnClusterEvent), so that a hint can tell whether room freed there could matter.
// The pod an assigned-pod event is about (the new one; the old one on delete), or nullptr.
inline const api::Pod* EventPod(const framework::EventObjects& o) {
  return o.new_pod != nullptr ? o.new_pod : o.old_pod;
}

// Every resource `pod` requests fits `node`'s allocatable (NodeResourcesFit's isFit against an
// empty node; "pods" is not counted).
bool RequestsFitAllocatable(const api::Pod& pod, const api::Node& node);

// Some resource `pod` requests has more allocatable on `node` than on `old_node`.
bool RequestedAllocatableIncreased(const api::Pod& pod, const api::Node& old_node,
                                   const api::Node& node);

// Some resource `pod` requests went down or away from `old_pod` to `new_pod` (an assigned pod
// scaled down), counting the GPU request.
bool RequestedResourceScaledDown(const api::Pod& pod, const api::Pod& old_pod,
                                 const api::Pod& new_pod);

// `node`'s GPUs could host `pod`'s GPU request on an empty node: enough healthy devices, an
// accepted model, enough memory per device. True for a pod without a GPU request.
bool GpuNodeCouldHost(const api::Pod& pod, const api::Node& node);

// The pod was assigned and held GPUs (a GPU request): deleting or shrinking it frees GPUs.
bool HeldGpus(const api::Pod& assigned);

// `pod` tolerates every NoSchedule/NoExecute taint of `node`.
bool ToleratesNode(const api::Pod& pod, const api::Node& node);

// The GPU plugins' registrations (GpuFit, GpuFragmentation): an assigned pod holding GPUs deleted
// or scaled down (GPUs freed), a node added or whose GPU facts changed (allocatable, labels,
// annotations) that could host the pod's GPU request, and ExtendedResourceClassEvent. Hints say
// kQueue only then.
std::vector<framework::ClusterEventWithHint> GpuEvents();
framework::QueueingHint GpuAfterPodEvent(const api::Pod& pod, const framework::ClusterEvent& event,
                                         const framework::EventObjects& objects);
framework::QueueingHint GpuAfterNodeChange(const api::Pod& pod,
                                           const framework::ClusterEvent& event,
                                           const framework::EventObjects& objects);

// A DeviceClass added or changed (KEP-5004): kQueue when the pod asks for an extended resource it
// backs (its spec.extendedResourceName, or deviceclass.resource.kubernetes.io/<its name>), which a
// node without it may now serve through DRA; kSkip otherwise.
framework::ClusterEventWithHint ExtendedResourceClassEvent();

}  // namespace gpusched::plugins::helper
