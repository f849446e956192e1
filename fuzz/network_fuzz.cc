// SPDX-License-Identifier: Apache-2.0
// Fuzzes the network-locality parsers: the gpusched.io/traffic annotation
// (api::ParseTrafficAnnotation) and the AppGroup / NetworkTopology decoders
// (api::ParseAppGroup / ParseNetworkTopology).
//
// Input: the first byte picks the parser ('a' annotation, 'g' AppGroup JSON, anything else
// NetworkTopology JSON); the rest is its text.
//
// Properties: no crash, no UB, no leak; an accepted annotation has 1..64 entries, each with a
// non-empty selector and a weight in (0, 100000]; a decoded AppGroup has numMembers >= 1, every
// maxNetworkCost in 0..10000 and its topologyOrder sorted; every decoded NetworkTopology cost is
// >= 0 and findable by (origin, destination).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz/fuzz_check.h"
#include "src/api/network_crd.h"
#include "src/api/traffic_annotation.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  namespace api = gpusched::api;
  if (data[0] == 'a') {
    auto peers = api::ParseTrafficAnnotation(text);
    if (peers.ok()) {
      FUZZ_CHECK(!peers->empty() && peers->size() <= api::kMaxTrafficEntries, "1..64 entries");
      for (const auto& p : *peers) {
        FUZZ_CHECK(!p.selector_text.empty() && !p.selector.empty(), "non-empty selector");
        FUZZ_CHECK(p.mbps > 0 && p.mbps <= api::kMaxTrafficMBps, "weight in (0, 100000]");
      }
    }
  } else if (data[0] == 'g') {
    auto ag = api::ParseAppGroup(text, "fuzz");
    if (ag.ok()) {
      FUZZ_CHECK(ag->num_members >= 1, "numMembers >= 1");
      for (const auto& w : ag->workloads) {
        for (const auto& d : w.dependencies) {
          FUZZ_CHECK(d.max_network_cost >= 0 && d.max_network_cost <= api::kMaxNetworkCostLimit,
                     "maxNetworkCost in 0..10000");
        }
      }
      FUZZ_CHECK(std::is_sorted(ag->topology_order.begin(), ag->topology_order.end()),
                 "topologyOrder sorted");
    }
  } else {
    auto nt = api::ParseNetworkTopology(text, "fuzz");
    if (nt.ok()) {
      for (const auto& w : nt->weights) {
        for (const auto& t : w.topologies) {
          for (const auto& e : t.entries) {
            FUZZ_CHECK(e.cost >= 0, "cost >= 0");
            FUZZ_CHECK(t.Find(e.origin, e.destination) == e.cost, "cost findable");
          }
        }
      }
    }
  }
  return 0;
}
