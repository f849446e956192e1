// SPDX-License-Identifier: Apache-2.0
// The plugin contract: one interface per extension point, as in kube-scheduler's framework.
// A plugin class derives from Plugin and from each point it implements; the runtime calls them in
// the order the profile lists them. Each comment says what the framework does with the result.
//
// Threading: QueueSort runs on the queue's caller; Filter and Score may be called concurrently for
// different nodes of one pod (they are const and read only CycleState and the NodeInfo); every
// other point runs on the scheduling thread, except PreBind/Bind/PostBind, which run in the
// binding cycle on the executor.
//
// Hot path: Filter and Score are called per node. They must not allocate, lock or log; per-pod work
// belongs in PreFilter/PreScore and is read back from CycleState.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "src/api/types.h"
#include "src/common/clock.h"
#include "src/framework/cycle_state.h"
#include "src/framework/node_info.h"
#include "src/framework/status.h"

namespace gpusched::framework {

inline constexpr int64_t kMaxNodeScore = 100;
inline constexpr int64_t kMinNodeScore = 0;

// A pod waiting in the scheduling queue.
struct QueuedPodInfo {
  api::PodPtr pod;
  common::TimePoint timestamp;                  // when it was (re)added to the active queue
  common::TimePoint initial_attempt_timestamp;  // first time it was popped
  int32_t attempts = 0;
  // Plugins that rejected it in its last attempt: a cluster event moves the pod out of the
  // unschedulable pool only if one of them registered the event and its queueing hint says the
  // event may help (EnqueueExtensions below; SchedulingQueue::MoveOnEvent). Also reported (the
  // queue's scheduler_unschedulable_pods counts).
  std::vector<std::string> unschedulable_plugins;
};

class Plugin {
 public:
  virtual ~Plugin() = default;
  // The plugin's registered name, e.g. "GpuFit". Must outlive the plugin (a literal).
  virtual std::string_view Name() const = 0;

