// SPDX-License-Identifier: Apache-2.0
#include "src/plugins/helper/topology_domains.h"

#include <algorithm>
#include <utility>

namespace gpusched::plugins::helper {

DomainIndex BuildDomainIndex(std::span<const framework::NodeInfo> nodes, common::Atom key) {
  DomainIndex idx;
  idx.key = key;
  idx.node_domain.assign(nodes.size(), -1);
  // (value, slot) pairs sorted by value: equal values get one dense id (one allocation, not one
  // per node).
  std::vector<std::pair<uint32_t, uint32_t>> by_value;
  by_value.reserve(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (!nodes[i].valid()) continue;
    common::Atom value;
    if (!nodes[i].node->meta.labels.Get(key, &value)) continue;
    by_value.emplace_back(value.id, static_cast<uint32_t>(i));
  }
  std::sort(by_value.begin(), by_value.end());
  for (size_t k = 0; k < by_value.size(); ++k) {
    if (k > 0 && by_value[k].first != by_value[k - 1].first) ++idx.num_domains;
    idx.node_domain[by_value[k].second] = idx.num_domains;
  }
  if (!by_value.empty()) ++idx.num_domains;
  return idx;
}

bool TopologyDomains::Refresh(const framework::Snapshot& snapshot) {
  const uint64_t version = snapshot.node_set_version();
  if (version != 0 && &snapshot == snapshot_ && version == version_ &&
      snapshot.nodes().size() == slots_) {
    return true;
  }
  indices_.clear();
  snapshot_ = version == 0 ? nullptr : &snapshot;
  version_ = version;
  slots_ = snapshot.nodes().size();
  return false;
}

const DomainIndex& TopologyDomains::For(const framework::Snapshot& snapshot, common::Atom key) {
  for (const auto& idx : indices_) {
    if (idx->key == key) return *idx;
  }
  indices_.push_back(std::make_unique<DomainIndex>(BuildDomainIndex(snapshot.nodes(), key)));
  return *indices_.back();
}

}  // namespace gpusched::plugins::helper
