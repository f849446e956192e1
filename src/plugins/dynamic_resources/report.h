// SPDX-License-Identifier: Apache-2.0
// What DynamicResources reports about a pod's claims, for `gpusched explain`: computed with the
// plugin's own parts (its SelectorCache for the CEL selectors, its allocator for the choice, its
// lookahead), returned as framework::Dra*Report values (src/framework/dra_report.h). Each request's
// devices on a node get one verdict:
//
//   allocated                  the claim is allocated and holds the device
//   selected                   the allocator picks it for this request on this node
//   class selector false       the DeviceClass's selectors do not match the device
//   request selector false     the class matches, the request's own selectors do not
//   held by claim NS/NAME      another claim is allocated the device
//   pool invalid: ...          the device's pool is invalid (DeviceIndex::invalid_pools)
//   counters short: ...        a shared counter has less left than the device draws
//   capacity short: ...        the device has less capacity left than the request consumes
//   tainted KEY=VALUE:EFFECT   a NoSchedule/NoExecute device taint the request does not tolerate
//   constraint mismatch: ...   a matchAttribute constraint of the claim: the device lacks the
//                              attribute or has another value than the devices picked
//   matches, not needed        usable, but the request has enough devices
//   matches                    usable (the allocation failed for another reason)
//
// Devices the node cannot reach (other nodes' slices, node selectors that do not match) are
// counted, not listed. Reads the DraView (no writes, no assume); thread-safe as the view.
#pragma once

#include <optional>
#include <span>
#include <string>

#include "src/api/types.h"
#include "src/framework/dra_report.h"
#include "src/framework/dra_view.h"
#include "src/framework/node_info.h"

namespace gpusched::plugins::dynamic_resources {

// The pod's claims on `node`; nullopt when the pod has no claims.
std::optional<framework::DraClaimsReport> ReportClaims(const framework::DraView& view,
                                                       const api::Pod& pod, const api::Node& node);

// The claims on the node of `rejected` (nodes the plugin rejected, found by name in `snapshot`)
// that came closest: the most devices that pass their request's selectors, then the most of the
// requested classes, then the first in `rejected`'s order. nullopt when none reports.
std::optional<framework::DraClaimsReport> ReportBestRejected(const framework::DraView& view,
                                                             const api::Pod& pod,
                                                             const framework::Snapshot& snapshot,
                                                             std::span<const std::string> rejected);

// The lookahead for the pod over `feasible_nodes` (found by name in `snapshot`), computed as
// PreScore does; nullopt where it does not run (no other claim waits, fewer than two feasible
// nodes, over its budget, the pod's claims missing or unplannable).
std::optional<framework::DraLookaheadReport> ReportLookahead(
    const framework::DraView& view, const api::Pod& pod, const framework::Snapshot& snapshot,
    std::span<const std::string> feasible_nodes);

}  // namespace gpusched::plugins::dynamic_resources