  // Node-locality: the contract that lets the runtime reuse Filter verdicts and raw Scores across
  // equivalent pods (runtime/result_cache.h). Return true only if, for pods with equal
  // equivalence keys (api/equivalence.h lists the pod fields in the key), this plugin's Filter
  // status and raw Score (Score/ScoreNodes output) for node N depend on nothing but those pod
  // fields, N's NodeInfo and plugin state covered by StateVersion() — not on other nodes, on
  // which nodes ScoreNodes is given (the runtime may pass only the nodes that changed), or on
  // earlier calls — and its rejection reasons are literals or interned strings. The default,
  // false, is always safe. What the runtime does with a plugin that is not node-local:
  //   Filter: if it runs for a pod, every node is filtered afresh in that cycle. So a cross-node
  //           plugin whose Filter cannot reject this pod (PodTopologySpread with only
  //           ScheduleAnyway constraints, InterPodAffinity without required terms on either side)
  //           must return kSkip from PreFilter: then its Filter is not called and stored verdicts
  //           of the other plugins are reused.
  //   Score:  its raw scores are computed afresh over all feasible nodes in every cycle (its
  //           PreScore sees the full feasible list), while node-local Score plugins' stored raw
  //           scores are reused per node; kSkip from PreScore skips it as usual.
  virtual bool NodeLocal() const { return false; }
  // For a node-local plugin whose verdicts or raw scores also depend on plugin-owned state that is
  // not per node (e.g. a learned pod distribution): a value that changes whenever that state
  // changes. Read after PreFilter (for Filter) and after PreScore (for Score). Default 0.
  virtual uint64_t StateVersion() const { return 0; }
  // Twin nodes: nodes in one Snapshot::twins group differ only in identity (name, uid,
  // resourceVersion, creationTimestamp, the kubernetes.io/hostname label; api/equivalence.h,
  // NodeTwinKey) and in which pods they hold: their NodeInfo aggregates (requested, pod_count,
  // gpus, used_ports) are equal. Return true only if this plugin is node-local and, for `pod` in
  // this cycle, gives two such nodes the same Filter status and the same raw Score: it reads none
  // of that identity for this pod (NodeName when the pod names no node, NodeAffinity when no term
  // names the hostname label or a field), nothing it looks up by node name, and not the node's
  // pods one by one (NodeInfo::pods, pod_devices, pod_priorities). Asked
  // after PreFilter (filters that run) and after PreScore (scorers that run); the runtime then
  // evaluates one node per group and gives the others its result. Default false (always safe).
  virtual bool SameForTwinNodes(const CycleState& /*state*/, const api::Pod& /*pod*/) const {
    return false;
  }
};

// Orders the active queue. Exactly one per profile.
class QueueSortPlugin : public virtual Plugin {
 public:
  // True when `a` must be scheduled before `b`.
  virtual bool Less(const QueuedPodInfo& a, const QueuedPodInfo& b) const = 0;
};

// Runs once per pod before Filter. Rejection makes the pod unschedulable without looking at any
// node; kSkip skips this plugin's Filter for the pod.
class PreFilterPlugin : public virtual Plugin {
 public:
  virtual Status PreFilter(CycleState& state, const api::Pod& pod, const Snapshot& snapshot) = 0;
};

// Runs per node. Success: the node fits as far as this plugin knows. Unschedulable(reason): the
// reason is counted in the pod's FailedScheduling message. Called concurrently for different
// nodes of one cycle (the runtime fans Filter out over `parallelism` threads): it reads the
// cycle state and the node and writes nothing shared (scratch space: thread_local).
class FilterPlugin : public virtual Plugin {
 public:
  virtual Status Filter(const CycleState& state, const api::Pod& pod,
                        const NodeInfo& node) const = 0;
};

// Why a node was rejected (explain and tests record every node's verdict).
struct NodeVerdict {
  NodeIndex node = kNoNode;
  Status status;
};

// What a PostFilter plugin is given besides the pod and the snapshot: the failed cycle's verdict
// per node, the profile's filters (to try the pod on a node the plugin changed, e.g. with
// preemption victims removed) and the pods nominated to each node. Valid during the PostFilter
// call only; called on the scheduling thread.
class PostFilterContext {
 public:
  virtual ~PostFilterContext() = default;
  // The code node `n` got in this cycle: kUnschedulable (it may fit once pods leave),
  // kUnschedulableAndUnresolvable (it will not; also for an empty slot), kSuccess (it passed).
  // After a PreFilter rejection, every node has that rejection's code.
  virtual Code NodeCode(NodeIndex n) const = 0;
  // The valid nodes whose code is kUnschedulable, ascending: where removing pods may help
  // (upstream's nodesWherePreemptionMightHelp). What testing NodeCode on every slot gives, read
  // from flat arrays where the cycle kept its verdicts; computed once per context.
  virtual std::span<const NodeIndex> PotentialNodes() const = 0;
  // Runs the Filter plugins that ran for `pod` in this cycle (those PreFilter did not skip) on
  // `node`, which may be a copy the plugin changed, counting the pods nominated to that node with
  // a priority at least the pod's as if they were there (kube-scheduler's
  // RunFilterPluginsWithNominatedPods: the pod must fit with them and without them).
  // The first rejection or error, with its plugin set.
  virtual Status RunFilters(const CycleState& state, const api::Pod& pod,
                            const NodeInfo& node) const = 0;
  // Pods nominated to node `n` (preemptors waiting for their victims to leave).
  virtual std::span<const api::PodPtr> NominatedPods(NodeIndex n) const = 0;
  // What the verdicts of RunFilters depend on besides the node and the pod's equivalence key
  // (api::SchedulingEquivalenceKey): the active Filter plugins and their StateVersion(), as
  // bytes, for a plugin that keeps per-node results across cycles (ResultCache's rule). Empty
  // when an active Filter plugin is not node-local: then nothing may be kept.
  virtual std::string_view FilterSignature() const { return {}; }
  // Another pod than the cycle's, for a plugin that plans where the pods it moves would go
  // (consolidation): PreFilterFor runs the PreFilter plugins for `other` into `state` (a fresh
  // CycleState the caller owns): Success, or the rejection or error. RunFiltersFor then runs
  // the Filter plugins that PreFilter left active in `state` on `node`, nominated pods counted
  // as in RunFilters.
  virtual Status PreFilterFor(CycleState& state, const api::Pod& other) const = 0;
  virtual Status RunFiltersFor(const CycleState& state, const api::Pod& other,
                               const NodeInfo& node) const = 0;
  // Explain: the plugin should try every node it may act on and record each one's outcome in
  // PostFilterResult::per_node. Its decision (node, victims) must be the one it makes without
  // recording.
  virtual bool RecordPerNode() const { return false; }
};

// One node's outcome in a PostFilter dry run, recorded when PostFilterContext::RecordPerNode
// (explain): Success with the pods that would be evicted there, or why the pod cannot fit there
// even then.
struct NodePostFilter {
  NodeIndex node = kNoNode;
  Status status;
  std::vector<api::PodPtr> victims;  // most important first
  int32_t pdb_violations = 0;        // victims whose eviction exceeds a disruption budget
};

// What a PostFilter plugin asks of the caller when it returns Success (or a rejection that
// changes the pod's nomination).
struct PostFilterResult {
  // The pod's status.nominatedNodeName: kNoop keeps it, kOverride sets it to `nominated_node`
  // ("" clears it).
  enum class Mode : uint8_t { kNoop, kOverride };
  Mode mode = Mode::kNoop;
  std::string nominated_node;
  // Pods the caller must evict (preempt) for the pod to fit on `nominated_node`, most important
  // first.
  std::vector<api::PodPtr> victims;
  // Consolidation: where each victim (same order) is to run again. Non-empty: the victims are
  // moved, not preempted: the caller evicts them through the Eviction API (all or nothing: it
  // stops at the first refusal) and holds the room on each destination for the replacement
  // its controller creates. Empty for preemption.
  std::vector<std::string> destinations;
  // The plugin that returned this result (set by the runtime): it rejects victims held at Permit.
  std::string_view plugin;
  // Every node the plugin tried, in the order tried; only when PostFilterContext::RecordPerNode.
  std::vector<NodePostFilter> per_node;
};

// Runs when no node fits (kube-scheduler's PostFilter: preemption). The pod is unschedulable in
// this cycle either way. Success: `result` says where it will fit once the victims are gone; the
// caller evicts them and nominates the pod. A rejection: the plugin could not help; its reason,
// if any, is appended to the FitError message ("preemption: 0/5 nodes are available: ..."), and
// the next PostFilter plugin runs. An error is logged and the next plugin runs.
class PostFilterPlugin : public virtual Plugin {
 public:
  virtual Status PostFilter(CycleState& state, const api::Pod& pod, const Snapshot& snapshot,
                            const PostFilterContext& context, PostFilterResult& result) = 0;
};

// Runs once per pod with the feasible nodes, before Score. kSkip skips this plugin's Score.
class PreScorePlugin : public virtual Plugin {
 public:
  virtual Status PreScore(CycleState& state, const api::Pod& pod, const Snapshot& snapshot,
                          std::span<const NodeIndex> feasible) = 0;
};

// Scores feasible nodes. Raw scores may be any int64; NormalizeScore (if the plugin has one) must
// map them into [kMinNodeScore, kMaxNodeScore]; the runtime multiplies by the profile weight and
// sums. ScoreNodes, the one scoring entry point, is called for the feasible nodes, `out[i]` the
// score of `nodes[i]`: once per pod, or on chunks of them concurrently (`parallelism`), so out[i]
// depends on nodes[i] alone (the same in any list) and ScoreNodes writes nothing shared. A plugin
// that scores node by node writes it with ScoreEach (below).
class ScorePlugin : public virtual Plugin {
 public:
  virtual void ScoreNodes(const CycleState& state, const api::Pod& pod, const Snapshot& snapshot,
                          std::span<const NodeIndex> nodes, std::span<int64_t> out) const = 0;
  // Whether NormalizeScore must be called.
  virtual bool HasNormalizeScore() const { return false; }
  virtual Status NormalizeScore(const CycleState& /*state*/, const api::Pod& /*pod*/,
                                std::span<int64_t> /*scores*/) const {
    return Status::Success();
  }
  // How ties between the nodes of the highest weighted total are broken, when this is the first
  // Score plugin of the profile (among those not skipped for the pod) with a rule other than
  // kNone. kNone everywhere: uniformly at random, as kube-scheduler's selectHost. kRawScore: the
  // tied node with the highest raw Score of this plugin (before NormalizeScore) wins, then at
  // random, so a plugin can score on the 0..100 scale shared with the others and still decide
  // between nodes that scale cannot tell apart (GpuFragmentation). kFirstNode: the tied node
  // first in the snapshot's order (the FGD paper's artifact; for reproducing it).
  enum class TieBreak : uint8_t { kNone, kRawScore, kFirstNode };
  virtual TieBreak TieBreakRule() const { return TieBreak::kNone; }
  // Explain only, never on the scheduling path: `raw`, this plugin's Score of `node` in the
  // cycle whose state is `state`, put in words, in the plugin's own units (e.g. "1
  // PreferNoSchedule taint not tolerated"); "" when the number speaks for itself.
  virtual std::string ExplainScore(const CycleState& /*state*/, const api::Pod& /*pod*/,
                                   const NodeInfo& /*node*/, int64_t /*raw*/) const {
    return {};
  }
};

// ScoreNodes for a plugin that scores node by node: out[i] = score(snapshot.at(nodes[i])), a
// direct call per node (`score` is inlined, not dispatched).
template <typename ScoreFn>
void ScoreEach(const Snapshot& snapshot, std::span<const NodeIndex> nodes, std::span<int64_t> out,
               ScoreFn&& score) {
  for (size_t i = 0; i < nodes.size(); ++i) out[i] = score(snapshot.at(nodes[i]));
}

// Reserve claims resources for the chosen node in plugin-owned state (and may fill
// state.allocation()). A failure runs Unreserve of every reserve plugin, in reverse order, and
// sends the pod back to the queue. Unreserve must be idempotent.
class ReservePlugin : public virtual Plugin {
 public:
  virtual Status Reserve(CycleState& state, const api::Pod& pod, const NodeInfo& node) = 0;
  virtual void Unreserve(CycleState& state, const api::Pod& pod, std::string_view node) = 0;
};

// Permit approves, rejects or delays (kWait with a timeout) binding.
class PermitPlugin : public virtual Plugin {
 public:
  virtual Status Permit(CycleState& state, const api::Pod& pod, std::string_view node,
                        common::Duration* wait_timeout) = 0;
};

// Binding cycle. PreBind prepares (e.g. writes the device annotation); Bind binds (kSkip: let the
// next binder do it); PostBind is informational.
class PreBindPlugin : public virtual Plugin {
 public:
  virtual Status PreBind(CycleState& state, const api::Pod& pod, std::string_view node) = 0;
};
class BindPlugin : public virtual Plugin {
 public:
  virtual Status Bind(CycleState& state, const api::Pod& pod, std::string_view node) = 0;
};
class PostBindPlugin : public virtual Plugin {
 public:
  virtual void PostBind(CycleState& state, const api::Pod& pod, std::string_view node) = 0;
};

// --- Queueing hints (upstream's EnqueueExtensions) ----------------------------------------------
// A pod rejected in a cycle waits in the unschedulable pool until a cluster event that one of the
// plugins that rejected it registered may make it schedulable, and that plugin's hint says it
// does for this pod (then it goes to backoff/active), as kube-scheduler's QueueingHints.

// The kind of object an event is about.
enum class EventResource : uint8_t {
  kNode,
  kAssignedPod,     // a pod bound to a node (added, deleted, updated)
  kUnscheduledPod,  // a pod not yet bound (e.g. another pending pod's labels changed)
  kPersistentVolume,
  kPersistentVolumeClaim,
  kStorageClass,
  kCSINode,
  kCSIDriver,
  kPodGroup,  // gangs (PodGroup, Volcano PodGroup, Workload)
  kResourceClaim,
  kResourceSlice,
  kDeviceClass,
  kWildCard,  // any resource (registered by plugins that cannot tell)
};

// What happened to the object, a bit set (an update may carry several bits).
enum ActionType : uint32_t {
  kAdd = 1U << 0,
  kDelete = 1U << 1,
  kUpdateNodeAllocatable = 1U << 2,
  kUpdateNodeLabel = 1U << 3,
  kUpdateNodeTaint = 1U << 4,
  kUpdateNodeCondition = 1U << 5,
  kUpdateNodeAnnotation = 1U << 6,
  kUpdatePodLabel = 1U << 7,
  kUpdatePodScaleDown = 1U << 8,  // an assigned pod's requests went down
  kUpdatePodToleration = 1U << 9,
  kUpdatePodSchedulingGatesEliminated = 1U << 10,
  kUpdateOther = 1U << 11,   // any other update (e.g. a PVC's or PV's status or spec)
  kUpdate = (1U << 12) - 4,  // every update bit
  kAllActions = ~0U,
};

struct ClusterEvent {
  EventResource resource = EventResource::kWildCard;
  uint32_t actions = kAllActions;  // ActionType bits
  // True when `happened` (one concrete event) is covered by this registration.
  bool Matches(const ClusterEvent& happened) const {
    return (resource == EventResource::kWildCard || resource == happened.resource) &&
           (actions & happened.actions) != 0;
  }
};

// The objects of one event: the old one (null on add) and the new one (null on delete). Pods and
// nodes are typed; other resources are the api type the resource names (api/volume.h ...), given
// as const void* and cast by the plugin that registered the event.
struct EventObjects {
  const api::Pod* old_pod = nullptr;
  const api::Pod* new_pod = nullptr;
  const api::Node* old_node = nullptr;
  const api::Node* new_node = nullptr;
  const void* old_obj = nullptr;
  const void* new_obj = nullptr;
};

enum class QueueingHint : uint8_t { kSkip, kQueue };

// Whether `event` may make `pod` (rejected by the plugin in its last attempt) schedulable. Called
// on the informer's thread with the queue's lock held: must be quick, must not call back into the
// scheduler. A null function means kQueue.
using QueueingHintFn = std::function<QueueingHint(const api::Pod& pod, const ClusterEvent& event,
                                                  const EventObjects& objects)>;

struct ClusterEventWithHint {
  ClusterEvent event;
  QueueingHintFn hint;
};

class EnqueueExtensions : public virtual Plugin {
 public:
  // The events that can make a pod this plugin rejected (or left Pending) schedulable. A plugin
  // that can reject pods but does not implement this is treated as registering every event with
  // no hint (upstream's default), so a missing registration only costs retries, never a stuck pod.
  virtual std::vector<ClusterEventWithHint> EventsToRegister() const = 0;
};

}  // namespace gpusched::framework
