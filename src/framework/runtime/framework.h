// SPDX-License-Identifier: Apache-2.0
// Framework: one profile's plugins, instantiated from the registry and the profile's config, and
// the scheduling algorithm that runs them over a snapshot (kube-scheduler's frameworkImpl plus
// schedulePod/findNodesThatFitPod/prioritizeNodes/selectHost). The scheduler, the extender and the
// simulator all call it.
//
// SchedulePod (schedule_pod.cc, one function per step):
//   PreFilterPod ─rejected─> Diagnosis (every node counted with the PreFilter reason)
//      │
//   FindFeasibleNodes: Filter over the nodes, starting at a rotating index, until NumNodesToScore
//      feasible nodes are found; stored verdicts of equivalent pods reused (result_cache.h)
//      (a pod with a nominated node tries that node first, alone: EvaluateNominatedNode)
//      ─none─> RunPostFilter (preemption) ─> Diagnosis ("0/N nodes are available: ...")
//      │ one feasible: chosen without scoring
//   PrioritizeNodes (RunScore, score.cc): PreScore ─> Score (+NormalizeScore) × weight, summed
//   SelectHost: the highest total, ties by the first score plugin's tie-break rule
//      (ScorePlugin::TieBreak), then at random ─> RecordTopScores (the best three, for logs)
//
// The binding cycle's points (Reserve … PostBind) are run by binding::BindingCycle.
//
// Threading: a Framework is used by one scheduling thread at a time (it keeps reusable score
// buffers and the rotating start index). The extender keeps one Framework per worker.
// Hot path: SchedulePod allocates per pod (CycleState), never per node.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "src/common/parallel.h"
#include "src/common/random.h"
#include "src/common/status.h"
#include "src/config/config.h"
#include "src/framework/handle.h"
#include "src/framework/plugin.h"
#include "src/framework/queueing_hints.h"
#include "src/framework/registry.h"
#include "src/framework/runtime/nominator.h"
#include "src/framework/runtime/result_cache.h"
#include "src/framework/runtime/waiting_pods.h"
#include "src/metrics/scheduler_metrics.h"

namespace gpusched::framework::runtime {

// Why a pod did not fit: a count per rejection reason, and optionally each node's verdict.
struct Diagnosis {
  int32_t num_nodes = 0;
  // Set when PreFilter rejected the pod (or errored); then node_reasons is empty.
  Status pre_filter_status;
  std::vector<std::pair<std::string_view, int32_t>> reason_counts;
  std::vector<std::string> unschedulable_plugins;
  bool unresolvable_everywhere = true;
  // Filled only when SchedulePodOptions::record_verdicts is set (explain, tests).
  std::vector<NodeVerdict> verdicts;
  // What PostFilter plugins said when they could not help, each appended to the message.
  std::vector<std::string> post_filter_messages;

