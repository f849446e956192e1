// SPDX-License-Identifier: Apache-2.0
// NodeVolumeLimits: PreFilter and Filter that keep a node's attached CSI volumes within what its
// CSINode allows per driver (spec.drivers[].allocatable.count), kube-scheduler's nodevolumelimits
// (CSILimits) plugin. Counted, each unique (driver, volume handle) once per node: the CSI volumes
// of the pods' bound claims, the in-tree EBS, GCE PD, Azure Disk and Cinder volumes (bound or
// inline) translated to their CSI drivers where the node has a CSINode (CSI migration), and each
// unbound claim of a class with a provisioner as a new volume of that driver. A node whose count
// would exceed a limit: Unschedulable "node(s) exceed max volume count".
//
// PreFilter returns Skip for a pod without claims or migratable inline volumes. It resolves the
// volumes of the pod and of every placed pod with volumes once per cycle (claims, PVs, classes,
// CSINodes through Handle::volumes()), so Filter only counts, allocating nothing. VolumeAttachments
// are not read (a volume still attached after its pod left is not counted). No args.
#pragma once

#include <boost/json/fwd.hpp>
#include <string_view>
#include <vector>

#include "src/api/types.h"
#include "src/common/status.h"
#include "src/framework/handle.h"
#include "src/framework/plugin.h"
#include "src/framework/registry.h"

namespace gpusched::plugins::node_volume_limits {

// Filter reason (Unschedulable).
inline constexpr std::string_view kReasonMaxVolumeCountExceeded = "node(s) exceed max volume count";

class NodeVolumeLimits final : public framework::PreFilterPlugin,
                               public framework::FilterPlugin,
                               public framework::EnqueueExtensions {
 public:
  static common::StatusOr<framework::PluginPtr> Create(const boost::json::value& args,
                                                       framework::Handle& handle);
  explicit NodeVolumeLimits(framework::VolumeView* volumes) : volumes_(volumes) {}

  std::string_view Name() const override;
  framework::Status PreFilter(framework::CycleState& state, const api::Pod& pod,
                              const framework::Snapshot& snapshot) override;
  framework::Status Filter(const framework::CycleState& state, const api::Pod& pod,
                           const framework::NodeInfo& node) const override;
  std::vector<framework::ClusterEventWithHint> EventsToRegister() const override;

 private:
  framework::VolumeView* volumes_;  // null: Skip
};

}  // namespace gpusched::plugins::node_volume_limits
