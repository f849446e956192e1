// SPDX-License-Identifier: Apache-2.0
// Ranking: the exact victim selection of the upstream ReplicaSet controller on scale-down
// (kubernetes/kubernetes pkg/controller/replicaset/replica_set.go getPodsToDelete and
// pkg/controller/controller_utils.go ActivePodsWithRanks.Less), as written up in
// docs/replicaset-scale-down.md §1–6 (the § numbers below are its sections).
//
//   owned pods ──► active filter ──► diff = |active| − replicas, capped at 500 (BurstReplicas)
//                                       │ diff >= |active|: every pod, no ranking
//                                       ▼
//   related pods (every ReplicaSet with the same controller owner; active ones per node)
//        └──► rank(p) = active related pods on p's node ("" counts as a node)
//                                       ▼
//   repeated "find the minimum under LESS" ──► first diff pods are the victims
//
// LESS is not a strict weak ordering (rules 6 and 8 mix bucket+UID with fall-through), so it is
// never handed to std::sort: the order is built by repeated minimum selection, which compares
// only in-range elements and yields an order upstream's pdqsort could also have produced.
//
// Every input to LESS is computed once per pass (PodFacts, RankedPod). Pure functions; no
// clock is read here (`now` is an argument). Thread-compatible.
#pragma once

#include <boost/json/fwd.hpp>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/api/labels.h"
#include "src/api/types.h"
#include "src/common/clock.h"
#include "src/common/status.h"

namespace gpusched::addons::deletion_cost {

inline constexpr std::string_view kPodDeletionCostAnnotation =
    "controller.kubernetes.io/pod-deletion-cost";
// replicaset.BurstReplicas: at most this many deletions per sync.
inline constexpr int32_t kBurstReplicas = 500;

// The upstream pod-deletion-cost parser (helper.GetDeletionCostFromPodAnnotations): the value
// must start with '-', be exactly "0", or start with 1-9, and parse as a base-10 int32.
// Returns the cost, or kInvalidArgument naming the value ("must be a 32bit integer").
common::StatusOr<int32_t> ParseDeletionCost(std::string_view value);

// The cost the comparator uses, and whether the annotation was present and valid.
struct DeletionCost {
  int32_t value = 0;     // 0 when absent or invalid (upstream ignores the parse error)
  bool present = false;  // the annotation exists
  std::string error;     // non-empty when present but invalid
};
DeletionCost DeletionCostFromAnnotation(const std::string* annotation);

// Feature gates and release differences that change the comparator.
struct RankingOptions {
  bool logarithmic_scale_down = true;  // LogarithmicScaleDown (GA, locked on since v1.31)
  bool pod_deletion_cost = true;       // PodDeletionCost (beta, default on since v1.22)
  bool sidecar_restarts = true;        // rule 7 second part (restartable init containers, >= ~1.31)
};

// Everything the ReplicaSet controller reads of one pod.
struct PodFacts {
  std::string namespace_;
  std::string name;
  std::string uid;
  std::string node_name;                        // "" = unassigned
  std::string phase;                            // raw status.phase ("" when absent)
  bool deleting = false;                        // metadata.deletionTimestamp set
  bool ready = false;                           // the first Ready condition has status True
  std::optional<common::TimePoint> ready_time;  // its lastTransitionTime when ready
  std::optional<common::TimePoint> created;     // metadata.creationTimestamp
  std::optional<std::string> cost_annotation;   // raw pod-deletion-cost value
  int32_t max_restarts = 0;                     // max restartCount over status.containerStatuses
  int32_t max_sidecar_restarts = 0;  // same over restartable init containers (matched by name)
  api::Labels labels;
  std::vector<std::pair<std::string, std::string>> annotations;  // sorted by key
  std::vector<api::OwnerReference> owner_references;
  std::string pod_ip;  // status.podIP (used by the controller's metric URLs)