  // kube-scheduler's FitError message, e.g.
  // "0/50 nodes are available: 30 Insufficient nvidia.com/gpu, 20 GPU model mismatch.
  //  preemption: 0/50 nodes are available: 50 No preemption victims found for incoming pod."
  std::string Message() const;
};

// One Score plugin's contribution to one node's total (explain).
struct PluginScore {
  std::string_view plugin;
  int64_t raw = 0;         // ScoreNodes' output, before NormalizeScore
  int64_t normalized = 0;  // after NormalizeScore; equal to raw when the plugin has none
  int64_t weight = 1;      // the profile's weight for the plugin
  int64_t weighted = 0;    // normalized × weight, the amount added to the total
  std::string why;         // the plugin's ExplainScore of the raw score ("" when none)
};

// Per-plugin score of one node, for explain. Plugins whose PreScore returned Skip are absent.
struct ScoreBreakdown {
  NodeIndex node = kNoNode;
  int64_t total = 0;
  std::vector<PluginScore> by_plugin;  // in the profile's score order
};

// A node's weighted total (decision logs).
struct NodeScore {
  NodeIndex node = kNoNode;
  int64_t total = 0;
};

// How many nodes one scheduling attempt saw; carried unchanged from the ScheduleResult to what
// reports it (the scheduler's Decision, explain's Explanation).
struct NodeCounts {
  int32_t total = 0;      // nodes in the snapshot of the attempt
  int32_t evaluated = 0;  // nodes Filter ran on (or whose verdict was reused)
  int32_t feasible = 0;   // nodes that passed
};

struct ScheduleResult {
  NodeIndex node = kNoNode;  // chosen node, or kNoNode
  NodeCounts counts;
  Status status;  // success, rejected (see diagnosis) or error
  Diagnosis diagnosis;
  std::vector<ScoreBreakdown> scores;  // only with record_scores
  // With record_scores: how ties between the highest totals were broken (the cycle's rule) and
  // the Score plugin whose rule it is ("" for kNone: uniformly at random).
  ScorePlugin::TieBreak tie_rule = ScorePlugin::TieBreak::kNone;
  std::string_view tie_plugin;
  // The highest totals, best first (ties in node order); top_count of them are set. Filled
  // whenever Score ran (two or more feasible nodes), at no allocation.
  std::array<NodeScore, 3> top_scores{};
  int32_t top_count = 0;
  // Set when no node fit and PostFilter plugins ran: `post_filter` is the result of the first
  // that returned Success (victims to evict, the node to nominate), or of the last otherwise.
  bool post_filter_ran = false;
  PostFilterResult post_filter;
};

struct SchedulePodOptions {
  // Every node's Filter verdict in the diagnosis, and every node PostFilter tried in
  // post_filter.per_node (explain, tests).
  bool record_verdicts = false;
  bool record_scores = false;
  bool score_all_nodes = false;  // ignore percentageOfNodesToScore (explain)
  // When no node fits, run the PostFilter plugins (preemption). Off for the members of a gang
  // being placed together: one member's preemption alone would not help the gang.
  bool run_post_filter = true;
};

// Framework::SetParallelizer: when Filter and Score go to the parallelizer. A scan's window goes
// when it has at least `filter_nodes` nodes to filter, a Score plugin's list when it has at least
// `score_nodes` nodes, and, with `by_cost`, when the work the other threads take saves more than
// the hand-off costs (parallel.cc, WorthSplitting).
struct ParallelMinimum {
  size_t filter_nodes = 64;
  bool by_cost = true;
  size_t score_nodes = 4096;
};

class Framework {
 public:
  // Builds the profile's plugins. Errors name the profile's file (Profile::source) and the YAML
  // path of the offending entry, e.g. "sched.yaml: profiles[0].plugins.filter.enabled[2]: unknown
  // plugin \"Foo\"", "sched.yaml: profiles[0].pluginConfig[1].args: maxMovesPerPod: must be in
  // 1..16, got 0".
  static common::StatusOr<std::unique_ptr<Framework>> Create(const config::Profile& profile,
                                                             int32_t default_percentage,
                                                             const Registry& registry,
                                                             Handle& handle);

  std::string_view scheduler_name() const { return scheduler_name_; }
  const QueueSortPlugin& queue_sort() const { return *queue_sort_; }

  // The whole scheduling algorithm for one pod on `snapshot`.
  ScheduleResult SchedulePod(CycleState& state, const api::Pod& pod, const Snapshot& snapshot,
                             common::Random& random, const SchedulePodOptions& options = {});

  // Whether `pod` fits on `node` once `removed` (pods on that node) are gone, with the nominated
  // pods of at least its priority there: PreFilter, then the Filter plugins on a copy of the node
  // without `removed`, as a preemption dry run judges a node (DRA devices held only by removed
  // pods count as free). Gang preemption's proof that every member fits after the evictions.
  Status FitsWithout(CycleState& state, const api::Pod& pod, const Snapshot& snapshot,
                     std::string_view node, std::span<const api::PodPtr> removed);

  // Individual points, for the extender and the binding cycle.
  Status RunPreFilter(CycleState& state, const api::Pod& pod, const Snapshot& snapshot);
  Status RunFilter(const CycleState& state, const api::Pod& pod, const NodeInfo& node) const;
  // Scores `nodes`; `totals[i]` gets the weighted sum for nodes[i]. `breakdown` optional.
  Status RunScore(CycleState& state, const api::Pod& pod, const Snapshot& snapshot,
                  std::span<const NodeIndex> nodes, std::span<int64_t> totals,
                  std::vector<ScoreBreakdown>* breakdown);
  Status RunReserve(CycleState& state, const api::Pod& pod, const NodeInfo& node);
  void RunUnreserve(CycleState& state, const api::Pod& pod, std::string_view node);
  // Success, a rejection/error from the first plugin that returned one, or kWait: one or more
  // plugins asked to wait and none rejected; the pod is then in the waiting map (SetWaitingPods)
  // until allowed, rejected or timed out (each plugin's timeout, capped at kMaxPermitWait).
  Status RunPermit(CycleState& state, const api::PodPtr& pod, std::string_view node);
  Status RunPreBind(CycleState& state, const api::Pod& pod, std::string_view node);
  Status RunBind(CycleState& state, const api::Pod& pod, std::string_view node);
  void RunPostBind(CycleState& state, const api::Pod& pod, std::string_view node);

