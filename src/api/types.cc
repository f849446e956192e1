// SPDX-License-Identifier: Apache-2.0
#include "src/api/types.h"

#include <algorithm>
#include <charconv>

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

const OwnerReference* ObjectMeta::ControllerRef() const {
  for (const OwnerReference& o : owner_references) {
    if (o.controller) return &o;
  }
  return nullptr;
}

bool PodDisruptionBudget::Matches(const Labels& labels) const {
  // filterPodsWithPDBViolation: a pod without labels matches no budget; a nil or empty selector
  // matches nothing (unlike an empty LabelSelector elsewhere).
  if (labels.empty() || !selector || selector->empty()) return false;
  return selector->Matches(labels);
}

bool PodDisruptionBudget::AppliesTo(const Pod& pod) const {
  return pod.meta.namespace_ == meta.namespace_ && Matches(pod.meta.labels);
}

bool PodDisruptionBudget::Disrupted(std::string_view pod_name) const {
  return std::binary_search(disrupted_pods.begin(), disrupted_pods.end(), pod_name);
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

std::string_view PreemptionPolicyName(PreemptionPolicy policy) {
  switch (policy) {
    case PreemptionPolicy::kPreemptLowerPriority: return "PreemptLowerPriority";
    case PreemptionPolicy::kNever: return "Never";
  }
  return "PreemptLowerPriority";
}

int CompareResourceVersions(std::string_view a, std::string_view b) {
  uint64_t x = 0;
  uint64_t y = 0;
  const auto ra = std::from_chars(a.data(), a.data() + a.size(), x);
  const auto rb = std::from_chars(b.data(), b.data() + b.size(), y);
  if (ra.ec == std::errc() && ra.ptr == a.data() + a.size() && rb.ec == std::errc() &&
      rb.ptr == b.data() + b.size() && !a.empty() && !b.empty()) {
    return x < y ? -1 : (x > y ? 1 : 0);
  }
  return a < b ? -1 : (a > b ? 1 : 0);
}

}  // namespace gpusched::api
