// SPDX-License-Identifier: Apache-2.0
// Texts of the gang cycle (gang_cycle.cc, gang_preemption.cc): how a gang is named in messages,
// events and logs, and a FitError's reasons without its frame.
#pragma once

#include <string>

#include "src/api/gang.h"
#include "src/framework/runtime/framework.h"

namespace gpusched::scheduler {

// "gang PodGroup ml/train", "gang Volcano PodGroup ml/job", "gang Workload ml/llm pod group w",
// "gang PodGroup ml/train (scheduling.k8s.io)".
inline std::string DescribeGang(const api::PodGroup& g) {
  const std::string name = g.namespace_ + "/" + g.name;
  switch (g.api) {
    case api::GangApi::kVolcano: return "gang Volcano PodGroup " + name;
    case api::GangApi::kWorkload: return "gang Workload " + name + " pod group " + g.pod_group;
    case api::GangApi::kNative:
      return "gang PodGroup " + name + " (" + std::string(api::kNativeGangGroup) + ")";
    default: return "gang PodGroup " + name;
  }
}

// The reasons of a FitError without its "0/N nodes are available: " and final period.
inline std::string FitReasons(const framework::runtime::Diagnosis& d) {
  std::string msg = d.Message();
  const size_t colon = msg.find(": ");
  if (colon != std::string::npos) msg.erase(0, colon + 2);
  if (!msg.empty() && msg.back() == '.') msg.pop_back();
  return msg;
}

}  // namespace gpusched::scheduler
