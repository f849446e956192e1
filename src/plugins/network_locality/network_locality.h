// SPDX-License-Identifier: Apache-2.0
// NetworkLocality: place pods that talk a lot close to each other (same node, same zone), so
// cross-zone traffic — which clouds bill ($0.01/GB each direction between AWS AZs) — shrinks.
// It never overrides availability: spread and anti-affinity hard constraints are Filters of
// their own plugins and run first; NetworkLocality only ranks the nodes they leave.
//
// Who talks to whom comes from two declarations (src/api/network_crd.h, traffic_annotation.h),
// read through the Handle's network data (framework::NetworkView; none: annotations alone):
//   AppGroup mode   the pod carries appgroup.diktyo.x-k8s.io=<group> and
//                   appgroup.diktyo.x-k8s.io.workload=<selector>, and the AppGroup is known (looked
//                   up in `namespaces`, first hit wins). Costs come from the NetworkTopology
//                   `networkTopologyName`, weight set `weightsName`, exactly as scheduler-plugins'
//                   NetworkOverhead computes them (same node 0, same zone 1, listed zone/region
//                   cost, else 100), including its Filter (reject when violated > satisfied
//                   dependencies) and its NormalizeScore. This reproduces the upstream test vector.
//   Annotation mode otherwise: the pod's gpusched.io/traffic entries (traffic_annotation.h) and,
//                   in reverse, every placed pod of its namespace whose entries select it. A peer
//                   workload with n placed replicas gets w/n MB/s per replica. The cost of a
//                   node is Σ peers MB/s × price(relation) with the relation same node / same
//                   zone / cross zone / cross region; prices default to AWS's.
//                   Plus, when the view holds a measured TrafficMatrix (service mesh metrics from
//                   Prometheus), the pod's workload (its matrix workload label) peers in any
//                   namespace: a pair of m MB/s gives each placed peer replica
//                   m / (replicas of this workload, this pod included) / (placed peer replicas).
// A pod with neither, in a namespace where no pod with the annotation was scheduled, is skipped
// (PreFilter and PreScore return Skip): it scores every node equally and is never filtered. After
// a restart, a namespace counts once one of its annotated pods is scheduled again.
//
//   PreFilter  collects the pod's peers once, aggregates them per node and per (region, zone)
//              domain into flat arrays, and computes every node's cost: O(nodes × peer domains)
//              in AppGroup mode, O(nodes) in annotation mode. A malformed gpusched.io/traffic
//              annotation is kUnschedulableAndUnresolvable naming the entry and value.
//   Filter     AppGroup mode: "Node N does not meet several network requirements from Workload
//              dependencies: Satisfied: s Violated: v" (kUnschedulable). Annotation mode: only
//              when maxCostDollarsPerMonth > 0, rejects a node whose cost exceeds it.
//   PreScore   does PreFilter's work when PreFilter did not run (plugin enabled at score only).
//   Score      the node's cost (raw; lower is better). O(1), no allocation.
//   NormalizeScore  100 − trunc(100 × (s − min) / (max − min)); all 0 stays 0 (upstream).
//   QueueSort  (optional; name it as the profile's queueSort) TopologicalSort: pods of one
//              AppGroup in status.topologyOrder order; otherwise, and between equal orders,
//              PrioritySort (priority, then queue time) — a strict order, unlike upstream's <=.
//
// Args (NetworkLocalityArgs), all optional:
//   namespaces: [string]             AppGroup lookup namespaces; default ["default"]
//   weightsName: string              NetworkTopology weight set; default "UserDefined"
//   networkTopologyName: string      default "nt-default"
//   prices: {sameNodeDollarsPerGB, sameZoneDollarsPerGB, crossZoneDollarsPerGB,
//            crossRegionDollarsPerGB}  $/GB for both directions together, >= 0;
//                                    defaults 0, 0, 0.02, 0.02 (AWS: 0.01 each way)
//   maxCostDollarsPerMonth: number   annotation-mode Filter threshold; 0 (default) = off
//
// Threading: PreFilter/NormalizeScore/QueueSort as the framework says; Filter and Score are const,
// allocation-free and read only CycleState. The annotation cache is touched only by PreFilter
// (the scheduling thread).
#pragma once

#include <boost/json/fwd.hpp>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "src/api/network_crd.h"
#include "src/api/traffic_annotation.h"
#include "src/common/status.h"
#include "src/framework/handle.h"
#include "src/framework/network_view.h"
#include "src/framework/plugin.h"
#include "src/framework/registry.h"

