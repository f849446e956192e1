// SPDX-License-Identifier: Apache-2.0
// Workload facts: what `plan` and the controller read of Deployments and ReplicaSets (apps/v1),
// which arrive as raw JSON (api::OtherObject, or a LIST answer) and decode through
// api::DecodeWorkloadController. Pure functions, thread-compatible.
#pragma once

#include <boost/json/fwd.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/api/labels.h"
#include "src/api/types.h"
#include "src/common/status.h"

namespace gpusched::addons::deletion_cost {

struct WorkloadFacts {
  std::string kind;  // "Deployment" or "ReplicaSet"
  std::string namespace_;
  std::string name;
  std::string uid;
  std::vector<std::pair<std::string, std::string>> annotations;
  api::LabelSelector selector;      // spec.selector; a missing selector matches nothing
  std::optional<int32_t> replicas;  // spec.replicas (nullopt: unset, which defaults to 1)
  std::vector<api::OwnerReference> owner_references;

  const std::string* Annotation(std::string_view key) const;
  const api::OwnerReference* ControllerRef() const;
  std::string Key() const { return namespace_ + "/" + name; }
};

// Decodes a Deployment or ReplicaSet (api::DecodeWorkloadController). Errors name the object and
// field (a selector that is not a valid metav1.LabelSelector, a bad quantity in the template, a
// wrong kind).
common::StatusOr<WorkloadFacts> DecodeWorkload(const boost::json::value& json);

}  // namespace gpusched::addons::deletion_cost
