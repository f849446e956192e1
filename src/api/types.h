// SPDX-License-Identifier: Apache-2.0
// The compact Kubernetes object model: what a scheduler needs of Pods and Nodes (and of the
// PodDisruptionBudgets and PriorityClasses that preemption reads), decoded once on
// ingest (decode.h) into flat, interned values. Objects are immutable once decoded and shared as
// PodPtr/NodePtr between the informer, the queue and the cache.
//
// Units: CPU in millicores, memory and storage in bytes, extended resources in whole units
// (Quantity::Value(), rounded up), GPU memory in MiB, GPU compute in milli-GPU (1000 = one GPU).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/api/gang.h"
#include "src/api/gpu.h"
#include "src/api/labels.h"
#include "src/api/resources.h"
#include "src/common/clock.h"
#include "src/common/interner.h"

namespace gpusched::api {

using common::Atom;

// kNone: a DRA device taint that is purely informational (effect None, or one this version does
// not know: upstream's consumers treat unknown effects like None); never on a node.
enum class TaintEffect : uint8_t { kAll = 0, kNoSchedule, kPreferNoSchedule, kNoExecute, kNone };

struct Taint {
  Atom key;
  Atom value;
  TaintEffect effect = TaintEffect::kNoSchedule;
};

struct Toleration {
  enum class Op : uint8_t { kEqual, kExists };
  Atom key;  // empty with kExists tolerates every taint
  Op op = Op::kEqual;
  Atom value;
  TaintEffect effect = TaintEffect::kAll;  // kAll: any effect
  std::optional<int64_t> toleration_seconds;

  // True when this toleration tolerates `t` (v1 helper ToleratesTaint).
  bool Tolerates(const Taint& t) const;
};

struct PreferredSchedulingTerm {
  int32_t weight = 0;  // 1..100
  NodeSelectorTerm preference;
};

struct NodeAffinity {
  std::optional<NodeSelector> required;  // requiredDuringSchedulingIgnoredDuringExecution
  std::vector<PreferredSchedulingTerm> preferred;
};

struct PodAffinityTerm {
  LabelSelector label_selector;
  std::vector<std::string> namespaces;  // empty + no selector: the pod's namespace
  std::optional<LabelSelector> namespace_selector;
  Atom topology_key;
  // matchLabelKeys / mismatchLabelKeys: keys of the incoming pod's labels. The decoder merges
  // them into label_selector (key In (pod's value) / key NotIn (pod's value)) for keys the pod
  // has, as the API server does; they are kept for inspection.
  std::vector<Atom> match_label_keys;
  std::vector<Atom> mismatch_label_keys;
};

struct WeightedPodAffinityTerm {
  int32_t weight = 0;
  PodAffinityTerm term;
};

struct PodAffinity {
  std::vector<PodAffinityTerm> required;
  std::vector<WeightedPodAffinityTerm> preferred;
  bool empty() const { return required.empty() && preferred.empty(); }
};

struct Affinity {
  NodeAffinity node_affinity;
  PodAffinity pod_affinity;
  PodAffinity pod_anti_affinity;
};

struct TopologySpreadConstraint {
  enum class WhenUnsatisfiable : uint8_t { kDoNotSchedule, kScheduleAnyway };
  int32_t max_skew = 1;
  Atom topology_key;
  WhenUnsatisfiable when_unsatisfiable = WhenUnsatisfiable::kDoNotSchedule;
  LabelSelector label_selector;
  std::optional<int32_t> min_domains;
  // matchLabelKeys: merged by the decoder into label_selector as key In (the pod's value) for
  // each key the pod has (keys it lacks are ignored, as upstream); kept for inspection.
  std::vector<Atom> match_label_keys;
  // Which nodes count when computing the skew: Honor = only nodes matching the pod's
  // nodeSelector/required node affinity (policy default) / tolerating the node's
  // NoSchedule/NoExecute taints; Ignore = all nodes (taints policy default).
  enum class NodeInclusionPolicy : uint8_t { kHonor, kIgnore };
  NodeInclusionPolicy node_affinity_policy = NodeInclusionPolicy::kHonor;
  NodeInclusionPolicy node_taints_policy = NodeInclusionPolicy::kIgnore;
};

struct OwnerReference {
  std::string api_version;
  std::string kind;
  std::string name;
  std::string uid;
  bool controller = false;
};

struct Condition {
  std::string type;
  std::string status;  // "True", "False", "Unknown"
  std::string reason;
  std::string message;
  std::optional<common::TimePoint> last_transition_time;
};

struct ObjectMeta {
  std::string name;
  std::string namespace_;
  std::string uid;
  std::string resource_version;
  Labels labels;
  // Sorted by key; annotations are looked up rarely, so they stay strings.
  std::vector<std::pair<std::string, std::string>> annotations;
  std::vector<OwnerReference> owner_references;
  std::optional<common::TimePoint> creation_timestamp;
  std::optional<common::TimePoint> deletion_timestamp;

