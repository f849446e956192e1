// SPDX-License-Identifier: Apache-2.0
#include "src/plugins/volume_binding/volume_binding.h"

#include <algorithm>
#include <array>
#include <memory>
#include <span>
#include <string>
#include <utility>

#include "src/api/storage.h"
#include "src/framework/volume_view.h"
#include "src/plugins/helper/args.h"
#include "src/plugins/names.h"

namespace gpusched::plugins::volume_binding {
namespace {

using api::PersistentVolume;
using api::PersistentVolumeClaim;

constexpr std::string_view kNotSupportedProvisioner = "kubernetes.io/no-provisioner";

// A bound claim and its PV (null: the PV does not exist).
struct BoundClaim {
  api::PersistentVolumeClaimPtr pvc;
  api::PersistentVolumePtr pv;
};

// An unbound claim of a WaitForFirstConsumer class: the PVs of its class to choose from, and its
// class for provisioning (null: unknown).
struct DelayedClaim {
  api::PersistentVolumeClaimPtr pvc;
  api::StorageClassPtr storage_class;
  std::vector<api::PersistentVolumePtr> candidates;
};

// One static binding chosen at Reserve: the PV as assumed (claimRef set) and its claim.
struct Binding {
  api::PersistentVolumePtr pv;
  api::PersistentVolumeClaimPtr pvc;
  bool bound_by_controller = false;
  std::string written_version;  // the PV's resourceVersion after PreBind's write
};

struct Provision {
  api::PersistentVolumeClaimPtr pvc;  // as assumed (selected-node set)
  std::string written_version;
};

struct State final : framework::StateData {
  std::vector<BoundClaim> bound;
  // Claims with volume.kubernetes.io/selected-node first (they can only go there), then the
  // others by increasing request (the smallest PVs are chosen first), as upstream.
  std::vector<DelayedClaim> delayed;
  size_t selected = 0;  // how many of `delayed` have a selected node
  bool all_bound = false;
  // Reserve's choice.
  std::string node;
  api::Labels node_labels;
  std::vector<Binding> bindings;
  std::vector<Provision> provisions;
};

const framework::StateKey kStateKey = {"VolumeBinding"};

framework::Status Unresolvable(std::string message) {
  return framework::Status::WithMessage(framework::Code::kUnschedulableAndUnresolvable,
                                        std::move(message));
}

std::string Quoted(std::string_view s) {
  std::string out = "\"";
  out += s;
  out += '"';
  return out;
}

// component-helpers FindMatchingVolume for a node (delayed binding): the PV already (pre)bound to
// the claim if its node affinity allows the node, else the smallest available PV of the claim's
// class that fits. `chosen` are PVs taken by earlier claims of the pod.
const PersistentVolume* FindMatchingVolume(const PersistentVolumeClaim& pvc,
                                           const std::vector<api::PersistentVolumePtr>& pvs,
                                           const api::Labels& node_labels,
                                           std::span<const PersistentVolume* const> chosen) {
  const PersistentVolume* smallest = nullptr;
  for (const api::PersistentVolumePtr& p : pvs) {
    const PersistentVolume& pv = *p;
    if (std::find(chosen.begin(), chosen.end(), &pv) != chosen.end()) continue;
    const bool bound_to_claim = api::IsVolumeBoundToClaim(pv, pvc);
    if (pv.claim_ref && !bound_to_claim) continue;
    if (pv.capacity_bytes < pvc.request_bytes) continue;
    if (pv.volume_mode != pvc.volume_mode) continue;
    if (pv.volume_attributes_class != pvc.volume_attributes_class) continue;
    if (pv.meta.deletion_timestamp) continue;
    const bool affinity = api::PvNodeAffinityMatches(pv, node_labels);
    if (bound_to_claim) return affinity ? &pv : nullptr;
    if (pv.phase != PersistentVolume::Phase::kAvailable) continue;
    if (pvc.selector && !pvc.selector->Matches(pv.meta.labels)) continue;
    if (pv.storage_class != pvc.storage_class) continue;
    if (!affinity) continue;
    if ((pvc.access_modes & pv.access_modes) != pvc.access_modes) continue;
    if (smallest == nullptr || smallest->capacity_bytes > pv.capacity_bytes) smallest = &pv;
  }
  return smallest;
}

// What FindPodVolumes found for one node.
struct Verdict {
  bool node_conflict = false;  // a bound PV's node affinity does not match
  bool bind_conflict = false;  // an unbound claim has no PV and cannot be provisioned here
  bool pv_missing = false;     // a bound claim's PV does not exist
  framework::Status error;     // an error (a claim to provision without a usable class)

