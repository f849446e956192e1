// SPDX-License-Identifier: Apache-2.0
// Scheduler: the loop. It owns the cache and the other stores, the queue and one Framework per
// profile; its EventHandler (events()) is what informers (or the simulator) feed, and it is the
// framework Handle that plugins get. It links no plugin and cannot tell whether it runs against a
// real API server or the simulator: everything outside its memory arrives through SchedulerDeps.
//
// ScheduleOne (one pod, as kube-scheduler's schedule_one.go):
//   scheduling cycle (caller's thread):  pop → snapshot → SchedulePod → BindingCycle::Reserve
//                                        (Reserve → assume → Permit)
//   binding cycle (deps.executor):       BindingCycle::Bind (wait for Permit → PreBind → Bind →
//                                        FinishBinding → PostBind) → "Scheduled" event
//   any failure after assume:            Unreserve → ForgetPod → requeue (backoff for errors,
//                                        unschedulable for a Permit rejection or timeout)
//   no fit:                              PostFilter (preemption, preemption.cc): evict the victims
//                                        it chose (DisruptionTarget condition, delete, "Preempted"
//                                        event) and nominate the pod to their node; requeue as
//                                        unschedulable; PodScheduled=False condition (and
//                                        nominatedNodeName) and a FailedScheduling event with the
//                                        FitError message
//   gang member (a pod of a PodGroup, Volcano PodGroup or Workload pod group with a gang policy):
//                                        the gang cycle (gang_cycle.cc) places every waiting
//                                        member of its gang in one cycle, all or none
//   Tick (every second of deps.clock, from Run; tests and the simulator call it): flush the
//                                        queue's backoff, expire assumed pods and Permit waits,
//                                        write changed PodGroup statuses
//
// Threading: event handlers may be called from informer threads while ScheduleOne runs on the
// scheduling thread; binding cycles run on the executor. Only one thread calls
// ScheduleOne/Run/Tick.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "src/binding/binding_cycle.h"
#include "src/cache/cache.h"
#include "src/cache/gang_store.h"
#include "src/cache/network_store.h"
#include "src/common/clock.h"
#include "src/common/executor.h"
#include "src/common/mutex.h"
#include "src/common/random.h"
#include "src/config/config.h"
#include "src/events/dra_events.h"
#include "src/events/event_handler.h"
#include "src/events/volume_events.h"
#include "src/framework/handle.h"
#include "src/framework/network_view.h"
#include "src/framework/registry.h"
#include "src/framework/runtime/framework.h"
#include "src/kube/api_client.h"
#include "src/metrics/scheduler_metrics.h"
#include "src/queue/scheduling_queue.h"

namespace gpusched::scheduler {

struct SchedulerDeps {
  const common::Clock& clock;           // SystemClock; FakeClock in tests; sim clock in sim
  common::Random& random;               // tie-breaks; seeded in tests and sim
  kube::ApiClient& api;                 // real client or sim::SimCluster
  common::Executor& executor;           // binding cycles; inline in sim
  const framework::Registry& registry;  // plugins
  // kube-scheduler's metrics (metrics_callbacks.h registers the scrape-time ones); null: none
  // (unit tests, the simulator). Must outlive the Scheduler; its registry must not be scraped
  // after the Scheduler is destroyed.
  metrics::SchedulerMetrics* metrics = nullptr;
  // With metrics: node label keys tried in order for the node_group label of the
  // gpusched_cluster_* gauges (metrics_callbacks.h).
  std::vector<std::string> node_group_labels;
  // The network data plugins read through Handle::network() (NetworkLocality), which the
  // event handler's AppGroup and NetworkTopology events feed; null: none, the plugin then uses
  // pod annotations alone and those events are ignored. Must outlive the Scheduler.
  cache::NetworkStore* network = nullptr;
};

// The outcome of one attempt, reported to the observer (simulator report, decision log, tests).
struct Decision {
  api::PodPtr pod;
  std::string profile;
  std::string node;        // empty when not placed
  bool scheduled = false;  // bound (binding cycle finished OK)
  bool error = false;      // infrastructure/plugin error, not a fit failure
  std::string message;     // FitError message or error text
  framework::runtime::Diagnosis diagnosis;
  api::GpuAssignment gpu;
  framework::runtime::NodeCounts counts;  // of the attempt
  // The best weighted totals of the attempt, best first (at most 3; empty when Score did not
  // run, e.g. a single feasible node). Filled only when an observer is set.
  struct NodeScore {
    std::string node;
    int64_t score = 0;
  };
  std::vector<NodeScore> top_scores;
  // Preemption in this attempt: the node the pod is nominated to (empty: none) and the pods
  // evicted for it there.
  std::string nominated_node;
  std::vector<api::PodPtr> victims;
  // Consolidation: where each victim (same order) moves; empty for preemption.
  std::vector<std::string> destinations;
};
using DecisionObserver = std::function<void(const Decision&)>;

// What the scheduler did with a PostFilter result: the pod as its status is written
// (nominatedNodeName set or cleared) and the victims it evicted.
struct PostFilterOutcome {
  api::PodPtr status_pod;
  std::vector<api::PodPtr> victims;
  std::vector<std::string> destinations;  // consolidation: where each victim moved
};

struct SchedulerStats {
  std::atomic<int64_t> scheduled{0};
  std::atomic<int64_t> unschedulable{0};
  std::atomic<int64_t> errors{0};
};

class Scheduler final : public framework::Handle {
 public:
  static common::StatusOr<std::unique_ptr<Scheduler>> Create(const config::SchedulerConfig& config,
                                                             SchedulerDeps deps);
  ~Scheduler() override;