  // The annotation's value, or nullptr.
  const std::string* Annotation(std::string_view key) const;
  // The owner reference with controller: true (at most one, as the API server enforces), or
  // nullptr.
  const OwnerReference* ControllerRef() const;
};

// resourceVersion order: numeric when both parse as integers (the API server's are), else
// lexicographic. Used by the assume caches.
int CompareResourceVersions(std::string_view a, std::string_view b);

// A container port (v1.ContainerPort) as NodePorts reads it; only ports with a hostPort matter
// to scheduling, so decoding keeps only those.
struct ContainerPort {
  int32_t host_port = 0;
  int32_t container_port = 0;
  Atom protocol;        // "TCP" when unset
  std::string host_ip;  // "" when unset (upstream then treats it as 0.0.0.0)
  bool operator==(const ContainerPort&) const = default;
};

struct Container {
  std::string name;
  std::string image;  // spec.containers[].image as written (ImageLocality normalises it)
  std::vector<ContainerPort> ports;  // those with a hostPort
  ResourceList requests;  // after defaulting: a limit with no request counts as the request
  ResourceList limits;
  // Init containers only: restartPolicy Always, i.e. a sidecar that keeps running beside the
  // regular containers (its requests add to the pod's, see ComputeEffectiveRequests).
  bool restartable = false;
};

// v1.ContainerImage of a node's status.images.
struct ContainerImage {
  std::vector<std::string> names;
  int64_t size_bytes = 0;
  bool operator==(const ContainerImage&) const = default;
};

// Defined in src/api/volume.h.
struct PodVolumes;
struct PodResourceClaims;  // src/api/dra.h

enum class PodPhase : uint8_t { kPending, kRunning, kSucceeded, kFailed, kUnknown };

// spec.preemptionPolicy (v1.PreemptionPolicy): whether a pod may preempt pods of lower priority.
// "PreemptLowerPriority" (the default when unset) or "Never".
enum class PreemptionPolicy : uint8_t { kPreemptLowerPriority, kNever };

struct Pod {
  ObjectMeta meta;

  // spec
  std::string node_name;
  Atom scheduler_name;  // "default-scheduler" when unset
  int32_t priority = 0;
  std::string priority_class_name;
  PreemptionPolicy preemption_policy = PreemptionPolicy::kPreemptLowerPriority;
  Labels node_selector;
  Affinity affinity;
  std::vector<Toleration> tolerations;
  std::vector<TopologySpreadConstraint> topology_spread_constraints;
  std::vector<Container> containers;
  std::vector<Container> init_containers;
  bool has_restartable_init_containers = false;  // sidecars (restartPolicy: Always)
  ResourceList overhead;
  std::vector<std::string> scheduling_gates;
  // spec.volumes as the volume plugins read them (src/api/volume.h); null when the pod has no
  // volume that matters to scheduling. Kept behind a pointer so the volume model can grow
  // without every user of Pod recompiling.
  std::shared_ptr<const PodVolumes> volumes;
  // spec.resourceClaims with status.resourceClaimStatuses (src/api/dra.h, Dynamic Resource
  // Allocation); null when the pod has none.
  std::shared_ptr<const PodResourceClaims> resource_claims;

