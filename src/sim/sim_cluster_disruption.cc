// SPDX-License-Identifier: Apache-2.0
// SimCluster's PodDisruptionBudgets and the Eviction API (the API server's eviction subresource:
// pkg/registry/core/pod/storage/eviction.go, for pods that are running or pending).
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "src/sim/sim_cluster.h"

namespace gpusched::sim {

void SimCluster::AddPdb(api::PdbPtr pdb) {
  kube::ClusterEventHandler* handler = nullptr;
  {
    common::MutexLock lock(mu_);
    pdbs_[pdb->meta.namespace_ + "/" + pdb->meta.name] = pdb;
    handler = handler_;
  }
  if (handler != nullptr) handler->OnPdbAdd(std::move(pdb));
}

common::Status SimCluster::EvictPod(const api::Pod& pod) {
  api::PdbPtr before;
  api::PdbPtr after;
  kube::ClusterEventHandler* handler = nullptr;
  {
    common::MutexLock lock(mu_);
    auto it = pods_.find(pod.meta.uid);
    if (it == pods_.end()) return common::NotFoundError("pods \"" + pod.meta.name + "\" not found");
    std::vector<api::PdbPtr*> matching;
    for (auto& [key, pdb] : pdbs_) {
      if (pdb->AppliesTo(*it->second)) matching.push_back(&pdb);
    }
    if (matching.size() > 1) {
      return common::InternalError(
          "This pod has more than one PodDisruptionBudget, which the eviction subresource does "
          "not support.");
    }
    if (!matching.empty()) {
      before = *matching.front();
      if (before->disruptions_allowed <= 0) {
        return common::ResourceExhaustedError(
            "Cannot evict pod as it would violate the pod's disruption budget.");
      }
      auto updated = std::make_shared<api::PodDisruptionBudget>(*before);
      --updated->disruptions_allowed;
      updated->disrupted_pods.push_back(pod.meta.name);
      std::sort(updated->disrupted_pods.begin(), updated->disrupted_pods.end());
      *matching.front() = updated;
      after = std::move(updated);
    }
    ++counters_.api_evictions;
    handler = handler_;
  }
  if (after != nullptr && handler != nullptr) handler->OnPdbUpdate(before, after);
  return DeletePod(std::string_view(pod.meta.uid));
}

}  // namespace gpusched::sim
