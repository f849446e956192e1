// SPDX-License-Identifier: Apache-2.0
#include "src/plugins/consolidation/consolidation.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <limits>
#include <memory>
#include <utility>

#include "src/api/gpu_devices.h"
#include "src/api/volume.h"
#include "src/plugins/helper/args.h"
#include "src/plugins/names.h"

namespace gpusched::plugins::consolidation {

using framework::Code;
using framework::NodeIndex;
using framework::NodeInfo;
using framework::Status;

namespace {

constexpr std::string_view kDeletionCost = "controller.kubernetes.io/pod-deletion-cost";

bool Contains(const std::vector<std::string>& names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// The pod's controller.kubernetes.io/pod-deletion-cost; 0 when absent or not an int32.
int64_t DeletionCost(const api::Pod& pod) {
  const std::string* v = pod.meta.Annotation(kDeletionCost);
  if (v == nullptr) return 0;
  int32_t cost = 0;
  auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), cost);
  return ec == std::errc() && end == v->data() + v->size() ? cost : 0;
}

// Costlier to restart first: higher deletion cost, then higher priority, then running longer.
bool CostlierToRestart(const api::Pod& a, const api::Pod& b) {
  const int64_t ca = DeletionCost(a);
  const int64_t cb = DeletionCost(b);
  if (ca != cb) return ca > cb;
  if (a.priority != b.priority) return a.priority > b.priority;
  const auto never = common::TimePoint::max();
  return a.start_time.value_or(never) < b.start_time.value_or(never);
}

std::vector<std::string> GetNames(api::ObjectFields& args, std::string_view key) {
  std::vector<std::string> out;
  args.ForEachString(key, [&](std::string_view s, const api::FieldPath&) { out.emplace_back(s); });
  return out;
}

}  // namespace

common::StatusOr<Args> ParseArgs(const boost::json::value& json) {
  Args args;
  GPUSCHED_RETURN_IF_ERROR(helper::ReadArgs(json, [&](api::ObjectFields& f) {
    args.movable_priority_classes = GetNames(f, "movablePriorityClasses");
    args.movable_namespaces = GetNames(f, "movableNamespaces");
    if (auto v = f.Int("maxMovesPerPod", 1, 16)) args.max_moves_per_pod = static_cast<int32_t>(*v);
    if (auto v = f.Int("maxMovesPerMinute", 1, std::numeric_limits<int32_t>::max())) {
      args.max_moves_per_minute = static_cast<int32_t>(*v);
    }
  }));
  return args;
}

bool OptedIn(const api::Pod& running, const Args& args) {
  if (running.meta.deletion_timestamp || !running.gang.empty()) return false;
  const api::OwnerReference* owner = running.meta.ControllerRef();
  if (owner == nullptr || owner->kind == "DaemonSet") return false;
  if (running.volumes != nullptr && running.volumes->local_storage) return false;
  if (const std::string* v = running.meta.Annotation(kMovableAnnotation)) return *v == "true";
  return Contains(args.movable_priority_classes, running.priority_class_name) ||
         Contains(args.movable_namespaces, running.meta.namespace_);
}

bool Movable(const api::Pod& running, const api::Pod& pod, const Args& args) {
  return running.meta.uid != pod.meta.uid && running.priority <= pod.priority &&
         OptedIn(running, args);
}

common::StatusOr<framework::PluginPtr> Consolidation::Create(const boost::json::value& json,
                                                             framework::Handle& handle) {
  GPUSCHED_ASSIGN_OR_RETURN(Args args, ParseArgs(json));
  return framework::PluginPtr(std::make_unique<Consolidation>(std::move(args), handle));
}

std::string_view Consolidation::Name() const { return names::kConsolidation; }

