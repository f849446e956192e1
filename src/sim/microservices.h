// SPDX-License-Identifier: Apache-2.0
// Built-in microservice examples for network-locality studies (`gpusched simulate --example
// microservices` / `microservices-b`): CPU-only services with a call graph, several replicas each,
// on nodes in three zones. Each example is generated as Kubernetes manifests (printable with
// --print-example and editable) and decoded by the ordinary manifest decoder, so what is
// simulated is exactly what is printed.
//
// Every replica carries:
//   - labels app=<service> and an ownerReference to ReplicaSet <service> (the workload identity
//     the traffic report groups by);
//   - a zone spread constraint, topology.kubernetes.io/zone maxSkew 1 DoNotSchedule over
//     app=<service>: the availability requirement, so every multi-replica service spans at
//     least two zones under any profile that enables PodTopologySpread;
//   - the gpusched.io/traffic annotation naming the services it calls, with the call's traffic
//     (bytes per call x calls per second, both directions) divided by the caller's replicas.
//
//   microservices    "boutique" (namespace shop): 12 services after the Online Boutique demo —
//                    frontend (3 replicas), checkout, cart, redis-cart, productcatalog,
//                    catalog-db, currency, payment, shipping, email, recommendation, ad (2 each);
//                    12 nodes (m5.2xlarge) in us-east-1a/b/c; pods arrive service by service,
//                    frontend first.
//   microservices-b  "social" (namespace social): 11 services of a social-network backend with a
//                    deeper call chain, 3-4 replicas for the edge tier, and a 2-replica storage
//                    tier; 15 nodes of two sizes, uneven across zones (6/5/4), plus a batch
//                    namespace whose pods load some nodes. For tests: a second topology.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "src/common/status.h"
#include "src/sim/workload.h"

namespace gpusched::sim {

// Names accepted by MicroserviceExample.
std::vector<std::string> MicroserviceExampleNames();

// The example as multi-document YAML (Nodes, then Pods in arrival order). NotFound for an
// unknown name.
common::StatusOr<std::string> MicroserviceExampleYaml(std::string_view name);

// The example decoded.
common::StatusOr<Workload> MicroserviceExample(std::string_view name);

}  // namespace gpusched::sim
