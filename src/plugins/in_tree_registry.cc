// SPDX-License-Identifier: Apache-2.0
#include "src/plugins/in_tree_registry.h"

#include <string>

#include "src/common/check.h"
#include "src/plugins/consolidation/consolidation.h"
#include "src/plugins/default_binder/default_binder.h"
#include "src/plugins/default_preemption/default_preemption.h"
#include "src/plugins/dynamic_resources/dynamic_resources.h"
#include "src/plugins/gang_scheduling/gang_scheduling.h"
#include "src/plugins/gpu_fit/gpu_fit.h"
#include "src/plugins/gpu_fragmentation/gpu_fragmentation.h"
#include "src/plugins/image_locality/image_locality.h"
#include "src/plugins/inter_pod_affinity/inter_pod_affinity.h"
#include "src/plugins/names.h"
#include "src/plugins/network_locality/network_locality.h"
#include "src/plugins/node_affinity/node_affinity.h"
#include "src/plugins/node_name/node_name.h"
#include "src/plugins/node_ports/node_ports.h"
#include "src/plugins/node_resources_balanced_allocation/node_resources_balanced_allocation.h"
#include "src/plugins/node_resources_fit/node_resources_fit.h"
#include "src/plugins/node_unschedulable/node_unschedulable.h"
#include "src/plugins/node_volume_limits/node_volume_limits.h"
#include "src/plugins/pod_topology_spread/pod_topology_spread.h"
#include "src/plugins/priority_sort/priority_sort.h"
#include "src/plugins/taint_toleration/taint_toleration.h"
#include "src/plugins/volume_binding/volume_binding.h"
#include "src/plugins/volume_restrictions/volume_restrictions.h"
#include "src/plugins/volume_zone/volume_zone.h"

namespace gpusched::plugins {

const framework::Registry& InTreeRegistry() {
  static const framework::Registry* const registry = [] {
    auto* r = new framework::Registry();
    GPUSCHED_CHECK(RegisterInTreePlugins(*r).ok());  // an empty registry takes every name
    return r;
  }();
  return *registry;
}

common::Status RegisterInTreePlugins(framework::Registry& registry) {
  struct Entry {
    std::string_view name;
    framework::PluginFactory factory;
  };
  const Entry entries[] = {
      {names::kPrioritySort, &priority_sort::PrioritySort::Create},
      {names::kNodeUnschedulable, &node_unschedulable::NodeUnschedulable::Create},
      {names::kNodeName, &node_name::NodeName::Create},
      {names::kNodeResourcesFit, &node_resources_fit::NodeResourcesFit::Create},
      {names::kTaintToleration, &taint_toleration::TaintToleration::Create},
      {names::kNodeAffinity, &node_affinity::NodeAffinity::Create},
      {names::kGpuFit, &gpu_fit::GpuFit::Create},
      {names::kGpuFragmentation, &gpu_fragmentation::GpuFragmentation::Create},
      {names::kDefaultBinder, &default_binder::DefaultBinder::Create},
      {names::kDefaultPreemption, &default_preemption::DefaultPreemption::Create},
      {names::kConsolidation, &consolidation::Consolidation::Create},
      {names::kPodTopologySpread, &pod_topology_spread::PodTopologySpread::Create},
      {names::kInterPodAffinity, &inter_pod_affinity::InterPodAffinity::Create},
      {names::kGangScheduling, &gang_scheduling::GangScheduling::Create},
      {names::kNetworkLocality, &network_locality::NetworkLocality::Create},
      {names::kNodePorts, &node_ports::NodePorts::Create},
      {names::kNodeResourcesBalancedAllocation,
       &node_resources_balanced_allocation::BalancedAllocation::Create},
      {names::kImageLocality, &image_locality::ImageLocality::Create},
      {names::kVolumeBinding, &volume_binding::VolumeBinding::Create},
      {names::kVolumeZone, &volume_zone::VolumeZone::Create},
      {names::kVolumeRestrictions, &volume_restrictions::VolumeRestrictions::Create},
      {names::kNodeVolumeLimits, &node_volume_limits::NodeVolumeLimits::Create},
      {names::kDynamicResources, &dynamic_resources::DynamicResources::Create},
  };
  for (const Entry& e : entries) {
    GPUSCHED_RETURN_IF_ERROR(registry.Register(std::string(e.name), e.factory));
  }
  // The seed's name for GpuFit: the same factory, and one instance if a profile names both.
  return registry.RegisterAlias(std::string(names::kGpuTopologyPluginAlias),
                                std::string(names::kGpuFit));
}

}  // namespace gpusched::plugins
