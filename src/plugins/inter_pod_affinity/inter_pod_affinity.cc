// SPDX-License-Identifier: Apache-2.0
#include "src/plugins/inter_pod_affinity/inter_pod_affinity.h"

#include <algorithm>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "src/plugins/helper/args.h"
#include "src/plugins/helper/queueing_hints.h"
#include "src/plugins/names.h"

namespace gpusched::plugins::inter_pod_affinity {
namespace {

using helper::DomainIndex;

const framework::StateKey kPreFilterKey{"InterPodAffinity/PreFilter"};
const framework::StateKey kPreScoreKey{"InterPodAffinity/PreScore"};

// Counts (or weights) per domain of one topology key.
struct KeyTable {
  common::Atom key;
  const DomainIndex* index = nullptr;
  std::vector<int64_t> counts;  // per domain
};

// Counts per topology pair, one table per key.
struct Tables {
  std::vector<KeyTable> keys;
  bool any = false;  // some pair was added (upstream: the map is not empty)

  int32_t Find(common::Atom key) const {
    for (size_t i = 0; i < keys.size(); ++i) {
      if (keys[i].key == key) return static_cast<int32_t>(i);
    }
    return -1;
  }
  // Adds `delta` to the pair (key, value of `key` on the node in `slot`); nothing when the node
  // lacks the key.
  void Add(int32_t table, size_t slot, int64_t delta) {
    KeyTable& t = keys[static_cast<size_t>(table)];
    const int32_t d = t.index->node_domain[slot];
    if (d < 0) return;
    t.counts[static_cast<size_t>(d)] += delta;
    any = true;
  }
  // The count of the node's domain for `table`; 0 when the node lacks the key.
  int64_t At(int32_t table, size_t slot) const {
    const KeyTable& t = keys[static_cast<size_t>(table)];
    const int32_t d = t.index->node_domain[slot];
    return d < 0 ? 0 : t.counts[static_cast<size_t>(d)];
  }
};

struct PreFilterState final : framework::StateData {
  // Per required affinity / anti-affinity term of the pod: its table index.
  std::vector<int32_t> affinity_terms;
  std::vector<int32_t> anti_terms;
  Tables affinity;       // pods matching all required affinity terms
  Tables anti;           // pods matching each required anti-affinity term
  Tables existing_anti;  // existing pods whose required anti-affinity matches the pod
  bool self_matches_affinity = false;
};

struct PreScoreState final : framework::StateData {
  Tables score;
};

// Whether `term`, declared by a pod of namespace `owner_ns`, selects `target`.
bool TermMatches(const api::PodAffinityTerm& term, std::string_view owner_ns,
                 const api::Pod& target) {
  const std::string& ns = target.meta.namespace_;
  bool ns_ok = false;
  if (term.namespaces.empty() && !term.namespace_selector.has_value()) {
    ns_ok = ns == owner_ns;
  } else {
    ns_ok = (term.namespace_selector.has_value() && term.namespace_selector->empty()) ||
            std::find(term.namespaces.begin(), term.namespaces.end(), ns) != term.namespaces.end();
  }
  return ns_ok && term.label_selector.Matches(target.meta.labels);
}

bool MatchesAllTerms(std::span<const api::PodAffinityTerm> terms, std::string_view owner_ns,
                     const api::Pod& target) {
  if (terms.empty()) return false;
  for (const api::PodAffinityTerm& t : terms) {
    if (!TermMatches(t, owner_ns, target)) return false;
  }
  return true;
}

bool HasAnyAffinity(const api::Pod& p) {
  return !p.affinity.pod_affinity.empty() || !p.affinity.pod_anti_affinity.empty();
}

}  // namespace

common::StatusOr<Args> ParseArgs(const boost::json::value& raw) {
  Args out;
  GPUSCHED_RETURN_IF_ERROR(helper::ReadArgs(raw, [&](api::ObjectFields& f) {
    if (auto w = f.Int("hardPodAffinityWeight", 0, 100)) {
      out.hard_pod_affinity_weight = static_cast<int32_t>(*w);
    }
    if (auto v = f.Bool("ignorePreferredTermsOfExistingPods")) {
      out.ignore_preferred_terms_of_existing_pods = *v;
    }
  }));
  return out;
}

common::StatusOr<framework::PluginPtr> InterPodAffinity::Create(const boost::json::value& args,
                                                                framework::Handle& /*handle*/) {
  GPUSCHED_ASSIGN_OR_RETURN(Args parsed, ParseArgs(args));
  return framework::PluginPtr(std::make_unique<InterPodAffinity>(parsed));
}

std::string_view InterPodAffinity::Name() const { return names::kInterPodAffinity; }

void InterPodAffinity::Refresh(const framework::Snapshot& snapshot) {
  domains_.Refresh(snapshot);
  const auto nodes = snapshot.nodes();
  // A snapshot without a version (tests, tools) has no meaningful generations: recount all.
  const bool trust_generations = snapshot.node_set_version() != 0;
  slots_.resize(nodes.size());
  total_required_anti_ = 0;
  total_with_affinity_ = 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const framework::NodeInfo& n = nodes[i];
    SlotMemo& m = slots_[i];
    if (!n.valid()) {
      m = SlotMemo{};
      continue;
    }
    if (!trust_generations || n.generation == 0 || m.node != n.node.get() ||
        m.generation != n.generation) {
      m.node = n.node.get();
      m.generation = n.generation;
      m.required_anti = 0;
      m.with_affinity = 0;
      for (const api::PodPtr& p : n.pods) {
        if (!p->affinity.pod_anti_affinity.required.empty()) ++m.required_anti;
        if (HasAnyAffinity(*p)) ++m.with_affinity;
      }
    }
    total_required_anti_ += m.required_anti;
    total_with_affinity_ += m.with_affinity;
  }
}

