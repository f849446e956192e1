// SPDX-License-Identifier: Apache-2.0
// TrafficReport: the network side of a simulation — how much of the declared pod-to-pod traffic
// (gpusched.io/traffic annotations, see traffic_accounting.h for the model) crosses zones with
// the placement a profile produced, what that costs per month at a $/GB price, and how many zones
// each workload spans (the availability side of the trade-off).
//
// Workload identity: the pod's controller ownerReference (kind/name), else its "app" label,
// else the pod name. Only pods the simulation placed (scheduled or pre-bound) count.
// BuildTrafficReport reads a finished Simulator; the Format functions are pure.
#pragma once

#include <boost/json/fwd.hpp>
#include <string>
#include <vector>

#include "src/sim/simulator.h"
#include "src/sim/traffic_accounting.h"

namespace gpusched::sim {

struct WorkloadSpan {
  std::string workload;  // namespace/name
  int32_t replicas = 0;  // placed
  int32_t zones = 0;     // distinct zones among them ("" counts as one)
};

struct TrafficReport {
  std::string profile;
  double dollars_per_gb = kAwsCrossZoneDollarsPerGB;
  TrafficSummary summary;
  double cross_zone_gb_per_day = 0;         // same-zone routing
  double cross_zone_dollars_per_month = 0;  // same-zone routing
  double zone_blind_gb_per_day = 0;
  double zone_blind_dollars_per_month = 0;
  std::vector<WorkloadSpan> spans;  // sorted by workload
  // Smallest zone count of a workload with >= 2 placed replicas; 0 when there is none.
  int32_t min_zones_multi_replica = 0;
};

// True when any pod of the workload carries gpusched.io/traffic.
bool HasTrafficDeclarations(const Workload& workload);

TrafficReport BuildTrafficReport(const Simulator& sim,
                                 double dollars_per_gb = kAwsCrossZoneDollarsPerGB);
std::string FormatTrafficText(const TrafficReport& report);
boost::json::value TrafficToJson(const TrafficReport& report);

}  // namespace gpusched::sim
