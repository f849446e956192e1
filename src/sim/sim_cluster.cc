// SPDX-License-Identifier: Apache-2.0
#include "src/sim/sim_cluster.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <span>
#include <utility>

#include "src/api/gpu_devices.h"
#include "src/common/strings.h"

namespace gpusched::sim {

namespace {

// Stores the cluster-scoped DRA object `obj` by its name; returns the version it replaced.
template <class Ptr>
std::optional<kube::DraObject> ReplaceByName(std::map<std::string, Ptr>& by_name, const Ptr& obj) {
  Ptr& stored = by_name[obj->name];
  std::optional<kube::DraObject> before;
  if (stored) before = kube::DraObject(stored);
  stored = obj;
  return before;
}

std::string ClaimKey(std::string_view ns, std::string_view name) {
  std::string key(ns);
  key += '/';
  key += name;
  return key;
}

// The claim kube-controller-manager's resourceclaim controller makes for the claim `claim` of
// `owner` (a pod, or a native PodGroup) in `ns`: generateName "<owner>-<claim>-"
// (common::GeneratedName), its 5 characters derived from the names and `attempt`.
std::string GeneratedClaimName(std::string_view ns, const std::string& owner,
                               std::string_view claim, uint32_t attempt) {
  uint64_t h = 1469598103934665603ULL;  // FNV-1a
  auto mix = [&h](std::string_view s) {
    for (char c : s) {
      h ^= static_cast<unsigned char>(c);
      h *= 1099511628211ULL;
    }
    h ^= 0xff;
    h *= 1099511628211ULL;
  };
  mix(ns);
  mix(owner);
  mix(claim);
  mix(std::to_string(attempt));
  return common::GeneratedName(owner + "-" + std::string(claim) + "-", h);
}

bool OwnedBy(const api::ResourceClaim& claim, std::string_view uid) {
  return !uid.empty() && api::ControllerUid(claim.meta) == uid;
}

}  // namespace

void SimCluster::SetHandler(kube::ClusterEventHandler* handler) {
  common::MutexLock lock(mu_);
  handler_ = handler;
}

common::Status SimCluster::AddNode(api::NodePtr node) {
  kube::ClusterEventHandler* handler = nullptr;
  {
    common::MutexLock lock(mu_);
    const std::string& name = node->meta.name;
    if (name.empty()) return common::InvalidArgumentError("node has no name");
    if (node_index_.contains(name)) {
      return common::AlreadyExistsError("node " + common::Quote(name) + " already exists");
    }
    node_index_.emplace(name, nodes_.size());
    nodes_.push_back(NodeEntry{node, NodeUsage{}});
    node_gpu_milli_used_.push_back(0);
    // Pods created earlier that name this node are counted now.
    for (const auto& [uid, pod] : pods_) {
      if (pod->node_name == name) ChargeLocked(*pod, +1);
    }
    handler = handler_;
  }
  if (handler != nullptr) handler->OnNodeAdd(std::move(node));
  return common::Status::Ok();
}

common::Status SimCluster::CreatePod(api::PodPtr pod) {
  kube::ClusterEventHandler* handler = nullptr;
  {
    common::MutexLock lock(mu_);
    const std::string& uid = pod->meta.uid;
    if (uid.empty()) return common::InvalidArgumentError("pod " + pod->Key() + " has no uid");
    if (pods_.contains(uid)) {
      return common::AlreadyExistsError("pod uid " + common::Quote(uid) + " already exists");
    }
    std::string key = pod->Key();
    if (uid_by_key_.contains(key)) {
      return common::AlreadyExistsError("pod " + key + " already exists");
    }
    uid_by_key_.emplace(std::move(key), uid);
    pods_.emplace(uid, pod);
    if (!pod->node_name.empty()) ChargeLocked(*pod, +1);
    handler = handler_;
  }
  if (handler != nullptr) handler->OnPodAdd(pod);
  if (pod->resource_claims == nullptr) return common::Status::Ok();
  // The resourceclaim controller: the pod's template claims, then its status.
  std::vector<DraChange> changes;
  api::PodPtr updated;
  {
    common::MutexLock lock(mu_);
    auto it = pods_.find(pod->meta.uid);
    if (it == pods_.end() || it->second != pod) return common::Status::Ok();
    updated = CreateTemplateClaimsLocked(pod, changes);
    if (updated != nullptr) it->second = updated;
    handler = handler_;
  }
  DeliverDraChanges(changes);
  if (updated != nullptr && handler != nullptr) handler->OnPodUpdate(pod, updated);
  return common::Status::Ok();
}

common::Status SimCluster::DeletePod(std::string_view uid) {
  kube::ClusterEventHandler* handler = nullptr;
  api::PodPtr pod;
  {
    common::MutexLock lock(mu_);
    auto it = pods_.find(std::string(uid));
    if (it == pods_.end()) {
      return common::NotFoundError("pod uid " + common::Quote(uid) + " not found");
    }
    pod = it->second;
    pods_.erase(it);
    uid_by_key_.erase(pod->Key());
    if (!pod->node_name.empty()) ChargeLocked(*pod, -1);
    handler = handler_;
  }
  if (handler != nullptr) handler->OnPodDelete(pod);
  // The resourceclaim controller and the garbage collector: the pod's claims released.
  std::vector<DraChange> changes;
  {
    common::MutexLock lock(mu_);
    ReleasePodClaimsLocked(*pod, changes);
  }
  DeliverDraChanges(changes);
  return common::Status::Ok();
}

common::Status SimCluster::BindPod(
    const api::Pod& pod, std::string_view node,
    const std::vector<std::pair<std::string, std::string>>& annotations) {
  kube::ClusterEventHandler* handler = nullptr;
  api::PodPtr old_pod;
  api::PodPtr bound;
  {
    common::MutexLock lock(mu_);
    auto it = pods_.find(pod.meta.uid);
    if (it == pods_.end()) {
      ++counters_.bind_errors;
      return common::NotFoundError("pods \"" + pod.meta.name + "\" not found");
    }
    auto node_it = node_index_.find(std::string(node));
    if (node_it == node_index_.end()) {
      ++counters_.bind_errors;
      return common::NotFoundError("nodes \"" + std::string(node) + "\" not found");
    }
    old_pod = it->second;
    if (!old_pod->node_name.empty()) {
      ++counters_.bind_errors;
      return common::AbortedError("pod " + old_pod->Key() + " is already assigned to node \"" +
                                  old_pod->node_name + "\"");
    }
    auto updated = std::make_shared<api::Pod>(*old_pod);
    updated->node_name = std::string(node);
    auto& annos = updated->meta.annotations;
    for (const auto& [key, value] : annotations) {
      auto pos = std::lower_bound(annos.begin(), annos.end(), key,
                                  [](const auto& e, const std::string& k) { return e.first < k; });
      if (pos != annos.end() && pos->first == key) {
        pos->second = value;
      } else {
        annos.emplace(pos, key, value);
      }
    }
    bound = updated;
    it->second = bound;
    ++counters_.binds;

    // Charge and check the ledger of the node.
    ChargeLocked(*bound, +1);
    const NodeEntry& entry = nodes_[node_it->second];
    const api::Node& n = *entry.node;
    const NodeUsage& u = entry.usage;
    const std::string where = "bind of " + bound->Key() + " to " + n.meta.name + ": ";
    if (const std::string* devs = bound->meta.Annotation(api::kPodGpuDevicesAnnotation)) {
      auto a = api::ParseGpuAssignment(*devs);
      if (!a.ok()) {
        ViolationLocked(where + a.status().ToString());
      } else {
        for (int8_t d : a->devices) {
          if (d < 0 || d >= n.gpu.count) {
            ViolationLocked(where + "device " + std::to_string(d) + " does not exist (node has " +
                            std::to_string(n.gpu.count) + " GPUs)");
          } else if (u.gpu_milli[static_cast<size_t>(d)] > api::kMilliPerGpu) {
            ViolationLocked(where + "device " + std::to_string(d) + " over-committed: " +
                            std::to_string(u.gpu_milli[static_cast<size_t>(d)]) + " milli");
          }
        }
      }
    }
    if (n.allocatable.milli_cpu > 0 && u.milli_cpu > n.allocatable.milli_cpu) {
      ViolationLocked(where + "cpu over-committed: " + std::to_string(u.milli_cpu) + "m > " +
                      std::to_string(n.allocatable.milli_cpu) + "m");
    }
    if (n.allocatable.memory > 0 && u.memory > n.allocatable.memory) {
      ViolationLocked(where + "memory over-committed: " + std::to_string(u.memory) + " > " +
                      std::to_string(n.allocatable.memory) + " bytes");
    }
    if (n.allocatable.pods > 0 && u.pods > n.allocatable.pods) {
      ViolationLocked(where + "too many pods: " + std::to_string(u.pods) + " > " +
                      std::to_string(n.allocatable.pods));
    }
    handler = handler_;
  }
  if (handler != nullptr) handler->OnPodUpdate(std::move(old_pod), std::move(bound));
  return common::Status::Ok();
}

common::Status SimCluster::SetPodUnschedulable(const api::Pod& pod, std::string_view reason,
                                               std::string_view /*message*/) {
  common::MutexLock lock(mu_);
  if (!pods_.contains(pod.meta.uid)) {
    return common::NotFoundError("pods \"" + pod.meta.name + "\" not found");
  }
  ++counters_.conditions_by_reason[std::string(reason)];
  return common::Status::Ok();
}

common::Status SimCluster::CreateEvent(const kube::EventRecord& event) {
  common::MutexLock lock(mu_);
  ++counters_.events_by_reason[event.reason];
  return common::Status::Ok();
}

common::Status SimCluster::UpdateStoredPod(const api::Pod& pod,
                                           const std::function<bool(api::Pod&)>& update) {
  kube::ClusterEventHandler* handler = nullptr;
  api::PodPtr old_pod;
  api::PodPtr updated;
  {
    common::MutexLock lock(mu_);
    auto it = pods_.find(pod.meta.uid);
    if (it == pods_.end()) {
      return common::NotFoundError("pods \"" + pod.meta.name + "\" not found");
    }
    auto copy = std::make_shared<api::Pod>(*it->second);
    if (!update(*copy)) return common::Status::Ok();
    old_pod = it->second;
    updated = std::move(copy);
    it->second = updated;
    handler = handler_;
  }
  if (handler != nullptr) handler->OnPodUpdate(std::move(old_pod), std::move(updated));
  return common::Status::Ok();
}

common::Status SimCluster::PatchPodCondition(const api::Pod& pod, const api::Condition& condition) {
  return UpdateStoredPod(pod, [&](api::Pod& p) {
    for (api::Condition& c : p.conditions) {
      if (c.type != condition.type) continue;
      if (c.status == condition.status && c.reason == condition.reason &&
          c.message == condition.message) {
        return false;  // the pod already says so
      }
      const std::optional<common::TimePoint> kept =
          c.status == condition.status ? c.last_transition_time : std::nullopt;
      c = condition;
      if (!c.last_transition_time) c.last_transition_time = kept;
      return true;
    }
    p.conditions.push_back(condition);
    return true;
  });
}

common::Status SimCluster::DeletePod(const api::Pod& pod) {
  common::Status s = DeletePod(std::string_view(pod.meta.uid));
  if (s.ok()) {
    common::MutexLock lock(mu_);
    ++counters_.api_deletes;
  } else if (s.code() == common::StatusCode::kNotFound) {
    return common::NotFoundError("pods \"" + pod.meta.name + "\" not found");
  }
  return s;
}

common::Status SimCluster::SetNominatedNodeName(const api::Pod& pod, std::string_view node) {
  if (pod.nominated_node_name == node) return common::Status::Ok();  // as the real client
  return UpdateStoredPod(pod, [&](api::Pod& p) {
    if (p.nominated_node_name == node) return false;
    p.nominated_node_name = std::string(node);
    return true;
  });
}

common::Status SimCluster::AddPodGroup(api::PodGroupPtr group) {
  kube::ClusterEventHandler* handler = nullptr;
  {
    common::MutexLock lock(mu_);
    const std::string key = group->Key();
    if (pod_groups_.contains(key)) {
      return common::AlreadyExistsError("pod group " + common::Quote(key) + " already exists");
    }
    pod_groups_.emplace(key, group);
    handler = handler_;
  }
  if (handler != nullptr) handler->OnPodGroupAdd(std::move(group));
  return common::Status::Ok();
}

common::Status SimCluster::UpdatePodGroupStatus(const api::PodGroup& group,
                                                const api::PodGroupStatus& status) {
  common::MutexLock lock(mu_);
  pod_group_status_[group.Key()] = status;
  return common::Status::Ok();
}

void SimCluster::AddStorage(const kube::StorageObject& obj) {
  kube::ClusterEventHandler* handler = nullptr;
  {
    common::MutexLock lock(mu_);
    if (const auto* pv = std::get_if<api::PersistentVolumePtr>(&obj)) {
      pvs_[(*pv)->name()] = *pv;
    } else if (const auto* pvc = std::get_if<api::PersistentVolumeClaimPtr>(&obj)) {
      pvcs_[(*pvc)->namespace_() + "/" + (*pvc)->name()] = *pvc;
    }
    handler = handler_;
  }
  if (handler != nullptr) handler->OnStorageAdd(obj);
}

void SimCluster::AddNetwork(const kube::NetworkObject& obj) {
  kube::ClusterEventHandler* handler = nullptr;
  {
    common::MutexLock lock(mu_);
    handler = handler_;
  }
  if (handler != nullptr) handler->OnNetworkUpsert(obj);
}

common::StatusOr<std::string> SimCluster::BindPersistentVolume(const api::PersistentVolume& pv,
                                                               bool /*bound_by_controller*/) {
  kube::ClusterEventHandler* handler = nullptr;
  api::PersistentVolumePtr old_pv;
  api::PersistentVolumeClaimPtr old_pvc;
  std::shared_ptr<api::PersistentVolume> new_pv;
  std::shared_ptr<api::PersistentVolumeClaim> new_pvc;
  {
    common::MutexLock lock(mu_);
    auto it = pvs_.find(pv.name());
    if (it == pvs_.end() || !pv.claim_ref) {
      return common::NotFoundError("persistentvolume " + common::Quote(pv.name()) + " not found");
    }
    auto ct = pvcs_.find(pv.claim_ref->namespace_ + "/" + pv.claim_ref->name);
    if (ct == pvcs_.end()) {
      return common::NotFoundError("persistentvolumeclaim " + pv.claim_ref->name + " not found");
    }
    old_pv = it->second;
    old_pvc = ct->second;
    // The PV controller's part: both sides bound.
    new_pv = std::make_shared<api::PersistentVolume>(pv);
    new_pv->phase = api::PersistentVolume::Phase::kBound;
    new_pv->meta.resource_version = std::to_string(++storage_version_);
    new_pvc = std::make_shared<api::PersistentVolumeClaim>(*old_pvc);
    new_pvc->volume_name = pv.name();
    new_pvc->bind_completed = true;
    new_pvc->phase = api::PersistentVolumeClaim::Phase::kBound;
    new_pvc->meta.resource_version = std::to_string(++storage_version_);
    it->second = new_pv;
    ct->second = new_pvc;
    handler = handler_;
  }
  if (handler != nullptr) {
    handler->OnStorageUpdate(old_pv, api::PersistentVolumePtr(new_pv));
    handler->OnStorageUpdate(old_pvc, api::PersistentVolumeClaimPtr(new_pvc));
  }
  return new_pv->meta.resource_version;
}

common::StatusOr<std::string> SimCluster::SetPvcSelectedNode(const api::PersistentVolumeClaim& pvc,
                                                             std::string_view node) {
  kube::ClusterEventHandler* handler = nullptr;
  api::PersistentVolumeClaimPtr old_pvc;
  std::shared_ptr<api::PersistentVolume> new_pv;
  std::shared_ptr<api::PersistentVolumeClaim> new_pvc;
  {
    common::MutexLock lock(mu_);
    auto ct = pvcs_.find(pvc.namespace_() + "/" + pvc.name());
    if (ct == pvcs_.end()) {
      return common::NotFoundError("persistentvolumeclaim " + pvc.name() + " not found");
    }
    old_pvc = ct->second;
    // The provisioner's and the PV controller's part: a volume on that node, bound.
    new_pv = std::make_shared<api::PersistentVolume>();
    new_pv->meta.name = "pvc-" + (pvc.meta.uid.empty() ? pvc.name() : pvc.meta.uid);
    new_pv->meta.resource_version = std::to_string(++storage_version_);
    new_pv->storage_class = pvc.storage_class;
    new_pv->capacity_bytes = pvc.request_bytes;
    new_pv->access_modes = pvc.access_modes;
    new_pv->volume_mode = pvc.volume_mode;
    new_pv->claim_ref = api::ClaimRef{pvc.namespace_(), pvc.name(), pvc.meta.uid};
    new_pv->phase = api::PersistentVolume::Phase::kBound;
    new_pvc = std::make_shared<api::PersistentVolumeClaim>(*old_pvc);
    new_pvc->selected_node = std::string(node);
    new_pvc->volume_name = new_pv->meta.name;
    new_pvc->bind_completed = true;
    new_pvc->phase = api::PersistentVolumeClaim::Phase::kBound;
    new_pvc->meta.resource_version = std::to_string(++storage_version_);
    pvs_[new_pv->meta.name] = new_pv;
    ct->second = new_pvc;
    handler = handler_;
  }
  if (handler != nullptr) {
    handler->OnStorageAdd(api::PersistentVolumePtr(new_pv));
    handler->OnStorageUpdate(old_pvc, api::PersistentVolumeClaimPtr(new_pvc));
  }
  return new_pvc->meta.resource_version;
}

std::string SimCluster::NextClaimVersionLocked() { return std::to_string(++claim_version_); }

void SimCluster::PutClaimLocked(const api::ResourceClaimPtr& before, api::ResourceClaimPtr after,
                                std::vector<DraChange>& changes) {
  const api::ResourceClaim& any = after != nullptr ? *after : *before;
  const std::string key = ClaimKey(any.meta.namespace_, any.meta.name);
  DraChange change;
  if (before != nullptr) change.before = kube::DraObject(before);
  if (after == nullptr) {
    claims_.erase(key);
  } else {
    claims_[key] = after;
    change.after = kube::DraObject(std::move(after));
  }
  changes.push_back(std::move(change));
}

void SimCluster::DeliverDraChanges(const std::vector<DraChange>& changes) {
  if (changes.empty()) return;
  kube::ClusterEventHandler* handler;
  {
    common::MutexLock lock(mu_);
    handler = handler_;
  }
  if (handler == nullptr) return;
  for (const DraChange& c : changes) {
    if (!c.before) {
      handler->OnDraAdd(*c.after);
    } else if (!c.after) {
      handler->OnDraDelete(*c.before);
    } else {
      handler->OnDraUpdate(*c.before, *c.after);
    }
  }
}

void SimCluster::AddDra(const DraObject& obj) {
  std::vector<DraChange> changes;
  {
    common::MutexLock lock(mu_);
    if (const auto* c = std::get_if<api::DeviceClassPtr>(&obj)) {
      changes.push_back({ReplaceByName(device_classes_, *c), *c});
    } else if (const auto* s = std::get_if<api::ResourceSlicePtr>(&obj)) {
      changes.push_back({ReplaceByName(slices_, *s), *s});
    } else if (const auto* r = std::get_if<api::DeviceTaintRulePtr>(&obj)) {
      changes.push_back({ReplaceByName(taint_rules_, *r), *r});
    } else if (const auto* t = std::get_if<api::ResourceClaimTemplatePtr>(&obj)) {
      claim_templates_[ClaimKey((*t)->meta.namespace_, (*t)->meta.name)] = *t;
    } else if (const auto* claim = std::get_if<api::ResourceClaimPtr>(&obj)) {
      api::ResourceClaimPtr stored = *claim;
      const std::string& rv = stored->meta.resource_version;
      if (rv.empty()) {
        auto copy = std::make_shared<api::ResourceClaim>(*stored);
        copy->meta.resource_version = NextClaimVersionLocked();
        stored = std::move(copy);
      } else if (api::CompareResourceVersions(rv, std::to_string(claim_version_)) > 0) {
        // Later versions must compare newer than the input's.
        if (std::optional<int64_t> v = common::ParseInt64(rv); v && *v > 0) {
          claim_version_ = static_cast<uint64_t>(*v);
        }
      }
      auto it = claims_.find(ClaimKey(stored->meta.namespace_, stored->meta.name));
      PutClaimLocked(it == claims_.end() ? nullptr : it->second, std::move(stored), changes);
    }
  }
  DeliverDraChanges(changes);
}

api::ResourceClaimPtr SimCluster::NewClaimFromTemplateLocked(std::string_view ns,
                                                             api::OwnerReference owner,
                                                             std::string_view claim_name,
                                                             const api::ResourceClaimTemplate& t) {
  auto claim = std::make_shared<api::ResourceClaim>();
  for (uint32_t attempt = 0;; ++attempt) {
    claim->meta.name = GeneratedClaimName(ns, owner.name, claim_name, attempt);
    if (!claims_.contains(ClaimKey(ns, claim->meta.name))) break;
  }
  claim->meta.namespace_ = std::string(ns);
  claim->meta.uid = "sim:resourceclaim:" + claim->meta.namespace_ + "/" + claim->meta.name;
  claim->meta.resource_version = NextClaimVersionLocked();
  claim->meta.labels = t.meta.labels;
  claim->meta.annotations = {{"resource.kubernetes.io/pod-claim-name", std::string(claim_name)}};
  claim->meta.owner_references.push_back(std::move(owner));
  claim->spec = t.spec;
  return claim;
}

std::optional<std::string> SimCluster::PodGroupClaimLocked(const api::PodGroup& group,
                                                           const api::PodClaimSource& src,
                                                           std::vector<DraChange>& changes) {
  const api::PodResourceClaims& gc = *group.resource_claims;
  for (size_t j = 0; j < gc.claims.size(); ++j) {
    if (gc.claims[j].name == src.name) {
      if (std::optional<std::string> name = gc.ClaimName(j)) return name;  // read with it
    }
  }
  const std::string key = group.Key() + "#" + src.name;
  if (auto it = pod_group_claims_.find(key); it != pod_group_claims_.end()) return it->second;
  auto t = claim_templates_.find(ClaimKey(group.namespace_, src.template_name));
  if (t == claim_templates_.end()) return std::nullopt;  // the controller retries; pods wait
  api::ResourceClaimPtr claim = NewClaimFromTemplateLocked(
      group.namespace_,
      api::OwnerReference{std::string(api::kNativePodGroupApiVersions[0]), "PodGroup", group.name,
                          group.uid, /*controller=*/true},
      src.name, *t->second);
  pod_group_claims_.emplace(key, claim->meta.name);
  std::string name = claim->meta.name;
  PutClaimLocked(nullptr, std::move(claim), changes);
  ++counters_.claims_created;
  return name;
}

api::PodPtr SimCluster::CreateTemplateClaimsLocked(const api::PodPtr& pod,
                                                   std::vector<DraChange>& changes) {
  const api::PodResourceClaims& pc = *pod->resource_claims;
  std::vector<std::pair<std::string, std::string>> statuses = pc.statuses;
  api::PodGroupPtr group;
  if (!pod->scheduling_group.empty()) {
    auto it = pod_groups_.find(
        api::PolicyKey(api::GangApi::kNative, pod->meta.namespace_, pod->scheduling_group, ""));
    if (it != pod_groups_.end()) group = it->second;
  }
  bool changed = false;
  for (size_t i = 0; i < pc.claims.size(); ++i) {
    const api::PodClaimSource& src = pc.claims[i];
    if (src.template_name.empty()) continue;
    const bool has_status = std::any_of(statuses.begin(), statuses.end(),
                                        [&](const auto& s) { return s.first == src.name; });
    if (has_status) continue;
    if (api::ConsumerFor(*pod, i, group.get()).resource == api::kPodGroupsResource) {
      // KEP-5729: the PodGroup's claim, made once and shared by its pods.
      if (std::optional<std::string> name = PodGroupClaimLocked(*group, src, changes)) {
        statuses.emplace_back(src.name, *std::move(name));
        changed = true;
      }
      continue;
    }
    auto t = claim_templates_.find(ClaimKey(pod->meta.namespace_, src.template_name));
    if (t == claim_templates_.end()) continue;  // the controller retries; the pod waits
    api::ResourceClaimPtr claim = NewClaimFromTemplateLocked(
        pod->meta.namespace_,
        api::OwnerReference{"v1", "Pod", pod->meta.name, pod->meta.uid, /*controller=*/true},
        src.name, *t->second);
    statuses.emplace_back(src.name, claim->meta.name);
    PutClaimLocked(nullptr, std::move(claim), changes);
    ++counters_.claims_created;
    changed = true;
  }
  if (!changed) return nullptr;
  auto claims = std::make_shared<api::PodResourceClaims>(pc);
  claims->statuses = std::move(statuses);
  auto updated = std::make_shared<api::Pod>(*pod);
  updated->resource_claims = std::move(claims);
  return updated;
}

void SimCluster::ReleasePodClaimsLocked(const api::Pod& pod, std::vector<DraChange>& changes) {
  std::vector<api::ResourceClaimPtr> affected;
  for (const auto& [key, claim] : claims_) {
    const bool reserved =
        std::any_of(claim->reserved_for.begin(), claim->reserved_for.end(),
                    [&](const api::ClaimConsumer& c) { return c.uid == pod.meta.uid; });
    if (reserved || OwnedBy(*claim, pod.meta.uid)) affected.push_back(claim);
  }
  for (const api::ResourceClaimPtr& claim : affected) {
    if (OwnedBy(*claim, pod.meta.uid)) {
      PutClaimLocked(claim, nullptr, changes);
      ++counters_.claims_deleted;
      continue;
    }
    auto updated = std::make_shared<api::ResourceClaim>(*claim);
    std::erase_if(updated->reserved_for,
                  [&](const api::ClaimConsumer& c) { return c.uid == pod.meta.uid; });
    if (updated->reserved_for.empty() && updated->allocation) {
      updated->allocation.reset();
      ++counters_.claims_deallocated;
    }
    updated->meta.resource_version = NextClaimVersionLocked();
    PutClaimLocked(claim, std::move(updated), changes);
  }
}

common::StatusOr<api::ResourceClaimPtr> SimCluster::UpdateResourceClaimStatus(
    const api::ResourceClaim& claim) {
  std::vector<DraChange> changes;
  api::ResourceClaimPtr stored;
  {
    common::MutexLock lock(mu_);
    auto it = claims_.find(ClaimKey(claim.meta.namespace_, claim.meta.name));
    if (it == claims_.end()) {
      return common::NotFoundError("resourceclaims.resource.k8s.io " +
                                   common::Quote(claim.meta.name) + " not found");
    }
    if (claim.meta.resource_version != it->second->meta.resource_version) {
      return common::AbortedError(
          "Operation cannot be fulfilled on resourceclaims.resource.k8s.io " +
          common::Quote(claim.meta.name) +
          ": the object has been modified; please apply your changes to "
          "the latest version and try again");
    }
    auto updated = std::make_shared<api::ResourceClaim>(*it->second);
    updated->allocation = claim.allocation;
    updated->reserved_for = claim.reserved_for;
    updated->meta.resource_version = NextClaimVersionLocked();
    stored = updated;
    PutClaimLocked(it->second, std::move(updated), changes);
    ++counters_.claim_status_updates;
  }
  DeliverDraChanges(changes);
  return stored;
}

common::StatusOr<api::ResourceClaimPtr> SimCluster::CreateResourceClaim(
    const api::ResourceClaim& claim) {
  std::vector<DraChange> changes;
  api::ResourceClaimPtr stored;
  {
    common::MutexLock lock(mu_);
    if (claims_.contains(ClaimKey(claim.meta.namespace_, claim.meta.name))) {
      return common::AlreadyExistsError("resourceclaims.resource.k8s.io " +
                                        common::Quote(claim.meta.name) + " already exists");
    }
    auto created = std::make_shared<api::ResourceClaim>(claim);
    created->allocation.reset();
    created->reserved_for.clear();
    created->meta.resource_version = NextClaimVersionLocked();
    created->meta.uid = "claim-" + created->meta.resource_version;
    stored = created;
    PutClaimLocked(nullptr, std::move(created), changes);
  }
  DeliverDraChanges(changes);
  return stored;
}

common::Status SimCluster::DeleteResourceClaim(const api::ResourceClaim& claim) {
  std::vector<DraChange> changes;
  {
    common::MutexLock lock(mu_);
    auto it = claims_.find(ClaimKey(claim.meta.namespace_, claim.meta.name));
    if (it == claims_.end() ||
        (!claim.meta.uid.empty() && it->second->meta.uid != claim.meta.uid)) {
      return common::Status::Ok();  // gone already
    }
    PutClaimLocked(it->second, nullptr, changes);
  }
  DeliverDraChanges(changes);
  return common::Status::Ok();
}

common::Status SimCluster::SetPodExtendedResourceClaimStatus(
    const api::Pod& pod, const api::PodExtendedResourceClaimStatus& status) {
  common::MutexLock lock(mu_);
  if (!pods_.contains(pod.meta.uid)) {
    return common::NotFoundError("pods \"" + pod.meta.name + "\" not found");
  }
  extended_claim_statuses_[pod.meta.uid] = status;
  return common::Status::Ok();
}

std::map<std::string, api::PodExtendedResourceClaimStatus>
SimCluster::ExtendedResourceClaimStatuses() const {
  common::MutexLock lock(mu_);
  return extended_claim_statuses_;
}

std::vector<api::ResourceClaimPtr> SimCluster::Claims() const {
  common::MutexLock lock(mu_);
  std::vector<api::ResourceClaimPtr> out;
  out.reserve(claims_.size());
  for (const auto& [key, c] : claims_) out.push_back(c);
  return out;
}

api::ResourceClaimPtr SimCluster::GetClaim(std::string_view ns, std::string_view name) const {
  common::MutexLock lock(mu_);
  auto it = claims_.find(ClaimKey(ns, name));
  return it == claims_.end() ? nullptr : it->second;
}

std::map<std::string, api::PodGroupStatus> SimCluster::PodGroupStatuses() const {
  common::MutexLock lock(mu_);
  return pod_group_status_;
}

api::PodPtr SimCluster::GetPod(std::string_view uid) const {
  common::MutexLock lock(mu_);
  auto it = pods_.find(std::string(uid));
  return it == pods_.end() ? nullptr : it->second;
}

api::NodePtr SimCluster::GetNode(std::string_view name) const {
  common::MutexLock lock(mu_);
  auto it = node_index_.find(std::string(name));
  return it == node_index_.end() ? nullptr : nodes_[it->second].node;
}

void SimCluster::ChargeLocked(const api::Pod& pod, int sign) {
  auto it = node_index_.find(pod.node_name);
  if (it == node_index_.end()) return;  // a node not (yet) known: counted when it is added
  NodeUsage& u = nodes_[it->second].usage;
  u.milli_cpu += sign * pod.requests.milli_cpu;
  u.memory += sign * pod.requests.memory;
  u.pods += sign;
  if (pod.gpu.empty()) return;
  const std::string* devs = pod.meta.Annotation(api::kPodGpuDevicesAnnotation);
  std::optional<api::GpuAssignment> a;
  if (devs != nullptr) {
    if (auto parsed = api::ParseGpuAssignment(*devs); parsed.ok()) a = std::move(*parsed);
  }
  if (!a) {
    // A pod bound elsewhere (another scheduler, or a manifest with nodeName) without a device
    // annotation: the cache charges it to the devices ChooseDevicesBestFit picks, so the ledger
    // does too, and remembers them for the pod's deletion.
    u.gpu_pods_without_devices += sign;
    if (sign > 0) {
      std::array<api::GpuDeviceState, api::kMaxGpusPerNode> devices{};
      for (size_t d = 0; d < devices.size(); ++d) devices[d].used_milli = u.gpu_milli[d];
      const api::Node& node = *nodes_[it->second].node;
      const auto count = static_cast<size_t>(std::clamp(node.gpu.count, 0, api::kMaxGpusPerNode));
      a = api::ChooseDevicesBestFit(node.gpu, std::span(devices.data(), count), pod.gpu);
      if (!a) return;
      unannotated_devices_[pod.meta.uid] = *a;
    } else {
      auto chosen = unannotated_devices_.find(pod.meta.uid);
      if (chosen == unannotated_devices_.end()) return;
      a = std::move(chosen->second);
      unannotated_devices_.erase(chosen);
    }
  }
  const int32_t count = nodes_[it->second].node->gpu.count;
  for (int8_t d : a->devices) {
    if (d >= 0 && d < api::kMaxGpusPerNode) {
      u.gpu_milli[static_cast<size_t>(d)] += sign * a->milli;
      if (d < count) {
        gpu_milli_used_total_ += sign * a->milli;
        node_gpu_milli_used_[it->second] += sign * a->milli;
      }
    }
  }
}

void SimCluster::ViolationLocked(std::string what) {
  if (violation_.empty()) violation_ = std::move(what);
}

}  // namespace gpusched::sim
