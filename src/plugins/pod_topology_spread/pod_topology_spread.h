// SPDX-License-Identifier: Apache-2.0
// PodTopologySpread: kube-scheduler's podtopologyspread plugin
// (pod.spec.topologySpreadConstraints).
//
//   PreFilter  takes the pod's DoNotSchedule constraints (or the default constraints, see below)
//              and counts, per constraint and topology domain, the pods matching the constraint's
//              selector in the pod's namespace (terminating and terminal pods excluded) over the
//              nodes that carry every constraint's topology key and pass the constraint's
//              nodeAffinityPolicy (Honor: the pod's nodeSelector / required node affinity) and
//              nodeTaintsPolicy (Honor: the node's NoSchedule/NoExecute taints are tolerated). It
//              keeps, per constraint, the global minimum and the number of domains.
//              kSkip when there is no DoNotSchedule constraint.
//   Filter     per constraint: a node without the topology key is UnschedulableAndUnresolvable
//              "node(s) didn't match pod topology spread constraints (missing required label)";
//              skew = matching pods in the node's domain + (1 if the pod matches its own selector)
//              - global minimum (0 while fewer than minDomains domains exist) must be <= maxSkew,
//              else Unschedulable "node(s) didn't match pod topology spread constraints".
//   PreScore   the same for ScheduleAnyway constraints over the feasible nodes' domains; kSkip
//              when there is none.
//   Score      sum over constraints of count * log(domains + 2) + (maxSkew - 1), the count of the
//              node's domain (the node's own pods for kubernetes.io/hostname); nodes without all
//              topology keys are ignored (they score 0 after normalization).
//   NormalizeScore  100 * (max + min - s) / max: fewer matching pods score higher.
//
// Default constraints apply when the pod has no topologySpreadConstraints. defaultingType System
// (the default) uses topology.kubernetes.io/zone maxSkew 5 and kubernetes.io/hostname maxSkew 3,
// both ScheduleAnyway; List uses defaultConstraints from the args. Upstream derives their selector
// from the Services, ReplicationControllers, ReplicaSets and StatefulSets selecting the pod; the
// scheduler has no listers for those, so the selector here is "pods of the same controller"
// (the controller ownerReference: kind, name and uid), for controllers of kind ReplicaSet,
// StatefulSet or ReplicationController. Other pods (bare, Job, ...) get no default constraints:
// upstream gives them none either unless a Service selects them. With System defaulting nodes
// lacking the zone label still get hostname spreading.
//
// Args (PodTopologySpreadArgs):
//   defaultingType      System (default) | List
//   defaultConstraints  [{maxSkew >= 1, topologyKey, whenUnsatisfiable, minDomains?}], no
//                       labelSelector; only with List; (topologyKey, whenUnsatisfiable) unique.
//
// Data layout: a node's domain is a dense index, kept per topology key in a memo rebuilt only when
// the snapshot's node set changes (helper::TopologyDomains); counts are flat arrays indexed by
// domain. The number of pods on each node matching a selector (namespace + controller, or
// namespace + labelSelector) is memoised per selector in flat arrays stamped with the node's
// generation (Snapshot::generations(), bumped by the cache on every change of the node or its
// pods), so PreFilter/PreScore recount only nodes that changed since the selector was last used:
// O(nodes) per pod instead of O(pods in the cluster). Snapshots without generations (0, filled by
// hand) are always recounted. Filter and Score are O(constraints), allocation-free and const;
// they may run concurrently. PreFilter/PreScore run on the owning framework's scheduling thread.
//
// Result reuse (framework/plugin.h): not node-local (counts span nodes). PreFilter returns kSkip
// when the pod has no DoNotSchedule constraint (e.g. a Deployment's pod with the System
// defaults), so stored Filter verdicts of the node-local plugins stay usable; at Score only this
// plugin is recomputed over the feasible nodes.
#pragma once

#include <boost/json/fwd.hpp>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "src/api/types.h"
#include "src/common/status.h"
#include "src/framework/handle.h"
#include "src/framework/plugin.h"
#include "src/framework/registry.h"
#include "src/plugins/helper/topology_domains.h"

namespace gpusched::plugins::pod_topology_spread {

inline constexpr std::string_view kReasonConstraintsNotMatch =
    "node(s) didn't match pod topology spread constraints";
inline constexpr std::string_view kReasonNodeLabelNotMatch =
    "node(s) didn't match pod topology spread constraints (missing required label)";

// One default constraint (no selector: it is derived per pod).
struct DefaultConstraint {
  int32_t max_skew = 1;
  common::Atom topology_key;
  api::TopologySpreadConstraint::WhenUnsatisfiable when_unsatisfiable =
      api::TopologySpreadConstraint::WhenUnsatisfiable::kDoNotSchedule;
  std::optional<int32_t> min_domains;
};

// Decoded, defaulted and validated PodTopologySpreadArgs.
struct Args {
  enum class DefaultingType : uint8_t { kSystem, kList };
  DefaultingType defaulting_type = DefaultingType::kSystem;
  std::vector<DefaultConstraint> default_constraints;  // List only

