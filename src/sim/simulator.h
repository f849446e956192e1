// SPDX-License-Identifier: Apache-2.0
// Simulator: replays a Workload against the production Scheduler. It has no scheduling logic of
// its own; it only wires the Scheduler to simulated surroundings and drives it:
//
//   SchedulerDeps { clock: FakeClock (sim time), random: seeded, api: SimCluster,
//                   executor: InlineExecutor, registry: the caller's }
//
//   AddNode(node)   -> SimCluster::AddNode -> the scheduler's EventHandler::OnNodeAdd
//   SubmitPod(pod)  -> advance sim time by arrival_interval -> SimCluster::CreatePod ->
//                      EventHandler::OnPodAdd -> ScheduleOne() until no pod is ready
//                      (binds go through SimCluster::BindPod and come back as OnPodUpdate before
//                      ScheduleOne returns, because the executor is inline)
//
// Every attempt's scheduler::Decision is recorded per pod (PodOutcome, last attempt wins).
// Options:
//   retry = false       the FGD protocol: a pod that fails is deleted at once, never retried.
//   check_invariants    after every placement: Cache::CheckInvariants(), the SimCluster
//                       ledger (no GPU device above 1000 milli, no cpu/memory/pods over-commit)
//                       and DraStore::CheckInvariants() (no DRA device in two claims, no counter
//                       over-drawn);
//                       the first violation fails SubmitPod/Run with kInternal.
// With retry = true an unschedulable pod waits in the scheduler's unschedulable pool and is
// retried only when a cluster event moves it (a node added, a pod deleted), as in a real cluster;
// sim time never runs the periodic flush.
//
// Wall time (decisions per second) is measured with the caller's clock; nothing here reads the
// system clock. Threading: single-threaded; one Simulator per thread.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "src/api/types.h"
#include "src/cache/dra_store.h"
#include "src/cache/network_store.h"
#include "src/common/clock.h"
#include "src/common/executor.h"
#include "src/common/random.h"
#include "src/common/status.h"
#include "src/config/config.h"
#include "src/framework/registry.h"
#include "src/scheduler/scheduler.h"
#include "src/sim/sim_cluster.h"
#include "src/sim/workload.h"

namespace gpusched::sim {

struct SimOptions {
  // Seeds the scheduler's tie-breaking generator. Default 42 (the FGD protocol's first seed).
  uint64_t seed = 42;
  // false: a pod whose attempt fails is deleted and never retried (FGD protocol).
  bool retry = true;
  // Check the cache invariants and the SimCluster ledger after every placement (tests).
  bool check_invariants = false;
  // Sim time between two pod arrivals.
  common::Duration arrival_interval = std::chrono::seconds(1);
  // Pods whose schedulerName matches no profile but is "default-scheduler", empty, or gpusched's
  // default "gpu-scheduler" are handed to the first profile, so plain manifests (and the built-in
  // example under a config with another scheduler name) can be simulated. Others stay unhandled.
  bool adopt_default_scheduler_pods = true;
};

// The simulator's default configuration: DefaultSchedulerConfig() with percentageOfNodesToScore
// 100, so results do not depend on the adaptive sampling of large clusters.
config::SchedulerConfig SimulationDefaultConfig();

enum class PodState : uint8_t {
  kPending,        // submitted, never attempted (e.g. no profile handles it)
  kScheduled,      // bound by the scheduler
  kUnschedulable,  // last attempt: no node fits
  kError,          // last attempt: a plugin or infrastructure error
  kPreBound,       // arrived with spec.nodeName set; not scheduled by us
  kPreempted,      // evicted by the scheduler for a pod of higher priority
  kRejected,       // refused at creation as the API server would (e.g. unknown PriorityClass)
  kMoved,          // evicted by consolidation to make room; its controller's replacement runs
                   // where the plan put it
};
inline constexpr size_t kPodStates = 8;
std::string_view PodStateName(PodState s);

// What happened to one submitted pod (the last attempt wins).
struct PodOutcome {
  api::PodPtr pod;  // as submitted (uid and schedulerName filled in)
  PodState state = PodState::kPending;
  std::string node;
  api::GpuAssignment gpu;
  std::string message;               // FitError message or error text; empty when scheduled
  std::vector<std::string> reasons;  // distinct rejection reasons of the last attempt, sorted
  // The main one (report.h groups pods by it): PreFilter's, else the reason that rejected the
  // most nodes (the FitError message's first; ties by name); the error text of an error; "" when
  // scheduled or preempted.
  std::string reason;
  int32_t attempts = 0;
  bool deleted = false;        // deleted after failing (retry = false)
  std::string nominated_node;  // preemption in its last attempt: where it will fit
  std::string preempted_by;    // kPreempted, kMoved: the pod it made room for (namespace/name)
  // A pod the simulator created as the controller of a preempted or moved pod would
  // (ReplacementPod): that pod (namespace/name).
  std::string replaces;
  bool replaces_moved = false;  // the pod it replaces was moved (kMoved), not preempted
};

// One preemption: `pod` was nominated to `node` and `victims` (namespace/name) were evicted. A
// consolidation moved them instead: `destinations` (same order) says where each was to run
// again; empty for a preemption.
struct Preemption {
  std::string pod;
  std::string node;
  std::vector<std::string> victims;
  std::vector<std::string> destinations;
  bool moves() const { return !destinations.empty(); }
};

// The milli-GPU allocated after `decisions` scheduling attempts: how the cluster filled as pods
// were placed, in any run (the page's chart when there is no time replay).
struct FillSample {
  int64_t decisions = 0;
  int64_t gpu_milli_used = 0;
};

struct SimStats {
  int64_t pods = 0;
  int64_t scheduled = 0;
  int64_t unschedulable = 0;
  int64_t errors = 0;
  int64_t pending = 0;
  int64_t pre_bound = 0;
  int64_t preempted = 0;
  int64_t moved = 0;
  int64_t rejected = 0;
  int64_t decisions = 0;    // scheduling attempts (observer calls)
  double wall_seconds = 0;  // wall time spent in ScheduleOne loops, by the caller's clock
};

class Simulator {
 public:
  struct Deps {
    const framework::Registry& registry;
    const common::Clock& wall_clock;  // only for decisions per second
  };

