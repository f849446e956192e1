// SPDX-License-Identifier: Apache-2.0
#include "src/extender/extender.h"

#include <algorithm>
#include <boost/json.hpp>
#include <future>
#include <span>

#include "src/api/decode.h"
#include "src/common/interner.h"
#include "src/common/logging.h"
#include "src/extender/wire.h"
#include "src/framework/preemption/preemption.h"

namespace gpusched::extender {
namespace {

namespace json = boost::json;
using framework::NodeIndex;
using framework::NodeInfo;
using framework::runtime::Framework;

// MaxExtenderPriority in k8s.io/kube-scheduler/extender/v1.
constexpr int64_t kMaxExtenderPriority = 10;

http::Response BadRequest(std::string message) {
  return http::Response{400, "text/plain", std::move(message) + "\n", {}};
}

http::Response Json(const json::value& v) {
  return http::Response{200, "application/json", json::serialize(v), {}};
}

// PostFilterContext over one Framework's Filter plugins, for the preempt verb: kube-scheduler
// keeps the nominations, so no nominated pods are added; kube-scheduler chose the nodes.
class FilterContext final : public framework::PostFilterContext {
 public:
  FilterContext(const Framework& fw, const framework::Snapshot& snapshot)
      : fw_(fw), snapshot_(snapshot) {}
  framework::Code NodeCode(NodeIndex) const override { return framework::Code::kUnschedulable; }
  // Every valid node, as NodeCode says; listed only if asked (the preempt verb runs no PostFilter).
  std::span<const NodeIndex> PotentialNodes() const override {
    if (all_.empty()) {
      for (const NodeInfo& ni : snapshot_.nodes()) {
        if (ni.valid()) all_.push_back(ni.index);
      }
    }
    return all_;
  }
  framework::Status RunFilters(const framework::CycleState& state, const api::Pod& pod,
                               const NodeInfo& node) const override {
    framework::Status s = fw_.RunFilter(state, pod, node);
    return s.IsSkip() ? framework::Status::Success() : s;
  }
  std::span<const api::PodPtr> NominatedPods(NodeIndex) const override { return {}; }
  framework::Status PreFilterFor(framework::CycleState&, const api::Pod&) const override {
    return framework::Status::Error("the extender's preempt verb moves no pods");
  }
  framework::Status RunFiltersFor(const framework::CycleState&, const api::Pod&,
                                  const NodeInfo&) const override {
    return framework::Status::Error("the extender's preempt verb moves no pods");
  }

