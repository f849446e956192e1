// SPDX-License-Identifier: Apache-2.0
// The DRA part of `gpusched explain`: for a pod with resource claims and one node, each request's
// devices on that node with the reason each is or is not used, from the DynamicResources
// plugin's own parts (its SelectorCache for the CEL selectors, its allocator for the choice):
//
//   allocated                  the claim is allocated and holds the device
//   selected                   the allocator picks it for this request on this node
//   class selector false       the DeviceClass's selectors do not match the device
//   request selector false     the class matches, the request's own selectors do not
//   held by claim NS/NAME      another claim is allocated the device
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

#include "src/api/types.h"
#include "src/explain/explain.h"
#include "src/framework/dra_view.h"
#include "src/framework/node_info.h"

namespace gpusched::explain {

// The pod's claims on `node`; nullopt when the pod has no claims.
std::optional<DraRow> ExplainClaims(const framework::DraView& view, const api::Pod& pod,
                                    const api::Node& node);

// DynamicResources' lookahead for the pod over the feasible nodes of `ex` (found by name in
// `snapshot`, the one the explanation was built on), computed as the plugin's PreScore does:
// sets ex.dra->lookahead (ex.dra must be set); leaves it unset where the lookahead does not run
// (no other claim waits, fewer than two feasible nodes, over its budget).
void ExplainLookahead(const framework::DraView& view, const api::Pod& pod,
                      const framework::Snapshot& snapshot, Explanation& ex);

// The node the claims are explained on: the chosen node, else the node the pod is bound to, else
// the best feasible one; empty when there is none.
std::string DraNodeOf(const Explanation& ex);

// The claims on the node DynamicResources rejected that came closest: the most devices that pass
// their request's selectors, then the most of the requested classes, then the first in `ex`'s
// order (rejected nodes by name). nullopt when DynamicResources rejected no node (`ex.nodes`
// found by name in `snapshot`, the one the explanation was built on).
std::optional<DraRow> ExplainBestRejected(const framework::DraView& view, const api::Pod& pod,
                                          const framework::Snapshot& snapshot,
                                          const Explanation& ex);

}  // namespace gpusched::explain
