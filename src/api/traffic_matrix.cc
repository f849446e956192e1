// SPDX-License-Identifier: Apache-2.0
#include "src/api/traffic_matrix.h"

#include <algorithm>
#include <cmath>
#include <tuple>
#include <utility>

namespace gpusched::api {
namespace {

std::string Key(std::string_view ns, std::string_view workload) {
  std::string k(ns);
  k += '/';
  k += workload;
  return k;
}

void AddPeer(std::vector<TrafficMatrix::Peer>& peers, const std::string& ns,
             std::string_view workload, double mbps) {
  const common::Atom w = common::Intern(workload);
  for (TrafficMatrix::Peer& p : peers) {
    if (p.ns == ns && p.workload == w) {
      p.mbps += mbps;
      return;
    }
  }
  peers.push_back(TrafficMatrix::Peer{ns, w, mbps});
}

}  // namespace

TrafficMatrix::TrafficMatrix(std::string workload_label, std::vector<WorkloadEdge> edges)
    : workload_label_(common::Intern(workload_label)) {
  auto key = [](const WorkloadEdge& e) {
    return std::tie(e.src_namespace, e.src_workload, e.dst_namespace, e.dst_workload);
  };
  std::sort(edges.begin(), edges.end(),
            [&](const WorkloadEdge& a, const WorkloadEdge& b) { return key(a) < key(b); });
  for (WorkloadEdge& e : edges) {
    if (!std::isfinite(e.mbps) || e.mbps <= 0) continue;
    if (!edges_.empty() && key(edges_.back()) == key(e)) {
      edges_.back().mbps += e.mbps;
    } else {
      edges_.push_back(std::move(e));
    }
  }
  for (const WorkloadEdge& e : edges_) {
    AddPeer(peers_[Key(e.src_namespace, e.src_workload)], e.dst_namespace, e.dst_workload, e.mbps);
    if (e.src_namespace == e.dst_namespace && e.src_workload == e.dst_workload) continue;
    AddPeer(peers_[Key(e.dst_namespace, e.dst_workload)], e.src_namespace, e.src_workload, e.mbps);
  }
  for (auto& [k, peers] : peers_) {
    std::sort(peers.begin(), peers.end(), [](const Peer& a, const Peer& b) {
      if (a.ns != b.ns) return a.ns < b.ns;
      return common::Str(a.workload) < common::Str(b.workload);
    });
  }
}

std::span<const TrafficMatrix::Peer> TrafficMatrix::PeersOf(std::string_view ns,
                                                            std::string_view workload) const {
  auto it = peers_.find(Key(ns, workload));
  if (it == peers_.end()) return {};
  return it->second;
}

}  // namespace gpusched::api