 private:
  const Framework& fw_;
  const framework::Snapshot& snapshot_;
  mutable std::vector<NodeIndex> all_;  // the snapshot's valid nodes, once asked
};

// The preempt verb's answer for one node.
struct NodeAnswer {
  enum class Outcome { kKept, kReplaced, kDropped };
  Outcome outcome = Outcome::kDropped;
  std::vector<std::string> uids;  // the victims (kKept: as proposed; kReplaced: ours)
  int64_t pdb_violations = 0;
  std::string why;  // kReplaced, kDropped: the pod's rejection with the proposed victims gone
};

int32_t IndexOfUid(const NodeInfo& node, std::string_view uid) {
  for (size_t i = 0; i < node.pods.size(); ++i) {
    if (node.pods[i]->meta.uid == uid) return static_cast<int32_t>(i);
  }
  return -1;
}

std::string Reason(const framework::Status& s) {
  return s.reason().empty() ? s.ToString() : std::string(s.reason());
}

// Checks kube-scheduler's proposal on `node` (null: not in our cache) and, when the pod does not
// fit without those victims, selects the device-correct ones. A proposed victim our cache does
// not have on the node is kept in the answer as given.
NodeAnswer AnswerNode(const FilterContext& context, framework::CycleState& state,
                      const api::Pod& pod, const NodeInfo* node,
                      const PreemptionArgs::Node& proposal, std::span<const api::PdbPtr> pdbs,
                      framework::preemption::VictimSelector& selector) {
  NodeAnswer a;
  if (node == nullptr) {
    a.why = "node not known to the gpusched extender";
    return a;
  }
  NodeInfo without = *node;
  without.pod_devices.resize(without.pods.size());
  std::vector<std::string> unknown;
  for (const std::string& uid : proposal.uids) {
    const int32_t i = IndexOfUid(without, uid);
    if (i < 0) {
      unknown.push_back(uid);
    } else {
      without.RemovePodAt(static_cast<size_t>(i));
    }
  }
  const framework::Status fits = context.RunFilters(state, pod, without);
  if (fits.ok() && !proposal.uids.empty()) {
    a.outcome = NodeAnswer::Outcome::kKept;
    a.uids = proposal.uids;
    a.pdb_violations = proposal.pdb_violations;
    return a;
  }
  a.why = fits.ok() ? "no victims proposed" : Reason(fits);
  framework::preemption::Candidate c;
  const framework::Status s = selector.Select(state, pod, *node, context, pdbs, c);
  if (!s.ok()) {
    a.why += "; " + Reason(s);
    return a;
  }
  a.outcome = NodeAnswer::Outcome::kReplaced;
  for (const api::PodPtr& v : c.victims) a.uids.push_back(v->meta.uid);
  for (std::string& uid : unknown) a.uids.push_back(std::move(uid));
  // The same set as proposed: kube-scheduler's count; else ours (the PDBs of the informer).
  std::vector<std::string> mine = a.uids, theirs = proposal.uids;
  std::sort(mine.begin(), mine.end());
  std::sort(theirs.begin(), theirs.end());
  a.pdb_violations = mine == theirs ? proposal.pdb_violations : c.pdb_violations;
  return a;
}

// "ns/name" for each UID our cache has on `node`, else the UID, comma-separated (logs).
std::string DescribeVictims(const NodeInfo* node, const std::vector<std::string>& uids) {
  std::string out;
  for (const std::string& uid : uids) {
    if (!out.empty()) out += ",";
    const int32_t i = node != nullptr ? IndexOfUid(*node, uid) : -1;
    out += i >= 0 ? node->pods[static_cast<size_t>(i)]->Key() : uid;
  }
  return out;
}

json::object MetaVictims(const std::vector<std::string>& uids, int64_t pdb_violations) {
  json::array pods;
  for (const std::string& uid : uids) pods.push_back(json::object{{"UID", uid}});
  return json::object{{"Pods", std::move(pods)}, {"NumPDBViolations", pdb_violations}};
}

}  // namespace

// A Framework leased from the pool for one request.
class Extender::Lease {
 public:
  explicit Lease(Extender& e) : e_(e), fw_(e.Acquire()) {}
  ~Lease() { e_.Release(fw_); }
  Lease(const Lease&) = delete;
  Lease& operator=(const Lease&) = delete;
  Framework& operator*() { return fw_; }
  Framework* operator->() { return &fw_; }

