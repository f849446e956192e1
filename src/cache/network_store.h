// SPDX-License-Identifier: Apache-2.0
// NetworkStore: the AppGroup and NetworkTopology objects the scheduler knows and the measured
// workload traffic matrix, kept current by whoever owns them (the CRD watch and the traffic
// refresher of `gpusched scheduler`, a test) and read by the NetworkLocality plugin once per pod
// through the framework's NetworkView, which the store implements (framework/network_view.h).
//
// Readers take an immutable NetworkSnapshot (shared_ptr<const NetworkSnapshot>): a writer copies
// the catalog, changes the copy and publishes it, so a scheduling cycle sees one consistent version
// and never waits for a writer. Writers are rare (CRD changes, one matrix per refresh), readers
// once per pod.
//
// Thread safety: every method is thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "src/api/network_crd.h"
#include "src/api/traffic_matrix.h"
#include "src/common/mutex.h"
#include "src/framework/network_view.h"

namespace gpusched::cache {

struct NetworkSnapshot final : framework::NetworkCatalog {
  // Keyed by "namespace/name".
  std::map<std::string, std::shared_ptr<const api::AppGroup>, std::less<>> app_groups;
  std::map<std::string, std::shared_ptr<const api::NetworkTopology>, std::less<>> topologies;
  // Measured workload traffic (service mesh metrics via Prometheus); null when none is known.
  std::shared_ptr<const api::TrafficMatrix> measured_traffic;
  uint64_t version = 0;

  // framework::NetworkCatalog
  const api::AppGroup* FindAppGroup(std::string_view ns, std::string_view name) const override;
  // NetworkTopology is looked up by name in `ns`, then cluster-wide (an empty namespace).
  const api::NetworkTopology* FindTopology(std::string_view ns,
                                           std::string_view name) const override;
  const api::TrafficMatrix* traffic_matrix() const override { return measured_traffic.get(); }
};

class NetworkStore final : public framework::NetworkView {
 public:
  NetworkStore();
  // The current catalog, never null: for plugins (framework::NetworkView) and for the writers and
  // tests that need the concrete maps (CurrentSnapshot).
  std::shared_ptr<const framework::NetworkCatalog> Current() const override;
  std::shared_ptr<const NetworkSnapshot> CurrentSnapshot() const;

  void UpsertAppGroup(api::AppGroupPtr ag);
  void DeleteAppGroup(std::string_view ns, std::string_view name);
  void UpsertTopology(api::NetworkTopologyPtr nt);
  void DeleteTopology(std::string_view ns, std::string_view name);
  // Replaces the traffic matrix (null clears it). Called by TrafficMatrixRefresher.
  void SetTrafficMatrix(std::shared_ptr<const api::TrafficMatrix> matrix);

 private:
  mutable common::Mutex mu_;
  std::shared_ptr<const NetworkSnapshot> current_ GPUSCHED_GUARDED_BY(mu_);
};

}  // namespace gpusched::cache
