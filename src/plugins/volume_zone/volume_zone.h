// SPDX-License-Identifier: Apache-2.0
// VolumeZone: PreFilter and Filter that keep a pod whose bound PersistentVolumes carry zone or
// region labels (topology.kubernetes.io/{zone,region} and their failure-domain.beta.kubernetes.io
// forms; a value may list several zones joined by "__") off nodes in another zone or region
// (kube-scheduler's volumezone plugin). Unbound claims of a WaitForFirstConsumer class are left to
// VolumeBinding. Reads the cluster through Handle::volumes(); without one, or for a pod without
// persistentVolumeClaim volumes, PreFilter returns Skip. No args.
#pragma once

#include <boost/json/fwd.hpp>
#include <string_view>
#include <vector>

#include "src/api/types.h"
#include "src/common/status.h"
#include "src/framework/handle.h"
#include "src/framework/plugin.h"
#include "src/framework/registry.h"

namespace gpusched::plugins::volume_zone {

// Filter reason (UnschedulableAndUnresolvable).
inline constexpr std::string_view kReasonConflict = "node(s) had no available volume zone";

class VolumeZone final : public framework::PreFilterPlugin,
                         public framework::FilterPlugin,
                         public framework::EnqueueExtensions {
 public:
  static common::StatusOr<framework::PluginPtr> Create(const boost::json::value& args,
                                                       framework::Handle& handle);
  explicit VolumeZone(framework::VolumeView* volumes) : volumes_(volumes) {}

  std::string_view Name() const override;
  framework::Status PreFilter(framework::CycleState& state, const api::Pod& pod,
                              const framework::Snapshot& snapshot) override;
  framework::Status Filter(const framework::CycleState& state, const api::Pod& pod,
                           const framework::NodeInfo& node) const override;
  std::vector<framework::ClusterEventWithHint> EventsToRegister() const override;

 private:
  framework::VolumeView* volumes_;  // null: no volume data (Skip)
};

}  // namespace gpusched::plugins::volume_zone
