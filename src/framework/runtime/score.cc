// SPDX-License-Identifier: Apache-2.0
// Framework::RunScore: PreScore, then each Score plugin's raw scores (reused per node from the
// result cache where the plugin is node-local), NormalizeScore, × weight, summed into the totals.
#include <algorithm>

#include "src/framework/runtime/framework.h"
#include "src/framework/runtime/timers.h"

namespace gpusched::framework::runtime {

Status Framework::RunScore(CycleState& state, const api::Pod& pod, const Snapshot& snapshot,
                           std::span<const NodeIndex> nodes, std::span<int64_t> totals,
                           std::vector<ScoreBreakdown>* breakdown) {
  if (Status s = RunPreScore(state, pod, snapshot, nodes); !s.ok()) return s;
  PointTimer score_timer(metrics_, metrics::Point::kScore);
  if (breakdown != nullptr) {
    breakdown->assign(nodes.size(), ScoreBreakdown{});
    for (size_t i = 0; i < nodes.size(); ++i) (*breakdown)[i].node = nodes[i];
  }
  if (plugin_scores_.size() < nodes.size()) plugin_scores_.resize(nodes.size());  // only grows
  ResultCache::Class* reuse =
      breakdown == nullptr ? PrepareScoreReuse(state, snapshot, nodes) : nullptr;
  // Node-local plugins score stale_nodes_ with reuse, else every node (explain: each one).
  if (breakdown == nullptr) {
    PrepareTwinScores(snapshot,
                      reuse != nullptr ? std::span<const NodeIndex>(stale_nodes_) : nodes);
  } else {
    twin_list_ = {};
  }
  // totals is written by the first plugin that runs (=) and added to by the others (+=), in
  // plugin order; it is zero-filled only when no plugin runs.
  bool totals_written = false;
  tie_rule_ = ScorePlugin::TieBreak::kNone;
  tie_plugin_ = {};
  for (size_t j = 0; j < score_.size(); ++j) {
    if (state.skip_score()[j]) continue;
    Status s =
        ScoreWithPlugin(j, state, pod, snapshot, nodes, reuse, totals, totals_written, breakdown);
    if (!s.ok()) return score_timer.Done(s);
  }
  if (!totals_written) std::fill(totals.begin(), totals.end(), 0);
  if (breakdown != nullptr) {
    for (size_t i = 0; i < nodes.size(); ++i) (*breakdown)[i].total = totals[i];
  }
  if (reuse != nullptr) {
    const std::span<const uint64_t> gens = snapshot.generations();
    for (NodeIndex n : stale_nodes_)
      reuse->MarkScored(static_cast<size_t>(n), gens[static_cast<size_t>(n)]);
  }
  return score_timer.Done(Status::Success());
}

Status Framework::RunPreScore(CycleState& state, const api::Pod& pod, const Snapshot& snapshot,
                              std::span<const NodeIndex> nodes) {
  PointTimer pre_timer(metrics_, metrics::Point::kPreScore);
  state.skip_score().assign(score_.size(), false);
  for (size_t i = 0; i < pre_score_.size(); ++i) {
    PluginTimer pt(metrics_ ? m_pre_score_[i] : nullptr, sample_plugins_);
    Status s = pt.Done(pre_score_[i]->PreScore(state, pod, snapshot, nodes));
    if (s.ok()) continue;
    if (s.IsSkip()) {
      if (pre_score_to_score_[i] >= 0)
        state.skip_score()[static_cast<size_t>(pre_score_to_score_[i])] = true;
      continue;
    }
    s.WithPlugin(pre_score_[i]->Name());
    return pre_timer.Done(s.IsError()
                              ? s
                              : Status::Error("PreScore " + std::string(pre_score_[i]->Name()) +
                                              ": " + s.ToString()));
  }
  pre_timer.Record(Status::Success());
  return Status::Success();
}

// Score reuse per plugin (reuse_ is set by SchedulePod when Filter reuse is on): the raw scores of
// every node-local Score plugin that runs are stored per class, and only nodes whose generation
// moved are scored by them; a plugin that is not node-local is scored afresh over all `nodes` and
// stores nothing. The signature names the stored columns (a skipped plugin and a cross-node one
// both store none, so pods of one class that differ only in whether a cross-node plugin runs share
// the stored columns) and the StateVersion each was stored under. Returns the class to use, or
// null; fills stale_nodes_ (the nodes to score afresh) and score_stored_.
ResultCache::Class* Framework::PrepareScoreReuse(const CycleState& state, const Snapshot& snapshot,
                                                 std::span<const NodeIndex> nodes) {
  ResultCache::Class* reuse = reuse_;
  if (reuse == nullptr) return nullptr;
  reuse_signature_.clear();
  score_stored_.assign(score_.size(), 0);
  bool any_stored = false;
  for (size_t j = 0; j < score_.size(); ++j) {
    const bool stored = !state.skip_score()[j] && score_[j].plugin->NodeLocal();
    score_stored_[j] = stored ? 1 : 0;
    any_stored = any_stored || stored;
    reuse_signature_.push_back(stored ? 0 : 1);
    reuse_signature_.push_back(stored ? score_[j].plugin->StateVersion() : 0);
  }
  if (!any_stored) return nullptr;
  const std::span<const uint64_t> gens = snapshot.generations();
  result_cache_.PrepareScores(*reuse, reuse_signature_, score_.size());
  stale_nodes_.clear();
  const uint64_t* scored_gen = reuse->score_generations();
  for (NodeIndex n : nodes) {
    if (scored_gen[n] != gens[static_cast<size_t>(n)]) stale_nodes_.push_back(n);  // !HasScores
  }
  stale_scores_.resize(stale_nodes_.size());
  result_cache_.stats().score_evaluated += stale_nodes_.size();
  result_cache_.stats().score_reused += nodes.size() - stale_nodes_.size();
  return reuse;
}

// Score plugin j over `nodes`: raw scores (from the stored column where reuse keeps them), the
// tie-break keys when it sets the cycle's rule, NormalizeScore, then × weight into `totals`.
Status Framework::ScoreWithPlugin(size_t j, CycleState& state, const api::Pod& pod,
                                  const Snapshot& snapshot, std::span<const NodeIndex> nodes,
                                  ResultCache::Class* reuse, std::span<int64_t> totals,
                                  bool& totals_written, std::vector<ScoreBreakdown>* breakdown) {
  const Scored& sp = score_[j];
  const int64_t w = sp.weight;
  const size_t num = nodes.size();
  const bool normalize = sp.plugin->HasNormalizeScore();
  std::span<int64_t> scores(plugin_scores_.data(), num);
  // The first plugin with a tie-break rule sets it; kRawScore keeps its raw scores.
  bool keep_raw = false;
  if (tie_rule_ == ScorePlugin::TieBreak::kNone) {
    tie_rule_ = sp.plugin->TieBreakRule();
    if (tie_rule_ != ScorePlugin::TieBreak::kNone) tie_plugin_ = sp.plugin->Name();
    keep_raw = tie_rule_ == ScorePlugin::TieBreak::kRawScore;
    if (keep_raw && tie_keys_.size() < num) tie_keys_.resize(num);  // only grows
  }
  const int64_t* raw = scores.data();
  if (reuse != nullptr && score_stored_[j] != 0) {
    PluginTimer pt(metrics_ ? m_score_[j] : nullptr, sample_plugins_);
    if (!stale_nodes_.empty())
      ScoreOrShare(*sp.plugin, state, pod, snapshot, stale_nodes_, stale_scores_);
    pt.Record(Status::Success());
    for (size_t k = 0; k < stale_nodes_.size(); ++k) {
      reuse->SetScore(static_cast<size_t>(stale_nodes_[k]), j, stale_scores_[k]);
    }
    const int64_t* column = reuse->ScoreColumn(j);
    if (keep_raw) {
      for (size_t i = 0; i < num; ++i) tie_keys_[i] = column[nodes[i]];
    }
    if (!normalize && breakdown == nullptr) {
      // Stored raw scores that need no normalization go straight into the totals.
      AddWeighted(totals, column, nodes, w, totals_written);
      return Status::Success();
    }
    for (size_t i = 0; i < num; ++i) scores[i] = column[nodes[i]];
  } else {
    PluginTimer pt(metrics_ ? m_score_[j] : nullptr, sample_plugins_);
    ScoreOrShare(*sp.plugin, state, pod, snapshot, nodes, scores);
    pt.Record(Status::Success());
    if (keep_raw) std::copy(scores.begin(), scores.end(), tie_keys_.begin());
  }
  if (breakdown != nullptr) {  // explain only: keep the raw scores (in words) before normalizing
    for (size_t i = 0; i < num; ++i) {
      (*breakdown)[i].by_plugin.push_back(
          PluginScore{sp.plugin->Name(), raw[i], raw[i], sp.weight, 0,
                      sp.plugin->ExplainScore(state, pod, snapshot.at(nodes[i]), raw[i])});
    }
  }
  if (normalize) {
    Status s = sp.plugin->NormalizeScore(state, pod, scores);
    if (!s.ok()) {
      s.WithPlugin(sp.plugin->Name());
      return s;
    }
  }
  AddWeighted(totals, scores.data(), {}, w, totals_written);
  if (breakdown != nullptr) {
    for (size_t i = 0; i < num; ++i) {
      PluginScore& ps = (*breakdown)[i].by_plugin.back();
      ps.normalized = scores[i];
      ps.weighted = scores[i] * w;
    }
  }
  return Status::Success();
}

// totals[i] (=, the first time, else +=) w × scores[nodes[i]] (a stored column, indexed by node),
// or w × scores[i] when `nodes` is empty.
void Framework::AddWeighted(std::span<int64_t> totals, const int64_t* scores,
                            std::span<const NodeIndex> nodes, int64_t w, bool& totals_written) {
  int64_t* const tot = totals.data();
  const size_t num = totals.size();
  if (nodes.empty()) {
    if (totals_written) {
      for (size_t i = 0; i < num; ++i) tot[i] += scores[i] * w;
    } else {
      for (size_t i = 0; i < num; ++i) tot[i] = scores[i] * w;
    }
  } else if (totals_written) {
    for (size_t i = 0; i < num; ++i) tot[i] += scores[nodes[i]] * w;
  } else {
    for (size_t i = 0; i < num; ++i) tot[i] = scores[nodes[i]] * w;
  }
  totals_written = true;
}

}  // namespace gpusched::framework::runtime
