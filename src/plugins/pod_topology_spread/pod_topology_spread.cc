// SPDX-License-Identifier: Apache-2.0
#include "src/plugins/pod_topology_spread/pod_topology_spread.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "src/api/equivalence.h"
#include "src/api/resources.h"
#include "src/common/strings.h"
#include "src/plugins/helper/args.h"
#include "src/plugins/helper/queueing_hints.h"
#include "src/plugins/helper/taints.h"
#include "src/plugins/names.h"

namespace gpusched::plugins::pod_topology_spread {
namespace {

using When = api::TopologySpreadConstraint::WhenUnsatisfiable;
using Policy = api::TopologySpreadConstraint::NodeInclusionPolicy;
using helper::DomainIndex;

const framework::StateKey kPreFilterKey{"PodTopologySpread/PreFilter"};
const framework::StateKey kPreScoreKey{"PodTopologySpread/PreScore"};

constexpr int64_t kNoMinimum = std::numeric_limits<int32_t>::max();

// One constraint as applied to the pod in this cycle, with its counts per domain.
struct Constraint {
  int32_t max_skew = 1;
  common::Atom key;
  bool hostname = false;
  std::optional<int32_t> min_domains;
  Policy affinity_policy = Policy::kHonor;
  Policy taints_policy = Policy::kIgnore;
  // The selector: the constraint's labelSelector, or (default constraints) the pod's controller.
  bool by_owner = false;
  api::LabelSelector selector;
  api::OwnerReference owner;
  bool self_match = false;
  const DomainIndex* index = nullptr;
  // Matching pods per node slot for this selector (the plugin's memo); PreScore leaves every
  // feasible slot's count current for hostname Score.
  SelectorCountMemo* memo = nullptr;
  // Per slot: whether the node counts under the inclusion policies (the plugin's memo), or null
  // (evaluate per node with Included).
  const uint8_t* included = nullptr;
  uint64_t stamp = 0;  // PreScore's mark in memo->stamp of the slots whose count it refreshed
  std::vector<int32_t> counts;      // per domain
  std::vector<uint8_t> registered;  // per domain: counted (eligible node / feasible node)
  // PreFilter: the smallest count over registered domains, and their number.
  int64_t min_match = kNoMinimum;
  int32_t num_domains = 0;
  // PreScore: log(number of domains + 2).
  double weight = 0;
};

struct PreFilterState final : framework::StateData {
  std::vector<Constraint> constraints;
};

struct PreScoreState final : framework::StateData {
  std::vector<Constraint> constraints;
  bool require_all_topologies = true;
};

const api::OwnerReference* ControllerOf(const api::Pod& pod) {
  for (const api::OwnerReference& r : pod.meta.owner_references) {
    if (r.controller) return &r;
  }
  return nullptr;
}

bool SelectedBy(const Constraint& c, const api::Pod& p) {
  if (!c.by_owner) return c.selector.Matches(p.meta.labels);
  const api::OwnerReference* r = ControllerOf(p);
  return r != nullptr && r->uid == c.owner.uid && r->kind == c.owner.kind &&
         r->name == c.owner.name;
}

// Pods on `pods` counted by constraint `c` for a pod of namespace `ns` (countPodsMatchSelector:
// same namespace, not terminating; terminal pods are not in the scheduler's view upstream).
int32_t CountMatching(std::span<const api::PodPtr> pods, const Constraint& c, std::string_view ns) {
  int32_t n = 0;
  for (const api::PodPtr& p : pods) {
    if (p->meta.namespace_ != ns || p->meta.deletion_timestamp.has_value() || p->Terminal()) {
      continue;
    }
    if (SelectedBy(c, *p)) ++n;
  }
  return n;
}

// The memo key of `c`'s selector for pods of namespace `ns`: a canonical, unambiguous encoding
// (length-prefixed strings, fixed-width atom ids), so equal keys mean equal selectors.
void SelectorKey(const Constraint& c, std::string_view ns, std::string& out) {
  out.clear();
  auto put_u32 = [&out](uint32_t v) { out.append(reinterpret_cast<const char*>(&v), sizeof v); };
  auto put_str = [&](std::string_view v) {
    put_u32(static_cast<uint32_t>(v.size()));
    out.append(v);
  };
  put_str(ns);
  if (c.by_owner) {
    out.push_back('O');
    put_str(c.owner.kind);
    put_str(c.owner.name);
    put_str(c.owner.uid);
    return;
  }
  out.push_back('L');
  put_u32(static_cast<uint32_t>(c.selector.requirements.size()));
  for (const api::Requirement& r : c.selector.requirements) {
    put_u32(r.key.id);
    out.push_back(static_cast<char>(r.op));
    put_u32(static_cast<uint32_t>(r.values.size()));
    for (common::Atom v : r.values) put_u32(v.id);
    const int64_t number = r.number;
    out.append(reinterpret_cast<const char*>(&number), sizeof number);
  }
}

// CountMatching for slot `slot`, through the memo: recounted only when the node's generation
// `gen` (0: unknown, never trusted) differs from the one the stored count was taken at. The
// count is always left in m.count[slot]. REQUIRES: slot < m.count.size().
int32_t MemoCount(SelectorCountMemo& m, uint64_t gen, size_t slot, const framework::NodeInfo& info,
                  const Constraint& c, std::string_view ns) {
  if (gen != 0 && m.gen[slot] == gen) return m.count[slot];
  const int32_t n = info.valid() ? CountMatching(info.pods, c, ns) : 0;
  m.count[slot] = n;
  m.gen[slot] = gen;
  return n;
}

// The node's generation if the snapshot tracks changes (cache-kept), else 0.
uint64_t GenerationOf(const framework::Snapshot& snapshot, size_t slot) {
  const auto gens = snapshot.generations();
  return snapshot.generation() != 0 && slot < gens.size() ? gens[slot] : 0;
}

// The pod's nodeSelector and required node affinity (nodeAffinityPolicy: Honor).
bool MatchesNodeAffinity(const api::Pod& pod, const api::Node& node) {
  for (const auto& [key, value] : pod.node_selector.items()) {
    common::Atom v;
    if (!node.meta.labels.Get(key, &v) || v != value) return false;
  }
  const auto& required = pod.affinity.node_affinity.required;
  return !required.has_value() || required->Matches(node.meta.labels, node.meta.name);
}

// nodeTaintsPolicy: Honor.
bool ToleratesNodeTaints(const api::Pod& pod, const api::Node& node) {
  return helper::FindMatchingUntoleratedTaint(node.taints, pod.tolerations,
                                              helper::IsDoNotScheduleTaint) == nullptr;
}

bool HasAllKeys(std::span<const Constraint> cs, size_t slot) {
  for (const Constraint& c : cs) {
    if (c.index->node_domain[slot] < 0) return false;
  }
  return true;
}

// Whether node `info` counts for `c` under its inclusion policies; `aff`/`taints` are computed
// lazily (-1 unknown).
bool Included(const Constraint& c, const api::Pod& pod, const api::Node& node, int& aff,
              int& taints) {
  if (c.affinity_policy == Policy::kHonor) {
    if (aff < 0) aff = MatchesNodeAffinity(pod, node) ? 1 : 0;
    if (aff == 0) return false;
  }
  if (c.taints_policy == Policy::kHonor) {
    if (taints < 0) taints = ToleratesNodeTaints(pod, node) ? 1 : 0;
    if (taints == 0) return false;
  }
  return true;
}

bool IncludedAt(const Constraint& c, size_t slot, const api::Pod& pod,
                const framework::NodeInfo& info, int& aff, int& taints) {
  if (c.included != nullptr) return c.included[slot] != 0;
  return info.valid() && Included(c, pod, *info.node, aff, taints);
}

// PreScore: marks the domains of `c` (a constraint other than hostname) that hold a node of
// `counted` registered; returns their number, the nodes without the key counting as one more
// domain (upstream registers the empty value).
int32_t RegisterDomains(Constraint& c, std::span<const framework::NodeIndex> counted) {
  const int32_t* domain = c.index->node_domain.data();
  uint8_t* registered = c.registered.data();
  int32_t size = 0;
  bool missing = false;
  for (framework::NodeIndex n : counted) {
    const int32_t d = domain[static_cast<size_t>(n)];
    if (d < 0) {
      missing = true;
      continue;
    }
    size += registered[static_cast<size_t>(d)] == 0 ? 1 : 0;
    registered[static_cast<size_t>(d)] = 1;
  }
  return size + (missing ? 1 : 0);
}

// PreScore: leaves the count of every node of `counted` current in the hostname constraint's
// memo, stamped for Score (a node's NodeInfo is read only when its memo entry misses).
void RefreshHostnameCounts(Constraint& c, std::span<const framework::NodeIndex> counted,
                           const framework::Snapshot& snapshot, const api::Pod& pod) {
  const auto nodes = snapshot.nodes();
  for (framework::NodeIndex n : counted) {
    const auto slot = static_cast<size_t>(n);
    if (slot >= nodes.size()) continue;  // feasible nodes are valid
    MemoCount(*c.memo, GenerationOf(snapshot, slot), slot, nodes[slot], c, pod.meta.namespace_);
    c.memo->stamp[slot] = c.stamp;
  }
}

// PreScore: adds to each registered domain of `c` (a constraint other than hostname) the matching
// pods of its nodes that count (every required key, included under c's policies): one pass over
// the slots per constraint, its arrays hoisted. A node's NodeInfo is read only when a memo misses.
void AddDomainCounts(Constraint& c, std::span<const Constraint> cs, bool require_all,
                     const framework::Snapshot& snapshot, const api::Pod& pod) {
  const auto nodes = snapshot.nodes();
  const int32_t* domain = c.index->node_domain.data();  // -1 also for an empty slot
  const uint8_t* registered = c.registered.data();
  const size_t slots = std::min(nodes.size(), c.index->node_domain.size());
  for (size_t i = 0; i < slots; ++i) {
    const int32_t d = domain[i];
    if (d < 0 || registered[static_cast<size_t>(d)] == 0) continue;
    if (require_all && !HasAllKeys(cs, i)) continue;
    const framework::NodeInfo& info = nodes[i];
    int aff = -1;
    int taints = -1;
    if (!IncludedAt(c, i, pod, info, aff, taints)) continue;
    c.counts[static_cast<size_t>(d)] +=
        MemoCount(*c.memo, GenerationOf(snapshot, i), i, info, c, pod.meta.namespace_);
  }
}

}  // namespace

std::vector<DefaultConstraint> Args::EffectiveDefaults() const {
  if (defaulting_type == DefaultingType::kList) return default_constraints;
  const api::WellKnown& wk = api::Names();
  return {DefaultConstraint{5, wk.zone, When::kScheduleAnyway, std::nullopt},
          DefaultConstraint{3, wk.hostname, When::kScheduleAnyway, std::nullopt}};
}

namespace {

// defaultConstraints[i]: a v1.TopologySpreadConstraint without a selector.
DefaultConstraint ParseDefaultConstraint(api::ObjectFields& c) {
  DefaultConstraint d;
  constexpr int64_t kMaxInt32 = std::numeric_limits<int32_t>::max();
  if (c.Value("maxSkew") == nullptr) c.Error("maxSkew", "required");
  if (auto v = c.Int("maxSkew", 1, kMaxInt32)) d.max_skew = static_cast<int32_t>(*v);
  if (auto key = c.RequiredString("topologyKey")) d.topology_key = common::Intern(*key);
  if (auto when = c.RequiredString("whenUnsatisfiable")) {
    if (*when == "DoNotSchedule") {
      d.when_unsatisfiable = When::kDoNotSchedule;
    } else if (*when == "ScheduleAnyway") {
      d.when_unsatisfiable = When::kScheduleAnyway;
    } else {
      c.Error("whenUnsatisfiable",
              "must be DoNotSchedule or ScheduleAnyway, got " + common::Quote(*when));
    }
  }
  if (auto v = c.Int("minDomains", 1, kMaxInt32)) d.min_domains = static_cast<int32_t>(*v);
  if (c.Value("labelSelector") != nullptr) {
    c.Error("labelSelector", "constraint must not define a selector, as they deduced for each pod");
  }
  // Accepted as upstream's schema has them; the defaults use neither.
  c.Allow({"matchLabelKeys", "nodeAffinityPolicy", "nodeTaintsPolicy"});
  return d;
}

}  // namespace

common::StatusOr<Args> ParseArgs(const boost::json::value& raw) {
  Args out;
  GPUSCHED_RETURN_IF_ERROR(helper::ReadArgs(raw, [&](api::ObjectFields& f) {
    if (auto t = f.String("defaultingType")) {
      if (*t == "List") {
        out.defaulting_type = Args::DefaultingType::kList;
      } else if (*t == "System" || t->empty()) {
        out.defaulting_type = Args::DefaultingType::kSystem;
      } else {
        f.Error("defaultingType", "must be System or List, got " + common::Quote(*t));
      }
    }
    f.ForEachObject(
        "defaultConstraints", [&](const boost::json::object& o, const api::FieldPath& path) {
          api::ObjectFields c(f.reader(), o, path);
          const DefaultConstraint d = ParseDefaultConstraint(c);
          for (const DefaultConstraint& prev : out.default_constraints) {
            if (!d.topology_key.empty() && prev.topology_key == d.topology_key &&
                prev.when_unsatisfiable == d.when_unsatisfiable) {
              f.reader().Error(path, "duplicate (topologyKey, whenUnsatisfiable) pair (" +
                                         std::string(common::Str(d.topology_key)) + ")");
            }
          }
          out.default_constraints.push_back(d);
        });
    if (out.defaulting_type == Args::DefaultingType::kSystem && !out.default_constraints.empty()) {
      f.Error("defaultConstraints", "must be empty when defaultingType is System");
    }
  }));
  return out;
}

PodTopologySpread::PodTopologySpread(Args args)
    : args_(std::move(args)),
      defaults_(args_.EffectiveDefaults()),
      system_defaulted_(args_.defaulting_type == Args::DefaultingType::kSystem) {
  memos_.reserve(kMaxCountMemos);
}

common::StatusOr<framework::PluginPtr> PodTopologySpread::Create(const boost::json::value& args,
                                                                 framework::Handle& /*handle*/) {
  GPUSCHED_ASSIGN_OR_RETURN(Args parsed, ParseArgs(args));
  return framework::PluginPtr(std::make_unique<PodTopologySpread>(std::move(parsed)));
}

std::string_view PodTopologySpread::Name() const { return names::kPodTopologySpread; }

namespace {

// The pod's constraints with `action` (its own, or the defaults selecting its controller's pods).
std::vector<Constraint> BuildConstraints(const api::Pod& pod, When action,
                                         std::span<const DefaultConstraint> defaults) {
  std::vector<Constraint> out;
  const common::Atom hostname = api::Names().hostname;
  if (!pod.topology_spread_constraints.empty()) {
    for (const api::TopologySpreadConstraint& t : pod.topology_spread_constraints) {
      if (t.when_unsatisfiable != action) continue;
      Constraint& c = out.emplace_back();
      c.max_skew = t.max_skew;
      c.key = t.topology_key;
      c.hostname = t.topology_key == hostname;
      c.min_domains = t.min_domains;
      c.affinity_policy = t.node_affinity_policy;
      c.taints_policy = t.node_taints_policy;
      c.selector = t.label_selector;
      c.self_match = c.selector.Matches(pod.meta.labels);
    }
    return out;
  }
  // Upstream's default selector comes from the Services, ReplicationControllers, ReplicaSets and
  // StatefulSets selecting the pod; a Job's or a bare pod's gets none (without a Service).
  const api::OwnerReference* owner = ControllerOf(pod);
  if (owner == nullptr || (owner->kind != "ReplicaSet" && owner->kind != "StatefulSet" &&
                           owner->kind != "ReplicationController")) {
    return out;
  }
  for (const DefaultConstraint& d : defaults) {
    if (d.when_unsatisfiable != action) continue;
    Constraint& c = out.emplace_back();
    c.max_skew = d.max_skew;
    c.key = d.topology_key;
    c.hostname = d.topology_key == hostname;
    c.min_domains = d.min_domains;
    c.by_owner = true;
    c.owner = *owner;
    c.self_match = true;
  }
  return out;
}

}  // namespace

framework::Status PodTopologySpread::PreFilter(framework::CycleState& state, const api::Pod& pod,
                                               const framework::Snapshot& snapshot) {
  std::vector<Constraint> cs = BuildConstraints(pod, When::kDoNotSchedule, defaults_);
  if (cs.empty()) return framework::Status::Skip();
  domains_.Refresh(snapshot);
  for (Constraint& c : cs) {
    c.index = &domains_.For(snapshot, c.key);
    c.counts.assign(static_cast<size_t>(c.index->num_domains), 0);
    c.registered.assign(static_cast<size_t>(c.index->num_domains), 0);
    SelectorKey(c, pod.meta.namespace_, key_buf_);
    c.memo = &Memo(snapshot, key_buf_);
    c.included = Inclusion(snapshot, pod, c.affinity_policy == Policy::kHonor,
                           c.taints_policy == Policy::kHonor);
  }
  const auto nodes = snapshot.nodes();
  for (size_t i = 0; i < nodes.size(); ++i) {
    // An empty slot has no domain, so HasAllKeys also skips it; the NodeInfo itself is touched
    // only when a memo misses (the common case touches flat arrays only).
    if (!HasAllKeys(cs, i)) continue;
    const framework::NodeInfo& info = nodes[i];
    int aff = -1;
    int taints = -1;
    const uint64_t gen = GenerationOf(snapshot, i);
    for (Constraint& c : cs) {
      if (!IncludedAt(c, i, pod, info, aff, taints)) continue;
      const auto d = static_cast<size_t>(c.index->node_domain[i]);
      c.registered[d] = 1;
      c.counts[d] += MemoCount(*c.memo, gen, i, info, c, pod.meta.namespace_);
    }
  }
  for (Constraint& c : cs) {  // Filter reads only the per-domain counts
    c.memo = nullptr;
    c.included = nullptr;
  }
  for (Constraint& c : cs) {
    for (size_t d = 0; d < c.counts.size(); ++d) {
      if (!c.registered[d]) continue;
      ++c.num_domains;
      c.min_match = std::min<int64_t>(c.min_match, c.counts[d]);
    }
  }
  auto s = std::make_unique<PreFilterState>();
  s->constraints = std::move(cs);
  state.Write(kPreFilterKey, std::move(s));
  return framework::Status::Success();
}

framework::Status PodTopologySpread::Filter(const framework::CycleState& state,
                                            const api::Pod& /*pod*/,
                                            const framework::NodeInfo& node) const {
  const PreFilterState* s = state.Get<PreFilterState>(kPreFilterKey);
  if (s == nullptr) return framework::Status::Error("PodTopologySpread: no PreFilter state");
  const auto slot = static_cast<size_t>(node.index);
  for (const Constraint& c : s->constraints) {
    if (slot >= c.index->node_domain.size() || c.index->node_domain[slot] < 0) {
      return framework::Status::Unresolvable(kReasonNodeLabelNotMatch);
    }
    const auto d = static_cast<size_t>(c.index->node_domain[slot]);
    const int64_t min_match =
        c.min_domains.has_value() && c.num_domains < *c.min_domains ? 0 : c.min_match;
    const int64_t skew = int64_t{c.counts[d]} + (c.self_match ? 1 : 0) - min_match;
    if (skew > c.max_skew) return framework::Status::Unschedulable(kReasonConstraintsNotMatch);
  }
  return framework::Status::Success();
}

framework::Status PodTopologySpread::PreScore(framework::CycleState& state, const api::Pod& pod,
                                              const framework::Snapshot& snapshot,
                                              std::span<const framework::NodeIndex> feasible) {
  if (feasible.empty()) return framework::Status::Skip();
  std::vector<Constraint> cs = BuildConstraints(pod, When::kScheduleAnyway, defaults_);
  if (cs.empty()) return framework::Status::Skip();
  domains_.Refresh(snapshot);
  // Only non-system-default rules require every topology label, so that nodes without a zone
  // label still get hostname spreading from the system defaults.
  const bool require_all = !pod.topology_spread_constraints.empty() || !system_defaulted_;
  std::vector<int32_t> sizes(cs.size(), 0);
  for (size_t k = 0; k < cs.size(); ++k) {
    Constraint& c = cs[k];
    c.index = &domains_.For(snapshot, c.key);
    c.counts.assign(static_cast<size_t>(c.index->num_domains), 0);
    c.registered.assign(static_cast<size_t>(c.index->num_domains), 0);
    SelectorKey(c, pod.meta.namespace_, key_buf_);
    c.memo = &Memo(snapshot, key_buf_);
    c.stamp = ++memo_stamp_;
    c.included = Inclusion(snapshot, pod, c.affinity_policy == Policy::kHonor,
                           c.taints_policy == Policy::kHonor);
  }
  // The feasible nodes that count: all of them, or those with every required key.
  std::span<const framework::NodeIndex> counted = feasible;
  if (require_all) {
    counted_.clear();
    for (framework::NodeIndex n : feasible) {
      if (HasAllKeys(cs, static_cast<size_t>(n))) counted_.push_back(n);
    }
    counted = counted_;
  }
  const auto ignored = static_cast<int32_t>(feasible.size() - counted.size());
  for (size_t k = 0; k < cs.size(); ++k) {
    if (cs[k].hostname) {
      RefreshHostnameCounts(cs[k], counted, snapshot, pod);
    } else {
      sizes[k] = RegisterDomains(cs[k], counted);
    }
  }
  for (size_t k = 0; k < cs.size(); ++k) {
    const int32_t size =
        cs[k].hostname ? static_cast<int32_t>(feasible.size()) - ignored : sizes[k];
    cs[k].weight = std::log(static_cast<double>(size) + 2.0);
  }
  for (Constraint& c : cs) {
    if (!c.hostname) AddDomainCounts(c, cs, require_all, snapshot, pod);  // hostname: in Score
  }
  auto s = std::make_unique<PreScoreState>();
  s->constraints = std::move(cs);
  s->require_all_topologies = require_all;
  state.Write(kPreScoreKey, std::move(s));
  return framework::Status::Success();
}

namespace {

// The raw score of `node`; its NodeInfo is read only when PreScore did not leave a hostname count
// in the memo.
int64_t ScoreAt(const PreScoreState& s, const framework::NodeInfo& node, const api::Pod& pod) {
  const auto slot = static_cast<size_t>(node.index);
  // An ignored node (missing a required topology label) scores -1 here and 0 after
  // normalization; real scores are never negative.
  if (s.require_all_topologies && !HasAllKeys(s.constraints, slot)) return -1;
  double score = 0;
  for (const Constraint& c : s.constraints) {
    const int32_t d = c.index->node_domain[slot];
    if (d < 0) continue;
    // Hostname: PreScore left the count of every feasible node current in the memo; a node it
    // did not see is counted directly.
    int64_t count = 0;
    if (!c.hostname) {
      count = c.counts[static_cast<size_t>(d)];
    } else if (c.memo != nullptr && slot < c.memo->stamp.size() && c.memo->stamp[slot] == c.stamp) {
      count = c.memo->count[slot];
    } else {
      count = CountMatching(node.pods, c, pod.meta.namespace_);
    }
    score += static_cast<double>(count) * c.weight + static_cast<double>(c.max_skew - 1);
  }
  return std::llround(score);
}

}  // namespace

void PodTopologySpread::ScoreNodes(const framework::CycleState& state, const api::Pod& pod,
                                   const framework::Snapshot& snapshot,
                                   std::span<const framework::NodeIndex> nodes,
                                   std::span<int64_t> out) const {
  const PreScoreState* s = state.Get<PreScoreState>(kPreScoreKey);
  framework::ScoreEach(snapshot, nodes, out, [s, &pod](const framework::NodeInfo& node) {
    return s == nullptr ? 0 : ScoreAt(*s, node, pod);
  });
}

SelectorCountMemo& PodTopologySpread::Memo(const framework::Snapshot& snapshot,
                                           std::string_view key) {
  if (&snapshot != memo_snapshot_ || snapshot.generation() < memo_generation_) {
    memos_.clear();
    memo_snapshot_ = &snapshot;
  }
  memo_generation_ = snapshot.generation();
  ++memo_tick_;
  SelectorCountMemo* m = nullptr;
  for (SelectorCountMemo& e : memos_) {
    if (e.key == key) {
      m = &e;
      break;
    }
  }
  if (m == nullptr) {
    if (memos_.size() < kMaxCountMemos) {  // reserved: entries never move
      m = &memos_.emplace_back();
    } else {
      m = &*std::min_element(memos_.begin(), memos_.end(),
                             [](const SelectorCountMemo& a, const SelectorCountMemo& b) {
                               return a.last_used < b.last_used;
                             });
    }
    m->key.assign(key);
    std::fill(m->gen.begin(), m->gen.end(), 0);
    std::fill(m->stamp.begin(), m->stamp.end(), 0);
  }
  m->last_used = memo_tick_;
  const size_t slots = snapshot.nodes().size();
  if (m->gen.size() != slots) {
    m->gen.resize(slots, 0);
    m->count.resize(slots, 0);
    m->stamp.resize(slots, 0);
  }
  return *m;
}

const uint8_t* PodTopologySpread::Inclusion(const framework::Snapshot& snapshot,
                                            const api::Pod& pod, bool honor_affinity,
                                            bool honor_taints) {
  if (!honor_affinity && !honor_taints) return nullptr;  // every node counts: nothing to memoise
  const uint64_t version = snapshot.node_set_version();
  if (version == 0) return nullptr;
  const auto nodes = snapshot.nodes();
  if (&snapshot != inclusion_snapshot_ || version != inclusion_version_ ||
      nodes.size() != inclusion_slots_) {
    inclusion_.clear();
    inclusion_snapshot_ = &snapshot;
    inclusion_version_ = version;
    inclusion_slots_ = nodes.size();
  }
  // The equivalence key covers nodeSelector, affinity and tolerations (and more: a finer key
  // than needed, never a coarser one).
  api::SchedulingEquivalenceKey(pod, inclusion_key_);
  inclusion_key_.push_back(static_cast<char>((honor_affinity ? 1 : 0) | (honor_taints ? 2 : 0)));
  ++inclusion_tick_;
  for (InclusionMemo& e : inclusion_) {
    if (e.key == inclusion_key_) {
      e.last_used = inclusion_tick_;
      return e.included.data();
    }
  }
  InclusionMemo* m = nullptr;
  if (inclusion_.size() < kMaxCountMemos) {
    inclusion_.reserve(kMaxCountMemos);  // entries never move: callers keep data() pointers
    m = &inclusion_.emplace_back();
  } else {
    m = &*std::min_element(
        inclusion_.begin(), inclusion_.end(),
        [](const InclusionMemo& a, const InclusionMemo& b) { return a.last_used < b.last_used; });
  }
  m->key = inclusion_key_;
  m->last_used = inclusion_tick_;
  m->included.assign(nodes.size(), 0);
  Constraint probe;
  probe.affinity_policy = honor_affinity ? Policy::kHonor : Policy::kIgnore;
  probe.taints_policy = honor_taints ? Policy::kHonor : Policy::kIgnore;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (!nodes[i].valid()) continue;
    int aff = -1;
    int taints = -1;
    m->included[i] = Included(probe, pod, *nodes[i].node, aff, taints) ? 1 : 0;
  }
  return m->included.data();
}

