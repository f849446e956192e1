// SPDX-License-Identifier: Apache-2.0
// EventHandler: the one entry point for cluster objects, as kube-scheduler's eventhandlers.go.
// Every mode feeds it: the informers of `gpusched scheduler` and of `gpusched extender`, the
// simulator's cluster, `--replay`, `--from-cluster` and `explain` (through the scheduler's and the
// extender's events()). Each event updates the stores — the cache (nodes, assigned pods), the
// gang store (PodGroups and their members), the volume, DRA and PDB stores, and in the scheduler
// the queue and the nominator (pending pods) — and posts the queue event the queueing hints read
// (OnClusterEvent).
//
// Threading: called from informer threads while the scheduling thread runs; every store it
// updates is thread-safe.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "src/api/types.h"
#include "src/cache/cache.h"
#include "src/cache/dra_store.h"
#include "src/cache/gang_store.h"
#include "src/cache/network_store.h"
#include "src/cache/pdb_store.h"
#include "src/cache/volume_store.h"
#include "src/framework/runtime/nominator.h"
#include "src/kube/api_client.h"
#include "src/queue/scheduling_queue.h"

namespace gpusched::events {

class EventHandler final : public kube::ClusterEventHandler {
 public:
  // What the events update; every store must outlive the handler. A null store is one the mode
  // does not track (the extender: kube-scheduler gangs the pods, binds their volumes and
  // allocates their claims): the events of its kinds are ignored.
  struct Stores {
    cache::Cache& cache;
    cache::PdbStore& pdbs;
    cache::GangStore* gangs = nullptr;
    cache::VolumeStore* volumes = nullptr;
    cache::DraStore* dra = nullptr;
    cache::NetworkStore* network = nullptr;
  };
  // Where pending pods wait: the queue and the nominator (both must outlive the handler), and
  // whether a pending pod is one of this scheduler's profiles' (others are not queued).
  struct Pending {
    queue::SchedulingQueue& queue;
    framework::runtime::Nominator& nominator;
    std::function<bool(const api::Pod&)> responsible;
  };
  // Without `pending` (the extender: kube-scheduler holds the queue) a pending pod feeds only
  // the gang and DRA stores and no queue event is posted.
  explicit EventHandler(Stores stores, std::optional<Pending> pending = std::nullopt)
      : s_(stores), pending_(std::move(pending)) {}

  void OnNodeAdd(api::NodePtr node) override;
  void OnNodeUpdate(api::NodePtr old_node, api::NodePtr node) override;
  void OnNodeDelete(api::NodePtr node) override;
  void OnPodAdd(api::PodPtr pod) override;
  void OnPodUpdate(api::PodPtr old_pod, api::PodPtr pod) override;
  void OnPodDelete(api::PodPtr pod) override;
  void OnPdbAdd(api::PdbPtr pdb) override;
  void OnPdbUpdate(api::PdbPtr old_pdb, api::PdbPtr pdb) override;
  void OnPdbDelete(api::PdbPtr pdb) override;
  void OnPodGroupAdd(api::PodGroupPtr group) override;
  void OnPodGroupUpdate(api::PodGroupPtr old_group, api::PodGroupPtr group) override;
  void OnPodGroupDelete(api::PodGroupPtr group) override;
  // Storage objects feed the volume store (volume_events.cc).
  void OnStorageAdd(const kube::StorageObject& obj) override;
  void OnStorageUpdate(const kube::StorageObject& old_obj, const kube::StorageObject& obj) override;
  void OnStorageDelete(const kube::StorageObject& obj) override;
  // DRA objects feed the DRA store (dra_events.cc) and are cluster events for the queueing hints
  // (deletes too: a deleted claim frees its devices).
  void OnDraAdd(const kube::DraObject& obj) override;
  void OnDraUpdate(const kube::DraObject& old_obj, const kube::DraObject& obj) override;
  void OnDraDelete(const kube::DraObject& obj) override;
  // AppGroups and NetworkTopologies feed the network store. No queue event: NetworkLocality
  // scores, and its Filter (AppGroup dependencies) registers none.
  void OnNetworkUpsert(const kube::NetworkObject& obj) override;
  void OnNetworkDelete(const kube::NetworkObject& obj) override;

  // A cluster event for the queueing hints (queue/scheduling_queue.h): moves the unschedulable
  // pods whose rejecting plugins registered `event.event` and whose hint says it may help, and
  // is remembered for the pods in flight. The handlers above call it with the action bits of
  // cluster_events.h (assigned-pod events carry the pod's node, when the cache knows it, in
  // new_node; the objects, as shared_ptr<const api::...>, in old_obj/new_obj for the other kinds).
  void OnClusterEvent(const queue::QueueEvent& event) {
    if (pending_) pending_->queue.MoveOnEvent(event);
  }

 private:
  // A pod that is no longer pending leaves the queue and the nominator.
  void ForgetPending(const std::string& uid);
  // The pod's gang membership and claims: an add (old_pod null), an update, or a delete (pod
  // null).
  void ObserveMember(const api::Pod* old_pod, const api::Pod* pod);

  Stores s_;
  std::optional<Pending> pending_;
};

}  // namespace gpusched::events
