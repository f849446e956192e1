// SPDX-License-Identifier: Apache-2.0
#include "src/plugins/dynamic_resources/dynamic_resources.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "src/api/dra.h"
#include "src/api/resources.h"
#include "src/common/strings.h"
#include "src/framework/dra_view.h"
#include "src/framework/gangs.h"
#include "src/plugins/dynamic_resources/extended_resources.h"
#include "src/plugins/dynamic_resources/lookahead.h"
#include "src/plugins/dynamic_resources/node_devices.h"
#include "src/plugins/helper/args.h"
#include "src/plugins/names.h"

namespace gpusched::plugins::dynamic_resources {
namespace {

// The most extended resources backed by DRA one pod may ask for (the bits of a variant's mask).
constexpr size_t kMaxBackedResources = 31;

// The most pods one claim can be reserved for (resource.k8s.io/v1 ResourceClaimReservedForMaxSize).
constexpr size_t kReservedForMaxSize = 256;

struct ClaimInfo {
  api::ResourceClaimPtr claim;
  bool allocated = false;
  bool reserved_for_pod = false;  // for the pod or its PodGroup (api::IsReservedForPod)
  api::ClaimConsumer consumer;    // whom Reserve adds to reservedFor (api::ConsumerFor)
};

// The claim for the pod's extended resources backed by DRA that a set of nodes leaves to DRA
// (bit i: State::extended[i] is not in the node's allocatable), and what to allocate there.
struct ExtendedVariant {
  uint32_t mask = 0;
  api::ResourceClaimPtr claim;  // unnamed until Reserve
  std::vector<api::ContainerExtendedResourceRequest> mappings;
  std::vector<ClaimPlan> plans;  // State::plans, then the claim's
};

struct State final : framework::StateData {
  const framework::Snapshot* snapshot = nullptr;
  std::shared_ptr<const framework::DeviceIndex> index;
  std::shared_ptr<const framework::DeviceUsage> usage;
  std::vector<ClaimInfo> claims;
  std::vector<ClaimPlan> plans;  // the claims to allocate
  // The pod's extended resources backed by DRA (by name) and a variant per set of them the
  // snapshot's nodes leave to DRA.
  std::vector<BackedResource> extended;
  std::vector<ExtendedVariant> variants;
  std::vector<std::string> hidden;  // the snapshot's hidden pods (their devices count as free)
  NodeDevicesCache* node_devices = nullptr;  // the plugin's (plain gathers)
  // PreScore: the lookahead's count per node index (lookahead.h; -1: not a candidate) and its
  // best; empty when there was no lookahead or it found every candidate equal.
  std::vector<int32_t> lookahead;
  int32_t lookahead_best = 0;
  // PreScore, without lookahead: the pressure of the claims waiting for devices (pressure.h), by
  // device number; empty when none is on a device this pod could take.
  std::vector<float> pressure;
  // Reserve's choice: the claims as assumed, and per claim its index in `claims` (one allocated
  // before only gets the consumer added to its reservedFor: a claim shared with other pods).
  std::vector<api::ResourceClaimPtr> assumed;
  std::vector<size_t> assumed_info;
  // Reserve's extended resource claim (named, allocated, assumed) and its variant; PreBind's
  // version of it once created in the API server.
  api::ResourceClaimPtr extended_claim;
  const ExtendedVariant* extended_variant = nullptr;
  api::ResourceClaimPtr extended_created;
};

// Which of s.extended `node` leaves to DRA: those it does not advertise (upstream:
// allocatable 0).
uint32_t DelegatedMask(const State& s, const framework::NodeInfo& node) {
  uint32_t mask = 0;
  for (size_t i = 0; i < s.extended.size(); ++i) {
    if (node.node->allocatable.Get(s.extended[i].name) == 0) mask |= 1U << i;
  }
  return mask;
}

// The plans to allocate on `node`: the pod's claims', with its extended resource claim's there
// (`variant`: that claim's variant, null when the node leaves none to DRA). Null when the node
// leaves a mix of them to DRA that PreFilter did not plan (a node added since).
const std::vector<ClaimPlan>* PlansFor(const State& s, const framework::NodeInfo& node,
                                       const ExtendedVariant** variant = nullptr) {
  if (variant != nullptr) *variant = nullptr;
  const uint32_t mask = s.extended.empty() ? 0 : DelegatedMask(s, node);
  if (mask == 0) return &s.plans;
  for (const ExtendedVariant& v : s.variants) {
    if (v.mask != mask) continue;
    if (variant != nullptr) *variant = &v;
    return &v.plans;
  }
  return nullptr;
}

const framework::StateKey kStateKey = {"DynamicResources"};

framework::Status Unresolvable(std::string message) {
  return framework::Status::WithMessage(framework::Code::kUnschedulableAndUnresolvable,
                                        std::move(message));
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

// 0..100: the fraction of the node's devices in use once `plans` take theirs (fuller first).
int64_t Packing(const NodeDevices& devices, std::span<const ClaimPlan> plans) {
  if (devices.devices.empty()) return 0;
  int64_t busy = 0;
  for (const NodeDevice& d : devices.devices) busy += d.busy ? 1 : 0;
  int64_t wanted = 0;
  for (const ClaimPlan& p : plans) {
    for (const RequestPlan& r : p.requests) {
      if (!r.alternatives.empty()) wanted += r.alternatives.front().choice->count;
    }
  }
  const auto total = static_cast<int64_t>(devices.devices.size());
  return std::min<int64_t>(framework::kMaxNodeScore,
                           (busy + wanted) * framework::kMaxNodeScore / total);
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
  return api::ClaimConsumer{"pods", pod.meta.name, pod.meta.uid, ""};
}

// Fills s.lookahead (lookahead.h) for the feasible nodes; false when the budget allows none.
// `own`: the pod's claims.
bool RunLookahead(SelectorCache& selectors, const framework::DraView& view, State& s,
                  std::span<const api::ResourceClaimPtr> own, const framework::Snapshot& snapshot,
                  std::span<const framework::NodeIndex> feasible) {
  const std::optional<LookaheadResult> r = LookAheadForPod(
      selectors, view, *s.index, *s.usage,
      [&s](const framework::NodeInfo& node) { return PlansFor(s, node); }, own, snapshot, feasible);
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

// The pod's extended resources (pod.requests, non-zero) that a DeviceClass backs, by name.
std::vector<BackedResource> BackedResources(const framework::DraView& dra, const api::Pod& pod) {
  std::vector<BackedResource> out;
  for (const auto& [name, quantity] : pod.requests.scalar) {
    if (quantity <= 0) continue;
    if (api::DeviceClassPtr c = dra.ExtendedResourceClass(common::Str(name))) {
      out.push_back({name, c->name});
    }
  }
  std::sort(out.begin(), out.end(), [](const BackedResource& a, const BackedResource& b) {
    return common::Str(a.name) < common::Str(b.name);
  });
  return out;
}

// The claim upstream's scheduler makes for a pod's extended resources: in the pod's namespace,
// owned by the pod (controller), annotated; unnamed (Reserve names it).
api::ResourceClaimPtr NewExtendedClaim(const api::Pod& pod,
                                       std::vector<api::DeviceRequest> requests) {
  auto claim = std::make_shared<api::ResourceClaim>();
  claim->meta.namespace_ = pod.meta.namespace_;
  claim->meta.owner_references.push_back(
      api::OwnerReference{"v1", "Pod", pod.meta.name, pod.meta.uid, /*controller=*/true});
  claim->meta.annotations.emplace_back(std::string(api::kExtendedResourceClaimAnnotation), "true");
  claim->spec.requests = std::move(requests);
  return claim;
}

// The name of the pod's extended resource claim: upstream's generateName
// "<pod>-extended-resources-", its 5 characters from the pod's uid so that a simulation repeats.
std::string ExtendedClaimName(const api::Pod& pod) {
  return common::GeneratedName(
      pod.meta.name + "-extended-resources-",
      common::Fnv1a64(pod.meta.uid + "/" + pod.meta.namespace_ + "/" + pod.meta.name));
}

// The native PodGroup the pod names in spec.schedulingGroup, whose claims its pods share
// (KEP-5729); null when it names none. NotFound while the PodGroup is not known (upstream's
// PreFilter fails the same way).
common::StatusOr<api::PodGroupPtr> PodGroupOf(const framework::Gangs* gangs, const api::Pod& pod) {
  if (pod.scheduling_group.empty() || gangs == nullptr) return api::PodGroupPtr();
  api::PodGroupPtr group = gangs->Policy(
      api::PolicyKey(api::GangApi::kNative, pod.meta.namespace_, pod.scheduling_group, ""));
  if (group == nullptr) {
    return common::NotFoundError("podgroup.scheduling.k8s.io \"" + pod.scheduling_group +
                                 "\" not found");
  }
  return group;
}

framework::Status ResolveClaims(SelectorCache& selectors, const framework::DraView& dra,
                                const framework::Gangs* gangs, const api::Pod& pod, State& s) {
  const api::PodResourceClaims& pc = *pod.resource_claims;
  common::StatusOr<api::PodGroupPtr> group = PodGroupOf(gangs, pod);
  if (!group.ok()) {
    return framework::Status::WithMessage(framework::Code::kUnschedulable,
                                          std::string(group.status().message()));
  }
  for (size_t i = 0; i < pc.claims.size(); ++i) {
    const std::optional<std::string> name = pc.ClaimName(i);
    if (!name) {
      return Unresolvable("pod \"" + pod.meta.namespace_ + "/" + pod.meta.name +
                          "\": ResourceClaim not created yet");
    }
    if (name->empty()) continue;  // the controller decided no claim is needed
    api::ResourceClaimPtr claim = dra.GetClaim(pod.meta.namespace_, *name);
    if (claim == nullptr) {
      return Unresolvable("resourceclaim.resource.k8s.io \"" + *name + "\" not found");
    }
    if (claim->meta.deletion_timestamp) {
      return Unresolvable("resourceclaim \"" + *name + "\" is being deleted");
    }
    if (!pc.claims[i].template_name.empty() && !api::IsClaimForPod(*claim, pod)) {
      return Unresolvable("ResourceClaim " + claim->meta.namespace_ + "/" + claim->meta.name +
                          " was not created for pod " + pod.meta.namespace_ + "/" + pod.meta.name +
                          " (pod is not owner)");
    }
    ClaimInfo info{claim, claim->allocation.has_value(), api::IsReservedForPod(*claim, pod),
                   api::ConsumerFor(pod, i, group->get())};
    if (info.allocated && !info.reserved_for_pod &&
        claim->reserved_for.size() >= kReservedForMaxSize) {
      return framework::Status::Unresolvable(kReasonInUse);
    }
    if (!info.allocated) {
      common::StatusOr<ClaimPlan> plan = PlanClaim(selectors, dra, *s.index, claim);
      if (!plan.ok()) return Unresolvable(std::string(plan.status().message()));
      s.plans.push_back(*std::move(plan));
    }
    s.claims.push_back(std::move(info));
  }
  return framework::Status::Success();
}

// A claim of an earlier attempt that is not allocated for the pod (upstream deletes every such
// claim in PostFilter): delete it and wait for that.
framework::Status DeleteStaleClaim(const framework::DraView& dra, const api::ResourceClaim& c) {
  std::string message = "extended resource claim " + c.meta.namespace_ + "/" + c.meta.name +
                        " of an earlier attempt is being deleted";
  if (framework::DraWriter* w = dra.writer(); w != nullptr) {
    if (common::Status st = w->DeleteResourceClaim(c); !st.ok()) {
      message += ": ";
      message += st.message();
    }
  }
  return framework::Status::WithMessage(framework::Code::kUnschedulable, std::move(message));
}

framework::Status PlanExtended(SelectorCache& selectors, const framework::DraView& dra,
                               const api::Pod& pod, const framework::Snapshot& snapshot, State& s) {
  // Every resource left to DRA (nodes without a device plugin), then the mixes the snapshot's
  // nodes leave.
  std::vector<uint32_t> masks = {(1U << s.extended.size()) - 1};
  for (const framework::NodeInfo& n : snapshot.nodes()) {
    if (!n.valid()) continue;
    const uint32_t mask = DelegatedMask(s, n);
    if (mask != 0 && std::find(masks.begin(), masks.end(), mask) == masks.end()) {
      masks.push_back(mask);
    }
  }
  for (const uint32_t mask : masks) {
    std::vector<BackedResource> delegated;
    for (size_t i = 0; i < s.extended.size(); ++i) {
      if ((mask >> i & 1U) != 0) delegated.push_back(s.extended[i]);
    }
    ExtendedResourceRequests r = BuildExtendedResourceRequests(pod, delegated);
    ExtendedVariant v;
    v.mask = mask;
    v.mappings = std::move(r.mappings);
    v.plans = s.plans;
    if (!r.requests.empty()) {
      v.claim = NewExtendedClaim(pod, std::move(r.requests));
      common::StatusOr<ClaimPlan> plan = PlanClaim(selectors, dra, *s.index, v.claim);
      if (!plan.ok()) {
        return Unresolvable("extended resources backed by DRA: " +
                            std::string(plan.status().message()));
      }
      v.plans.push_back(*std::move(plan));
    }
    s.variants.push_back(std::move(v));
  }
  return framework::Status::Success();
}

}  // namespace

common::StatusOr<framework::PluginPtr> DynamicResources::Create(const boost::json::value& args,
                                                                framework::Handle& handle) {
  GPUSCHED_RETURN_IF_ERROR(helper::ReadNoArgs(args));
  return framework::PluginPtr(std::make_unique<DynamicResources>(handle.dra(), handle.gangs()));
}

std::string_view DynamicResources::Name() const { return names::kDynamicResources; }

framework::Status DynamicResources::PreFilter(framework::CycleState& state, const api::Pod& pod,
                                              const framework::Snapshot& snapshot) {
  if (dra_ == nullptr) {
    if (pod.resource_claims == nullptr) return framework::Status::Skip();
    return framework::Status::Unresolvable(
        "no DRA data source: resource claims cannot be allocated");
  }
  std::vector<BackedResource> extended = BackedResources(*dra_, pod);
  if (pod.resource_claims == nullptr && extended.empty()) return framework::Status::Skip();
  if (extended.size() > kMaxBackedResources) {
    return Unresolvable("the pod asks for " + std::to_string(extended.size()) +
                        " extended resources backed by DRA; at most " +
                        std::to_string(kMaxBackedResources) + " are supported");
  }
  auto s = std::make_unique<State>();
  s->node_devices = node_devices_.get();
  s->snapshot = &snapshot;
  const std::span<const std::string> hidden = snapshot.hidden_pods();
  s->hidden.assign(hidden.begin(), hidden.end());
  s->index = dra_->devices();
  s->usage = dra_->usage();
  if (pod.resource_claims != nullptr) {
    if (framework::Status st = ResolveClaims(selectors_, *dra_, gangs_, pod, *s); !st.ok()) {
      return st;
    }
  }
  if (!extended.empty()) {
    // A claim an earlier cycle made for them.
    if (api::ResourceClaimPtr held = dra_->ExtendedResourceClaimOf(pod.meta.uid); held == nullptr) {
      s->extended = std::move(extended);
      if (framework::Status st = PlanExtended(selectors_, *dra_, pod, snapshot, *s); !st.ok()) {
        return st;
      }
    } else if (held->allocation && api::IsReservedForPod(*held, pod)) {
      // Allocated for the pod already (a bound pod explained, a bind retried): it keeps it.
      s->claims.push_back({held, true, true, ConsumerOf(pod)});
    } else {
      return DeleteStaleClaim(*dra_, *held);
    }
  }
  if (s->claims.empty() && s->variants.empty()) return framework::Status::Skip();
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
  const std::vector<ClaimPlan>* plans = PlansFor(*s, node);
  if (plans == nullptr) return framework::Status::Unschedulable(kReasonCannotAllocate);
  if (plans->empty()) return framework::Status::Success();
  thread_local NodeDevices scratch;
  std::shared_ptr<const NodeDevices> hold;
  const NodeDevices& devices = DevicesOf(*s, node, scratch, hold);
  if (const framework::NodeInfo* original = OriginalNode(*s, node)) {
    TakeForNominatedPods(node, *original, *s->index, scratch);  // DevicesOf filled scratch
  }
  if (!Allocate(*plans, *s->index, devices, nullptr)) {
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
  if (s == nullptr || (s->plans.empty() && s->variants.empty())) {
    return framework::Status::Skip();
  }
  s->pressure.clear();
  s->lookahead.clear();
  if (feasible.size() < 2) return framework::Status::Success();
  std::vector<api::ResourceClaimPtr> own;
  for (const ClaimInfo& c : s->claims) own.push_back(c.claim);
  if (RunLookahead(selectors_, *dra_, *s, own, snapshot, feasible) || s->plans.empty()) {
    return framework::Status::Success();  // the pressure weighs the pod's own claims only
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

namespace {

// The raw score of `node`: the packing of the pod's claims there, and what the lookahead or the
// waiting claims' device pressure says of taking its devices.
int64_t RawScoreOf(const State* s, const framework::NodeInfo& node) {
  if (s == nullptr) return 0;
  const std::vector<ClaimPlan>* plans = PlansFor(*s, node);
  thread_local NodeDevices scratch;
  std::shared_ptr<const NodeDevices> hold;
  const NodeDevices* devices = nullptr;
  int64_t packing = 0;  // nothing to allocate here (a device-plugin node): 0
  if (plans != nullptr && !plans->empty()) {
    devices = &DevicesOf(*s, node, scratch, hold);
    packing = Packing(*devices, *plans);
  }
  if (!s->lookahead.empty() && node.index >= 0 &&
      static_cast<size_t>(node.index) < s->lookahead.size()) {
    // The nodes that leave room for the most waiting pods above all others, packing within.
    return s->lookahead[static_cast<size_t>(node.index)] == s->lookahead_best
               ? 51 + packing * 49 / framework::kMaxNodeScore
               : packing / 2;
  }
  if (s->pressure.empty() || devices == nullptr) return packing;
  // Half packing, half how little of the free devices the pod could take here waiting
  // restricted requests need (their mean pressure, 1 and more: all spoken for).
  double sum = 0;
  int64_t usable = 0;
  for (const NodeDevice& d : devices->devices) {
    if (d.busy || d.device >= s->pressure.size() || !PodCouldUse(*s, d.device)) continue;
    sum += std::min(1.0F, s->pressure[d.device]);
    ++usable;
  }
  const double mean = usable == 0 ? 1.0 : sum / static_cast<double>(usable);
  const auto unclaimed = static_cast<int64_t>((1.0 - mean) * framework::kMaxNodeScore + 0.5);
  return (packing + unclaimed) / 2;
}

}  // namespace

void DynamicResources::ScoreNodes(const framework::CycleState& state, const api::Pod& /*pod*/,
                                  const framework::Snapshot& snapshot,
                                  std::span<const framework::NodeIndex> nodes,
                                  std::span<int64_t> out) const {
  const State* s = state.Get<State>(kStateKey);
  framework::ScoreEach(snapshot, nodes, out,
                       [s](const framework::NodeInfo& node) { return RawScoreOf(s, node); });
}

framework::Status DynamicResources::Reserve(framework::CycleState& state, const api::Pod& pod,
                                            const framework::NodeInfo& node) {
  State* s = state.Get<State>(kStateKey);
  if (s == nullptr) return framework::Status::Success();
  s->assumed.clear();
  std::vector<std::vector<api::DeviceResult>> results;
  const ExtendedVariant* variant = nullptr;
  const std::vector<ClaimPlan>* plans = PlansFor(*s, node, &variant);
  if (plans == nullptr) return framework::Status::Unschedulable(kReasonCannotAllocate);
  if (!plans->empty()) {
    NodeDevices devices;
    // The usage may have changed since PreFilter (another pod's Reserve): read it again.
    s->usage = dra_->usage();
    GatherNodeDevices(*s, node, devices);
    if (!Allocate(*plans, *s->index, devices, &results)) {
      return framework::Status::Unschedulable(kReasonCannotAllocate);
    }
  }
  // Nothing reads the usage after Reserve: let go of it, so that assuming the claims below
  // updates the view's usage in place instead of copying it (DraStore::MutableUsage).
  s->usage.reset();
  std::vector<api::ResourceClaimPtr> updated;
  s->assumed_info.clear();
  size_t plan = 0;
  for (size_t i = 0; i < s->claims.size(); ++i) {
    const ClaimInfo& c = s->claims[i];
    auto claim = std::make_shared<api::ResourceClaim>(*c.claim);
    if (!c.allocated) {
      api::AllocationResult alloc;
      alloc.devices = std::move(results[plan++]);
      alloc.node_selector = AllocationNodeSelector(*s->index, alloc.devices, node.name());
      claim->allocation = std::move(alloc);
    }
    if (!c.reserved_for_pod) claim->reserved_for.push_back(c.consumer);
    if (!c.allocated || !c.reserved_for_pod) {
      updated.push_back(std::move(claim));
      s->assumed_info.push_back(i);
    }
  }
  for (api::ResourceClaimPtr& claim : updated) {
    if (common::Status st = dra_->AssumeClaim(claim); !st.ok()) {
      Unreserve(state, pod, node.name());
      return framework::Status::Error(std::string(st.message()));
    }
    s->assumed.push_back(std::move(claim));
  }
  if (variant != nullptr && variant->claim != nullptr) {
    auto claim = std::make_shared<api::ResourceClaim>(*variant->claim);
    claim->meta.name = ExtendedClaimName(pod);
    api::AllocationResult alloc;
    alloc.devices = std::move(results.back());
    alloc.node_selector = AllocationNodeSelector(*s->index, alloc.devices, node.name());
    claim->allocation = std::move(alloc);
    claim->reserved_for.push_back(ConsumerOf(pod));
    if (common::Status st = dra_->AssumeNewClaim(claim); !st.ok()) {
      Unreserve(state, pod, node.name());
      return framework::Status::Error(std::string(st.message()));
    }
    s->extended_claim = std::move(claim);
    s->extended_variant = variant;
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
  if (s->extended_claim != nullptr) {
    dra_->RestoreClaim(s->extended_claim->meta.namespace_, s->extended_claim->meta.name);
    s->extended_claim.reset();
  }
  if (s->extended_created != nullptr) {
    // PreBind created it and the pod did not bind: upstream deletes it too. Should the delete
    // fail, the pod's next PreFilter finds the claim and deletes it (DeleteStaleClaim).
    if (framework::DraWriter* w = dra_->writer(); w != nullptr) {
      (void)w->DeleteResourceClaim(*s->extended_created);
    }
    s->extended_created.reset();
  }
}

namespace {

// A shared claim another pod's PreBind may have written since Reserve: the newest version with
// `consumer` (this pod, or its PodGroup) added to reservedFor, when it is still allocated with the
// same devices; else `planned`.
api::ResourceClaimPtr WithPodReserved(const framework::DraView& view, const api::Pod& pod,
                                      const api::ClaimConsumer& consumer,
                                      const api::ResourceClaimPtr& planned) {
  api::ResourceClaimPtr latest = view.GetClaim(planned->meta.namespace_, planned->meta.name);
  if (latest == nullptr || !latest->allocation ||
      latest->allocation->devices != planned->allocation->devices) {
    return planned;
  }
  if (api::IsReservedForPod(*latest, pod)) return latest;
  auto out = std::make_shared<api::ResourceClaim>(*latest);
  out->reserved_for.push_back(consumer);
  return out;
}

constexpr int kSharedClaimWriteAttempts = 5;

// PreBind for the pod's extended resource claim (upstream's bindClaim and
// patchPodExtendedResourceClaimStatus): creates it, writes its allocation and reservedFor, and
// names it with the container mappings in the pod's status.
framework::Status BindExtendedClaim(framework::DraView& dra, const api::Pod& pod, State& s) {
  const api::ResourceClaimPtr hold = s.extended_claim;  // s.extended_claim is replaced below
  const api::ResourceClaim& assumed = *hold;
  const std::string key = assumed.meta.namespace_ + "/" + assumed.meta.name;
  framework::DraWriter* w = dra.writer();
  if (w == nullptr) return framework::Status::Error("no API writer for resource claims");
  api::ResourceClaim spec = assumed;
  spec.allocation.reset();
  spec.reserved_for.clear();
  common::StatusOr<api::ResourceClaimPtr> created = w->CreateResourceClaim(spec);
  if (!created.ok()) {
    return framework::Status::Error("create resourceclaim " + key + ": " +
                                    std::string(created.status().message()));
  }
  s.extended_created = *created;
  auto with_status = std::make_shared<api::ResourceClaim>(**created);
  with_status->allocation = assumed.allocation;
  with_status->reserved_for = assumed.reserved_for;
  common::StatusOr<api::ResourceClaimPtr> stored = dra.UpdateClaimStatus(*with_status);
  if (!stored.ok()) {
    return framework::Status::Error("resourceclaim " + key + ": " +
                                    std::string(stored.status().message()));
  }
  if (common::Status st = dra.AssumeClaim(*stored); st.ok()) s.extended_claim = *stored;
  const api::PodExtendedResourceClaimStatus status{s.extended_variant->mappings, assumed.meta.name};
  if (common::Status st = w->SetPodExtendedResourceClaimStatus(pod, status); !st.ok()) {
    return framework::Status::Error("pod " + pod.meta.namespace_ + "/" + pod.meta.name +
                                    " extendedResourceClaimStatus: " + std::string(st.message()));
  }
  return framework::Status::Success();
}

}  // namespace

framework::Status DynamicResources::PreBind(framework::CycleState& state, const api::Pod& pod,
                                            std::string_view /*node*/) {
  State* s = state.Get<State>(kStateKey);
  if (s == nullptr) return framework::Status::Success();
  for (size_t i = 0; i < s->assumed.size(); ++i) {
    api::ResourceClaimPtr& claim = s->assumed[i];
    const ClaimInfo& info = s->claims[s->assumed_info[i]];
    const bool shared = info.allocated;
    common::StatusOr<api::ResourceClaimPtr> stored = common::UnavailableError("not written");
    for (int attempt = 0; attempt < (shared ? kSharedClaimWriteAttempts : 1); ++attempt) {
      const uint64_t seen = dra_->generation();
      const api::ResourceClaimPtr to_write =
          shared ? WithPodReserved(*dra_, pod, info.consumer, claim) : claim;
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
  if (s->extended_claim != nullptr) return BindExtendedClaim(*dra_, pod, *s);
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
  // The native PodGroup the pod names arrived: PreFilter waits for it (its claims may be the
  // group's). A member of its gang is queued by GangScheduling too; a pod whose label names
  // another gang is not.
  events.push_back({ClusterEvent{EventResource::kPodGroup, framework::kAdd},
                    [](const api::Pod& pod, const ClusterEvent&, const EventObjects& o) {
                      const auto* g = static_cast<const api::PodGroup*>(o.new_obj);
                      const bool named = g != nullptr && g->api == api::GangApi::kNative &&
                                         g->name == pod.scheduling_group &&
                                         g->namespace_ == pod.meta.namespace_;
                      return named ? QueueingHint::kQueue : QueueingHint::kSkip;
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
