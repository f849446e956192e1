// SPDX-License-Identifier: Apache-2.0
#include "src/plugins/gang_scheduling/gang_scheduling.h"

#include <memory>
#include <string>

#include "src/common/interner.h"
#include "src/plugins/helper/args.h"
#include "src/plugins/helper/queueing_hints.h"
#include "src/plugins/names.h"

namespace gpusched::plugins::gang_scheduling {
namespace {

const framework::StateKey kDomainKey = {"GangScheduling/domain"};

struct DomainState final : public framework::StateData {
  framework::Gangs::Domain domain;
};

}  // namespace

common::StatusOr<framework::PluginPtr> GangScheduling::Create(const boost::json::value& args,
                                                              framework::Handle& handle) {
  GPUSCHED_RETURN_IF_ERROR(helper::ReadNoArgs(args));
  return framework::PluginPtr(std::make_unique<GangScheduling>(handle));
}

std::string_view GangScheduling::Name() const { return names::kGangScheduling; }

uint64_t GangScheduling::StateVersion() const {
  const framework::Gangs* gangs = handle_.gangs();
  return gangs == nullptr ? 0 : gangs->TrialVersion();
}

api::PodGroupPtr GangScheduling::GangPolicy(const api::Pod& pod) const {
  if (pod.gang.empty()) return nullptr;
  const framework::Gangs* gangs = handle_.gangs();
  if (gangs == nullptr) return nullptr;
  api::PodGroupPtr policy = gangs->PolicyOf(pod);
  return policy != nullptr && policy->gang ? policy : nullptr;
}

framework::Status GangScheduling::PreFilter(framework::CycleState& state, const api::Pod& pod,
                                            const framework::Snapshot& /*snapshot*/) {
  const framework::Gangs* gangs = handle_.gangs();
  if (pod.gang.empty() || gangs == nullptr) return framework::Status::Skip();
  if (gangs->PolicyOf(pod) == nullptr) {
    return framework::Status::WithMessage(
        framework::Code::kUnschedulableAndUnresolvable,
        "waiting for pod group " + api::PolicyKey(pod) + " to be created");
  }
  std::optional<framework::Gangs::Domain> domain = gangs->TrialDomain(api::GangKey(pod));
  if (!domain) return framework::Status::Skip();
  auto s = std::make_unique<DomainState>();
  s->domain = *domain;
  state.Write(kDomainKey, std::move(s));
  return framework::Status::Success();
}

bool GangScheduling::SameForTwinNodes(const framework::CycleState& state,
                                      const api::Pod& /*pod*/) const {
  const DomainState* s = state.Get<DomainState>(kDomainKey);
  return s == nullptr || s->domain.key != api::Names().hostname;
}

framework::Status GangScheduling::Filter(const framework::CycleState& state,
                                         const api::Pod& /*pod*/,
                                         const framework::NodeInfo& node) const {
  const DomainState* s = state.Get<DomainState>(kDomainKey);
  if (s == nullptr) return framework::Status::Success();
  if (framework::InGangDomain(*node.node, s->domain)) return framework::Status::Success();
  return framework::Status::Unresolvable(kReasonOutsideDomain);
}

framework::Status GangScheduling::Reserve(framework::CycleState& /*state*/, const api::Pod& pod,
                                          const framework::NodeInfo& /*node*/) {
  if (GangPolicy(pod) != nullptr) handle_.gangs()->Reserve(pod);
  return framework::Status::Success();
}

void GangScheduling::Unreserve(framework::CycleState& /*state*/, const api::Pod& pod,
                               std::string_view /*node*/) {
  if (GangPolicy(pod) != nullptr) handle_.gangs()->Unreserve(pod);
}

framework::Status GangScheduling::Permit(framework::CycleState& /*state*/, const api::Pod& pod,
                                         std::string_view /*node*/,
                                         common::Duration* wait_timeout) {
  api::PodGroupPtr policy = GangPolicy(pod);
  if (policy == nullptr) return framework::Status::Success();
  const std::vector<std::string> reserved = handle_.gangs()->ReservedMembers(api::GangKey(pod));
  if (static_cast<int64_t>(reserved.size()) < policy->min_member) {
    *wait_timeout = framework::ScheduleTimeoutOf(*policy);
    return framework::Status::Wait();
  }
  // The quorum: release every member held at Permit (those bound already are not waiting).
  for (const std::string& uid : reserved) {
    if (uid != pod.meta.uid) handle_.waiting_pods().Allow(uid, Name());
  }
  return framework::Status::Success();
}

using framework::ClusterEvent;
using framework::ClusterEventWithHint;
using framework::EventObjects;
using framework::EventResource;
using framework::QueueingHint;

std::vector<ClusterEventWithHint> GangScheduling::EventsToRegister() const {
  // The gang's policy object appeared or changed; and, since a gang that could not be placed
  // together is reported as rejected by this plugin whatever stopped it (the scheduler's
  // FailGang), the events that free or add room. Member arrivals move the gang directly
  // (SchedulingQueue::ActivateGang).
  return {
      {ClusterEvent{EventResource::kPodGroup, framework::kAdd | framework::kUpdate}, nullptr},
      {ClusterEvent{EventResource::kAssignedPod,
                    framework::kDelete | framework::kUpdatePodScaleDown},
       nullptr},
      {ClusterEvent{EventResource::kNode, framework::kAdd | framework::kUpdateNodeAllocatable |
                                              framework::kUpdateNodeLabel |
                                              framework::kUpdateNodeTaint},
       nullptr},
  };
}

}  // namespace gpusched::plugins::gang_scheduling
