// SPDX-License-Identifier: Apache-2.0
// InterPodAffinity: kube-scheduler's interpodaffinity plugin (pod.spec.affinity.podAffinity and
// podAntiAffinity).
//
//   PreFilter  counts, per topology domain (the value of a term's topologyKey on a node):
//              - the existing pods matching all of the pod's required affinity terms;
//              - the existing pods matching each of the pod's required anti-affinity terms;
//              - the existing pods whose required anti-affinity terms match the pod (the
//                symmetric check).
//              kSkip when the pod has no required terms and no existing pod has required
//              anti-affinity.
//   Filter     - required affinity: the node must carry every term's topologyKey, and each term's
//                domain must hold a matching pod, unless no pod anywhere matches and the pod
//                matches its own terms (the first pod of a group): else
//                UnschedulableAndUnresolvable "node(s) didn't match pod affinity rules";
//              - required anti-affinity: no matching pod in the node's domain of any term, else
//                Unschedulable "node(s) didn't match pod anti-affinity rules";
//              - existing pods' anti-affinity: no existing pod whose term matches this pod in the
//                node's domain, else Unschedulable "node(s) didn't satisfy existing pods
//                anti-affinity rules".
//   PreScore   sums, per topology domain: + weight of each of the pod's preferred affinity terms
//              and - weight of each preferred anti-affinity term per matching existing pod;
//              + hardPodAffinityWeight per existing pod whose required affinity term matches the
//              pod; +/- weight of existing pods' preferred (anti-)affinity terms that match the pod
//              (unless ignorePreferredTermsOfExistingPods). kSkip when the pod has no preferred
//              terms and either existing pods' terms are ignored or no existing pod has any.
//   Score      the sum of the node's domains; NormalizeScore maps min..max to 0..100.
//
// Namespaces of a term: `namespaces`, plus every namespace when namespaceSelector is {} (empty);
// the pod's own namespace when both are unset. Limitation: a non-empty namespaceSelector cannot be
// evaluated (the scheduler has no Namespace informer), so it selects no namespace beyond the
// `namespaces` list. matchLabelKeys/mismatchLabelKeys are merged into the selector on decode.
//
// Args (InterPodAffinityArgs): hardPodAffinityWeight 0..100 (default 1),
// ignorePreferredTermsOfExistingPods (default false).
//
// Data layout: a node's domain for a topology key is a dense index, memoised per key until the
// snapshot's node set changes (helper::TopologyDomains); counts are flat arrays per key indexed
// by domain. The skip check for a pod without terms is O(1): the cache keeps the snapshot's
// counts of pods with (anti-)affinity. When there is work, which nodes hold such pods is memoised
// per node slot and refreshed by NodeInfo::generation, so only those nodes' pods are scanned for
// existing pods' terms. Filter and Score are O(terms), const and allocation-free.
// PreFilter/PreScore run on the owning framework's scheduling thread.
#pragma once

#include <boost/json/fwd.hpp>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "src/api/types.h"
#include "src/common/status.h"
#include "src/framework/handle.h"
#include "src/framework/plugin.h"
#include "src/framework/registry.h"
#include "src/plugins/helper/topology_domains.h"

namespace gpusched::plugins::inter_pod_affinity {

inline constexpr std::string_view kReasonAffinityRulesNotMatch =
    "node(s) didn't match pod affinity rules";
inline constexpr std::string_view kReasonAntiAffinityRulesNotMatch =
    "node(s) didn't match pod anti-affinity rules";
inline constexpr std::string_view kReasonExistingAntiAffinityRulesNotMatch =
    "node(s) didn't satisfy existing pods anti-affinity rules";

// Decoded, defaulted and validated InterPodAffinityArgs.
struct Args {
  int32_t hard_pod_affinity_weight = 1;  // 0..100
  bool ignore_preferred_terms_of_existing_pods = false;
};

// Parses and validates the args object (null or {} = defaults); errors name the field.
common::StatusOr<Args> ParseArgs(const boost::json::value& args);

class InterPodAffinity final : public framework::PreFilterPlugin,
                               public framework::FilterPlugin,
                               public framework::PreScorePlugin,
                               public framework::ScorePlugin,
                               public framework::EnqueueExtensions {
 public:
  explicit InterPodAffinity(Args args) : args_(args) {}
  static common::StatusOr<framework::PluginPtr> Create(const boost::json::value& args,
                                                       framework::Handle& handle);

  std::string_view Name() const override;
  // The cluster events that can make a pod this plugin rejected schedulable, with their hints
  // (upstream's EventsToRegister and isSchedulableAfter* functions).
  std::vector<framework::ClusterEventWithHint> EventsToRegister() const override;
  framework::Status PreFilter(framework::CycleState& state, const api::Pod& pod,
                              const framework::Snapshot& snapshot) override;
  framework::Status Filter(const framework::CycleState& state, const api::Pod& pod,
                           const framework::NodeInfo& node) const override;
  framework::Status PreScore(framework::CycleState& state, const api::Pod& pod,
                             const framework::Snapshot& snapshot,
                             std::span<const framework::NodeIndex> feasible) override;
  void ScoreNodes(const framework::CycleState& state, const api::Pod& pod,
                  const framework::Snapshot& snapshot, std::span<const framework::NodeIndex> nodes,
                  std::span<int64_t> out) const override;
  bool HasNormalizeScore() const override { return true; }
  // preferred affinity minus anti-affinity ...
  std::string ExplainScore(const framework::CycleState& state, const api::Pod& pod,
                           const framework::NodeInfo& node, int64_t raw) const override;
  framework::Status NormalizeScore(const framework::CycleState& state, const api::Pod& pod,
                                   std::span<int64_t> scores) const override;

  // Per node slot: how many of its pods have required anti-affinity / any pod (anti-)affinity.
  struct SlotMemo {
    const api::Node* node = nullptr;
    uint64_t generation = 0;
    int32_t required_anti = 0;
    int32_t with_affinity = 0;
  };

 private:
  // CycleState written by PreFilter points into the memo: it is valid for this pod's Filter calls
  // (a snapshot without a version rebuilds the memo at PreScore, after Filter is done).
  // Brings the domain and slot memos up to date with `snapshot` (PreFilter/PreScore only).
  void Refresh(const framework::Snapshot& snapshot);

  Args args_;
  helper::TopologyDomains domains_;  // dense domain index per topology key
  std::vector<SlotMemo> slots_;
  int64_t total_required_anti_ = 0;
  int64_t total_with_affinity_ = 0;
};

}  // namespace gpusched::plugins::inter_pod_affinity