  // Names of the plugins at each point, in order (for explain and tests).
  std::vector<std::string> PluginNames(config::Point point) const;
  bool HasBindPlugins() const { return !bind_.empty(); }
  // The profile's queueing hints (framework/queueing_hints.h): every plugin that can reject a pod
  // (PreFilter, Filter, Reserve, Permit) once, with its EventsToRegister(), or every event with
  // no hint when it does not implement EnqueueExtensions. Collected once, in Create.
  const ProfileHints& queueing_hints() const { return queueing_hints_; }

  // Records kube-scheduler's framework metrics into `m` (nullptr: none, the default): extension
  // point durations, plugin evaluations (PreFilter, Filter, PreScore, Score) and, in one cycle in
  // ten (a counter, not the random source, so simulations stay reproducible), per-plugin
  // durations of the points that run once per pod. Filter is never timed per node.
  // REQUIRES: before the first cycle.
  void SetMetrics(metrics::ProfileMetrics* m);

  // Where RunPermit puts pods that a plugin holds (kWait). Without one, kWait is an error.
  // REQUIRES: before the first cycle; `waiting` outlives the Framework.
  void SetWaitingPods(WaitingPodMap* waiting) { waiting_ = waiting; }
  // The nominated pods that SchedulePod keeps room for (nominator.h). Without one (the
  // extender), no pod is nominated. REQUIRES: before the first cycle; outlives the Framework.
  void SetNominator(Nominator* nominator) { nominator_ = nominator; }
  bool HasPostFilterPlugins() const { return !post_filter_.empty(); }
  // Whether the plugin named `name` runs at PostFilter.
  bool HasPostFilterPlugin(std::string_view name) const;

  // Result reuse across equivalent pods (result_cache.h): on by default. Off gives the same
  // placements at full per-node cost (differential tests, benchmarks). Not used when recording
  // verdicts or scores (explain).
  void SetResultReuse(bool on) { reuse_enabled_ = on; }
  const ResultCache::Stats& result_reuse_stats() const { return result_cache_.stats(); }
  // Twin nodes (twins.cc, Snapshot::twins): on by default. Off evaluates every node (differential
  // tests, benchmarks). Not used when recording verdicts or scores (explain).
  void SetTwinNodes(bool on) { twins_enabled_ = on; }
  // Filter and Score fan out over nodes on `p` (parallel.cc; null, the default: the calling
  // thread does all). Placements, diagnoses and stored results do not depend on it: the nodes'
  // verdicts are taken in scan order, as without it. Fewer nodes than `min` to filter (in a
  // scan's window) or to score (per plugin) stay on the calling thread: a fork-join costs a few
  // µs (tests lower it to reach the parallel path on small clusters). REQUIRES: before the
  // first cycle; `p` outlives the Framework.
  void SetParallelizer(common::Parallelizer* p, ParallelMinimum min = {}) {
    parallel_ = p;
    parallel_min_ = min;
  }
  // Nodes filtered and scores computed on the parallelizer, over the Framework's life.
  struct ParallelStats {
    uint64_t filtered = 0;
    uint64_t scored = 0;
  };
  const ParallelStats& parallel_stats() const { return parallel_stats_; }
  // Nodes whose Filter verdict / raw Score (per plugin) came from a twin, over the Framework's
  // life.
  struct TwinStats {
    uint64_t filter_shared = 0;
    uint64_t score_shared = 0;
  };
  const TwinStats& twin_stats() const { return twin_stats_; }
  metrics::ProfileMetrics* metrics() const { return metrics_; }