  // The one entry point for cluster objects (event_handler.h): informers, the simulator's
  // cluster, --replay, --from-cluster and explain feed the scheduler through it.
  events::EventHandler& events() { return *events_; }

  // Queueing hints on (the default) or off (every event moves every unschedulable pod); for
  // before/after comparisons (gpusched-bench --hints off).
  void SetQueueingHints(bool on) { queue_->SetHintsEnabled(on); }

  // framework::Handle
  const common::Clock& clock() const override { return deps_.clock; }
  common::Status BindPod(const api::Pod& pod, std::string_view node,
                         const framework::Allocation& allocation) override;
  framework::WaitingPods& waiting_pods() override { return waiting_; }
  std::vector<api::PdbPtr> PodDisruptionBudgets() const override { return pdbs_.List(); }
  framework::Gangs* gangs() override { return &gangs_; }
  const framework::NetworkView* network() const override { return deps_.network; }
  framework::VolumeView* volumes() override { return &volume_data_.store; }
  // Fed through events(), by the informers or the simulator's cluster alike.
  framework::DraView* dra() override { return &dra_data_.store; }
  // The store behind dra(), for the simulator's invariant check.
  cache::DraStore& dra_store() { return dra_data_.store; }
  const cache::DraStore& dra_store() const { return dra_data_.store; }

  // A node's measured GPU utilization (0..1), from the DCGM refresher; thread-safe.
  void SetGpuUtilization(std::string_view node, double utilization);

  // One scheduling cycle for the next ready pod (non-blocking). Returns false when no pod was
  // ready. With an inline executor the binding cycle has finished when it returns (unless a
  // Permit plugin holds the pod).
  bool ScheduleOne();
  // The periodic work: backoff pods whose time is up go to the active queue, pods stuck in the
  // unschedulable pool are flushed, assumed pods never confirmed expire, Permit waits time out.
  void Tick();
  // Blocks, scheduling pods as they become ready and calling Tick every second of deps.clock,
  // until Stop().
  void Run();
  void Stop();

  // Runs the algorithm for `pod` with per-node verdicts and score breakdowns, reserving nothing.
  common::StatusOr<framework::runtime::ScheduleResult> Explain(const api::Pod& pod);
  // The nodes `pod` fits on now: its profile's PreFilter and Filter over every node, reserving
  // nothing; no PostFilter and no score explanations, so it costs about one scheduling cycle
  // (Explain's per-node score texts cost far more). Slots in the snapshot (snapshot()).
  common::StatusOr<std::vector<framework::NodeIndex>> FeasibleNodes(const api::Pod& pod);
  // For a member of a gang with a known policy: the gang cycle tried for `pod` and the members
  // the queue holds, then rolled back (every reservation abandoned; nothing bound or written),
  // saying whether the gang fits now and, if not, why. nullopt for a pod in no gang. Call it on a
  // scheduler that is not running (gang_cycle.cc).
  struct GangExplanation {
    std::string gang;  // "gang PodGroup ml/train"
    int32_t min_member = 0;
    int32_t members = 0;  // queued (with `pod`) plus reserved or bound
    bool fits = false;
    bool awaiting_victims = false;  // a preemption it made is under way (message: its victims)
    std::string message;            // why not; empty when it fits
    std::vector<std::pair<std::string, std::string>> nodes;  // fits: member -> node
  };
  std::optional<GangExplanation> ExplainGang(const api::Pod& pod);

