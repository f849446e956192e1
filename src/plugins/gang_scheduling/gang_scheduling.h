// SPDX-License-Identifier: Apache-2.0
// GangScheduling: all-or-nothing placement of a gang's members (api/gang.h), the plugin half.
// The scheduler places a gang in one gang cycle (src/scheduler/gang_cycle.cc: every waiting
// member, one after another, in a topology domain it chooses); this plugin gives that cycle its
// kube-scheduler shape, as upstream's GangScheduling and scheduler-plugins' Coscheduling do:
//
//   PreFilter  a member whose gang's policy object is unknown is UnschedulableAndUnresolvable
//              ("waiting for pod group ... to be created"); a member the gang cycle restricts to
//              a domain gets that domain; every other pod: Skip.
//   Filter     nodes outside the domain: UnschedulableAndUnresolvable
//              ("node(s) outside the gang's topology domain").
//   Reserve    counts the member as reserved (Gangs::Reserve); Unreserve takes it back.
//   Permit     a member waits (kWait, the gang's schedule timeout) until minMember members are
//              reserved or bound; the member that completes the quorum allows every waiting one.
//
// Pods in no gang, members of a gang without gang policy (a Workload's basic pod group) and every
// pod where the Handle offers no Gangs (the extender) pass through untouched. No args.
//
// Threading: the scheduling thread (Gangs is thread-safe for the rollbacks on binding threads).
#pragma once

#include <boost/json/fwd.hpp>
#include <string_view>
#include <vector>

#include "src/api/types.h"
#include "src/common/status.h"
#include "src/framework/gangs.h"
#include "src/framework/handle.h"
#include "src/framework/plugin.h"
#include "src/framework/registry.h"

namespace gpusched::plugins::gang_scheduling {

// Reasons.
inline constexpr std::string_view kReasonOutsideDomain =
    "node(s) outside the gang's topology domain";

class GangScheduling final : public framework::PreFilterPlugin,
                             public framework::FilterPlugin,
                             public framework::ReservePlugin,
                             public framework::PermitPlugin,
                             public framework::EnqueueExtensions {
 public:
  static common::StatusOr<framework::PluginPtr> Create(const boost::json::value& args,
                                                       framework::Handle& handle);
  explicit GangScheduling(framework::Handle& handle) : handle_(handle) {}

  std::string_view Name() const override;
  // The cluster events that can make a pod this plugin rejected schedulable, with their hints
  // (upstream's EventsToRegister and isSchedulableAfter* functions).
  std::vector<framework::ClusterEventWithHint> EventsToRegister() const override;
  // The verdict depends on the pod (its gang, in the equivalence key through its labels,
  // annotations and workloadRef), the node's labels and the trial domains (StateVersion).
  bool NodeLocal() const override { return true; }
  // Unless the gang's trial domain is a hostname (the node's name may stand for its label).
  bool SameForTwinNodes(const framework::CycleState& state, const api::Pod& pod) const override;
  uint64_t StateVersion() const override;

  framework::Status PreFilter(framework::CycleState& state, const api::Pod& pod,
                              const framework::Snapshot& snapshot) override;
  framework::Status Filter(const framework::CycleState& state, const api::Pod& pod,
                           const framework::NodeInfo& node) const override;
  framework::Status Reserve(framework::CycleState& state, const api::Pod& pod,
                            const framework::NodeInfo& node) override;
  void Unreserve(framework::CycleState& state, const api::Pod& pod, std::string_view node) override;
  framework::Status Permit(framework::CycleState& state, const api::Pod& pod, std::string_view node,
                           common::Duration* wait_timeout) override;

 private:
  // The gang policy of `pod` when it is a gang member the scheduler tracks; else nullptr.
  api::PodGroupPtr GangPolicy(const api::Pod& pod) const;

  framework::Handle& handle_;
};

}  // namespace gpusched::plugins::gang_scheduling
