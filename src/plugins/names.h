// SPDX-License-Identifier: Apache-2.0
// Names of the built-in plugins, as written in a KubeSchedulerConfiguration.
#pragma once

#include <string_view>

namespace gpusched::plugins::names {

inline constexpr std::string_view kPrioritySort = "PrioritySort";
inline constexpr std::string_view kNodeUnschedulable = "NodeUnschedulable";
inline constexpr std::string_view kNodeName = "NodeName";
inline constexpr std::string_view kNodeResourcesFit = "NodeResourcesFit";
inline constexpr std::string_view kTaintToleration = "TaintToleration";
inline constexpr std::string_view kNodeAffinity = "NodeAffinity";
inline constexpr std::string_view kGpuFit = "GpuFit";
// The seed's name for the GPU plugin; accepted as an alias of GpuFit.
inline constexpr std::string_view kGpuTopologyPluginAlias = "GPUTopologyPlugin";
// Fragmentation-aware GPU placement (FGD) and the FGD paper's baselines.
inline constexpr std::string_view kGpuFragmentation = "GpuFragmentation";
inline constexpr std::string_view kDefaultBinder = "DefaultBinder";
// Priority preemption (PostFilter).
inline constexpr std::string_view kDefaultPreemption = "DefaultPreemption";
// Moves opted-in pods to make room (PostFilter, after DefaultPreemption).
inline constexpr std::string_view kConsolidation = "Consolidation";
inline constexpr std::string_view kPodTopologySpread = "PodTopologySpread";
inline constexpr std::string_view kInterPodAffinity = "InterPodAffinity";
// Network-locality scoring (and NetworkAware NetworkOverhead/TopologicalSort semantics).
inline constexpr std::string_view kNetworkLocality = "NetworkLocality";
// Host-port conflicts (Filter), as upstream's nodeports.
inline constexpr std::string_view kNodePorts = "NodePorts";
// Balance of the resource fractions a pod would leave on a node (Score).
inline constexpr std::string_view kNodeResourcesBalancedAllocation =
    "NodeResourcesBalancedAllocation";
// Prefers nodes that already hold the pod's container images (Score).
inline constexpr std::string_view kImageLocality = "ImageLocality";
// All-or-nothing placement of gangs (PreFilter, Filter, Reserve, Permit).
inline constexpr std::string_view kGangScheduling = "GangScheduling";
// Volumes (issue #22): PV/PVC binding, PV zones, conflicting volumes, per-node attach limits.
inline constexpr std::string_view kVolumeBinding = "VolumeBinding";
inline constexpr std::string_view kVolumeZone = "VolumeZone";
inline constexpr std::string_view kVolumeRestrictions = "VolumeRestrictions";
inline constexpr std::string_view kNodeVolumeLimits = "NodeVolumeLimits";
// Dynamic Resource Allocation (issue #23): claims allocated from ResourceSlices.
inline constexpr std::string_view kDynamicResources = "DynamicResources";

}  // namespace gpusched::plugins::names
