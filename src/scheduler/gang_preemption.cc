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
//   Consolidation: a member's PostFilter may be Consolidation's plan (moves, not evictions for
//   good). Its moved pods' rooms at their destinations are held while the later members are
//   planned (GangPlan::Member::holds); the gang-level reprieve is skipped (Consolidation already
//   moves the fewest pods per node). Applying moves the pods member after member through the
//   Eviction API (MovePods); the first refusal stops the gang's plan: nothing more moves and no
//   member stays nominated (all or nothing). Pods evicted this way count as leaving, as
//   preempted ones do.
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

namespace {

// Leaving after a preemption, or after an eviction through the Eviction API (a move).
bool LeavingForRoom(const api::Pod& pod) {
  if (framework::preemption::TerminatingByPreemption(pod)) return true;
  if (!pod.meta.deletion_timestamp) return false;
  for (const api::Condition& c : pod.conditions) {
    if (c.type == "DisruptionTarget")
      return c.status == "True" && c.reason == "EvictionByEvictionAPI";
  }
  return false;
}

// The room of each pod `member` moves, held at its destination while the gang is planned.
std::vector<api::PodPtr> HoldMovedRooms(const api::Pod& member,
                                        const std::vector<api::PodPtr>& moved,
                                        const std::vector<std::string>& destinations) {
  std::vector<api::PodPtr> holds;
  for (size_t i = 0; i < moved.size() && i < destinations.size(); ++i) {
    auto hold = std::make_shared<api::Pod>(*moved[i]);
    hold->meta.uid = "gang-plan:" + moved[i]->meta.uid;
    hold->node_name.clear();
    hold->nominated_node_name = destinations[i];
    hold->priority = member.priority;  // counted by the later members
    holds.push_back(std::move(hold));
  }
  return holds;
}

}  // namespace

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
      if (LeavingForRoom(*p)) {
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
      p.destinations = r.post_filter.destinations;
      p.holds = HoldMovedRooms(*m.pod, p.victims, p.destinations);
      for (const api::PodPtr& h : p.holds) nominator_.Set(h, h->nominated_node_name);
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
  // One member: DefaultPreemption's own reprieve already kept every victim it could. Moves:
  // Consolidation's, per node (and a destination belongs to its moved pod).
  if (victims.empty() || plan.members.size() < 2) return;
  for (const GangPlan::Member& m : plan.members) {
    if (!m.destinations.empty()) return;
  }
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
  DropGangPlanHolds(plan);
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

void Scheduler::DropGangPlanHolds(const GangPlan& plan) {
  for (const GangPlan::Member& p : plan.members) {
    for (const api::PodPtr& h : p.holds) nominator_.Remove(h->meta.uid);
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
  for (const GangPlan::Member& p : best->members) {
    nominator_.Set(p.pod, p.node);
    for (const api::PodPtr& h : p.holds) nominator_.Set(h, h->nominated_node_name);
  }
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
  size_t moved = 0;
  for (GangPlan::Member& p : plan.members) {
    std::vector<api::PodPtr> fresh;
    for (const api::PodPtr& v : p.victims) {
      if (evicted.insert(v->meta.uid).second) fresh.push_back(v);
    }
    nodes.insert(p.node);
    if (!p.destinations.empty()) {
      if (!MoveForGangMember(p, out)) {
        moved += out.outcomes[p.pod->meta.uid].victims.size();
        DropGangPlanHolds(plan);
        RefuseGangPlan(plan, out);
        spdlog::info(
            "{}: {} pod(s) moved, then an eviction was refused: nothing more moves "
            "and no member stays nominated",
            DescribeGang(policy), moved);
        return out;
      }
      moved += p.victims.size();
    } else if (common::Status s = EvictVictims(*p.pod, p.node, p.plugin, fresh); !s.ok()) {
      spdlog::warn("{}: preemption on node {}: {}", DescribeGang(policy), p.node, s.ToString());
    }
    ClearLowerPriorityNominations(*p.pod, p.node);
    if (p.destinations.empty()) {
      out.outcomes[p.pod->meta.uid] = PostFilterOutcome{p.pod, std::move(fresh)};
    }
  }
  DropGangPlanHolds(plan);
  const size_t preempted = evicted.size() - moved;
  if (deps_.metrics != nullptr && preempted > 0) {
    deps_.metrics->ObservePreemptionVictims(preempted);
  }
  std::string on;
  for (const std::string& n : nodes) on += (on.empty() ? "" : ", ") + n;
  std::string what;
  if (preempted > 0) what = "preempted " + std::to_string(preempted) + " pod(s)";
  if (moved > 0)
    what += (what.empty() ? "moved " : " and moved ") + std::to_string(moved) + " pod(s)";
  out.message = DescribeGang(policy) + " " + what + " for " + std::to_string(plan.members.size()) +
                " member(s) on " + on + "; it waits for them to leave";
  spdlog::info("{}", out.message);
  return out;
}

bool Scheduler::MoveForGangMember(const GangPlan::Member& member, GangPreemption& out) {
  framework::PostFilterResult pf;
  pf.nominated_node = member.node;
  pf.victims = member.victims;
  pf.destinations = member.destinations;
  const size_t n = MovePods(*member.pod, pf);
  PostFilterOutcome& o = out.outcomes[member.pod->meta.uid];
  o.status_pod = member.pod;
  o.victims.assign(member.victims.begin(), member.victims.begin() + static_cast<std::ptrdiff_t>(n));
  o.destinations.assign(member.destinations.begin(),
                        member.destinations.begin() + static_cast<std::ptrdiff_t>(n));
  return n == member.victims.size();
}

void Scheduler::RefuseGangPlan(const GangPlan& plan, GangPreemption& out) {
  UndoGangPlan(plan);
  out.message.clear();  // unschedulable, not waiting for victims
  for (const GangPlan::Member& p : plan.members) {
    auto it = out.outcomes.find(p.pod->meta.uid);
    if (it == out.outcomes.end()) continue;
    auto back = std::make_shared<api::Pod>(*p.pod);
    back->nominated_node_name = p.previous;
    it->second.status_pod = std::move(back);
  }
}

}  // namespace gpusched::scheduler