 private:
  // Create without the file's name in errors.
  static common::StatusOr<std::unique_ptr<Framework>> CreateFromProfile(
      const config::Profile& profile, int32_t default_percentage, const Registry& registry,
      Handle& handle);
  Framework() = default;
  // RunFilter over active_filter_ (the plugins PreFilter did not skip for the current pod).
  Status RunActiveFilters(const CycleState& state, const api::Pod& pod, const NodeInfo& node) const;
  void CountRejection(std::string_view plugin);
  void CountFilterEvaluations(const CycleState& state, int32_t evaluated);
  // SchedulePod's steps (schedule_pod.cc).
  struct FilterScan;
  void BeginCycle();
  // nominated_: the snapshot's nominations, or null when there are none.
  void SelectNominated(const Snapshot& snapshot);
  bool PreFilterPod(CycleState& state, const api::Pod& pod, const Snapshot& snapshot,
                    ScheduleResult& result);
  void SelectActiveFilters(const CycleState& state);
  std::span<const NodeIndex> FindFeasibleNodes(const CycleState& state, const api::Pod& pod,
                                               const Snapshot& snapshot,
                                               const SchedulePodOptions& options,
                                               ScheduleResult& result);
  FilterScan StartScan(const Snapshot& snapshot, const SchedulePodOptions& options,
                       int32_t num_nodes);
  bool ScanStoredVerdicts(FilterScan& scan) const;
  bool FilterNextNode(FilterScan& scan, const CycleState& state, const api::Pod& pod,
                      const Snapshot& snapshot, const SchedulePodOptions& options,
                      ScheduleResult& result);
  void CountReason(FilterScan& scan, NodeIndex n, const Status& s, bool from_cache,
                   const SchedulePodOptions& options, Diagnosis& diag);
  void FinishScan(const FilterScan& scan, const CycleState& state, ScheduleResult& result);
  // Which Filter plugins run for the pod (PreFilter's skips) and their StateVersion(); false when
  // one that runs is not node-local (ResultCache's rule).
  bool FilterSignature(const CycleState& state, std::vector<uint64_t>& out) const;
  // PostFilter and its context (post_filter.cc).
  class PostFilterCycle;
  // Runs the PostFilter plugins unless options.run_post_filter is off (with record_verdicts they
  // record every node they try: PostFilterResult::per_node), then sets the no-fit status.
  void RunPostFilter(CycleState& state, const api::Pod& pod, const Snapshot& snapshot,
                     const SchedulePodOptions& options, ScheduleResult& result);
  // The Filter plugins of the cycle on `node`, with the nominated pods of at least the pod's
  // priority added on a copy first (PostFilterContext::RunFilters). `from_state`: the Filter
  // plugins `state`'s PreFilter left active instead, for another pod than the cycle's
  // (PostFilterContext::RunFiltersFor).
  Status RunFiltersWithNominatedPods(const CycleState& state, const api::Pod& pod,
                                     const NodeInfo& node, bool from_state = false) const;
  // The pod's nominated node, filtered alone before the scan; true when it fits (result.node set).
  bool EvaluateNominatedNode(const CycleState& state, const api::Pod& pod, const Snapshot& snapshot,
                             ScheduleResult& result);
  bool PrioritizeNodes(CycleState& state, const api::Pod& pod, const Snapshot& snapshot,
                       std::span<const NodeIndex> feasible, const SchedulePodOptions& options,
                       ScheduleResult& result);
  // The node of the highest total of totals_[0..feasible.size()), ties broken by tie_rule_.
  NodeIndex SelectHost(std::span<const NodeIndex> feasible, common::Random& random) const;
  NodeIndex SelectHostByTieRule(std::span<const NodeIndex> feasible, common::Random& random) const;
  void RecordTopScores(std::span<const NodeIndex> feasible, ScheduleResult& result) const;

  // RunScore's steps (score.cc).
  Status RunPreScore(CycleState& state, const api::Pod& pod, const Snapshot& snapshot,
                     std::span<const NodeIndex> nodes);
  ResultCache::Class* PrepareScoreReuse(const CycleState& state, const Snapshot& snapshot,
                                        std::span<const NodeIndex> nodes);
  Status ScoreWithPlugin(size_t j, CycleState& state, const api::Pod& pod, const Snapshot& snapshot,
                         std::span<const NodeIndex> nodes, ResultCache::Class* reuse,
                         std::span<int64_t> totals, bool& totals_written,
                         std::vector<ScoreBreakdown>* breakdown);
  static void AddWeighted(std::span<int64_t> totals, const int64_t* scores,
                          std::span<const NodeIndex> nodes, int64_t w, bool& totals_written);

