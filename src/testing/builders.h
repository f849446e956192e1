// SPDX-License-Identifier: Apache-2.0
// Fluent builders for Pods and Nodes in tests (after Kubernetes' pkg/scheduler/testing wrappers):
//
//   api::PodPtr pod = MakePod("ns", "train-1").Cpu("500m").Memory("1Gi").Gpus(2)
//                         .GpuModel("A100|H100").GpuMemoryMiB(20000).Priority(10).Ptr();
//   api::NodePtr node = MakeNode("n1").Cpu("32").Memory("256Gi").Gpus(8)
//                           .GpuModel("A100-SXM4-40GB").GpuMemoryMiB(40960).Ptr();
//
// Obj() and Ptr() run the same derivations as the decoder (ComputeEffectiveRequests,
// DeriveGpuRequest, DeriveNodeGpuInfo), so pod.requests, pod.gpu and node.gpu are what decoding
// the equivalent JSON would give. Builders are values: copy one to make variants.
//
// Quantities are Kubernetes strings ("500m", "1Gi"); an invalid one is a bug in the test and
// aborts with a message. Test-only: never link this library into production code.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/api/types.h"

namespace gpusched::testing {

// (resource name, quantity) pairs, e.g. {{"cpu", "1"}, {"memory", "2Gi"}}.
using ResourcePairs = std::initializer_list<std::pair<std::string_view, std::string_view>>;

class PodBuilder {
 public:
  // Namespace "" means "default". The uid defaults to "<ns>/<name>".
  PodBuilder(std::string_view ns, std::string_view name);

  PodBuilder& Namespace(std::string_view ns);
  PodBuilder& Uid(std::string_view uid);
  PodBuilder& Label(std::string_view key, std::string_view value);
  // spec.workloadRef (the Workload API's gang membership).
  PodBuilder& WorkloadRef(std::string_view workload, std::string_view pod_group,
                          std::string_view replica_key = "");
  // spec.schedulingGroup.podGroupName (a native PodGroup's member, Kubernetes 1.36+).
  PodBuilder& SchedulingGroup(std::string_view pod_group_name);
  PodBuilder& Annotation(std::string_view key, std::string_view value);
  PodBuilder& OwnerReference(std::string_view kind, std::string_view name);  // controller: true
  PodBuilder& CreationTimestamp(common::TimePoint t);
  PodBuilder& DeletionTimestamp(common::TimePoint t);

  // Requests and limits of the main container (named "main", created on first use).
  PodBuilder& Cpu(std::string_view quantity);     // request
  PodBuilder& Memory(std::string_view quantity);  // request
  PodBuilder& EphemeralStorage(std::string_view quantity);
  PodBuilder& Request(std::string_view resource, std::string_view quantity);
  PodBuilder& Limit(std::string_view resource, std::string_view quantity);
  // nvidia.com/gpu limit and request of the main container (0 removes it).
  PodBuilder& Gpus(int64_t count);
  // Annotations gpu.nvidia.com/model ("A100|H100") and gpu.nvidia.com/memory (MiB).
  PodBuilder& GpuModel(std::string_view models);
  PodBuilder& GpuMemoryMiB(int64_t mib);

  // More containers, with requests only.
  PodBuilder& Container(std::string_view name, ResourcePairs requests);
  PodBuilder& InitContainer(std::string_view name, ResourcePairs requests);
  PodBuilder& Sidecar(std::string_view name, ResourcePairs requests);  // restartPolicy: Always
  PodBuilder& Overhead(std::string_view resource, std::string_view quantity);

