// SPDX-License-Identifier: Apache-2.0
// Gang preemption (scheduler.h): a gang preempts for all its members or for none, and only when
// it is proven that every member fits once the victims are gone.
//
//   1. Plan: each of the gang's first `need` members (biggest first) runs the scheduling algorithm
//      with its PostFilter (DefaultPreemption) on a snapshot where every earlier member is
//      nominated to the node it got and every earlier member's victims hidden from the cache (as
//      if gone: Cache::HidePods): a member that fits takes a node as it is, one that does not gets
//      the PostFilter's node and victims. Nominated pods keep their room in every Filter, so later
//      members do not count on the room of earlier ones, and they use what the earlier victims
//      free before choosing victims of their own. (DRA devices held by an earlier victim's claim
//      stay held while planning; the proof below frees them.) With a required topology key, the
//      plan is made in each domain (the GangScheduling Filter restricts the members to it) and the
//      one with the fewest victims wins.
//   2. Proof: with every member of the plan nominated, each member must pass PreFilter and the
//      Filter plugins on its node with all the plan's victims there removed and every other
//      nominated pod of at least its priority counted (Framework::FitsWithout): the state the
//      gang cycle sees after the evictions. A plan that fails the proof evicts nothing.
//   3. Apply: the victims (each once) are evicted as a single pod's preemption evicts them
//      (preemption.cc), every member is nominated to its node (status.nominatedNodeName), and the
//      gang waits in the unschedulable pool; the victims' deletion requeues it, and the gang cycle
//      places each member on its nominated node first (a reserved member's nomination is then
//      suspended: gang_cycle.cc). While a member's nominated node still has pods terminating after
//      a preemption, the gang waits instead of preempting again.
#include <spdlog/spdlog.h>

#include <map>
#include <set>
#include <string>

#include "src/common/interner.h"
#include "src/framework/preemption/preemption.h"
#include "src/scheduler/gang_text.h"
#include "src/scheduler/scheduler.h"

