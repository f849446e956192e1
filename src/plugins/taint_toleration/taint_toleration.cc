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

const framework::StateKey kPreFilterKey{"TaintToleration/PreFilter"};

struct TaintReason {
  common::Atom key;
  common::Atom value;
  std::string_view reason;  // interned
};

bool KeyLess(const TaintReason& a, const TaintReason& b) {
  return a.key != b.key ? a.key < b.key : a.value < b.value;
}

struct PreFilterState final : framework::StateData {
  std::vector<TaintReason> reasons;  // sorted by (key, value), unique
};

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

bool SameTaints(std::span<const api::Taint> a, std::span<const api::Taint> b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].key != b[i].key || a[i].value != b[i].value || a[i].effect != b[i].effect) {
      return false;
    }
  }
  return true;
}

}  // namespace

common::StatusOr<framework::PluginPtr> TaintToleration::Create(const boost::json::value& args,
                                                               framework::Handle& /*handle*/) {
  helper::ArgErrors errors;
  if (const boost::json::object* obj = helper::ArgsObject(args, errors)) {
    helper::CheckKnownFields(*obj, "", {}, errors, /*allow_type_meta=*/true);
  }
  GPUSCHED_RETURN_IF_ERROR(errors.ToStatus());
  return framework::PluginPtr(std::make_unique<TaintToleration>());
}

std::string_view TaintToleration::Name() const { return names::kTaintToleration; }

framework::Status TaintToleration::PreFilter(framework::CycleState& state, const api::Pod& pod,
                                             const framework::Snapshot& snapshot) {
  const uint64_t version = snapshot.node_set_version();
  if (version == 0 || &snapshot != memo_snapshot_ || version != memo_version_ ||
      snapshot.nodes().size() != memo_slots_) {
    // Nodes of one node group carry equal taint lists: keep each distinct list once (checked
    // against the previous list, and against all lists while there are few).
    constexpr size_t kFullDedupe = 64;
    memo_taint_lists_.clear();
    for (const framework::NodeInfo& n : snapshot.nodes()) {
      if (!n.valid() || n.node->taints.empty()) continue;
      const std::span<const api::Taint> taints = n.node->taints;
      bool seen = false;
      if (memo_taint_lists_.size() <= kFullDedupe) {
        for (const auto& l : memo_taint_lists_) {
          if (SameTaints(l, taints)) {
            seen = true;
            break;
          }
        }
      } else {
        seen = SameTaints(memo_taint_lists_.back(), taints);
      }
      if (!seen) memo_taint_lists_.emplace_back(taints.begin(), taints.end());
    }
    memo_snapshot_ = version == 0 ? nullptr : &snapshot;
    memo_version_ = version;
    memo_slots_ = snapshot.nodes().size();
  }
  auto s = std::make_unique<PreFilterState>();
  for (const std::vector<api::Taint>& taints : memo_taint_lists_) {
    const api::Taint* t =
        helper::FindMatchingUntoleratedTaint(taints, pod.tolerations, helper::IsDoNotScheduleTaint);
    if (t == nullptr) continue;
    TaintReason r{t->key, t->value, {}};
    auto it = std::lower_bound(s->reasons.begin(), s->reasons.end(), r, KeyLess);
    if (it != s->reasons.end() && it->key == r.key && it->value == r.value) continue;
    std::string text = "node(s) had untolerated taint {";
    text += common::Str(t->key);
    text += ": ";
    text += common::Str(t->value);
    text += "}";
    r.reason = common::Str(common::Intern(text));
    s->reasons.insert(it, r);
  }
  state.Write(kPreFilterKey, std::move(s));
  return framework::Status::Success();
}

framework::Status TaintToleration::Filter(const framework::CycleState& state, const api::Pod& pod,
                                          const framework::NodeInfo& node) const {
  const api::Taint* t = helper::FindMatchingUntoleratedTaint(node.node->taints, pod.tolerations,
                                                             helper::IsDoNotScheduleTaint);
  if (t == nullptr) return framework::Status::Success();
  if (const PreFilterState* s = state.Get<PreFilterState>(kPreFilterKey)) {
    const TaintReason probe{t->key, t->value, {}};
    auto it = std::lower_bound(s->reasons.begin(), s->reasons.end(), probe, KeyLess);
    if (it != s->reasons.end() && it->key == t->key && it->value == t->value) {
      return framework::Status::Unresolvable(it->reason);
    }
  }
  return framework::Status::Unresolvable(kReasonUntoleratedGeneric);
}

int64_t TaintToleration::Score(const framework::CycleState& /*state*/, const api::Pod& pod,
                               const framework::NodeInfo& node) const {
  return CountIntolerablePreferNoSchedule(pod, node);
}

void TaintToleration::ScoreNodes(const framework::CycleState& /*state*/, const api::Pod& pod,
                                 const framework::Snapshot& snapshot,
                                 std::span<const framework::NodeIndex> nodes,
                                 std::span<int64_t> out) const {
  for (size_t i = 0; i < nodes.size(); ++i) {
    out[i] = CountIntolerablePreferNoSchedule(pod, snapshot.at(nodes[i]));
  }
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

}  // namespace gpusched::plugins::taint_toleration
