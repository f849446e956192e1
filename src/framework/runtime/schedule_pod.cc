// SPDX-License-Identifier: Apache-2.0
// Framework::SchedulePod in named steps (framework.h draws them): PreFilter, FindFeasibleNodes
// (the Filter scan, with result reuse), PostFilter, PrioritizeNodes (score.cc), SelectHost and
// RecordTopScores. All per-cycle buffers are Framework members that only grow.
#include <algorithm>

#include "src/api/equivalence.h"
#include "src/framework/pre_filter_nodes.h"
#include "src/framework/runtime/filter_scan.h"
#include "src/framework/runtime/framework.h"
#include "src/framework/runtime/timers.h"

namespace gpusched::framework::runtime {

namespace {

void AddUnique(std::vector<std::string>& v, std::string_view s) {
  if (std::find(v.begin(), v.end(), s) == v.end()) v.emplace_back(s);
}

}  // namespace

ScheduleResult Framework::SchedulePod(CycleState& state, const api::Pod& pod,
                                      const Snapshot& snapshot, common::Random& random,
                                      const SchedulePodOptions& options) {
  ScheduleResult result;
  result.diagnosis.num_nodes = snapshot.num_nodes();
  result.counts.total = snapshot.num_nodes();
  BeginCycle();
  if (snapshot.num_nodes() == 0) {
    result.status = Status::Unschedulable("no nodes available to schedule pods");
    result.diagnosis.pre_filter_status = result.status;
    return result;
  }
  SelectNominated(snapshot);
  if (!PreFilterPod(state, pod, snapshot, result)) {
    if (result.status.IsRejected()) {
      SelectActiveFilters(state);
      RunPostFilter(state, pod, snapshot, options, result);
    }
    return result;
  }
  SelectActiveFilters(state);
  DecideTwinFilters(state, pod, snapshot, options);
  if (!options.record_verdicts && EvaluateNominatedNode(state, pod, snapshot, result)) {
    return result;
  }
  if (!result.status.ok()) return result;  // a Filter error on the nominated node
  // Stored verdicts do not know the PreFilter's node names: none are used or kept then.
  reuse_ = state.Read(kPreFilterNodesKey) != nullptr ? nullptr
                                                     : AcquireReuse(state, pod, snapshot, options);
  struct ClearReuse {  // RunScore may also be called on its own (extender): never with a stale
                       // class
    ResultCache::Class*& c;
    ~ClearReuse() { c = nullptr; }
  } clear_reuse{reuse_};
  const std::span<const NodeIndex> feasible =
      FindFeasibleNodes(state, pod, snapshot, options, result);
  if (!result.status.ok()) return result;  // a Filter error
  if (feasible.empty()) {
    if (reuse_ != nullptr) result_cache_.MarkWaiting(*reuse_);  // it will be retried
    RunPostFilter(state, pod, snapshot, options, result);
    return result;
  }
  if (feasible.size() == 1 && !options.record_scores) {
    result.node = feasible[0];
    return result;
  }
  if (!PrioritizeNodes(state, pod, snapshot, feasible, options, result)) return result;
  result.node = SelectHost(feasible, random);
  RecordTopScores(feasible, result);
  return result;
}

void Framework::BeginCycle() {
  if (metrics_ == nullptr) return;
  sample_plugins_ = cycles_++ % 10 == 0;
  std::fill(rejected_at_.begin(), rejected_at_.end(), 0);
}

void Framework::SelectNominated(const Snapshot& snapshot) {
  nominated_ = nullptr;
  if (nominator_ != nullptr && nominator_->size() > 0) {
    const NominatedView& view = nominator_->View(snapshot);
    if (!view.empty()) nominated_ = &view;
  }
}

bool Framework::PreFilterPod(CycleState& state, const api::Pod& pod, const Snapshot& snapshot,
                             ScheduleResult& result) {
  Status pre = RunPreFilter(state, pod, snapshot);
  if (pre.ok()) return true;
  result.status = pre;
  if (pre.IsRejected()) {
    result.diagnosis.pre_filter_status = pre;
    AddUnique(result.diagnosis.unschedulable_plugins, pre.plugin());
  }
  return false;
}

// The Filter plugins that run for this pod, in order (RunFilter's loop without the skip bits).
void Framework::SelectActiveFilters(const CycleState& state) {
  active_filter_.clear();
  for (size_t j = 0; j < filter_.size(); ++j) {
    const bool skipped = j < state.skip_filter().size() && state.skip_filter()[j];
    if (!skipped) active_filter_.push_back(filter_[j]);
  }
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

bool Framework::FilterSignature(const CycleState& state, std::vector<uint64_t>& out) const {
  out.clear();
  const auto& skip = state.skip_filter();
  for (size_t j = 0; j < filter_.size(); ++j) {
    const bool skipped = j < skip.size() && skip[j];
    if (!skipped && !filter_[j]->NodeLocal()) return false;
    out.push_back(skipped ? 1 : 0);
    out.push_back(skipped ? 0 : filter_[j]->StateVersion());
  }
  return true;
}

ResultCache::Class* Framework::AcquireReuse(const CycleState& state, const api::Pod& pod,
                                            const Snapshot& snapshot,
                                            const SchedulePodOptions& options) {
  // Nodes with nominated pods are filtered per pod priority (RunFiltersWithNominatedPods): no
  // verdict is stored or reused for them (FilterNextNode), the other nodes' are.
  if (!reuse_enabled_ || options.record_verdicts || options.record_scores ||
      snapshot.generation() == 0 || snapshot.generations().size() < snapshot.nodes().size()) {
    return nullptr;
  }
  if (!FilterSignature(state, reuse_signature_)) return nullptr;
  api::SchedulingEquivalenceKey(pod, reuse_key_);
  return &result_cache_.Acquire(reuse_key_, api::HashEquivalenceKey(reuse_key_), snapshot,
                                reuse_signature_);
}

// Filters nodes from the rotating start index until NumNodesToScore feasible ones are found (or
// every node was visited). Nodes whose stored verdict (reuse_) is still valid are decided without
// running Filter. Fills result.counts.evaluated and .feasible, the diagnosis, and result.status
// on a Filter error. Returns the feasible nodes in scan order (a view of feasible_).
std::span<const NodeIndex> Framework::FindFeasibleNodes(const CycleState& state,
                                                        const api::Pod& pod,
                                                        const Snapshot& snapshot,
                                                        const SchedulePodOptions& options,
                                                        ScheduleResult& result) {
  FilterScan scan = StartScan(snapshot, options, result.diagnosis.num_nodes);
  scan.named = state.Get<PreFilterNodes>(kPreFilterNodesKey);
  while (!scan.Done()) {
    if (parallel_ != nullptr && scan.visited >= scan.window_end) {
      PrefilterWindow(scan, state, pod, snapshot);
    }
    if (scan.stored_gen != nullptr && ScanStoredVerdicts(scan)) break;
    if (scan.Done()) break;
    if (FilterNextNode(scan, state, pod, snapshot, options, result)) break;
    if (!result.status.ok()) {
      result.counts.evaluated += static_cast<int32_t>(scan.reused);
      return {};
    }
  }
  FinishScan(scan, state, result);
  return {scan.feasible, scan.num_feasible};
}

Framework::FilterScan Framework::StartScan(const Snapshot& snapshot,
                                           const SchedulePodOptions& options, int32_t num_nodes) {
  FilterScan scan;
  scan.slots = snapshot.nodes().size();
  const int32_t num_to_find =
      options.score_all_nodes ? num_nodes : config::NumNodesToScore(num_nodes, percentage_);
  scan.want = static_cast<size_t>(std::max(num_to_find, 0));
  // Feasible nodes are written through a raw pointer into a buffer that only grows (sized once
  // per cluster size, not per pod).
  if (feasible_.size() < scan.slots) feasible_.resize(scan.slots);
  if (node_codes_.size() < scan.slots) node_codes_.resize(scan.slots);
  scan.feasible = feasible_.data();
  scan.start = scan.slots == 0 ? 0 : next_start_ % scan.slots;
  scan.next = scan.start;
  scan.gen = snapshot.generations().data();  // sized: see AcquireReuse
  scan.snapshot_generation = snapshot.generation();
  if (reuse_ != nullptr) {
    scan.stored_gen = reuse_->verdict_generations();
    scan.stored_id = reuse_->verdict_ids();
    scan.num_ids = result_cache_.num_verdicts();
  }
  // Per stored verdict id, the nodes of this cycle whose stored rejection has that id and was
  // counted by the hit path (-1: the id was not met yet; its first node takes the general path,
  // which creates its diag.reason_counts entry and records the plugin, so counts and first-seen
  // order are those of a cycle without reuse). The counts are added to their entries after the
  // scan. Ids of verdicts hit in this cycle were stored in earlier cycles (a node is visited once
  // per cycle), so they are below the table's size; the bound is checked all the same.
  id_hits_.assign(scan.num_ids, -1);
  id_entry_.assign(scan.num_ids, -1);
  scan.id_hits = id_hits_.data();
  ++prefilter_round_;  // no verdict filtered for an earlier cycle is taken (FilterNode)
  return scan;
}

// The hit path: a run of nodes with a stored verdict (a stored verdict implies the node was valid
// and, its generation being unchanged, still is). It reads only the flat generation arrays and the
// verdict ids, builds no Status, and stops at the first node that needs the general path (no
// stored verdict, or a rejection id not met yet in this cycle), or at the end of the slot array
// (the scan then wraps to slot 0). Returns true when enough feasible nodes were found.
bool Framework::ScanStoredVerdicts(FilterScan& scan) const {
  for (;;) {
    const size_t i = scan.next;
    size_t run_end = std::min(scan.slots, i + (scan.slots - scan.visited));
    // A node with nominated pods takes the general path.
    if (nominated_ != nullptr) run_end = nominated_->NextAtOrAfter(i, run_end);
    size_t j = i;
    bool found_enough = false;
    for (; j < run_end; ++j) {
      if (scan.stored_gen[j] != scan.gen[j]) break;
      const uint16_t id = scan.stored_id[j];
      if (id == 0) {
        scan.feasible[scan.num_feasible++] = static_cast<NodeIndex>(j);
        if (scan.FoundEnough()) {
          found_enough = true;
          ++j;
          break;
        }
        continue;
      }
      if (id >= scan.num_ids || scan.id_hits[id] < 0) break;
      ++scan.id_hits[id];
    }
    const size_t run = j - i;
    scan.reused += run;
    scan.visited += run;
    if (found_enough) return true;
    if (scan.Done()) return false;
    if (j == scan.slots) {  // wrapped: go on with the hit path from slot 0
      scan.next = 0;
      continue;
    }
    scan.next = j;
    return false;
  }
}

// The general path, one node: a node without a stored verdict (Filter runs) or the first node of
// this cycle with its stored rejection id. Returns true when enough feasible nodes were found;
// sets result.status on a Filter error.
bool Framework::FilterNextNode(FilterScan& scan, const CycleState& state, const api::Pod& pod,
                               const Snapshot& snapshot, const SchedulePodOptions& options,
                               ScheduleResult& result) {
  const size_t n = scan.next;
  ++scan.visited;
  scan.next = n + 1 == scan.slots ? 0 : n + 1;
  Status s;
  bool from_cache = false;  // a stored verdict: no plugin ran (plugin evaluation metrics)
  // A node with nominated pods: its verdict depends on the pod's priority; never stored or reused.
  const bool nominated_here = nominated_ != nullptr && nominated_->Has(n);
  if (scan.stored_gen != nullptr && !nominated_here &&
      scan.stored_gen[n] == scan.gen[n]) {  // reuse_->HasVerdict
    ++scan.reused;
    if (scan.stored_id[n] == 0) {  // feasible (the hit path takes these; kept for completeness)
      scan.feasible[scan.num_feasible++] = static_cast<NodeIndex>(n);
      return scan.FoundEnough();
    }
    s = reuse_->Verdict(n);
    from_cache = true;
  } else {
    const NodeInfo& ni = snapshot.nodes()[n];
    if (!ni.valid()) return false;
    if (scan.named != nullptr && !scan.named->Allows(ni.name())) {
      s = Status::Unresolvable(scan.named->reason);
      s.WithPlugin(scan.named->plugin);
      node_codes_[n] = s.code();
    } else {
      ++result.counts.evaluated;
      s = nominated_here ? RunFiltersWithNominatedPods(state, pod, ni)
                         : FilterOrShare(state, pod, snapshot, static_cast<NodeIndex>(n));
      node_codes_[n] = s.code();  // NodeCode reads the stored verdict of a node that has one
      if (reuse_ != nullptr && !nominated_here) {
        reuse_->StoreVerdict(n, scan.gen[n], s);
        ++result_cache_.stats().filter_evaluated;
      }
      if (s.ok()) {
        scan.feasible[scan.num_feasible++] = static_cast<NodeIndex>(n);
        return scan.FoundEnough();
      }
    }
  }
  if (s.IsError()) {
    result.status = s;
    return false;
  }
  if (metrics_ != nullptr && !from_cache) CountRejection(s.plugin());
  CountReason(scan, static_cast<NodeIndex>(n), s, from_cache, options, result.diagnosis);
  return false;
}

// Adds a rejection to the diagnosis. Reasons and plugin names are interned constants, so a repeat
// of the last rejection is recognised by pointer; only a new (reason, plugin) pair pays the string
// compares. (Rejections never own their text — only Status::Error does, and errors end the scan.)
void Framework::CountReason(FilterScan& scan, NodeIndex n, const Status& s, bool from_cache,
                            const SchedulePodOptions& options, Diagnosis& diag) {
  if (s.code() != Code::kUnschedulableAndUnresolvable) diag.unresolvable_everywhere = false;
  if (options.record_verdicts) diag.verdicts.push_back(NodeVerdict{n, s});
  auto*& last = scan.last_reason;
  if (last == nullptr || s.reason().data() != last->first.data() ||
      s.reason().size() != last->first.size() || s.plugin().data() != scan.last_plugin.data() ||
      s.plugin().size() != scan.last_plugin.size()) {
    last = nullptr;
    for (auto& rc : diag.reason_counts) {
      if (rc.first == s.reason()) {
        last = &rc;
        break;
      }
    }
    if (last == nullptr) last = &diag.reason_counts.emplace_back(s.reason(), 0);
    scan.last_plugin = s.plugin();
    AddUnique(diag.unschedulable_plugins, s.plugin());
  }
  ++last->second;
  if (from_cache) {
    const uint16_t id = scan.stored_id[static_cast<size_t>(n)];
    if (id < scan.num_ids && scan.id_hits[id] < 0) {
      scan.id_hits[id] = 0;
      id_entry_[id] = static_cast<int32_t>(last - diag.reason_counts.data());
    }
  }
}

// Adds the hit path's rejection counts to their reasons, moves the rotating start index and
// records the scan's statistics and metrics.
void Framework::FinishScan(const FilterScan& scan, const CycleState& state,
                           ScheduleResult& result) {
  Diagnosis& diag = result.diagnosis;
  for (size_t id = 1; id < scan.num_ids; ++id) {
    if (scan.id_hits[id] > 0)
      diag.reason_counts[static_cast<size_t>(id_entry_[id])].second += scan.id_hits[id];
  }
  result.counts.evaluated += static_cast<int32_t>(scan.reused);
  if (scan.slots > 0) next_start_ = (scan.start + scan.visited) % scan.slots;
  if (reuse_ != nullptr && scan.Done()) reuse_->MarkScannedAll(scan.snapshot_generation);
  result_cache_.stats().filter_reused += scan.reused;
  result.counts.feasible = static_cast<int32_t>(scan.num_feasible);
  // Nodes with a reused verdict ran no Filter plugin.
  if (metrics_ != nullptr) {
    CountFilterEvaluations(state, result.counts.evaluated - static_cast<int32_t>(scan.reused));
  }
}

bool Framework::PrioritizeNodes(CycleState& state, const api::Pod& pod, const Snapshot& snapshot,
                                std::span<const NodeIndex> feasible,
                                const SchedulePodOptions& options, ScheduleResult& result) {
  if (totals_.size() < feasible.size()) totals_.resize(feasible.size());  // only grows
  Status s =
      RunScore(state, pod, snapshot, feasible, std::span<int64_t>(totals_.data(), feasible.size()),
               options.record_scores ? &result.scores : nullptr);
  if (options.record_scores) {
    result.tie_rule = tie_rule_;
    result.tie_plugin = tie_plugin_;
  }
  if (s.ok()) return true;
  result.status = s.IsError() ? s : Status::Error(s.ToString());
  return false;
}

NodeIndex Framework::SelectHost(std::span<const NodeIndex> feasible, common::Random& random) const {
  const int64_t* const totals = totals_.data();
  if (tie_rule_ == ScorePlugin::TieBreak::kNone) {
    // Ties broken uniformly at random in one pass (reservoir sampling, as selectHost).
    int64_t best = totals[0];
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
  return SelectHostByTieRule(feasible, random);
}

// Among the nodes of the highest total, as the cycle's tie-break rule says, then uniformly at
// random between nodes it leaves equal.
NodeIndex Framework::SelectHostByTieRule(std::span<const NodeIndex> feasible,
                                         common::Random& random) const {
  const int64_t* const totals = totals_.data();
  int64_t best = totals[0];
  for (size_t i = 1; i < feasible.size(); ++i) best = std::max(best, totals[i]);
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

// The three best totals for the decision log: an insertion into a fixed array, no allocation.
// Once the array is full, a total not above its last entry cannot enter it.
void Framework::RecordTopScores(std::span<const NodeIndex> feasible, ScheduleResult& result) const {
  const int64_t* const totals = totals_.data();
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
}

}  // namespace gpusched::framework::runtime
