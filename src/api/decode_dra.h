// SPDX-License-Identifier: Apache-2.0
// Decoders of the Dynamic Resource Allocation objects (resource.k8s.io/v1; dra.h): DeviceClass,
// ResourceSlice, DeviceTaintRule, ResourceClaim and ResourceClaimTemplate, from the API server's
// JSON (or a YAML manifest converted to JSON) straight into the compact structs. As decode.h: the
// first error is returned naming the object, the field path and the value, e.g.
//   resourceslice node-1-gpu: spec.devices[0].capacity.memory.value: invalid quantity "lots"
//   resourceclaim default/train: spec.devices.requests[0].exactly.allocationMode: invalid value
//   "Some" (want ExactCount or All)
// Attribute and capacity names without a domain get the slice's driver as their domain, as
// upstream qualifies them. Nothing here throws.
#pragma once

#include <boost/json/fwd.hpp>

#include "src/api/dra.h"
#include "src/common/status.h"

namespace gpusched::api {

common::StatusOr<DeviceClass> DecodeDeviceClass(const boost::json::value& json);
common::StatusOr<ResourceSlice> DecodeResourceSlice(const boost::json::value& json);
common::StatusOr<DeviceTaintRule> DecodeDeviceTaintRule(const boost::json::value& json);
common::StatusOr<ResourceClaim> DecodeResourceClaim(const boost::json::value& json);
common::StatusOr<ResourceClaimTemplate> DecodeResourceClaimTemplate(const boost::json::value& json);

}  // namespace gpusched::api