  framework::Status ToStatus() const {
    if (!error.ok()) return error;
    if (node_conflict) return framework::Status::Unresolvable(kReasonNodeConflict);
    if (bind_conflict) return framework::Status::Unresolvable(kReasonBindConflict);
    if (pv_missing) return framework::Status::Unresolvable(kReasonPVNotExist);
    return framework::Status::Success();
  }
};

// Whether claim `c` can be provisioned on the node: false when the class cannot provision or
// its allowedTopologies exclude the node; an error when the class is missing.
bool CanProvision(const DelayedClaim& c, const api::Labels& labels, Verdict& v) {
  const PersistentVolumeClaim& pvc = *c.pvc;
  if (pvc.storage_class.empty()) {
    v.error = framework::Status::Error("no class for claim " +
                                       Quoted(pvc.namespace_() + "/" + pvc.name()));
    return false;
  }
  if (c.storage_class == nullptr) {
    v.error = framework::Status::Error("failed to find storage class " + Quoted(pvc.storage_class));
    return false;
  }
  const std::string& provisioner = c.storage_class->provisioner;
  if (provisioner.empty() || provisioner == kNotSupportedProvisioner) return false;
  return api::TopologyTermsMatch(c.storage_class->allowed_topologies, labels);
}

// upstream's FindPodVolumes for one node. With `out`, also records the static bindings and the
// claims to provision (Reserve); without, allocates nothing for pods with up to kInline unbound
// claims (Filter).
Verdict FindPodVolumes(const State& s, std::string_view node_name, const api::Labels& labels,
                       State* out) {
  Verdict v;
  for (const BoundClaim& b : s.bound) {
    if (b.pv == nullptr) {
      v.pv_missing = true;
      break;
    }
    if (!api::PvNodeAffinityMatches(*b.pv, labels)) {
      v.node_conflict = true;
      break;
    }
  }
  if (s.delayed.empty()) return v;
  for (size_t i = 0; i < s.selected; ++i) {
    if (*s.delayed[i].pvc->selected_node != node_name) {
      v.bind_conflict = true;  // fast path: provisioning was started for another node
      return v;
    }
  }
  constexpr size_t kInline = 32;
  std::array<const PersistentVolume*, kInline> inline_chosen{};
  std::vector<const PersistentVolume*> heap_chosen;
  if (s.delayed.size() - s.selected > kInline) heap_chosen.resize(s.delayed.size() - s.selected);
  std::span<const PersistentVolume*> chosen =
      heap_chosen.empty() ? std::span<const PersistentVolume*>(inline_chosen)
                          : std::span<const PersistentVolume*>(heap_chosen);
  size_t n_chosen = 0;
  bool unbound_ok = true;
  // Claims with a selected node are provisioned; the others get a static PV or are provisioned.
  for (size_t i = 0; i < s.selected && unbound_ok; ++i) {
    unbound_ok = CanProvision(s.delayed[i], labels, v);
    if (out != nullptr && unbound_ok) out->provisions.push_back({s.delayed[i].pvc, {}});
  }
  for (size_t i = s.selected; i < s.delayed.size() && unbound_ok; ++i) {
    const DelayedClaim& c = s.delayed[i];
    const PersistentVolume* pv =
        FindMatchingVolume(*c.pvc, c.candidates, labels, chosen.first(n_chosen));
    if (pv != nullptr) {
      chosen[n_chosen++] = pv;
      if (out != nullptr) {
        for (const api::PersistentVolumePtr& p : c.candidates) {
          if (p.get() == pv) out->bindings.push_back({p, c.pvc, false, {}});
        }
      }
      continue;
    }
    unbound_ok = CanProvision(c, labels, v);
    if (out != nullptr && unbound_ok) out->provisions.push_back({c.pvc, {}});
  }
  if (!v.error.ok()) return v;
  v.bind_conflict = !unbound_ok;
  return v;
}

bool IsClaimVolume(const api::PodVolume& v) { return v.IsClaim(); }

// The pod is the controller owner of its ephemeral claim (ephemeral.VolumeIsForPod).
bool OwnedByPod(const PersistentVolumeClaim& pvc, const api::Pod& pod) {
  for (const api::OwnerReference& ref : pvc.meta.owner_references) {
    if (ref.controller) return ref.uid == pod.meta.uid;
  }
  return false;
}

bool PodUsesClaim(const api::Pod& pod, const PersistentVolumeClaim& pvc) {
  if (pod.volumes == nullptr || pod.meta.namespace_ != pvc.namespace_()) return false;
  return std::any_of(pod.volumes->volumes.begin(), pod.volumes->volumes.end(),
                     [&](const api::PodVolume& v) { return v.claim_name == pvc.name(); });
}

bool SameTopologies(const std::vector<api::TopologySelectorTerm>& a,
                    const std::vector<api::TopologySelectorTerm>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const auto& x = a[i].requirements;
    const auto& y = b[i].requirements;
    if (x.size() != y.size()) return false;
    for (size_t j = 0; j < x.size(); ++j) {
      if (x[j].key != y[j].key || x[j].values != y[j].values) return false;
    }
  }
  return true;
}

}  // namespace

