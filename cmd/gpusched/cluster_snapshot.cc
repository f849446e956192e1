// SPDX-License-Identifier: Apache-2.0
#include "cmd/gpusched/cluster_snapshot.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <utility>
#include <vector>

#include "cmd/gpusched/wiring.h"
#include "src/common/clock.h"
#include "src/common/mutex.h"
#include "src/common/random.h"
#include "src/kube/informer/informer.h"

namespace gpusched::cmd {
namespace {

// Keeps the latest object of each node and pod the informers deliver. Called from the two
// informer threads.
class Store final : public kube::ClusterEventHandler {
 public:
  void OnNodeAdd(api::NodePtr node) override { Put(std::move(node)); }
  void OnNodeUpdate(api::NodePtr, api::NodePtr node) override { Put(std::move(node)); }
  void OnNodeDelete(api::NodePtr node) override {
    common::MutexLock l(mu_);
    nodes_.erase(node->meta.name);
  }
  void OnPodAdd(api::PodPtr pod) override { Put(std::move(pod)); }
  void OnPodUpdate(api::PodPtr, api::PodPtr pod) override { Put(std::move(pod)); }
  void OnPodDelete(api::PodPtr pod) override {
    common::MutexLock l(mu_);
    pods_.erase(pod->meta.uid);
  }

  // Nodes by name; bound, live pods by creation time then key; the count of the others.
  void Fill(ClusterSnapshot& out) {
    common::MutexLock l(mu_);
    for (const auto& [name, node] : nodes_) out.workload.nodes.push_back(node);
    for (const auto& [uid, pod] : pods_) {
      if (pod->Terminal() || pod->meta.deletion_timestamp) continue;
      if (pod->node_name.empty()) {
        ++out.pending_pods;
        continue;
      }
      out.workload.pods.push_back(pod);
    }
    std::sort(out.workload.pods.begin(), out.workload.pods.end(),
              [](const api::PodPtr& a, const api::PodPtr& b) {
                if (a->meta.creation_timestamp != b->meta.creation_timestamp) {
                  return a->meta.creation_timestamp < b->meta.creation_timestamp;
                }
                return a->Key() < b->Key();
              });
  }

 private:
  void Put(api::NodePtr node) {
    common::MutexLock l(mu_);
    nodes_[node->meta.name] = std::move(node);
  }
  void Put(api::PodPtr pod) {
    common::MutexLock l(mu_);
    pods_[pod->meta.uid] = std::move(pod);
  }

  common::Mutex mu_;
  std::map<std::string, api::NodePtr> nodes_ GPUSCHED_GUARDED_BY(mu_);
  std::map<std::string, api::PodPtr> pods_ GPUSCHED_GUARDED_BY(mu_);
};

}  // namespace

common::StatusOr<ClusterSnapshot> SnapshotCluster(const std::string& kubeconfig,
                                                  const config::SchedulerConfig& config,
                                                  int sync_timeout_s) {
  common::SystemClock clock;
  GPUSCHED_ASSIGN_OR_RETURN(
      Connection conn,
      Connect(kubeconfig.empty() ? config.client_connection.kubeconfig : kubeconfig));
  common::Random http_random(TimeSeed());
  Stopper http_stop;
  GPUSCHED_ASSIGN_OR_RETURN(
      auto rest, NewRestClient(conn,
                               RestClientOptions{config.client_connection.qps,
                                                 config.client_connection.burst, nullptr},
                               clock, http_random, http_stop));
  Store store;
  auto nodes = kube::informer::NewNodeInformer(*rest, store, clock);
  auto pods = kube::informer::NewPodInformer(*rest, store, clock);
  nodes->Start();
  pods->Start();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(sync_timeout_s);
  bool synced = false;
  while (!synced && std::chrono::steady_clock::now() < deadline) {
    synced = nodes->WaitForSync(std::chrono::milliseconds(100)) &&
             pods->WaitForSync(std::chrono::milliseconds(100));
  }
  nodes->Stop();
  pods->Stop();
  rest->Cancel();
  http_stop.Stop();
  nodes->Join();
  pods->Join();
  ClusterSnapshot out;
  out.description = "cluster " + conn.cluster.Describe();
  if (!synced) {
    return common::UnavailableError("listing nodes and pods from " + conn.cluster.Describe() +
                                    " did not finish within " + std::to_string(sync_timeout_s) +
                                    "s (see --sync-timeout)");
  }
  store.Fill(out);
  return out;
}

}  // namespace gpusched::cmd