namespace gpusched::scheduler {

using framework::QueuedPodInfo;
using framework::runtime::Framework;

std::string Scheduler::GangWaitText(const std::vector<QueuedPodInfo>& members) const {
  std::string nominated;
  std::set<std::string> terminating;
  for (const QueuedPodInfo& m : members) {
    const std::string node = nominator_.NodeOf(m.pod->meta.uid);
    if (node.empty()) continue;
    nominated += (nominated.empty() ? "" : ", ") + m.pod->Key() + " -> " + node;
    const framework::NodeInfo* n = snapshot_.Get(node);
    if (n == nullptr) continue;
    for (const api::PodPtr& p : n->pods) {
      if (framework::preemption::TerminatingByPreemption(*p)) {
        terminating.insert(p->Key() + " on " + node);
      }
    }
  }
  if (terminating.empty()) return {};
  std::string victims;
  for (const std::string& v : terminating) victims += (victims.empty() ? "" : ", ") + v;
  return "waits for the pods it preempted to leave (" + victims +
         "); members nominated: " + nominated;
}

Scheduler::GangPlan Scheduler::PlanGangPreemption(const std::vector<QueuedPodInfo>& members,
                                                  int32_t need) {
  GangPlan plan;
  for (const QueuedPodInfo& m : members) {
    if (static_cast<int32_t>(plan.members.size()) >= need) break;
    Framework* fw = FrameworkFor(common::Str(m.pod->scheduler_name));
    cache_.UpdateSnapshot(snapshot_);
    framework::CycleState state;
    framework::runtime::ScheduleResult r = fw->SchedulePod(state, *m.pod, snapshot_, deps_.random);
    GangPlan::Member p;
    p.previous = nominator_.NodeOf(m.pod->meta.uid);
    if (r.node != framework::kNoNode) {
      p.node = std::string(snapshot_.at(r.node).name());
    } else if (r.post_filter_ran && !r.post_filter.nominated_node.empty()) {
      p.node = r.post_filter.nominated_node;
      p.victims = r.post_filter.victims;
      p.plugin = r.post_filter.plugin;
    } else {
      plan.failure = "pod " + m.pod->Key() + ": " + FitReasons(r.diagnosis);
      break;
    }
    auto nominated = std::make_shared<api::Pod>(*m.pod);
    nominated->nominated_node_name = p.node;
    p.pod = nominated;
    nominator_.Set(nominated, p.node);
    cache_.HidePods(p.victims);  // gone for the members after it
    plan.members.push_back(std::move(p));
  }
  cache_.ShowHiddenPods();
  if (plan.failure.empty() && static_cast<int32_t>(plan.members.size()) < need) {
    plan.failure = "fewer members than minMember";
  }
  if (plan.failure.empty()) ReprieveGangVictims(plan);
  if (plan.failure.empty()) plan.failure = ProveGangPlan(plan);
  std::set<std::string_view> victims;
  for (const GangPlan::Member& p : plan.members) {
    for (const api::PodPtr& v : p.victims) victims.insert(v->meta.uid);
  }
  plan.victims = static_cast<int64_t>(victims.size());
  return plan;
}

void Scheduler::ReprieveGangVictims(GangPlan& plan) {
  std::vector<api::PodPtr> victims;
  std::set<std::string_view> seen;
  for (const GangPlan::Member& m : plan.members) {
    for (const api::PodPtr& v : m.victims) {
      if (seen.insert(v->meta.uid).second) victims.push_back(v);
    }
  }
  // One member: DefaultPreemption's own reprieve already kept every victim it could.
  if (victims.empty() || plan.members.size() < 2) return;
  const common::TimePoint now = deps_.clock.Now();
  std::stable_sort(victims.begin(), victims.end(),
                   [now](const api::PodPtr& a, const api::PodPtr& b) {
                     return framework::preemption::MoreImportant(*a, *b, now);
                   });
  for (size_t i = 0; i < victims.size();) {
    std::vector<api::PodPtr> rest = victims;
    rest.erase(rest.begin() + static_cast<std::ptrdiff_t>(i));
    if (PlaceGangPlanWithout(plan, rest)) {
      victims = std::move(rest);  // reprieved: the members fit without evicting it
    } else {
      ++i;
    }
  }
  // Each victim goes with a member on its node (the eviction's event names that member).
  for (GangPlan::Member& m : plan.members) m.victims.clear();
  for (const api::PodPtr& v : victims) {
    GangPlan::Member* owner = &plan.members.front();
    for (GangPlan::Member& m : plan.members) {
      if (m.node == v->node_name) owner = &m;
    }
    owner->victims.push_back(v);
  }
}

bool Scheduler::PlaceGangPlanWithout(GangPlan& plan, const std::vector<api::PodPtr>& victims) {
  for (const GangPlan::Member& m : plan.members) nominator_.Suspend(m.pod->meta.uid);
  cache_.HidePods(victims);
  framework::runtime::SchedulePodOptions opts;
  opts.run_post_filter = false;
  std::vector<api::PodPtr> placed;
  for (const GangPlan::Member& m : plan.members) {
    Framework* fw = FrameworkFor(common::Str(m.pod->scheduler_name));
    cache_.UpdateSnapshot(snapshot_);
    framework::CycleState state;
    framework::runtime::ScheduleResult r =
        fw->SchedulePod(state, *m.pod, snapshot_, deps_.random, opts);
    if (r.node == framework::kNoNode) break;
    auto nominated = std::make_shared<api::Pod>(*m.pod);
    nominated->nominated_node_name = std::string(snapshot_.at(r.node).name());
    nominator_.Set(nominated, nominated->nominated_node_name);
    nominator_.Resume(m.pod->meta.uid);
    placed.push_back(std::move(nominated));
  }
  cache_.ShowHiddenPods();
  const bool ok = placed.size() == plan.members.size();
  for (size_t k = 0; k < plan.members.size(); ++k) {
    GangPlan::Member& m = plan.members[k];
    if (ok) {
      m.pod = placed[k];
      m.node = placed[k]->nominated_node_name;
    }
    nominator_.Set(m.pod, m.node);
    nominator_.Resume(m.pod->meta.uid);
  }
  return ok;
}

std::string Scheduler::ProveGangPlan(const GangPlan& plan) {
  std::map<std::string, std::vector<api::PodPtr>> removed;  // by node
  for (const GangPlan::Member& m : plan.members) {
    for (const api::PodPtr& v : m.victims) removed[m.node].push_back(v);
  }
  cache_.UpdateSnapshot(snapshot_);
  for (const GangPlan::Member& m : plan.members) {
    Framework* fw = FrameworkFor(common::Str(m.pod->scheduler_name));
    framework::CycleState state;
    const auto it = removed.find(m.node);
    const std::span<const api::PodPtr> gone =
        it == removed.end() ? std::span<const api::PodPtr>() : it->second;
    framework::Status s = fw->FitsWithout(state, *m.pod, snapshot_, m.node, gone);
    if (!s.ok()) {
      return "pod " + m.pod->Key() + " would not fit on " + m.node +
             " after the evictions: " + s.ToString();
    }
  }
  return {};
}

void Scheduler::UndoGangPlan(const GangPlan& plan) {
  for (const GangPlan::Member& p : plan.members) {  // the earlier nomination, or none
    if (p.previous.empty()) {
      nominator_.Remove(p.pod->meta.uid);
    } else {
      auto back = std::make_shared<api::Pod>(*p.pod);
      back->nominated_node_name = p.previous;
      nominator_.Set(back, p.previous);
    }
  }
}

Scheduler::GangPlan Scheduler::PlanGangPreemptionInDomains(
    const api::PodGroup& policy, const std::vector<QueuedPodInfo>& members, int32_t need) {
  if (policy.topology_required.empty()) return PlanGangPreemption(members, need);
  const std::string key = api::GangKey(*members.front().pod);
  const api::Atom label = common::Intern(policy.topology_required);
  std::set<api::Atom> values;
  cache_.UpdateSnapshot(snapshot_);
  for (const framework::NodeInfo& n : snapshot_.nodes()) {
    api::Atom value;
    if (n.valid() && n.node->meta.labels.Get(label, &value)) values.insert(value);
  }
  std::optional<GangPlan> best;
  std::string tried;
  for (api::Atom value : values) {
    gangs_.SetTrial(key, {label, value});
    GangPlan plan = PlanGangPreemption(members, need);
    gangs_.ClearTrial(key);
    UndoGangPlan(plan);
    if (!plan.failure.empty()) {
      tried += (tried.empty() ? "" : "; ") + std::string(common::Str(value)) + ": " + plan.failure;
    } else if (!best || plan.victims < best->victims) {
      best = std::move(plan);
    }
  }
  if (!best) {
    GangPlan none;
    none.failure = "in no " + policy.topology_required + " domain (" + tried + ")";
    return none;
  }
  for (const GangPlan::Member& p : best->members) nominator_.Set(p.pod, p.node);
  return std::move(*best);
}

Scheduler::GangPreemption Scheduler::PreemptForGang(const api::PodGroup& policy,
                                                    const std::vector<QueuedPodInfo>& members,
                                                    int32_t need) {
  GangPreemption out;
  if (std::string wait = GangWaitText(members); !wait.empty()) {
    out.message = DescribeGang(policy) + " " + wait;
    return out;
  }
  GangPlan plan = PlanGangPreemptionInDomains(policy, members, need);
  if (!plan.failure.empty() || plan.victims == 0) {
    UndoGangPlan(plan);
    if (!plan.failure.empty()) {
      spdlog::debug("{}: no preemption: {}", DescribeGang(policy), plan.failure);
    }
    return out;
  }
  std::set<std::string> evicted;
  std::set<std::string> nodes;
  for (GangPlan::Member& p : plan.members) {
    std::vector<api::PodPtr> fresh;
    for (const api::PodPtr& v : p.victims) {
      if (evicted.insert(v->meta.uid).second) fresh.push_back(v);
    }
    nodes.insert(p.node);
    if (common::Status s = EvictVictims(*p.pod, p.node, p.plugin, fresh); !s.ok()) {
      spdlog::warn("{}: preemption on node {}: {}", DescribeGang(policy), p.node, s.ToString());
    }
    ClearLowerPriorityNominations(*p.pod, p.node);
    out.outcomes[p.pod->meta.uid] = PostFilterOutcome{p.pod, std::move(fresh)};
  }
  if (deps_.metrics != nullptr) deps_.metrics->ObservePreemptionVictims(evicted.size());
  std::string on;
  for (const std::string& n : nodes) on += (on.empty() ? "" : ", ") + n;
  out.message = DescribeGang(policy) + " preempted " + std::to_string(evicted.size()) +
                " pod(s) for " + std::to_string(plan.members.size()) + " member(s) on " + on +
                "; it waits for them to leave";
  spdlog::info("{}", out.message);
  return out;
}

}  // namespace gpusched::scheduler