common::StatusOr<Args> ParseArgs(const boost::json::value& raw) {
  Args out;
  GPUSCHED_RETURN_IF_ERROR(helper::ReadArgs(raw, [&](api::ObjectFields& f) {
    if (std::optional<int64_t> t = f.Int("bindTimeoutSeconds")) {
      if (*t < 0) {
        f.Error("bindTimeoutSeconds", "must not be negative, got " + std::to_string(*t));
      } else {
        out.bind_timeout = std::chrono::seconds(*t);
      }
    }
    if (const boost::json::array* shape = f.Array("shape"); shape != nullptr && !shape->empty()) {
      f.Error("shape", "not supported: StorageCapacityScoring is off (as upstream's default)");
    }
  }));
  return out;
}

common::StatusOr<framework::PluginPtr> VolumeBinding::Create(const boost::json::value& args,
                                                             framework::Handle& handle) {
  GPUSCHED_ASSIGN_OR_RETURN(Args parsed, ParseArgs(args));
  return framework::PluginPtr(std::make_unique<VolumeBinding>(parsed, handle.volumes()));
}

std::string_view VolumeBinding::Name() const { return names::kVolumeBinding; }

framework::Status VolumeBinding::PreFilter(framework::CycleState& state, const api::Pod& pod,
                                           const framework::Snapshot& /*snapshot*/) {
  if (volumes_ == nullptr || pod.volumes == nullptr || !pod.volumes->has_claims) {
    return framework::Status::Skip();
  }
  auto s = std::make_unique<State>();
  bool all_bound = true;
  bool immediate = false;
  for (const api::PodVolume& v : pod.volumes->volumes) {
    if (!IsClaimVolume(v)) continue;
    api::PersistentVolumeClaimPtr pvc = volumes_->GetPvc(pod.meta.namespace_, v.claim_name);
    if (pvc == nullptr) {
      if (v.ephemeral) {
        return Unresolvable(
            "waiting for ephemeral volume controller to create the persistentvolumeclaim " +
            Quoted(v.claim_name));
      }
      return Unresolvable("persistentvolumeclaim " + Quoted(v.claim_name) + " not found");
    }
    if (pvc->phase == PersistentVolumeClaim::Phase::kLost) {
      return Unresolvable("persistentvolumeclaim " + Quoted(pvc->name()) +
                          " bound to non-existent persistentvolume " + Quoted(pvc->volume_name));
    }
    if (pvc->meta.deletion_timestamp) {
      return Unresolvable("persistentvolumeclaim " + Quoted(pvc->name()) + " is being deleted");
    }
    if (v.ephemeral && !OwnedByPod(*pvc, pod)) {
      return Unresolvable("PVC " + pvc->namespace_() + "/" + pvc->name() +
                          " was not created for pod " + pod.meta.namespace_ + "/" + pod.meta.name +
                          " (pod is not owner)");
    }
    if (pvc->FullyBound()) {
      s->bound.push_back({pvc, volumes_->GetPv(pvc->volume_name)});
      continue;
    }
    all_bound = false;
    api::StorageClassPtr sc =
        pvc->storage_class.empty() ? nullptr : volumes_->GetStorageClass(pvc->storage_class);
    const bool delay =
        sc != nullptr && sc->binding_mode == api::StorageClass::BindingMode::kWaitForFirstConsumer;
    if (!delay || !pvc->volume_name.empty()) {
      immediate = true;  // prebound claims count as immediate, as upstream
      continue;
    }
    DelayedClaim c{pvc, sc, {}};
    if (!pvc->selected_node) c.candidates = volumes_->ListPvs(pvc->storage_class);
    s->delayed.push_back(std::move(c));
  }
  if (immediate) return framework::Status::Unresolvable(kReasonUnboundImmediate);
  std::stable_partition(s->delayed.begin(), s->delayed.end(),
                        [](const DelayedClaim& c) { return c.pvc->selected_node.has_value(); });
  s->selected = static_cast<size_t>(
      std::count_if(s->delayed.begin(), s->delayed.end(),
                    [](const DelayedClaim& c) { return c.pvc->selected_node.has_value(); }));
  std::stable_sort(s->delayed.begin() + static_cast<std::ptrdiff_t>(s->selected), s->delayed.end(),
                   [](const DelayedClaim& a, const DelayedClaim& b) {
                     return a.pvc->request_bytes < b.pvc->request_bytes;
                   });
  s->all_bound = all_bound;
  state.Write(kStateKey, std::move(s));
  return framework::Status::Success();
}