namespace {

// The table for `key` in `tables`, created (zeroed) on first use.
template <typename IndexFn>
int32_t TableFor(Tables& tables, common::Atom key, IndexFn&& index_for) {
  int32_t t = tables.Find(key);
  if (t >= 0) return t;
  KeyTable& kt = tables.keys.emplace_back();
  kt.key = key;
  kt.index = &index_for(key);
  kt.counts.assign(static_cast<size_t>(kt.index->num_domains), 0);
  return static_cast<int32_t>(tables.keys.size() - 1);
}

}  // namespace

framework::Status InterPodAffinity::PreFilter(framework::CycleState& state, const api::Pod& pod,
                                              const framework::Snapshot& snapshot) {
  const auto& req_aff = pod.affinity.pod_affinity.required;
  const auto& req_anti = pod.affinity.pod_anti_affinity.required;
  // O(1) for ordinary pods on a cache-kept snapshot.
  if (req_aff.empty() && req_anti.empty() && snapshot.node_set_version() != 0 &&
      snapshot.pods_with_required_anti_affinity() == 0) {
    return framework::Status::Skip();
  }
  Refresh(snapshot);
  if (req_aff.empty() && req_anti.empty() && total_required_anti_ == 0) {
    return framework::Status::Skip();
  }
  auto index_for = [&](common::Atom key) -> const DomainIndex& {
    return domains_.For(snapshot, key);
  };
  auto s = std::make_unique<PreFilterState>();
  for (const api::PodAffinityTerm& t : req_aff) {
    s->affinity_terms.push_back(TableFor(s->affinity, t.topology_key, index_for));
  }
  for (const api::PodAffinityTerm& t : req_anti) {
    s->anti_terms.push_back(TableFor(s->anti, t.topology_key, index_for));
  }
  s->self_matches_affinity = MatchesAllTerms(req_aff, pod.meta.namespace_, pod);
  const std::string& ns = pod.meta.namespace_;
  const auto nodes = snapshot.nodes();
  for (size_t i = 0; i < nodes.size(); ++i) {
    const framework::NodeInfo& n = nodes[i];
    if (!n.valid()) continue;
    const bool scan_existing_anti = slots_[i].required_anti > 0;
    if (!scan_existing_anti && req_aff.empty() && req_anti.empty()) continue;
    for (const api::PodPtr& p : n.pods) {
      if (p->Terminal()) continue;
      if (scan_existing_anti) {
        for (const api::PodAffinityTerm& t : p->affinity.pod_anti_affinity.required) {
          if (!TermMatches(t, p->meta.namespace_, pod)) continue;
          s->existing_anti.Add(TableFor(s->existing_anti, t.topology_key, index_for), i, 1);
        }
      }
      if (!req_aff.empty() && MatchesAllTerms(req_aff, ns, *p)) {
        for (int32_t t : s->affinity_terms) s->affinity.Add(t, i, 1);
      }
      for (size_t k = 0; k < req_anti.size(); ++k) {
        if (TermMatches(req_anti[k], ns, *p)) s->anti.Add(s->anti_terms[k], i, 1);
      }
    }
  }
  state.Write(kPreFilterKey, std::move(s));
  return framework::Status::Success();
}

