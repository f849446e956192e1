// SPDX-License-Identifier: Apache-2.0
#include "src/sim/traffic_accounting.h"

#include <string>

#include "src/api/traffic_annotation.h"

namespace gpusched::sim {

TrafficSummary AccountTraffic(std::span<const PlacedPod> pods) {
  TrafficSummary s;
  for (const PlacedPod& x : pods) {
    const std::string* text = x.pod->meta.Annotation(api::kTrafficAnnotation);
    if (text == nullptr) continue;
    auto peers = api::ParseTrafficAnnotation(*text);
    if (!peers.ok()) {
      s.errors.push_back(x.pod->Key() + ": " + std::string(peers.status().message()));
      continue;
    }
    ++s.annotated_pods;
    for (const api::TrafficPeer& peer : *peers) {
      int32_t matched = 0;
      int32_t same_zone = 0;
      for (const PlacedPod& p : pods) {
        if (p.pod == x.pod || p.pod->meta.namespace_ != x.pod->meta.namespace_) continue;
        if (!peer.selector.Matches(p.pod->meta.labels)) continue;
        ++matched;
        if (p.zone == x.zone) ++same_zone;
      }
      if (matched == 0) {
        s.unmatched_mbps += peer.mbps;
        continue;
      }
      s.total_mbps += peer.mbps;
      if (same_zone == 0) s.cross_zone_mbps += peer.mbps;
      s.cross_zone_mbps_zone_blind += peer.mbps * (matched - same_zone) / matched;
    }
  }
  return s;
}

}  // namespace gpusched::sim