namespace gpusched::plugins::network_locality {

inline constexpr int64_t kSameHostCost = 0;
inline constexpr int64_t kSameZoneCost = 1;
inline constexpr int64_t kMaxCost = 100;

struct Prices {
  double same_node = 0;
  double same_zone = 0;
  double cross_zone = 0.02;
  double cross_region = 0.02;
};

struct Args {
  std::vector<std::string> namespaces = {"default"};
  std::string weights_name = "UserDefined";
  std::string network_topology_name = "nt-default";
  Prices prices;
  double max_cost_dollars_per_month = 0;
};

// Decodes and validates; every bad field is named by path.
common::StatusOr<Args> ParseArgs(const boost::json::value& args);

class NetworkLocality final : public framework::QueueSortPlugin,
                              public framework::PreFilterPlugin,
                              public framework::FilterPlugin,
                              public framework::PreScorePlugin,
                              public framework::ScorePlugin,
                              public framework::EnqueueExtensions {
 public:
  // Validates `args` and builds the plugin over handle.network() (borrowed; the handle keeps it
  // alive). Without one the plugin knows no AppGroup, NetworkTopology or measured traffic and
  // works from annotations alone.
  static common::StatusOr<framework::PluginPtr> Create(const boost::json::value& args,
                                                       framework::Handle& handle);

  NetworkLocality(Args args, const framework::NetworkView* network);

  std::string_view Name() const override;
  // The cluster events that can make a pod this plugin rejected schedulable, with their hints
  // (upstream's EventsToRegister and isSchedulableAfter* functions).
  std::vector<framework::ClusterEventWithHint> EventsToRegister() const override;
  bool Less(const framework::QueuedPodInfo& a, const framework::QueuedPodInfo& b) const override;
  framework::Status PreFilter(framework::CycleState& state, const api::Pod& pod,
                              const framework::Snapshot& snapshot) override;
  framework::Status Filter(const framework::CycleState& state, const api::Pod& pod,
                           const framework::NodeInfo& node) const override;
  // Computes the costs when PreFilter did not run (the plugin enabled at score only).
  framework::Status PreScore(framework::CycleState& state, const api::Pod& pod,
                             const framework::Snapshot& snapshot,
                             std::span<const framework::NodeIndex> feasible) override;
  void ScoreNodes(const framework::CycleState& state, const api::Pod& pod,
                  const framework::Snapshot& snapshot, std::span<const framework::NodeIndex> nodes,
                  std::span<int64_t> out) const override;
  bool HasNormalizeScore() const override { return true; }
  // network cost N (lower is better)
  std::string ExplainScore(const framework::CycleState& state, const api::Pod& pod,
                           const framework::NodeInfo& node, int64_t raw) const override;
  framework::Status NormalizeScore(const framework::CycleState& state, const api::Pod& pod,
                                   std::span<int64_t> scores) const override;

 private:
  struct State;
  struct Parsed;
  const Parsed& ParseCached(const std::string& text);
  // Whether `pod` can have traffic peers: an AppGroup label, a gpusched.io/traffic annotation, a
  // workload in the measured traffic matrix, or a namespace where a pod with the annotation was
  // scheduled (another pod's declaration may select it). Pods without are skipped (no costs, no
  // Filter, no Score), so the plugin costs nothing in a profile where few pods declare traffic.
  bool MayHavePeers(const api::Pod& pod);
  framework::Status AppGroupCosts(State& s, const api::Pod& pod,
                                  const framework::NetworkCatalog& catalog, const api::AppGroup& ag,
                                  const framework::Snapshot& snapshot);
  framework::Status AnnotationCosts(State& s, const api::Pod& pod,
                                    const framework::Snapshot& snapshot);
  // AnnotationCosts' steps: the placed pods of the pod's namespace with their declarations, and
  // the measured peers' placed replicas (all namespaces); then the MB/s towards each placed pod
  // from the pod's own declaration and the placed pods' declarations that select it (false when
  // none applies).
  struct Placed;
  struct MeshTraffic;
  void CollectPlaced(const api::Pod& pod, std::span<const framework::NodeInfo> nodes,
                     MeshTraffic& mesh, std::vector<Placed>& placed);
  static bool DeclaredMbps(const api::Pod& pod, const Parsed* own,
                           const std::vector<Placed>& placed, std::vector<double>& mbps);

  Args args_;
  const framework::NetworkView* network_;  // null: none
  std::unordered_map<std::string, std::shared_ptr<const Parsed>> parse_cache_;
  // Namespaces in which PreFilter saw a pod with the traffic annotation (scheduling thread only).
  std::vector<std::string> namespaces_with_traffic_;
};

}  // namespace gpusched::plugins::network_locality