  // Spec.
  PodBuilder& SchedulerName(std::string_view name);
  PodBuilder& Priority(int32_t priority);
  PodBuilder& PriorityClassName(std::string_view name);
  PodBuilder& NodeName(std::string_view node);
  PodBuilder& NodeSelector(std::string_view key, std::string_view value);
  // Adds a required node affinity term with one requirement (terms are ORed).
  PodBuilder& NodeAffinityIn(std::string_view key, std::vector<std::string_view> values);
  PodBuilder& NodeAffinityNotIn(std::string_view key, std::vector<std::string_view> values);
  PodBuilder& NodeAffinityGt(std::string_view key, int64_t value);
  PodBuilder& NodeAffinity(api::NodeSelectorTerm term);
  PodBuilder& PreferredNodeAffinity(int32_t weight, std::string_view key,
                                    std::vector<std::string_view> values);
  // Required pod (anti-)affinity to pods labelled key=value, across `topology_key`.
  PodBuilder& PodAffinity(std::string_view topology_key, std::string_view key,
                          std::string_view value);
  PodBuilder& PodAntiAffinity(std::string_view topology_key, std::string_view key,
                              std::string_view value);
  PodBuilder& PreferredPodAffinity(int32_t weight, std::string_view topology_key,
                                   std::string_view key, std::string_view value);
  PodBuilder& PreferredPodAntiAffinity(int32_t weight, std::string_view topology_key,
                                       std::string_view key, std::string_view value);
  // Equal toleration; effect kAll tolerates every effect.
  PodBuilder& Toleration(std::string_view key, std::string_view value,
                         api::TaintEffect effect = api::TaintEffect::kAll);
  PodBuilder& TolerationExists(std::string_view key,
                               api::TaintEffect effect = api::TaintEffect::kAll);
  PodBuilder& Toleration(const api::Toleration& t);
  PodBuilder& SpreadConstraint(int32_t max_skew, std::string_view topology_key,
                               api::TopologySpreadConstraint::WhenUnsatisfiable when,
                               std::string_view key, std::string_view value);
  PodBuilder& SchedulingGate(std::string_view name);
  PodBuilder& PreemptionPolicy(api::PreemptionPolicy policy);

  // Status.
  PodBuilder& Phase(api::PodPhase phase);
  PodBuilder& NominatedNodeName(std::string_view node);
  PodBuilder& StartTime(common::TimePoint t);
  // Adds a status condition.
  PodBuilder& Condition(std::string_view type, std::string_view status, std::string_view reason);

  // The pod, with requests and GPU request derived.
  api::Pod Obj() const;
  api::PodPtr Ptr() const;

 private:
  api::Container& Main();
  api::PodAffinityTerm AffinityTerm(std::string_view topology_key, std::string_view key,
                                    std::string_view value) const;
  api::NodeSelector& RequiredNodeSelector();

  api::Pod pod_;
};

PodBuilder MakePod(std::string_view ns, std::string_view name);

class NodeBuilder {
 public:
  // Sets the label kubernetes.io/hostname=name and allocatable pods=110 (kubelet default).
  explicit NodeBuilder(std::string_view name);

  // Capacity and allocatable together.
  NodeBuilder& Cpu(std::string_view quantity);
  NodeBuilder& Memory(std::string_view quantity);
  NodeBuilder& EphemeralStorage(std::string_view quantity);
  NodeBuilder& Pods(int64_t pods);
  NodeBuilder& Resource(std::string_view resource, std::string_view quantity);
  // Allocatable only (capacity unchanged), e.g. to model reserved resources.
  NodeBuilder& Allocatable(std::string_view resource, std::string_view quantity);

  // Seed labels gpu.nvidia.com/{count,model,memory}; Gpus also sets allocatable and capacity
  // nvidia.com/gpu.
  NodeBuilder& Gpus(int64_t count);
  NodeBuilder& GpuModel(std::string_view model);
  NodeBuilder& GpuMemoryMiB(int64_t mib);
  // Annotations gpusched.io/unhealthy-gpus ("1,3") and gpusched.io/nvlink-islands ("0,1;2,3").
  NodeBuilder& UnhealthyGpus(std::string_view devices);
  NodeBuilder& NvlinkIslands(std::string_view islands);

  NodeBuilder& Label(std::string_view key, std::string_view value);
  NodeBuilder& Zone(std::string_view zone);  // topology.kubernetes.io/zone
  NodeBuilder& Annotation(std::string_view key, std::string_view value);
  NodeBuilder& Taint(std::string_view key, std::string_view value, api::TaintEffect effect);
  NodeBuilder& Unschedulable(bool unschedulable = true);
  NodeBuilder& Condition(std::string_view type, std::string_view status);

  // The node, with its GPU facts derived.
  api::Node Obj() const;
  api::NodePtr Ptr() const;

 private:
  api::Node node_;
};

NodeBuilder MakeNode(std::string_view name);

}  // namespace gpusched::testing
