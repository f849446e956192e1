// SPDX-License-Identifier: Apache-2.0
// The events the scheduler records about pods (FailedScheduling, Scheduled, Preempted). Private
// to src/scheduler.
#pragma once

#include <string>

#include "src/api/types.h"
#include "src/kube/api_client.h"

namespace gpusched::scheduler {

// An event about `pod`, reported by `controller` (the profile's scheduler name).
kube::EventRecord PodEvent(const api::Pod& pod, std::string type, std::string reason,
                           std::string action, std::string note, std::string controller);

}  // namespace gpusched::scheduler