  // Called once per attempt (after the binding cycle for a placement), on the scheduling or a
  // binding thread. Set before the first cycle.
  void SetDecisionObserver(DecisionObserver observer) { observer_ = std::move(observer); }
  // Adds `observer` after the one already set (e.g. the decision log beside the simulator's).
  void AddDecisionObserver(DecisionObserver observer) {
    if (!observer_) {
      observer_ = std::move(observer);
      return;
    }
    observer_ = [first = std::move(observer_), second = std::move(observer)](const Decision& d) {
      first(d);
      second(d);
    };
  }
  // When on, every bind also writes the annotation gpusched.io/decision (DecisionAnnotation) with
  // the node, its score, the runner-up and feasible/total. Off by default. Set before Run().
  void SetDecisionAnnotation(bool on) { decision_annotation_ = on; }
  bool Responsible(const api::Pod& pod) const;

  // Read-only views for the simulator, the metrics callbacks and tests.
  const framework::Snapshot& snapshot() const { return snapshot_; }
  queue::QueueCounts PendingCounts() const { return queue_->Counts(); }
  bool IsQueued(const std::string& uid) const { return queue_->Contains(uid); }
  bool IsAssumed(std::string_view uid) const { return cache_.IsAssumed(uid); }
  bool InCache(std::string_view uid) const { return cache_.Contains(uid); }
  std::optional<api::GpuAssignment> GpuAssignmentOf(std::string_view uid) const {
    return cache_.GpuAssignmentOf(uid);
  }
  common::Status CheckCacheInvariants() const { return cache_.CheckInvariants(); }
  size_t WaitingPodCount() const { return waiting_.size(); }
  // The node `uid` is nominated to (preemption), or "".
  std::string NominatedNodeOf(std::string_view uid) const { return nominator_.NodeOf(uid); }
  const SchedulerStats& stats() const { return stats_; }
  // Every gang the scheduler knows (members seen, placed, waiting, timed out).
  std::vector<cache::GangStore::GangState> GangStates() const { return gangs_.States(); }
  framework::runtime::Framework* FrameworkFor(std::string_view scheduler_name);
  // Explain and FeasibleNodes: the pod's profile (the first when it names none of ours), or null;
  // the snapshot is brought up to date when there is one.
  framework::runtime::Framework* WhatIfFramework(const api::Pod& pod);

 private:
  explicit Scheduler(SchedulerDeps deps);
  void ScheduleQueued(framework::QueuedPodInfo qp);
  // What the binding half needs of the scheduling cycle that started it.
  struct Placement {
    framework::QueuedPodInfo qp;
    framework::runtime::NodeCounts counts;
    std::vector<Decision::NodeScore> top;
    std::optional<metrics::Stopwatch> attempt;
  };
  // What a failed attempt reports.
  struct Failure {
    framework::Status status;
    // The Filter verdicts (FitError); null for an error before or after them.
    const framework::runtime::Diagnosis* diagnosis = nullptr;
    framework::runtime::NodeCounts counts;
    const metrics::Stopwatch* attempt = nullptr;     // null: no attempt metrics
    const PostFilterOutcome* post_filter = nullptr;  // what a PostFilter did, if one ran
  };
  // Requeues the pod, records the failure (condition, event, metrics) and reports the Decision.
  void HandleFailure(framework::runtime::Framework& fw, const framework::QueuedPodInfo& qp,
                     const Failure& failure);
  // The binding cycle's end: success (events, metrics, report) or the failure path.
  void FinishPlacement(framework::runtime::Framework& fw, const binding::Attempt& a,
                       const Placement& p, const framework::Status& status);
  void RecordScheduled(framework::runtime::Framework& fw, const binding::Attempt& a,
                       const Placement& p);
  Placement DescribePlacement(framework::QueuedPodInfo qp,
                              const framework::runtime::ScheduleResult& r,
                              std::optional<metrics::Stopwatch> attempt) const;
  void Report(Decision&& d);
  // Carries out a PostFilter result (preemption.cc): evicts the victims, clears the nominations of
  // lower-priority pods on the node, records the pod's own nomination.
  PostFilterOutcome ApplyPostFilter(const framework::runtime::Framework& fw, const api::PodPtr& pod,
                                    const framework::runtime::ScheduleResult& result);
  common::Status EvictVictims(const api::Pod& preemptor, std::string_view node,
                              std::string_view plugin, std::span<const api::PodPtr> victims);
  void ClearLowerPriorityNominations(const api::Pod& preemptor, std::string_view node);
  // Consolidation (consolidation.cc): evicts pf.victims in order through the Eviction API until
  // one is refused, holding each evicted pod's destination for its replacement; returns how
  // many moved.
  size_t MovePods(const api::Pod& pod, const framework::PostFilterResult& pf);
  void HoldRoom(const api::Pod& moved, const std::string& node);
  // A pod of a controller that has planned room takes the oldest one: its nomination.
  void ClaimPlannedRoom(const api::PodPtr& pod);
  void ExpirePlannedRooms();

