// SPDX-License-Identifier: Apache-2.0
// VictimCache: the preemption dry run's per-node results (VictimSelector::Select) kept across
// attempts of equivalent pods, so that a burst of like preemptors (the replicas of one Deployment
// or Job) re-examines only the nodes that changed since the last attempt — the runtime's
// ResultCache idea applied to PostFilter.
//
// Why it is exact. Select's result on node N for a pod depends on:
//   * the pod's scheduling-relevant fields and its priority: api::SchedulingEquivalenceKey, which
//     includes spec.priority (which pods are of lower priority);
//   * the Filter plugins the cycle runs and their state: PostFilterContext::FilterSignature, empty
//     (nothing is cached) when an active Filter is not node-local;
//   * N's NodeInfo: its generation, never reused by the cache (0, a hand-filled snapshot, is
//     never cached), within one Snapshot object;
//   * the pods nominated to N: a node with any is never cached;
//   * the PodDisruptionBudgets: immutable objects, replaced on every change, so the class keeps
//     the pointers it was filled with and is emptied when they differ;
//   * the clock, only through MoreImportant, which puts a pod without a start time at `now`: the
//     order of such a pod and one started at or after `now` can change later, so a result whose
//     potential victims include a pod started at or after the evaluation is not stored
//     (VictimSelector::last_result_time_invariant; time only moves forward: an earlier start
//     stays earlier).
// A stored result is returned only when all of these are equal; the caller then uses it exactly
// as a fresh one (the candidate order, the random offset and PickNode are unchanged).
//
// Layout: per class (key, signature, snapshot, PDBs), one Entry per node slot: the generation it
// was stored at, the status, the victims and their PDB violations. Classes are kept in a small
// LRU (kMaxClasses).
//
// Threading: owned by one plugin instance, used on its scheduling thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "src/api/types.h"
#include "src/framework/node_info.h"
#include "src/framework/preemption/preemption.h"
#include "src/framework/status.h"

namespace gpusched::framework::preemption {

class VictimCache {
 public:
  static constexpr size_t kMaxClasses = 16;

  // One node's stored result.
  struct Entry {
    uint64_t generation = 0;  // 0: nothing stored
    Status status;
    std::vector<api::PodPtr> victims;
    int32_t pdb_violations = 0;
  };

  // Chooses the class of this attempt: `key` is the pod's SchedulingEquivalenceKey, `signature`
  // the cycle's FilterSignature (empty: nothing is cached in this attempt), `snapshot` the
  // cycle's snapshot and `pdbs` the budgets the dry run uses.
  void Begin(std::string_view key, std::string_view signature, const Snapshot& snapshot,
             std::span<const api::PdbPtr> pdbs);
  // The stored result for node `n` at `generation`, or nullptr.
  const Entry* Find(NodeIndex n, uint64_t generation) const;
  // Stores node `n`'s result at `generation` (nothing when no class is active or generation is 0).
  void Store(NodeIndex n, uint64_t generation, const Status& status, const Candidate& result);

  // Results served and stored since construction (tests, benchmarks).
  struct Stats {
    int64_t hits = 0;
    int64_t stores = 0;
  };
  const Stats& stats() const { return stats_; }

 private:
  struct Class {
    std::string key;  // equivalence key + '\0' + filter signature
    const Snapshot* snapshot = nullptr;
    std::vector<const api::PodDisruptionBudget*> pdbs;
    std::vector<Entry> entries;  // by node slot
    uint64_t last_use = 0;
  };
  Class* current_ = nullptr;
  std::vector<Class> classes_;
  uint64_t clock_ = 0;
  mutable Stats stats_;
};

}  // namespace gpusched::framework::preemption