framework::Status VolumeBinding::Filter(const framework::CycleState& state, const api::Pod& /*pod*/,
                                        const framework::NodeInfo& node) const {
  const State* s = state.Get<State>(kStateKey);
  if (s == nullptr) return framework::Status::Success();
  return FindPodVolumes(*s, node.name(), node.node->meta.labels, nullptr).ToStatus();
}

framework::Status VolumeBinding::Reserve(framework::CycleState& state, const api::Pod& /*pod*/,
                                         const framework::NodeInfo& node) {
  State* s = state.Get<State>(kStateKey);
  if (s == nullptr || s->all_bound) return framework::Status::Success();
  s->bindings.clear();
  s->provisions.clear();
  s->node = std::string(node.name());
  s->node_labels = node.node->meta.labels;
  const framework::Status found = FindPodVolumes(*s, s->node, s->node_labels, s).ToStatus();
  if (!found.ok()) {
    s->bindings.clear();
    s->provisions.clear();
    return found.IsError() ? found : framework::Status::Error(std::string(found.reason()));
  }
  // AssumePodVolumes: claimRef on each chosen PV, selected-node on each claim to provision.
  for (size_t i = 0; i < s->bindings.size(); ++i) {
    Binding& b = s->bindings[i];
    const PersistentVolumeClaim& pvc = *b.pvc;
    auto pv = std::make_shared<PersistentVolume>(*b.pv);
    bool dirty = false;
    b.bound_by_controller = !api::IsVolumeBoundToClaim(*b.pv, pvc);
    const api::ClaimRef ref{pvc.namespace_(), pvc.name(), pvc.meta.uid};
    if (!pv->claim_ref || *pv->claim_ref != ref) {
      pv->claim_ref = ref;
      dirty = true;
    }
    if (b.bound_by_controller && pv->meta.Annotation(api::kAnnBoundByController) == nullptr) {
      pv->meta.annotations.emplace_back(api::kAnnBoundByController, "yes");
      std::sort(pv->meta.annotations.begin(), pv->meta.annotations.end());
      dirty = true;
    } else {
      b.bound_by_controller = false;
    }
    b.pv = pv;
    if (!dirty) continue;
    if (common::Status st = volumes_->AssumePv(pv); !st.ok()) {
      for (size_t j = 0; j < i; ++j) volumes_->RestorePv(s->bindings[j].pv->name());
      s->bindings.clear();
      s->provisions.clear();
      return framework::Status::Error(std::string(st.message()));
    }
  }
  for (size_t i = 0; i < s->provisions.size(); ++i) {
    Provision& p = s->provisions[i];
    auto pvc = std::make_shared<PersistentVolumeClaim>(*p.pvc);
    pvc->selected_node = s->node;
    p.pvc = pvc;
    if (common::Status st = volumes_->AssumePvc(pvc); !st.ok()) {
      for (const Binding& b : s->bindings) volumes_->RestorePv(b.pv->name());
      for (size_t j = 0; j < i; ++j) {
        volumes_->RestorePvc(s->provisions[j].pvc->namespace_(), s->provisions[j].pvc->name());
      }
      s->bindings.clear();
      s->provisions.clear();
      return framework::Status::Error(std::string(st.message()));
    }
  }
  return framework::Status::Success();
}