  // The gang cycle (gang_cycle.cc).
  struct GangMember {
    framework::QueuedPodInfo qp;
    binding::Attempt attempt;
    Placement placement;
  };
  struct GangTry {
    std::vector<GangMember> placed;                  // reserved, in placement order
    std::vector<framework::QueuedPodInfo> unplaced;  // the first that did not fit, and the rest
    std::string failure;                             // why the first unplaced one did not fit
  };
  struct GangDomain {
    framework::Gangs::Domain domain;
    int64_t free_gpu_milli = 0;
  };
  // False when `qp` is no member of a gang with a known gang policy (it is scheduled alone).
  bool ScheduleGang(framework::QueuedPodInfo& qp);
  // One gang cycle for `qp`'s gang; its result as scheduler_podgroup_schedule_attempts_total
  // counts it ("scheduled", "unschedulable", "waiting_on_preemption").
  std::string_view RunGangCycle(framework::QueuedPodInfo& qp, const api::PodGroup& policy);
  // "" when the cluster's free resources cover policy.min_resources, else what is missing.
  std::string MinResourcesShortfall(const api::PodGroup& policy) const;
  GangTry PlaceGang(const std::string& key, const api::PodGroup& policy,
                    std::vector<framework::QueuedPodInfo> members);
  // A trial in each domain of node label `label` (GangDomains; the first `max_domains`), the best
  // kept; `required`: no fallback to the whole cluster.
  GangTry PlaceGangInDomains(const std::string& key, std::string_view label, bool required,
                             std::vector<framework::QueuedPodInfo> members,
                             size_t max_domains = SIZE_MAX);
  // Reserves `members` one after another, restricted to `domain` when set; stops at the first
  // that does not fit.
  GangTry TryPlaceGang(const std::string& key, std::vector<framework::QueuedPodInfo> members,
                       const std::optional<framework::Gangs::Domain>& domain);
  // Abandons every reservation of `t` (Unreserve, forget); returns all its members.
  std::vector<framework::QueuedPodInfo> AbandonGang(GangTry& t);
  // The values of node label `label` whose free GPUs could hold `members`, tightest first.
  std::vector<GangDomain> GangDomains(std::string_view label,
                                      const std::vector<framework::QueuedPodInfo>& members) const;
  // Free GPU milli left on the nodes `t` placed members on.
  int64_t StrandedGpuMilli(const GangTry& t);
  void CommitGang(const api::PodGroup& policy, const std::string& key, GangTry t);
  // Every member back to the unschedulable pool with the FitError "0/N nodes are available:
  // <message>." (plugin GangScheduling).
  // `preempted`: per member uid, the nomination (and victims) gang preemption gave it.
  void FailGang(std::vector<framework::QueuedPodInfo> members, const std::string& message,
                const std::map<std::string, PostFilterOutcome>* preempted = nullptr);
  // Gang preemption (gang_preemption.cc): when the gang does not fit as the cluster is, a node
  // (and the pods of lower priority to evict there) for each of its first `need` members, found
  // one after another with every earlier member nominated to its node and its victims treated as
  // gone, then each victim reprieved if the members fit without it, then proven: every member
  // fits on its node with all the victims gone. All of them, or nothing is evicted and no
  // nomination is kept. `message` is empty when nothing was done.
  struct GangPreemption {
    std::string message;
    std::map<std::string, PostFilterOutcome> outcomes;  // by member uid
  };
  GangPreemption PreemptForGang(const api::PodGroup& policy,
                                const std::vector<framework::QueuedPodInfo>& members, int32_t need);
  // A gang preemption's plan.
  struct GangPlan {
    struct Member {
      api::PodPtr pod;  // with nominated_node_name set to `node`
      std::string node;
      std::string previous;  // the nomination before the plan ("" when none)
      std::vector<api::PodPtr> victims;
      std::string_view plugin;
      // Consolidation: where each victim moves (same order); empty for a preemption.
      std::vector<std::string> destinations;
      // While planning, the moved pods' rooms at their destinations, nominated under the uid
      // "gang-plan:<uid>" at the member's priority so that later members and their moves count
      // them; removed once the plan is applied or dropped.
      std::vector<api::PodPtr> holds;
    };
    std::vector<Member> members;
    int64_t victims = 0;  // distinct victims
    std::string failure;  // why no plan (then nothing may be evicted); "" when proven
  };
  // The plan for the first `need` of `members`, nominating each member as it goes (undo with
  // UndoGangPlan), then proven (ProveGangPlan).
  GangPlan PlanGangPreemption(const std::vector<framework::QueuedPodInfo>& members, int32_t need);
  // The same in each domain of a required topology key, the one with the fewest victims kept
  // (its nominations set); the whole cluster without one.
  GangPlan PlanGangPreemptionInDomains(const api::PodGroup& policy,
                                       const std::vector<framework::QueuedPodInfo>& members,
                                       int32_t need);
  // Gang-level reprieve (as DefaultPreemption's on one node): each victim, most important first,
  // is kept when every member still finds a node with the other victims gone (placed one after
  // another, each on its nominated node first); the members' nodes follow the last placement
  // that worked. Every victim left is needed by that placement.
  void ReprieveGangVictims(GangPlan& plan);
  // Places plan's members one after another as the cluster is without `victims` (no PostFilter);
  // true, with the members' nodes and nominations updated, when all fit, else nothing changes.
  bool PlaceGangPlanWithout(GangPlan& plan, const std::vector<api::PodPtr>& victims);
  // "" when every member of `plan` passes PreFilter and Filter on its node with every victim of
  // the plan gone and every other nominated pod counted; else which member fails and why.
  std::string ProveGangPlan(const GangPlan& plan);
  // Applies a consolidation member's moves (MovePods), recording them in out.outcomes; false when
  // an eviction was refused (the moves before it are recorded).
  bool MoveForGangMember(const GangPlan::Member& member, GangPreemption& out);
  // After a refused move: no member stays nominated (each back to its earlier nomination, also
  // in the outcomes' status pods) and the gang is unschedulable, not waiting.
  void RefuseGangPlan(const GangPlan& plan, GangPreemption& out);
  // Drops the plan's nominations (back to each member's earlier one) and its holds.
  void UndoGangPlan(const GangPlan& plan);
  void DropGangPlanHolds(const GangPlan& plan);
  // "waits for the pods it preempted to leave (<victims>); members nominated: <pod -> node>", or
  // "" when no member's nominated node has a pod terminating after a preemption.
  std::string GangWaitText(const std::vector<framework::QueuedPodInfo>& members) const;
  // Marks the gangs whose schedule timeout passed unplaced (events on their members).
  void ExpireGangTimeouts();
  // Writes the PodGroup statuses that changed since the last write (gang_status.cc).
  void SyncGangStatuses();

