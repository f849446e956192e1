// SPDX-License-Identifier: Apache-2.0
// SimCluster's read-only views of its nodes, their usage and its counters (sim_cluster.h).
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "src/sim/sim_cluster.h"

namespace gpusched::sim {

std::vector<api::NodePtr> SimCluster::Nodes() const {
  common::MutexLock lock(mu_);
  std::vector<api::NodePtr> out;
  out.reserve(nodes_.size());
  for (const auto& e : nodes_) out.push_back(e.node);
  return out;
}

NodeUsage SimCluster::UsageOf(std::string_view node) const {
  common::MutexLock lock(mu_);
  auto it = node_index_.find(std::string(node));
  return it == node_index_.end() ? NodeUsage{} : nodes_[it->second].usage;
}

std::vector<std::pair<api::NodePtr, NodeUsage>> SimCluster::NodesWithUsage() const {
  common::MutexLock lock(mu_);
  std::vector<std::pair<api::NodePtr, NodeUsage>> out;
  out.reserve(nodes_.size());
  for (const auto& e : nodes_) out.emplace_back(e.node, e.usage);
  return out;
}

int64_t SimCluster::PodCount() const {
  common::MutexLock lock(mu_);
  return static_cast<int64_t>(pods_.size());
}

ClusterCounters SimCluster::Counters() const {
  common::MutexLock lock(mu_);
  return counters_;
}

common::Status SimCluster::LedgerStatus() const {
  common::MutexLock lock(mu_);
  if (!violation_.empty()) return common::InternalError("ledger violation: " + violation_);
  int64_t used = 0;  // GpuMilliUsedTotal, recounted
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const NodeEntry& n = nodes_[i];
    const auto count = static_cast<size_t>(std::clamp(n.node->gpu.count, 0, api::kMaxGpusPerNode));
    int64_t on_node = 0;
    for (size_t d = 0; d < count; ++d) on_node += n.usage.gpu_milli[d];
    if (on_node != node_gpu_milli_used_[i]) {
      return common::InternalError("ledger violation: node " + n.node->meta.name + " holds " +
                                   std::to_string(on_node) + " milli-GPU, its running total " +
                                   std::to_string(node_gpu_milli_used_[i]));
    }
    used += on_node;
  }
  if (used != gpu_milli_used_total_) {
    return common::InternalError("ledger violation: the running GPU total is " +
                                 std::to_string(gpu_milli_used_total_) + " milli, the nodes hold " +
                                 std::to_string(used));
  }
  return common::Status::Ok();
}

void SimCluster::GpuMilliUsed(std::vector<int64_t>& out) const {
  common::MutexLock lock(mu_);
  out.assign(node_gpu_milli_used_.begin(), node_gpu_milli_used_.end());
}

int64_t SimCluster::GpuMilliUsedTotal() const {
  common::MutexLock lock(mu_);
  return gpu_milli_used_total_;
}

size_t SimCluster::NodeCount() const {
  common::MutexLock lock(mu_);
  return nodes_.size();
}

}  // namespace gpusched::sim
