// SPDX-License-Identifier: Apache-2.0
#include "src/framework/queueing_hints.h"

namespace gpusched::framework {

namespace {

std::string_view ResourceName(EventResource r) {
  switch (r) {
    case EventResource::kNode: return "Node";
    case EventResource::kAssignedPod: return "AssignedPod";
    case EventResource::kUnscheduledPod: return "UnschedulablePod";
    case EventResource::kPersistentVolume: return "PersistentVolume";
    case EventResource::kPersistentVolumeClaim: return "PersistentVolumeClaim";
    case EventResource::kStorageClass: return "StorageClass";
    case EventResource::kCSINode: return "CSINode";
    case EventResource::kCSIDriver: return "CSIDriver";
    case EventResource::kPodGroup: return "PodGroup";
    case EventResource::kResourceClaim: return "ResourceClaim";
    case EventResource::kResourceSlice: return "ResourceSlice";
    case EventResource::kDeviceClass: return "DeviceClass";
    case EventResource::kWildCard: return "*";
  }
  return "?";
}

std::string_view ActionName(uint32_t action) {
  switch (action) {
    case kAdd: return "Add";
    case kDelete: return "Delete";
    case kUpdateNodeAllocatable: return "UpdateNodeAllocatable";
    case kUpdateNodeLabel: return "UpdateNodeLabel";
    case kUpdateNodeTaint: return "UpdateNodeTaint";
    case kUpdateNodeCondition: return "UpdateNodeCondition";
    case kUpdateNodeAnnotation: return "UpdateNodeAnnotation";
    case kUpdatePodLabel: return "UpdatePodLabel";
    case kUpdatePodScaleDown: return "UpdatePodScaleDown";
    case kUpdatePodToleration: return "UpdatePodToleration";
    case kUpdatePodSchedulingGatesEliminated: return "UpdatePodSchedulingGatesEliminated";
    case kUpdateOther: return "Update";
    default: break;
  }
  if ((action & ~static_cast<uint32_t>(kUpdate)) == 0) return "Update";
  return "All";
}

}  // namespace

std::string EventLabel(const ClusterEvent& event) {
  std::string label(ResourceName(event.resource));
  label += ActionName(event.actions);
  return label;
}

}  // namespace gpusched::framework
