// SPDX-License-Identifier: Apache-2.0
// Gangs: groups of pods that run all together or not at all (distributed training), read from
// the three APIs users already write, into one model.
//
//   API                                   a pod joins with                       policy object
//   scheduler-plugins (coscheduling)      label scheduling.x-k8s.io/pod-group    PodGroup
//   scheduling.x-k8s.io/v1alpha1 Volcano                               annotation
//   scheduling.k8s.io/group-name PodGroup scheduling.volcano.sh/v1beta1 Kubernetes 1.35 Workload
//   API (alpha)  spec.workloadRef {name, podGroup,     Workload scheduling.k8s.io/v1alpha1,
//                                         podGroupReplicaKey}                     one PodGroup per
//                                         spec.podGroups[]
//
// A pod's membership (GangRef) is derived when the pod is decoded (decode_pod.cc): workloadRef
// wins over the label, the label over the annotation. A PodGroup is the policy: minMember (the
// Workload's gang.minCount), minResources, the schedule timeout (scheduleTimeoutSeconds;
// otherwise the scheduler's default) and the topology the gang must (required) or should
// (preferred) share, from annotations on the policy object:
//   gpusched.io/gang-topology-required / gpusched.io/gang-topology-preferred: <node label key>
//   kueue.x-k8s.io/podset-required-topology / kueue.x-k8s.io/podset-preferred-topology (the same)
//
// Keys. PolicyKey names the policy object: "<api>:<namespace>/<name>" (Workload:
// "workload:<namespace>/<workload>/<podGroup>"). GangKey names one gang: the policy key, plus
// "#<podGroupReplicaKey>" for Workload replicas (each replica is a gang of its own under the
// same policy). Both are "" for a pod in no gang.
#pragma once

#include <boost/json/fwd.hpp>
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

enum class GangApi : uint8_t { kNone, kPodGroup, kVolcano, kWorkload };
// "podgroup", "volcano", "workload" (the key prefix); "" for kNone.
std::string_view GangApiName(GangApi api);

// A pod's gang membership.
struct GangRef {
  GangApi api = GangApi::kNone;
  std::string name;         // the PodGroup's or Workload's name
  std::string pod_group;    // Workload: spec.workloadRef.podGroup
  std::string replica_key;  // Workload: spec.workloadRef.podGroupReplicaKey
  bool empty() const { return api == GangApi::kNone; }
  bool operator==(const GangRef&) const = default;
};

// The membership `meta` and spec.workloadRef (`workload_ref`, empty when absent) give a pod.
GangRef DeriveGangRef(const ObjectMeta& meta, const GangRef& workload_ref);

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
  std::string phase;  // status.phase as read (scheduler-plugins, Volcano)

  std::string Key() const { return PolicyKey(api, namespace_, name, pod_group); }
};
using PodGroupPtr = std::shared_ptr<const PodGroup>;

// What the scheduler writes into a PodGroup's status (scheduler-plugins and Volcano; a Workload
// has none). `phase` is in the object's own vocabulary (scheduler-plugins: Pending, Scheduling,
// Running, Finished, Failed, and TimedOut; Volcano: Pending, Running, Completed, Unknown);
// `unschedulable` (Volcano: an Unschedulable condition) says why the gang waits.
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

// A scheduler-plugins or Volcano PodGroup (by apiVersion: kPodGroupApiVersion or
// kVolcanoApiVersion). Errors name the object and the field, e.g.
//   podgroup ml/train: spec.minMember: value out of range [0, 2147483647]
common::StatusOr<PodGroup> DecodePodGroup(const boost::json::value& json);
// A Workload (kWorkloadApiVersion): one PodGroup per spec.podGroups[] entry.
common::StatusOr<std::vector<PodGroup>> DecodeWorkload(const boost::json::value& json);

}  // namespace gpusched::api