  SchedulerDeps deps_;
  events::VolumeData volume_data_{&deps_.api};  // after deps_
  events::DraData dra_data_{&deps_.api};        // after deps_
  cache::Cache cache_;
  cache::GangStore gangs_;
  // The last status written per policy key (scheduling thread).
  std::map<std::string, api::PodGroupStatus> gang_status_written_;
  framework::runtime::WaitingPodMap waiting_;
  framework::runtime::Nominator nominator_;
  // Room held for the replacements of moved pods, by controller uid, oldest first (scheduling
  // thread).
  struct PlannedRoom {
    std::string placeholder_uid;
    std::string node;
    common::TimePoint until;
  };
  static constexpr common::Duration kPlannedRoomHold = std::chrono::minutes(5);
  std::map<std::string, std::vector<PlannedRoom>, std::less<>> planned_rooms_;
  cache::PdbStore pdbs_;
  binding::BindingCycle binding_;
  std::unique_ptr<queue::SchedulingQueue> queue_;
  std::unique_ptr<events::EventHandler> events_;  // feeds the stores above and queue_
  // The profiles' fan-out over nodes (`parallelism`); declared before the frameworks that use it.
  std::unique_ptr<common::Parallelizer> parallel_;
  std::vector<std::unique_ptr<framework::runtime::Framework>> frameworks_;
  framework::Snapshot snapshot_;
  DecisionObserver observer_;
  SchedulerStats stats_;
  std::atomic<bool> stopping_{false};
  common::TimePoint next_tick_{};
  bool decision_annotation_ = false;
};

// The pod annotation the scheduler writes with SetDecisionAnnotation(true).
inline constexpr std::string_view kDecisionAnnotation = "gpusched.io/decision";
// Its value: compact JSON, e.g.
//   {"node":"gpu-1","score":180,"runnerUp":{"node":"gpu-2","score":120},"feasible":3,"total":5}
// "score" and "runnerUp" are absent when Score did not run (a single feasible node).
std::string DecisionAnnotationValue(std::string_view node,
                                    const framework::runtime::ScheduleResult& result,
                                    const framework::Snapshot& snapshot);

}  // namespace gpusched::scheduler
