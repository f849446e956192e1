// SPDX-License-Identifier: Apache-2.0
#include "src/plugins/node_volume_limits/node_volume_limits.h"

#include <algorithm>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>

#include "src/api/storage.h"
#include "src/api/volume.h"
#include "src/framework/volume_view.h"
#include "src/plugins/helper/args.h"
#include "src/plugins/names.h"

namespace gpusched::plugins::node_volume_limits {
namespace {

using api::InlineSource;
using api::PodVolume;

// The in-tree volume plugins CSI migration translates (csi-translation-lib), always migrated
// where the node has a CSINode (upstream's isCSIMigrationOn).
struct InTree {
  InlineSource source;
  std::string_view plugin;
  std::string_view driver;
};
constexpr InTree kInTree[] = {
    {InlineSource::kAwsElasticBlockStore, "kubernetes.io/aws-ebs", "ebs.csi.aws.com"},
    {InlineSource::kGcePersistentDisk, "kubernetes.io/gce-pd", "pd.csi.storage.gke.io"},
    {InlineSource::kAzureDisk, "kubernetes.io/azure-disk", "disk.csi.azure.com"},
    {InlineSource::kCinder, "kubernetes.io/cinder", "cinder.csi.openstack.org"},
};

const InTree* InTreeBySource(InlineSource s) {
  for (const InTree& t : kInTree) {
    if (t.source == s) return &t;
  }
  return nullptr;
}

const InTree* InTreeByPlugin(std::string_view plugin) {
  for (const InTree& t : kInTree) {
    if (t.plugin == plugin) return &t;
  }
  return nullptr;
}

// One attachable volume. `migrated`: an in-tree volume, counted only where the node has a CSINode.
struct Volume {
  std::string driver;
  std::string handle;
  bool migrated = false;
  bool Same(const Volume& o) const { return driver == o.driver && handle == o.handle; }
};

// The CSI volume handle of an in-tree volume, as the translation writes it (EBS: the volume ID
// without its "aws://<zone>/" prefix).
std::string TranslatedHandle(const InTree& t, std::string_view id) {
  if (t.source == InlineSource::kAwsElasticBlockStore && id.starts_with("aws://")) {
    return std::string(id.substr(id.rfind('/') + 1));
  }
  if (t.source == InlineSource::kGcePersistentDisk) {
    return "projects/UNSPECIFIED/zones/UNSPECIFIED/disks/" + std::string(id);
  }
  return std::string(id);
}

void AddUnique(std::vector<Volume>& out, Volume v) {
  for (const Volume& o : out) {
    if (o.Same(v)) return;
  }
  out.push_back(std::move(v));
}

// getCSIDriverInfo: the claim's PV's CSI driver and handle (an in-tree PV translated), or for a
// claim without a PV its class's provisioner with a handle unique to the claim. False: nothing
// to count (no class, an unknown class, a PV of a plugin that is not migrated).
bool ResolveClaim(const framework::VolumeView& view, const api::PersistentVolumeClaim& pvc,
                  Volume& out) {
  if (!pvc.volume_name.empty()) {
    if (api::PersistentVolumePtr pv = view.GetPv(pvc.volume_name)) {
      if (!pv->csi_driver.empty()) {
        out = Volume{pv->csi_driver, pv->csi_volume_handle, false};
        return !out.handle.empty();
      }
      const InTree* t = InTreeBySource(pv->in_tree_source);
      if (t == nullptr) return false;
      out = Volume{std::string(t->driver), TranslatedHandle(*t, pv->in_tree_id), true};
      return true;
    }
  }
  if (pvc.storage_class.empty()) return false;
  api::StorageClassPtr sc = view.GetStorageClass(pvc.storage_class);
  if (sc == nullptr || sc->provisioner.empty()) return false;
  std::string handle = "unbound-" + pvc.namespace_() + "/" + pvc.name();
  if (const InTree* t = InTreeByPlugin(sc->provisioner)) {
    out = Volume{std::string(t->driver), std::move(handle), true};
  } else {
    out = Volume{sc->provisioner, std::move(handle), false};
  }
  return true;
}

bool OwnedByPod(const api::PersistentVolumeClaim& pvc, const api::Pod& pod) {
  for (const api::OwnerReference& ref : pvc.meta.owner_references) {
    if (ref.controller) return ref.uid == pod.meta.uid;
  }
  return false;
}

bool Counts(const PodVolume& v) { return v.IsClaim() || InTreeBySource(v.source) != nullptr; }

struct State final : framework::StateData {
  std::vector<Volume> mine;
  std::unordered_map<const api::Pod*, std::vector<Volume>> placed;
  std::vector<api::CSINodePtr> csi_nodes;  // by node index
};

const framework::StateKey kStateKey = {"PreFilterNodeVolumeLimits"};

// The unique volumes of driver `driver` on the node's pods (the first of equal ones counts).
int64_t AttachedCount(const State& s, const framework::NodeInfo& node, std::string_view driver) {
  int64_t count = 0;
  for (size_t pi = 0; pi < node.pods.size(); ++pi) {
    auto it = s.placed.find(node.pods[pi].get());
    if (it == s.placed.end()) continue;
    for (size_t vi = 0; vi < it->second.size(); ++vi) {
      const Volume& v = it->second[vi];
      if (v.driver != driver) continue;
      bool seen = false;
      for (size_t pj = 0; pj <= pi && !seen; ++pj) {
        auto jt = pj == pi ? it : s.placed.find(node.pods[pj].get());
        if (jt == s.placed.end()) continue;
        const size_t end = pj == pi ? vi : jt->second.size();
        for (size_t vj = 0; vj < end; ++vj) {
          if (jt->second[vj].Same(v)) {
            seen = true;
            break;
          }
        }
      }
      if (!seen) ++count;
    }
  }
  return count;
}

bool AttachedOnNode(const State& s, const framework::NodeInfo& node, const Volume& v) {
  for (const api::PodPtr& p : node.pods) {
    auto it = s.placed.find(p.get());
    if (it == s.placed.end()) continue;
    for (const Volume& o : it->second) {
      if (o.Same(v)) return true;
    }
  }
  return false;
}

}  // namespace

common::StatusOr<framework::PluginPtr> NodeVolumeLimits::Create(const boost::json::value& args,
                                                                framework::Handle& handle) {
  GPUSCHED_RETURN_IF_ERROR(helper::ReadNoArgs(args));
  return framework::PluginPtr(std::make_unique<NodeVolumeLimits>(handle.volumes()));
}

std::string_view NodeVolumeLimits::Name() const { return names::kNodeVolumeLimits; }

framework::Status NodeVolumeLimits::PreFilter(framework::CycleState& state, const api::Pod& pod,
                                              const framework::Snapshot& snapshot) {
  if (volumes_ == nullptr || pod.volumes == nullptr ||
      std::none_of(pod.volumes->volumes.begin(), pod.volumes->volumes.end(), Counts)) {
    return framework::Status::Skip();
  }
  auto s = std::make_unique<State>();
  for (const PodVolume& v : pod.volumes->volumes) {
    Volume resolved;
    if (v.IsClaim()) {
      api::PersistentVolumeClaimPtr pvc = volumes_->GetPvc(pod.meta.namespace_, v.claim_name);
      if (pvc == nullptr) {
        return framework::Status::WithMessage(framework::Code::kUnschedulableAndUnresolvable,
                                              "looking up PVC " + pod.meta.namespace_ + "/" +
                                                  v.claim_name + ": persistentvolumeclaim \"" +
                                                  v.claim_name + "\" not found");
      }
      if (v.ephemeral && !OwnedByPod(*pvc, pod)) {
        return framework::Status::WithMessage(
            framework::Code::kUnschedulableAndUnresolvable,
            "PVC " + pvc->namespace_() + "/" + pvc->name() + " was not created for pod " +
                pod.meta.namespace_ + "/" + pod.meta.name + " (pod is not owner)");
      }
      if (ResolveClaim(*volumes_, *pvc, resolved)) AddUnique(s->mine, std::move(resolved));
    } else if (const InTree* t = InTreeBySource(v.source)) {
      AddUnique(s->mine, Volume{std::string(t->driver), TranslatedHandle(*t, v.disk_id), true});
    }
  }
  if (s->mine.empty()) return framework::Status::Skip();
  // The placed pods' volumes and the nodes' CSINodes, once for this cycle.
  s->csi_nodes.resize(snapshot.nodes().size());
  for (const framework::NodeInfo& n : snapshot.nodes()) {
    if (!n.valid()) continue;
    s->csi_nodes[static_cast<size_t>(n.index)] = volumes_->GetCSINode(n.name());
    for (const api::PodPtr& p : n.pods) {
      if (p->volumes == nullptr) continue;
      std::vector<Volume> vols;
      for (const PodVolume& v : p->volumes->volumes) {
        Volume resolved;
        if (v.IsClaim()) {
          api::PersistentVolumeClaimPtr pvc = volumes_->GetPvc(p->meta.namespace_, v.claim_name);
          if (pvc != nullptr && ResolveClaim(*volumes_, *pvc, resolved)) {
            AddUnique(vols, std::move(resolved));
          }
        } else if (const InTree* t = InTreeBySource(v.source)) {
          AddUnique(vols, Volume{std::string(t->driver), TranslatedHandle(*t, v.disk_id), true});
        }
      }
      if (!vols.empty()) s->placed.emplace(p.get(), std::move(vols));
    }
  }
  state.Write(kStateKey, std::move(s));
  return framework::Status::Success();
}

framework::Status NodeVolumeLimits::Filter(const framework::CycleState& state,
                                           const api::Pod& /*pod*/,
                                           const framework::NodeInfo& node) const {
  const State* s = state.Get<State>(kStateKey);
  if (s == nullptr) return framework::Status::Success();
  const auto index = static_cast<size_t>(node.index);
  const api::CSINode* csi_node = index < s->csi_nodes.size() ? s->csi_nodes[index].get() : nullptr;
  if (csi_node == nullptr) return framework::Status::Success();  // no limits known
  for (size_t i = 0; i < s->mine.size(); ++i) {
    const std::string& driver = s->mine[i].driver;
    bool checked = false;  // an earlier volume of the same driver
    for (size_t j = 0; j < i && !checked; ++j) checked = s->mine[j].driver == driver;
    if (checked) continue;
    const api::CSINodeDriver* d = csi_node->Driver(driver);
    if (d == nullptr || !d->allocatable_count) continue;
    int64_t fresh = 0;
    for (const Volume& v : s->mine) {
      if (v.driver == driver && !AttachedOnNode(*s, node, v)) ++fresh;
    }
    if (fresh == 0) continue;
    if (AttachedCount(*s, node, driver) + fresh > *d->allocatable_count) {
      return framework::Status::Unschedulable(kReasonMaxVolumeCountExceeded);
    }
  }
  return framework::Status::Success();
}

std::vector<framework::ClusterEventWithHint> NodeVolumeLimits::EventsToRegister() const {
  using framework::ClusterEvent;
  using framework::EventObjects;
  using framework::EventResource;
  using framework::QueueingHint;
  std::vector<framework::ClusterEventWithHint> events;
  events.push_back({ClusterEvent{EventResource::kCSINode, framework::kAdd}, nullptr});
  // A driver's limit raised.
  events.push_back({ClusterEvent{EventResource::kCSINode, framework::kUpdate},
                    [](const api::Pod&, const ClusterEvent&, const EventObjects& o) {
                      const auto* old_node = static_cast<const api::CSINode*>(o.old_obj);
                      const auto* new_node = static_cast<const api::CSINode*>(o.new_obj);
                      if (old_node == nullptr || new_node == nullptr) return QueueingHint::kQueue;
                      for (const api::CSINodeDriver& d : new_node->drivers) {
                        const api::CSINodeDriver* before = old_node->Driver(d.name);
                        const int32_t old_limit =
                            before ? before->allocatable_count.value_or(0) : 0;
                        if (d.allocatable_count.value_or(0) > old_limit)
                          return QueueingHint::kQueue;
                      }
                      return QueueingHint::kSkip;
                    }});
  // A placed pod with claims or migratable volumes deleted.
  events.push_back({ClusterEvent{EventResource::kAssignedPod, framework::kDelete},
                    [](const api::Pod&, const ClusterEvent&, const EventObjects& o) {
                      const api::Pod* deleted = o.old_pod;
                      if (deleted == nullptr || deleted->volumes == nullptr ||
                          (deleted->node_name.empty() && deleted->nominated_node_name.empty())) {
                        return QueueingHint::kSkip;
                      }
                      const auto& v = deleted->volumes->volumes;
                      return std::any_of(v.begin(), v.end(), Counts) ? QueueingHint::kQueue
                                                                     : QueueingHint::kSkip;
                    }});
  // One of the pod's claims created.
  events.push_back({ClusterEvent{EventResource::kPersistentVolumeClaim, framework::kAdd},
                    [](const api::Pod& pod, const ClusterEvent&, const EventObjects& o) {
                      const auto* pvc = static_cast<const api::PersistentVolumeClaim*>(o.new_obj);
                      if (pvc == nullptr || pod.volumes == nullptr ||
                          pvc->namespace_() != pod.meta.namespace_) {
                        return QueueingHint::kSkip;
                      }
                      for (const PodVolume& v : pod.volumes->volumes) {
                        if (v.claim_name == pvc->name()) return QueueingHint::kQueue;
                      }
                      return QueueingHint::kSkip;
                    }});
  return events;
}

}  // namespace gpusched::plugins::node_volume_limits
