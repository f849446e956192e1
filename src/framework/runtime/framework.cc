// SPDX-License-Identifier: Apache-2.0
#include "src/framework/runtime/framework.h"

#include <algorithm>
#include <map>
#include <optional>

#include "src/api/equivalence.h"

namespace gpusched::framework::runtime {

namespace {

metrics::StatusLabel LabelOf(const Status& s) { return static_cast<metrics::StatusLabel>(s.code()); }

// Times one extension point when metrics are on (no clock read otherwise).
class PointTimer {
 public:
  PointTimer(metrics::ProfileMetrics* m, metrics::Point p) : m_(m), p_(p) {
    if (m_ != nullptr) sw_.emplace();
  }
  Status Done(Status s) {
    if (m_ != nullptr && sw_) m_->ObserveExtensionPoint(p_, LabelOf(s), sw_->Seconds());
    sw_.reset();
    return s;
  }

 private:
  metrics::ProfileMetrics* m_;
  metrics::Point p_;
  std::optional<metrics::Stopwatch> sw_;
};

// Counts one plugin evaluation and times it in sampled cycles.
class PluginTimer {
 public:
  PluginTimer(metrics::PluginMetrics* m, bool sample) : m_(m) {
    if (m_ != nullptr && sample) sw_.emplace();
  }
  Status Done(Status s) {
    if (m_ == nullptr) return s;
    m_->CountEvaluations(1);
    if (sw_) m_->ObserveExecution(LabelOf(s), sw_->Seconds());
    return s;
  }

