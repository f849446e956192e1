// SPDX-License-Identifier: Apache-2.0
// GangPolicyObject: a gang policy object as an informer stores it (gang.h): its metadata (name,
// uid, resourceVersion: what the informer compares) and the policies it defines — one for a
// scheduler-plugins or Volcano PodGroup, one per pod group of a Workload.
#pragma once

#include <boost/json/fwd.hpp>
#include <vector>

#include "src/api/gang.h"
#include "src/api/types.h"
#include "src/common/status.h"

namespace gpusched::api {

struct GangPolicyObject {
  ObjectMeta meta;
  std::vector<PodGroupPtr> groups;
};

// A PodGroup of either API (by apiVersion) or a Workload (kind Workload); errors as
// DecodePodGroup / DecodeWorkload.
common::StatusOr<GangPolicyObject> DecodeGangPolicyObject(const boost::json::value& json);

}  // namespace gpusched::api
