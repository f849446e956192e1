// SPDX-License-Identifier: Apache-2.0
#include "src/plugins/volume_restrictions/volume_restrictions.h"

#include <algorithm>
#include <memory>
#include <string>
#include <utility>

#include "src/api/storage.h"
#include "src/api/volume.h"
#include "src/framework/volume_view.h"
#include "src/plugins/helper/args.h"
#include "src/plugins/names.h"

namespace gpusched::plugins::volume_restrictions {
namespace {

using api::InlineSource;
using api::PodVolume;

struct State final : framework::StateData {
  bool disks = false;          // the pod has an inline disk to check
  bool rwop_conflict = false;  // a ReadWriteOncePod claim of the pod is in use
};

const framework::StateKey kStateKey = {"PreFilterVolumeRestrictions"};

bool NeedsCheck(const PodVolume& v) {
  return v.source == InlineSource::kGcePersistentDisk ||
         v.source == InlineSource::kAwsElasticBlockStore || v.source == InlineSource::kRbd ||
         v.source == InlineSource::kIscsi;
}

bool Overlap(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  return std::any_of(a.begin(), a.end(), [&](const std::string& x) {
    return std::find(b.begin(), b.end(), x) != b.end();
  });
}

// upstream's isVolumeConflict for one pair of volumes.
bool Conflicts(const PodVolume& v, const PodVolume& e) {
  if (v.source != e.source) return false;
  const bool both_read_only = v.read_only && e.read_only;
  switch (v.source) {
    case InlineSource::kGcePersistentDisk: return v.disk_id == e.disk_id && !both_read_only;
    case InlineSource::kAwsElasticBlockStore: return v.disk_id == e.disk_id;
    case InlineSource::kIscsi: return v.disk_id == e.disk_id && !both_read_only;
    case InlineSource::kRbd:
      return Overlap(v.monitors, e.monitors) && v.rbd_pool == e.rbd_pool &&
             v.disk_id == e.disk_id && !both_read_only;
    default: return false;
  }
}

bool PodConflicts(const api::Pod& pod, const api::Pod& existing) {
  if (existing.volumes == nullptr) return false;
  for (const PodVolume& v : pod.volumes->volumes) {
    if (!NeedsCheck(v)) continue;
    for (const PodVolume& e : existing.volumes->volumes) {
      if (Conflicts(v, e)) return true;
    }
  }
  return false;
}

// The claims (persistentVolumeClaim volumes only, as upstream) the pod names.
bool UsesClaim(const api::Pod& pod, std::string_view ns, std::string_view claim) {
  if (pod.volumes == nullptr || pod.meta.namespace_ != ns) return false;
  return std::any_of(pod.volumes->volumes.begin(), pod.volumes->volumes.end(),
                     [&](const PodVolume& v) { return !v.ephemeral && v.claim_name == claim; });
}

}  // namespace

common::StatusOr<framework::PluginPtr> VolumeRestrictions::Create(const boost::json::value& args,
                                                                  framework::Handle& handle) {
  GPUSCHED_RETURN_IF_ERROR(helper::ReadNoArgs(args));
  return framework::PluginPtr(std::make_unique<VolumeRestrictions>(handle.volumes()));
}

std::string_view VolumeRestrictions::Name() const { return names::kVolumeRestrictions; }

framework::Status VolumeRestrictions::PreFilter(framework::CycleState& state, const api::Pod& pod,
                                                const framework::Snapshot& snapshot) {
  if (pod.volumes == nullptr) return framework::Status::Skip();
  auto s = std::make_unique<State>();
  s->disks = std::any_of(pod.volumes->volumes.begin(), pod.volumes->volumes.end(), NeedsCheck);
  std::vector<const std::string*> rwop;
  if (volumes_ != nullptr) {
    for (const PodVolume& v : pod.volumes->volumes) {
      if (!v.IsClaim() || v.ephemeral) continue;
      api::PersistentVolumeClaimPtr pvc = volumes_->GetPvc(pod.meta.namespace_, v.claim_name);
      if (pvc == nullptr) {
        return framework::Status::WithMessage(
            framework::Code::kUnschedulableAndUnresolvable,
            "persistentvolumeclaim \"" + v.claim_name + "\" not found");
      }
      if ((pvc->access_modes & api::kReadWriteOncePod) != 0) rwop.push_back(&v.claim_name);
    }
  }
  // IsPVCUsedByPods: a pod placed on a node (assumed ones included) uses the claim.
  for (const std::string* claim : rwop) {
    for (const framework::NodeInfo& n : snapshot.nodes()) {
      if (!n.valid()) continue;
      for (const api::PodPtr& p : n.pods) {
        if (p->meta.uid != pod.meta.uid && UsesClaim(*p, pod.meta.namespace_, *claim)) {
          s->rwop_conflict = true;
          break;
        }
      }
      if (s->rwop_conflict) break;
    }
  }
  if (!s->disks && !s->rwop_conflict) return framework::Status::Skip();
  state.Write(kStateKey, std::move(s));
  return framework::Status::Success();
}

framework::Status VolumeRestrictions::Filter(const framework::CycleState& state,
                                             const api::Pod& pod,
                                             const framework::NodeInfo& node) const {
  const State* s = state.Get<State>(kStateKey);
  if (s == nullptr) return framework::Status::Success();
  if (s->disks) {
    for (const api::PodPtr& existing : node.pods) {
      if (PodConflicts(pod, *existing)) {
        return framework::Status::Unschedulable(kReasonDiskConflict);
      }
    }
  }
  if (s->rwop_conflict) return framework::Status::Unschedulable(kReasonReadWriteOncePodConflict);
  return framework::Status::Success();
}

std::vector<framework::ClusterEventWithHint> VolumeRestrictions::EventsToRegister() const {
  using framework::ClusterEvent;
  using framework::EventObjects;
  using framework::EventResource;
  using framework::QueueingHint;
  std::vector<framework::ClusterEventWithHint> events;
  // A pod deleted that held a conflicting disk or one of the pod's claims.
  events.push_back({ClusterEvent{EventResource::kAssignedPod, framework::kDelete},
                    [](const api::Pod& pod, const ClusterEvent&, const EventObjects& o) {
                      const api::Pod* deleted = o.old_pod;
                      if (deleted == nullptr || pod.volumes == nullptr ||
                          deleted->meta.namespace_ != pod.meta.namespace_) {
                        return QueueingHint::kSkip;
                      }
                      if (PodConflicts(pod, *deleted)) return QueueingHint::kQueue;
                      for (const PodVolume& v : pod.volumes->volumes) {
                        if (v.IsClaim() && !v.ephemeral &&
                            UsesClaim(*deleted, pod.meta.namespace_, v.claim_name)) {
                          return QueueingHint::kQueue;
                        }
                      }
                      return QueueingHint::kSkip;
                    }});
  events.push_back({ClusterEvent{EventResource::kNode, framework::kAdd}, nullptr});
  // One of the pod's claims created.
  events.push_back({ClusterEvent{EventResource::kPersistentVolumeClaim, framework::kAdd},
                    [](const api::Pod& pod, const ClusterEvent&, const EventObjects& o) {
                      const auto* pvc = static_cast<const api::PersistentVolumeClaim*>(o.new_obj);
                      return pvc != nullptr && UsesClaim(pod, pvc->namespace_(), pvc->name())
                                 ? QueueingHint::kQueue
                                 : QueueingHint::kSkip;
                    }});
  return events;
}

}  // namespace gpusched::plugins::volume_restrictions