 private:
  metrics::PluginMetrics* m_;
  std::optional<metrics::Stopwatch> sw_;
};

}  // namespace
namespace {

const char* PointField(config::Point p) {
  switch (p) {
    case config::Point::kPreEnqueue: return "preEnqueue";
    case config::Point::kQueueSort: return "queueSort";
    case config::Point::kPreFilter: return "preFilter";
    case config::Point::kFilter: return "filter";
    case config::Point::kPostFilter: return "postFilter";
    case config::Point::kPreScore: return "preScore";
    case config::Point::kScore: return "score";
    case config::Point::kReserve: return "reserve";
    case config::Point::kPermit: return "permit";
    case config::Point::kPreBind: return "preBind";
    case config::Point::kBind: return "bind";
    case config::Point::kPostBind: return "postBind";
    case config::Point::kMultiPoint: return "multiPoint";
    case config::Point::kCount: break;
  }
  return "?";
}

bool Implements(Plugin* p, config::Point point) {
  switch (point) {
    case config::Point::kQueueSort: return dynamic_cast<QueueSortPlugin*>(p) != nullptr;
    case config::Point::kPreFilter: return dynamic_cast<PreFilterPlugin*>(p) != nullptr;
    case config::Point::kFilter: return dynamic_cast<FilterPlugin*>(p) != nullptr;
    case config::Point::kPostFilter: return dynamic_cast<PostFilterPlugin*>(p) != nullptr;
    case config::Point::kPreScore: return dynamic_cast<PreScorePlugin*>(p) != nullptr;
    case config::Point::kScore: return dynamic_cast<ScorePlugin*>(p) != nullptr;
    case config::Point::kReserve: return dynamic_cast<ReservePlugin*>(p) != nullptr;
    case config::Point::kPermit: return dynamic_cast<PermitPlugin*>(p) != nullptr;
    case config::Point::kPreBind: return dynamic_cast<PreBindPlugin*>(p) != nullptr;
    case config::Point::kBind: return dynamic_cast<BindPlugin*>(p) != nullptr;
    case config::Point::kPostBind: return dynamic_cast<PostBindPlugin*>(p) != nullptr;
    default: return false;
  }
}

void AddUnique(std::vector<std::string>& v, std::string_view s) {
  if (std::find(v.begin(), v.end(), s) == v.end()) v.emplace_back(s);
}

}  // namespace

std::string Diagnosis::Message() const {
  std::string msg = "0/" + std::to_string(num_nodes) + " nodes are available:";
  if (!pre_filter_status.ok()) {
    msg += " ";
    msg += pre_filter_status.reason();
    msg += ".";
  } else {
    std::vector<std::string> items;
    items.reserve(reason_counts.size());
    for (const auto& [reason, count] : reason_counts) {
      items.push_back(std::to_string(count) + " " + std::string(reason));
    }
    std::sort(items.begin(), items.end());
    if (!items.empty()) {
      msg += " ";
      for (size_t i = 0; i < items.size(); ++i) {
        if (i > 0) msg += ", ";
        msg += items[i];
      }
      msg += ".";
    }
  }
  if (!post_filter_messages.empty()) {
    msg += " ";
    for (size_t i = 0; i < post_filter_messages.size(); ++i) {
      if (i > 0) msg += ", ";
      msg += post_filter_messages[i];
    }
    msg += ".";
  }
  return msg;
}

common::StatusOr<std::unique_ptr<Framework>> Framework::Create(const config::Profile& profile,
                                                               int32_t default_percentage,
                                                               const Registry& registry,
                                                               Handle& handle) {
  std::unique_ptr<Framework> fw(new Framework());
  fw->scheduler_name_ = profile.scheduler_name;
  fw->percentage_ = profile.percentage_of_nodes_to_score.value_or(default_percentage);

  std::map<std::string, Plugin*, std::less<>> instances;
  common::Status first_error;
  // Returns the plugin named `name`, creating it on first use; nullptr with first_error set if
  // unknown or its args are invalid.
  auto get = [&](std::string_view requested, std::string_view path) -> Plugin* {
    std::string_view name = registry.Canonical(requested);
    if (auto it = instances.find(name); it != instances.end()) return it->second;
    const PluginFactory* factory = registry.Find(name);
    if (factory == nullptr) {
      if (first_error.ok()) {
        first_error = common::InvalidArgumentError(std::string(path) + ": unknown plugin \"" +
                                                   std::string(requested) + "\"");
      }
      return nullptr;
    }
    static const boost::json::value kEmptyArgs = boost::json::object();
    const boost::json::value* args = profile.ArgsFor(name);
    if (args == nullptr) args = profile.ArgsFor(requested);
    auto created = (*factory)(args ? *args : kEmptyArgs, handle);
    if (!created.ok()) {
      if (first_error.ok()) {
        first_error = created.status().WithContext(profile.path + ".pluginConfig[" +
                                                   std::string(name) + "].args");
      }
      return nullptr;
    }
    Plugin* raw = created->get();
    fw->owned_.push_back(std::move(created).value());
    instances.emplace(std::string(name), raw);
    return raw;
  };

  // A multiPoint name that is not registered implements nothing; the user's own multiPoint entries
  // are checked below so that an unknown one is reported with its path.
  config::Plugins effective = config::EffectivePlugins(
      profile, [&](std::string_view name, config::Point point) {
        if (registry.Find(name) == nullptr) return false;
        Plugin* p = get(name, profile.path + ".plugins.multiPoint");
        return p != nullptr && Implements(p, point);
      });
  GPUSCHED_RETURN_IF_ERROR(first_error);
  const auto& multi = profile.plugins.at(config::Point::kMultiPoint).enabled;
  for (size_t k = 0; k < multi.size(); ++k) {
    if (multi[k].name != "*" && registry.Find(multi[k].name) == nullptr) {
      std::string path = multi[k].path.empty()
                             ? profile.path + ".plugins.multiPoint.enabled[" + std::to_string(k) + "]"
                             : multi[k].path;
      return common::InvalidArgumentError(path + ": unknown plugin \"" + multi[k].name + "\"");
    }
  }

  for (int pi = 0; pi < static_cast<int>(config::Point::kCount); ++pi) {
    auto point = static_cast<config::Point>(pi);
    if (point == config::Point::kMultiPoint || point == config::Point::kPreEnqueue) continue;
    const auto& refs = effective.at(point).enabled;
    std::vector<Plugin*> seen;  // an alias and its plugin at one point run once
    for (size_t k = 0; k < refs.size(); ++k) {
      const config::PluginRef& ref = refs[k];
      std::string path = ref.path.empty()
                             ? profile.path + ".plugins." + PointField(point) + ".enabled[" +
                                   std::to_string(k) + "]"
                             : ref.path;
      Plugin* p = get(ref.name, path);
      GPUSCHED_RETURN_IF_ERROR(first_error);
      if (!Implements(p, point)) {
        return common::InvalidArgumentError(path + ": plugin \"" + ref.name +
                                            "\" does not implement " + PointField(point));
      }
      if (std::find(seen.begin(), seen.end(), p) != seen.end()) continue;
      seen.push_back(p);
      switch (point) {
        case config::Point::kQueueSort:
          if (fw->queue_sort_ != nullptr) {
            return common::InvalidArgumentError(path + ": only one queueSort plugin may be enabled");
          }
          fw->queue_sort_ = dynamic_cast<QueueSortPlugin*>(p);
          break;
        case config::Point::kPreFilter: fw->pre_filter_.push_back(dynamic_cast<PreFilterPlugin*>(p)); break;
        case config::Point::kFilter: fw->filter_.push_back(dynamic_cast<FilterPlugin*>(p)); break;
        case config::Point::kPostFilter: fw->post_filter_.push_back(dynamic_cast<PostFilterPlugin*>(p)); break;
        case config::Point::kPreScore: fw->pre_score_.push_back(dynamic_cast<PreScorePlugin*>(p)); break;
        case config::Point::kScore:
          fw->score_.push_back(Scored{dynamic_cast<ScorePlugin*>(p), ref.weight > 0 ? ref.weight : 1});
          break;
        case config::Point::kReserve: fw->reserve_.push_back(dynamic_cast<ReservePlugin*>(p)); break;
        case config::Point::kPermit: fw->permit_.push_back(dynamic_cast<PermitPlugin*>(p)); break;
        case config::Point::kPreBind: fw->pre_bind_.push_back(dynamic_cast<PreBindPlugin*>(p)); break;
        case config::Point::kBind: fw->bind_.push_back(dynamic_cast<BindPlugin*>(p)); break;
        case config::Point::kPostBind: fw->post_bind_.push_back(dynamic_cast<PostBindPlugin*>(p)); break;
        default: break;
      }
    }
  }
  for (const auto& pc : profile.plugin_config) {
    if (registry.Find(pc.name) == nullptr) {
      return common::InvalidArgumentError(pc.path + ".name: unknown plugin \"" + pc.name + "\"");
    }
  }
  if (fw->queue_sort_ == nullptr) {
    return common::InvalidArgumentError(profile.path + ".plugins.queueSort: one queueSort plugin is required");
  }
  if (fw->bind_.empty()) {
    return common::InvalidArgumentError(profile.path + ".plugins.bind: at least one bind plugin is required");
  }
  // PreFilter/PreScore kSkip maps to the same plugin object's Filter/Score slot.
  for (auto* pf : fw->pre_filter_) {
    int slot = -1;
    for (size_t j = 0; j < fw->filter_.size(); ++j) {
      if (static_cast<Plugin*>(fw->filter_[j]) == static_cast<Plugin*>(pf)) slot = static_cast<int>(j);
    }
    fw->pre_filter_to_filter_.push_back(slot);
  }
  for (auto* ps : fw->pre_score_) {
    int slot = -1;
    for (size_t j = 0; j < fw->score_.size(); ++j) {
      if (static_cast<Plugin*>(fw->score_[j].plugin) == static_cast<Plugin*>(ps)) slot = static_cast<int>(j);
    }
    fw->pre_score_to_score_.push_back(slot);
  }
  return fw;
}

Status Framework::RunPreFilter(CycleState& state, const api::Pod& pod, const Snapshot& snapshot) {
  PointTimer timer(metrics_, metrics::Point::kPreFilter);
  state.skip_filter().assign(filter_.size(), false);
  for (size_t i = 0; i < pre_filter_.size(); ++i) {
    PluginTimer pt(metrics_ ? m_pre_filter_[i] : nullptr, sample_plugins_);
    Status s = pt.Done(pre_filter_[i]->PreFilter(state, pod, snapshot));
    if (s.ok()) continue;
    if (s.IsSkip()) {
      if (pre_filter_to_filter_[i] >= 0) state.skip_filter()[static_cast<size_t>(pre_filter_to_filter_[i])] = true;
      continue;
    }
    s.WithPlugin(pre_filter_[i]->Name());
    return timer.Done(s);
  }
  return timer.Done(Status::Success());
}

Status Framework::RunFilter(const CycleState& state, const api::Pod& pod, const NodeInfo& node) const {
  const auto& skip = state.skip_filter();
  for (size_t j = 0; j < filter_.size(); ++j) {
    if (j < skip.size() && skip[j]) continue;
    Status s = filter_[j]->Filter(state, pod, node);
    if (!s.ok()) {
      s.WithPlugin(filter_[j]->Name());
      return s;
    }
  }
  return Status::Success();
}

Status Framework::RunScore(CycleState& state, const api::Pod& pod, const Snapshot& snapshot,
                           std::span<const NodeIndex> nodes, std::span<int64_t> totals,
                           std::vector<ScoreBreakdown>* breakdown) {
  PointTimer pre_timer(metrics_, metrics::Point::kPreScore);
  state.skip_score().assign(score_.size(), false);
  for (size_t i = 0; i < pre_score_.size(); ++i) {
    PluginTimer pt(metrics_ ? m_pre_score_[i] : nullptr, sample_plugins_);
    Status s = pt.Done(pre_score_[i]->PreScore(state, pod, snapshot, nodes));
    if (s.ok()) continue;
    if (s.IsSkip()) {
      if (pre_score_to_score_[i] >= 0) state.skip_score()[static_cast<size_t>(pre_score_to_score_[i])] = true;
      continue;
    }
    s.WithPlugin(pre_score_[i]->Name());
    return pre_timer.Done(s.IsError() ? s : Status::Error("PreScore " + std::string(pre_score_[i]->Name()) + ": " + s.ToString()));
  }
  pre_timer.Done(Status::Success());
  PointTimer score_timer(metrics_, metrics::Point::kScore);
  if (breakdown != nullptr) {
    breakdown->assign(nodes.size(), ScoreBreakdown{});
    for (size_t i = 0; i < nodes.size(); ++i) (*breakdown)[i].node = nodes[i];
  }
  if (plugin_scores_.size() < nodes.size()) plugin_scores_.resize(nodes.size());  // only grows
  std::span<int64_t> scores(plugin_scores_.data(), nodes.size());
  // Score reuse per plugin (reuse_ is set by SchedulePod when Filter reuse is on): the raw
  // scores of every node-local Score plugin that runs are stored per class, and only nodes whose
  // generation moved are scored by them; a plugin that is not node-local is scored afresh over all
  // `nodes` and stores nothing. The signature names the stored columns (a skipped plugin and a
  // cross-node one both store none, so pods of one class that differ only in whether a cross-node
  // plugin runs share the stored columns) and the StateVersion each was stored under.
  ResultCache::Class* reuse = breakdown == nullptr ? reuse_ : nullptr;
  if (reuse != nullptr) {
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
    if (!any_stored) reuse = nullptr;
  }
  const std::span<const uint64_t> gens = snapshot.generations();
  if (reuse != nullptr) {
    result_cache_.PrepareScores(*reuse, reuse_signature_, score_.size());
    stale_nodes_.clear();
    const uint64_t* scored_gen = reuse->score_generations();
    for (NodeIndex n : nodes) {
      if (scored_gen[n] != gens[static_cast<size_t>(n)]) stale_nodes_.push_back(n);  // !HasScores
    }
    stale_scores_.resize(stale_nodes_.size());
    result_cache_.stats().score_evaluated += stale_nodes_.size();
    result_cache_.stats().score_reused += nodes.size() - stale_nodes_.size();
  }
  // totals is written by the first plugin that runs (=) and added to by the others (+=), in
  // plugin order; it is zero-filled only when no plugin runs.
  bool totals_written = false;
  const size_t num = nodes.size();
  int64_t* const tot = totals.data();
  tie_rule_ = ScorePlugin::TieBreak::kNone;
  for (size_t j = 0; j < score_.size(); ++j) {
    if (state.skip_score()[j]) continue;
    const Scored& sp = score_[j];
    const int64_t w = sp.weight;
    const bool normalize = sp.plugin->HasNormalizeScore();
    // The first plugin with a tie-break rule sets it; kRawScore keeps its raw scores.
    bool keep_raw = false;
    if (tie_rule_ == ScorePlugin::TieBreak::kNone) {
      tie_rule_ = sp.plugin->TieBreakRule();
      keep_raw = tie_rule_ == ScorePlugin::TieBreak::kRawScore;
      if (keep_raw && tie_keys_.size() < num) tie_keys_.resize(num);  // only grows
    }
    if (reuse != nullptr && score_stored_[j] != 0) {
      PluginTimer pt(metrics_ ? m_score_[j] : nullptr, sample_plugins_);
      if (!stale_nodes_.empty()) sp.plugin->ScoreNodes(state, pod, snapshot, stale_nodes_, stale_scores_);
      pt.Done(Status::Success());
      for (size_t k = 0; k < stale_nodes_.size(); ++k) {
        reuse->SetScore(static_cast<size_t>(stale_nodes_[k]), j, stale_scores_[k]);
      }
      const int64_t* column = reuse->ScoreColumn(j);
      if (keep_raw) {
        for (size_t i = 0; i < num; ++i) tie_keys_[i] = column[nodes[i]];
      }
      if (!normalize && breakdown == nullptr) {
        // Stored raw scores that need no normalization go straight into the totals.
        if (totals_written) {
          for (size_t i = 0; i < num; ++i) tot[i] += column[nodes[i]] * w;
        } else {
          for (size_t i = 0; i < num; ++i) tot[i] = column[nodes[i]] * w;
          totals_written = true;
        }
        continue;
      }
      int64_t* out = scores.data();
      for (size_t i = 0; i < num; ++i) out[i] = column[nodes[i]];
    } else {
      PluginTimer pt(metrics_ ? m_score_[j] : nullptr, sample_plugins_);
      sp.plugin->ScoreNodes(state, pod, snapshot, nodes, scores);
      pt.Done(Status::Success());
      if (keep_raw) std::copy(scores.begin(), scores.end(), tie_keys_.begin());
    }
    if (breakdown != nullptr) {  // explain only: keep the raw scores before normalizing
      for (size_t i = 0; i < num; ++i) {
        (*breakdown)[i].by_plugin.push_back(PluginScore{sp.plugin->Name(), scores[i], scores[i], sp.weight, 0});
      }
    }
    if (normalize) {
      Status s = sp.plugin->NormalizeScore(state, pod, scores);
      if (!s.ok()) {
        s.WithPlugin(sp.plugin->Name());
        return score_timer.Done(s);
      }
    }
    const int64_t* sc = scores.data();
    if (totals_written) {
      for (size_t i = 0; i < num; ++i) tot[i] += sc[i] * w;
    } else {
      for (size_t i = 0; i < num; ++i) tot[i] = sc[i] * w;
      totals_written = true;
    }
    if (breakdown != nullptr) {
      for (size_t i = 0; i < num; ++i) {
        PluginScore& ps = (*breakdown)[i].by_plugin.back();
        ps.normalized = scores[i];
        ps.weighted = scores[i] * w;
      }
    }
  }
  if (!totals_written) std::fill(totals.begin(), totals.end(), 0);
  if (breakdown != nullptr) {
    for (size_t i = 0; i < nodes.size(); ++i) (*breakdown)[i].total = totals[i];
  }
  if (reuse != nullptr) {
    for (NodeIndex n : stale_nodes_) reuse->MarkScored(static_cast<size_t>(n), gens[static_cast<size_t>(n)]);
  }
  return score_timer.Done(Status::Success());
}

Status Framework::RunActiveFilters(const CycleState& state, const api::Pod& pod,
                                   const NodeInfo& node) const {
  for (FilterPlugin* f : active_filter_) {
    Status s = f->Filter(state, pod, node);
    if (!s.ok()) {
      s.WithPlugin(f->Name());
      return s;
    }
  }
  return Status::Success();
}

ResultCache::Class* Framework::AcquireReuse(const CycleState& state, const api::Pod& pod,
                                            const Snapshot& snapshot,
                                            const SchedulePodOptions& options) {
  if (!reuse_enabled_ || options.record_verdicts || options.record_scores ||
      snapshot.generation() == 0 || snapshot.generations().size() < snapshot.nodes().size()) {
    return nullptr;
  }
  reuse_signature_.clear();
  const auto& skip = state.skip_filter();
  for (size_t j = 0; j < filter_.size(); ++j) {
    const bool skipped = j < skip.size() && skip[j];
    if (!skipped && !filter_[j]->NodeLocal()) return nullptr;
    reuse_signature_.push_back(skipped ? 1 : 0);
    reuse_signature_.push_back(skipped ? 0 : filter_[j]->StateVersion());
  }
  api::SchedulingEquivalenceKey(pod, reuse_key_);
  return &result_cache_.Acquire(reuse_key_, api::HashEquivalenceKey(reuse_key_), snapshot,
                                reuse_signature_);
}

ScheduleResult Framework::SchedulePod(CycleState& state, const api::Pod& pod,
                                      const Snapshot& snapshot, common::Random& random,
                                      const SchedulePodOptions& options) {
  ScheduleResult result;
  Diagnosis& diag = result.diagnosis;
  diag.num_nodes = snapshot.num_nodes();
  if (metrics_ != nullptr) {
    sample_plugins_ = cycles_++ % 10 == 0;
    std::fill(rejected_at_.begin(), rejected_at_.end(), 0);
  }
  if (snapshot.num_nodes() == 0) {
    result.status = Status::Unschedulable("no nodes available to schedule pods");
    diag.pre_filter_status = result.status;
    return result;
  }
  Status pre = RunPreFilter(state, pod, snapshot);
  if (!pre.ok()) {
    result.status = pre;
    if (pre.IsRejected()) {
      diag.pre_filter_status = pre;
      AddUnique(diag.unschedulable_plugins, pre.plugin());
    }
    return result;
  }

  auto nodes = snapshot.nodes();
  const size_t slots = nodes.size();
  const int32_t num_to_find =
      options.score_all_nodes ? diag.num_nodes
                              : config::NumNodesToScore(diag.num_nodes, percentage_);
  // The Filter plugins that run for this pod, in order (RunFilter's loop without the skip bits).
  active_filter_.clear();
  for (size_t j = 0; j < filter_.size(); ++j) {
    const bool skipped = j < state.skip_filter().size() && state.skip_filter()[j];
    if (!skipped) active_filter_.push_back(filter_[j]);
  }
  reuse_ = AcquireReuse(state, pod, snapshot, options);
  struct ClearReuse {  // RunScore may also be called on its own (extender): never with a stale class
    ResultCache::Class*& c;
    ~ClearReuse() { c = nullptr; }
  } clear_reuse{reuse_};
  // Feasible nodes in scan order, written through a raw pointer into a buffer that only grows
  // (sized once per cluster size, not per pod).
  if (feasible_.size() < slots) feasible_.resize(slots);
  NodeIndex* const fbuf = feasible_.data();
  size_t nf = 0;
  const size_t want = static_cast<size_t>(std::max(num_to_find, 0));
  size_t start = slots == 0 ? 0 : next_start_ % slots;
  std::pair<std::string_view, int32_t>* last_reason = nullptr;  // into diag.reason_counts
  std::string_view last_plugin;
  const std::span<const uint64_t> gens = snapshot.generations();  // sized: see AcquireReuse
  const uint64_t* const gen = gens.data();
  const uint64_t* const stored_gen = reuse_ != nullptr ? reuse_->verdict_generations() : nullptr;
  const uint16_t* const stored_id = reuse_ != nullptr ? reuse_->verdict_ids() : nullptr;
  // Per stored verdict id, the nodes of this cycle whose stored rejection has that id and was
  // counted by the hit path (-1: the id was not met yet; its first node takes the general path,
  // which creates its diag.reason_counts entry and records the plugin, so counts and first-seen
  // order are those of a cycle without reuse). The counts are added to their entries after the
  // scan. Ids of verdicts hit in this cycle were stored in earlier cycles (a node is visited once
  // per cycle), so they are below the table's size; the bound is checked all the same.
  const size_t num_ids = reuse_ != nullptr ? result_cache_.num_verdicts() : 0;
  id_hits_.assign(num_ids, -1);
  id_entry_.assign(num_ids, -1);
  int32_t* const id_hits = id_hits_.data();
  uint64_t reused = 0;
  size_t i = start;
  size_t k = 0;  // nodes visited; i = (start + k) % slots
  bool found_enough = false;
  while (k < slots) {
    if (stored_gen != nullptr) {
      // The hit path: a run of nodes with a stored verdict (a stored verdict implies the node
      // was valid and, its generation being unchanged, still is). It reads only the flat
      // generation arrays and the verdict ids, builds no Status, and stops at the first node
      // that needs the general path below (no stored verdict, or a rejection id not met yet in
      // this cycle), or at the end of the slot array (the scan then wraps to slot 0).
      const size_t run_end = std::min(slots, i + (slots - k));
      size_t j = i;
      for (; j < run_end; ++j) {
        if (stored_gen[j] != gen[j]) break;
        const uint16_t id = stored_id[j];
        if (id == 0) {
          fbuf[nf++] = static_cast<NodeIndex>(j);
          if (nf >= want) {
            found_enough = true;
            ++j;
            break;
          }
          continue;
        }
        if (id >= num_ids || id_hits[id] < 0) break;
        ++id_hits[id];
      }
      const size_t run = j - i;
      reused += run;
      k += run;
      if (found_enough || k >= slots) break;
      if (j == slots) {  // wrapped: go on with the hit path from slot 0
        i = 0;
        continue;
      }
      i = j;
    }
    // The general path, one node: i is a node without a stored verdict (Filter runs) or the
    // first node of this cycle with its stored rejection id.
    const size_t n = i;
    ++k;
    i = i + 1 == slots ? 0 : i + 1;
    Status s;
    bool from_cache = false;  // a stored verdict: no plugin ran (plugin evaluation metrics)
    if (stored_gen != nullptr && stored_gen[n] == gen[n]) {  // reuse_->HasVerdict(n, gens[n])
      ++reused;
      if (stored_id[n] == 0) {  // feasible (the hit path takes these; kept for completeness)
        fbuf[nf++] = static_cast<NodeIndex>(n);
        if (nf >= want) break;
        continue;
      }
      s = reuse_->Verdict(n);
      from_cache = true;
    } else {
      const NodeInfo& ni = nodes[n];
      if (!ni.valid()) continue;
      ++result.evaluated_nodes;
      s = RunActiveFilters(state, pod, ni);
      if (reuse_ != nullptr) {
        reuse_->StoreVerdict(n, gens[n], s);
        ++result_cache_.stats().filter_evaluated;
      }
      if (s.ok()) {
        fbuf[nf++] = static_cast<NodeIndex>(n);
        if (nf >= want) break;
        continue;
      }
    }
    if (s.IsError()) {
      result.evaluated_nodes += static_cast<int32_t>(reused);
      result.status = s;
      return result;
    }
    if (metrics_ != nullptr && !from_cache) CountRejection(s.plugin());
    if (s.code() != Code::kUnschedulableAndUnresolvable) diag.unresolvable_everywhere = false;
    if (options.record_verdicts) diag.verdicts.push_back(NodeVerdict{static_cast<NodeIndex>(n), s});
    // Reasons and plugin names are interned constants, so a repeat of the last rejection is
    // recognised by pointer; only a new (reason, plugin) pair pays the string compares.
    // (Rejections never own their text — only Status::Error does, and errors returned above.)
    if (last_reason == nullptr || s.reason().data() != last_reason->first.data() ||
        s.reason().size() != last_reason->first.size() || s.plugin().data() != last_plugin.data() ||
        s.plugin().size() != last_plugin.size()) {
      last_reason = nullptr;
      for (auto& rc : diag.reason_counts) {
        if (rc.first == s.reason()) {
          last_reason = &rc;
          break;
        }
      }
      if (last_reason == nullptr) last_reason = &diag.reason_counts.emplace_back(s.reason(), 0);
      last_plugin = s.plugin();
      AddUnique(diag.unschedulable_plugins, s.plugin());
    }
    ++last_reason->second;
    if (from_cache) {
      const uint16_t id = stored_id[n];
      if (id < num_ids && id_hits[id] < 0) {
        id_hits[id] = 0;
        id_entry_[id] = static_cast<int32_t>(last_reason - diag.reason_counts.data());
      }
    }
  }
  for (size_t id = 1; id < num_ids; ++id) {
    if (id_hits[id] > 0) {
      diag.reason_counts[static_cast<size_t>(id_entry_[id])].second += id_hits[id];
    }
  }
  result.evaluated_nodes += static_cast<int32_t>(reused);
  if (slots > 0) next_start_ = (start + k) % slots;
  result_cache_.stats().filter_reused += reused;
  const std::span<const NodeIndex> feasible(fbuf, nf);
  result.feasible_nodes = static_cast<int32_t>(nf);
  // Nodes with a reused verdict ran no Filter plugin.
  if (metrics_ != nullptr) CountFilterEvaluations(state, result.evaluated_nodes - static_cast<int32_t>(reused));

  if (feasible.empty()) {
    PointTimer post_timer(post_filter_.empty() ? nullptr : metrics_, metrics::Point::kPostFilter);
    for (auto* pf : post_filter_) {
      std::string nominated;
      Status s = pf->PostFilter(state, pod, snapshot, diag.verdicts, &nominated);
      if (!s.ok() && !s.reason().empty()) diag.post_filter_messages.emplace_back(s.reason());
    }
    post_timer.Done(Status::Unschedulable({}));
    result.status = Status(diag.unresolvable_everywhere ? Code::kUnschedulableAndUnresolvable
                                                        : Code::kUnschedulable,
                           {});
    return result;
  }
  if (feasible.size() == 1 && !options.record_scores) {
    result.node = feasible[0];
    return result;
  }
  if (totals_.size() < feasible.size()) totals_.resize(feasible.size());  // only grows
  Status s = RunScore(state, pod, snapshot, feasible,
                      std::span<int64_t>(totals_.data(), feasible.size()),
                      options.record_scores ? &result.scores : nullptr);
  if (!s.ok()) {
    result.status = s.IsError() ? s : Status::Error(s.ToString());
    return result;
  }
  const int64_t* const totals = totals_.data();
  result.node = SelectHost(feasible, random);
  // The three best totals for the decision log: an insertion into a fixed array, no allocation.
  // Once the array is full, a total not above its last entry cannot enter it.
  constexpr int32_t kTop = static_cast<int32_t>(std::tuple_size_v<decltype(result.top_scores)>);
  for (size_t i = 0; i < feasible.size(); ++i) {
    if (result.top_count == kTop && totals[i] <= result.top_scores[kTop - 1].total) continue;
    int32_t pos = result.top_count;
    while (pos > 0 && result.top_scores[static_cast<size_t>(pos - 1)].total < totals[i]) --pos;
    if (pos >= kTop) continue;
    int32_t last = std::min<int32_t>(result.top_count, kTop - 1);
    for (int32_t k = last; k > pos; --k) {
      result.top_scores[static_cast<size_t>(k)] = result.top_scores[static_cast<size_t>(k - 1)];
    }
    result.top_scores[static_cast<size_t>(pos)] = NodeScore{feasible[i], totals[i]};
    if (result.top_count < kTop) ++result.top_count;
  }
  return result;
}

NodeIndex Framework::SelectHost(std::span<const NodeIndex> feasible, common::Random& random) const {
  const int64_t* const totals = totals_.data();
  int64_t best = totals[0];
  if (tie_rule_ == ScorePlugin::TieBreak::kNone) {
    // Ties broken uniformly at random in one pass (reservoir sampling, as selectHost).
    NodeIndex chosen = feasible[0];
    uint64_t ties = 1;
    for (size_t i = 1; i < feasible.size(); ++i) {
      if (totals[i] > best) {
        best = totals[i];
        chosen = feasible[i];
        ties = 1;
      } else if (totals[i] == best) {
        ++ties;
        if (random.Uniform(ties) == 0) chosen = feasible[i];
      }
    }
    return chosen;
  }
  for (size_t i = 1; i < feasible.size(); ++i) best = std::max(best, totals[i]);
  // Among the nodes of the highest total, as the cycle's tie-break rule says, then uniformly at
  // random between nodes it leaves equal.
  NodeIndex chosen = kNoNode;
  int64_t best_key = 0;
  uint64_t ties = 0;
  for (size_t i = 0; i < feasible.size(); ++i) {
    if (totals[i] != best) continue;
    if (tie_rule_ == ScorePlugin::TieBreak::kFirstNode) {
      if (chosen == kNoNode || feasible[i] < chosen) chosen = feasible[i];
      continue;
    }
    const int64_t key = tie_rule_ == ScorePlugin::TieBreak::kRawScore ? tie_keys_[i] : 0;
    if (ties == 0 || key > best_key) {
      best_key = key;
      chosen = feasible[i];
      ties = 1;
    } else if (key == best_key) {
      ++ties;
      if (random.Uniform(ties) == 0) chosen = feasible[i];
    }
  }
  return chosen;
}

Status Framework::RunReserve(CycleState& state, const api::Pod& pod, const NodeInfo& node) {
  PointTimer timer(metrics_, metrics::Point::kReserve);
  for (size_t i = 0; i < reserve_.size(); ++i) {
    PluginTimer pt(metrics_ ? m_reserve_[i] : nullptr, sample_plugins_);
    Status s = pt.Done(reserve_[i]->Reserve(state, pod, node));
    if (!s.ok()) {
      s.WithPlugin(reserve_[i]->Name());
      timer.Done(s);
      RunUnreserve(state, pod, node.name());
      return s;
    }
  }
  return timer.Done(Status::Success());
}

void Framework::RunUnreserve(CycleState& state, const api::Pod& pod, std::string_view node) {
  PointTimer timer(metrics_, metrics::Point::kUnreserve);
  for (auto it = reserve_.rbegin(); it != reserve_.rend(); ++it) (*it)->Unreserve(state, pod, node);
  timer.Done(Status::Success());
}

Status Framework::RunPermit(CycleState& state, const api::Pod& pod, std::string_view node) {
  PointTimer timer(metrics_, metrics::Point::kPermit);
  for (size_t i = 0; i < permit_.size(); ++i) {
    PermitPlugin* p = permit_[i];
    common::Duration timeout{0};
    PluginTimer pt(metrics_ ? m_permit_[i] : nullptr, sample_plugins_);
    Status s = pt.Done(p->Permit(state, pod, node, &timeout));
    if (s.ok()) continue;
    s.WithPlugin(p->Name());
    if (s.IsWait()) {
      // Waiting pods (gang scheduling) are not supported yet: reject so the pod is retried.
      return timer.Done(Status::Error("plugin " + std::string(p->Name()) +
                                      " asked to wait at Permit, which is not supported"));
    }
    return timer.Done(s);
  }
  return timer.Done(Status::Success());
}

Status Framework::RunPreBind(CycleState& state, const api::Pod& pod, std::string_view node) {
  PointTimer timer(metrics_, metrics::Point::kPreBind);
  for (auto* p : pre_bind_) {
    Status s = p->PreBind(state, pod, node);
    if (!s.ok()) {
      s.WithPlugin(p->Name());
      return timer.Done(s);
    }
  }
  return timer.Done(Status::Success());
}

Status Framework::RunBind(CycleState& state, const api::Pod& pod, std::string_view node) {
  PointTimer timer(metrics_, metrics::Point::kBind);
  for (auto* p : bind_) {
    Status s = p->Bind(state, pod, node);
    if (s.IsSkip()) continue;
    s.WithPlugin(p->Name());
    return timer.Done(s);
  }
  return timer.Done(Status::Error("no bind plugin bound pod " + pod.Key()));
}

void Framework::RunPostBind(CycleState& state, const api::Pod& pod, std::string_view node) {
  PointTimer timer(metrics_, metrics::Point::kPostBind);
  for (auto* p : post_bind_) p->PostBind(state, pod, node);
  timer.Done(Status::Success());
}

void Framework::SetMetrics(metrics::ProfileMetrics* m) {
  metrics_ = m;
  auto resolve = [m](const auto& plugins, metrics::Point point) {
    std::vector<metrics::PluginMetrics*> out;
    for (const auto* p : plugins) out.push_back(m == nullptr ? nullptr : m->ForPlugin(p->Name(), point));
    return out;
  };
  m_pre_filter_ = resolve(pre_filter_, metrics::Point::kPreFilter);
  m_filter_ = resolve(filter_, metrics::Point::kFilter);
  m_pre_score_ = resolve(pre_score_, metrics::Point::kPreScore);
  m_score_.clear();
  for (const auto& sp : score_) {
    m_score_.push_back(m == nullptr ? nullptr : m->ForPlugin(sp.plugin->Name(), metrics::Point::kScore));
  }
  m_reserve_ = resolve(reserve_, metrics::Point::kReserve);
  m_permit_ = resolve(permit_, metrics::Point::kPermit);
  rejected_at_.assign(filter_.size(), 0);
}

void Framework::CountRejection(std::string_view plugin) {
  // Plugin names are the plugins' own literals: compare by address first (the common case).
  for (size_t j = 0; j < filter_.size(); ++j) {
    std::string_view name = filter_[j]->Name();
    if (name.data() == plugin.data() || name == plugin) {
      ++rejected_at_[j];
      return;
    }
  }
}

void Framework::CountFilterEvaluations(const CycleState& state, int32_t evaluated) {
  // Filter runs the plugins in order and stops at the first rejection, so plugin j ran on every
  // evaluated node that no earlier plugin rejected (kube-scheduler counts each such run).
  const auto& skip = state.skip_filter();
  int64_t reaching = evaluated;
  for (size_t j = 0; j < filter_.size(); ++j) {
    if (j < skip.size() && skip[j]) continue;
    m_filter_[j]->CountEvaluations(reaching);
    reaching -= rejected_at_[j];
  }
}

std::vector<std::string> Framework::PluginNames(config::Point point) const {
  std::vector<std::string> out;
  auto add = [&out](const auto& list) {
    for (const auto* p : list) out.emplace_back(p->Name());
  };
  switch (point) {
    case config::Point::kQueueSort: out.emplace_back(queue_sort_->Name()); break;
    case config::Point::kPreFilter: add(pre_filter_); break;
    case config::Point::kFilter: add(filter_); break;
    case config::Point::kPostFilter: add(post_filter_); break;
    case config::Point::kPreScore: add(pre_score_); break;
    case config::Point::kScore:
      for (const auto& s : score_) out.emplace_back(s.plugin->Name());
      break;
    case config::Point::kReserve: add(reserve_); break;
    case config::Point::kPermit: add(permit_); break;
    case config::Point::kPreBind: add(pre_bind_); break;
    case config::Point::kBind: add(bind_); break;
    case config::Point::kPostBind: add(post_bind_); break;
    default: break;
  }
  return out;
}

}  // namespace gpusched::framework::runtime