Status Consolidation::PostFilter(framework::CycleState& state, const api::Pod& pod,
                                 const framework::Snapshot& snapshot,
                                 const framework::PostFilterContext& context,
                                 framework::PostFilterResult& result) {
  bool any_opted_in = false;
  FindCandidates(pod, snapshot, context, any_opted_in);
  if (!any_opted_in) return Status::Unschedulable("");
  if (candidates_.empty()) {
    return Status::WithMessage(Code::kUnschedulable,
                               "consolidation: no node makes room by moving at most " +
                                   std::to_string(args_.max_moves_per_pod) + " pods");
  }
  const int32_t recent = MovesInLastMinute();
  if (recent + candidates_.front().lower_bound > args_.max_moves_per_minute) {
    return OverRate(recent);
  }
  Status why;
  bool over_rate = false;
  bool planned = false;
  by_free_.clear();
  // Tiers of plans (Plans: the fewest moves first), tried until one has a destination for every
  // moved pod or kNodesPlanned nodes were planned for.
  for (size_t next = 0, planned_nodes = 0;
       next < candidates_.size() && planned_nodes < kNodesPlanned;) {
    const size_t from = next;
    std::vector<NodeMoves> plans = Plans(state, pod, snapshot, context, next, why);
    planned_nodes += next - from;
    planned = planned || !plans.empty();
    for (NodeMoves& plan : plans) {
      if (recent + static_cast<int64_t>(plan.moves.size()) > args_.max_moves_per_minute) {
        over_rate = true;
        continue;
      }
      std::vector<std::string> to = PlaceMoves(state, pod, snapshot, context, plan);
      if (to.empty()) continue;
      if (recent + static_cast<int64_t>(plan.moves.size()) > args_.max_moves_per_minute) {
        over_rate = true;  // pinning made it dearer
        continue;
      }
      if (!context.RecordPerNode()) {  // explain's dry run moves nothing: no rate spent
        for (size_t i = 0; i < plan.moves.size(); ++i) {
          recent_moves_.push_back(handle_.clock().Now());
        }
      }
      result.mode = framework::PostFilterResult::Mode::kOverride;
      result.nominated_node = std::string(snapshot.at(plan.node).name());
      result.victims = std::move(plan.moves);
      result.destinations = std::move(to);
      return Status::Success();
    }
  }
  if (over_rate) return OverRate(recent);
  if (!planned) {
    if (why.reason().empty()) return Status::Unschedulable("");
    return Status::WithMessage(Code::kUnschedulable, "consolidation: " + std::string(why.reason()));
  }
  return Status::Unschedulable("consolidation: the pods that would move fit on no other node");
}

std::vector<std::string> Consolidation::PlaceMoves(const framework::CycleState& state,
                                                   const api::Pod& pod,
                                                   const framework::Snapshot& snapshot,
                                                   const framework::PostFilterContext& context,
                                                   NodeMoves& plan) {
  std::vector<std::string> to;
  for (;;) {
    size_t stuck = 0;
    to = Destinations(plan, snapshot, context, stuck);
    if (!to.empty()) break;
    // The moved pod with no destination stays; the others make the room instead, if they can.
    pinned_.push_back(plan.moves[stuck].get());
    NodeMoves again;
    again.node = plan.node;
    if (!MovesOn(state, pod, snapshot.at(plan.node), context, again).ok()) break;
    plan = std::move(again);
  }
  pinned_.clear();  // MovesOn on other nodes pins nothing
  return to;
}

void Consolidation::FindCandidates(const api::Pod& pod, const framework::Snapshot& snapshot,
                                   const framework::PostFilterContext& context,
                                   bool& any_opted_in) {
  candidates_.clear();
  for (NodeIndex n : context.PotentialNodes()) {
    const NodeInfo& node = snapshot.at(n);
    const NodeOptIn& in = OptInOf(node);
    if (in.pods.empty()) continue;
    any_opted_in = true;
    const int32_t bound = LowerBound(pod, node, in);
    if (bound > 0 && bound <= args_.max_moves_per_pod) candidates_.push_back({bound, node.index});
  }
  std::stable_sort(
      candidates_.begin(), candidates_.end(),
      [](const Candidate& a, const Candidate& b) { return a.lower_bound < b.lower_bound; });
}

