// SPDX-License-Identifier: Apache-2.0
// Workload facts: what `plan` and the controller read of Deployments and ReplicaSets (apps/v1),
// decoded leniently from API JSON. The api target models only Pods and Nodes; these two kinds
// arrive as raw JSON (api::OtherObject, or a LIST answer). Pure functions, thread-compatible.
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

// Decodes a Deployment or ReplicaSet. Errors name the object and field (a selector that is not a
// valid metav1.LabelSelector, a wrong kind).
common::StatusOr<WorkloadFacts> DecodeWorkload(const boost::json::value& json);

// metav1.LabelSelector JSON (matchLabels, matchExpressions) -> api::LabelSelector. A null or
// absent selector matches nothing; an empty object matches everything (LabelSelectorAsSelector).
common::StatusOr<api::LabelSelector> DecodeLabelSelector(const boost::json::value* json);

}  // namespace gpusched::addons::deletion_cost
