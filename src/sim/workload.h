// SPDX-License-Identifier: Apache-2.0
// Workload: what a simulation replays — the nodes of the cluster and the pods in arrival order.
// Every input format becomes a Workload (YAML manifests here, the built-in example in
// builtin_example.h, the openb trace in trace/openb.h); the Simulator only ever sees this struct.
// To add a source, write a function that returns a Workload (see README.md).
//
// Manifests are read object by object: an object that does not decode, or that the API server
// would refuse, is a Rejection (reported and skipped) and the others are simulated. Workload
// objects (Deployment, ReplicaSet, StatefulSet, Job, DaemonSet) are kept in `controllers` until
// every file is read, then ExpandControllers (controllers.h) turns them into the pods their
// controllers would create, in document order (a DaemonSet needs every node).
#pragma once

#include <boost/json/value.hpp>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "src/api/dra.h"
#include "src/api/gang.h"
#include "src/api/types.h"
#include "src/common/status.h"
#include "src/kube/api_client.h"

namespace gpusched::sim {

// An input object that was not simulated because it is invalid.
struct Rejection {
  std::string source;   // file name
  size_t document = 0;  // 1-based document number in the file; 0 = the whole file
  std::string kind;     // "Pod", "Deployment", ... ("" when unknown)
  std::string name;     // namespace/name or name ("" when unknown)
  std::string error;    // "field.path: why, with the value", as the decoder words it

  // "file: document 3: Pod ml/train: spec.containers[0]...: invalid quantity \"x\"".
  std::string ToString() const;
};

// A workload object waiting for ExpandControllers.
struct ControllerObject {
  std::string source;
  size_t document = 0;
  size_t position = 0;  // its pods go before Workload::pods[position]
  std::string api_version;
  std::string kind;
  std::string name;
  boost::json::value json;
};

// A Dynamic Resource Allocation object of the input (resource.k8s.io/v1, docs/dra.md).
using DraObject = std::variant<api::DeviceClassPtr, api::ResourceSlicePtr, api::ResourceClaimPtr,
                               api::ResourceClaimTemplatePtr, api::DeviceTaintRulePtr>;

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
  // Storage objects for the volume plugins: PersistentVolumes, PersistentVolumeClaims,
  // StorageClasses, CSINodes and CSIDrivers (docs/volumes.md). Added before the pods.
  std::vector<kube::StorageObject> storage;
  // DRA objects for the DynamicResources plugin: DeviceClasses, ResourceSlices, DeviceTaintRules,
  // ResourceClaims and ResourceClaimTemplates (docs/dra.md). Added before the pods.
  std::vector<DraObject> dra;
  // AppGroups and NetworkTopologies for the NetworkLocality plugin (docs/network-locality.md).
  // Added before the pods.
  std::vector<kube::NetworkObject> network;
  // Objects that were read but are not simulated (e.g. a ConfigMap), unknown fields, node GPU
  // facts that were clamped or disagree: one line each.
  std::vector<std::string> warnings;
  // Objects refused as invalid (reported, not simulated; the run still simulates the rest).
  std::vector<Rejection> rejected;
  // Workload objects not yet expanded into pods (see ExpandControllers).
  std::vector<ControllerObject> controllers;
};

// Decodes a multi-document YAML (or JSON) manifest and appends its Nodes, Pods, PriorityClasses,
// PodDisruptionBudgets, gang policies (PodGroups of scheduler-plugins or Volcano, Workloads),
// storage and DRA objects and workload objects (to `controllers`) to `workload`, in document order.
// Lists (v1 List, PodList, NodeList) are expanded by the decoder; other kinds are skipped with a
// warning. A document that does not decode, or that the API server would refuse (checks.h), is
// added to `rejected` and skipped, and so is a YAML document with a syntax error (the others are
// still read: api::ParseManifestDocumentsEach); unknown fields are warnings ("did you mean").
// Only text of which no document is YAML or JSON is an error (naming `source` and the line).
// A Node gets the labels a kubelet sets where it has none: kubernetes.io/hostname (its name),
// kubernetes.io/os=linux and kubernetes.io/arch=amd64 (and their beta.kubernetes.io twins).
common::Status AppendManifests(std::string_view text, std::string_view source, Workload& workload);

// The labels a kubelet sets on its Node when it registers, where `node` has none:
// kubernetes.io/hostname (its name), kubernetes.io/os=linux and kubernetes.io/arch=amd64, and
// their beta.kubernetes.io twins. AppendManifests and the trace readers apply it to every Node.
void DefaultKubeletLabels(api::Node& node);

// Warnings for the nodes' GPU facts that were clamped, skipped or disagree (Node::gpu_error), one
// per node: "node gpu-7: GPU count 17 exceeds 16; clamped".
std::vector<std::string> NodeGpuWarnings(const Workload& workload);

// Reads a whole file. Errors name the path.
common::StatusOr<std::string> ReadFile(const std::string& path);

// One manifest file of the input.
struct InputFile {
  std::string name;  // the path; "-" for standard input
  std::string text;
};

// The files `-f` names, as kubectl reads them: a file; "-", standard input (read once); a
// directory, its files ending in .yaml, .yml or .json in name order, and with `recursive` those of
// its subdirectories too (depth first, in name order). Errors name the path: one that does not
// exist or cannot be read, a directory without such files ("add -R" when it has subdirectories),
// "-" given twice.
common::StatusOr<std::vector<InputFile>> ReadInputs(std::span<const std::string> paths,
                                                    bool recursive);

}  // namespace gpusched::sim
