// SPDX-License-Identifier: Apache-2.0
// What the DynamicResources plugin reports about a pod's claims for `gpusched explain`
// (src/plugins/dynamic_resources/report.h fills it, src/explain prints it): vocabulary, so that
// explain reads what the plugin reports and never the plugin's own headers. Plain values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gpusched::framework {

// One device the node reaches, with why it is (not) used for a request.
struct DraDeviceReport {
  std::string device;     // "driver/pool/device"
  std::string verdict;    // "allocated", "selected", "class selector false", "request selector
                          // false", "held by claim ns/name", "tainted key=value:Effect",
                          // "constraint mismatch: ...", "matches, not needed", "matches"
  bool selected = false;  // allocated to the claim, or what the allocator picks on this node
};

// One request (or subrequest) of a claim on the node.
struct DraRequestReport {
  std::string claim;    // namespace/name (or the pod claim name while not created)
  std::string request;  // "<request>" or "<request>/<subrequest>"
  std::string device_class;
  std::string selectors;  // the request's CEL selectors joined by " && " ("" when none)
  int64_t count = 0;      // ExactCount's count; 0 for allocationMode All
  std::vector<DraDeviceReport> devices;  // the devices the node reaches, in index order
  int32_t unreachable = 0;               // devices of the cluster the node does not reach
};

// DynamicResources' lookahead (src/plugins/dynamic_resources/lookahead.h) as Score saw it: per
// feasible node, the most waiting pods a replay of the waiting claims still serves after the pod
// takes its devices there (-1: its claims do not fit there).
struct DraLookaheadReport {
  int32_t waiting_claims = 0;  // replayed
  int32_t replays = 0;
  std::vector<std::pair<std::string, int32_t>> nodes;  // feasible node -> pods served
};

// The pod's claims on one node: per request, every device the node reaches with its verdict.
struct DraClaimsReport {
  std::string node;     // the node the verdicts are for: chosen, bound, best or first rejected
  std::string message;  // e.g. "cannot allocate all claims on gpu-1", a claim not found
  std::vector<DraRequestReport> requests;
  std::optional<DraLookaheadReport> lookahead;  // set where the lookahead runs for the pod
};

}  // namespace gpusched::framework