  // The constraints used for a pod without its own: System's or the List.
  std::vector<DefaultConstraint> EffectiveDefaults() const;
};

// Parses and validates the args object (null or {} = defaults). Every error names its field:
// "defaultConstraints[0].maxSkew: must be in 1..2147483647, got 0".
common::StatusOr<Args> ParseArgs(const boost::json::value& args);

// Matching-pod counts per node for one selector, stamped with the node's generation (see the
// data layout above). Owned by the plugin, scheduling thread only.
struct SelectorCountMemo {
  std::string key;  // canonical selector encoding (namespace, controller or labelSelector)
  uint64_t last_used = 0;
  std::vector<uint64_t> gen;  // per slot: the generation `count` was taken at (0: never valid)
  std::vector<int32_t> count;
  std::vector<uint64_t> stamp;  // per slot: the PreScore call that last refreshed `count` there
};

class PodTopologySpread final : public framework::PreFilterPlugin,
                                public framework::FilterPlugin,
                                public framework::PreScorePlugin,
                                public framework::ScorePlugin,
                                public framework::EnqueueExtensions {
 public:
  explicit PodTopologySpread(Args args);
  static common::StatusOr<framework::PluginPtr> Create(const boost::json::value& args,
                                                       framework::Handle& handle);

  std::string_view Name() const override;
  // The cluster events that can make a pod this plugin rejected schedulable, with their hints
  // (upstream's EventsToRegister and isSchedulableAfter* functions).
  std::vector<framework::ClusterEventWithHint> EventsToRegister() const override;
  framework::Status PreFilter(framework::CycleState& state, const api::Pod& pod,
                              const framework::Snapshot& snapshot) override;
  framework::Status Filter(const framework::CycleState& state, const api::Pod& pod,
                           const framework::NodeInfo& node) const override;
  framework::Status PreScore(framework::CycleState& state, const api::Pod& pod,
                             const framework::Snapshot& snapshot,
                             std::span<const framework::NodeIndex> feasible) override;
  void ScoreNodes(const framework::CycleState& state, const api::Pod& pod,
                  const framework::Snapshot& snapshot, std::span<const framework::NodeIndex> nodes,
                  std::span<int64_t> out) const override;
  bool HasNormalizeScore() const override { return true; }
  // matching pods in the node's domains ... (fewer is better)
  std::string ExplainScore(const framework::CycleState& state, const api::Pod& pod,
                           const framework::NodeInfo& node, int64_t raw) const override;
  framework::Status NormalizeScore(const framework::CycleState& state, const api::Pod& pod,
                                   std::span<int64_t> scores) const override;

 private:
  Args args_;
  std::vector<DefaultConstraint> defaults_;
  bool system_defaulted_ = true;
  // Dense domain index per topology key (scheduling thread only), refreshed at the start of
  // PreFilter and PreScore. CycleState written by PreFilter points into it: it is valid for this
  // pod's Filter calls (a snapshot without a version rebuilds the memo at PreScore, after Filter
  // is done).
  helper::TopologyDomains domains_;

  static constexpr size_t kMaxCountMemos = 64;
  // The memo for `key` on `snapshot` (LRU; all are dropped when the snapshot object changes or
  // its generation goes backwards). Pointers into an entry's arrays stay valid until the next
  // call that evicts it; two calls in one PreFilter/PreScore never evict each other's entry.
  SelectorCountMemo& Memo(const framework::Snapshot& snapshot, std::string_view key);
  std::vector<SelectorCountMemo> memos_;
  const framework::Snapshot* memo_snapshot_ = nullptr;
  uint64_t memo_generation_ = 0;
  uint64_t memo_tick_ = 0;
  uint64_t memo_stamp_ = 0;
  std::string key_buf_;
  std::vector<framework::NodeIndex> counted_;  // PreScore: the feasible nodes that count

  // Which nodes count for a pod under nodeAffinityPolicy/nodeTaintsPolicy Honor depends only on
  // the node objects and the pod's nodeSelector/affinity/tolerations: memoised per (policies, pod
  // equivalence key) for one node_set_version (LRU of kMaxCountMemos; dropped with the node set).
  struct InclusionMemo {
    std::string key;
    uint64_t last_used = 0;
    std::vector<uint8_t> included;  // per slot
  };
  // The per-slot inclusion for the pod under the given policies; nullptr when the snapshot has
  // no node_set_version (evaluate per node).
  const uint8_t* Inclusion(const framework::Snapshot& snapshot, const api::Pod& pod,
                           bool honor_affinity, bool honor_taints);
  std::vector<InclusionMemo> inclusion_;
  const framework::Snapshot* inclusion_snapshot_ = nullptr;
  uint64_t inclusion_version_ = 0;
  size_t inclusion_slots_ = 0;
  uint64_t inclusion_tick_ = 0;
  std::string inclusion_key_;
};

}  // namespace gpusched::plugins::pod_topology_spread
