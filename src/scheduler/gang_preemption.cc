// SPDX-License-Identifier: Apache-2.0
// Gang preemption (scheduler.h): a gang preempts for all its members or for none.
//
// When the gang cycle finds no placement as the cluster is, each of the gang's first `need`
// members (biggest first) runs the scheduling algorithm with its PostFilter (DefaultPreemption)
// on a snapshot where every earlier member is nominated to the node it got: a member that fits
// takes a node as it is, one that does not gets the PostFilter's node and victims. Nominated
// pods keep their room in every Filter, so later members do not count on the room of earlier
// ones, and a later member's victims on the same node include what the earlier one needs. If
// any member finds no node, every nomination made here is undone and nothing is evicted. Else
// the victims (each once) are evicted as a single pod's preemption evicts them (preemption.cc),
// every member is nominated to its node (status.nominatedNodeName), and the gang waits in the
// unschedulable pool; the victims' deletion requeues it and the gang cycle places it on the
// room its nominations held. While a member's nominated node still has pods terminating after
// a preemption, the gang waits instead of preempting again.
#include <spdlog/spdlog.h>

#include <set>
#include <string>

#include "src/framework/preemption/preemption.h"
#include "src/scheduler/gang_text.h"
#include "src/scheduler/scheduler.h"

namespace gpusched::scheduler {

using framework::QueuedPodInfo;
using framework::runtime::Framework;

bool Scheduler::GangAwaitsVictims(const std::vector<QueuedPodInfo>& members) const {
  for (const QueuedPodInfo& m : members) {
    const std::string node = nominator_.NodeOf(m.pod->meta.uid);
    if (node.empty()) continue;
    const framework::NodeInfo* n = snapshot_.Get(node);
    if (n == nullptr) continue;
    for (const api::PodPtr& p : n->pods) {
      if (framework::preemption::TerminatingByPreemption(*p)) return true;
    }
  }
  return false;
}

Scheduler::GangPreemption Scheduler::PreemptForGang(const api::PodGroup& policy,
                                                    const std::vector<QueuedPodInfo>& members,
                                                    int32_t need) {
  GangPreemption out;
  if (GangAwaitsVictims(members)) {
    out.message = DescribeGang(policy) + " waits for the pods it preempted to leave";
    return out;
  }
  struct Planned {
    api::PodPtr pod;  // with nominated_node_name set to `node`
    std::string previous;
    std::vector<api::PodPtr> victims;
    std::string_view plugin;
  };
  std::vector<Planned> plan;
  std::string failure;
  for (const QueuedPodInfo& m : members) {
    if (static_cast<int32_t>(plan.size()) >= need) break;
    Framework* fw = FrameworkFor(common::Str(m.pod->scheduler_name));
    cache_.UpdateSnapshot(snapshot_);
    framework::CycleState state;
    framework::runtime::ScheduleResult r = fw->SchedulePod(state, *m.pod, snapshot_, deps_.random);
    Planned p{nullptr, nominator_.NodeOf(m.pod->meta.uid), {}, {}};
    std::string node;
    if (r.node != framework::kNoNode) {
      node = std::string(snapshot_.at(r.node).name());
    } else if (r.post_filter_ran && !r.post_filter.nominated_node.empty()) {
      node = r.post_filter.nominated_node;
      p.victims = r.post_filter.victims;
      p.plugin = r.post_filter.plugin;
    } else {
      failure = "pod " + m.pod->Key() + ": " + FitReasons(r.diagnosis);
      break;
    }
    auto nominated = std::make_shared<api::Pod>(*m.pod);
    nominated->nominated_node_name = node;
    p.pod = nominated;
    nominator_.Set(nominated, node);
    plan.push_back(std::move(p));
  }
  size_t victims = 0;
  for (const Planned& p : plan) victims += p.victims.size();
  if (static_cast<int32_t>(plan.size()) < need || victims == 0) {
    for (const Planned& p : plan) {  // undo: the earlier nomination, or none
      if (p.previous.empty()) {
        nominator_.Remove(p.pod->meta.uid);
      } else {
        auto back = std::make_shared<api::Pod>(*p.pod);
        back->nominated_node_name = p.previous;
        nominator_.Set(back, p.previous);
      }
    }
    if (!failure.empty()) {
      spdlog::debug("{}: no preemption: {}", DescribeGang(policy), failure);
    }
    return out;
  }
  std::set<std::string> evicted;
  std::set<std::string> nodes;
  for (Planned& p : plan) {
    std::vector<api::PodPtr> fresh;
    for (const api::PodPtr& v : p.victims) {
      if (evicted.insert(v->meta.uid).second) fresh.push_back(v);
    }
    const std::string& node = p.pod->nominated_node_name;
    nodes.insert(node);
    if (common::Status s = EvictVictims(*p.pod, node, p.plugin, fresh); !s.ok()) {
      spdlog::warn("{}: preemption on node {}: {}", DescribeGang(policy), node, s.ToString());
    }
    ClearLowerPriorityNominations(*p.pod, node);
    out.outcomes[p.pod->meta.uid] = PostFilterOutcome{p.pod, std::move(fresh)};
  }
  if (deps_.metrics != nullptr) deps_.metrics->ObservePreemptionVictims(evicted.size());
  std::string on;
  for (const std::string& n : nodes) on += (on.empty() ? "" : ", ") + n;
  out.message = DescribeGang(policy) + " preempted " + std::to_string(evicted.size()) +
                " pod(s) for " + std::to_string(plan.size()) + " member(s) on " + on +
                "; it waits for them to leave";
  spdlog::info("{}", out.message);
  return out;
}

}  // namespace gpusched::scheduler
