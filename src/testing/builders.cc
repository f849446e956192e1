// SPDX-License-Identifier: Apache-2.0
#include "src/testing/builders.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>

#include "src/api/gpu.h"
#include "src/api/quantity.h"
#include "src/common/check.h"
#include "src/common/interner.h"

namespace gpusched::testing {
namespace {

using common::Intern;

// The amount of `quantity` in the unit ResourceList uses for `resource` (millicores for cpu).
int64_t Amount(std::string_view resource, std::string_view quantity) {
  auto q = api::Quantity::Parse(quantity);
  if (!q.ok()) {
    std::fprintf(stderr, "builders: resource %.*s: %s\n", static_cast<int>(resource.size()),
                 resource.data(), q.status().ToString().c_str());
  }
  GPUSCHED_CHECK(q.ok());
  return resource == "cpu" ? q->MilliValue() : q->Value();
}

void SetAmount(api::ResourceList& list, std::string_view resource, std::string_view quantity) {
  list.Set(Intern(resource), Amount(resource, quantity));
}

void SetRequests(api::Container& c, ResourcePairs requests) {
  for (const auto& [name, q] : requests) SetAmount(c.requests, name, q);
}

void SetAnnotation(api::ObjectMeta& meta, std::string_view key, std::string_view value) {
  auto it = std::lower_bound(meta.annotations.begin(), meta.annotations.end(), key,
                             [](const auto& e, std::string_view k) { return e.first < k; });
  if (it != meta.annotations.end() && it->first == key) {
    it->second = std::string(value);
  } else {
    meta.annotations.insert(it, {std::string(key), std::string(value)});
  }
}

api::Requirement MakeRequirement(std::string_view key, api::SelectorOp op,
                                 const std::vector<std::string_view>& values) {
  api::Requirement r;
  r.key = Intern(key);
  r.op = op;
  for (std::string_view v : values) r.values.push_back(Intern(v));
  return r;
}

api::LabelSelector SelectorFor(std::string_view key, std::string_view value) {
  api::LabelSelector s;
  s.requirements.push_back(MakeRequirement(key, api::SelectorOp::kIn, {value}));
  return s;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// PodBuilder

PodBuilder::PodBuilder(std::string_view ns, std::string_view name) {
  pod_.meta.namespace_ = ns.empty() ? "default" : std::string(ns);
  pod_.meta.name = std::string(name);
  pod_.meta.uid = pod_.meta.namespace_ + "/" + pod_.meta.name;
  pod_.scheduler_name = api::Names().default_scheduler;
}

PodBuilder MakePod(std::string_view ns, std::string_view name) { return PodBuilder(ns, name); }

api::Container& PodBuilder::Main() {
  if (pod_.containers.empty()) {
    api::Container main;
    main.name = "main";
    pod_.containers.push_back(std::move(main));
  }
  return pod_.containers.front();
}

PodBuilder& PodBuilder::Namespace(std::string_view ns) {
  pod_.meta.namespace_ = std::string(ns);
  return *this;
}
PodBuilder& PodBuilder::WorkloadRef(std::string_view workload, std::string_view pod_group,
                                    std::string_view replica_key) {
  pod_.gang.api = api::GangApi::kWorkload;
  pod_.gang.name = std::string(workload);
  pod_.gang.pod_group = std::string(pod_group);
  pod_.gang.replica_key = std::string(replica_key);
  return *this;
}

PodBuilder& PodBuilder::SchedulingGroup(std::string_view pod_group_name) {
  pod_.gang = api::GangRef{};
  pod_.gang.api = api::GangApi::kNative;
  pod_.gang.name = std::string(pod_group_name);
  return *this;
}

PodBuilder& PodBuilder::Uid(std::string_view uid) {
  pod_.meta.uid = std::string(uid);
  return *this;
}
PodBuilder& PodBuilder::Label(std::string_view key, std::string_view value) {
  pod_.meta.labels.Set(key, value);
  return *this;
}
PodBuilder& PodBuilder::Annotation(std::string_view key, std::string_view value) {
  SetAnnotation(pod_.meta, key, value);
  return *this;
}
PodBuilder& PodBuilder::OwnerReference(std::string_view kind, std::string_view name) {
  api::OwnerReference ref;
  ref.api_version = kind == "ReplicaSet" || kind == "StatefulSet" || kind == "DaemonSet"
                        ? "apps/v1"
                        : (kind == "Job" ? "batch/v1" : "v1");
  ref.kind = std::string(kind);
  ref.name = std::string(name);
  ref.uid = std::string(kind) + "/" + std::string(name);
  ref.controller = true;
  pod_.meta.owner_references.push_back(std::move(ref));
  return *this;
}
PodBuilder& PodBuilder::CreationTimestamp(common::TimePoint t) {
  pod_.meta.creation_timestamp = t;
  return *this;
}
PodBuilder& PodBuilder::DeletionTimestamp(common::TimePoint t) {
  pod_.meta.deletion_timestamp = t;
  return *this;
}

PodBuilder& PodBuilder::Cpu(std::string_view q) { return Request("cpu", q); }
PodBuilder& PodBuilder::Memory(std::string_view q) { return Request("memory", q); }
PodBuilder& PodBuilder::EphemeralStorage(std::string_view q) {
  return Request("ephemeral-storage", q);
}
PodBuilder& PodBuilder::Request(std::string_view resource, std::string_view q) {
  SetAmount(Main().requests, resource, q);
  return *this;
}
PodBuilder& PodBuilder::Limit(std::string_view resource, std::string_view q) {
  SetAmount(Main().limits, resource, q);
  return *this;
}
PodBuilder& PodBuilder::Gpus(int64_t count) {
  api::Container& c = Main();
  c.limits.Set(api::Names().nvidia_gpu, count);
  c.requests.Set(api::Names().nvidia_gpu, count);
  return *this;
}
PodBuilder& PodBuilder::GpuModel(std::string_view models) {
  return Annotation(api::kPodGpuModelAnnotation, models);
}
PodBuilder& PodBuilder::GpuMemoryMiB(int64_t mib) {
  return Annotation(api::kPodGpuMemoryAnnotation, std::to_string(mib));
}

PodBuilder& PodBuilder::Container(std::string_view name, ResourcePairs requests) {
  api::Container c;
  c.name = std::string(name);
  SetRequests(c, requests);
  pod_.containers.push_back(std::move(c));
  return *this;
}
PodBuilder& PodBuilder::InitContainer(std::string_view name, ResourcePairs requests) {
  api::Container c;
  c.name = std::string(name);
  SetRequests(c, requests);
  pod_.init_containers.push_back(std::move(c));
  return *this;
}
PodBuilder& PodBuilder::Sidecar(std::string_view name, ResourcePairs requests) {
  api::Container c;
  c.name = std::string(name);
  c.restartable = true;
  SetRequests(c, requests);
  pod_.init_containers.push_back(std::move(c));
  return *this;
}
PodBuilder& PodBuilder::Overhead(std::string_view resource, std::string_view q) {
  SetAmount(pod_.overhead, resource, q);
  return *this;
}

PodBuilder& PodBuilder::SchedulerName(std::string_view name) {
  pod_.scheduler_name = Intern(name);
  return *this;
}
PodBuilder& PodBuilder::Priority(int32_t priority) {
  pod_.priority = priority;
  return *this;
}
PodBuilder& PodBuilder::PriorityClassName(std::string_view name) {
  pod_.priority_class_name = std::string(name);
  return *this;
}
PodBuilder& PodBuilder::NodeName(std::string_view node) {
  pod_.node_name = std::string(node);
  return *this;
}
PodBuilder& PodBuilder::NodeSelector(std::string_view key, std::string_view value) {
  pod_.node_selector.Set(key, value);
  return *this;
}

api::NodeSelector& PodBuilder::RequiredNodeSelector() {
  auto& required = pod_.affinity.node_affinity.required;
  if (!required) required.emplace();
  return *required;
}
PodBuilder& PodBuilder::NodeAffinity(api::NodeSelectorTerm term) {
  RequiredNodeSelector().terms.push_back(std::move(term));
  return *this;
}
PodBuilder& PodBuilder::NodeAffinityIn(std::string_view key, std::vector<std::string_view> values) {
  api::NodeSelectorTerm t;
  t.match_expressions.push_back(MakeRequirement(key, api::SelectorOp::kIn, values));
  return NodeAffinity(std::move(t));
}
PodBuilder& PodBuilder::NodeAffinityNotIn(std::string_view key,
                                          std::vector<std::string_view> values) {
  api::NodeSelectorTerm t;
  t.match_expressions.push_back(MakeRequirement(key, api::SelectorOp::kNotIn, values));
  return NodeAffinity(std::move(t));
}
PodBuilder& PodBuilder::NodeAffinityGt(std::string_view key, int64_t value) {
  api::NodeSelectorTerm t;
  api::Requirement r = MakeRequirement(key, api::SelectorOp::kGt, {});
  r.number = value;
  t.match_expressions.push_back(std::move(r));
  return NodeAffinity(std::move(t));
}
PodBuilder& PodBuilder::PreferredNodeAffinity(int32_t weight, std::string_view key,
                                              std::vector<std::string_view> values) {
  api::PreferredSchedulingTerm p;
  p.weight = weight;
  p.preference.match_expressions.push_back(MakeRequirement(key, api::SelectorOp::kIn, values));
  pod_.affinity.node_affinity.preferred.push_back(std::move(p));
  return *this;
}

api::PodAffinityTerm PodBuilder::AffinityTerm(std::string_view topology_key, std::string_view key,
                                              std::string_view value) const {
  api::PodAffinityTerm t;
  t.label_selector = SelectorFor(key, value);
  t.topology_key = Intern(topology_key);
  return t;
}
PodBuilder& PodBuilder::PodAffinity(std::string_view topology_key, std::string_view key,
                                    std::string_view value) {
  pod_.affinity.pod_affinity.required.push_back(AffinityTerm(topology_key, key, value));
  return *this;
}
PodBuilder& PodBuilder::PodAntiAffinity(std::string_view topology_key, std::string_view key,
                                        std::string_view value) {
  pod_.affinity.pod_anti_affinity.required.push_back(AffinityTerm(topology_key, key, value));
  return *this;
}
PodBuilder& PodBuilder::PreferredPodAffinity(int32_t weight, std::string_view topology_key,
                                             std::string_view key, std::string_view value) {
  pod_.affinity.pod_affinity.preferred.push_back(
      api::WeightedPodAffinityTerm{weight, AffinityTerm(topology_key, key, value)});
  return *this;
}
PodBuilder& PodBuilder::PreferredPodAntiAffinity(int32_t weight, std::string_view topology_key,
                                                 std::string_view key, std::string_view value) {
  pod_.affinity.pod_anti_affinity.preferred.push_back(
      api::WeightedPodAffinityTerm{weight, AffinityTerm(topology_key, key, value)});
  return *this;
}

PodBuilder& PodBuilder::Toleration(std::string_view key, std::string_view value,
                                   api::TaintEffect effect) {
  api::Toleration t;
  t.key = Intern(key);
  t.op = api::Toleration::Op::kEqual;
  t.value = Intern(value);
  t.effect = effect;
  return Toleration(t);
}
PodBuilder& PodBuilder::TolerationExists(std::string_view key, api::TaintEffect effect) {
  api::Toleration t;
  t.key = Intern(key);
  t.op = api::Toleration::Op::kExists;
  t.effect = effect;
  return Toleration(t);
}
PodBuilder& PodBuilder::Toleration(const api::Toleration& t) {
  pod_.tolerations.push_back(t);
  return *this;
}
PodBuilder& PodBuilder::SpreadConstraint(int32_t max_skew, std::string_view topology_key,
                                         api::TopologySpreadConstraint::WhenUnsatisfiable when,
                                         std::string_view key, std::string_view value) {
  api::TopologySpreadConstraint c;
  c.max_skew = max_skew;
  c.topology_key = Intern(topology_key);
  c.when_unsatisfiable = when;
  c.label_selector = SelectorFor(key, value);
  pod_.topology_spread_constraints.push_back(std::move(c));
  return *this;
}
PodBuilder& PodBuilder::SchedulingGate(std::string_view name) {
  pod_.scheduling_gates.emplace_back(name);
  return *this;
}

PodBuilder& PodBuilder::Phase(api::PodPhase phase) {
  pod_.phase = phase;
  return *this;
}
PodBuilder& PodBuilder::NominatedNodeName(std::string_view node) {
  pod_.nominated_node_name = std::string(node);
  return *this;
}

PodBuilder& PodBuilder::PreemptionPolicy(api::PreemptionPolicy policy) {
  pod_.preemption_policy = policy;
  return *this;
}

PodBuilder& PodBuilder::StartTime(common::TimePoint t) {
  pod_.start_time = t;
  return *this;
}

PodBuilder& PodBuilder::Condition(std::string_view type, std::string_view status,
                                  std::string_view reason) {
  api::Condition c;
  c.type = std::string(type);
  c.status = std::string(status);
  c.reason = std::string(reason);
  pod_.conditions.push_back(std::move(c));
  return *this;
}

api::Pod PodBuilder::Obj() const {
  api::Pod pod = pod_;
  api::ComputeEffectiveRequests(pod);
  api::DeriveGpuRequest(pod);
  pod.gang = api::DeriveGangRef(pod.meta, pod.gang);
  return pod;
}

api::PodPtr PodBuilder::Ptr() const { return std::make_shared<const api::Pod>(Obj()); }

// ---------------------------------------------------------------------------------------------
// NodeBuilder

NodeBuilder::NodeBuilder(std::string_view name) {
  node_.meta.name = std::string(name);
  node_.meta.uid = "node/" + node_.meta.name;
  node_.meta.labels.Set(api::Names().hostname, Intern(name));
  Pods(110);
}

NodeBuilder MakeNode(std::string_view name) { return NodeBuilder(name); }

NodeBuilder& NodeBuilder::Cpu(std::string_view q) { return Resource("cpu", q); }
NodeBuilder& NodeBuilder::Memory(std::string_view q) { return Resource("memory", q); }
NodeBuilder& NodeBuilder::EphemeralStorage(std::string_view q) {
  return Resource("ephemeral-storage", q);
}
NodeBuilder& NodeBuilder::Pods(int64_t pods) {
  node_.capacity.pods = pods;
  node_.allocatable.pods = pods;
  return *this;
}
NodeBuilder& NodeBuilder::Resource(std::string_view resource, std::string_view q) {
  SetAmount(node_.capacity, resource, q);
  SetAmount(node_.allocatable, resource, q);
  return *this;
}
NodeBuilder& NodeBuilder::Allocatable(std::string_view resource, std::string_view q) {
  SetAmount(node_.allocatable, resource, q);
  return *this;
}

NodeBuilder& NodeBuilder::Gpus(int64_t count) {
  node_.capacity.Set(api::Names().nvidia_gpu, count);
  node_.allocatable.Set(api::Names().nvidia_gpu, count);
  return Label(api::kSeedCountLabel, std::to_string(count));
}
NodeBuilder& NodeBuilder::GpuModel(std::string_view model) {
  return Label(api::kSeedModelLabel, model);
}
NodeBuilder& NodeBuilder::GpuMemoryMiB(int64_t mib) {
  return Label(api::kSeedMemoryLabel, std::to_string(mib));
}
NodeBuilder& NodeBuilder::UnhealthyGpus(std::string_view devices) {
  return Annotation(api::kNodeUnhealthyGpusAnnotation, devices);
}
NodeBuilder& NodeBuilder::NvlinkIslands(std::string_view islands) {
  return Annotation(api::kNodeNvlinkIslandsAnnotation, islands);
}

NodeBuilder& NodeBuilder::Label(std::string_view key, std::string_view value) {
  node_.meta.labels.Set(key, value);
  return *this;
}
NodeBuilder& NodeBuilder::Zone(std::string_view zone) {
  node_.meta.labels.Set(api::Names().zone, Intern(zone));
  return *this;
}
NodeBuilder& NodeBuilder::Annotation(std::string_view key, std::string_view value) {
  SetAnnotation(node_.meta, key, value);
  return *this;
}
NodeBuilder& NodeBuilder::Taint(std::string_view key, std::string_view value,
                                api::TaintEffect effect) {
  node_.taints.push_back(api::Taint{Intern(key), Intern(value), effect});
  return *this;
}
NodeBuilder& NodeBuilder::Unschedulable(bool unschedulable) {
  node_.unschedulable = unschedulable;
  return *this;
}
NodeBuilder& NodeBuilder::Condition(std::string_view type, std::string_view status) {
  api::Condition c;
  c.type = std::string(type);
  c.status = std::string(status);
  node_.conditions.push_back(std::move(c));
  return *this;
}

api::Node NodeBuilder::Obj() const {
  api::Node node = node_;
  api::DeriveNodeGpuInfo(node);
  return node;
}

api::NodePtr NodeBuilder::Ptr() const { return std::make_shared<const api::Node>(Obj()); }

}  // namespace gpusched::testing
