// SPDX-License-Identifier: Apache-2.0
#include "src/events/cluster_events.h"

#include <algorithm>

#include "src/framework/plugin.h"

namespace gpusched::events {

namespace {

bool SameTaints(const std::vector<api::Taint>& a, const std::vector<api::Taint>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                    [](const api::Taint& x, const api::Taint& y) {
                      return x.key == y.key && x.value == y.value && x.effect == y.effect;
                    });
}

bool SameTolerations(const std::vector<api::Toleration>& a, const std::vector<api::Toleration>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                    [](const api::Toleration& x, const api::Toleration& y) {
                      return x.key == y.key && x.op == y.op && x.value == y.value &&
                             x.effect == y.effect && x.toleration_seconds == y.toleration_seconds;
                    });
}

// Condition types and statuses, order ignored (upstream compares them as a map).
bool SameConditions(const std::vector<api::Condition>& a, const std::vector<api::Condition>& b) {
  if (a.size() != b.size()) return false;
  return std::all_of(a.begin(), a.end(), [&](const api::Condition& c) {
    return std::any_of(b.begin(), b.end(), [&](const api::Condition& d) {
      return c.type == d.type && c.status == d.status;
    });
  });
}

}  // namespace

uint32_t NodeUpdateActions(const api::Node& old_node, const api::Node& node) {
  uint32_t actions = 0;
  if (old_node.allocatable != node.allocatable || !(old_node.gpu == node.gpu)) {
    actions |= framework::kUpdateNodeAllocatable;
  }
  if (!(old_node.meta.labels == node.meta.labels)) actions |= framework::kUpdateNodeLabel;
  if (!SameTaints(old_node.taints, node.taints) ||
      (old_node.unschedulable && !node.unschedulable)) {
    actions |= framework::kUpdateNodeTaint;
  }
  if (!SameConditions(old_node.conditions, node.conditions)) {
    actions |= framework::kUpdateNodeCondition;
  }
  if (old_node.meta.annotations != node.meta.annotations) {
    actions |= framework::kUpdateNodeAnnotation;
  }
  return actions;
}

bool RequestsScaledDown(const api::ResourceList& old_requests, const api::ResourceList& requests) {
  if (requests.milli_cpu < old_requests.milli_cpu || requests.memory < old_requests.memory ||
      requests.ephemeral_storage < old_requests.ephemeral_storage) {
    return true;
  }
  return std::any_of(old_requests.scalar.begin(), old_requests.scalar.end(),
                     [&](const auto& r) { return requests.Get(r.first) < r.second; });
}

uint32_t AssignedPodUpdateActions(const api::Pod& old_pod, const api::Pod& pod) {
  if (pod.Terminal() && !old_pod.Terminal()) return framework::kDelete;
  uint32_t actions = 0;
  if (!(old_pod.meta.labels == pod.meta.labels)) actions |= framework::kUpdatePodLabel;
  if (RequestsScaledDown(old_pod.requests, pod.requests) || !(old_pod.gpu == pod.gpu)) {
    actions |= framework::kUpdatePodScaleDown;
  }
  if (!SameTolerations(old_pod.tolerations, pod.tolerations)) {
    actions |= framework::kUpdatePodToleration;
  }
  return actions;
}

}  // namespace gpusched::events