void VolumeBinding::Unreserve(framework::CycleState& state, const api::Pod& /*pod*/,
                              std::string_view /*node*/) {
  State* s = state.Get<State>(kStateKey);
  if (s == nullptr || volumes_ == nullptr) return;
  for (const Binding& b : s->bindings) volumes_->RestorePv(b.pv->name());
  for (const Provision& p : s->provisions) {
    volumes_->RestorePvc(p.pvc->namespace_(), p.pvc->name());
  }
  s->bindings.clear();
  s->provisions.clear();
}

namespace {

// upstream's checkBindings: true when every claim is fully bound; false to keep waiting; an error
// when the binding failed (claimRef reset, provisioning failed, node affinity broken).
common::StatusOr<bool> CheckBindings(const framework::VolumeView& view, const State& s) {
  for (const Binding& b : s.bindings) {
    api::PersistentVolumePtr pv = view.InformerPv(b.pv->name());
    api::PersistentVolumeClaimPtr pvc = view.InformerPvc(b.pvc->namespace_(), b.pvc->name());
    if (pv == nullptr || pvc == nullptr) {
      return common::NotFoundError("failed to check binding: persistentvolume " +
                                   Quoted(b.pv->name()) + " or its claim is gone");
    }
    if (api::CompareResourceVersions(b.written_version, pv->meta.resource_version) > 0) {
      return false;
    }
    if (!api::PvNodeAffinityMatches(*pv, s.node_labels)) {
      return common::FailedPreconditionError("pv " + Quoted(pv->name()) +
                                             " node affinity doesn't match node " + Quoted(s.node) +
                                             ": no matching NodeSelectorTerms");
    }
    if (!pv->claim_ref || pv->claim_ref->uid.empty()) {
      return common::AbortedError("ClaimRef got reset for pv " + Quoted(pv->name()));
    }
    if (!pvc->FullyBound()) return false;
  }
  for (const Provision& p : s.provisions) {
    api::PersistentVolumeClaimPtr pvc = view.InformerPvc(p.pvc->namespace_(), p.pvc->name());
    if (pvc == nullptr) {
      return common::NotFoundError("failed to check provisioning pvc: persistentvolumeclaim " +
                                   Quoted(p.pvc->name()) + " not found");
    }
    if (api::CompareResourceVersions(p.written_version, pvc->meta.resource_version) > 0) {
      return false;
    }
    if (pvc->selected_node != s.node) {
      return common::AbortedError("provisioning failed for PVC " + Quoted(pvc->name()));
    }
    if (!pvc->volume_name.empty()) {
      api::PersistentVolumePtr pv = view.InformerPv(pvc->volume_name);
      if (pv == nullptr) return false;
      if (!api::PvNodeAffinityMatches(*pv, s.node_labels)) {
        return common::FailedPreconditionError("pv " + Quoted(pv->name()) +
                                               " node affinity doesn't match node " +
                                               Quoted(s.node) + ": no matching NodeSelectorTerms");
      }
    }
    if (!pvc->FullyBound()) return false;
  }
  return true;
}

}  // namespace

framework::Status VolumeBinding::PreBind(framework::CycleState& state, const api::Pod& /*pod*/,
                                         std::string_view /*node*/) {
  State* s = state.Get<State>(kStateKey);
  if (s == nullptr || s->all_bound || volumes_ == nullptr) return framework::Status::Success();
  // bindAPIUpdate: write each binding, then each claim to provision; on failure restore the
  // assumed objects not yet written (Unreserve restores the rest).
  for (size_t i = 0; i < s->bindings.size(); ++i) {
    Binding& b = s->bindings[i];
    common::StatusOr<std::string> rv = volumes_->BindPersistentVolume(*b.pv, b.bound_by_controller);
    if (!rv.ok()) {
      for (size_t j = i; j < s->bindings.size(); ++j)
        volumes_->RestorePv(s->bindings[j].pv->name());
      for (const Provision& p : s->provisions) {
        volumes_->RestorePvc(p.pvc->namespace_(), p.pvc->name());
      }
      return framework::Status::Error("binding volumes: " + std::string(rv.status().message()));
    }
    b.written_version = *rv;
  }
  for (size_t i = 0; i < s->provisions.size(); ++i) {
    Provision& p = s->provisions[i];
    common::StatusOr<std::string> rv = volumes_->SetSelectedNode(*p.pvc, s->node);
    if (!rv.ok()) {
      for (size_t j = i; j < s->provisions.size(); ++j) {
        volumes_->RestorePvc(s->provisions[j].pvc->namespace_(), s->provisions[j].pvc->name());
      }
      return framework::Status::Error("binding volumes: " + std::string(rv.status().message()));
    }
    p.written_version = *rv;
  }
  // Wait for the PV controller (and provisioners) to finish, re-checking on every change of the
  // view and at least once a second, up to the bind timeout.
  const auto deadline = std::chrono::steady_clock::now() + args_.bind_timeout;
  while (true) {
    const uint64_t seen = volumes_->generation();
    common::StatusOr<bool> done = CheckBindings(*volumes_, *s);
    if (!done.ok()) {
      return framework::Status::Error("binding volumes: " + std::string(done.status().message()));
    }
    if (*done) return framework::Status::Success();
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) {
      return framework::Status::Error("binding volumes: context deadline exceeded");
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
    volumes_->WaitForChange(seen, std::min(left, std::chrono::milliseconds(1000)));
  }
}

