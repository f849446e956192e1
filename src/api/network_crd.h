// SPDX-License-Identifier: Apache-2.0
// The scheduler-plugins NetworkAware CRDs (diktyo-io APIs, v1alpha1), decoded into plain values:
//
//   AppGroup         appgroup.diktyo.x-k8s.io/v1alpha1, namespaced: the workloads of one
//                    application, who depends on whom (with minBandwidth and maxNetworkCost) and,
//                    in status, the topological order its controller computed.
//   NetworkTopology  networktopology.diktyo.x-k8s.io/v1alpha1: network costs between zones and
//                    between regions, per weight set ("UserDefined", "NetperfCosts", ...).
//
// Both decoders accept the JSON of one object (as the API server returns it, or a YAML manifest
// converted to JSON). They never throw or abort: a malformed object gives InvalidArgument naming
// the object, the field path and the bad value, e.g.
//   AppGroup default/basic: spec.workloads[1].dependencies[0].maxNetworkCost: must be in
//   0..10000, got 20000
// and every error of the object is reported at once. Unknown fields are ignored (the API server
// prunes them anyway). The older field names of the scheduler-plugins README (costList /
// originCosts / costs) are not accepted; the Go API's (topologyList / originList / costList) are.
//
// Pods join an AppGroup with two labels (kAppGroupLabel, kWorkloadLabel). Values are immutable
// once decoded; share them as shared_ptr<const ...>. The NetworkStore (src/cache/network_store.h)
// keeps them; the NetworkLocality plugin reads them through framework::NetworkView.
#pragma once

#include <boost/json/fwd.hpp>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "src/common/status.h"

namespace gpusched::api {

inline constexpr std::string_view kAppGroupLabel = "appgroup.diktyo.x-k8s.io";
inline constexpr std::string_view kWorkloadLabel = "appgroup.diktyo.x-k8s.io.workload";
inline constexpr std::string_view kAppGroupApiVersion = "appgroup.diktyo.x-k8s.io/v1alpha1";
inline constexpr std::string_view kNetworkTopologyApiVersion =
    "networktopology.diktyo.x-k8s.io/v1alpha1";
inline constexpr std::string_view kRegionLabel = "topology.kubernetes.io/region";
inline constexpr std::string_view kZoneLabel = "topology.kubernetes.io/zone";

// Largest maxNetworkCost the CRD allows.
inline constexpr int64_t kMaxNetworkCostLimit = 10000;

struct WorkloadRef {
  std::string kind;
  std::string name;
  std::string selector;  // the value pods carry in kWorkloadLabel
  std::string api_version;
  std::string namespace_;
};

struct Dependency {
  WorkloadRef workload;
  int64_t min_bandwidth_bytes_per_second = 0;  // minBandwidth (Quantity, bps in the KEP: bytes)
  int64_t max_network_cost = 0;                // 0..10000
};

struct AppGroupWorkload {
  WorkloadRef workload;
  std::vector<Dependency> dependencies;
};

enum class SortAlgorithm : uint8_t {
  kKahnSort,
  kTarjanSort,
  kReverseKahn,
  kReverseTarjan,
  kAlternateKahn,
  kAlternateTarjan,
};

struct AppGroup {
  std::string namespace_;
  std::string name;
  std::string resource_version;
  int32_t num_members = 1;
  SortAlgorithm algorithm = SortAlgorithm::kKahnSort;
  std::vector<AppGroupWorkload> workloads;
  // status.topologyOrder as (selector, index), sorted by selector (as the controller stores it;
  // the decoder sorts it again so lookups can binary-search).
  std::vector<std::pair<std::string, int32_t>> topology_order;

  // The workload with this selector, or nullptr.
  const AppGroupWorkload* FindWorkload(std::string_view selector) const;
  // status.topologyOrder index of the selector; -1 when absent (as upstream).
  int32_t OrderIndex(std::string_view selector) const;
};

struct OriginCost {
  std::string destination;
  int64_t network_cost = 0;  // >= 0
  int64_t bandwidth_capacity = 0;
  int64_t bandwidth_allocated = 0;
  bool is_allowed = true;
};

// One topologyKey's costs, flattened: (origin, destination) -> cost, sorted for binary search.
struct TopologyCosts {
  std::string topology_key;  // topology.kubernetes.io/region or .../zone
  struct Entry {
    std::string origin;
    std::string destination;
    int64_t cost = 0;
  };
  std::vector<Entry> entries;  // sorted by (origin, destination)
  // The cost origin -> destination, or nullopt when not listed.
  std::optional<int64_t> Find(std::string_view origin, std::string_view destination) const;
};

struct WeightSet {
  std::string name;  // "UserDefined", "NetperfCosts", ...
  std::vector<TopologyCosts> topologies;
  const TopologyCosts* Find(std::string_view topology_key) const;
};

struct NetworkTopology {
  std::string namespace_;
  std::string name;
  std::string resource_version;
  std::string configmap_name;
  std::vector<WeightSet> weights;
  const WeightSet* FindWeights(std::string_view name) const;
};

using AppGroupPtr = std::shared_ptr<const AppGroup>;
using NetworkTopologyPtr = std::shared_ptr<const NetworkTopology>;

// Decodes one AppGroup object. Checks: metadata.name set; spec.numMembers >= 1;
// spec.topologySortingAlgorithm one of the six names (default KahnSort); every workload has a
// non-empty selector, unique within the group; every dependency names a workload of the group by
// selector; maxNetworkCost in 0..10000; minBandwidth a valid non-negative quantity.
common::StatusOr<AppGroup> DecodeAppGroup(const boost::json::value& object);
// Decodes one NetworkTopology object. Checks: metadata.name set; topologyKey is the region or
// zone label; origin and destination non-empty; networkCost >= 0; no duplicate (origin,
// destination) within one topologyKey of one weight set.
common::StatusOr<NetworkTopology> DecodeNetworkTopology(const boost::json::value& object);

// Parses JSON text and decodes it (tests, files). The error names `source`.
common::StatusOr<AppGroup> ParseAppGroup(std::string_view json, std::string_view source);
common::StatusOr<NetworkTopology> ParseNetworkTopology(std::string_view json,
                                                       std::string_view source);

std::string_view SortAlgorithmName(SortAlgorithm a);

}  // namespace gpusched::api
