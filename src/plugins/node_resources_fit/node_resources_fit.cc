// SPDX-License-Identifier: Apache-2.0
#include "src/plugins/node_resources_fit/node_resources_fit.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <memory>
#include <utility>

#include "src/api/gpu.h"
#include "src/api/resources.h"
#include "src/common/strings.h"
#include "src/framework/reasons.h"
#include "src/plugins/helper/args.h"
#include "src/plugins/helper/queueing_hints.h"
#include "src/plugins/helper/resources.h"
#include "src/plugins/names.h"

namespace gpusched::plugins::node_resources_fit {
namespace {

constexpr int64_t kMaxUtilization = 100;
constexpr int64_t kMaxCustomPriorityScore = 10;

const framework::StateKey kPreFilterKey{"NodeResourcesFit/PreFilter"};

struct PreFilterState final : framework::StateData {
  int64_t milli_cpu = 0;
  int64_t memory = 0;
  int64_t ephemeral_storage = 0;
  struct Scalar {
    common::Atom name;
    int64_t quantity = 0;
    std::string_view reason;  // interned "Insufficient <name>"
    bool gpu_share = false;   // a GPU-sharing dialect resource (see IsGpuShareResource)
    bool dra_backed = false;  // a DeviceClass backs it (KEP-5004)
  };
  std::vector<Scalar> scalars;  // non-zero, not ignored
  // Reason of each failing-check set: bit 0 pods, 1 cpu, 2 memory, 3 ephemeral-storage, 4+i
  // scalars[i] (NodeResourcesFit::CombinedReasons).
  const std::vector<std::string_view>* combined = nullptr;
};

const framework::StateKey kPreScoreKey{"NodeResourcesFit/PreScore"};

// The container resources of the GPU-sharing dialects (HAMi, gpushare, Koordinator;
// docs/gpu-request-dialects.md §2). GpuFit accounts for them per device; a node that does not
// advertise one leaves it to GpuFit instead of failing every such pod with "Insufficient ...".
bool IsGpuShareResource(common::Atom name) {
  static const std::array<common::Atom, 8> kNames = {
      common::Intern(api::kHamiGpuMemResource),
      common::Intern(api::kHamiGpuMemPercentResource),
      common::Intern(api::kHamiGpuCoresResource),
      common::Intern(api::kAliyunGpuMemResource),
      common::Intern(api::kKoordGpuMemoryRatioResource),
      common::Intern(api::kKoordGpuCoreResource),
      common::Intern(api::kKoordGpuMemoryResource),
      common::Intern(api::kKoordGpuSharedResource)};
  return std::find(kNames.begin(), kNames.end(), name) != kNames.end();
}

std::string_view TypeName(ScoringStrategyType t) {
  switch (t) {
    case ScoringStrategyType::kLeastAllocated: return "LeastAllocated";
    case ScoringStrategyType::kMostAllocated: return "MostAllocated";
    case ScoringStrategyType::kRequestedToCapacityRatio: return "RequestedToCapacityRatio";
  }
  return "";
}

// A list of non-empty strings; with `group`, resource group names (no '/').
void ParseStringList(api::ObjectFields& f, std::string_view key, bool group,
                     std::vector<std::string>& out) {
  f.ForEachString(key, [&](std::string_view s, const api::FieldPath& path) {
    if (s.empty()) {
      f.reader().Error(path, "must not be empty");
    } else if (group && s.find('/') != std::string_view::npos) {
      f.reader().Error(path, "resource group name can't contain '/', got " + common::Quote(s));
    } else {
      out.emplace_back(s);
    }
  });
}

// scoringStrategy.resources[i]: {name, weight}.
void ParseResourceSpec(api::ObjectFields& r, Args& out) {
  ResourceSpec spec;
  if (std::optional<std::string_view> name = r.RequiredString("name")) {
    spec.name = std::string(*name);
    for (const ResourceSpec& prev : out.resources) {
      if (prev.name == spec.name) r.Error("name", "duplicate resource " + common::Quote(*name));
    }
  }
  if (std::optional<int64_t> w = r.Int("weight", 1, 100)) spec.weight = *w;
  out.resources.push_back(std::move(spec));
}

// scoringStrategy.requestedToCapacityRatio.shape[i]: {utilization, score}, utilization rising.
void ParseShapePoint(api::ObjectFields& p, Args& out) {
  helper::FunctionShapePoint point;
  if (std::optional<int64_t> u = p.Int("utilization", 0, kMaxUtilization)) {
    point.utilization = *u;
    if (!out.shape.empty() && *u <= out.shape.back().utilization) {
      p.Error("utilization", "must be greater than the previous point's (" +
                                 std::to_string(out.shape.back().utilization) + "), got " +
                                 std::to_string(*u));
    }
  }
  if (std::optional<int64_t> s = p.Int("score", 0, kMaxCustomPriorityScore)) point.score = *s;
  out.shape.push_back(point);
}

void ParseScoringStrategy(api::ObjectFields& ss, Args& out) {
  if (std::optional<std::string_view> type = ss.String("type")) {
    bool found = false;
    for (ScoringStrategyType t :
         {ScoringStrategyType::kLeastAllocated, ScoringStrategyType::kMostAllocated,
          ScoringStrategyType::kRequestedToCapacityRatio}) {
      if (*type == TypeName(t)) {
        out.type = t;
        found = true;
      }
    }
    if (!found) {
      ss.Error("type", "unsupported value " + common::Quote(*type) +
                           ", want one of LeastAllocated, MostAllocated, RequestedToCapacityRatio");
    }
  }
  api::JsonReader& r = ss.reader();
  ss.ForEachObject("resources", [&](const boost::json::object& o, const api::FieldPath& path) {
    api::ObjectFields spec(r, o, path);
    ParseResourceSpec(spec, out);
  });
  const api::FieldPath ratio_path = ss.path().Key("requestedToCapacityRatio");
  if (const boost::json::object* ratio = ss.Object("requestedToCapacityRatio")) {
    api::ObjectFields rf(r, *ratio, ratio_path);
    rf.ForEachObject("shape", [&](const boost::json::object& o, const api::FieldPath& path) {
      api::ObjectFields point(r, o, path);
      ParseShapePoint(point, out);
    });
  }
  if (out.type == ScoringStrategyType::kRequestedToCapacityRatio && out.shape.empty()) {
    r.Error(ratio_path.Key("shape"),
            "at least one point is required when type is RequestedToCapacityRatio");
  }
}

}  // namespace

common::StatusOr<Args> ParseArgs(const boost::json::value& raw) {
  Args out;
  GPUSCHED_RETURN_IF_ERROR(helper::ReadArgs(raw, [&](api::ObjectFields& f) {
    ParseStringList(f, "ignoredResources", /*group=*/false, out.ignored_resources);
    ParseStringList(f, "ignoredResourceGroups", /*group=*/true, out.ignored_resource_groups);
    const api::FieldPath ss_path = f.path().Key("scoringStrategy");
    if (const boost::json::object* ss = f.Object("scoringStrategy")) {
      api::ObjectFields strategy(f.reader(), *ss, ss_path);
      ParseScoringStrategy(strategy, out);
    }
  }));
  if (out.resources.empty()) out.resources = {{"cpu", 1}, {"memory", 1}};
  return out;
}

struct NodeResourcesFit::PreScoreState final : framework::StateData {
  std::vector<int64_t> request;  // per resources_ entry
};

common::StatusOr<framework::PluginPtr> NodeResourcesFit::Create(const boost::json::value& args,
                                                                framework::Handle& handle) {
  GPUSCHED_ASSIGN_OR_RETURN(Args parsed, ParseArgs(args));
  return framework::PluginPtr(std::make_unique<NodeResourcesFit>(std::move(parsed), handle.dra()));
}

NodeResourcesFit::NodeResourcesFit(Args args, const framework::DraView* dra)
    : type_(args.type), dra_(dra) {
  const api::WellKnown& wk = api::Names();
  for (const ResourceSpec& spec : args.resources) {
    Resource r;
    r.name = common::Intern(spec.name);
    r.weight = spec.weight;
    if (r.name == wk.cpu) {
      r.kind = Kind::kCpu;
    } else if (r.name == wk.memory) {
      r.kind = Kind::kMemory;
    } else if (r.name == wk.ephemeral_storage) {
      r.kind = Kind::kEphemeralStorage;
    } else if (r.name == wk.pods) {
      r.kind = Kind::kPods;
    }
    resources_.push_back(r);
  }
  for (const helper::FunctionShapePoint& p : args.shape) {
    shape_.push_back(
        {p.utilization, p.score * (framework::kMaxNodeScore / kMaxCustomPriorityScore)});
  }
  for (const std::string& name : args.ignored_resources) {
    ignored_resources_.push_back(common::Intern(name));
  }
  ignored_groups_ = std::move(args.ignored_resource_groups);
}

std::string_view NodeResourcesFit::Name() const { return names::kNodeResourcesFit; }

bool NodeResourcesFit::Ignored(common::Atom name) const {
  const std::string_view text = common::Str(name);
  if (!helper::IsExtendedResourceName(text)) return false;
  if (std::find(ignored_resources_.begin(), ignored_resources_.end(), name) !=
      ignored_resources_.end()) {
    return true;
  }
  const std::string_view group = helper::ResourceGroup(text);
  return std::find(ignored_groups_.begin(), ignored_groups_.end(), group) != ignored_groups_.end();
}

const std::vector<std::string_view>& NodeResourcesFit::CombinedReasons(
    std::vector<std::string_view> reasons) {
  common::MutexLock lock(combined_mu_);
  auto [it, inserted] = combined_.try_emplace(std::move(reasons));
  if (!inserted) return it->second;
  const std::vector<std::string_view>& names = it->first;
  std::vector<std::string_view>& out = it->second;
  out.resize(size_t{1} << names.size());
  for (size_t mask = 1; mask < out.size(); ++mask) {
    std::string joined;
    for (size_t i = 0; i < names.size(); ++i) {
      if ((mask & (size_t{1} << i)) == 0) continue;
      if (!joined.empty()) joined += framework::kReasonSeparator;
      joined += names[i];
    }
    // A single reason keeps its own storage: equal reasons stay pointer-equal (result reuse).
    out[mask] = std::has_single_bit(mask) ? names[std::countr_zero(mask)]
                                          : common::Str(common::Intern(joined));
  }
  return out;
}

framework::Status NodeResourcesFit::PreFilter(framework::CycleState& state, const api::Pod& pod,
                                              const framework::Snapshot& /*snapshot*/) {
  auto s = std::make_unique<PreFilterState>();
  s->milli_cpu = pod.requests.milli_cpu;
  s->memory = pod.requests.memory;
  s->ephemeral_storage = pod.requests.ephemeral_storage;
  for (const auto& [name, quantity] : pod.requests.scalar) {
    if (quantity == 0 || Ignored(name)) continue;
    std::string reason = "Insufficient ";
    reason += common::Str(name);
    const bool backed = dra_ != nullptr && dra_->ExtendedResourceClass(common::Str(name));
    s->scalars.push_back(
        {name, quantity, common::Str(common::Intern(reason)), IsGpuShareResource(name), backed});
  }
  std::vector<std::string_view> reasons = {kReasonTooManyPods, kReasonInsufficientCpu,
                                           kReasonInsufficientMemory,
                                           kReasonInsufficientEphemeralStorage};
  for (const PreFilterState::Scalar& r : s->scalars) {
    if (reasons.size() == kMaxCombinedReasons) break;
    reasons.push_back(r.reason);
  }
  s->combined = &CombinedReasons(std::move(reasons));
  state.Write(kPreFilterKey, std::move(s));
  return framework::Status::Success();
}

framework::Status NodeResourcesFit::Filter(const framework::CycleState& state,
                                           const api::Pod& /*pod*/,
                                           const framework::NodeInfo& node) const {
  const PreFilterState* s = state.Get<PreFilterState>(kPreFilterKey);
  if (s == nullptr) {
    return framework::Status::Error("NodeResourcesFit: PreFilter state missing from CycleState");
  }
  const api::ResourceList& alloc = node.node->allocatable;
  const api::ResourceList& used = node.requested;
  uint32_t failed = 0;  // bits as PreFilterState::combined
  if (static_cast<int64_t>(node.pod_count) + 1 > alloc.pods) failed |= 1U << 0;
  if (s->milli_cpu > 0 && s->milli_cpu > alloc.milli_cpu - used.milli_cpu) failed |= 1U << 1;
  if (s->memory > 0 && s->memory > alloc.memory - used.memory) failed |= 1U << 2;
  if (s->ephemeral_storage > 0 &&
      s->ephemeral_storage > alloc.ephemeral_storage - used.ephemeral_storage) {
    failed |= 1U << 3;
  }
  std::string_view uncombined;  // a failing scalar beyond kMaxCombinedReasons
  for (size_t i = 0; i < s->scalars.size(); ++i) {
    const PreFilterState::Scalar& r = s->scalars[i];
    const int64_t allocatable = alloc.Get(r.name);
    if (r.gpu_share && allocatable == 0) continue;   // not advertised: GpuFit's to account
    if (r.dra_backed && allocatable == 0) continue;  // not advertised: DynamicResources' to place
    if (r.quantity <= allocatable - used.Get(r.name)) continue;
    if (4 + i < kMaxCombinedReasons) {
      failed |= 1U << (4 + i);
    } else if (uncombined.empty()) {
      uncombined = r.reason;
    }
  }
  if (failed != 0) return framework::Status::Unschedulable((*s->combined)[failed]);
  if (!uncombined.empty()) return framework::Status::Unschedulable(uncombined);
  return framework::Status::Success();
}

framework::Status NodeResourcesFit::PreScore(framework::CycleState& state, const api::Pod& pod,
                                             const framework::Snapshot& /*snapshot*/,
                                             std::span<const framework::NodeIndex> /*feasible*/) {
  auto s = std::make_unique<PreScoreState>();
  const helper::NonZeroRequest nz = helper::PodNonZeroRequest(pod);
  s->request.reserve(resources_.size());
  for (const Resource& r : resources_) {
    switch (r.kind) {
      case Kind::kCpu: s->request.push_back(nz.milli_cpu); break;
      case Kind::kMemory: s->request.push_back(nz.memory); break;
      default: s->request.push_back(pod.requests.Get(r.name)); break;
    }
  }
  state.Write(kPreScoreKey, std::move(s));
  return framework::Status::Success();
}

int64_t NodeResourcesFit::ResourceScore(int64_t requested, int64_t allocatable) const {
  switch (type_) {
    case ScoringStrategyType::kLeastAllocated:
      // leastRequestedScore
      if (requested > allocatable) return 0;
      return (allocatable - requested) * framework::kMaxNodeScore / allocatable;
    case ScoringStrategyType::kMostAllocated:
      // mostRequestedScore: pods without requests get defaults, so clamp to capacity.
      return std::min(requested, allocatable) * framework::kMaxNodeScore / allocatable;
    case ScoringStrategyType::kRequestedToCapacityRatio:
      if (requested > allocatable) return helper::BrokenLinear(shape_, kMaxUtilization);
      return helper::BrokenLinear(shape_, requested * kMaxUtilization / allocatable);
  }
  return 0;
}

// ResourceList::Get without the name lookup for the common resources (per-node hot path).
int64_t NodeResourcesFit::AmountOf(const api::ResourceList& list, const Resource& r) {
  switch (r.kind) {
    case Kind::kCpu: return list.milli_cpu;
    case Kind::kMemory: return list.memory;
    default: return list.Get(r.name);
  }
}

int64_t NodeResourcesFit::ScoreOne(const PreScoreState& s, const framework::NodeInfo& node) const {
  const api::ResourceList& alloc = node.node->allocatable;
  int64_t node_score = 0;
  int64_t weight_sum = 0;
  for (size_t i = 0; i < resources_.size(); ++i) {
    const Resource& r = resources_[i];
    const int64_t pod_request = s.request[i];
    // Extended resources the pod does not request, and "pods", are not scored.
    if (r.kind == Kind::kPods || (r.kind == Kind::kScalar && pod_request == 0)) continue;
    const int64_t allocatable = AmountOf(alloc, r);
    if (allocatable == 0) continue;
    const int64_t requested = AmountOf(node.requested, r) + pod_request;
    const int64_t score = ResourceScore(requested, allocatable);
    // RequestedToCapacityRatio leaves zero scores out of the average, as upstream does.
    if (type_ == ScoringStrategyType::kRequestedToCapacityRatio && score <= 0) continue;
    node_score += score * r.weight;
    weight_sum += r.weight;
  }
  if (weight_sum == 0) return 0;
  if (type_ == ScoringStrategyType::kRequestedToCapacityRatio) {
    return static_cast<int64_t>(
        std::llround(static_cast<double>(node_score) / static_cast<double>(weight_sum)));
  }
  return node_score / weight_sum;
}

void NodeResourcesFit::ScoreNodes(const framework::CycleState& state, const api::Pod& /*pod*/,
                                  const framework::Snapshot& snapshot,
                                  std::span<const framework::NodeIndex> nodes,
                                  std::span<int64_t> out) const {
  const PreScoreState* s = state.Get<PreScoreState>(kPreScoreKey);
  framework::ScoreEach(snapshot, nodes, out, [this, s](const framework::NodeInfo& node) {
    return s == nullptr ? 0 : ScoreOne(*s, node);
  });
}

using framework::ClusterEvent;
using framework::ClusterEventWithHint;
using framework::EventObjects;
using framework::EventResource;
using framework::QueueingHint;

namespace {

// An assigned pod deleted frees its requests; one scaled down frees what went down. Either helps
// only on a node whose allocatable could hold the pod at all (when the event names the node).
QueueingHint FitAfterPodEvent(const api::Pod& pod, const ClusterEvent& event,
                              const EventObjects& o) {
  if (o.new_node != nullptr && !helper::RequestsFitAllocatable(pod, *o.new_node)) {
    return QueueingHint::kSkip;
  }
  if ((event.actions & framework::kDelete) != 0) return QueueingHint::kQueue;
  if (o.old_pod == nullptr || o.new_pod == nullptr) return QueueingHint::kQueue;
  return helper::RequestedResourceScaledDown(pod, *o.old_pod, *o.new_pod) ? QueueingHint::kQueue
                                                                          : QueueingHint::kSkip;
}

// A node that could hold the pod's requests when empty: new, or with more of what it requests.
QueueingHint FitAfterNodeChange(const api::Pod& pod, const ClusterEvent& /*event*/,
                                const EventObjects& o) {
  if (o.new_node == nullptr) return QueueingHint::kQueue;
  if (!helper::RequestsFitAllocatable(pod, *o.new_node)) return QueueingHint::kSkip;
  if (o.old_node == nullptr) return QueueingHint::kQueue;
  return helper::RequestedAllocatableIncreased(pod, *o.old_node, *o.new_node) ? QueueingHint::kQueue
                                                                              : QueueingHint::kSkip;
}

}  // namespace

std::vector<ClusterEventWithHint> NodeResourcesFit::EventsToRegister() const {
  return {
      {ClusterEvent{EventResource::kAssignedPod,
                    framework::kDelete | framework::kUpdatePodScaleDown},
       FitAfterPodEvent},
      {ClusterEvent{EventResource::kNode, framework::kAdd | framework::kUpdateNodeAllocatable},
       FitAfterNodeChange},
      helper::ExtendedResourceClassEvent(),
  };
}

}  // namespace gpusched::plugins::node_resources_fit