std::vector<framework::ClusterEventWithHint> VolumeBinding::EventsToRegister() const {
  using framework::ClusterEvent;
  using framework::EventObjects;
  using framework::EventResource;
  using framework::QueueingHint;
  std::vector<framework::ClusterEventWithHint> events;
  // A class added, or its allowedTopologies changed.
  events.push_back(
      {ClusterEvent{EventResource::kStorageClass, framework::kAdd | framework::kUpdate},
       [](const api::Pod&, const ClusterEvent&, const EventObjects& o) {
         const auto* old_sc = static_cast<const api::StorageClass*>(o.old_obj);
         const auto* new_sc = static_cast<const api::StorageClass*>(o.new_obj);
         if (old_sc == nullptr || new_sc == nullptr) return QueueingHint::kQueue;
         return SameTopologies(old_sc->allowed_topologies, new_sc->allowed_topologies)
                    ? QueueingHint::kSkip
                    : QueueingHint::kQueue;
       }});
  // One of the pod's claims created or changed (bound by the PV controller, ...).
  events.push_back(
      {ClusterEvent{EventResource::kPersistentVolumeClaim, framework::kAdd | framework::kUpdate},
       [](const api::Pod& pod, const ClusterEvent&, const EventObjects& o) {
         const auto* pvc = static_cast<const PersistentVolumeClaim*>(o.new_obj);
         return pvc != nullptr && PodUsesClaim(pod, *pvc) ? QueueingHint::kQueue
                                                          : QueueingHint::kSkip;
       }});
  events.push_back(
      {ClusterEvent{EventResource::kPersistentVolume, framework::kAdd | framework::kUpdate},
       nullptr});
  events.push_back(
      {ClusterEvent{EventResource::kNode, framework::kAdd | framework::kUpdateNodeLabel}, nullptr});
  // A CSINode created, or its migrated-plugins annotation changed.
  events.push_back({ClusterEvent{EventResource::kCSINode, framework::kAdd | framework::kUpdate},
                    [](const api::Pod&, const ClusterEvent&, const EventObjects& o) {
                      const auto* old_node = static_cast<const api::CSINode*>(o.old_obj);
                      const auto* new_node = static_cast<const api::CSINode*>(o.new_obj);
                      if (old_node == nullptr || new_node == nullptr) return QueueingHint::kQueue;
                      return old_node->migrated_plugins == new_node->migrated_plugins
                                 ? QueueingHint::kSkip
                                 : QueueingHint::kQueue;
                    }});
  // A CSI driver of one of the pod's inline CSI volumes stopped tracking storage capacity.
  events.push_back({ClusterEvent{EventResource::kCSIDriver, framework::kUpdate},
                    [](const api::Pod& pod, const ClusterEvent&, const EventObjects& o) {
                      const auto* old_d = static_cast<const api::CSIDriver*>(o.old_obj);
                      const auto* new_d = static_cast<const api::CSIDriver*>(o.new_obj);
                      if (old_d == nullptr || new_d == nullptr || pod.volumes == nullptr) {
                        return QueueingHint::kSkip;
                      }
                      for (const api::PodVolume& v : pod.volumes->volumes) {
                        if (v.source != api::InlineSource::kCsi || v.csi_driver != new_d->name)
                          continue;
                        if (old_d->storage_capacity && !new_d->storage_capacity)
                          return QueueingHint::kQueue;
                      }
                      return QueueingHint::kSkip;
                    }});
  return events;
}

}  // namespace gpusched::plugins::volume_binding
