// SPDX-License-Identifier: Apache-2.0
// What an informer update means for the queueing hints: the ActionType bits (framework/plugin.h)
// of a node or assigned-pod update, as kube-scheduler's NodeSchedulingPropertiesChange and
// PodSchedulingPropertiesChange classify them. 0 means nothing a plugin reads changed: no event.
#pragma once

#include <cstdint>

#include "src/api/types.h"

namespace gpusched::events {

// kUpdateNodeAllocatable (allocatable, or the GPU facts derived from it), kUpdateNodeLabel,
// kUpdateNodeTaint (taints, or spec.unschedulable cleared: upstream counts an uncordon as a
// taint change), kUpdateNodeCondition (a condition's type or status), kUpdateNodeAnnotation.
uint32_t NodeUpdateActions(const api::Node& old_node, const api::Node& node);

// kUpdatePodLabel, kUpdatePodScaleDown (a request went down or away), kUpdatePodToleration
// (tolerations changed). An assigned pod that became terminal frees its node: kDelete, as if
// deleted. 0 when nothing of those changed: upstream then sends a plain AssignedPod Update,
// which no plugin here registers; sending none keeps status-only writes (every running pod's)
// from waking pods of plugins that register every event.
uint32_t AssignedPodUpdateActions(const api::Pod& old_pod, const api::Pod& pod);

// True when some resource of `old_requests` is absent from or smaller in `requests`.
bool RequestsScaledDown(const api::ResourceList& old_requests, const api::ResourceList& requests);

}  // namespace gpusched::events