std::vector<Consolidation::NodeMoves> Consolidation::Plans(
    const framework::CycleState& state, const api::Pod& pod, const framework::Snapshot& snapshot,
    const framework::PostFilterContext& context, size_t& next, Status& why) {
  std::vector<NodeMoves> plans;
  size_t fewest = std::numeric_limits<size_t>::max();
  for (; next < candidates_.size(); ++next) {
    const Candidate& c = candidates_[next];
    const auto bound = static_cast<size_t>(c.lower_bound);
    if (bound > fewest || (bound == fewest && plans.size() >= kPlansCompared)) break;
    NodeMoves m;
    m.node = c.node;
    Status s = MovesOn(state, pod, snapshot.at(c.node), context, m);
    if (s.ok()) {
      fewest = std::min(fewest, m.moves.size());
      plans.push_back(std::move(m));
    } else if (!s.reason().empty() && why.ok()) {
      why = s;
    }
  }
  std::stable_sort(plans.begin(), plans.end(), [](const NodeMoves& a, const NodeMoves& b) {
    if (a.moves.size() != b.moves.size()) return a.moves.size() < b.moves.size();
    return a.cost < b.cost;
  });
  return plans;
}

Status Consolidation::MovesOn(const framework::CycleState& state, const api::Pod& pod,
                              const NodeInfo& node, const framework::PostFilterContext& context,
                              NodeMoves& out) {
  movable_.clear();
  for (uint32_t i : OptInOf(node).pods) {
    const api::Pod& running = *node.pods[i];
    if (Movable(running, pod, args_) &&
        std::find(pinned_.begin(), pinned_.end(), &running) == pinned_.end()) {
      movable_.push_back(i);
    }
  }
  if (movable_.empty()) return Status::Unschedulable("");
  scratch_ = node;
  for (auto it = movable_.rbegin(); it != movable_.rend(); ++it) {
    scratch_.RemovePodAt(*it);  // descending: the pods before *it keep their index
  }
  Status fits = context.RunFilters(state, pod, scratch_);
  if (!fits.ok()) return fits.IsError() ? fits : Status::Unschedulable("");
  std::stable_sort(movable_.begin(), movable_.end(), [&node](size_t a, size_t b) {
    return CostlierToRestart(*node.pods[a], *node.pods[b]);
  });
  for (size_t i : movable_) {
    const auto devices =
        i < node.pod_devices.size() ? node.pod_devices[i] : framework::PodDevices{};
    (void)scratch_.AddPod(node.pods[i], devices);
    if (context.RunFilters(state, pod, scratch_).ok()) continue;  // stays
    scratch_.RemovePodAt(scratch_.pods.size() - 1);               // AddPod appended it
    out.moves.push_back(node.pods[i]);
    out.cost += DeletionCost(*node.pods[i]);
  }
  if (static_cast<int32_t>(out.moves.size()) > args_.max_moves_per_pod) {
    return Status::WithMessage(Code::kUnschedulable, "room needs " +
                                                         std::to_string(out.moves.size()) +
                                                         " pods moved, more than maxMovesPerPod " +
                                                         std::to_string(args_.max_moves_per_pod));
  }
  return Status::Success();
}

std::vector<std::string> Consolidation::Destinations(const NodeMoves& moves,
                                                     const framework::Snapshot& snapshot,
                                                     const framework::PostFilterContext& context,
                                                     size_t& stuck) {
  if (by_free_.empty()) {  // once per PostFilter: every node, the least free milli-GPU first
    for (const NodeInfo& node : snapshot.nodes()) {
      if (node.valid()) by_free_.emplace_back(node.FreeGpuMilli(), node.index);
    }
    std::sort(by_free_.begin(), by_free_.end());
  }
  planned_.clear();  // the destinations with the replacements planned there so far
  std::vector<std::string> out;
  for (stuck = 0; stuck < moves.moves.size(); ++stuck) {
    const api::PodPtr& moved = moves.moves[stuck];
    // Its replacement: the same spec, not bound yet.
    auto replacement = std::make_shared<api::Pod>(*moved);
    replacement->node_name.clear();
    replacement->meta.uid += "/replacement";
    framework::CycleState state;
    if (!context.PreFilterFor(state, *replacement).ok()) return {};
    const auto first = std::lower_bound(
        by_free_.begin(), by_free_.end(),
        std::pair<int64_t, NodeIndex>(replacement->gpu.TotalMilli(), framework::kNoNode));
    NodeInfo* best = nullptr;
    for (auto it = first; it != by_free_.end() && best == nullptr; ++it) {
      if (it->second == moves.node) continue;
      NodeInfo* node = PlannedCopy(it->second);
      const NodeInfo& as_is = node != nullptr ? *node : snapshot.at(it->second);
      if (!context.RunFiltersFor(state, *replacement, as_is).ok()) continue;
      best = node != nullptr ? node : &planned_.emplace_back(snapshot.at(it->second));
    }
    if (best == nullptr) return {};
    PlanOn(*best, std::move(replacement));
    out.emplace_back(best->name());
  }
  return out;
}