  // Twin nodes (twins.cc). After PreFilter: whether this cycle's Filter may share verdicts
  // between twins (twin_filters_). The active filters on `node` (slot n), or the verdict its twin
  // got earlier in the cycle.
  void DecideTwinFilters(const CycleState& state, const api::Pod& pod, const Snapshot& snapshot,
                         const SchedulePodOptions& options);
  Status FilterOrShare(const CycleState& state, const api::Pod& pod, const Snapshot& snapshot,
                       NodeIndex n);
  // Parallel Filter and Score (parallel.cc). PrefilterWindow: the nodes of the scan's next
  // window that FilterNextNode would run the filters on, filtered at once on parallel_;
  // FilterNode then gives a node's verdict from there, or runs the filters.
  void PrefilterWindow(FilterScan& scan, const CycleState& state, const api::Pod& pod,
                       const Snapshot& snapshot);
  bool NeedsFilter(const FilterScan& scan, const Snapshot& snapshot, size_t slot);
  // Whether `nodes` of work, handed off over `walked` slots, go to the parallelizer.
  bool WorthSplitting(size_t nodes, size_t walked, size_t minimum) const;
  // At most how many nodes of `snapshot` one cycle filters when twins share verdicts: the twin
  // groups and the nodes in none (counted once per snapshot generation).
  size_t TwinBound(const Snapshot& snapshot);
  Status FilterNode(const CycleState& state, const api::Pod& pod, const NodeInfo& node);
  // plugin.ScoreNodes over `list`, in chunks on parallel_ when the list is long enough.
  void ScoreNodes(const ScorePlugin& plugin, const CycleState& state, const api::Pod& pod,
                  const Snapshot& snapshot, std::span<const NodeIndex> list,
                  std::span<int64_t> out);
  // Before Score: picks one node per twin group of `list` (the nodes node-local plugins score);
  // then ScoreOrShare gives `plugin`'s raw scores over `list` into `out`, from the
  // representatives' scores when the plugin allows it.
  void PrepareTwinScores(const Snapshot& snapshot, std::span<const NodeIndex> list);
  void ScoreOrShare(ScorePlugin& plugin, const CycleState& state, const api::Pod& pod,
                    const Snapshot& snapshot, std::span<const NodeIndex> list,
                    std::span<int64_t> out);

  // Create's steps (framework.cc).
  common::Status AddPluginsAtPoints(
      const config::Profile& profile, const config::Plugins& effective,
      const std::function<Plugin*(std::string_view, std::string_view)>& get,
      const common::Status& first_error);
  common::Status AddPlugin(config::Point point, Plugin* p, const config::PluginRef& ref,
                           const std::string& path);
  // The profile's whole-profile rules (one queueSort, a bind plugin, ...); names are checked first.
  common::Status CheckProfile(const config::Profile& profile) const;
  void MapSkipSlots();
  void CollectQueueingHints();  // queueing_hints.cc

  struct Scored {
    ScorePlugin* plugin;
    int64_t weight;
  };

  Handle* handle_ = nullptr;
  WaitingPodMap* waiting_ = nullptr;
  Nominator* nominator_ = nullptr;
  // The cycle's nominations (null when none anywhere), a copy of a node with its nominated pods
  // added (RunFiltersWithNominatedPods), and each filtered slot's Filter code (PostFilter's
  // NodeCode reads it for nodes without a stored verdict).
  const NominatedView* nominated_ = nullptr;
  mutable NodeInfo nominated_scratch_;
  std::vector<Code> node_codes_;
  std::string scheduler_name_;
  int32_t percentage_ = 0;
  std::vector<PluginPtr> owned_;
  QueueSortPlugin* queue_sort_ = nullptr;
  std::vector<PreFilterPlugin*> pre_filter_;
  std::vector<FilterPlugin*> filter_;
  std::vector<FilterPlugin*> active_filter_;  // SchedulePod: filter_ less those skipped for the pod
  std::vector<int> pre_filter_to_filter_;     // pre_filter_[i] skips filter_[j], or -1
  std::vector<PostFilterPlugin*> post_filter_;
  std::vector<PreScorePlugin*> pre_score_;
  std::vector<Scored> score_;
  std::vector<int> pre_score_to_score_;
  std::vector<ReservePlugin*> reserve_;
  std::vector<PermitPlugin*> permit_;
  std::vector<PreBindPlugin*> pre_bind_;
  std::vector<BindPlugin*> bind_;
  std::vector<PostBindPlugin*> post_bind_;
  ProfileHints queueing_hints_;

