// SPDX-License-Identifier: Apache-2.0
#include "src/plugins/dynamic_resources/dynamic_resources.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "src/api/dra.h"
#include "src/framework/dra_view.h"
#include "src/plugins/dynamic_resources/lookahead.h"
#include "src/plugins/dynamic_resources/node_devices.h"
#include "src/plugins/helper/args.h"
#include "src/plugins/names.h"

namespace gpusched::plugins::dynamic_resources {
namespace {

// The most pods one claim can be reserved for (resource.k8s.io/v1 ResourceClaimReservedForMaxSize).
constexpr size_t kReservedForMaxSize = 256;

struct ClaimInfo {
  api::ResourceClaimPtr claim;
  bool allocated = false;
  bool reserved_for_pod = false;
};

struct State final : framework::StateData {
  const framework::Snapshot* snapshot = nullptr;
  std::shared_ptr<const framework::DeviceIndex> index;
  std::shared_ptr<const framework::DeviceUsage> usage;
  std::vector<ClaimInfo> claims;
  std::vector<ClaimPlan> plans;     // the claims to allocate
  std::vector<std::string> hidden;  // the snapshot's hidden pods (their devices count as free)
  NodeDevicesCache* node_devices = nullptr;  // the plugin's (plain gathers)
  // PreScore: the lookahead's count per node index (lookahead.h; -1: not a candidate) and its
  // best; empty when there was no lookahead or it found every candidate equal.
  std::vector<int32_t> lookahead;
  int32_t lookahead_best = 0;
  // PreScore, without lookahead: the pressure of the claims waiting for devices (pressure.h), by
  // device number; empty when none is on a device this pod could take.
  std::vector<float> pressure;
  // Reserve's choice: the claims as assumed, and per claim whether it was allocated before (only
  // the pod is added to its reservedFor: a claim shared with other pods).
  std::vector<api::ResourceClaimPtr> assumed;
  std::vector<uint8_t> reserve_only;
};

const framework::StateKey kStateKey = {"DynamicResources"};

framework::Status Unresolvable(std::string message) {
  return framework::Status::WithMessage(framework::Code::kUnschedulableAndUnresolvable,
                                        std::move(message));
}

bool ReservedFor(const api::ResourceClaim& claim, const api::Pod& pod) {
  return std::any_of(claim.reserved_for.begin(), claim.reserved_for.end(),
                     [&](const api::ClaimConsumer& c) { return c.uid == pod.meta.uid; });
}

bool OwnedBy(const api::ResourceClaim& claim, const api::Pod& pod) {
  for (const api::OwnerReference& ref : claim.meta.owner_references) {
    if (ref.controller) return ref.uid == pod.meta.uid;
  }
  return false;
}

// The snapshot's node when `node` is a copy of it (a preemption dry run's, or one with nominated
// pods added), whose missing pods free the devices only they hold (FreedByRemoval); else null.
const framework::NodeInfo* OriginalNode(const State& s, const framework::NodeInfo& node) {
  if (s.snapshot == nullptr || node.index < 0 ||
      static_cast<size_t>(node.index) >= s.snapshot->nodes().size()) {
    return nullptr;
  }
  const framework::NodeInfo& o = s.snapshot->at(node.index);
  return &o != &node ? &o : nullptr;
}

void GatherNodeDevices(const State& s, const framework::NodeInfo& node, NodeDevices& out) {
  dynamic_resources::GatherNodeDevices(*s.index, *s.usage, node, OriginalNode(s, node), {}, out,
                                       s.hidden);
}

// `node`'s devices for `s`: the plugin's cached ones for a plain node (no dry run's copy, nothing
// hidden), kept alive by `hold`; else gathered into `scratch`.
const NodeDevices& DevicesOf(const State& s, const framework::NodeInfo& node, NodeDevices& scratch,
                             std::shared_ptr<const NodeDevices>& hold) {
  if (s.node_devices != nullptr && s.hidden.empty() && OriginalNode(s, node) == nullptr) {
    hold = s.node_devices->Get(*s.index, *s.usage, node);
    return *hold;
  }
  GatherNodeDevices(s, node, scratch);
  return scratch;
}

// Whether any request of the pod's plans could take device `d` (its first alternative).
bool PodCouldUse(const State& s, uint32_t d) {
  for (const ClaimPlan& p : s.plans) {
    for (const RequestPlan& r : p.requests) {
      if (!r.alternatives.empty() && r.alternatives.front().matches->match[d] != 0) return true;
    }
  }
  return false;
}

// The allocation's node selector: the node itself when a device is local to it, else the first
// device's selector (none for allNodes devices).
std::optional<api::NodeSelector> AllocationNodeSelector(
    const framework::DeviceIndex& index, const std::vector<api::DeviceResult>& results,
    std::string_view node) {
  const framework::DeviceEntry* first = nullptr;
  for (const api::DeviceResult& r : results) {
    auto it = index.by_key.find(r.driver + "/" + r.pool + "/" + r.device);
    if (it == index.by_key.end()) continue;
    const framework::DeviceEntry& e = index.devices[it->second];
    if (e.node_selector == nullptr && !e.all_nodes) {
      api::NodeSelector sel;
      api::NodeSelectorTerm term;
      term.match_fields_names_in.emplace_back(node);
      sel.terms.push_back(std::move(term));
      return sel;
    }
    if (first == nullptr) first = &e;
  }
  if (first != nullptr && first->node_selector != nullptr) return *first->node_selector;
  return std::nullopt;
}

api::ClaimConsumer ConsumerOf(const api::Pod& pod) {
  return api::ClaimConsumer{"pods", pod.meta.name, pod.meta.uid};
}

// Fills s.lookahead (lookahead.h) for the feasible nodes; false when the budget allows none.
// `own`: the pod's claims.
bool RunLookahead(SelectorCache& selectors, const framework::DraView& view, State& s,
                  std::span<const api::ResourceClaimPtr> own, const framework::Snapshot& snapshot,
                  std::span<const framework::NodeIndex> feasible) {
  const std::optional<LookaheadResult> r =
      LookAheadForPod(selectors, view, *s.index, *s.usage, s.plans, own, snapshot, feasible);
  if (!r) return false;
  const auto [lo, hi] = std::minmax_element(r->counts.begin(), r->counts.end());
  if (*lo == *hi) return true;  // no candidate is better: packing decides
  s.lookahead.assign(snapshot.nodes().size(), -1);
  for (size_t j = 0; j < feasible.size(); ++j) {
    s.lookahead[static_cast<size_t>(feasible[j])] = r->counts[j];
  }
  s.lookahead_best = *hi;
  return true;
}

}  // namespace

common::StatusOr<framework::PluginPtr> DynamicResources::Create(const boost::json::value& args,
                                                                framework::Handle& handle) {
  helper::ArgErrors errors;
  if (const boost::json::object* obj = helper::ArgsObject(args, errors)) {
    helper::CheckKnownFields(*obj, "", {}, errors, /*allow_type_meta=*/true);
  }
  GPUSCHED_RETURN_IF_ERROR(errors.ToStatus());
  return framework::PluginPtr(std::make_unique<DynamicResources>(handle.dra()));
}

std::string_view DynamicResources::Name() const { return names::kDynamicResources; }

framework::Status DynamicResources::PreFilter(framework::CycleState& state, const api::Pod& pod,
                                              const framework::Snapshot& snapshot) {
  if (pod.resource_claims == nullptr) return framework::Status::Skip();
  if (dra_ == nullptr) {
    return framework::Status::Unresolvable(
        "no DRA data source: resource claims cannot be allocated");
  }
  auto s = std::make_unique<State>();
  s->node_devices = node_devices_.get();
  s->snapshot = &snapshot;
  const std::span<const std::string> hidden = snapshot.hidden_pods();
  s->hidden.assign(hidden.begin(), hidden.end());
  s->index = dra_->devices();
  s->usage = dra_->usage();
  const api::PodResourceClaims& pc = *pod.resource_claims;
  for (size_t i = 0; i < pc.claims.size(); ++i) {
    const std::optional<std::string> name = pc.ClaimName(i);
    if (!name) {
      return Unresolvable("pod \"" + pod.meta.namespace_ + "/" + pod.meta.name +
                          "\": ResourceClaim not created yet");
    }
    if (name->empty()) continue;  // the controller decided no claim is needed
    api::ResourceClaimPtr claim = dra_->GetClaim(pod.meta.namespace_, *name);
    if (claim == nullptr) {
      return Unresolvable("resourceclaim.resource.k8s.io \"" + *name + "\" not found");
    }
    if (claim->meta.deletion_timestamp) {
      return Unresolvable("resourceclaim \"" + *name + "\" is being deleted");
    }
    if (!pc.claims[i].template_name.empty() && !OwnedBy(*claim, pod)) {
      return Unresolvable("ResourceClaim " + claim->meta.namespace_ + "/" + claim->meta.name +
                          " was not created for pod " + pod.meta.namespace_ + "/" + pod.meta.name +
                          " (pod is not owner)");
    }
    ClaimInfo info{claim, claim->allocation.has_value(), ReservedFor(*claim, pod)};
    if (info.allocated && !info.reserved_for_pod &&
        claim->reserved_for.size() >= kReservedForMaxSize) {
      return framework::Status::Unresolvable(kReasonInUse);
    }
    if (!info.allocated) {
      common::StatusOr<ClaimPlan> plan = PlanClaim(selectors_, *dra_, *s->index, claim);
      if (!plan.ok()) return Unresolvable(std::string(plan.status().message()));
      s->plans.push_back(*std::move(plan));
    }
    s->claims.push_back(std::move(info));
  }
  if (s->claims.empty()) return framework::Status::Skip();
  state.Write(kStateKey, std::move(s));
  return framework::Status::Success();
}

framework::Status DynamicResources::Filter(const framework::CycleState& state,
                                           const api::Pod& /*pod*/,
                                           const framework::NodeInfo& node) const {
  const State* s = state.Get<State>(kStateKey);
  if (s == nullptr) return framework::Status::Success();
  for (const ClaimInfo& c : s->claims) {
    if (c.allocated && c.claim->allocation->node_selector &&
        !c.claim->allocation->node_selector->Matches(node.node->meta.labels, node.name())) {
      return framework::Status::Unresolvable(kReasonNotAvailable);
    }
  }
  if (s->plans.empty()) return framework::Status::Success();
  thread_local NodeDevices scratch;
  std::shared_ptr<const NodeDevices> hold;
  const NodeDevices& devices = DevicesOf(*s, node, scratch, hold);
  if (const framework::NodeInfo* original = OriginalNode(*s, node)) {
    TakeForNominatedPods(node, *original, *s->index, scratch);  // DevicesOf filled scratch
  }
  if (!Allocate(s->plans, *s->index, devices, nullptr)) {
    return framework::Status::Unschedulable(kReasonCannotAllocate);
  }
  return framework::Status::Success();
}

void DynamicResources::TakeForNominatedPods(const framework::NodeInfo& node,
                                            const framework::NodeInfo& original,
                                            const framework::DeviceIndex& index,
                                            NodeDevices& devices) const {
  for (const api::PodPtr& p : node.pods) {
    if (p->resource_claims == nullptr ||
        std::any_of(original.pods.begin(), original.pods.end(),
                    [&](const api::PodPtr& o) { return o->meta.uid == p->meta.uid; })) {
      continue;  // no claims, or not added to this copy
    }
    std::vector<ClaimPlan> plans;
    for (size_t i = 0; i < p->resource_claims->claims.size(); ++i) {
      const std::optional<std::string> name = p->resource_claims->ClaimName(i);
      if (!name) continue;
      api::ResourceClaimPtr claim = dra_->GetClaim(p->meta.namespace_, *name);
      if (claim == nullptr || claim->allocation) continue;  // allocated: held in the usage
      common::StatusOr<ClaimPlan> plan = PlanClaim(selectors_, *dra_, index, claim);
      if (plan.ok()) plans.push_back(*std::move(plan));
    }
    std::vector<uint32_t> held;
    if (plans.empty() || !Allocate(plans, index, devices, nullptr, &held)) continue;
    devices.Take(index, held);
  }
}

framework::Status DynamicResources::PreScore(framework::CycleState& state, const api::Pod& /*pod*/,
                                             const framework::Snapshot& snapshot,
                                             std::span<const framework::NodeIndex> feasible) {
  State* s = state.Get<State>(kStateKey);
  if (s == nullptr || s->plans.empty()) return framework::Status::Skip();
  s->pressure.clear();
  s->lookahead.clear();
  if (feasible.size() < 2) return framework::Status::Success();
  std::vector<api::ResourceClaimPtr> own;
  for (const ClaimInfo& c : s->claims) own.push_back(c.claim);
  if (RunLookahead(selectors_, *dra_, *s, own, snapshot, feasible)) {
    return framework::Status::Success();
  }
  std::vector<float> pressure =
      pressure_.Compute(selectors_, *dra_, *s->index, *s->usage, dra_->PendingClaims(), own);
  for (uint32_t d = 0; d < pressure.size(); ++d) {
    if (pressure[d] > 0 && PodCouldUse(*s, d)) {
      s->pressure = std::move(pressure);
      break;
    }
  }
  return framework::Status::Success();
}

int64_t DynamicResources::Score(const framework::CycleState& state, const api::Pod& /*pod*/,
                                const framework::NodeInfo& node) const {
  const State* s = state.Get<State>(kStateKey);
  if (s == nullptr || s->plans.empty()) return 0;
  thread_local NodeDevices scratch;
  std::shared_ptr<const NodeDevices> hold;
  const NodeDevices& devices = DevicesOf(*s, node, scratch, hold);
  if (devices.devices.empty()) return 0;
  int64_t busy = 0;
  for (const NodeDevice& d : devices.devices) busy += d.busy ? 1 : 0;
  int64_t wanted = 0;
  for (const ClaimPlan& p : s->plans) {
    for (const RequestPlan& r : p.requests) {
      if (!r.alternatives.empty()) wanted += r.alternatives.front().choice->count;
    }
  }
  const auto total = static_cast<int64_t>(devices.devices.size());
  const int64_t packing = std::min<int64_t>(framework::kMaxNodeScore,
                                            (busy + wanted) * framework::kMaxNodeScore / total);
  if (!s->lookahead.empty() && node.index >= 0 &&
      static_cast<size_t>(node.index) < s->lookahead.size()) {
    // The nodes that leave room for the most waiting pods above all others, packing within.
    return s->lookahead[static_cast<size_t>(node.index)] == s->lookahead_best
               ? 51 + packing * 49 / framework::kMaxNodeScore
               : packing / 2;
  }
  if (s->pressure.empty()) return packing;
  // Half packing, half how little of the free devices the pod could take here waiting
  // restricted requests need (their mean pressure, 1 and more: all spoken for).
  double sum = 0;
  int64_t usable = 0;
  for (const NodeDevice& d : devices.devices) {
    if (d.busy || d.device >= s->pressure.size() || !PodCouldUse(*s, d.device)) continue;
    sum += std::min(1.0F, s->pressure[d.device]);
    ++usable;
  }
  const double mean = usable == 0 ? 1.0 : sum / static_cast<double>(usable);
  const auto unclaimed = static_cast<int64_t>((1.0 - mean) * framework::kMaxNodeScore + 0.5);
  return (packing + unclaimed) / 2;
}

framework::Status DynamicResources::Reserve(framework::CycleState& state, const api::Pod& pod,
                                            const framework::NodeInfo& node) {
  State* s = state.Get<State>(kStateKey);
  if (s == nullptr) return framework::Status::Success();
  s->assumed.clear();
  std::vector<std::vector<api::DeviceResult>> results;
  if (!s->plans.empty()) {
    NodeDevices devices;
    // The usage may have changed since PreFilter (another pod's Reserve): read it again.
    s->usage = dra_->usage();
    GatherNodeDevices(*s, node, devices);
    if (!Allocate(s->plans, *s->index, devices, &results)) {
      return framework::Status::Unschedulable(kReasonCannotAllocate);
    }
  }
  // Nothing reads the usage after Reserve: let go of it, so that assuming the claims below
  // updates the view's usage in place instead of copying it (DraView::MutableUsage).
  s->usage.reset();
  std::vector<api::ResourceClaimPtr> updated;
  std::vector<uint8_t> reserve_only;
  size_t plan = 0;
  for (const ClaimInfo& c : s->claims) {
    auto claim = std::make_shared<api::ResourceClaim>(*c.claim);
    if (!c.allocated) {
      api::AllocationResult alloc;
      alloc.devices = std::move(results[plan++]);
      alloc.node_selector = AllocationNodeSelector(*s->index, alloc.devices, node.name());
      claim->allocation = std::move(alloc);
    }
    if (!c.reserved_for_pod) claim->reserved_for.push_back(ConsumerOf(pod));
    if (!c.allocated || !c.reserved_for_pod) {
      updated.push_back(std::move(claim));
      reserve_only.push_back(c.allocated ? 1 : 0);
    }
  }
  s->reserve_only = std::move(reserve_only);
  for (api::ResourceClaimPtr& claim : updated) {
    if (common::Status st = dra_->AssumeClaim(claim); !st.ok()) {
      for (const api::ResourceClaimPtr& a : s->assumed) {
        dra_->RestoreClaim(a->meta.namespace_, a->meta.name);
      }
      s->assumed.clear();
      return framework::Status::Error(std::string(st.message()));
    }
    s->assumed.push_back(std::move(claim));
  }
  return framework::Status::Success();
}

void DynamicResources::Unreserve(framework::CycleState& state, const api::Pod& /*pod*/,
                                 std::string_view /*node*/) {
  State* s = state.Get<State>(kStateKey);
  if (s == nullptr || dra_ == nullptr) return;
  for (const api::ResourceClaimPtr& a : s->assumed) {
    dra_->RestoreClaim(a->meta.namespace_, a->meta.name);
  }
  s->assumed.clear();
}

namespace {

// A shared claim another pod's PreBind may have written since Reserve: the newest version with
// this pod added to reservedFor, when it is still allocated with the same devices; else `planned`.
api::ResourceClaimPtr WithPodReserved(const framework::DraView& view, const api::Pod& pod,
                                      const api::ResourceClaimPtr& planned) {
  api::ResourceClaimPtr latest = view.GetClaim(planned->meta.namespace_, planned->meta.name);
  if (latest == nullptr || !latest->allocation ||
      latest->allocation->devices != planned->allocation->devices) {
    return planned;
  }
  if (ReservedFor(*latest, pod)) return latest;
  auto out = std::make_shared<api::ResourceClaim>(*latest);
  out->reserved_for.push_back(ConsumerOf(pod));
  return out;
}

constexpr int kSharedClaimWriteAttempts = 5;

}  // namespace

framework::Status DynamicResources::PreBind(framework::CycleState& state, const api::Pod& pod,
                                            std::string_view /*node*/) {
  State* s = state.Get<State>(kStateKey);
  if (s == nullptr) return framework::Status::Success();
  for (size_t i = 0; i < s->assumed.size(); ++i) {
    api::ResourceClaimPtr& claim = s->assumed[i];
    const bool shared = i < s->reserve_only.size() && s->reserve_only[i] != 0;
    common::StatusOr<api::ResourceClaimPtr> stored = common::UnavailableError("not written");
    for (int attempt = 0; attempt < (shared ? kSharedClaimWriteAttempts : 1); ++attempt) {
      const uint64_t seen = dra_->generation();
      const api::ResourceClaimPtr to_write = shared ? WithPodReserved(*dra_, pod, claim) : claim;
      stored = dra_->UpdateClaimStatus(*to_write);
      if (stored.ok() || stored.status().code() != common::StatusCode::kAborted) break;
      // Another pod of the shared claim wrote it first: wait for the informer, then retry.
      dra_->WaitForChange(seen, std::chrono::milliseconds(500));
    }
    if (!stored.ok()) {
      return framework::Status::Error("resourceclaim " + claim->meta.namespace_ + "/" +
                                      claim->meta.name + ": " +
                                      std::string(stored.status().message()));
    }
    // Keep the stored version assumed until the informer delivers it.
    if (common::Status st = dra_->AssumeClaim(*stored); st.ok()) claim = *std::move(stored);
  }
  return framework::Status::Success();
}

std::vector<framework::ClusterEventWithHint> DynamicResources::EventsToRegister() const {
  using framework::ClusterEvent;
  using framework::EventObjects;
  using framework::EventResource;
  using framework::QueueingHint;
  std::vector<framework::ClusterEventWithHint> events;
  // A claim the pod waits for was created, or any claim's allocation was removed (devices freed).
  events.push_back({ClusterEvent{EventResource::kResourceClaim,
                                 framework::kAdd | framework::kUpdate | framework::kDelete},
                    [](const api::Pod& pod, const ClusterEvent&, const EventObjects& o) {
                      const auto* old_claim = static_cast<const api::ResourceClaim*>(o.old_obj);
                      const auto* new_claim = static_cast<const api::ResourceClaim*>(o.new_obj);
                      if (new_claim == nullptr)
                        return QueueingHint::kQueue;  // deleted: devices freed
                      if (old_claim != nullptr && old_claim->allocation && !new_claim->allocation) {
                        return QueueingHint::kQueue;
                      }
                      if (new_claim->meta.namespace_ != pod.meta.namespace_ ||
                          pod.resource_claims == nullptr) {
                        return QueueingHint::kSkip;
                      }
                      // A claim made for this pod from a template (the pod's status may not
                      // name it yet).
                      for (const api::OwnerReference& r : new_claim->meta.owner_references) {
                        if (r.uid == pod.meta.uid) return QueueingHint::kQueue;
                      }
                      const api::PodResourceClaims& pc = *pod.resource_claims;
                      for (size_t i = 0; i < pc.claims.size(); ++i) {
                        if (pc.ClaimName(i) == new_claim->meta.name) return QueueingHint::kQueue;
                      }
                      return QueueingHint::kSkip;
                    }});
  // New or changed devices, classes; a pod leaving may lead to its claims being released.
  events.push_back(
      {ClusterEvent{EventResource::kResourceSlice, framework::kAdd | framework::kUpdate}, nullptr});
  events.push_back(
      {ClusterEvent{EventResource::kDeviceClass, framework::kAdd | framework::kUpdate}, nullptr});
  events.push_back({ClusterEvent{EventResource::kAssignedPod, framework::kDelete}, nullptr});
  return events;
}

}  // namespace gpusched::plugins::dynamic_resources
