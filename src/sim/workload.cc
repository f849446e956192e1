// SPDX-License-Identifier: Apache-2.0
#include "src/sim/workload.h"

#include <fstream>
#include <memory>
#include <sstream>
#include <type_traits>
#include <variant>

#include "src/api/decode.h"
#include "src/api/gang_object.h"

namespace gpusched::sim {

namespace {

void Skipped(Workload& workload, std::string_view source, std::string_view kind,
             std::string_view name) {
  workload.warnings.push_back(std::string(source) + ": skipped " + std::string(kind) + " \"" +
                              std::string(name) +
                              "\": the simulator reads Nodes, Pods, PriorityClasses, "
                              "PodDisruptionBudgets, PodGroups and Workloads only");
}

bool IsGangPolicy(const api::OtherObject& o) {
  return (o.kind == "PodGroup" && (o.api_version == api::kPodGroupApiVersion ||
                                   o.api_version == api::kVolcanoApiVersion)) ||
         (o.kind == "Workload" && o.api_version == api::kWorkloadApiVersion);
}

}  // namespace

common::Status AppendManifests(std::string_view text, std::string_view source, Workload& workload) {
  GPUSCHED_ASSIGN_OR_RETURN(std::vector<api::Object> objects, api::DecodeManifests(text, source));
  for (auto& obj : objects) {
    if (auto* other = std::get_if<api::OtherObject>(&obj);
        other != nullptr && IsGangPolicy(*other)) {
      common::StatusOr<api::GangPolicyObject> policy = api::DecodeGangPolicyObject(other->json);
      if (!policy.ok()) {
        return common::InvalidArgumentError(std::string(source) + ": " +
                                            std::string(policy.status().message()));
      }
      for (api::PodGroupPtr& g : policy->groups) workload.pod_groups.push_back(std::move(g));
      continue;
    }
    std::visit(
        [&](auto& o) {
          using T = std::decay_t<decltype(o)>;
          if constexpr (std::is_same_v<T, api::Pod>) {
            workload.pods.push_back(std::make_shared<const api::Pod>(std::move(o)));
          } else if constexpr (std::is_same_v<T, api::Node>) {
            workload.nodes.push_back(std::make_shared<const api::Node>(std::move(o)));
          } else if constexpr (std::is_same_v<T, api::PodDisruptionBudget>) {
            workload.pdbs.push_back(std::make_shared<const api::PodDisruptionBudget>(std::move(o)));
          } else if constexpr (std::is_same_v<T, api::PriorityClass>) {
            workload.priority_classes.push_back(std::move(o));
          } else {
            Skipped(workload, source, o.kind, o.name);
          }
        },
        obj);
  }
  return common::Status::Ok();
}

common::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return common::NotFoundError(path + ": cannot open file");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return common::InvalidArgumentError(path + ": read error");
  return ss.str();
}

}  // namespace gpusched::sim
