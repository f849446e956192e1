// SPDX-License-Identifier: Apache-2.0
// Twin nodes (Snapshot::twins, Plugin::SameForTwinNodes): nodes that differ only in identity and
// in which pods they hold (equal aggregates) get one Filter run and one Score per group per
// cycle; the others take its result.
// Everything else — the scan order, the feasible list, NormalizeScore, weights, tie-breaks and
// random draws — sees every node, so a cycle's outcome is that of a cycle without twins
// (twins_test.cc compares them).
#include <algorithm>

#include "src/framework/runtime/framework.h"

namespace gpusched::framework::runtime {

namespace {

int32_t TwinOf(const Snapshot& snapshot, NodeIndex n) {
  const std::span<const int32_t> twins = snapshot.twins();
  return static_cast<size_t>(n) < twins.size() ? twins[static_cast<size_t>(n)] : -1;
}

// Grows `v` to `n` entries (never shrinks).
template <typename T>
void GrowTo(std::vector<T>& v, size_t n, const T& fill) {
  if (v.size() < n) v.resize(n, fill);
}

}  // namespace

void Framework::DecideTwinFilters(const CycleState& state, const api::Pod& pod,
                                  const Snapshot& snapshot, const SchedulePodOptions& options) {
  ++twin_round_;
  twin_filters_ = false;
  if (!twins_enabled_ || options.record_verdicts || snapshot.num_twin_groups() == 0) return;
  for (const FilterPlugin* f : active_filter_) {
    if (!f->NodeLocal() || !f->SameForTwinNodes(state, pod)) return;
  }
  const size_t groups = static_cast<size_t>(snapshot.num_twin_groups());
  GrowTo(twin_verdict_round_, groups, uint64_t{0});
  if (twin_verdict_.size() < groups) twin_verdict_.resize(groups);
  twin_filters_ = true;
}

Status Framework::FilterOrShare(const CycleState& state, const api::Pod& pod,
                                const Snapshot& snapshot, NodeIndex n) {
  const NodeInfo& node = snapshot.at(n);
  const int32_t t = twin_filters_ ? TwinOf(snapshot, n) : -1;
  if (t < 0) return FilterNode(state, pod, node);
  const size_t g = static_cast<size_t>(t);
  if (twin_verdict_round_[g] == twin_round_) {
    ++twin_stats_.filter_shared;
    return twin_verdict_[g];
  }
  Status s = FilterNode(state, pod, node);
  if (!s.IsError()) {  // an error ends the scan; nothing to share
    twin_verdict_round_[g] = twin_round_;
    twin_verdict_[g] = s;
  }
  return s;
}

void Framework::PrepareTwinScores(const Snapshot& snapshot, std::span<const NodeIndex> list) {
  twin_list_ = {};
  ++twin_round_;  // RunScore may run without a cycle's Filter (the extender)
  if (!twins_enabled_ || snapshot.num_twin_groups() == 0 || list.size() < 2) return;
  const size_t groups = static_cast<size_t>(snapshot.num_twin_groups());
  GrowTo(twin_rep_round_, groups, uint64_t{0});
  GrowTo(twin_rep_at_, groups, int32_t{0});
  GrowTo(twin_pick_, list.size(), int32_t{0});
  twin_reps_.clear();
  for (size_t k = 0; k < list.size(); ++k) {
    const int32_t t = TwinOf(snapshot, list[k]);
    if (t >= 0 && twin_rep_round_[static_cast<size_t>(t)] == twin_round_) {
      twin_pick_[k] = twin_rep_at_[static_cast<size_t>(t)];
      continue;
    }
    twin_pick_[k] = static_cast<int32_t>(twin_reps_.size());
    if (t >= 0) {
      twin_rep_round_[static_cast<size_t>(t)] = twin_round_;
      twin_rep_at_[static_cast<size_t>(t)] = twin_pick_[k];
    }
    twin_reps_.push_back(list[k]);
  }
  // Worth it only when some node shares its representative's scores.
  if (twin_reps_.size() < list.size()) twin_list_ = list;
}

void Framework::ScoreOrShare(ScorePlugin& plugin, const CycleState& state, const api::Pod& pod,
                             const Snapshot& snapshot, std::span<const NodeIndex> list,
                             std::span<int64_t> out) {
  const bool share = !twin_list_.empty() && list.data() == twin_list_.data() &&
                     list.size() == twin_list_.size() && plugin.NodeLocal() &&
                     plugin.SameForTwinNodes(state, pod);
  if (!share) {
    ScoreNodes(plugin, state, pod, snapshot, list, out);
    return;
  }
  GrowTo(twin_scores_, twin_reps_.size(), int64_t{0});
  ScoreNodes(plugin, state, pod, snapshot, twin_reps_,
             std::span<int64_t>(twin_scores_.data(), twin_reps_.size()));
  for (size_t k = 0; k < list.size(); ++k) {
    out[k] = twin_scores_[static_cast<size_t>(twin_pick_[k])];
  }
  twin_stats_.score_shared += list.size() - twin_reps_.size();
}

}  // namespace gpusched::framework::runtime