  // Builds the Scheduler over a SimCluster. Fails when the config does not validate or names an
  // unknown plugin.
  static common::StatusOr<std::unique_ptr<Simulator>> Create(const config::SchedulerConfig& config,
                                                             Deps deps, SimOptions options = {});
  ~Simulator();
  Simulator(const Simulator&) = delete;
  Simulator& operator=(const Simulator&) = delete;

  common::Status AddNode(api::NodePtr node);
  // Submits one pod and schedules until no pod is ready. Returns the pod's index in outcomes().
  // Errors: a duplicate pod (AlreadyExists), or an invariant violation (Internal).
  common::StatusOr<size_t> SubmitPod(api::PodPtr pod);
  // The PriorityClasses that resolve a pod's priorityClassName at SubmitPod (replacing earlier
  // ones), and a PodDisruptionBudget the scheduler's preemption respects.
  void SetPriorityClasses(std::vector<api::PriorityClass> classes);
  void AddPodDisruptionBudget(api::PdbPtr pdb);
  // Lets pending work finish: advances sim time past the longest backoff, runs the scheduler's
  // periodic tick (backoff and unschedulable flush) and schedules until no pod is ready. A pod
  // nominated by preemption binds here once its victims are gone.
  common::Status Settle();
  // Every object of `workload` but its pods, as a cluster's informers would deliver them before
  // the pods: SetPriorityClasses, AddPodDisruptionBudget, SimCluster::AddPodGroup, AddStorage and
  // AddDra, then AddNode for every node. The one entry point of Run and RunReplay (replay.h), so
  // that a kind one mode reads, every mode reads. Errors: a duplicate node or pod group.
  common::Status AddClusterObjects(const Workload& workload);
  // SubmitPod, except that a pod whose name is taken is recorded as kRejected ("already exists"),
  // as the API server would refuse it, and its index returned: the run goes on.
  common::StatusOr<size_t> SubmitWorkloadPod(api::PodPtr pod);
  // Settle() when a preemptor is still waiting for its victims to leave (it binds before the
  // report); nothing otherwise.
  common::Status SettleNominated();
  // AddClusterObjects, SubmitWorkloadPod for every pod in order, then SettleNominated.
  common::Status Run(const Workload& workload);

  // Time replay (replay.h): moves sim time forward to `t` (never back) and runs the scheduler's
  // periodic tick and what became ready; and deletes a pod (a departure) and schedules what its
  // room lets in. RemovePod: NotFound when the pod is gone (e.g. preempted).
  common::Status AdvanceTo(common::TimePoint t);
  common::Status RemovePod(std::string_view uid);

  // The nodes `pod` would fit on now (every Filter of its profile, all nodes), placing and
  // reserving nothing: what-if queries and tests. The profile's PreFilter plugins do run (an
  // online learner such as GpuFragmentation's sees the pod once more).
  common::StatusOr<std::vector<api::NodePtr>> FeasibleNodes(api::PodPtr pod);

