// SPDX-License-Identifier: Apache-2.0
#include "src/plugins/helper/queueing_hints.h"

#include <algorithm>
#include <bit>

#include "src/api/dra.h"
#include "src/api/gpu.h"
#include "src/plugins/helper/taints.h"

namespace gpusched::plugins::helper {

namespace {

int32_t HealthyDevices(const api::NodeGpuInfo& g) {
  const uint32_t present = g.count >= 32 ? ~0U : ((1U << g.count) - 1U);
  return g.count - std::popcount(g.unhealthy_mask & present);
}

bool ModelAccepted(const api::GpuRequest& req, common::Atom node_model) {
  if (req.models.empty()) return true;
  if (node_model.empty()) return false;
  return std::any_of(req.models.begin(), req.models.end(), [&](common::Atom want) {
    return api::GpuModelMatches(common::Str(node_model), common::Str(want));
  });
}

}  // namespace

bool RequestsFitAllocatable(const api::Pod& pod, const api::Node& node) {
  const api::ResourceList& req = pod.requests;
  const api::ResourceList& alloc = node.allocatable;
  if (req.milli_cpu > alloc.milli_cpu || req.memory > alloc.memory ||
      req.ephemeral_storage > alloc.ephemeral_storage) {
    return false;
  }
  return std::all_of(req.scalar.begin(), req.scalar.end(),
                     [&](const auto& r) { return alloc.Get(r.first) >= r.second; });
}

bool RequestedAllocatableIncreased(const api::Pod& pod, const api::Node& old_node,
                                   const api::Node& node) {
  const api::ResourceList& req = pod.requests;
  const api::ResourceList& a = old_node.allocatable;
  const api::ResourceList& b = node.allocatable;
  if ((req.milli_cpu > 0 && b.milli_cpu > a.milli_cpu) || (req.memory > 0 && b.memory > a.memory) ||
      (req.ephemeral_storage > 0 && b.ephemeral_storage > a.ephemeral_storage) || b.pods > a.pods) {
    return true;
  }
  return std::any_of(req.scalar.begin(), req.scalar.end(),
                     [&](const auto& r) { return b.Get(r.first) > a.Get(r.first); });
}

bool RequestedResourceScaledDown(const api::Pod& pod, const api::Pod& old_pod,
                                 const api::Pod& new_pod) {
  const api::ResourceList& req = pod.requests;
  const api::ResourceList& a = old_pod.requests;
  const api::ResourceList& b = new_pod.requests;
  if ((req.milli_cpu > 0 && b.milli_cpu < a.milli_cpu) || (req.memory > 0 && b.memory < a.memory) ||
      (req.ephemeral_storage > 0 && b.ephemeral_storage < a.ephemeral_storage)) {
    return true;
  }
  if (!pod.gpu.empty() && !(old_pod.gpu == new_pod.gpu)) return true;
  return std::any_of(req.scalar.begin(), req.scalar.end(),
                     [&](const auto& r) { return b.Get(r.first) < a.Get(r.first); });
}

bool GpuNodeCouldHost(const api::Pod& pod, const api::Node& node) {
  const api::GpuRequest& req = pod.gpu;
  if (req.empty()) return true;
  const api::NodeGpuInfo& g = node.gpu;
  if (g.count <= 0 || HealthyDevices(g) < req.count) return false;
  if (!ModelAccepted(req, g.model)) return false;
  if (req.min_device_memory_mib > 0 &&
      (g.memory_mib <= 0 || req.min_device_memory_mib > g.memory_mib)) {
    return false;
  }
  return !req.shared() || api::ResolveGpuShare(req, g).has_value();
}

bool HeldGpus(const api::Pod& assigned) { return !assigned.gpu.empty(); }

bool ToleratesNode(const api::Pod& pod, const api::Node& node) {
  return FindMatchingUntoleratedTaint(node.taints, pod.tolerations, IsDoNotScheduleTaint) ==
         nullptr;
}

framework::QueueingHint GpuAfterPodEvent(const api::Pod& pod, const framework::ClusterEvent& event,
                                         const framework::EventObjects& o) {
  using framework::QueueingHint;
  if (pod.gpu.empty()) return QueueingHint::kQueue;  // rejected for another reason (gpu_error)
  if (o.new_node != nullptr && !GpuNodeCouldHost(pod, *o.new_node)) return QueueingHint::kSkip;
  if ((event.actions & framework::kDelete) != 0) {
    return o.old_pod == nullptr || HeldGpus(*o.old_pod) ? QueueingHint::kQueue
                                                        : QueueingHint::kSkip;
  }
  if (o.old_pod == nullptr || o.new_pod == nullptr) return QueueingHint::kQueue;
  return HeldGpus(*o.old_pod) && !(o.old_pod->gpu == o.new_pod->gpu) ? QueueingHint::kQueue
                                                                     : QueueingHint::kSkip;
}

framework::QueueingHint GpuAfterNodeChange(const api::Pod& pod,
                                           const framework::ClusterEvent& /*event*/,
                                           const framework::EventObjects& o) {
  using framework::QueueingHint;
  if (o.new_node == nullptr) return QueueingHint::kQueue;
  if (!GpuNodeCouldHost(pod, *o.new_node)) return QueueingHint::kSkip;
  if (o.old_node == nullptr || !(o.old_node->gpu == o.new_node->gpu)) return QueueingHint::kQueue;
  return QueueingHint::kSkip;
}

framework::ClusterEventWithHint ExtendedResourceClassEvent() {
  using framework::QueueingHint;
  return {
      framework::ClusterEvent{framework::EventResource::kDeviceClass,
                              framework::kAdd | framework::kUpdate},
      [](const api::Pod& pod, const framework::ClusterEvent&, const framework::EventObjects& o) {
        const auto* c = static_cast<const api::DeviceClass*>(o.new_obj);
        if (c == nullptr) return QueueingHint::kQueue;
        for (const auto& [name, quantity] : pod.requests.scalar) {
          const std::string_view n = common::Str(name);
          if (n == c->extended_resource_name ||
              (n.starts_with(api::kDeviceClassResourcePrefix) &&
               n.substr(api::kDeviceClassResourcePrefix.size()) == c->name)) {
            return QueueingHint::kQueue;
          }
        }
        return QueueingHint::kSkip;
      }};
}

std::vector<framework::ClusterEventWithHint> GpuEvents() {
  using framework::ClusterEvent;
  using framework::EventResource;
  return {
      ExtendedResourceClassEvent(),
      {ClusterEvent{EventResource::kAssignedPod,
                    framework::kDelete | framework::kUpdatePodScaleDown},
       GpuAfterPodEvent},
      {ClusterEvent{EventResource::kNode, framework::kAdd | framework::kUpdateNodeAllocatable |
                                              framework::kUpdateNodeLabel |
                                              framework::kUpdateNodeAnnotation},
       GpuAfterNodeChange},
  };
}

}  // namespace gpusched::plugins::helper