  // Metrics (null when off); per-plugin handles parallel to the plugin lists above.
  metrics::ProfileMetrics* metrics_ = nullptr;
  std::vector<metrics::PluginMetrics*> m_pre_filter_, m_filter_, m_pre_score_, m_score_, m_reserve_,
      m_permit_;
  std::vector<int32_t> rejected_at_;  // per filter plugin: nodes it rejected this cycle
  uint64_t cycles_ = 0;
  bool sample_plugins_ = false;

  // Reusable buffers (one scheduling thread). feasible_ only grows (to the slot count); a cycle's
  // feasible nodes are its first ScheduleResult::counts.feasible entries.
  std::vector<NodeIndex> feasible_;
  std::vector<int64_t> totals_;
  // Set by RunScore: the cycle's tie-break rule and, for kRawScore, that plugin's raw scores
  // (index = position in the scored nodes). Buffers only grow.
  ScorePlugin::TieBreak tie_rule_ = ScorePlugin::TieBreak::kNone;
  std::string_view tie_plugin_;  // the plugin whose rule tie_rule_ is
  std::vector<int64_t> tie_keys_;
  std::vector<int64_t> plugin_scores_;
  size_t next_start_ = 0;

  // Result reuse (result_cache.h). reuse_ is the class of the pod in the current cycle, or null.
  // Returns the class when every Filter plugin that runs for the pod is node-local.
  ResultCache::Class* AcquireReuse(const CycleState& state, const api::Pod& pod,
                                   const Snapshot& snapshot, const SchedulePodOptions& options);
  bool reuse_enabled_ = true;
  ResultCache result_cache_;
  ResultCache::Class* reuse_ = nullptr;
  std::string reuse_key_;
  std::vector<uint64_t> reuse_signature_;
  std::vector<NodeIndex> stale_nodes_;
  std::vector<int64_t> stale_scores_;
  std::vector<uint8_t> score_stored_;  // per score plugin: its raw scores are kept in reuse_
  // Twin nodes (twins.cc): per group, the round its Filter verdict was kept in and the verdict;
  // for Score, the list the representatives were picked for, the representatives, each list
  // entry's representative (index into twin_reps_) and, per group, its representative's index
  // in the current round. Buffers only grow.
  bool twins_enabled_ = true;
  TwinStats twin_stats_;
  bool twin_filters_ = false;
  uint64_t twin_round_ = 0;
  std::vector<uint64_t> twin_verdict_round_;
  std::vector<Status> twin_verdict_;
  std::span<const NodeIndex> twin_list_;
  std::vector<NodeIndex> twin_reps_;
  std::vector<int32_t> twin_pick_;
  std::vector<uint64_t> twin_rep_round_;
  std::vector<int32_t> twin_rep_at_;
  std::vector<int64_t> twin_scores_;
  // Per stored verdict id, in SchedulePod: nodes counted by the hit path, and the
  // diag.reason_counts entry they are added to.
  std::vector<int32_t> id_hits_;
  std::vector<int32_t> id_entry_;
  // Parallel Filter (parallel.cc): the window's nodes to filter, their verdicts (same index),
  // and per slot the window it was filtered in (prefilter_round_) and its index; per twin group,
  // the window that filters its representative. Buffers only grow.
  common::Parallelizer* parallel_ = nullptr;
  ParallelMinimum parallel_min_;
  ParallelStats parallel_stats_;
  std::vector<NodeIndex> prefilter_nodes_;
  std::vector<Status> prefiltered_;
  std::vector<uint64_t> prefilter_round_of_;
  std::vector<uint32_t> prefilter_at_;
  std::vector<uint64_t> twin_prefilter_round_;
  uint64_t prefilter_round_ = 0;
  const Snapshot* twin_bound_snapshot_ = nullptr;
  uint64_t twin_bound_generation_ = 0;
  size_t twin_bound_ = 0;
};

}  // namespace gpusched::framework::runtime
