// SPDX-License-Identifier: Apache-2.0
// Plan: "which pods will a scale-down remove, and why" for `gpusched deletion-cost plan`.
//
//   Deployments, ReplicaSets, Pods (raw JSON: a live LIST, or manifests)
//     └─► MakePlan: pick the ReplicaSet (a Deployment's only ReplicaSet with replicas > 0),
//                   its owned pods (controller ownerRef), the related pods (every ReplicaSet with
//                   the same controller owner, by selector) ──► PlanScaleDown (ranking.h)
//     └─► FormatPlanText / PlanToJson
//
// A Deployment in the middle of a rollout (several ReplicaSets with replicas) is refused: the
// deployment controller then splits the change proportionally between them, which this does
// not model; name one ReplicaSet instead. Pure functions, thread-compatible.
#pragma once

#include <boost/json/value.hpp>
#include <optional>
#include <string>
#include <vector>

#include "src/addons/deletion_cost/ranking.h"
#include "src/addons/deletion_cost/workload.h"
#include "src/common/clock.h"
#include "src/common/status.h"

namespace gpusched::addons::deletion_cost {

// Raw objects of one namespace (or of several; MakePlan filters by namespace).
struct ClusterObjects {
  std::vector<boost::json::value> deployments;
  std::vector<boost::json::value> replicasets;
  std::vector<boost::json::value> pods;
};

// Sorts manifest documents or LIST items by kind (v1 List and *List kinds are expanded; other
// kinds are ignored). Objects without a namespace get `default_namespace`.
ClusterObjects ClassifyObjects(const std::vector<boost::json::value>& docs,
                               const std::string& default_namespace);

struct PlanRequest {
  std::string kind;  // "Deployment" or "ReplicaSet"
  std::string namespace_;
  std::string name;
  int32_t replicas = 0;  // the new replica count
  common::TimePoint now{};
  RankingOptions options;
};

struct PlanResult {
  PlanRequest request;
  WorkloadFacts replicaset;
  std::optional<WorkloadFacts> owner;  // the ReplicaSet's controller (Deployment), if found
  size_t related_pods = 0;
  ScaleDownPlan plan;
  // Things a reader should know: invalid cost annotations (treated as 0), ties at the cutoff,
  // the burst cap, pods not yet adopted.
  std::vector<std::string> warnings;
};

// Errors: the workload is missing (kNotFound), or a Deployment has no or several ReplicaSets
// with replicas (kFailedPrecondition), or an object does not decode (kInvalidArgument).
common::StatusOr<PlanResult> MakePlan(const ClusterObjects& objects, const PlanRequest& request);

// A table of every active pod in deletion order, with the rule that put each before the next,
// then each victim against the first kept pod.
std::string FormatPlanText(const PlanResult& result);
// The same as JSON: {"replicaSet", "namespace", "replicas", "activePods", "deletions",
// "victims": [names], "pods": [...], "tiedSurvivors": [...], "warnings": [...]}.
boost::json::value PlanToJson(const PlanResult& result);

// "2024-05-01T12:00:00Z" (seconds precision, UTC).
std::string FormatTime(common::TimePoint t);

}  // namespace gpusched::addons::deletion_cost
