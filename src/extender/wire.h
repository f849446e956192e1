// SPDX-License-Identifier: Apache-2.0
// The extender's request types: kube-scheduler's extender wire structs
// (k8s.io/kube-scheduler/extender/v1/types.go) as the verbs read them. They decode through
// api::JsonReader in the extender's dialect: member names match exactly or, failing that,
// case-insensitively (Go's encoding/json on structs without JSON tags), and a body's errors read
// "request: <path>: <message>; ..." with every error of the body, in document order.
#pragma once

#include <boost/json.hpp>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "src/api/types.h"
#include "src/common/status.h"

namespace gpusched::extender {

// ExtenderArgs: the pod and the candidate nodes, by name (nodeCacheCapable) or as a NodeList.
struct ExtenderArgs {
  api::PodPtr pod;
  bool node_cache_capable = false;             // NodeNames given rather than Nodes
  std::vector<std::string> names;              // the candidate nodes, in request order
  std::vector<api::NodePtr> nodes;             // decoded Nodes (only when !node_cache_capable)
  std::vector<const boost::json::value*> raw;  // the Nodes items (inside `root`), echoed back
  // The parsed body. `raw` points into its heap-allocated arrays, which stay put when the
  // ExtenderArgs moves.
  boost::json::value root;
};
common::StatusOr<ExtenderArgs> DecodeExtenderArgs(std::string_view body);

// ExtenderPreemptionArgs: the pod and, per node, the victims kube-scheduler proposes
// (NodeNameToMetaVictims: UIDs; NodeNameToVictims: whole pods, of which the UIDs are kept).
struct PreemptionArgs {
  struct Node {
    std::string name;
    std::vector<std::string> uids;  // the proposed victims, in request order
    int64_t pdb_violations = 0;
  };
  api::PodPtr pod;
  std::vector<Node> nodes;
};
common::StatusOr<PreemptionArgs> DecodePreemptionArgs(std::string_view body);

// ExtenderBindingArgs. PodName, PodUID and Node are required.
struct BindingArgs {
  std::string pod_name;
  std::string pod_namespace;
  std::string pod_uid;
  std::string node;
};
common::StatusOr<BindingArgs> DecodeBindingArgs(std::string_view body);

}  // namespace gpusched::extender
