// SPDX-License-Identifier: Apache-2.0
#include "src/explain/dra_claims.h"

#include <optional>
#include <string>
#include <vector>

#include "src/plugins/dynamic_resources/report.h"
#include "src/plugins/names.h"

namespace gpusched::explain {

namespace dr = plugins::dynamic_resources;

std::string DraNodeOf(const Explanation& ex) {
  if (!ex.chosen.empty()) return ex.chosen;
  if (!ex.subject.bound_node.empty()) return ex.subject.bound_node;
  for (const NodeRow& n : ex.nodes) {
    if (n.feasible) return n.name;
  }
  return {};
}

std::optional<DraRow> ExplainClaims(const framework::DraView& view, const api::Pod& pod,
                                    const api::Node& node) {
  return dr::ReportClaims(view, pod, node);
}

std::optional<DraRow> ExplainBestRejected(const framework::DraView& view, const api::Pod& pod,
                                          const framework::Snapshot& snapshot,
                                          const Explanation& ex) {
  std::vector<std::string> rejected;
  for (const NodeRow& n : ex.nodes) {
    if (!n.feasible && n.plugin == plugins::names::kDynamicResources) rejected.push_back(n.name);
  }
  return dr::ReportBestRejected(view, pod, snapshot, rejected);
}

void ExplainLookahead(const framework::DraView& view, const api::Pod& pod,
                      const framework::Snapshot& snapshot, Explanation& ex) {
  if (!ex.dra) return;
  std::vector<std::string> feasible;
  for (const NodeRow& n : ex.nodes) {
    if (n.feasible) feasible.push_back(n.name);
  }
  ex.dra->lookahead = dr::ReportLookahead(view, pod, snapshot, feasible);
}

}  // namespace gpusched::explain
