// SPDX-License-Identifier: Apache-2.0
// Workload: what a simulation replays — the nodes of the cluster and the pods in arrival order.
// Every input format becomes a Workload (YAML manifests here, the built-in example in
// builtin_example.h, the openb trace in trace/openb.h); the Simulator only ever sees this struct.
// To add a source, write a function that returns a Workload (see README.md).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "src/api/gang.h"
#include "src/api/types.h"
#include "src/common/status.h"

namespace gpusched::sim {

struct Workload {
  std::vector<api::NodePtr> nodes;
  std::vector<api::PodPtr> pods;  // arrival order
  // Resolve the pods' priorityClassName (as the API server's Priority admission does) and guard
  // pods from preemption (their status.disruptionsAllowed as written; the simulator runs no
  // disruption controller).
  std::vector<api::PriorityClass> priority_classes;
  std::vector<api::PdbPtr> pdbs;
  // Gang policies (api/gang.h): scheduler-plugins and Volcano PodGroups, one per pod group of a
  // Workload. Added before the pods.
  std::vector<api::PodGroupPtr> pod_groups;
  // Objects that were read but are not simulated (e.g. a Deployment), one line each.
  std::vector<std::string> warnings;
};

// Decodes a multi-document YAML (or JSON) manifest and appends its Nodes, Pods, PriorityClasses,
// PodDisruptionBudgets and gang policies (PodGroups of scheduler-plugins or Volcano, Workloads) to
// `workload`, in document order. Lists (v1 List, PodList, NodeList) are
// expanded by the decoder; other kinds are skipped with a warning. Errors name `source`, the
// document and the field.
common::Status AppendManifests(std::string_view text, std::string_view source, Workload& workload);

// Reads a whole file. Errors name the path.
common::StatusOr<std::string> ReadFile(const std::string& path);

}  // namespace gpusched::sim
