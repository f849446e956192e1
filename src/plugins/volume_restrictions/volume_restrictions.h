// SPDX-License-Identifier: Apache-2.0
// VolumeRestrictions: PreFilter and Filter that keep a pod off nodes where its volumes conflict
// (kube-scheduler's volumerestrictions plugin):
//   - inline disks (Unschedulable, "node(s) had no available disk"): a gcePersistentDisk of the
//     same pdName (unless both read-only), an awsElasticBlockStore of the same volumeID, an iscsi
//     volume of the same iqn (unless both read-only), an rbd image of the same pool and image
//     with an overlapping monitor (unless both read-only), used by a pod on the node;
//   - ReadWriteOncePod claims (Unschedulable, on every node): a claim of the pod with access
//     mode ReadWriteOncePod already used by a pod placed on some node.
// PreFilter returns Skip for a pod with neither. Claims are read through Handle::volumes(); without
// one, only the inline disks are checked. No args.
#pragma once

#include <boost/json/fwd.hpp>
#include <string_view>
#include <vector>

#include "src/api/types.h"
#include "src/common/status.h"
#include "src/framework/handle.h"
#include "src/framework/plugin.h"
#include "src/framework/registry.h"

namespace gpusched::plugins::volume_restrictions {

// Filter reasons (Unschedulable).
inline constexpr std::string_view kReasonDiskConflict = "node(s) had no available disk";
inline constexpr std::string_view kReasonReadWriteOncePodConflict =
    "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already "
    "in-use by another pod";

class VolumeRestrictions final : public framework::PreFilterPlugin,
                                 public framework::FilterPlugin,
                                 public framework::EnqueueExtensions {
 public:
  static common::StatusOr<framework::PluginPtr> Create(const boost::json::value& args,
                                                       framework::Handle& handle);
  explicit VolumeRestrictions(framework::VolumeView* volumes) : volumes_(volumes) {}

  std::string_view Name() const override;
  framework::Status PreFilter(framework::CycleState& state, const api::Pod& pod,
                              const framework::Snapshot& snapshot) override;
  framework::Status Filter(const framework::CycleState& state, const api::Pod& pod,
                           const framework::NodeInfo& node) const override;
  std::vector<framework::ClusterEventWithHint> EventsToRegister() const override;

 private:
  framework::VolumeView* volumes_;  // null: ReadWriteOncePod is not checked
};

}  // namespace gpusched::plugins::volume_restrictions
