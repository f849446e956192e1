// SPDX-License-Identifier: Apache-2.0
// Gangs: groups of pods that run all together or not at all (distributed training), read from
// the four APIs users already write, into one model.
//
//   API                            a pod joins with                  policy object
//   scheduler-plugins              label                             PodGroup
//   (coscheduling)                 scheduling.x-k8s.io/pod-group     scheduling.x-k8s.io/v1alpha1
//   Volcano                        annotation                        PodGroup
//                                  scheduling.k8s.io/group-name      scheduling.volcano.sh/v1beta1
//   Kubernetes 1.35 Workload API   spec.workloadRef {name, podGroup, Workload
//   (alpha)                        podGroupReplicaKey}               scheduling.k8s.io/v1alpha1,
//                                                                    one policy per
//                                                                    spec.podGroups[]
//   Kubernetes 1.36+ PodGroup      spec.schedulingGroup              PodGroup scheduling.k8s.io/
//   (native; beta in 1.37)         {podGroupName}                    v1beta1 (1.37), v1alpha3
//                                                                    (1.37), v1alpha2 (1.36)
//
// A pod's membership (GangRef) is derived when the pod is decoded (decode_pod.cc): workloadRef
// wins over the label, the label over the annotation, and both over schedulingGroup (which 1.37's
// Job controller sets on every Job's pods with WorkloadWithJob on: a basic, non-gang PodGroup
// unless the Job asks for a gang, so a user's own label must not lose to it). A PodGroup
// is the policy: minMember (a Workload's or native PodGroup's gang.minCount), minResources, the
// schedule timeout (scheduleTimeoutSeconds; otherwise the scheduler's default) and the topology
// the gang must (required) or should (preferred) share: a native PodGroup's
// spec.schedulingConstraints.topology[0].key is required; on any policy object, annotations:
//   gpusched.io/gang-topology-required / gpusched.io/gang-topology-preferred: <node label key>
//   kueue.x-k8s.io/podset-required-topology / kueue.x-k8s.io/podset-preferred-topology (the same)
//
// Keys. PolicyKey names the policy object: "<api>:<namespace>/<name>" (Workload:
// "workload:<namespace>/<workload>/<podGroup>"). GangKey names one gang: the policy key, plus
// "#<podGroupReplicaKey>" for Workload replicas (each replica is a gang of its own under the
// same policy). Both are "" for a pod in no gang.
#pragma once

#include <array>
#include <boost/json/fwd.hpp>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "src/api/resources.h"
#include "src/common/clock.h"
#include "src/common/status.h"

