// SPDX-License-Identifier: Apache-2.0
#include "src/events/event_handler.h"

#include <spdlog/spdlog.h>

#include <memory>
#include <string>
#include <utility>
#include <variant>

#include "src/events/cluster_events.h"
#include "src/events/dra_events.h"
#include "src/events/volume_events.h"

namespace gpusched::events {

namespace {

// The node's GPU facts that were clamped, skipped or disagree (api::DeriveNodeGpuInfo), logged
// when they first appear or change: the node stays usable, but what it offers is not what its
// labels say.
void LogGpuFacts(const api::Node* old_node, const api::Node& node) {
  if (node.gpu_error.empty()) return;
  if (old_node != nullptr && old_node->gpu_error == node.gpu_error) return;
  spdlog::warn("node {}: GPU facts: {}", node.meta.name, node.gpu_error);
}

using framework::EventResource;

queue::QueueEvent NodeEvent(uint32_t actions, api::NodePtr old_node, api::NodePtr node) {
  queue::QueueEvent e;
  e.event = {EventResource::kNode, actions};
  e.old_node = std::move(old_node);
  e.new_node = std::move(node);
  return e;
}

// `node`: where the pod runs (ran), for hints that ask whether freed room could matter there.
queue::QueueEvent AssignedPodEvent(uint32_t actions, api::PodPtr old_pod, api::PodPtr pod,
                                   api::NodePtr node) {
  queue::QueueEvent e;
  e.event = {EventResource::kAssignedPod, actions};
  if (actions == framework::kDelete) {
    e.old_pod = pod != nullptr ? std::move(pod) : std::move(old_pod);  // what was freed
  } else {
    e.old_pod = std::move(old_pod);
    e.new_pod = std::move(pod);
  }
  e.new_node = std::move(node);
  return e;
}

}  // namespace

void EventHandler::OnNodeAdd(api::NodePtr node) {
  LogGpuFacts(nullptr, *node);
  s_.cache.AddNode(node);
  OnClusterEvent(NodeEvent(framework::kAdd, nullptr, std::move(node)));
}

void EventHandler::OnNodeUpdate(api::NodePtr old_node, api::NodePtr node) {
  const uint32_t actions =
      old_node == nullptr ? framework::kAdd : NodeUpdateActions(*old_node, *node);
  LogGpuFacts(old_node.get(), *node);
  s_.cache.UpdateNode(node);
  if (actions != 0) OnClusterEvent(NodeEvent(actions, std::move(old_node), std::move(node)));
}

void EventHandler::OnNodeDelete(api::NodePtr node) {
  s_.cache.RemoveNode(node->meta.name);
  OnClusterEvent(NodeEvent(framework::kDelete, std::move(node), nullptr));
}

void EventHandler::OnPodAdd(api::PodPtr pod) {
  ObserveMember(nullptr, pod.get());
  if (!pod->node_name.empty()) {
    ForgetPending(pod->meta.uid);
    s_.cache.AddPod(pod);
    api::NodePtr node = s_.cache.NodeObject(pod->node_name);
    OnClusterEvent(AssignedPodEvent(framework::kAdd, nullptr, std::move(pod), std::move(node)));
    return;
  }
  if (!pending_ || pod->Terminal() || pod->meta.deletion_timestamp || !pending_->responsible(*pod))
    return;
  queue::SchedulingQueue& queue = pending_->queue;
  if (!pod->nominated_node_name.empty()) pending_->nominator.Update(nullptr, pod);
  api::PodGroupPtr policy =
      pod->gang.empty() || s_.gangs == nullptr ? nullptr : s_.gangs->PolicyOf(*pod);
  const std::string gang = policy != nullptr ? api::GangKey(*pod) : std::string();
  queue.Add(std::move(pod));
  // A member that completes its gang wakes the others (they wait in the unschedulable pool
  // until then, as upstream's PreEnqueue gate keeps them out of the active queue).
  if (!gang.empty() &&
      static_cast<int64_t>(queue.GangSize(gang) + s_.gangs->ReservedMembers(gang).size()) >=
          policy->min_member) {
    queue.ActivateGang(gang, "GangMemberAdd");
  }
}

void EventHandler::OnPodUpdate(api::PodPtr old_pod, api::PodPtr pod) {
  ObserveMember(old_pod.get(), pod.get());
  if (!pod->node_name.empty()) {
    const bool newly_assigned = old_pod == nullptr || old_pod->node_name.empty();
    if (newly_assigned) ForgetPending(pod->meta.uid);
    const uint32_t actions = newly_assigned ? (pod->Terminal() ? 0U : framework::kAdd)
                                            : AssignedPodUpdateActions(*old_pod, *pod);
    s_.cache.UpdatePod(pod);
    if (actions != 0) {
      api::NodePtr node = s_.cache.NodeObject(pod->node_name);
      OnClusterEvent(
          AssignedPodEvent(actions, std::move(old_pod), std::move(pod), std::move(node)));
    }
    return;
  }
  if (!pending_ || !pending_->responsible(*pod)) return;
  if (pod->Terminal() || pod->meta.deletion_timestamp) {
    ForgetPending(pod->meta.uid);
    return;
  }
  pending_->nominator.Update(old_pod.get(), pod);
  if (pending_->queue.Contains(pod->meta.uid)) {
    pending_->queue.Update(std::move(pod));
  } else if (!s_.cache.Contains(pod->meta.uid)) {
    pending_->queue.Add(std::move(pod));
  }
}

void EventHandler::OnPodDelete(api::PodPtr pod) {
  ObserveMember(pod.get(), nullptr);
  if (!pod->node_name.empty() || s_.cache.Contains(pod->meta.uid)) {
    const std::string node_name = s_.cache.NodeOf(pod->meta.uid).value_or(pod->node_name);
    s_.cache.RemovePod(pod->meta.uid);
    OnClusterEvent(
        AssignedPodEvent(framework::kDelete, nullptr, pod, s_.cache.NodeObject(node_name)));
  }
  ForgetPending(pod->meta.uid);
}

void EventHandler::ForgetPending(const std::string& uid) {
  if (!pending_) return;
  pending_->queue.Delete(uid);
  pending_->nominator.Remove(uid);
}

void EventHandler::ObserveMember(const api::Pod* old_pod, const api::Pod* pod) {
  if (s_.gangs != nullptr)
    s_.gangs->ObserveMember(pod != nullptr ? *pod : *old_pod, pod == nullptr);
  if (s_.dra != nullptr) s_.dra->ObservePod(old_pod, pod);
}

void EventHandler::OnPodGroupAdd(api::PodGroupPtr group) {
  if (s_.gangs == nullptr) return;
  s_.gangs->SetPolicy(group);
  queue::QueueEvent e;
  e.event = {framework::EventResource::kPodGroup, framework::kAdd};
  e.new_obj = std::move(group);  // const api::PodGroup*
  OnClusterEvent(e);
}

void EventHandler::OnPodGroupUpdate(api::PodGroupPtr /*old_group*/, api::PodGroupPtr group) {
  if (s_.gangs != nullptr) s_.gangs->SetPolicy(std::move(group));
}

void EventHandler::OnPodGroupDelete(api::PodGroupPtr group) {
  if (s_.gangs != nullptr) s_.gangs->RemovePolicy(group->Key());
}

void EventHandler::OnPdbAdd(api::PdbPtr pdb) { s_.pdbs.Upsert(std::move(pdb)); }

void EventHandler::OnPdbUpdate(api::PdbPtr /*old_pdb*/, api::PdbPtr pdb) {
  s_.pdbs.Upsert(std::move(pdb));
}

void EventHandler::OnPdbDelete(api::PdbPtr pdb) { s_.pdbs.Delete(*pdb); }

void EventHandler::OnStorageAdd(const kube::StorageObject& obj) {
  if (s_.volumes == nullptr) return;
  ApplyStorageEvent(*s_.volumes, nullptr, &obj);
  OnClusterEvent(StorageQueueEvent(nullptr, obj));
}

void EventHandler::OnStorageUpdate(const kube::StorageObject& old_obj,
                                   const kube::StorageObject& obj) {
  if (s_.volumes == nullptr) return;
  ApplyStorageEvent(*s_.volumes, &old_obj, &obj);
  OnClusterEvent(StorageQueueEvent(&old_obj, obj));
}

void EventHandler::OnStorageDelete(const kube::StorageObject& obj) {
  if (s_.volumes != nullptr) ApplyStorageEvent(*s_.volumes, &obj, nullptr);
}

void EventHandler::OnDraAdd(const kube::DraObject& obj) {
  if (s_.dra == nullptr) return;
  ApplyDraEvent(*s_.dra, nullptr, &obj);
  OnClusterEvent(DraQueueEvent(nullptr, &obj));
}

void EventHandler::OnDraUpdate(const kube::DraObject& old_obj, const kube::DraObject& obj) {
  if (s_.dra == nullptr) return;
  ApplyDraEvent(*s_.dra, &old_obj, &obj);
  OnClusterEvent(DraQueueEvent(&old_obj, &obj));
}

// A deleted claim frees its devices; a deleted slice or class helps no pod (the plugin
// registers no delete for them, and the hints skip what they did not register).
void EventHandler::OnDraDelete(const kube::DraObject& obj) {
  if (s_.dra == nullptr) return;
  ApplyDraEvent(*s_.dra, &obj, nullptr);
  OnClusterEvent(DraQueueEvent(&obj, nullptr));
}

void EventHandler::OnNetworkUpsert(const kube::NetworkObject& obj) {
  if (s_.network == nullptr) return;
  if (const auto* ag = std::get_if<api::AppGroupPtr>(&obj)) {
    s_.network->UpsertAppGroup(*ag);
  } else {
    s_.network->UpsertTopology(std::get<api::NetworkTopologyPtr>(obj));
  }
}

void EventHandler::OnNetworkDelete(const kube::NetworkObject& obj) {
  if (s_.network == nullptr) return;
  if (const auto* ag = std::get_if<api::AppGroupPtr>(&obj)) {
    s_.network->DeleteAppGroup((*ag)->namespace_, (*ag)->name);
  } else {
    const api::NetworkTopologyPtr& nt = std::get<api::NetworkTopologyPtr>(obj);
    s_.network->DeleteTopology(nt->namespace_, nt->name);
  }
}

}  // namespace gpusched::events
