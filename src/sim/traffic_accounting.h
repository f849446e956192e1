// SPDX-License-Identifier: Apache-2.0
// Cross-zone traffic accounting: given where pods run and what they declared in the
// gpusched.io/traffic annotation, how many bytes cross zones and what that costs. Used by the
// simulator report to compare profiles; pure functions, no state.
//
// Model. Each declared entry "selector => w" of a placed pod X is w MB/s (both directions)
// between X and the placed pods of X's namespace that match the selector (X excluded). How the
// traffic is routed decides how much of it crosses zones:
//   same-zone routing (Service trafficDistribution: PreferSameZone / topology-aware hints):
//     X talks only to peers in its own zone when it has one; otherwise all of w crosses.
//   zone-blind routing (plain kube-proxy): X spreads w evenly over its peers; the share sent to
//     peers outside X's zone crosses.
// An entry whose selector matches no placed pod is counted in `unmatched_mbps`, not as traffic.
// Declare each pair once (on the client); both sides declaring counts it twice.
//
// Price: $/GB for a byte that crosses zones, both directions together (AWS: $0.01/GB out of the
// sender's AZ plus $0.01/GB into the receiver's = 0.02). GB = 10^9 bytes; a month is 30 days.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "src/api/types.h"

namespace gpusched::sim {

inline constexpr double kAwsCrossZoneDollarsPerGB = 0.02;

struct PlacedPod {
  const api::Pod* pod = nullptr;
  std::string_view node;
  std::string_view zone;  // "" when the node has no zone label
};

struct TrafficSummary {
  double total_mbps = 0;       // declared traffic between placed pods
  double cross_zone_mbps = 0;  // with same-zone routing
  double cross_zone_mbps_zone_blind = 0;
  double unmatched_mbps = 0;  // declared, but no peer is placed
  int32_t annotated_pods = 0;
  std::vector<std::string> errors;  // malformed annotations, "ns/pod: message"

  static double GBPerDay(double mbps) { return mbps * 86400.0 / 1000.0; }
  static double DollarsPerMonth(double mbps, double dollars_per_gb) {
    return GBPerDay(mbps) * 30.0 * dollars_per_gb;
  }
};

TrafficSummary AccountTraffic(std::span<const PlacedPod> pods);

}  // namespace gpusched::sim
