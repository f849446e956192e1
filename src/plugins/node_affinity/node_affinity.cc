// SPDX-License-Identifier: Apache-2.0
#include "src/plugins/node_affinity/node_affinity.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "src/api/decode.h"
#include "src/framework/pre_filter_nodes.h"
#include "src/plugins/helper/args.h"
#include "src/plugins/helper/normalize.h"
#include "src/plugins/helper/queueing_hints.h"
#include "src/plugins/names.h"

namespace gpusched::plugins::node_affinity {
namespace {

bool EmptyTerm(const api::NodeSelectorTerm& t) {
  return t.match_expressions.empty() && t.match_fields_names_in.empty() &&
         t.match_fields_names_not_in.empty();
}

// v1 NodeSelector semantics: terms are ORed; an empty term matches nothing.
bool SelectorMatches(const api::NodeSelector& sel, const api::Labels& labels,
                     std::string_view node_name) {
  for (const api::NodeSelectorTerm& t : sel.terms) {
    if (!EmptyTerm(t) && t.Matches(labels, node_name)) return true;
  }
  return false;
}

bool SelectorMatches(const api::NodeSelector& sel, const framework::NodeInfo& node) {
  return SelectorMatches(sel, node.node->meta.labels, node.name());
}

bool NodeSelectorMatches(const api::Labels& selector, const api::Labels& labels) {
  for (const auto& [key, want] : selector.items()) {
    common::Atom got;
    if (!labels.Get(key, &got) || got != want) return false;
  }
  return true;
}

int64_t PreferredScore(std::span<const api::PreferredSchedulingTerm> terms,
                       const framework::NodeInfo& node) {
  int64_t sum = 0;
  for (const api::PreferredSchedulingTerm& t : terms) {
    if (t.weight == 0 || EmptyTerm(t.preference)) continue;
    if (t.preference.Matches(node.node->meta.labels, node.name())) sum += t.weight;
  }
  return sum;
}

}  // namespace

common::StatusOr<Args> ParseArgs(const boost::json::value& raw) {
  Args out;
  GPUSCHED_RETURN_IF_ERROR(helper::ReadArgs(raw, [&](api::ObjectFields& f) {
    if (f.Object("addedAffinity") != nullptr) {
      // The Pod decoder's node affinity, its errors under addedAffinity.
      common::StatusOr<api::NodeAffinity> added =
          api::DecodeNodeAffinity(*f.Value("addedAffinity"), "addedAffinity");
      if (added.ok()) {
        out.added_affinity = *std::move(added);
      } else {
        f.reader().errors().Add(std::string(added.status().message()));
      }
    }
  }));
  return out;
}

common::StatusOr<framework::PluginPtr> NodeAffinity::Create(const boost::json::value& args,
                                                            framework::Handle& /*handle*/) {
  GPUSCHED_ASSIGN_OR_RETURN(Args parsed, ParseArgs(args));
  return framework::PluginPtr(std::make_unique<NodeAffinity>(std::move(parsed)));
}

NodeAffinity::NodeAffinity(Args args) : added_(std::move(args.added_affinity)) {}

std::string_view NodeAffinity::Name() const { return names::kNodeAffinity; }

namespace {

// The node names the pod's required terms allow, as upstream's PreFilterResult: when every term
// names nodes (metadata.name In), the union over terms of each term's named node (its In
// requirements are ANDed; the API allows one value each); nullopt when some term names none.
std::optional<std::vector<std::string>> NamedNodes(const api::NodeSelector& required) {
  std::vector<std::string> names;
  for (const api::NodeSelectorTerm& t : required.terms) {
    if (t.match_fields_names_in.empty()) return std::nullopt;
    const std::string& first = t.match_fields_names_in.front();
    const bool one_name =
        std::all_of(t.match_fields_names_in.begin(), t.match_fields_names_in.end(),
                    [&first](const std::string& n) { return n == first; });
    if (one_name) names.push_back(first);
  }
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

// Whether `t` reads the node's identity: the hostname label or a field (metadata.name).
bool TermNamesNode(const api::NodeSelectorTerm& t) {
  if (!t.match_fields_names_in.empty() || !t.match_fields_names_not_in.empty()) return true;
  return std::any_of(t.match_expressions.begin(), t.match_expressions.end(),
                     [](const api::Requirement& r) { return r.key == api::Names().hostname; });
}

bool AffinityNamesNode(const api::NodeAffinity& a) {
  if (a.required && std::any_of(a.required->terms.begin(), a.required->terms.end(), TermNamesNode))
    return true;
  return std::any_of(a.preferred.begin(), a.preferred.end(),
                     [](const auto& p) { return TermNamesNode(p.preference); });
}

}  // namespace

bool NodeAffinity::SameForTwinNodes(const framework::CycleState& /*state*/,
                                    const api::Pod& pod) const {
  return !pod.node_selector.Has(api::Names().hostname) &&
         !AffinityNamesNode(pod.affinity.node_affinity) && !AffinityNamesNode(added_);
}

framework::Status NodeAffinity::PreFilter(framework::CycleState& state, const api::Pod& pod,
                                          const framework::Snapshot& /*snapshot*/) {
  if (!added_.required && pod.node_selector.empty() && !pod.affinity.node_affinity.required) {
    return framework::Status::Skip();
  }
  const std::optional<api::NodeSelector>& required = pod.affinity.node_affinity.required;
  if (!required || required->terms.empty()) return framework::Status::Success();
  std::optional<std::vector<std::string>> names = NamedNodes(*required);
  if (!names) return framework::Status::Success();
  if (names->empty()) return framework::Status::Unresolvable(kReasonTermsConflict);
  auto nodes = std::make_unique<framework::PreFilterNodes>();
  nodes->names = std::move(*names);
  nodes->plugin = names::kNodeAffinity;
  nodes->reason = kReasonNotNamed;
  state.Write(framework::kPreFilterNodesKey, std::move(nodes));
  return framework::Status::Success();
}

framework::Status NodeAffinity::Filter(const framework::CycleState& /*state*/, const api::Pod& pod,
                                       const framework::NodeInfo& node) const {
  if (added_.required && !SelectorMatches(*added_.required, node)) {
    return framework::Status::Unresolvable(kReasonEnforced);
  }
  if (!NodeSelectorMatches(pod.node_selector, node.node->meta.labels)) {
    return framework::Status::Unresolvable(kReasonPod);
  }
  if (pod.affinity.node_affinity.required &&
      !SelectorMatches(*pod.affinity.node_affinity.required, node)) {
    return framework::Status::Unresolvable(kReasonPod);
  }
  return framework::Status::Success();
}

framework::Status NodeAffinity::PreScore(framework::CycleState& /*state*/, const api::Pod& pod,
                                         const framework::Snapshot& /*snapshot*/,
                                         std::span<const framework::NodeIndex> /*feasible*/) {
  if (pod.affinity.node_affinity.preferred.empty() && added_.preferred.empty()) {
    return framework::Status::Skip();
  }
  return framework::Status::Success();
}

int64_t NodeAffinity::ScoreOne(const api::Pod& pod, const framework::NodeInfo& node) const {
  return PreferredScore(added_.preferred, node) +
         PreferredScore(pod.affinity.node_affinity.preferred, node);
}

void NodeAffinity::ScoreNodes(const framework::CycleState& /*state*/, const api::Pod& pod,
                              const framework::Snapshot& snapshot,
                              std::span<const framework::NodeIndex> nodes,
                              std::span<int64_t> out) const {
  framework::ScoreEach(snapshot, nodes, out, [this, &pod](const framework::NodeInfo& node) {
    return ScoreOne(pod, node);
  });
}

framework::Status NodeAffinity::NormalizeScore(const framework::CycleState& /*state*/,
                                               const api::Pod& /*pod*/,
                                               std::span<int64_t> scores) const {
  helper::DefaultNormalizeScore(framework::kMaxNodeScore, /*reverse=*/false, scores);
  return framework::Status::Success();
}

using framework::ClusterEvent;
using framework::ClusterEventWithHint;
using framework::EventObjects;
using framework::EventResource;
using framework::QueueingHint;

bool NodeAffinity::RequiredMatch(const api::Pod& pod, const api::Node& node) const {
  const api::Labels& labels = node.meta.labels;
  if (added_.required && !SelectorMatches(*added_.required, labels, node.meta.name)) return false;
  if (!NodeSelectorMatches(pod.node_selector, labels)) return false;
  return !pod.affinity.node_affinity.required ||
         SelectorMatches(*pod.affinity.node_affinity.required, labels, node.meta.name);
}

std::vector<ClusterEventWithHint> NodeAffinity::EventsToRegister() const {
  // A node that matches now and did not before (or is new).
  auto after_node_change = [this](const api::Pod& pod, const ClusterEvent& /*event*/,
                                  const EventObjects& o) {
    if (o.new_node == nullptr) return QueueingHint::kQueue;
    if (!RequiredMatch(pod, *o.new_node)) return QueueingHint::kSkip;
    if (o.old_node == nullptr || !RequiredMatch(pod, *o.old_node)) return QueueingHint::kQueue;
    return QueueingHint::kSkip;
  };
  return {{ClusterEvent{EventResource::kNode, framework::kAdd | framework::kUpdateNodeLabel},
           after_node_change}};
}

std::string NodeAffinity::ExplainScore(const framework::CycleState& /*state*/,
                                       const api::Pod& /*pod*/, const framework::NodeInfo& /*node*/,
                                       int64_t raw) const {
  return "the preferred terms that match weigh " + std::to_string(raw);
}

}  // namespace gpusched::plugins::node_affinity