namespace gpusched::api {

struct Pod;
struct ObjectMeta;
struct PodResourceClaims;  // dra.h

inline constexpr std::string_view kPodGroupLabel = "scheduling.x-k8s.io/pod-group";
inline constexpr std::string_view kVolcanoGroupAnnotation = "scheduling.k8s.io/group-name";
inline constexpr std::string_view kGangTopologyRequired = "gpusched.io/gang-topology-required";
inline constexpr std::string_view kGangTopologyPreferred = "gpusched.io/gang-topology-preferred";
inline constexpr std::string_view kKueueRequiredTopology =
    "kueue.x-k8s.io/podset-required-topology";
inline constexpr std::string_view kKueuePreferredTopology =
    "kueue.x-k8s.io/podset-preferred-topology";

inline constexpr std::string_view kPodGroupApiVersion = "scheduling.x-k8s.io/v1alpha1";
inline constexpr std::string_view kVolcanoApiVersion = "scheduling.volcano.sh/v1beta1";
inline constexpr std::string_view kWorkloadApiVersion = "scheduling.k8s.io/v1alpha1";
// The native PodGroup's group and the versions gpusched reads, most preferred first (the
// informer reads the first one the API server serves).
inline constexpr std::string_view kNativeGangGroup = "scheduling.k8s.io";
inline constexpr std::array<std::string_view, 3> kNativePodGroupApiVersions = {
    "scheduling.k8s.io/v1beta1", "scheduling.k8s.io/v1alpha3", "scheduling.k8s.io/v1alpha2"};
bool IsNativePodGroupApiVersion(std::string_view api_version);
// The native PodGroup's status condition the scheduler writes, and PodGroup::phase for it.
inline constexpr std::string_view kNativeInitiallyScheduled = "PodGroupInitiallyScheduled";
inline constexpr std::string_view kNativePhaseScheduled = "Scheduled";
inline constexpr std::string_view kNativePhaseUnschedulable = "Unschedulable";

enum class GangApi : uint8_t { kNone, kPodGroup, kVolcano, kWorkload, kNative };
// "podgroup", "volcano", "workload", "native" (the key prefix); "" for kNone.
std::string_view GangApiName(GangApi api);

// A pod's gang membership.
struct GangRef {
  GangApi api = GangApi::kNone;
  std::string name;         // the PodGroup's or Workload's name (schedulingGroup.podGroupName)
  std::string pod_group;    // Workload: spec.workloadRef.podGroup
  std::string replica_key;  // Workload: spec.workloadRef.podGroupReplicaKey
  bool empty() const { return api == GangApi::kNone; }
  bool operator==(const GangRef&) const = default;
};

// The membership `meta` and spec.workloadRef or spec.schedulingGroup (`spec_ref`, empty when
// absent) give a pod, by the precedence of the file comment.
GangRef DeriveGangRef(const ObjectMeta& meta, const GangRef& spec_ref);

std::string PolicyKey(GangApi api, std::string_view ns, std::string_view name,
                      std::string_view pod_group);
std::string PolicyKey(const Pod& pod);
std::string GangKey(const Pod& pod);

// The policy of one gang (see the file comment).
struct PodGroup {
  GangApi api = GangApi::kNone;
  std::string namespace_;
  std::string name;       // the object's name
  std::string pod_group;  // kWorkload: the pod group's name in spec.podGroups
  std::string uid;
  // All-or-nothing: at least min_member pods placed together. A Workload pod group with the
  // basic policy has gang == false (its pods are scheduled one by one).
  bool gang = true;
  int32_t min_member = 1;
  ResourceList min_resources;
  std::optional<common::Duration> schedule_timeout;  // nullopt: the scheduler's default
  std::string topology_required;                     // a node label key; "" when none
  std::string topology_preferred;                    // "" when none
  // status.phase as read (scheduler-plugins, Volcano); native: "Scheduled" when the
  // PodGroupInitiallyScheduled condition is True, "Unschedulable" when False, else "".
  std::string phase;
  std::string api_version;  // native: the version it was read in (its status is written there)
  // Native (KEP-5729, gate DRAWorkloadResourceClaims): spec.resourceClaims, the claims its pods
  // share, and status.resourceClaimStatuses (the names kube-controller-manager generated); null
  // when none. A pod claim with the same name and the same claim or template is reserved for the
  // PodGroup instead of the pod.
  std::shared_ptr<const PodResourceClaims> resource_claims;

  std::string Key() const { return PolicyKey(api, namespace_, name, pod_group); }
};
using PodGroupPtr = std::shared_ptr<const PodGroup>;

// What the scheduler writes into a PodGroup's status (scheduler-plugins, Volcano and native; a
// Workload has none). `phase` is in the object's own vocabulary (scheduler-plugins: Pending,
// Scheduling, Running, Finished, Failed, and TimedOut; Volcano: Pending, Running, Completed,
// Unknown; native: the PodGroupInitiallyScheduled condition as PodGroup::phase reads it);
// `unschedulable` (Volcano: an Unschedulable condition; native: the condition False) says why
// the gang waits.
struct PodGroupStatus {
  std::string phase;
  int32_t running = 0;
  int32_t succeeded = 0;
  int32_t failed = 0;
  bool unschedulable = false;
  std::string reason;   // condition reason: "NotEnoughResources", "TimedOut"
  std::string message;  // condition message
  bool operator==(const PodGroupStatus&) const = default;
};

// A scheduler-plugins, Volcano or native PodGroup (by apiVersion: kPodGroupApiVersion,
// kVolcanoApiVersion or one of kNativePodGroupApiVersions). Errors name the object and the
// field, e.g.
//   podgroup ml/train: spec.minMember: value out of range [0, 2147483647]
common::StatusOr<PodGroup> DecodePodGroup(const boost::json::value& json);
// A Workload (kWorkloadApiVersion): one PodGroup per spec.podGroups[] entry.
common::StatusOr<std::vector<PodGroup>> DecodeWorkload(const boost::json::value& json);

}  // namespace gpusched::api
