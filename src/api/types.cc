// SPDX-License-Identifier: Apache-2.0
#include "src/api/types.h"

#include <algorithm>

namespace gpusched::api {

bool Toleration::Tolerates(const Taint& t) const {
  // v1 Toleration.ToleratesTaint: an empty effect matches every effect, an empty key every key
  // (validation pairs it with Exists); Equal compares values, Exists ignores them.
  if (effect != TaintEffect::kAll && effect != t.effect) return false;
  if (!key.empty() && key != t.key) return false;
  switch (op) {
    case Op::kEqual: return value == t.value;
    case Op::kExists: return true;
  }
  return false;
}

const std::string* ObjectMeta::Annotation(std::string_view key) const {
  auto it = std::lower_bound(annotations.begin(), annotations.end(), key,
                             [](const auto& e, std::string_view k) { return e.first < k; });
  if (it == annotations.end() || it->first != key) return nullptr;
  return &it->second;
}

void ComputeEffectiveRequests(Pod& pod) {
  // component-helpers resource.PodRequests (KEP-753 sidecars):
  //   InitContainerUse(i) = sum(sidecars before i) + init container i
  //   requests = max(sum(containers) + sum(sidecars), max_i InitContainerUse(i)) + overhead
  ResourceList reqs;
  for (const Container& c : pod.containers) reqs.Add(c.requests);
  ResourceList sidecars;
  ResourceList init_max;
  bool any_sidecar = false;
  for (const Container& c : pod.init_containers) {
    if (c.restartable) {
      any_sidecar = true;
      reqs.Add(c.requests);
      sidecars.Add(c.requests);
      init_max.Max(sidecars);
    } else {
      ResourceList use = c.requests;
      use.Add(sidecars);
      init_max.Max(use);
    }
  }
  reqs.Max(init_max);
  reqs.Add(pod.overhead);
  reqs.pods = 1;
  pod.requests = std::move(reqs);
  pod.has_restartable_init_containers = any_sidecar;
}

std::string_view PodPhaseName(PodPhase phase) {
  switch (phase) {
    case PodPhase::kPending: return "Pending";
    case PodPhase::kRunning: return "Running";
    case PodPhase::kSucceeded: return "Succeeded";
    case PodPhase::kFailed: return "Failed";
    case PodPhase::kUnknown: return "Unknown";
  }
  return "Unknown";
}

}  // namespace gpusched::api
