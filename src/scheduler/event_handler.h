// SPDX-License-Identifier: Apache-2.0
// EventHandler: the one entry point for cluster objects, as kube-scheduler's eventhandlers.go.
// Every mode feeds it: the informers of `gpusched scheduler`, the simulator's cluster, `--replay`,
// `--from-cluster` and `explain` (through the scheduler's events()). Each event updates the
// scheduler's stores — the cache (nodes, assigned pods), the queue and the nominator (pending
// pods), the gang store (PodGroups and their members), the volume, DRA and PDB stores — and
// posts the queue event the queueing hints read (OnClusterEvent).
//
// Threading: called from informer threads while the scheduling thread runs; every store it
// updates is thread-safe.
#pragma once

#include <functional>

#include "src/api/types.h"
#include "src/cache/cache.h"
#include "src/cache/dra_store.h"
#include "src/cache/gang_store.h"
#include "src/cache/pdb_store.h"
#include "src/cache/volume_store.h"
#include "src/framework/runtime/nominator.h"
#include "src/kube/api_client.h"
#include "src/queue/scheduling_queue.h"

namespace gpusched::scheduler {

class EventHandler final : public kube::ClusterEventHandler {
 public:
  // What the events update; every store must outlive the handler. `responsible` says whether a
  // pending pod is one of this scheduler's profiles' (others are not queued).
  struct Stores {
    cache::Cache& cache;
    queue::SchedulingQueue& queue;
    framework::runtime::Nominator& nominator;
    cache::GangStore& gangs;
    cache::VolumeStore& volumes;
    cache::DraStore& dra;
    cache::PdbStore& pdbs;
    std::function<bool(const api::Pod&)> responsible;
  };
  explicit EventHandler(Stores stores) : s_(std::move(stores)) {}

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

  // A cluster event for the queueing hints (queue/scheduling_queue.h): moves the unschedulable
  // pods whose rejecting plugins registered `event.event` and whose hint says it may help, and
  // is remembered for the pods in flight. The handlers above call it with the action bits of
  // cluster_events.h (assigned-pod events carry the pod's node, when the cache knows it, in
  // new_node; the objects, as shared_ptr<const api::...>, in old_obj/new_obj for the other kinds).
  void OnClusterEvent(const queue::QueueEvent& event) { s_.queue.MoveOnEvent(event); }

 private:
  Stores s_;
};

}  // namespace gpusched::scheduler
