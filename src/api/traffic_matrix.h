// SPDX-License-Identifier: Apache-2.0
// TrafficMatrix: measured workload -> workload traffic (MB/s), the third way to say who talks to
// whom (after AppGroup CRDs and the gpusched.io/traffic annotation). It is built from service
// mesh metrics in Prometheus by telemetry/traffic's TrafficMatrixRefresher and published in the
// NetworkStore (src/cache/network_store.h); the NetworkLocality plugin reads it once per pod
// through framework::NetworkView.
//
// Workloads. A workload is named (namespace, name). Its pods are the pods of that namespace whose
// label `workload_label()` (default "app") equals the name. Istio's `source_workload` /
// `destination_workload` are the owning Deployment's (or StatefulSet's) name, which by
// convention is also the pods' `app` label; when it is not, point the label elsewhere (e.g.
// "app.kubernetes.io/name") with --network-traffic-workload-label.
//
// Edges are directed as measured (source sent or received bytes on a connection it opened);
// locality does not care who opened it, so PeersOf sums both directions: A->B 2 MB/s and
// B->A 1 MB/s make A a 3 MB/s peer of B and B a 3 MB/s peer of A. MB = 10^6 bytes.
//
// Immutable once built; shared read-only (shared_ptr<const TrafficMatrix>) between the refresher
// and scheduling cycles. Thread-safe for concurrent reads.
#pragma once

#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "src/common/interner.h"

namespace gpusched::api {

inline constexpr std::string_view kDefaultWorkloadLabel = "app";

struct WorkloadEdge {
  std::string src_namespace;
  std::string src_workload;
  std::string dst_namespace;
  std::string dst_workload;
  double mbps = 0;  // > 0 and finite
};

class TrafficMatrix {
 public:
  struct Peer {
    std::string ns;         // the peer workload's namespace
    common::Atom workload;  // its name, interned: compared with pod label values
    double mbps = 0;        // both directions together
  };

  // `edges` may repeat a (src, dst) pair (they are summed); edges with mbps <= 0 or not finite
  // are ignored. `workload_label` must not be empty.
  TrafficMatrix(std::string workload_label, std::vector<WorkloadEdge> edges);

  // The pod label naming a pod's workload.
  common::Atom workload_label() const { return workload_label_; }
  // The workload's peers, sorted by (namespace, name); empty when it has none. A workload that
  // talks to itself (replicas to replicas) is its own peer.
  std::span<const Peer> PeersOf(std::string_view ns, std::string_view workload) const;
  // The edges as given (summed per pair), sorted by (src ns, src, dst ns, dst).
  const std::vector<WorkloadEdge>& edges() const { return edges_; }

 private:
  common::Atom workload_label_;
  std::vector<WorkloadEdge> edges_;
  std::map<std::string, std::vector<Peer>, std::less<>> peers_;  // "ns/workload" -> peers
};

}  // namespace gpusched::api