framework::Status InterPodAffinity::Filter(const framework::CycleState& state,
                                           const api::Pod& /*pod*/,
                                           const framework::NodeInfo& node) const {
  const PreFilterState* s = state.Get<PreFilterState>(kPreFilterKey);
  if (s == nullptr) return framework::Status::Error("InterPodAffinity: no PreFilter state");
  const auto slot = static_cast<size_t>(node.index);
  if (!s->affinity_terms.empty()) {
    bool pods_exist = true;
    for (int32_t t : s->affinity_terms) {
      const KeyTable& kt = s->affinity.keys[static_cast<size_t>(t)];
      if (slot >= kt.index->node_domain.size() || kt.index->node_domain[slot] < 0) {
        return framework::Status::Unresolvable(kReasonAffinityRulesNotMatch);
      }
      if (s->affinity.At(t, slot) <= 0) pods_exist = false;
    }
    // The first pod of a group with affinity to itself may go anywhere that has the labels.
    if (!pods_exist && !(!s->affinity.any && s->self_matches_affinity)) {
      return framework::Status::Unresolvable(kReasonAffinityRulesNotMatch);
    }
  }
  for (int32_t t : s->anti_terms) {
    const KeyTable& kt = s->anti.keys[static_cast<size_t>(t)];
    if (slot < kt.index->node_domain.size() && s->anti.At(t, slot) > 0) {
      return framework::Status::Unschedulable(kReasonAntiAffinityRulesNotMatch);
    }
  }
  for (size_t t = 0; t < s->existing_anti.keys.size(); ++t) {
    const KeyTable& kt = s->existing_anti.keys[t];
    if (slot < kt.index->node_domain.size() &&
        s->existing_anti.At(static_cast<int32_t>(t), slot) > 0) {
      return framework::Status::Unschedulable(kReasonExistingAntiAffinityRulesNotMatch);
    }
  }
  return framework::Status::Success();
}

framework::Status InterPodAffinity::PreScore(framework::CycleState& state, const api::Pod& pod,
                                             const framework::Snapshot& snapshot,
                                             std::span<const framework::NodeIndex> feasible) {
  if (feasible.empty()) return framework::Status::Skip();
  const auto& pref_aff = pod.affinity.pod_affinity.preferred;
  const auto& pref_anti = pod.affinity.pod_anti_affinity.preferred;
  const bool has_preferred = !pref_aff.empty() || !pref_anti.empty();
  if (!has_preferred &&
      (args_.ignore_preferred_terms_of_existing_pods ||
       (snapshot.node_set_version() != 0 && snapshot.pods_with_affinity() == 0))) {
    return framework::Status::Skip();
  }
  Refresh(snapshot);
  if (!has_preferred &&
      (args_.ignore_preferred_terms_of_existing_pods || total_with_affinity_ == 0)) {
    return framework::Status::Skip();
  }
  auto index_for = [&](common::Atom key) -> const DomainIndex& {
    return domains_.For(snapshot, key);
  };
  auto s = std::make_unique<PreScoreState>();
  Tables& score = s->score;
  const std::string& ns = pod.meta.namespace_;
  const int64_t hard = args_.hard_pod_affinity_weight;
  const bool use_existing_preferred = !args_.ignore_preferred_terms_of_existing_pods;
  const auto nodes = snapshot.nodes();
  for (size_t i = 0; i < nodes.size(); ++i) {
    const framework::NodeInfo& n = nodes[i];
    if (!n.valid() || n.node->meta.labels.empty()) continue;
    if (!has_preferred && slots_[i].with_affinity == 0) continue;
    for (const api::PodPtr& p : n.pods) {
      if (p->Terminal()) continue;
      // The pod's preferred terms against the existing pod.
      for (const api::WeightedPodAffinityTerm& w : pref_aff) {
        if (TermMatches(w.term, ns, *p)) {
          score.Add(TableFor(score, w.term.topology_key, index_for), i, w.weight);
        }
      }
      for (const api::WeightedPodAffinityTerm& w : pref_anti) {
        if (TermMatches(w.term, ns, *p)) {
          score.Add(TableFor(score, w.term.topology_key, index_for), i, -int64_t{w.weight});
        }
      }
      if (!HasAnyAffinity(*p)) continue;
      // The existing pod's terms against the pod.
      if (hard > 0) {
        for (const api::PodAffinityTerm& t : p->affinity.pod_affinity.required) {
          if (TermMatches(t, p->meta.namespace_, pod)) {
            score.Add(TableFor(score, t.topology_key, index_for), i, hard);
          }
        }
      }
      if (use_existing_preferred) {
        for (const api::WeightedPodAffinityTerm& w : p->affinity.pod_affinity.preferred) {
          if (TermMatches(w.term, p->meta.namespace_, pod)) {
            score.Add(TableFor(score, w.term.topology_key, index_for), i, w.weight);
          }
        }
        for (const api::WeightedPodAffinityTerm& w : p->affinity.pod_anti_affinity.preferred) {
          if (TermMatches(w.term, p->meta.namespace_, pod)) {
            score.Add(TableFor(score, w.term.topology_key, index_for), i, -int64_t{w.weight});
          }
        }
      }
    }
  }
  state.Write(kPreScoreKey, std::move(s));
  return framework::Status::Success();
}

