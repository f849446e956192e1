// SPDX-License-Identifier: Apache-2.0
#include "src/plugins/volume_zone/volume_zone.h"

#include <algorithm>
#include <memory>
#include <string>
#include <utility>

#include "src/api/storage.h"
#include "src/common/strings.h"
#include "src/framework/volume_view.h"
#include "src/plugins/helper/args.h"
#include "src/plugins/names.h"

namespace gpusched::plugins::volume_zone {
namespace {

constexpr std::string_view kZoneBeta = "failure-domain.beta.kubernetes.io/zone";
constexpr std::string_view kRegionBeta = "failure-domain.beta.kubernetes.io/region";
constexpr std::string_view kZone = "topology.kubernetes.io/zone";
constexpr std::string_view kRegion = "topology.kubernetes.io/region";

// The PV labels that constrain nodes, in upstream's order, with the GA key each translates to.
struct TopologyKey {
  common::Atom key;
  common::Atom ga;
};
const std::vector<TopologyKey>& TopologyKeys() {
  static const std::vector<TopologyKey> keys = {
      {common::Intern(kZoneBeta), common::Intern(kZone)},
      {common::Intern(kRegionBeta), common::Intern(kRegion)},
      {common::Intern(kZone), common::Intern(kZone)},
      {common::Intern(kRegion), common::Intern(kRegion)},
  };
  return keys;
}

// One PV label the node must satisfy: the node's value of `key` (or of its GA form) must be one
// of `values`.
struct PvTopology {
  common::Atom key;
  common::Atom ga;
  std::vector<common::Atom> values;
  bool operator==(const PvTopology&) const = default;
};

struct State final : framework::StateData {
  std::vector<PvTopology> topologies;
};

const framework::StateKey kStateKey = {"PreFilterVolumeZone"};

// The PV's zone/region constraints; a label whose value does not parse ("a____b") is ignored, as
// upstream does.
std::vector<PvTopology> PvTopologies(const api::PersistentVolume& pv) {
  std::vector<PvTopology> out;
  for (const TopologyKey& k : TopologyKeys()) {
    common::Atom value;
    if (!pv.meta.labels.Get(k.key, &value)) continue;
    PvTopology t{k.key, k.ga, {}};
    bool ok = true;
    std::string_view rest = common::Str(value);
    while (true) {
      const size_t delim = rest.find("__");
      const std::string_view zone = common::Trim(rest.substr(0, delim));
      if (zone.empty()) {
        ok = false;
        break;
      }
      t.values.push_back(common::Intern(zone));
      if (delim == std::string_view::npos) break;
      rest = rest.substr(delim + 2);
    }
    if (ok) out.push_back(std::move(t));
  }
  return out;
}

framework::Status Unresolvable(std::string message) {
  return framework::Status::WithMessage(framework::Code::kUnschedulableAndUnresolvable,
                                        std::move(message));
}

bool PodRefersToClaim(const api::Pod& pod, const api::PersistentVolumeClaim& pvc) {
  if (pod.volumes == nullptr || pod.meta.namespace_ != pvc.namespace_()) return false;
  for (const api::PodVolume& v : pod.volumes->volumes) {
    if (!v.ephemeral && v.claim_name == pvc.name()) return true;
  }
  return false;
}

}  // namespace

common::StatusOr<framework::PluginPtr> VolumeZone::Create(const boost::json::value& args,
                                                          framework::Handle& handle) {
  GPUSCHED_RETURN_IF_ERROR(helper::ReadNoArgs(args));
  return framework::PluginPtr(std::make_unique<VolumeZone>(handle.volumes()));
}

std::string_view VolumeZone::Name() const { return names::kVolumeZone; }

framework::Status VolumeZone::PreFilter(framework::CycleState& state, const api::Pod& pod,
                                        const framework::Snapshot& /*snapshot*/) {
  if (volumes_ == nullptr || pod.volumes == nullptr || !pod.volumes->has_claims) {
    return framework::Status::Skip();
  }
  auto data = std::make_unique<State>();
  for (const api::PodVolume& v : pod.volumes->volumes) {
    // Only persistentVolumeClaim volumes (not ephemeral ones), as upstream.
    if (!v.IsClaim() || v.ephemeral) continue;
    api::PersistentVolumeClaimPtr pvc = volumes_->GetPvc(pod.meta.namespace_, v.claim_name);
    if (pvc == nullptr) {
      return Unresolvable("persistentvolumeclaim \"" + v.claim_name + "\" not found");
    }
    if (pvc->volume_name.empty()) {
      if (pvc->storage_class.empty()) {
        return Unresolvable("PersistentVolumeClaim had no pv name and storageClass name");
      }
      api::StorageClassPtr sc = volumes_->GetStorageClass(pvc->storage_class);
      if (sc == nullptr) {
        return Unresolvable("storageclass.storage.k8s.io \"" + pvc->storage_class + "\" not found");
      }
      if (sc->binding_mode == api::StorageClass::BindingMode::kWaitForFirstConsumer) continue;
      return Unresolvable("PersistentVolume had no name");
    }
    api::PersistentVolumePtr pv = volumes_->GetPv(pvc->volume_name);
    if (pv == nullptr) {
      return Unresolvable("persistentvolume \"" + pvc->volume_name + "\" not found");
    }
    std::vector<PvTopology> t = PvTopologies(*pv);
    data->topologies.insert(data->topologies.end(), std::make_move_iterator(t.begin()),
                            std::make_move_iterator(t.end()));
  }
  if (data->topologies.empty()) return framework::Status::Skip();
  state.Write(kStateKey, std::move(data));
  return framework::Status::Success();
}

framework::Status VolumeZone::Filter(const framework::CycleState& state, const api::Pod& /*pod*/,
                                     const framework::NodeInfo& node) const {
  const State* s = state.Get<State>(kStateKey);
  if (s == nullptr) return framework::Status::Success();
  const api::Labels& labels = node.node->meta.labels;
  const bool constrained = std::any_of(TopologyKeys().begin(), TopologyKeys().end(),
                                       [&](const TopologyKey& k) { return labels.Has(k.key); });
  if (!constrained) return framework::Status::Success();
  for (const PvTopology& t : s->topologies) {
    common::Atom value;
    if (!labels.Get(t.key, &value) && !labels.Get(t.ga, &value)) {
      return framework::Status::Unresolvable(kReasonConflict);
    }
    if (std::find(t.values.begin(), t.values.end(), value) == t.values.end()) {
      return framework::Status::Unresolvable(kReasonConflict);
    }
  }
  return framework::Status::Success();
}

std::vector<framework::ClusterEventWithHint> VolumeZone::EventsToRegister() const {
  using framework::ClusterEvent;
  using framework::EventResource;
  using framework::QueueingHint;
  std::vector<framework::ClusterEventWithHint> events;
  // A WaitForFirstConsumer class added: a claim of it stops being an error.
  events.push_back({ClusterEvent{EventResource::kStorageClass, framework::kAdd},
                    [](const api::Pod&, const ClusterEvent&, const framework::EventObjects& o) {
                      const auto* sc = static_cast<const api::StorageClass*>(o.new_obj);
                      return sc != nullptr &&
                                     sc->binding_mode ==
                                         api::StorageClass::BindingMode::kWaitForFirstConsumer
                                 ? QueueingHint::kQueue
                                 : QueueingHint::kSkip;
                    }});
  events.push_back(
      {ClusterEvent{EventResource::kNode, framework::kAdd | framework::kUpdateNodeLabel}, nullptr});
  // A claim of the pod created or changed.
  events.push_back(
      {ClusterEvent{EventResource::kPersistentVolumeClaim, framework::kAdd | framework::kUpdate},
       [](const api::Pod& pod, const ClusterEvent&, const framework::EventObjects& o) {
         const auto* pvc = static_cast<const api::PersistentVolumeClaim*>(o.new_obj);
         return pvc != nullptr && PodRefersToClaim(pod, *pvc) ? QueueingHint::kQueue
                                                              : QueueingHint::kSkip;
       }});
  // A PV created, or its zone/region labels changed.
  events.push_back(
      {ClusterEvent{EventResource::kPersistentVolume, framework::kAdd | framework::kUpdate},
       [](const api::Pod&, const ClusterEvent&, const framework::EventObjects& o) {
         const auto* old_pv = static_cast<const api::PersistentVolume*>(o.old_obj);
         const auto* new_pv = static_cast<const api::PersistentVolume*>(o.new_obj);
         if (old_pv == nullptr || new_pv == nullptr) return QueueingHint::kQueue;
         return PvTopologies(*old_pv) == PvTopologies(*new_pv) ? QueueingHint::kSkip
                                                               : QueueingHint::kQueue;
       }});
  return events;
}

}  // namespace gpusched::plugins::volume_zone
