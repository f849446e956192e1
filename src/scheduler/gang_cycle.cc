// SPDX-License-Identifier: Apache-2.0
// The gang cycle (scheduler.h): a gang's waiting members placed in one scheduling cycle, all of
// them or none (api/gang.h, the GangScheduling plugin).
//
//   1. Members: the popped pod and every other member waiting in the queue (PopGang), biggest
//      first (GPUs, then CPU, then name). Fewer than minMember (counting members already reserved
//      or bound): the gang waits ("k of minMember pods exist").
//   2. minResources: the cluster's free resources must cover them before anything is reserved.
//   3. Domains: with a required or preferred topology key, every value of that node label whose
//      free GPUs could hold the gang is tried (a trial: the members placed one after another,
//      restricted to the domain by the plugin's Filter, then rolled back); the domain where the
//      gang leaves the fewest free GPUs stranded on the nodes it uses wins (then the tightest
//      domain, then the name). A required key that no domain satisfies fails the gang; a
//      preferred one falls back to the whole cluster. Without a key, a gang whose PodGroup lists
//      claims its members share (KEP-5729) that fails on the whole cluster is tried once more
//      with kubernetes.io/hostname as a preferred key, on at most kSharedClaimNodeTrials nodes
//      (the tightest first): the first member placed decides where the shared claims are
//      allocated, and the others may fit only on another node.
//   4. Placement: each member runs the scheduling algorithm on the snapshot that holds the
//      members before it (no PostFilter: one member's preemption alone would not help; a member
//      nominated by gang preemption tries its nominated node first) and is reserved (Reserve →
//      assume → Permit: the plugin holds it at Permit until the member that completes minMember
//      allows every one). A reserved member's nomination is suspended until the trial is rolled
//      back or bound, so the members after it count its room once (reserved), not twice
//      (reserved and nominated). Then every reserved member is bound.
//   5. Failure: every reservation is abandoned at once (Unreserve, forget: no GPU stays held) and
//      every member returns to the unschedulable pool with the FitError "0/N nodes are available:
//      gang ... cannot be placed: ...". When more members than minMember were present and at
//      least minMember were placed, those are bound and only the others wait.
//   The gang's episode (cache::GangStore) starts at its first attempt; when its schedule timeout
//   passes unplaced (checked every tick), the gang is marked timed out once (a GangTimedOut event
//   on its members, the PodGroup's phase) and keeps being retried on cluster events, as every
//   unschedulable pod.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "src/common/interner.h"
#include "src/scheduler/gang_text.h"
#include "src/scheduler/pod_event.h"
#include "src/scheduler/scheduler.h"