NodeInfo* Consolidation::PlannedCopy(NodeIndex node) {
  for (NodeInfo& n : planned_) {
    if (n.index == node) return &n;
  }
  return nullptr;
}

void Consolidation::PlanOn(NodeInfo& node, api::PodPtr replacement) {
  framework::PodDevices devices;
  if (!replacement->gpu.empty()) {
    if (auto a = api::ChooseDevicesBestFit(node.node->gpu, node.gpus, replacement->gpu)) {
      devices = framework::PodDevices::From(*a);
    }
  }
  (void)node.AddPod(std::move(replacement), devices);
}

const Consolidation::NodeOptIn& Consolidation::OptInOf(const NodeInfo& node) {
  const auto i = static_cast<size_t>(node.index);
  if (i >= opted_in_.size()) opted_in_.resize(i + 1);
  NodeOptIn& in = opted_in_[i];
  if (in.valid && in.generation == node.generation) return in;
  in = NodeOptIn{};
  in.valid = true;
  in.generation = node.generation;
  for (size_t p = 0; p < node.pods.size(); ++p) {
    const api::Pod& pod = *node.pods[p];
    if (!OptedIn(pod, args_)) continue;
    in.pods.push_back(static_cast<uint32_t>(p));
    in.gpu_milli += pod.gpu.TotalMilli();
    in.largest_gpu_milli = std::max(in.largest_gpu_milli, pod.gpu.TotalMilli());
    in.milli_cpu += pod.requests.milli_cpu;
    in.largest_milli_cpu = std::max(in.largest_milli_cpu, pod.requests.milli_cpu);
  }
  return in;
}

int32_t Consolidation::LowerBound(const api::Pod& pod, const NodeInfo& node, const NodeOptIn& in) {
  int64_t bound = 1;
  // Moves needed to free `deficit` when the movable pods hold `movable`, at most `largest` each;
  // false when even all of them free too little.
  auto need = [&bound](int64_t deficit, int64_t movable, int64_t largest) {
    if (deficit <= 0) return true;
    if (deficit > movable || largest <= 0) return false;
    bound = std::max(bound, (deficit + largest - 1) / largest);
    return true;
  };
  const int64_t gpu_deficit = pod.gpu.TotalMilli() - node.FreeGpuMilli();
  const int64_t cpu_deficit =
      pod.requests.milli_cpu - (node.node->allocatable.milli_cpu - node.requested.milli_cpu);
  if (!need(gpu_deficit, in.gpu_milli, in.largest_gpu_milli) ||
      !need(cpu_deficit, in.milli_cpu, in.largest_milli_cpu)) {
    return -1;
  }
  return static_cast<int32_t>(std::min<int64_t>(bound, std::numeric_limits<int32_t>::max()));
}

Status Consolidation::OverRate(int32_t recent) const {
  return Status::WithMessage(Code::kUnschedulable,
                             "consolidation: " + std::to_string(recent) +
                                 " pods moved in the last minute, the limit is " +
                                 std::to_string(args_.max_moves_per_minute));
}

int32_t Consolidation::MovesInLastMinute() {
  const common::TimePoint since = handle_.clock().Now() - std::chrono::minutes(1);
  while (!recent_moves_.empty() && recent_moves_.front() <= since) recent_moves_.pop_front();
  return static_cast<int32_t>(recent_moves_.size());
}

}  // namespace gpusched::plugins::consolidation
