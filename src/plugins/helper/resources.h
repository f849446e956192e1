// SPDX-License-Identifier: Apache-2.0
// Resource-name classification and request defaults shared by resource plugins
// (k8s.io/kubernetes pkg/apis/core/v1/helper and pkg/scheduler/util).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "src/api/types.h"
#include "src/common/interner.h"
#include "src/framework/dra_view.h"

namespace gpusched::plugins::helper {

// Requests assumed for a container that requests no CPU / no memory, when scoring
// (schedutil.DefaultMilliCPURequest, DefaultMemoryRequest).
inline constexpr int64_t kDefaultMilliCpuRequest = 100;
inline constexpr int64_t kDefaultMemoryRequest = 200LL * 1024 * 1024;

// A native resource: no '/', or a "kubernetes.io/" prefixed name.
bool IsNativeResourceName(std::string_view name);
// An extended resource ("nvidia.com/gpu"): not native, not "requests."-prefixed, and of the form
// prefix/name.
bool IsExtendedResourceName(std::string_view name);
// The group of a resource name: the part before the first '/' ("nvidia.com" for "nvidia.com/gpu").
std::string_view ResourceGroup(std::string_view name);

// The pod's CPU (millicores) and memory (bytes) requests with kDefault*Request substituted for
// each container (and init container) that requests none; used by scoring so that pods without
// requests still count (resourcehelper.PodRequests with NonMissingContainerRequests).
struct NonZeroRequest {
  int64_t milli_cpu = 0;
  int64_t memory = 0;
};
NonZeroRequest PodNonZeroRequest(const api::Pod& pod);

// Whether the pod's whole GPUs (nvidia.com/gpu, not a share) go through DRA on `node`: the node
// does not advertise nvidia.com/gpu and a DeviceClass backs it (KEP-5004; `dra` null: none).
// GpuFit and GpuFragmentation then leave them to DynamicResources.
bool GpusLeftToDra(const framework::DraView* dra, const api::Pod& pod, const api::Node& node);

// Whether the node's GPU model is one of `wanted` (api::GpuModelMatches); false for no model.
bool GpuModelMatchesAny(common::Atom node_model, std::span<const common::Atom> wanted);

}  // namespace gpusched::plugins::helper