namespace gpusched::scheduler {

using framework::QueuedPodInfo;
using framework::runtime::Framework;

namespace {

constexpr std::string_view kGangPlugin = "GangScheduling";
// The most nodes a gang sharing a PodGroup's claims is tried on, one trial each, after it failed
// on the whole cluster: a bound on what one failed cycle costs (each trial is up to one
// scheduling cycle per member).
constexpr size_t kSharedClaimNodeTrials = 32;

// Biggest first: the members that are hardest to place go first.
void OrderMembers(std::vector<QueuedPodInfo>& members) {
  std::stable_sort(members.begin(), members.end(),
                   [](const QueuedPodInfo& a, const QueuedPodInfo& b) {
                     const int64_t ga = a.pod->gpu.TotalMilli(), gb = b.pod->gpu.TotalMilli();
                     if (ga != gb) return ga > gb;
                     if (a.pod->requests.milli_cpu != b.pod->requests.milli_cpu) {
                       return a.pod->requests.milli_cpu > b.pod->requests.milli_cpu;
                     }
                     return a.pod->meta.name < b.pod->meta.name;
                   });
}

// The results of scheduler_podgroup_schedule_attempts_total (kube-scheduler 1.37's words).
constexpr std::string_view kScheduledResult = "scheduled";
constexpr std::string_view kUnschedulableResult = "unschedulable";
constexpr std::string_view kWaitingOnPreemptionResult = "waiting_on_preemption";

int64_t GpuMilliOf(const std::vector<QueuedPodInfo>& members) {
  int64_t total = 0;
  for (const QueuedPodInfo& m : members) total += m.pod->gpu.TotalMilli();
  return total;
}

}  // namespace

bool Scheduler::ScheduleGang(QueuedPodInfo& qp) {
  api::PodGroupPtr policy = gangs_.PolicyOf(*qp.pod);
  if (policy == nullptr || !policy->gang) return false;
  const common::TimePoint start = deps_.clock.Now();
  const std::string profile(common::Str(qp.pod->scheduler_name));
  const std::string_view result = RunGangCycle(qp, *policy);
  if (deps_.metrics != nullptr) {
    deps_.metrics->ObservePodGroupAttempt(
        result, profile, std::chrono::duration<double>(deps_.clock.Now() - start).count());
  }
  return true;
}

std::string_view Scheduler::RunGangCycle(QueuedPodInfo& qp, const api::PodGroup& policy) {
  const std::string key = api::GangKey(*qp.pod);
  std::vector<QueuedPodInfo> members;
  members.push_back(std::move(qp));
  for (QueuedPodInfo& m : queue_->PopGang(key)) {
    if (FrameworkFor(common::Str(m.pod->scheduler_name)) == nullptr) {
      queue_->Done(m.pod->meta.uid);
      continue;
    }
    members.push_back(std::move(m));
  }
  OrderMembers(members);
  gangs_.BeginAttempt(key, deps_.clock.Now());
  const auto reserved = static_cast<int32_t>(gangs_.ReservedMembers(key).size());
  const int32_t need = std::max(0, policy.min_member - reserved);
  if (static_cast<int32_t>(members.size()) < need) {
    const std::string message = DescribeGang(policy) + " waits for its pods: " +
                                std::to_string(static_cast<int32_t>(members.size()) + reserved) +
                                " of minMember " + std::to_string(policy.min_member) + " exist";
    FailGang(std::move(members), message);
    return kUnschedulableResult;
  }
  cache_.UpdateSnapshot(snapshot_);
  if (std::string missing = MinResourcesShortfall(policy); !missing.empty()) {
    FailGang(std::move(members), DescribeGang(policy) + " cannot be placed: " + missing);
    return kUnschedulableResult;
  }
  GangTry t = PlaceGang(key, policy, std::move(members));
  if (static_cast<int32_t>(t.placed.size()) < need || t.placed.empty()) {
    std::vector<QueuedPodInfo> all = AbandonGang(t);
    std::string message = DescribeGang(policy) + " cannot be placed: " + t.failure;
    GangPreemption p = PreemptForGang(policy, all, std::max(need, 1));
    const bool preempted = !p.message.empty();
    if (preempted) message = std::move(p.message);
    FailGang(std::move(all), message, &p.outcomes);
    return preempted ? kWaitingOnPreemptionResult : kUnschedulableResult;
  }
  CommitGang(policy, key, std::move(t));
  return kScheduledResult;
}

std::string Scheduler::MinResourcesShortfall(const api::PodGroup& policy) const {
  const api::ResourceList& want = policy.min_resources;
  if (want.IsZero()) return {};
  api::ResourceList free;
  for (const framework::NodeInfo& n : snapshot_.nodes()) {
    if (!n.valid()) continue;
    api::ResourceList left = n.node->allocatable;
    left.Sub(n.requested);
    free.Add(left);
  }
  std::string out;
  auto check = [&out](std::string_view name, int64_t wanted, int64_t left, std::string_view unit) {
    if (wanted <= left) return;
    out += (out.empty() ? "minResources " : ", ") + std::string(name) + " " +
           std::to_string(wanted) + std::string(unit) + " but " + std::to_string(left) +
           std::string(unit) + " free";
  };
  check("cpu", want.milli_cpu, free.milli_cpu, "m");
  check("memory", want.memory, free.memory, "");
  check("ephemeral-storage", want.ephemeral_storage, free.ephemeral_storage, "");
  for (const auto& [name, value] : want.scalar) check(common::Str(name), value, free.Get(name), "");
  return out;
}

Scheduler::GangTry Scheduler::TryPlaceGang(const std::string& key,
                                           std::vector<QueuedPodInfo> members,
                                           const std::optional<framework::Gangs::Domain>& domain) {
  GangTry t;
  if (domain) gangs_.SetTrial(key, *domain);
  framework::runtime::SchedulePodOptions opts;
  opts.run_post_filter = false;
  for (size_t i = 0; i < members.size(); ++i) {
    QueuedPodInfo& m = members[i];
    Framework* fw = FrameworkFor(common::Str(m.pod->scheduler_name));
    cache_.UpdateSnapshot(snapshot_);
    auto state = std::make_shared<framework::CycleState>();
    framework::runtime::ScheduleResult r =
        fw->SchedulePod(*state, *m.pod, snapshot_, deps_.random, opts);
    framework::Status st = r.status;
    if (r.node != framework::kNoNode) {
      const framework::NodeInfo& node = snapshot_.at(r.node);
      binding::Attempt a{fw, m.pod, state, std::string(node.name())};
      st = binding_.Reserve(a, node);
      if (st.ok()) {
        // Its room is reserved now: its nomination (gang preemption's) must not hold it twice
        // for the members after it.
        nominator_.Suspend(m.pod->meta.uid);
        Placement p = DescribePlacement(m, r, std::nullopt);
        t.placed.push_back(GangMember{std::move(m), std::move(a), std::move(p)});
        continue;
      }
    }
    t.failure =
        "pod " + m.pod->Key() + ": " +
        (st.IsRejected() && r.node == framework::kNoNode ? FitReasons(r.diagnosis) : st.ToString());
    for (size_t j = i; j < members.size(); ++j) t.unplaced.push_back(std::move(members[j]));
    break;
  }
  if (domain) gangs_.ClearTrial(key);
  return t;
}

std::vector<QueuedPodInfo> Scheduler::AbandonGang(GangTry& t) {
  std::vector<QueuedPodInfo> all;
  for (GangMember& m : t.placed) {
    binding_.Abandon(m.attempt);
    nominator_.Resume(m.qp.pod->meta.uid);
    all.push_back(std::move(m.qp));
  }
  for (QueuedPodInfo& m : t.unplaced) all.push_back(std::move(m));
  t.placed.clear();
  t.unplaced.clear();
  OrderMembers(all);
  return all;
}

std::vector<Scheduler::GangDomain> Scheduler::GangDomains(
    std::string_view label, const std::vector<QueuedPodInfo>& members) const {
  const api::Atom key = common::Intern(label);
  std::map<api::Atom, GangDomain> by_value;
  for (const framework::NodeInfo& n : snapshot_.nodes()) {
    api::Atom value;
    if (!n.valid() || !framework::GangDomainValue(*n.node, key, &value)) continue;
    GangDomain& d = by_value[value];
    d.domain = {key, value};
    d.free_gpu_milli += n.FreeGpuMilli();
  }
  const int64_t need = GpuMilliOf(members);
  std::vector<GangDomain> out;
  for (auto& [value, d] : by_value) {
    if (d.free_gpu_milli >= need) out.push_back(d);
  }
  // Tightest first: the domain the gang fills best is tried first (and wins ties).
  std::stable_sort(out.begin(), out.end(), [](const GangDomain& a, const GangDomain& b) {
    return a.free_gpu_milli < b.free_gpu_milli;
  });
  return out;
}

int64_t Scheduler::StrandedGpuMilli(const GangTry& t) {
  cache_.UpdateSnapshot(snapshot_);
  std::set<std::string_view> nodes;
  for (const GangMember& m : t.placed) nodes.insert(m.attempt.node);
  int64_t stranded = 0;
  for (std::string_view n : nodes) {
    if (const framework::NodeInfo* ni = snapshot_.Get(n)) stranded += ni->FreeGpuMilli();
  }
  return stranded;
}

Scheduler::GangTry Scheduler::PlaceGang(const std::string& key, const api::PodGroup& policy,
                                        std::vector<QueuedPodInfo> members) {
  const bool required = !policy.topology_required.empty();
  const std::string& label = required ? policy.topology_required : policy.topology_preferred;
  if (!label.empty()) return PlaceGangInDomains(key, label, required, std::move(members));
  GangTry t = TryPlaceGang(key, members, std::nullopt);
  if (t.unplaced.empty() || policy.resource_claims == nullptr) return t;
  // Claims the members share (KEP-5729) are allocated where the first member goes, and on a
  // node the others may not fit: try nodes as preferred domains, within the budget.
  AbandonGang(t);
  return PlaceGangInDomains(key, common::Str(api::Names().hostname), /*required=*/false,
                            std::move(members), kSharedClaimNodeTrials);
}

Scheduler::GangTry Scheduler::PlaceGangInDomains(const std::string& key, std::string_view label,
                                                 bool required, std::vector<QueuedPodInfo> members,
                                                 size_t max_domains) {
  std::vector<GangDomain> domains = GangDomains(label, members);
  if (domains.size() > max_domains) domains.resize(max_domains);
  std::optional<GangDomain> best;
  int64_t best_stranded = 0;
  std::string tried;
  if (domains.size() == 1) {  // nothing to compare: place it for real at once
    GangTry t = TryPlaceGang(key, members, domains.front().domain);
    if (!t.unplaced.empty()) {
      t.failure = "in " + std::string(label) + "=" +
                  std::string(common::Str(domains.front().domain.value)) + ": " + t.failure;
    }
    if (t.unplaced.empty() || required) return t;
    AbandonGang(t);
    return TryPlaceGang(key, std::move(members), std::nullopt);
  }
  for (const GangDomain& d : domains) {
    GangTry t = TryPlaceGang(key, members, d.domain);
    if (t.unplaced.empty()) {
      const int64_t stranded = StrandedGpuMilli(t);
      if (!best || stranded < best_stranded) {
        best = d;
        best_stranded = stranded;
      }
    } else {
      tried +=
          (tried.empty() ? "" : "; ") + std::string(common::Str(d.domain.value)) + ": " + t.failure;
    }
    AbandonGang(t);
  }
  if (best) return TryPlaceGang(key, std::move(members), best->domain);
  if (!required) return TryPlaceGang(key, std::move(members), std::nullopt);
  GangTry failed;
  failed.unplaced = std::move(members);
  failed.failure = domains.empty() ? "no " + std::string(label) + " domain has room for its GPUs"
                                   : "in no " + std::string(label) + " domain (" + tried + ")";
  return failed;
}

void Scheduler::CommitGang(const api::PodGroup& policy, const std::string& key, GangTry t) {
  if (std::optional<common::Duration> took = gangs_.Placed(key, deps_.clock.Now())) {
    if (deps_.metrics != nullptr) deps_.metrics->ObserveGangPlaced(took->count() / 1e9);
  }
  spdlog::debug("{} placed: {} member(s)", DescribeGang(policy), t.placed.size());
  for (GangMember& m : t.placed) {
    queue_->Done(m.qp.pod->meta.uid);
    nominator_.Remove(m.qp.pod->meta.uid);
    Framework* fw = m.attempt.fw;
    binding_.Bind(m.attempt, [this, fw, a = m.attempt, p = std::move(m.placement)](
                                 framework::Status bound) { FinishPlacement(*fw, a, p, bound); });
  }
  if (!t.unplaced.empty()) {  // more members than minMember: the others wait
    FailGang(std::move(t.unplaced),
             DescribeGang(policy) + " placed minMember pods; this one does not fit: " + t.failure);
  }
}

void Scheduler::FailGang(std::vector<QueuedPodInfo> members, const std::string& message,
                         const std::map<std::string, PostFilterOutcome>* preempted) {
  const framework::Status status =
      framework::Status::WithMessage(framework::Code::kUnschedulable, message)
          .WithPlugin(kGangPlugin);
  for (const QueuedPodInfo& m : members) {
    Framework* fw = FrameworkFor(common::Str(m.pod->scheduler_name));
    framework::runtime::Diagnosis diag;
    diag.num_nodes = snapshot_.num_nodes();
    diag.pre_filter_status = status;
    diag.unschedulable_plugins.emplace_back(kGangPlugin);
    diag.unresolvable_everywhere = false;
    const PostFilterOutcome* outcome = nullptr;
    if (preempted != nullptr) {
      auto it = preempted->find(m.pod->meta.uid);
      if (it != preempted->end()) outcome = &it->second;
    }
    const framework::runtime::NodeCounts counts{.total = diag.num_nodes};
    HandleFailure(*fw, m, Failure{status, &diag, counts, nullptr, outcome});
  }
  if (deps_.metrics != nullptr) deps_.metrics->CountGangAttempt(false);
}

std::optional<Scheduler::GangExplanation> Scheduler::ExplainGang(const api::Pod& pod) {
  api::PodGroupPtr policy = gangs_.PolicyOf(pod);
  if (policy == nullptr || !policy->gang) return std::nullopt;
  const std::string key = api::GangKey(pod);
  GangExplanation ex;
  ex.gang = DescribeGang(*policy);
  ex.min_member = policy->min_member;
  std::vector<QueuedPodInfo> members;
  auto self = std::make_shared<api::Pod>(pod);
  self->node_name.clear();
  members.push_back(QueuedPodInfo{});
  members.back().pod = std::move(self);
  for (QueuedPodInfo& m : queue_->PeekGang(key)) {
    if (m.pod->meta.uid != pod.meta.uid) members.push_back(std::move(m));
  }
  std::erase_if(members, [this](const QueuedPodInfo& m) {
    return FrameworkFor(common::Str(m.pod->scheduler_name)) == nullptr;
  });
  if (members.empty() || members.front().pod->meta.uid != pod.meta.uid) {
    ex.message = "no profile schedules " + pod.Key() + " (schedulerName " +
                 std::string(common::Str(pod.scheduler_name)) + "): its gang is not tried";
    return ex;
  }
  OrderMembers(members);
  const auto reserved = static_cast<int32_t>(gangs_.ReservedMembers(key).size());
  ex.members = static_cast<int32_t>(members.size()) + reserved;
  if (ex.members < policy->min_member) {
    ex.message = ex.gang + " waits for its pods: " + std::to_string(ex.members) + " of minMember " +
                 std::to_string(policy->min_member) + " exist";
    return ex;
  }
  cache_.UpdateSnapshot(snapshot_);
  if (std::string missing = MinResourcesShortfall(*policy); !missing.empty()) {
    ex.message = ex.gang + " cannot be placed: " + missing;
    return ex;
  }
  const int32_t need = std::max(0, policy->min_member - reserved);
  GangTry t = PlaceGang(key, *policy, std::move(members));
  ex.fits = static_cast<int32_t>(t.placed.size()) >= need && !t.placed.empty();
  if (ex.fits) {
    for (const GangMember& m : t.placed) ex.nodes.emplace_back(m.qp.pod->Key(), m.attempt.node);
  }
  std::vector<QueuedPodInfo> all = AbandonGang(t);
  if (!ex.fits) {
    const std::string wait = GangWaitText(all);
    ex.awaiting_victims = !wait.empty();
    ex.message = ex.gang + " " + (wait.empty() ? "cannot be placed: " + t.failure : wait);
  }
  return ex;
}

void Scheduler::ExpireGangTimeouts() {
  for (const cache::GangStore::TimedOut& t : gangs_.ExpireTimeouts(deps_.clock.Now())) {
    const std::string what = DescribeGang(*t.policy);
    spdlog::info(
        "{} timed out: not placed within {}s", what,
        std::chrono::duration_cast<std::chrono::seconds>(framework::ScheduleTimeoutOf(*t.policy))
            .count());
    for (const cache::GangStore::MemberRef& m : t.members) {
      kube::EventRecord ev;
      ev.namespace_ = m.namespace_;
      ev.pod_name = m.name;
      ev.pod_uid = m.uid;
      ev.type = "Warning";
      ev.reason = "GangTimedOut";
      ev.action = "Scheduling";
      ev.note = what + " was not placed within its schedule timeout";
      common::Status s = deps_.api.CreateEvent(ev);
      if (!s.ok()) spdlog::warn("recording GangTimedOut event for {}: {}", m.name, s.ToString());
    }
  }
}

}  // namespace gpusched::scheduler