framework::Status PodTopologySpread::NormalizeScore(const framework::CycleState& /*state*/,
                                                    const api::Pod& /*pod*/,
                                                    std::span<int64_t> scores) const {
  int64_t min_score = std::numeric_limits<int64_t>::max();
  int64_t max_score = 0;
  for (int64_t s : scores) {
    if (s < 0) continue;
    min_score = std::min(min_score, s);
    max_score = std::max(max_score, s);
  }
  for (int64_t& s : scores) {
    if (s < 0) {
      s = 0;
    } else if (max_score == 0) {
      s = framework::kMaxNodeScore;
    } else {
      s = framework::kMaxNodeScore * (max_score + min_score - s) / max_score;
    }
  }
  return framework::Status::Success();
}

using framework::ClusterEvent;
using framework::ClusterEventWithHint;
using framework::EventObjects;
using framework::EventResource;
using framework::QueueingHint;

namespace {

bool HasHardConstraints(const api::Pod& pod) {
  return std::any_of(pod.topology_spread_constraints.begin(), pod.topology_spread_constraints.end(),
                     [](const auto& c) {
                       return c.when_unsatisfiable ==
                              api::TopologySpreadConstraint::WhenUnsatisfiable::kDoNotSchedule;
                     });
}

// An assigned pod in the pod's namespace that a constraint's selector counts.
bool CountedBy(const api::Pod& pod, const api::Pod* other) {
  if (other == nullptr) return false;
  if (other->meta.namespace_ != pod.meta.namespace_) return false;
  return std::any_of(pod.topology_spread_constraints.begin(), pod.topology_spread_constraints.end(),
                     [&](const auto& c) { return c.label_selector.Matches(other->meta.labels); });
}

QueueingHint AfterPodChange(const api::Pod& pod, const ClusterEvent& /*event*/,
                            const EventObjects& o) {
  if (!HasHardConstraints(pod)) return QueueingHint::kQueue;  // system defaults: can't tell
  return CountedBy(pod, o.old_pod) || CountedBy(pod, o.new_pod) ? QueueingHint::kQueue
                                                                : QueueingHint::kSkip;
}

bool HasAllKeys(const api::Pod& pod, const api::Node& node) {
  return std::all_of(pod.topology_spread_constraints.begin(), pod.topology_spread_constraints.end(),
                     [&](const auto& c) { return node.meta.labels.Has(c.topology_key); });
}

bool SameKeyValues(const api::Pod& pod, const api::Node& a, const api::Node& b) {
  return std::all_of(pod.topology_spread_constraints.begin(), pod.topology_spread_constraints.end(),
                     [&](const auto& c) {
                       common::Atom va;
                       common::Atom vb;
                       const bool ha = a.meta.labels.Get(c.topology_key, &va);
                       const bool hb = b.meta.labels.Get(c.topology_key, &vb);
                       return ha == hb && va == vb;
                     });
}

// A node with the constraints' topology keys added or deleted, or whose key values or taints
// changed (a taint changes which nodes count under nodeTaintsPolicy: Honor).
QueueingHint AfterNodeChange(const api::Pod& pod, const ClusterEvent& event,
                             const EventObjects& o) {
  if (!HasHardConstraints(pod)) return QueueingHint::kQueue;
  if (o.old_node == nullptr || o.new_node == nullptr) {
    const api::Node* node = helper::EventNode(o);
    return node == nullptr || HasAllKeys(pod, *node) ? QueueingHint::kQueue : QueueingHint::kSkip;
  }
  if (!SameKeyValues(pod, *o.old_node, *o.new_node)) return QueueingHint::kQueue;
  if ((event.actions & framework::kUpdateNodeTaint) != 0 && HasAllKeys(pod, *o.new_node)) {
    return QueueingHint::kQueue;
  }
  return QueueingHint::kSkip;
}

}  // namespace

std::vector<ClusterEventWithHint> PodTopologySpread::EventsToRegister() const {
  return {
      {ClusterEvent{EventResource::kAssignedPod,
                    framework::kAdd | framework::kDelete | framework::kUpdatePodLabel},
       AfterPodChange},
      {ClusterEvent{EventResource::kNode, framework::kAdd | framework::kDelete |
                                              framework::kUpdateNodeLabel |
                                              framework::kUpdateNodeTaint},
       AfterNodeChange},
  };
}

std::string PodTopologySpread::ExplainScore(const framework::CycleState& /*state*/,
                                            const api::Pod& /*pod*/,
                                            const framework::NodeInfo& /*node*/,
                                            int64_t raw) const {
  return "matching pods in the node's domains, weighted by the domain counts: " +
         std::to_string(raw) + " (fewer is better)";
}

}  // namespace gpusched::plugins::pod_topology_spread