  // status
  PodPhase phase = PodPhase::kPending;
  std::vector<Condition> conditions;
  std::string nominated_node_name;
  // status.startTime: when the kubelet acknowledged the pod (nullopt while not yet started). The
  // preemption victim order breaks priority ties by it (later start first).
  std::optional<common::TimePoint> start_time;

  // Derived on decode (never recomputed in the scheduling cycle).
  // Effective requests as kube-scheduler computes them (resource.PodRequests): the sum of the
  // containers and the sidecar init containers, at least max over regular init containers of
  // (that container + the sidecars started before it), plus overhead; "pods" is 1.
  ResourceList requests;
  // The normalised GPU request; see gpu.h. When the GPU annotations are malformed, gpu is empty
  // and gpu_error says which field and value were wrong: the pod is reported unschedulable with
  // that reason and every other pod keeps scheduling.
  GpuRequest gpu;
  std::string gpu_error;
  // The gang the pod belongs to (gang.h: spec.workloadRef, the scheduling.x-k8s.io/pod-group
  // label or the scheduling.k8s.io/group-name annotation); empty for most pods.
  GangRef gang;
  // spec.schedulingGroup.podGroupName as written, also where `gang` names another API (a native
  // PodGroup's resource claims, KEP-5729, are shared by the pods that name it here); "" if none.
  std::string scheduling_group;

  std::string Key() const { return meta.namespace_ + "/" + meta.name; }
  bool Terminal() const { return phase == PodPhase::kSucceeded || phase == PodPhase::kFailed; }
};

struct Node {
  ObjectMeta meta;
  ResourceList capacity;
  ResourceList allocatable;
  std::vector<Taint> taints;
  bool unschedulable = false;
  std::vector<Condition> conditions;

  // Derived on decode: the node's GPUs (count, model, per-GPU memory, islands, health) from the
  // label dialects in gpu.h. gpu_error holds a warning when labels were malformed or disagree.
  NodeGpuInfo gpu;
  std::string gpu_error;
  // status.images (ImageLocality): each image's names and size in bytes.
  std::vector<ContainerImage> images;
};

// policy/v1 PodDisruptionBudget: what preemption reads of it (minAvailable/maxUnavailable are
// the disruption controller's input; disruptionsAllowed is its output).
struct PodDisruptionBudget {
  ObjectMeta meta;  // namespace defaults to "default", as for pods
  // spec.selector; nullopt when absent or null.
  std::optional<LabelSelector> selector;
  int32_t disruptions_allowed = 0;  // status.disruptionsAllowed
  // The names (keys) of status.disruptedPods, sorted: pods whose eviction the API server has
  // already counted against the budget.
  std::vector<std::string> disrupted_pods;

  // Whether the budget's selector matches `labels`, as kube-scheduler's preemption
  // (filterPodsWithPDBViolation) decides: a nil or empty selector matches nothing, and neither
  // do empty labels. The namespace is not compared here (see AppliesTo).
  bool Matches(const Labels& labels) const;
  // Same namespace as `pod` and Matches(pod.meta.labels).
  bool AppliesTo(const Pod& pod) const;
  // Whether `pod_name` is in disrupted_pods.
  bool Disrupted(std::string_view pod_name) const;
};

// scheduling.k8s.io/v1 PriorityClass (cluster-scoped).
struct PriorityClass {
  std::string name;
  int32_t value = 0;
  PreemptionPolicy preemption_policy = PreemptionPolicy::kPreemptLowerPriority;
  bool global_default = false;
};

using PodPtr = std::shared_ptr<const Pod>;
using NodePtr = std::shared_ptr<const Node>;
using PdbPtr = std::shared_ptr<const PodDisruptionBudget>;

// Recomputes pod.requests from containers, init containers and overhead (called by the decoder and
// by test builders after they change containers).
void ComputeEffectiveRequests(Pod& pod);

std::string_view PodPhaseName(PodPhase phase);
// "PreemptLowerPriority" or "Never".
std::string_view PreemptionPolicyName(PreemptionPolicy policy);

}  // namespace gpusched::api
