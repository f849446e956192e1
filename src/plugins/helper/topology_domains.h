// SPDX-License-Identifier: Apache-2.0
// Topology domains: for a topology key (a node label such as topology.kubernetes.io/zone), the
// dense domain id of every snapshot slot, so that plugins counting pods per domain
// (PodTopologySpread, InterPodAffinity) keep their counts in flat arrays indexed by domain and
// Filter/Score look a node's domain up in O(1) without allocating.
//
// TopologyDomains memoises one DomainIndex per key until the snapshot's node set changes
// (Snapshot::node_set_version together with the snapshot's address and slot count); a snapshot
// without a version (0: filled by hand, tests and tools) is never trusted, so every Refresh drops
// the memo. Not thread-safe: Refresh and For are called from PreFilter/PreScore on the owning
// framework's scheduling thread; the returned DomainIndex is read-only and may be read
// concurrently (Filter/Score) until the next Refresh that drops it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "src/common/interner.h"
#include "src/framework/node_info.h"

namespace gpusched::plugins::helper {

// The dense domain index of every snapshot slot for one topology key. Domains are numbered
// 0..num_domains-1 in increasing order of the label value's atom id.
struct DomainIndex {
  common::Atom key;
  // node_domain[slot]: the slot's domain, or -1 when the slot is empty or its node lacks the key.
  std::vector<int32_t> node_domain;
  int32_t num_domains = 0;
};

// Builds the index of `key` over `nodes` (one allocation for the sort, none per node).
DomainIndex BuildDomainIndex(std::span<const framework::NodeInfo> nodes, common::Atom key);

// The per-key memo of DomainIndex for one snapshot (see the file comment).
class TopologyDomains {
 public:
  // Drops every memoised index unless `snapshot` is the same versioned snapshot, with the same
  // node_set_version and slot count, as at the last Refresh. Call before For in each PreFilter /
  // PreScore. Returns true when the memo was kept.
  bool Refresh(const framework::Snapshot& snapshot);

  // The index for `key` over `snapshot`, built on first use after the memo was dropped.
  // REQUIRES: Refresh(snapshot) was called first. The reference (and pointers to it) stay valid
  // until a Refresh drops the memo; later keys do not move earlier indices.
  const DomainIndex& For(const framework::Snapshot& snapshot, common::Atom key);

 private:
  const framework::Snapshot* snapshot_ = nullptr;
  uint64_t version_ = 0;
  size_t slots_ = 0;
  std::vector<std::unique_ptr<DomainIndex>> indices_;
};

}  // namespace gpusched::plugins::helper
