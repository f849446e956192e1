// SPDX-License-Identifier: Apache-2.0
#include "src/sim/simulator.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "src/common/strings.h"
#include "src/framework/reasons.h"
#include "src/sim/controllers.h"

namespace gpusched::sim {

std::string_view PodStateName(PodState s) {
  switch (s) {
    case PodState::kPending: return "Pending";
    case PodState::kScheduled: return "Scheduled";
    case PodState::kUnschedulable: return "Unschedulable";
    case PodState::kError: return "Error";
    case PodState::kPreBound: return "PreBound";
    case PodState::kPreempted: return "Preempted";
    case PodState::kRejected: return "Rejected";
    case PodState::kMoved: return "Moved";
  }
  return "Unknown";
}

config::SchedulerConfig SimulationDefaultConfig() {
  config::SchedulerConfig c = config::DefaultSchedulerConfig();
  c.percentage_of_nodes_to_score = 100;
  return c;
}

Simulator::Simulator(const config::SchedulerConfig& config, Deps deps, SimOptions options)
    : config_(config), deps_(deps), options_(options), random_(options.seed) {}

Simulator::~Simulator() {
  // The scheduler goes first; stop the cluster from calling into it meanwhile.
  cluster_.SetHandler(nullptr);
  scheduler_.reset();
}

common::StatusOr<std::unique_ptr<Simulator>> Simulator::Create(
    const config::SchedulerConfig& config, Deps deps, SimOptions options) {
  std::unique_ptr<Simulator> sim(new Simulator(config, deps, options));
  scheduler::SchedulerDeps sd{sim->sim_clock_, sim->random_, sim->cluster_, sim->executor_,
                              deps.registry};
  sd.network = &sim->network_;  // the input's AppGroups and NetworkTopologies
  GPUSCHED_ASSIGN_OR_RETURN(sim->scheduler_, scheduler::Scheduler::Create(sim->config_, sd));
  Simulator* self = sim.get();
  sim->scheduler_->SetDecisionObserver(
      [self](const scheduler::Decision& d) { self->OnDecision(d); });
  sim->cluster_.SetHandler(&sim->scheduler_->events());
  return sim;
}

common::Status Simulator::AddNode(api::NodePtr node) { return cluster_.AddNode(std::move(node)); }

api::PodPtr Simulator::Prepare(api::PodPtr pod) {
  bool need_uid = pod->meta.uid.empty();
  bool need_ns = pod->meta.namespace_.empty();
  bool need_time = !pod->meta.creation_timestamp.has_value();
  bool adopt = false;
  if (options_.adopt_default_scheduler_pods && !config_.profiles.empty()) {
    std::string_view name = common::Str(pod->scheduler_name);
    const bool default_name =
        name.empty() || name == "default-scheduler" || name == config::kDefaultSchedulerName;
    adopt = default_name && config_.FindProfile(name) == nullptr;
  }
  if (!need_uid && !need_ns && !need_time && !adopt) return pod;
  auto copy = std::make_shared<api::Pod>(*pod);
  if (need_ns) copy->meta.namespace_ = "default";
  // Deterministic: the same manifests always give the same uids.
  if (need_uid) copy->meta.uid = "sim:" + copy->meta.namespace_ + "/" + copy->meta.name;
  if (need_time) copy->meta.creation_timestamp = sim_clock_.Now();
  if (adopt) copy->scheduler_name = common::Intern(config_.profiles.front().scheduler_name);
  return copy;
}

common::StatusOr<std::vector<api::NodePtr>> Simulator::FeasibleNodes(api::PodPtr pod) {
  pod = Prepare(std::move(pod));
  GPUSCHED_ASSIGN_OR_RETURN(std::vector<framework::NodeIndex> feasible,
                            scheduler_->FeasibleNodes(*pod));
  std::vector<api::NodePtr> out;
  for (framework::NodeIndex i : feasible) {
    if (api::NodePtr n = cluster_.GetNode(scheduler_->snapshot().at(i).name()))
      out.push_back(std::move(n));
  }
  return out;
}

common::StatusOr<size_t> Simulator::SubmitPod(api::PodPtr pod) {
  sim_clock_.Advance(options_.arrival_interval);
  GPUSCHED_ASSIGN_OR_RETURN(size_t index, Admit(std::move(pod)));
  if (outcomes_[index].state != PodState::kRejected) GPUSCHED_RETURN_IF_ERROR(Drain());
  return index;
}

common::StatusOr<size_t> Simulator::Admit(api::PodPtr pod) {
  pod = Prepare(std::move(pod));
  const std::string uid = pod->meta.uid;  // a copy: `pod` is replaced below
  if (index_by_uid_.contains(uid)) {
    return common::AlreadyExistsError("pod " + pod->Key() + " (uid " + common::Quote(uid) +
                                      ") was submitted twice");
  }
  size_t index = outcomes_.size();
  PodOutcome outcome;
  outcome.pod = pod;
  common::StatusOr<api::PodPtr> admitted = AdmitPriority(pod);
  if (!admitted.ok()) {  // reported, and the rest is simulated
    outcome.state = PodState::kRejected;
    outcome.message = admitted.status().message();
    outcome.reasons.push_back(outcome.message);
    index_by_uid_.emplace(uid, index);
    AddOutcome(std::move(outcome));
    return index;
  }
  pod = std::move(*admitted);
  outcome.pod = pod;
  if (!pod->node_name.empty()) {
    outcome.state = PodState::kPreBound;
    outcome.node = pod->node_name;
  } else if (!scheduler_->Responsible(*pod)) {
    outcome.message =
        "schedulerName " + common::Quote(common::Str(pod->scheduler_name)) + " matches no profile";
    outcome.reasons.push_back("not handled by any profile");
  }
  common::Status created = cluster_.CreatePod(pod);
  if (!created.ok()) return created;
  index_by_uid_.emplace(uid, index);
  AddOutcome(std::move(outcome));
  return index;
}

void Simulator::CreateReplacements() {
  for (Replacement& r : std::exchange(replacements_, {})) {
    const api::PodPtr& pod = r.pod;
    // A uid of its own: a StatefulSet's replacement has its victim's name (and derived uid).
    auto copy = std::make_shared<api::Pod>(*pod);
    copy->meta.uid = "sim:" + copy->meta.namespace_ + "/" + copy->meta.name + "#" +
                     std::to_string(outcomes_.size());
    common::StatusOr<size_t> index = Admit(std::move(copy));
    if (!index.ok()) {  // the name is taken: the API server refuses it, the run goes on
      PodOutcome outcome;
      outcome.pod = pod;
      outcome.state = PodState::kRejected;
      outcome.message = std::string(index.status().message());
      outcome.reasons.push_back(outcome.message);
      outcome.replaces = r.replaces;
      outcome.replaces_moved = r.moved;
      AddOutcome(std::move(outcome));
      continue;
    }
    outcomes_[*index].replaces = r.replaces;
    outcomes_[*index].replaces_moved = r.moved;
  }
}

common::Status Simulator::Drain() {
  common::TimePoint start = deps_.wall_clock.Now();
  common::Status result;
  for (;;) {
    placed_ = false;
    if (!scheduler_->ScheduleOne()) break;
    if (options_.check_invariants && placed_) {
      common::Status s = scheduler_->CheckCacheInvariants();
      if (s.ok()) s = cluster_.LedgerStatus();
      if (s.ok()) s = dra().CheckInvariants();
      if (!s.ok()) {
        result = common::InternalError("invariant violated after placement " +
                                       std::to_string(decisions_) + ": " + s.ToString());
        break;
      }
    }
    // retry = false: a failed pod leaves the cluster at once and is never retried.
    for (const std::string& uid : to_delete_) {
      if (cluster_.DeletePod(uid).ok()) MarkDeleted(outcomes_[index_by_uid_.at(uid)]);
    }
    to_delete_.clear();
    CreateReplacements();
  }
  wall_seconds_ += common::Seconds(deps_.wall_clock.Now() - start);
  return result;
}

void Simulator::OnDecision(const scheduler::Decision& d) {
  ++decisions_;
  RecordFill();
  auto it = index_by_uid_.find(d.pod->meta.uid);
  if (it == index_by_uid_.end()) return;  // not submitted through us (cannot happen)
  RecordPreemption(d);
  PodOutcome& o = outcomes_[it->second];
  ++o.attempts;
  o.reasons.clear();
  o.reason.clear();
  o.nominated_node = d.nominated_node;
  if (d.scheduled) {
    SetState(o, PodState::kScheduled);
    o.node = d.node;
    o.gpu = d.gpu;
    o.message.clear();
    placed_ = true;
    return;
  }
  SetState(o, d.error ? PodState::kError : PodState::kUnschedulable);
  o.node.clear();
  o.gpu = {};
  o.message = d.message;
  if (d.error) {
    o.reasons.push_back(d.message);
    o.reason = d.message;
  } else {
    // Copy the reasons now: the diagnosis' views point into the pod and plugin literals.
    std::map<std::string, int64_t, std::less<>> nodes;  // reason -> nodes it rejected
    if (!d.diagnosis.pre_filter_status.ok()) {
      o.reason = d.diagnosis.pre_filter_status.reason();
      o.reasons.push_back(o.reason);
    }
    for (const auto& entry : d.diagnosis.reason_counts) {
      framework::ForEachReason(entry.first, [&](std::string_view r) {
        o.reasons.emplace_back(r);
        nodes[std::string(r)] += entry.second;
      });
    }
    std::sort(o.reasons.begin(), o.reasons.end());
    o.reasons.erase(std::unique(o.reasons.begin(), o.reasons.end()), o.reasons.end());
    if (o.reasons.empty()) o.reasons.push_back(d.message);
    if (o.reason.empty() && !nodes.empty()) {
      o.reason = std::max_element(nodes.begin(), nodes.end(), [](const auto& a, const auto& b) {
                   return a.second < b.second;  // the first of the largest: ties by name
                 })->first;
    }
    if (o.reason.empty()) o.reason = o.reasons.front();
  }
  // retry = false still lets a preemptor wait for its victims to leave (it was nominated).
  if (!options_.retry && d.nominated_node.empty()) to_delete_.push_back(d.pod->meta.uid);
}

void Simulator::RecordFill() {
  constexpr size_t kMaxFill = 1024;
  if ((decisions_ - 1) % fill_stride_ != 0) return;
  fill_.push_back({decisions_, cluster_.GpuMilliUsedTotal()});
  if (fill_.size() < kMaxFill) return;
  // Full: keep every other sample (those at 1, 1 + 2 stride, ...) and sample half as often.
  size_t kept = 0;
  for (size_t i = 0; i < fill_.size(); i += 2) fill_[kept++] = fill_[i];
  fill_.resize(kept);
  fill_stride_ *= 2;
}

void Simulator::RecordPreemption(const scheduler::Decision& d) {
  if (d.victims.empty()) return;
  Preemption p{d.pod->Key(), d.nominated_node, {}, d.destinations};
  for (size_t i = 0; i < d.victims.size(); ++i) {
    const api::PodPtr& v = d.victims[i];
    p.victims.push_back(v->Key());
    auto vi = index_by_uid_.find(v->meta.uid);
    if (vi == index_by_uid_.end()) continue;
    PodOutcome& vo = outcomes_[vi->second];
    vo.preempted_by = d.pod->Key();
    if (p.moves()) {
      SetState(vo, PodState::kMoved);
      vo.message = "moved to node " + d.destinations[i] + " to make room for " + d.pod->Key() +
                   " on node " + d.nominated_node;
      vo.reasons = {"moved"};
    } else {
      SetState(vo, PodState::kPreempted);
      vo.message = "preempted by " + d.pod->Key() + " on node " + d.nominated_node;
      vo.reasons = {"preempted"};
    }
    vo.reason.clear();
    if (api::PodPtr replacement = ReplacementPod(*vo.pod)) {
      replacements_.push_back({std::move(replacement), vo.pod->Key(), p.moves()});
    }
  }
  preemptions_.push_back(std::move(p));
}

common::Status Simulator::AdvanceTo(common::TimePoint t) {
  if (t > sim_clock_.Now()) sim_clock_.Set(t);
  scheduler_->Tick();
  return Drain();
}

common::Status Simulator::RemovePod(std::string_view uid) {
  GPUSCHED_RETURN_IF_ERROR(cluster_.DeletePod(uid));
  if (auto it = index_by_uid_.find(std::string(uid)); it != index_by_uid_.end()) {
    MarkDeleted(outcomes_[it->second]);
  }
  scheduler_->Tick();
  return Drain();
}

common::Status Simulator::Settle() {
  sim_clock_.Advance(std::chrono::seconds(11));  // the queue's max backoff is 10 s
  scheduler_->Tick();
  return Drain();
}

void Simulator::SetPriorityClasses(std::vector<api::PriorityClass> classes) {
  priority_classes_ = std::move(classes);
}

void Simulator::AddPodDisruptionBudget(api::PdbPtr pdb) { cluster_.AddPdb(std::move(pdb)); }

common::StatusOr<api::PodPtr> Simulator::AdmitPriority(api::PodPtr pod) const {
  const api::PriorityClass* cls = nullptr;
  for (const api::PriorityClass& c : priority_classes_) {
    if (pod->priority_class_name.empty() ? c.global_default : c.name == pod->priority_class_name) {
      cls = &c;
      break;
    }
  }
  if (cls == nullptr) {
    if (pod->priority_class_name.empty()) return pod;
    return common::InvalidArgumentError("pods " + common::Quote(pod->meta.name) +
                                        " is forbidden: no PriorityClass with name " +
                                        pod->priority_class_name + " was found");
  }
  if (pod->priority == cls->value && pod->preemption_policy == cls->preemption_policy) return pod;
  auto copy = std::make_shared<api::Pod>(*pod);
  copy->priority = cls->value;
  copy->preemption_policy = cls->preemption_policy;
  return api::PodPtr(std::move(copy));
}

common::Status Simulator::AddClusterObjects(const Workload& workload) {
  SetPriorityClasses(workload.priority_classes);
  for (const auto& pdb : workload.pdbs) AddPodDisruptionBudget(pdb);
  for (const auto& group : workload.pod_groups) {
    GPUSCHED_RETURN_IF_ERROR(cluster_.AddPodGroup(group));
  }
  for (const kube::StorageObject& obj : workload.storage) cluster_.AddStorage(obj);
  for (const DraObject& obj : workload.dra) cluster_.AddDra(obj);
  for (const kube::NetworkObject& obj : workload.network) cluster_.AddNetwork(obj);
  for (const auto& node : workload.nodes) GPUSCHED_RETURN_IF_ERROR(AddNode(node));
  return common::Status::Ok();
}

common::StatusOr<size_t> Simulator::SubmitWorkloadPod(api::PodPtr pod) {
  auto r = SubmitPod(pod);
  if (r.ok() || r.status().code() != common::StatusCode::kAlreadyExists) return r;
  PodOutcome outcome;
  outcome.pod = std::move(pod);
  outcome.state = PodState::kRejected;
  outcome.message = "pods " + common::Quote(outcome.pod->meta.name) + " already exists";
  outcome.reasons.push_back("already exists");
  AddOutcome(std::move(outcome));
  return outcomes_.size() - 1;
}

common::Status Simulator::SettleNominated() {
  const bool nominated = std::any_of(outcomes_.begin(), outcomes_.end(), [](const PodOutcome& o) {
    return o.state == PodState::kUnschedulable && !o.nominated_node.empty();
  });
  return nominated ? Settle() : common::Status::Ok();
}

common::Status Simulator::Run(const Workload& workload) {
  GPUSCHED_RETURN_IF_ERROR(AddClusterObjects(workload));
  for (const auto& pod : workload.pods) {
    GPUSCHED_RETURN_IF_ERROR(SubmitWorkloadPod(pod).status());
  }
  return SettleNominated();
}

void Simulator::AddOutcome(PodOutcome outcome) {
  ++live_[static_cast<size_t>(outcome.state)];
  outcomes_.push_back(std::move(outcome));
}

void Simulator::SetState(PodOutcome& o, PodState state) {
  if (!o.deleted) {
    --live_[static_cast<size_t>(o.state)];
    ++live_[static_cast<size_t>(state)];
  }
  o.state = state;
}

void Simulator::MarkDeleted(PodOutcome& o) {
  if (!o.deleted) --live_[static_cast<size_t>(o.state)];
  o.deleted = true;
}

const PodOutcome* Simulator::OutcomeOf(std::string_view uid) const {
  auto it = index_by_uid_.find(std::string(uid));
  return it == index_by_uid_.end() ? nullptr : &outcomes_[it->second];
}

SimStats Simulator::Stats() const {
  SimStats s;
  s.pods = static_cast<int64_t>(outcomes_.size());
  for (const auto& o : outcomes_) {
    switch (o.state) {
      case PodState::kScheduled: ++s.scheduled; break;
      case PodState::kUnschedulable: ++s.unschedulable; break;
      case PodState::kError: ++s.errors; break;
      case PodState::kPending: ++s.pending; break;
      case PodState::kPreBound: ++s.pre_bound; break;
      case PodState::kPreempted: ++s.preempted; break;
      case PodState::kRejected: ++s.rejected; break;
      case PodState::kMoved: ++s.moved; break;
    }
  }
  s.decisions = decisions_;
  s.wall_seconds = wall_seconds_;
  return s;
}

}  // namespace gpusched::sim