  // controller.IsPodActive: not Succeeded/Failed and not being deleted.
  bool Active() const { return phase != "Succeeded" && phase != "Failed" && !deleting; }
  // The controller owner reference, or nullptr.
  const api::OwnerReference* ControllerRef() const;
  std::string Key() const { return namespace_ + "/" + name; }
};

// Decodes a v1 Pod (API JSON) into PodFacts. Fails only where api::DecodePod fails (the error
// names the pod and field); restart counts and the pod IP are read leniently.
common::StatusOr<PodFacts> DecodePodFacts(const boost::json::value& json);

// A pod ready for comparison: the facts plus the per-pass derived values.
struct RankedPod {
  PodFacts facts;
  DeletionCost cost;
  int32_t rank = 0;  // active related pods on the same node (0 without a controller owner)
};

// The comparator's rules, in order (§3). kTie: no rule distinguishes the pods.
enum class Rule : uint8_t {
  kUnassigned = 1,
  kPhase = 2,
  kReady = 3,
  kCost = 4,
  kRank = 5,
  kReadyTime = 6,
  kRestarts = 7,
  kCreation = 8,
  kTie = 9,
};
// "unassigned", "phase", "ready", "deletion-cost", "rank", "ready-time", "restarts",
// "creation-time", "tie".
std::string_view RuleName(Rule rule);

struct Verdict {
  bool less = false;  // true: the first pod is deleted before the second
  Rule rule = Rule::kTie;
  // How the rule decided, e.g. "bucket 33 < 36", "uid \"a1\" < \"a9\"", "cost -10 < 0".
  std::string detail;
};

// The upstream LESS(a, b) with the rule that decided it. `now` is the pass's single clock
// reading (zero TimePoint = unset: the time rules fall back to the legacy comparison).
Verdict Compare(const RankedPod& a, const RankedPod& b, common::TimePoint now,
                const RankingOptions& options = {});

// floor(log2(now − t)) in int64 nanoseconds, or −1 when now − t <= 0 (§3, the time rule).
int64_t TimeBucket(common::TimePoint t, common::TimePoint now);

// Orders `pods` by repeated minimum selection under Compare: the first `count` positions hold
// the `count` smallest (deleted first), and the rest is ordered the same way. Returns indices.
std::vector<size_t> OrderForDeletion(std::span<const RankedPod> pods, common::TimePoint now,
                                     const RankingOptions& options = {});

struct ScaleDownInput {
  // Pods claimed by the ReplicaSet (inactive ones are filtered here, as upstream does).
  std::vector<PodFacts> owned;
  // Pods selected by every ReplicaSet with the same controller owner, de-duplicated by UID.
  // Ignored when `has_controller_owner` is false (every rank is then 0).
  std::vector<PodFacts> related;
  bool has_controller_owner = true;
  int32_t replicas = 0;  // the ReplicaSet's new spec.replicas
  common::TimePoint now{};
};

struct ScaleDownPlan {
  // The active owned pods. When `ranked`, in deletion order (victims first); otherwise in input
  // order.
  std::vector<RankedPod> pods;
  // When ranked: why pods[i] precedes pods[i + 1] (size pods.size() − 1).
  std::vector<Verdict> adjacent;
  size_t inactive = 0;        // owned pods skipped by the active filter
  int64_t diff = 0;           // |active| − replicas (may be <= 0: nothing to delete)
  int32_t deletions = 0;      // victims this sync: min(max(diff, 0), 500)
  bool burst_capped = false;  // diff > 500
  bool ranked = false;        // false when nothing is deleted or every pod is
  // For each victim i (< deletions): Compare(victim, first survivor); empty when there is no
  // survivor.
  std::vector<Verdict> versus_survivor;
  // Survivors that tie (rule 9) with some victim: upstream may delete them instead, so only
  // sets without such ties are predictable exactly.
  std::vector<size_t> tied_survivors;
  // Victims whose comparison with the first survivor is a tie.
  std::vector<size_t> tied_victims;

  std::span<const RankedPod> victims() const {
    return std::span<const RankedPod>(pods).first(static_cast<size_t>(deletions));
  }
};

// The victims of one ReplicaSet sync (§1, §2, §4).
ScaleDownPlan PlanScaleDown(const ScaleDownInput& input, const RankingOptions& options = {});

// Active related pods per node, then rank = count on the pod's node (§2).
std::vector<RankedPod> RankPods(std::span<const PodFacts> active_owned,
                                std::span<const PodFacts> related, bool has_controller_owner);

}  // namespace gpusched::addons::deletion_cost