 private:
  Extender& e_;
  Framework& fw_;
};

Extender::Extender(ExtenderOptions options, ExtenderDeps deps)
    : options_(std::move(options)),
      deps_(std::move(deps)),
      cache_(deps_.clock, options_.assumed_ttl),
      binding_(cache_, waiting_, bind_executor_) {
  for (const auto& r : options_.managed_resources) managed_.push_back(common::Intern(r));
}

common::StatusOr<std::unique_ptr<Extender>> Extender::Create(const config::Profile& profile,
                                                             int32_t default_percentage,
                                                             ExtenderOptions options,
                                                             ExtenderDeps deps) {
  if (options.workers < 1) return common::InvalidArgumentError("extender: workers must be >= 1");
  std::unique_ptr<Extender> e(new Extender(std::move(options), std::move(deps)));
  e->building_ = true;
  for (int i = 0; i < e->options_.workers; ++i) {
    GPUSCHED_ASSIGN_OR_RETURN(
        auto fw, Framework::Create(profile, default_percentage, e->deps_.registry, *e));
    fw->SetWaitingPods(&e->waiting_);
    e->frameworks_.push_back(std::move(fw));
  }
  e->building_ = false;
  common::MutexLock l(e->pool_mu_);
  for (auto& fw : e->frameworks_) e->free_.push_back(fw.get());
  return e;
}

common::Status Extender::BindPod(const api::Pod& pod, std::string_view node,
                                 const framework::Allocation& allocation) {
  if (!deps_.bind) return common::UnimplementedError("extender: no API client to bind with");
  return deps_.bind(pod, node, allocation);
}

framework::Gangs* Extender::gangs() {
  if (building_) asked_gangs_ = true;
  return nullptr;
}

framework::VolumeView* Extender::volumes() {
  if (building_) asked_volumes_ = true;
  return nullptr;
}

framework::DraView* Extender::dra() {
  if (building_) asked_dra_ = true;
  return nullptr;
}

std::vector<std::string> Extender::UntrackedKinds() const {
  std::vector<std::string> out;
  if (asked_gangs_) out.emplace_back("PodGroups");
  if (asked_volumes_) out.emplace_back("PersistentVolumeClaims");
  if (asked_dra_) out.emplace_back("ResourceClaims");
  return out;
}

int Extender::Tick() {
  waiting_.ExpireDue(deps_.clock.Now());
  return cache_.CleanupExpiredAssumedPods();
}

Framework& Extender::Acquire() {
  std::unique_lock<std::mutex> l(pool_mu_.native());
  pool_cv_.wait(l, [this]() GPUSCHED_NO_THREAD_SAFETY_ANALYSIS { return !free_.empty(); });
  Framework* fw = [this]() GPUSCHED_NO_THREAD_SAFETY_ANALYSIS {
    Framework* f = free_.back();
    free_.pop_back();
    return f;
  }();
  return *fw;
}

void Extender::Release(Framework& fw) {
  {
    common::MutexLock l(pool_mu_);
    free_.push_back(&fw);
  }
  pool_cv_.notify_one();
}

void Extender::Remember(const api::PodPtr& pod) {
  if (pod->meta.uid.empty()) return;
  common::MutexLock l(recent_mu_);
  auto [it, inserted] = recent_.insert_or_assign(pod->meta.uid, pod);
  if (!inserted) return;
  recent_order_.push_back(pod->meta.uid);
  while (recent_order_.size() > options_.recent_pods) {
    recent_.erase(recent_order_.front());
    recent_order_.pop_front();
  }
}

api::PodPtr Extender::Recall(std::string_view uid) {
  common::MutexLock l(recent_mu_);
  auto it = recent_.find(std::string(uid));
  return it == recent_.end() ? nullptr : it->second;
}

std::shared_ptr<const framework::Snapshot> Extender::CurrentSnapshot() {
  common::MutexLock l(snapshot_mu_);
  cache_.UpdateSnapshot(working_);
  if (published_ == nullptr || published_->generation() != working_.generation()) {
    published_ = std::make_shared<const framework::Snapshot>(working_);
  }
  return published_;
}

bool Extender::Interested(const api::Pod& pod) const {
  if (managed_.empty()) return true;
  auto uses = [&](const std::vector<api::Container>& cs) {
    for (const auto& c : cs) {
      for (common::Atom r : managed_) {
        if (c.requests.Get(r) != 0 || c.limits.Get(r) != 0) return true;
      }
    }
    return false;
  };
  return uses(pod.containers) || uses(pod.init_containers) || !pod.gpu.empty() ||
         !pod.gpu_error.empty();
}

http::Response Extender::Filter(std::string_view body) {
  auto args = DecodeExtenderArgs(body);
  if (!args.ok()) return BadRequest(std::string(args.status().message()));
  Remember(args->pod);
  json::object out;
  json::object failed;
  json::object unresolvable;
  std::vector<bool> pass(args->names.size(), true);

  if (Interested(*args->pod)) {
    auto snap = CurrentSnapshot();
    Lease fw(*this);
    framework::CycleState state;
    framework::Status pre = fw->RunPreFilter(state, *args->pod, *snap);
    if (pre.IsError()) {
      out["Error"] = pre.ToString();
      std::fill(pass.begin(), pass.end(), false);
    } else {
      for (size_t i = 0; i < args->names.size(); ++i) {
        const std::string& name = args->names[i];
        framework::Status st = pre;
        if (st.ok()) {
          const NodeInfo* ni = snap->Get(name);
          NodeInfo fresh;  // a node kube-scheduler knows and our cache does not: empty accounting
          if (ni == nullptr && !args->node_cache_capable) {
            fresh.node = args->nodes[i];
            ni = &fresh;
          }
          if (ni == nullptr) {
            st = framework::Status::Unschedulable("node(s) not yet known to the gpusched extender");
          } else {
            st = fw->RunFilter(state, *args->pod, *ni);
          }
        }
        if (st.ok() || st.IsSkip()) continue;
        pass[i] = false;
        std::string reason(st.reason().empty() ? st.ToString() : std::string(st.reason()));
        if (st.code() == framework::Code::kUnschedulableAndUnresolvable) {
          unresolvable[name] = reason;
        } else {
          failed[name] = reason;
        }
      }
    }
  }

  if (args->node_cache_capable) {
    json::array names;
    for (size_t i = 0; i < args->names.size(); ++i) {
      if (pass[i]) names.emplace_back(args->names[i]);
    }
    out["NodeNames"] = std::move(names);
    out["Nodes"] = nullptr;
  } else {
    json::array items;
    for (size_t i = 0; i < args->names.size(); ++i) {
      if (pass[i]) items.push_back(*args->raw[i]);
    }
    json::object list;
    list["apiVersion"] = "v1";
    list["kind"] = "NodeList";
    list["items"] = std::move(items);
    out["Nodes"] = std::move(list);
    out["NodeNames"] = nullptr;
  }
  out["FailedNodes"] = std::move(failed);
  out["FailedAndUnresolvableNodes"] = std::move(unresolvable);
  if (!out.contains("Error")) out["Error"] = "";
  return Json(out);
}

http::Response Extender::Prioritize(std::string_view body) {
  auto args = DecodeExtenderArgs(body);
  if (!args.ok()) return BadRequest(std::string(args.status().message()));
  Remember(args->pod);
  std::vector<int64_t> scores(args->names.size(), 0);
  if (Interested(*args->pod)) {
    auto snap = CurrentSnapshot();
    std::vector<NodeIndex> indices;
    std::vector<size_t> positions;
    for (size_t i = 0; i < args->names.size(); ++i) {
      if (const NodeInfo* ni = snap->Get(args->names[i])) {
        indices.push_back(ni->index);
        positions.push_back(i);
      }
    }
    std::vector<int64_t> totals(indices.size(), 0);
    Lease fw(*this);
    framework::CycleState state;
    framework::Status st = fw->RunPreFilter(state, *args->pod, *snap);
    if (st.ok() && !indices.empty())
      st = fw->RunScore(state, *args->pod, *snap, indices, totals, nullptr);
    if (st.ok() && !totals.empty()) {
      // The profile's totals are Σ weight × 0..100; the best node maps to MaxExtenderPriority and
      // the others proportionally (ranking preserved, kube-scheduler multiplies by weight × 10).
      int64_t best = *std::max_element(totals.begin(), totals.end());
      if (best > 0) {
        for (size_t k = 0; k < totals.size(); ++k) {
          int64_t t = std::max<int64_t>(totals[k], 0);
          scores[positions[k]] = (t * kMaxExtenderPriority + best / 2) / best;
        }
      }
    }
    // Errors: kube-scheduler ignores prioritize errors anyway; every node scores 0.
  }
  json::array out;
  for (size_t i = 0; i < args->names.size(); ++i) {
    json::object hp;
    hp["Host"] = args->names[i];
    hp["Score"] = scores[i];
    out.push_back(std::move(hp));
  }
  return Json(out);
}

http::Response Extender::Bind(std::string_view body) {
  auto args = DecodeBindingArgs(body);
  if (!args.ok()) return BadRequest(std::string(args.status().message()));
  const std::string& name = args->pod_name;
  const std::string& ns = args->pod_namespace;
  const std::string& uid = args->pod_uid;
  const std::string& node = args->node;
  auto result = [](std::string_view error) {
    json::object o;
    o["Error"] = error;
    return Json(o);
  };
  api::PodPtr pod = Recall(uid);
  if (pod == nullptr)
    return result("pod " + ns + "/" + name + " (" + uid + ") was not filtered by this extender");
  if (cache_.Contains(uid)) return result("pod " + pod->Key() + " is already assumed or bound");

  Lease fw(*this);
  binding::Attempt attempt{&*fw, pod, std::make_shared<framework::CycleState>(), node};
  if (std::string error = ReserveForBind(attempt); !error.empty()) return result(error);
  // The binding half runs on this thread (inline executor); a pod a Permit plugin holds is bound
  // (or rejected) when the plugins decide or the wait times out (Tick).
  std::promise<framework::Status> bound;
  binding_.Bind(attempt, [&bound](framework::Status s) { bound.set_value(std::move(s)); });
  framework::Status st = bound.get_future().get();
  if (st.ok()) return result("");
  if (st.IsRejected()) return result("pod " + pod->Key() + " rejected at Permit: " + st.ToString());
  return result("binding " + pod->Key() + " to " + node + ": " + std::string(st.reason()));
}

std::string Extender::ReserveForBind(const binding::Attempt& a) {
  // Re-check and reserve under the bind lock, so two binds cannot both take the last device.
  common::MutexLock l(bind_mu_);
  auto snap = CurrentSnapshot();
  const NodeInfo* ni = snap->Get(a.node);
  if (ni == nullptr) return "node " + a.node + " is not known to the gpusched extender";
  framework::Status st = a.fw->RunPreFilter(*a.state, *a.pod, *snap);
  if (st.ok()) st = a.fw->RunFilter(*a.state, *a.pod, *ni);
  if (!st.ok() && !st.IsSkip())
    return "pod " + a.pod->Key() + " no longer fits " + a.node + ": " + st.ToString();
  st = binding_.Reserve(a, *ni);
  // Reserve, assume and Permit: a rejection names the plugin, e.g. "Unschedulable (Gate): …".
  if (!st.ok()) return "pod " + a.pod->Key() + " not reserved on " + a.node + ": " + st.ToString();
  return "";
}

http::Response Extender::Preempt(std::string_view body) {
  auto args = DecodePreemptionArgs(body);
  if (!args.ok()) return BadRequest(std::string(args.status().message()));
  const api::Pod& pod = *args->pod;
  json::object victims;
  if (!Interested(pod)) {  // not ours to judge: kube-scheduler's victims stand
    for (const PreemptionArgs::Node& n : args->nodes) {
      if (!n.uids.empty()) victims[n.name] = MetaVictims(n.uids, n.pdb_violations);
    }
    return Json(json::object{{"NodeNameToMetaVictims", std::move(victims)}});
  }
  auto snap = CurrentSnapshot();
  Lease fw(*this);
  framework::CycleState state;
  const framework::Status pre = fw->RunPreFilter(state, pod, *snap);
  if (pre.IsError()) {
    return http::Response{
        500, "text/plain", "preempt " + pod.Key() + ": " + pre.ToString() + "\n", {}};
  }
  const FilterContext context(*fw, *snap);
  framework::preemption::VictimSelector selector(deps_.clock);
  const std::vector<api::PdbPtr> pdbs = pdbs_.List();
  for (const PreemptionArgs::Node& n : args->nodes) {
    const NodeInfo* ni = snap->Get(n.name);
    NodeAnswer a;
    if (pre.ok()) {
      a = AnswerNode(context, state, pod, ni, n, pdbs, selector);
    } else {
      a.why = Reason(pre);  // PreFilter rejected the pod: no node helps
    }
    static constexpr std::string_view kOutcome[] = {"kept", "replaced", "dropped"};
    common::InfoS(2, "Extender preemption",
                  {{"pod", pod.Key()},
                   {"node", n.name},
                   {"proposed", DescribeVictims(ni, n.uids)},
                   {"answer", kOutcome[static_cast<int>(a.outcome)]},
                   {"victims", DescribeVictims(ni, a.uids)},
                   {"reason", a.why}});
    if (a.outcome != NodeAnswer::Outcome::kDropped) {
      victims[n.name] = MetaVictims(a.uids, a.pdb_violations);
    }
  }
  return Json(json::object{{"NodeNameToMetaVictims", std::move(victims)}});
}

void Extender::RegisterRoutes(http::Server& server, std::string_view prefix) {
  std::string p(prefix);
  while (!p.empty() && p.back() == '/') p.pop_back();
  server.Handle("POST", p + "/filter", [this](const http::Request& r) { return Filter(r.body); });
  server.Handle("POST", p + "/prioritize",
                [this](const http::Request& r) { return Prioritize(r.body); });
  server.Handle("POST", p + "/preempt", [this](const http::Request& r) { return Preempt(r.body); });
  server.Handle("POST", p + "/bind", [this](const http::Request& r) { return Bind(r.body); });
}

}  // namespace gpusched::extender