  std::span<const PodOutcome> outcomes() const { return outcomes_; }
  // The outcome of the pod with `uid`, or nullptr.
  const PodOutcome* OutcomeOf(std::string_view uid) const;
  // Outcomes in `state` whose pod was not deleted (departed, or failed with retry = false): O(1).
  int64_t LiveCount(PodState state) const { return live_[static_cast<size_t>(state)]; }
  std::span<const Preemption> preemptions() const { return preemptions_; }
  SimStats Stats() const;
  // After each scheduling attempt, then every 2nd, 4th, ... so that at most 1,024 samples are
  // kept whatever the run's length (evenly spread over it); the first attempt's is always there.
  const std::vector<FillSample>& fill_curve() const { return fill_; }
  // Changes SimOptions::retry for the pods submitted from now on (a benchmark's later phase, e.g.
  // gang members that must wait for each other after an FGD-protocol phase).
  void SetRetry(bool retry) { options_.retry = retry; }
  // Changes SimOptions::arrival_interval for the pods submitted from now on.
  void SetArrivalInterval(common::Duration d) { options_.arrival_interval = d; }
  const std::vector<api::PriorityClass>& priority_classes() const { return priority_classes_; }
  const config::SchedulerConfig& config() const { return config_; }
  const Deps& deps() const { return deps_; }
  // The scheduler's DRA store (behind Handle::dra()), fed by SimCluster through the scheduler's
  // EventHandler::OnDra*, the path the informers take in a cluster.
  cache::DraStore& dra() { return scheduler_->dra_store(); }
  const cache::DraStore& dra() const { return scheduler_->dra_store(); }
  SimCluster& cluster() { return cluster_; }
  const SimCluster& cluster() const { return cluster_; }
  scheduler::Scheduler& scheduler() { return *scheduler_; }
  const scheduler::Scheduler& scheduler() const { return *scheduler_; }
  const common::FakeClock& sim_clock() const { return sim_clock_; }

 private:
  Simulator(const config::SchedulerConfig& config, Deps deps, SimOptions options);
  void OnDecision(const scheduler::Decision& d);
  common::Status Drain();
  api::PodPtr Prepare(api::PodPtr pod);
  // The Priority admission plugin: the class's value and preemptionPolicy, or the global default
  // class for a pod without one. An error for a class that does not exist.
  common::StatusOr<api::PodPtr> AdmitPriority(api::PodPtr pod) const;
  void RecordPreemption(const scheduler::Decision& d);
  void RecordFill();  // a fill_ sample after this attempt, if it is one to keep
  // SubmitPod without the clock step and the scheduling: prepares, admits and creates the pod
  // and records its outcome; AlreadyExists for a uid already submitted.
  common::StatusOr<size_t> Admit(api::PodPtr pod);
  // Creates the pods that the controllers of this ScheduleOne's preemption victims create.
  void CreateReplacements();
  // Every change of an outcome's state or deleted flag goes through these (live_ follows them).
  void AddOutcome(PodOutcome outcome);
  void SetState(PodOutcome& o, PodState state);
  void MarkDeleted(PodOutcome& o);

  config::SchedulerConfig config_;
  Deps deps_;
  SimOptions options_;
  common::FakeClock sim_clock_;
  common::Random random_;
  common::InlineExecutor executor_;
  SimCluster cluster_;
  // The input's AppGroups and NetworkTopologies (fed through the scheduler's events), for
  // NetworkLocality.
  cache::NetworkStore network_;
  std::unique_ptr<scheduler::Scheduler> scheduler_;  // destroyed before cluster_ and network_

  std::vector<PodOutcome> outcomes_;
  std::array<int64_t, kPodStates> live_{};  // LiveCount, by PodState
  std::vector<Preemption> preemptions_;
  std::vector<api::PriorityClass> priority_classes_;
  std::unordered_map<std::string, size_t> index_by_uid_;
  std::vector<std::string> to_delete_;  // failed pods to delete (retry = false)
  // Controllers' replacements of preempted pods, with the victim (namespace/name), to create.
  struct Replacement {
    api::PodPtr pod;
    std::string replaces;  // namespace/name
    bool moved = false;
  };
  std::vector<Replacement> replacements_;
  bool placed_ = false;  // a placement happened in the current ScheduleOne
  int64_t decisions_ = 0;
  double wall_seconds_ = 0;
  std::vector<FillSample> fill_;  // fill_curve()
  int64_t fill_stride_ = 1;       // attempts between two samples
};

}  // namespace gpusched::sim