void InterPodAffinity::ScoreNodes(const framework::CycleState& state, const api::Pod& /*pod*/,
                                  const framework::Snapshot& snapshot,
                                  std::span<const framework::NodeIndex> nodes,
                                  std::span<int64_t> out) const {
  const PreScoreState* s = state.Get<PreScoreState>(kPreScoreKey);
  framework::ScoreEach(snapshot, nodes, out, [s](const framework::NodeInfo& node) -> int64_t {
    if (s == nullptr) return 0;
    const auto slot = static_cast<size_t>(node.index);
    int64_t total = 0;
    for (size_t t = 0; t < s->score.keys.size(); ++t) {
      if (slot < s->score.keys[t].index->node_domain.size()) {
        total += s->score.At(static_cast<int32_t>(t), slot);
      }
    }
    return total;
  });
}

framework::Status InterPodAffinity::NormalizeScore(const framework::CycleState& state,
                                                   const api::Pod& /*pod*/,
                                                   std::span<int64_t> scores) const {
  const PreScoreState* s = state.Get<PreScoreState>(kPreScoreKey);
  if (s == nullptr || !s->score.any || scores.empty()) return framework::Status::Success();
  const auto [lo, hi] = std::minmax_element(scores.begin(), scores.end());
  const int64_t min_count = *lo;
  const int64_t diff = *hi - min_count;
  for (int64_t& v : scores) {
    v = diff > 0
            ? static_cast<int64_t>(static_cast<double>(framework::kMaxNodeScore) *
                                   (static_cast<double>(v - min_count) / static_cast<double>(diff)))
            : 0;
  }
  return framework::Status::Success();
}

using framework::ClusterEvent;
using framework::ClusterEventWithHint;
using framework::EventObjects;
using framework::EventResource;
using framework::QueueingHint;

namespace {

bool AnyTermMatches(const std::vector<api::PodAffinityTerm>& terms, const api::Pod* other) {
  return other != nullptr && std::any_of(terms.begin(), terms.end(), [&](const auto& t) {
           return t.label_selector.Matches(other->meta.labels);
         });
}

// An assigned pod that the pod's required affinity may now find (added, labels changed), or that
// its required anti-affinity no longer finds (deleted, labels changed); or a deleted pod whose
// own anti-affinity may have kept the pod away. Namespaces are not compared (a harmless retry).
QueueingHint AfterPodChange(const api::Pod& pod, const ClusterEvent& /*event*/,
                            const EventObjects& o) {
  const auto& affinity = pod.affinity.pod_affinity.required;
  const auto& anti = pod.affinity.pod_anti_affinity.required;
  if (AnyTermMatches(affinity, o.new_pod)) return QueueingHint::kQueue;
  if (AnyTermMatches(anti, o.old_pod)) return QueueingHint::kQueue;
  if (o.new_pod == nullptr && o.old_pod != nullptr &&
      !o.old_pod->affinity.pod_anti_affinity.required.empty()) {
    return QueueingHint::kQueue;
  }
  return QueueingHint::kSkip;
}

}  // namespace

std::vector<ClusterEventWithHint> InterPodAffinity::EventsToRegister() const {
  return {
      {ClusterEvent{EventResource::kAssignedPod,
                    framework::kAdd | framework::kDelete | framework::kUpdatePodLabel},
       AfterPodChange},
      // A node's topology labels decide the domains; no hint (upstream checks the keys).
      {ClusterEvent{EventResource::kNode, framework::kAdd | framework::kUpdateNodeLabel}, nullptr},
  };
}

std::string InterPodAffinity::ExplainScore(const framework::CycleState& /*state*/,
                                           const api::Pod& /*pod*/,
                                           const framework::NodeInfo& /*node*/, int64_t raw) const {
  return "preferred affinity minus anti-affinity of the node's domains: " + std::to_string(raw);
}

}  // namespace gpusched::plugins::inter_pod_affinity
