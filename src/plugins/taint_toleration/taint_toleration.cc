// SPDX-License-Identifier: Apache-2.0
#include "src/plugins/taint_toleration/taint_toleration.h"

#include <algorithm>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "src/plugins/helper/args.h"
#include "src/plugins/helper/normalize.h"
#include "src/plugins/helper/queueing_hints.h"
#include "src/plugins/helper/taints.h"
#include "src/plugins/names.h"

namespace gpusched::plugins::taint_toleration {
namespace {

bool IsPreferNoSchedule(const api::Taint& t) {
  return t.effect == api::TaintEffect::kPreferNoSchedule;
}

int64_t CountIntolerablePreferNoSchedule(const api::Pod& pod, const framework::NodeInfo& node) {
  int64_t count = 0;
  for (const api::Taint& t : node.node->taints) {
    if (IsPreferNoSchedule(t) && !helper::TolerationsTolerateTaint(pod.tolerations, t)) ++count;
  }
  return count;
}

}  // namespace

common::StatusOr<framework::PluginPtr> TaintToleration::Create(const boost::json::value& args,
                                                               framework::Handle& /*handle*/) {
  GPUSCHED_RETURN_IF_ERROR(helper::ReadNoArgs(args));
  return framework::PluginPtr(std::make_unique<TaintToleration>());
}

std::string_view TaintToleration::Name() const { return names::kTaintToleration; }

framework::Status TaintToleration::Filter(const framework::CycleState& /*state*/,
                                          const api::Pod& pod,
                                          const framework::NodeInfo& node) const {
  const api::Taint* t = helper::FindMatchingUntoleratedTaint(node.node->taints, pod.tolerations,
                                                             helper::IsDoNotScheduleTaint);
  if (t == nullptr) return framework::Status::Success();
  return framework::Status::Unresolvable(kReasonUntolerated);
}

void TaintToleration::ScoreNodes(const framework::CycleState& /*state*/, const api::Pod& pod,
                                 const framework::Snapshot& snapshot,
                                 std::span<const framework::NodeIndex> nodes,
                                 std::span<int64_t> out) const {
  framework::ScoreEach(snapshot, nodes, out, [&pod](const framework::NodeInfo& node) {
    return CountIntolerablePreferNoSchedule(pod, node);
  });
}

framework::Status TaintToleration::NormalizeScore(const framework::CycleState& /*state*/,
                                                  const api::Pod& /*pod*/,
                                                  std::span<int64_t> scores) const {
  helper::DefaultNormalizeScore(framework::kMaxNodeScore, /*reverse=*/true, scores);
  return framework::Status::Success();
}

using framework::ClusterEvent;
using framework::ClusterEventWithHint;
using framework::EventObjects;
using framework::EventResource;
using framework::QueueingHint;

namespace {

// A node whose taints the pod now tolerates (new, or untolerated before).
QueueingHint AfterNodeChange(const api::Pod& pod, const ClusterEvent& /*event*/,
                             const EventObjects& o) {
  if (o.new_node == nullptr) return QueueingHint::kQueue;
  if (!helper::ToleratesNode(pod, *o.new_node)) return QueueingHint::kSkip;
  if (o.old_node == nullptr || !helper::ToleratesNode(pod, *o.old_node)) {
    return QueueingHint::kQueue;
  }
  return QueueingHint::kSkip;
}

// The rejected pod itself got tolerations.
QueueingHint AfterPodTolerationChange(const api::Pod& pod, const ClusterEvent& /*event*/,
                                      const EventObjects& o) {
  return o.new_pod != nullptr && o.new_pod->meta.uid == pod.meta.uid ? QueueingHint::kQueue
                                                                     : QueueingHint::kSkip;
}

}  // namespace

std::vector<ClusterEventWithHint> TaintToleration::EventsToRegister() const {
  return {
      {ClusterEvent{EventResource::kNode, framework::kAdd | framework::kUpdateNodeTaint},
       AfterNodeChange},
      {ClusterEvent{EventResource::kUnscheduledPod, framework::kUpdatePodToleration},
       AfterPodTolerationChange},
  };
}

std::string TaintToleration::ExplainScore(const framework::CycleState& /*state*/,
                                          const api::Pod& /*pod*/,
                                          const framework::NodeInfo& /*node*/, int64_t raw) const {
  return std::to_string(raw) + (raw == 1 ? " PreferNoSchedule taint" : " PreferNoSchedule taints") +
         " not tolerated (fewer is better)";
}

}  // namespace gpusched::plugins::taint_toleration
