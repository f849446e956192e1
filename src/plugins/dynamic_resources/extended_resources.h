// SPDX-License-Identifier: Apache-2.0
// Extended resources backed by DRA (KEP-5004): the requests of the claim the scheduler makes for
// a pod that asks for an extended resource (`nvidia.com/gpu: 2`) on a node that does not
// advertise it but whose devices a DeviceClass maps to it, and which container each request
// serves — written as upstream's scheduler writes them, so the kubelet and the DRA driver read
// our claims as theirs:
//   - one request per container and resource, named "container-<i>-request-<j>" (i: the
//     container's index in initContainers + containers; j: the resource's index in the
//     container's requests sorted by name), `exactly` the class, ExactCount, the container's
//     quantity;
//   - an init container that is not a sidecar first reuses the requests of the long-lived
//     containers after it (sidecars, regular containers) and asks only for the rest; of those
//     init containers only the largest request is kept, and all of them map to it;
//   - requests sorted by name; mappings: the long-lived containers', then the init containers'.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "src/api/dra.h"
#include "src/api/types.h"
#include "src/common/interner.h"

namespace gpusched::plugins::dynamic_resources {

// A pod's extended resource and the DeviceClass that backs it.
struct BackedResource {
  common::Atom name;
  std::string device_class;
};

struct ExtendedResourceRequests {
  std::vector<api::DeviceRequest> requests;
  std::vector<api::ContainerExtendedResourceRequest> mappings;
};

// The claim requests and container mappings for `resources` (sorted by name, as strings).
ExtendedResourceRequests BuildExtendedResourceRequests(const api::Pod& pod,
                                                       std::span<const BackedResource> resources);

}  // namespace gpusched::plugins::dynamic_resources
