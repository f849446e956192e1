// SPDX-License-Identifier: Apache-2.0
// What `gpusched explain` is asked about, as kubectl names objects: a pod (NAME, NAMESPACE/NAME,
// pod/NAME) or a workload whose pods are the candidates (deployment/NAME, job/NAME,
// podgroup/NAME, ...), in the namespace of -n. A workload's pods carry generated names (a hash
// suffix), so a user names the workload and explain picks the pod worth explaining: the first
// one still waiting.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "src/api/types.h"
#include "src/common/status.h"

namespace gpusched::explain {

struct PodRef {
  enum class Kind { kPod, kDeployment, kReplicaSet, kStatefulSet, kDaemonSet, kJob, kPodGroup };
  Kind kind = Kind::kPod;
  std::string ns = "default";
  std::string name;

  // "pod ml/train-0", "deployment ml/web".
  std::string ToString() const;
};

// Parses the argument with the -n value (`namespace_flag`, "" when not given):
//   NAME                 a pod
//   NAMESPACE/NAME       a pod (when NAMESPACE is not a TYPE below)
//   TYPE/NAME            TYPE one of kubectl's names, singular, plural or short, any case: pod|po,
//                        deployment|deploy, replicaset|rs, statefulset|sts, daemonset|ds, job,
//                        podgroup|pg
// A NAMESPACE/ that disagrees with -n, an unknown form or an empty part is an error naming the
// argument.
common::StatusOr<PodRef> ParsePodRef(std::string_view arg, std::string_view namespace_flag);

// Whether `pod` is the pod `ref` names or one of its workload's pods: same namespace, and the
// pod's controller ownerReference is the workload (for a Deployment, a ReplicaSet named
// "<name>-<the pod's pod-template-hash label>"), or, for podgroup, the pod's gang is the group.
bool Selects(const PodRef& ref, const api::Pod& pod);

// Of the pods `ref` selects from `pods`, the one to explain: the first by name not bound to a
// node, else the first by name; nullptr when `ref` selects none. `selected` (optional) gets how
// many `ref` selects.
api::PodPtr ChooseTarget(const PodRef& ref, std::span<const api::PodPtr> pods,
                         size_t* selected = nullptr);

}  // namespace gpusched::explain
