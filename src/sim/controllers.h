// SPDX-License-Identifier: Apache-2.0
// Workload objects expanded into the pods their controllers would create, so that a manifest of
// Deployments and Jobs can be simulated as it would run (owner references and labels included,
// for PodTopologySpread, InterPodAffinity and the ReplicaSet's deletion-cost ranking):
//
//   Deployment  (apps/v1)  a ReplicaSet <name>-<template hash>, then as a ReplicaSet; pods carry
//                          pod-template-hash
//   ReplicaSet  (apps/v1)  spec.replicas (default 1) pods <rs>-<5 chars>, owned by the ReplicaSet
//   StatefulSet (apps/v1)  spec.replicas pods <name>-<ordinal>, ordinals from spec.ordinals.start
//                          (default 0); labels statefulset.kubernetes.io/pod-name,
//                          apps.kubernetes.io/pod-index, controller-revision-hash
//   Job         (batch/v1) the pods running at once: min(parallelism, completions) (parallelism
//                          default 1; none when suspended); completionMode Indexed names them
//                          <job>-<index>-<5 chars> with the job-completion-index annotation and
//                          label; labels batch.kubernetes.io/job-name and controller-uid. A Job
//                          whose spec.scheduling asks for a gang also gets the native PodGroup
//                          <job>-<5 chars> that Kubernetes 1.37's Job controller creates
//                          (WorkloadWithJob; minCount default the parallelism, the topology
//                          constraint), named in each pod's spec.schedulingGroup
//   DaemonSet   (apps/v1)  one pod per node whose labels match the template's nodeSelector and
//                          required node affinity and whose NoSchedule/NoExecute taints the
//                          template (plus the controller's default tolerations) tolerates; each
//                          pod's required node affinity names its node (matchFields
//                          metadata.name), as the controller sets it
//
// Names that a controller draws at random (the 5 characters, the template hash) are derived from
// the object instead, so a run is reproducible. The pods keep the template's labels, annotations
// and spec; they are decoded like any pod. An object the API server or its controller would
// refuse (no template, a selector that does not match the template's labels, a Job template with
// restartPolicy Always, a template that does not decode) becomes a Rejection naming the field;
// so does a pod count above 100,000 per object (the simulator's bound, not the API server's).
// Pure functions over the workload; thread-safe.
#pragma once

#include <span>
#include <string_view>
#include <vector>

#include "src/api/types.h"
#include "src/common/status.h"
#include "src/sim/workload.h"

namespace gpusched::sim {

// Whether ExpandControllers expands objects of this apiVersion and kind.
bool IsControllerKind(std::string_view api_version, std::string_view kind);

// What a controller object stands for: its pods, in creation order, and the gang policies its
// controller would create (a Job's native PodGroup).
struct Expansion {
  std::vector<api::PodPtr> pods;
  std::vector<api::PodGroupPtr> pod_groups;
};
// `nodes` is the cluster (for DaemonSets). Errors (InvalidArgument) name the field and value,
// e.g. "spec.replicas: must be in [0, ...]".
common::StatusOr<Expansion> ExpandController(const ControllerObject& object,
                                             std::span<const api::NodePtr> nodes);

// The pod the controller of `deleted` creates after the scheduler's preemption deleted it: a copy
// without uid, node or creation time, named as the controller names a new pod — ReplicaSet and
// DaemonSet <owner>-<5 chars>, Job <job>-<5 chars> (Indexed: <job>-<index>-<5 chars>), the
// characters derived from the deleted pod's uid; StatefulSet the same name. nullptr when no
// ReplicaSet, Job, StatefulSet or DaemonSet controls the pod: a bare pod is gone for good.
api::PodPtr ReplacementPod(const api::Pod& deleted);

// Expands every object of workload.controllers into pods, inserted into workload.pods where the
// object was in the input (document order), and gang policies, appended to
// workload.pod_groups; then clears workload.controllers. An object that
// does not expand is added to workload.rejected.
void ExpandControllers(Workload& workload);

}  // namespace gpusched::sim
