// SPDX-License-Identifier: Apache-2.0
// ResultCache: per-node Filter verdicts and raw Scores kept across scheduling cycles for pods of
// the same equivalence class (api/equivalence.h), so that a burst of equivalent pods costs work
// proportional to what changed, not to the cluster size.
//
// Why it is exact. For an equivalent pod, a node-local plugin (Plugin::NodeLocal) gives node N the
// same Filter status and the same raw Score as long as N's NodeInfo is unchanged — which the
// cache guarantees by stamping every change with a new, never reused NodeInfo::generation — and
// the plugin's StateVersion() is unchanged. The runtime therefore reuses a stored result only when
//   * the pod's key equals the class key byte for byte (the hash only picks the bucket);
//   * the snapshot is the same object as when the result was stored, and its generations come
//     from one cache (they only grow);
//   * the node's generation, read from Snapshot::generations() (the flat copy the cache keeps),
//     equals the stored one and is not 0 (0: a hand-filled snapshot that does not track changes;
//     such nodes are always evaluated);
//   * the Filter (resp. Score) signature is equal: which plugins were skipped by PreFilter (resp.
//     whose raw scores are stored) and every such plugin's StateVersion(). At Filter, an active
//     plugin that is not node-local disables reuse for the cycle (a plugin whose Filter is a no-op
//     for the pod returns kSkip from PreFilter and does not). At Score reuse is per plugin: only
//     node-local plugins that run have stored columns; a cross-node plugin (e.g.
//     PodTopologySpread with ScheduleAnyway constraints) is scored afresh over the full feasible
//     list in every cycle and the others' stored scores are still reused (Framework decides, not
//     this class).
// NormalizeScore, weights and the host selection always run on the full feasible list, so totals,
// tie-breaks and Random draws are exactly those of an uncached cycle.
//
// Layout: per class, flat arrays indexed by NodeIndex: the generation each verdict was stored at,
// a 16-bit verdict id (0 = feasible; others index one table of distinct (code, reason, plugin)
// triples shared by all classes), the generation the scores were stored at, and the raw scores
// plugin-major ([score plugin][node], so one plugin's pass reads one contiguous column). 10 bytes
// per node per class for the verdicts; the score columns (8 × (1 + score plugins) bytes per node)
// are lent to the kMaxScoredClasses classes scored most recently and taken back, allocation kept,
// from the least recently scored one: a class whose pods never fit holds none.
// Framework::SchedulePod reads these arrays directly (verdict_generations, verdict_ids): a
// stored "feasible" costs one append to the feasible list, a stored rejection one increment of
// a per-id counter (each id is resolved to its reason once per cycle); no Status is built.
// Classes are found through a hash index and kept in two LRU segments. New classes enter the
// recent segment (64 classes; the least recently used one's storage is taken for a new class,
// so a burst of fresh classes reuses warm memory): bursts interleave several pod templates, and
// a class that returns after k other pods finds only about k changed nodes. A class whose pod
// fit no node (MarkWaiting) moves to the waiting segment, bounded by the bytes of its verdicts
// (64 MiB): a saturated cluster retries thousands of waiting pods of as many classes, each after
// a few changes; in a segment of 64 each would be evicted before it returned, every retry a full
// Filter pass.
//
// Threading: owned by one Framework, used by its one scheduling thread (as Framework's buffers).
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "src/framework/node_info.h"
#include "src/framework/status.h"

namespace gpusched::framework::runtime {

class ResultCache {
 public:
  static constexpr size_t kDefaultMaxRecentClasses = 64;
  static constexpr size_t kDefaultMaxWaitingBytes = size_t{64} << 20;
  static constexpr size_t kMaxScoredClasses = 64;

  class Class;
  // One class's raw scores: the generation each node's scores were stored at, and the scores
  // plugin-major. Lent to the classes scored most recently (PrepareScores).
  struct ScoreColumns {
    Class* owner = nullptr;  // null: free
    uint64_t last_used = 0;  // the cache's score tick when last prepared; 0 when free
    std::vector<uint64_t> generations;
    std::vector<int64_t> scores;
  };

