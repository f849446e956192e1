// SPDX-License-Identifier: Apache-2.0
// VolumeBinding: PreFilter, Filter, Reserve, Unreserve and PreBind that place a pod only where
// its PersistentVolumeClaims can be used, and bind the unbound ones (kube-scheduler's
// volumebinding plugin and its binder):
//   - bound claims: the PV's spec.nodeAffinity must match the node;
//   - unbound claims of an Immediate class: the pod is unschedulable until the PV controller binds
//     them ("pod has unbound immediate PersistentVolumeClaims");
//   - unbound claims of a WaitForFirstConsumer class: a static PV that fits (class, size, access
//     modes, volume mode, selector, node affinity; the smallest) or dynamic provisioning (the
//     class's provisioner and allowedTopologies);
//   - Reserve assumes the chosen bindings in the volume assume cache (VolumeView), Unreserve
//     restores them; PreBind writes them (PV spec.claimRef, PVC volume.kubernetes.io/selected-node)
//     and waits until the PV controller reports every claim bound, up to bindTimeoutSeconds.
// Reads the cluster through Handle::volumes(); without one, or for a pod without claims, PreFilter
// returns Skip. Score (StorageCapacityScoring, alpha and off by default upstream) is not
// implemented; CSIStorageCapacity is not checked (every node has enough capacity).
// Args: bindTimeoutSeconds (>= 0, default 600).
#pragma once

#include <boost/json/fwd.hpp>
#include <chrono>
#include <string_view>
#include <vector>

#include "src/api/types.h"
#include "src/common/status.h"
#include "src/framework/handle.h"
#include "src/framework/plugin.h"
#include "src/framework/registry.h"

namespace gpusched::plugins::volume_binding {

// Filter reasons (UnschedulableAndUnresolvable), upstream's ConflictReasons.
inline constexpr std::string_view kReasonNodeConflict =
    "node(s) didn't match PersistentVolume's node affinity";
inline constexpr std::string_view kReasonBindConflict =
    "node(s) didn't find available persistent volumes to bind";
inline constexpr std::string_view kReasonPVNotExist =
    "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)";
// PreFilter reason (UnschedulableAndUnresolvable).
inline constexpr std::string_view kReasonUnboundImmediate =
    "pod has unbound immediate PersistentVolumeClaims";

struct Args {
  std::chrono::seconds bind_timeout{600};
};
common::StatusOr<Args> ParseArgs(const boost::json::value& raw);

class VolumeBinding final : public framework::PreFilterPlugin,
                            public framework::FilterPlugin,
                            public framework::ReservePlugin,
                            public framework::PreBindPlugin,
                            public framework::EnqueueExtensions {
 public:
  static common::StatusOr<framework::PluginPtr> Create(const boost::json::value& args,
                                                       framework::Handle& handle);
  VolumeBinding(Args args, framework::VolumeView* volumes) : args_(args), volumes_(volumes) {}

  std::string_view Name() const override;
  framework::Status PreFilter(framework::CycleState& state, const api::Pod& pod,
                              const framework::Snapshot& snapshot) override;
  framework::Status Filter(const framework::CycleState& state, const api::Pod& pod,
                           const framework::NodeInfo& node) const override;
  framework::Status Reserve(framework::CycleState& state, const api::Pod& pod,
                            const framework::NodeInfo& node) override;
  void Unreserve(framework::CycleState& state, const api::Pod& pod, std::string_view node) override;
  framework::Status PreBind(framework::CycleState& state, const api::Pod& pod,
                            std::string_view node) override;
  std::vector<framework::ClusterEventWithHint> EventsToRegister() const override;

 private:
  Args args_;
  framework::VolumeView* volumes_;  // null: no volume data (Skip)
};

}  // namespace gpusched::plugins::volume_binding
