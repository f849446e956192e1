// SPDX-License-Identifier: Apache-2.0
// NetworkStore: the AppGroup and NetworkTopology objects the scheduler knows, kept current by
// whoever owns them (the CRD informers of `gpusched scheduler`, a test, the simulator) and read
// by the NetworkLocality plugin once per pod.
//
// Readers take an immutable Catalog (shared_ptr<const Catalog>): a writer copies the catalog,
// changes the copy and publishes it, so a scheduling cycle sees one consistent version and never
// waits for a writer. Writers are rare (CRD changes), readers once per pod.
//
// Thread safety: every method is thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "src/common/mutex.h"
#include "src/network/crd.h"
#include "src/network/traffic_matrix.h"

namespace gpusched::network {

struct Catalog {
  // Keyed by "namespace/name".
  std::map<std::string, std::shared_ptr<const AppGroup>, std::less<>> app_groups;
  std::map<std::string, std::shared_ptr<const NetworkTopology>, std::less<>> topologies;
  // Measured workload traffic (service mesh metrics via Prometheus); null when none is known.
  std::shared_ptr<const TrafficMatrix> traffic_matrix;
  uint64_t version = 0;

  const AppGroup* FindAppGroup(std::string_view ns, std::string_view name) const;
  // NetworkTopology is looked up by name in `ns`, then cluster-wide (an empty namespace).
  const NetworkTopology* FindTopology(std::string_view ns, std::string_view name) const;
};

class NetworkStore {
 public:
  NetworkStore();
  std::shared_ptr<const Catalog> Current() const;

  void UpsertAppGroup(AppGroup ag);
  void DeleteAppGroup(std::string_view ns, std::string_view name);
  void UpsertTopology(NetworkTopology nt);
  void DeleteTopology(std::string_view ns, std::string_view name);
  // Replaces the traffic matrix (null clears it). Called by TrafficMatrixRefresher.
  void SetTrafficMatrix(std::shared_ptr<const TrafficMatrix> matrix);

 private:
  mutable common::Mutex mu_;
  std::shared_ptr<const Catalog> current_ GPUSCHED_GUARDED_BY(mu_);
};

}  // namespace gpusched::network