  // The stored results of one equivalence class on one snapshot.
  class Class {
   public:
    // Marks a slot with no stored result; never a cache generation (they start at 1 and only
    // grow), and never equal to 0, the "unknown" generation of a hand-filled snapshot.
    static constexpr uint64_t kNone = ~uint64_t{0};

    // True when slot `i`'s Filter verdict was stored at `generation` (never true for 0).
    // REQUIRES: i < the snapshot's slot count at Acquire.
    bool HasVerdict(size_t i, uint64_t generation) const { return filter_gen_[i] == generation; }
    // The generation each slot's verdict was stored at (kNone: none), for scans that hoist it.
    const uint64_t* verdict_generations() const { return filter_gen_.data(); }
    // Whether the stored verdict is "feasible". REQUIRES: HasVerdict.
    bool Feasible(size_t i) const { return verdict_id_[i] == 0; }
    // The stored verdict's code, without building its Status. REQUIRES: HasVerdict.
    Code VerdictCode(size_t i) const;
    // The stored verdict's id: equal ids are equal verdicts (0: feasible). REQUIRES: HasVerdict.
    uint16_t VerdictIdAt(size_t i) const { return verdict_id_[i]; }
    // Every slot's verdict id (meaningful where HasVerdict), for scans that hoist it. An id is
    // below ResultCache::num_verdicts() at any time after it was stored.
    const uint16_t* verdict_ids() const { return verdict_id_.data(); }
    // The stored verdict, as RunFilter returned it (code, reason, plugin). REQUIRES: HasVerdict.
    Status Verdict(size_t i) const;
    // Stores a non-error RunFilter result for slot `i` at `generation` (ignored when 0).
    void StoreVerdict(size_t i, uint64_t generation, const Status& s);
    // A Filter scan visited every slot with this class when the snapshot's generation was
    // `generation`: each node then had a stored verdict or needed none, so at most
    // Snapshot::generation() − scanned_all_at() nodes (one generation per node change) lack one
    // now. 0: unknown. A bound for choosing the parallel Filter (parallel.cc), never for a
    // verdict.
    void MarkScannedAll(uint64_t generation) { scanned_all_at_ = generation; }
    uint64_t scanned_all_at() const { return scanned_all_at_; }

    // The score accessors below REQUIRE that PrepareScores was called for this class after the
    // last Acquire (which may have taken its columns for another class).
    // True when slot `i`'s raw scores were stored at `generation` (never true for 0).
    bool HasScores(size_t i, uint64_t generation) const {
      return columns_->generations[i] == generation;
    }
    const uint64_t* score_generations() const { return columns_->generations.data(); }
    // Score plugin slot `j`'s raw scores, indexed by node slot.
    const int64_t* ScoreColumn(size_t j) const { return columns_->scores.data() + j * slots_; }
    // Raw score of score plugin slot `j` for node slot `i`. REQUIRES: HasScores(i, ...).
    int64_t Score(size_t i, size_t j) const { return columns_->scores[j * slots_ + i]; }
    void SetScore(size_t i, size_t j, int64_t v) { columns_->scores[j * slots_ + i] = v; }
    // Marks slot `i`'s scores (all SetScore'd for the active plugins) valid at `generation`.
    void MarkScored(size_t i, uint64_t generation) {
      if (generation != 0) columns_->generations[i] = generation;
    }

   private:
    friend class ResultCache;
    // The bytes of its verdict arrays (what the waiting segment's budget counts).
    size_t bytes() const;
    ResultCache* owner_ = nullptr;
    std::list<Class>::iterator self_;  // in recent_ or waiting_
    bool waiting_ = false;             // in waiting_
    std::string key_;
    uint64_t hash_ = 0;
    std::vector<uint64_t> filter_signature_;
    std::vector<uint64_t> score_signature_;
    size_t num_score_ = 0;
    size_t slots_ = 0;
    std::vector<uint64_t> filter_gen_;
    std::vector<uint16_t> verdict_id_;
    uint64_t scanned_all_at_ = 0;
    ScoreColumns* columns_ = nullptr;  // lent by the cache; null when it has none
  };

