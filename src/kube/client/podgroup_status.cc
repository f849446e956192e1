// SPDX-License-Identifier: Apache-2.0
// The PodGroup status writes of KubeApiClient (api_writer.h): the patches and paths of the
// scheduler-plugins, Volcano and native PodGroups' status subresources.
#include <boost/json.hpp>

#include "src/kube/client/api_writer.h"
#include "src/kube/client/encoding.h"

namespace gpusched::kube::client {

namespace json = boost::json;

namespace {

// A status.conditions array of one condition, every field set.
json::array OneCondition(std::string_view type, bool status, std::string_view reason,
                         std::string_view message, common::TimePoint now) {
  json::object cond;
  cond["type"] = type;
  cond["status"] = status ? "True" : "False";
  cond["reason"] = reason;
  cond["message"] = message;
  cond["lastTransitionTime"] = FormatRfc3339(now);
  json::array conditions;
  conditions.push_back(std::move(cond));
  return conditions;
}

}  // namespace

json::object BuildPodGroupStatusPatch(const api::PodGroup& group, const api::PodGroupStatus& status,
                                      common::TimePoint now) {
  json::object st;
  if (group.api == api::GangApi::kNative) {
    // Upstream's condition only; a strategic merge patch merges it by type, so other writers'
    // conditions stay.
    st["conditions"] =
        OneCondition(api::kNativeInitiallyScheduled, !status.unschedulable,
                     status.unschedulable ? status.reason : std::string(api::kNativePhaseScheduled),
                     status.message, now);
  } else {
    st["phase"] = status.phase;
    st["running"] = status.running;
    st["succeeded"] = status.succeeded;
    st["failed"] = status.failed;
    if (group.api == api::GangApi::kVolcano) {
      st["conditions"] =
          OneCondition("Unschedulable", status.unschedulable,
                       status.unschedulable ? status.reason : "Scheduled", status.message, now);
    }
  }
  json::object patch;
  patch["status"] = std::move(st);
  return patch;
}

std::string PodGroupStatusPath(const api::PodGroup& group) {
  std::string_view version = api::kPodGroupApiVersion;
  if (group.api == api::GangApi::kVolcano) version = api::kVolcanoApiVersion;
  if (group.api == api::GangApi::kNative) {
    version = group.api_version.empty() ? api::kNativePodGroupApiVersions[0] : group.api_version;
  }
  return "/apis/" + std::string(version) + "/namespaces/" + group.namespace_ + "/podgroups/" +
         group.name + "/status";
}

}  // namespace gpusched::kube::client
