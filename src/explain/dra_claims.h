// SPDX-License-Identifier: Apache-2.0
// The DRA part of `gpusched explain`: which nodes to ask about and where the answers go. The
// answers are what the DynamicResources plugin reports (src/plugins/dynamic_resources/report.h:
// each request's devices on a node, with why each is or is not used); this file reads no part of
// the plugin but that report.
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