  // Keeps at most `max_recent` classes that never waited and `max_waiting_bytes` of verdict
  // arrays (ClassBytes) of classes that did, and always the class in use.
  explicit ResultCache(size_t max_recent = kDefaultMaxRecentClasses,
                       size_t max_waiting_bytes = kDefaultMaxWaitingBytes);
  ResultCache(const ResultCache&) = delete;
  ResultCache& operator=(const ResultCache&) = delete;

  // The class of `key` for `snapshot`, sized for its slots; its Filter results are kept only if
  // they were stored under an equal `filter_signature`. Creates the class in the recent segment
  // when absent. Forgets every class when `snapshot` is another object than last time or its
  // generation went backwards. The reference is valid until the next Acquire.
  Class& Acquire(std::string_view key, uint64_t hash, const Snapshot& snapshot,
                 std::span<const uint64_t> filter_signature);
  // `c`'s pod fit no node: it will be retried, so `c` moves to the waiting segment (whose least
  // recently used classes are evicted while over budget). REQUIRES: `c` is the class the last
  // Acquire returned.
  void MarkWaiting(Class& c);
  // Prepares `c` for Score reuse with `num_score` score plugin slots: lends it score columns when
  // it has none (those of the least recently scored class once kMaxScoredClasses hold some), and
  // keeps its stored scores only if they were stored under an equal `score_signature`.
  // REQUIRES: `c` is the class the last Acquire returned.
  void PrepareScores(Class& c, std::span<const uint64_t> score_signature, size_t num_score);

  // Counters for tests and benchmarks: nodes whose Filter verdict / scores were reused or
  // computed (and stored), over the cache's life.
  struct Stats {
    uint64_t filter_reused = 0;
    uint64_t filter_evaluated = 0;
    uint64_t score_reused = 0;
    uint64_t score_evaluated = 0;
  };
  Stats& stats() { return stats_; }
  const Stats& stats() const { return stats_; }

  size_t num_classes() const { return recent_.size() + waiting_.size(); }
  size_t num_waiting_classes() const { return waiting_.size(); }
  // Bytes of verdict arrays held by the waiting segment (at most its budget, or one class's).
  size_t waiting_bytes() const { return waiting_bytes_; }
  // The bytes of one class's verdict arrays over `slots` nodes.
  static size_t ClassBytes(size_t slots) { return slots * (sizeof(uint64_t) + sizeof(uint16_t)); }
  // Classes that hold score columns now (at most kMaxScoredClasses).
  size_t num_scored_classes() const;
  // Number of distinct verdicts stored so far (ids are 0 .. num_verdicts() - 1; 0 = feasible).
  size_t num_verdicts() const { return verdicts_.size(); }

 private:
  struct StoredVerdict {
    std::string_view reason;
    std::string_view plugin;
    Code code = Code::kSuccess;
  };
  // The id of `s` in verdicts_ (added when new); 0 for success; -1 when the table is full.
  int32_t VerdictId(const Status& s);
  // The class of `key`, or null.
  Class* Find(std::string_view key, uint64_t hash);
  // A class for `key` at the front of the recent segment: new, or the storage of that segment's
  // least recently used class when it is full.
  Class& AddRecent(std::string_view key, uint64_t hash);
  void Unindex(const Class& c);
  // Drops the waiting segment's least recently used classes, never its most recent one, until
  // its budget holds.
  void EvictOverBudget();
  // Gives `c`'s score columns back to the pool (they keep their allocation).
  static void ReturnColumns(Class& c);

  size_t max_recent_;
  size_t max_waiting_bytes_;
  size_t waiting_bytes_ = 0;
  std::list<Class> recent_;   // most recently used first
  std::list<Class> waiting_;  // most recently used first
  std::unordered_multimap<uint64_t, Class*> by_hash_;
  std::vector<std::unique_ptr<ScoreColumns>> columns_;  // at most kMaxScoredClasses
  uint64_t score_tick_ = 0;
  std::vector<StoredVerdict> verdicts_;  // [0] = success
  int32_t last_verdict_id_ = 0;
  const Snapshot* snapshot_ = nullptr;
  uint64_t snapshot_generation_ = 0;
  Stats stats_;
};

inline Code ResultCache::Class::VerdictCode(size_t i) const {
  return owner_->verdicts_[verdict_id_[i]].code;
}

}  // namespace gpusched::framework::runtime
