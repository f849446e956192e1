// SPDX-License-Identifier: Apache-2.0
#include "src/addons/deletion_cost/workload.h"

#include <utility>

#include "src/api/decode.h"

namespace gpusched::addons::deletion_cost {

const std::string* WorkloadFacts::Annotation(std::string_view key) const {
  for (const auto& [k, v] : annotations) {
    if (k == key) return &v;
  }
  return nullptr;
}

const api::OwnerReference* WorkloadFacts::ControllerRef() const {
  for (const auto& o : owner_references) {
    if (o.controller) return &o;
  }
  return nullptr;
}

common::StatusOr<WorkloadFacts> DecodeWorkload(const boost::json::value& value) {
  GPUSCHED_ASSIGN_OR_RETURN(api::WorkloadController c, api::DecodeWorkloadController(value));
  if (c.kind != "Deployment" && c.kind != "ReplicaSet") {
    return common::InvalidArgumentError(c.kind + " " + c.meta.namespace_ + "/" + c.meta.name +
                                        ": kind must be Deployment or ReplicaSet");
  }
  WorkloadFacts w;
  w.kind = std::move(c.kind);
  w.namespace_ = std::move(c.meta.namespace_);
  w.name = std::move(c.meta.name);
  w.uid = std::move(c.meta.uid);
  w.annotations = std::move(c.meta.annotations);
  w.selector = std::move(c.selector);
  w.replicas = c.replicas;
  w.owner_references = std::move(c.meta.owner_references);
  return w;
}

}  // namespace gpusched::addons::deletion_cost
