// SPDX-License-Identifier: Apache-2.0
// NetworkView: the network data a plugin may read beyond the snapshot, offered by the Handle
// (Handle::network()): who talks to whom (AppGroup CRDs, the measured workload traffic matrix)
// and what the network between zones and regions costs (NetworkTopology CRDs). It declares
// exactly what the NetworkLocality plugin reads; the values are api types (src/api/network_crd.h,
// src/api/traffic_matrix.h).
//
// Implemented by the NetworkStore (src/cache/network_store.h), which the CRD watch and the
// traffic refresher keep current in `gpusched scheduler`, and which tests fill by hand. Where
// nothing keeps one (the simulator, the extender, `gpusched explain`) the Handle offers none.
//
// A reader takes one immutable NetworkCatalog (Current()) per use, e.g. once per pod, so a
// scheduling cycle reads one consistent version and never waits for a writer; a writer publishes
// a new catalog instead of changing the one readers hold.
//
// Thread safety: every method of both classes is thread-safe; a catalog never changes.
#pragma once

#include <memory>
#include <string_view>

#include "src/api/network_crd.h"
#include "src/api/traffic_matrix.h"

namespace gpusched::framework {

// One immutable version of the network data. Pointers it returns live as long as the catalog.
class NetworkCatalog {
 public:
  virtual ~NetworkCatalog() = default;
  // The AppGroup `name` of namespace `ns`; null when unknown.
  virtual const api::AppGroup* FindAppGroup(std::string_view ns, std::string_view name) const = 0;
  // The NetworkTopology `name` of namespace `ns`, else the cluster-scoped one of that name (empty
  // namespace); null when neither is known.
  virtual const api::NetworkTopology* FindTopology(std::string_view ns,
                                                   std::string_view name) const = 0;
  // The measured workload traffic (service mesh metrics); null when none is known.
  virtual const api::TrafficMatrix* traffic_matrix() const = 0;
};

class NetworkView {
 public:
  virtual ~NetworkView() = default;
  // The current catalog; never null. Cheap: a shared_ptr copy under a short lock.
  virtual std::shared_ptr<const NetworkCatalog> Current() const = 0;
};

}  // namespace gpusched::framework
