// SPDX-License-Identifier: Apache-2.0
#include "src/plugins/gpu_fit/gpu_fit.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "src/api/gpu.h"
#include "src/api/gpu_devices.h"
#include "src/common/interner.h"
#include "src/common/strings.h"
#include "src/plugins/helper/args.h"
#include "src/plugins/helper/normalize.h"
#include "src/plugins/helper/queueing_hints.h"
#include "src/plugins/helper/resources.h"
#include "src/plugins/names.h"

namespace gpusched::plugins::gpu_fit {
namespace {

// BestFit's normalisation constants (FGD paper: 128 CPU cores, 8 GPUs per node).
constexpr int64_t kBestFitCpuMilli = 128000;
constexpr int64_t kBestFitGpuMilli = 8000;
// Neutral utilization score when the node's GPU utilization is unknown.
constexpr int64_t kUnknownUtilizationScore = 50;

const framework::StateKey kPreFilterKey{"GpuFit/PreFilter"};
const framework::StateKey kPreScoreKey{"GpuFit/PreScore"};

struct PreFilterState final : framework::StateData {
  api::GpuRequest request;
  PodPolicy policy;
  // The pod asks for whole GPUs as nvidia.com/gpu and a DeviceClass backs that resource: a node
  // that does not advertise it leaves the GPUs to DynamicResources (LeftToDra).
  bool dra_backed = false;
  // For each distinct node model atom of the snapshot: whether it satisfies request.models.
  // Sorted by atom id. Empty when the pod accepts any model.
  std::vector<std::pair<uint32_t, bool>> model_matches;
};

// helper::GpusLeftToDra with the class lookup done once, in PreFilter (Filter and Reserve).
bool LeftToDra(const PreFilterState* s, const framework::NodeInfo& node) {
  return s != nullptr && s->dra_backed && node.node->allocatable.Get(api::Names().nvidia_gpu) == 0;
}

bool ModelOk(const PreFilterState& s, common::Atom node_model) {
  if (s.request.models.empty()) return true;
  auto it = std::lower_bound(
      s.model_matches.begin(), s.model_matches.end(), node_model.id,
      [](const std::pair<uint32_t, bool>& e, uint32_t id) { return e.first < id; });
  if (it != s.model_matches.end() && it->first == node_model.id) return it->second;
  // A node absent from the PreFilter snapshot: compute directly (allocation-free).
  return helper::GpuModelMatchesAny(node_model, s.request.models);
}

int32_t HealthyGpus(const api::NodeGpuInfo& g) {
  const uint32_t present = g.count >= 32 ? ~0u : ((1u << g.count) - 1u);
  return g.count - std::popcount(g.unhealthy_mask & present);
}

// The most devices (replica requests: replicas) the node could ever give the request.
int64_t MostDevices(const api::NodeGpuInfo& g, const api::GpuRequest& req) {
  const int64_t healthy = HealthyGpus(g);
  return api::IsReplicaRequest(g, req) ? healthy * g.replicas : healthy;
}

std::string_view ModeName(ScoreMode m) { return m == ScoreMode::kBestFit ? "BestFit" : "Default"; }

std::optional<Pack> PackFromArg(std::string_view v) {
  if (v == "Binpack") return Pack::kBinpack;
  if (v == "Spread") return Pack::kSpread;
  return std::nullopt;
}

std::optional<Pack> PackFromAnnotation(std::string_view v) {
  if (v == "binpack") return Pack::kBinpack;
  if (v == "spread") return Pack::kSpread;
  return std::nullopt;
}

api::DevicePolicy DevicePolicyOf(Pack p) {
  return p == Pack::kSpread ? api::DevicePolicy::kSpread : api::DevicePolicy::kBinpack;
}

bool NeedsIsland(const PodPolicy& p, const api::GpuRequest& req) {
  return p.require_island && req.count > 1;
}

}  // namespace

struct GpuFit::PreScoreState final : framework::StateData {
  int64_t request_milli = 0;  // k * d; 0 when d is derived per node (memory-only shares)
  int64_t request_cpu = 0;    // c, millicores
  api::GpuRequest request;
  Pack node_policy = Pack::kBinpack;
};

common::StatusOr<PodPolicy> ResolvePodPolicy(const Args& args, const api::Pod& pod) {
  PodPolicy out{args.node_policy, args.gpu_policy, args.require_nvlink_island};
  if (const std::string* v = pod.meta.Annotation(kGpuPolicyAnnotation)) {
    const std::string_view text = common::Trim(*v);
    const size_t slash = text.find('/');
    std::optional<Pack> node = PackFromAnnotation(text.substr(0, slash));
    std::optional<Pack> gpu =
        slash == std::string_view::npos ? node : PackFromAnnotation(text.substr(slash + 1));
    if (!node || !gpu) {
      return common::InvalidArgumentError(
          "annotation " + std::string(kGpuPolicyAnnotation) + ": invalid value " +
          common::Quote(*v) + " (want binpack, spread or <node>/<gpu>, e.g. spread/binpack)");
    }
    out.node = *node;
    out.gpu = *gpu;
  }
  if (const std::string* v = pod.meta.Annotation(kNvlinkIslandAnnotation)) {
    const std::string_view text = common::Trim(*v);
    if (text == "required") {
      out.require_island = true;
    } else if (text == "preferred") {
      out.require_island = false;
    } else {
      return common::InvalidArgumentError("annotation " + std::string(kNvlinkIslandAnnotation) +
                                          ": invalid value " + common::Quote(*v) +
                                          " (want required or preferred)");
    }
  }
  return out;
}

common::StatusOr<Args> ParseArgs(const boost::json::value& raw) {
  Args out;
  GPUSCHED_RETURN_IF_ERROR(helper::ReadArgs(raw, [&](api::ObjectFields& f) {
    for (auto [field, slot] : {std::pair<std::string_view, Pack*>{"nodePolicy", &out.node_policy},
                               std::pair<std::string_view, Pack*>{"gpuPolicy", &out.gpu_policy}}) {
      if (std::optional<std::string_view> v = f.String(field)) {
        if (std::optional<Pack> p = PackFromArg(*v)) {
          *slot = *p;
        } else {
          f.Error(field, "unsupported value " + common::Quote(*v) + ", want Binpack or Spread");
        }
      }
    }
    if (std::optional<bool> v = f.Bool("requireNvlinkIsland")) out.require_nvlink_island = *v;
    if (std::optional<bool> v = f.Bool("hamiAnnotations")) out.hami_annotations = *v;
    const size_t errors_before_weights = f.reader().error_count();
    if (std::optional<int64_t> w = f.Int("fitWeight", 0, 100)) out.fit_weight = *w;
    if (std::optional<int64_t> w = f.Int("utilizationWeight", 0, 100)) out.utilization_weight = *w;
    if (f.reader().error_count() == errors_before_weights &&
        out.fit_weight + out.utilization_weight <= 0) {
      f.reader().Error(api::FieldPath::Text("fitWeight, utilizationWeight"), "must not both be 0");
    }
    if (std::optional<std::string_view> mode = f.String("scoreMode")) {
      if (*mode == ModeName(ScoreMode::kDefault)) {
        out.score_mode = ScoreMode::kDefault;
      } else if (*mode == ModeName(ScoreMode::kBestFit)) {
        out.score_mode = ScoreMode::kBestFit;
      } else {
        f.Error("scoreMode",
                "unsupported value " + common::Quote(*mode) + ", want Default or BestFit");
      }
    }
  }));
  return out;
}

common::StatusOr<framework::PluginPtr> GpuFit::Create(const boost::json::value& args,
                                                      framework::Handle& handle) {
  GPUSCHED_ASSIGN_OR_RETURN(Args parsed, ParseArgs(args));
  return framework::PluginPtr(std::make_unique<GpuFit>(parsed, &handle.clock(), handle.dra()));
}

std::string_view GpuFit::Name() const { return names::kGpuFit; }

const std::vector<common::Atom>& GpuFit::SnapshotModels(const framework::Snapshot& snapshot) {
  const uint64_t version = snapshot.node_set_version();
  if (version != 0 && &snapshot == models_snapshot_ && version == models_version_ &&
      snapshot.nodes().size() == models_slots_) {
    return models_;
  }
  models_.clear();
  uint32_t last = 0;
  bool have_last = false;
  for (const framework::NodeInfo& n : snapshot.nodes()) {
    if (!n.valid()) continue;
    const common::Atom model = n.node->gpu.model;
    if (have_last && model.id == last) continue;  // common case: runs of one model
    last = model.id;
    have_last = true;
    auto it = std::lower_bound(models_.begin(), models_.end(), model.id,
                               [](common::Atom e, uint32_t id) { return e.id < id; });
    if (it != models_.end() && it->id == model.id) continue;
    models_.insert(it, model);
  }
  models_snapshot_ = version == 0 ? nullptr : &snapshot;
  models_version_ = version;
  models_slots_ = snapshot.nodes().size();
  return models_;
}

framework::Status GpuFit::PreFilter(framework::CycleState& state, const api::Pod& pod,
                                    const framework::Snapshot& snapshot) {
  if (!pod.gpu_error.empty()) {
    return framework::Status::Unresolvable(common::Str(common::Intern(pod.gpu_error)));
  }
  if (pod.gpu.empty()) return framework::Status::Skip();
  common::StatusOr<PodPolicy> policy = ResolvePodPolicy(args_, pod);
  if (!policy.ok()) {
    return framework::Status::Unresolvable(common::Str(common::Intern(policy.status().message())));
  }
  auto s = std::make_unique<PreFilterState>();
  s->request = pod.gpu;
  s->policy = *policy;
  s->dra_backed = !pod.gpu.shared() && pod.requests.Get(api::Names().nvidia_gpu) > 0 &&
                  dra_ != nullptr &&
                  dra_->ExtendedResourceClass(common::Str(api::Names().nvidia_gpu));
  if (!s->request.models.empty()) {
    const std::vector<common::Atom>& models = SnapshotModels(snapshot);
    s->model_matches.reserve(models.size());
    for (common::Atom model : models) {  // sorted by id
      s->model_matches.emplace_back(model.id, helper::GpuModelMatchesAny(model, s->request.models));
    }
  }
  state.Write(kPreFilterKey, std::move(s));
  return framework::Status::Success();
}

framework::Status GpuFit::Filter(const framework::CycleState& state, const api::Pod& pod,
                                 const framework::NodeInfo& node) const {
  const PreFilterState* s = state.Get<PreFilterState>(kPreFilterKey);
  if (s == nullptr) {
    if (!pod.gpu_error.empty()) {
      return framework::Status::Error("GpuFit: PreFilter did not run for a pod with gpu_error");
    }
    if (pod.gpu.empty()) return framework::Status::Success();
    return framework::Status::Error("GpuFit: PreFilter state missing from CycleState");
  }
  if (LeftToDra(s, node)) return framework::Status::Success();
  const api::GpuRequest& req = s->request;
  const api::NodeGpuInfo& g = node.node->gpu;
  if (g.count <= 0) return framework::Status::Unresolvable(kReasonInsufficientGpu);
  if (!ModelOk(*s, g.model)) return framework::Status::Unresolvable(kReasonModelMismatch);
  if (req.min_device_memory_mib > 0 &&
      (g.memory_mib <= 0 || req.min_device_memory_mib > g.memory_mib)) {
    return framework::Status::Unresolvable(kReasonInsufficientGpuMemory);
  }
  if (req.shared() && !api::ResolveGpuShare(req, g)) {
    return framework::Status::Unresolvable(kReasonInsufficientGpuMemory);
  }
  if (req.count > MostDevices(g, req))
    return framework::Status::Unresolvable(kReasonInsufficientGpu);
  const bool island = NeedsIsland(s->policy, req);
  if (island && !g.nvlink_known) return framework::Status::Unresolvable(kReasonNvlinkUnknown);
  const bool fits = req.shared() || g.replicas > 1 ? api::GpuRequestFits(g, node.gpus, req)
                                                   : node.FreeWholeGpus() >= req.count;
  if (!fits) return framework::Status::Unschedulable(kReasonInsufficientGpu);
  if (island && !api::FitsInOneIsland(g, node.gpus, req)) {
    return framework::Status::Unschedulable(kReasonNoNvlinkIsland);
  }
  return framework::Status::Success();
}

framework::Status GpuFit::PreScore(framework::CycleState& state, const api::Pod& pod,
                                   const framework::Snapshot& /*snapshot*/,
                                   std::span<const framework::NodeIndex> /*feasible*/) {
  if (args_.score_mode == ScoreMode::kDefault && pod.gpu.empty()) {
    return framework::Status::Skip();
  }
  auto s = std::make_unique<PreScoreState>();
  s->request_milli = pod.gpu.TotalMilli();
  s->request_cpu = pod.requests.milli_cpu;
  s->request = pod.gpu;
  if (const PreFilterState* pf = state.Get<PreFilterState>(kPreFilterKey)) {
    s->node_policy = pf->policy.node;
  } else if (common::StatusOr<PodPolicy> p = ResolvePodPolicy(args_, pod); p.ok()) {
    s->node_policy = p->node;
  }
  state.Write(kPreScoreKey, std::move(s));
  return framework::Status::Success();
}

int64_t GpuFit::ScoreOne(const PreScoreState& s, const framework::NodeInfo& node) const {
  const int64_t free_milli = node.FreeGpuMilli();
  if (args_.score_mode == ScoreMode::kBestFit) {
    const api::ResourceList& alloc = node.node->allocatable;
    const int64_t cpu_left = alloc.milli_cpu - node.requested.milli_cpu - s.request_cpu;
    const int64_t gpu_left = free_milli - s.request_milli;
    // 100 * (1 - [cpu_left / 256000 + gpu_left / 16000]), exactly, rounded down.
    const int64_t denominator = 2 * kBestFitCpuMilli;
    const int64_t numerator =
        framework::kMaxNodeScore *
        (denominator - cpu_left - gpu_left * (denominator / (2 * kBestFitGpuMilli)));
    return helper::FloorDiv(numerator, denominator);
  }
  int64_t request_milli = s.request_milli;
  if ((s.request.shared() && s.request.milli == 0) || node.node->gpu.replicas > 1) {
    const std::optional<api::GpuShare> share = api::ResolveGpuShare(s.request, node.node->gpu);
    request_milli = share ? static_cast<int64_t>(s.request.count) * share->milli : 0;
  }
  int64_t fit = 0;
  if (s.node_policy == Pack::kSpread) {
    const int64_t total = static_cast<int64_t>(node.node->gpu.count) * api::kMilliPerGpu;
    if (total > 0) {
      fit = std::clamp<int64_t>(framework::kMaxNodeScore * (free_milli - request_milli) / total, 0,
                                framework::kMaxNodeScore);
    }
  } else if (free_milli > 0) {
    fit = std::min<int64_t>(framework::kMaxNodeScore,
                            framework::kMaxNodeScore * request_milli / free_milli);
  }
  int64_t util = kUnknownUtilizationScore;
  if (node.gpu_utilization >= 0) {
    const double u = std::min(node.gpu_utilization, 1.0);
    util = std::llround(static_cast<double>(framework::kMaxNodeScore) * (1.0 - u));
  }
  int64_t score = (args_.fit_weight * fit + args_.utilization_weight * util) /
                  (args_.fit_weight + args_.utilization_weight);
  // NVLink: a multi-GPU pod that would have to straddle islands of a node that publishes them
  // scores half.
  if (s.request.count > 1 && node.node->gpu.nvlink_known &&
      !api::FitsInOneIsland(node.node->gpu, node.gpus, s.request)) {
    score /= 2;
  }
  return score;
}

void GpuFit::ScoreNodes(const framework::CycleState& state, const api::Pod& /*pod*/,
                        const framework::Snapshot& snapshot,
                        std::span<const framework::NodeIndex> nodes, std::span<int64_t> out) const {
  const PreScoreState* s = state.Get<PreScoreState>(kPreScoreKey);
  framework::ScoreEach(snapshot, nodes, out, [this, s](const framework::NodeInfo& node) {
    return s == nullptr ? 0 : ScoreOne(*s, node);
  });
}

framework::Status GpuFit::NormalizeScore(const framework::CycleState& /*state*/,
                                         const api::Pod& /*pod*/, std::span<int64_t> scores) const {
  if (args_.score_mode == ScoreMode::kBestFit) helper::MinMaxNormalizeScore(scores);
  return framework::Status::Success();
}

framework::Status GpuFit::Reserve(framework::CycleState& state, const api::Pod& pod,
                                  const framework::NodeInfo& node) {
  if (pod.gpu.empty()) return framework::Status::Success();
  PodPolicy policy{args_.node_policy, args_.gpu_policy, args_.require_nvlink_island};
  const PreFilterState* pf = state.Get<PreFilterState>(kPreFilterKey);
  if (pf != nullptr) policy = pf->policy;
  if (LeftToDra(pf, node)) return framework::Status::Success();
  const bool island = NeedsIsland(policy, pod.gpu);
  std::optional<api::GpuAssignment> chosen =
      api::ChooseDevices(node.node->gpu, node.gpus, pod.gpu, DevicePolicyOf(policy.gpu), island);
  if (!chosen) {
    return framework::Status::Unschedulable(island ? kReasonNoNvlinkIsland
                                                   : kReasonInsufficientGpu);
  }
  if (args_.hami_annotations) {
    if (const std::string* reg = node.node->meta.Annotation(api::kHamiNodeRegisterAnnotation)) {
      common::Status s = WriteHamiAnnotations(state, pod, node, *reg, *chosen);
      if (!s.ok()) {
        return framework::Status::Unschedulable(common::Str(common::Intern(s.message())));
      }
    }
  }
  state.allocation().SetGpu(std::move(*chosen));
  return framework::Status::Success();
}

common::Status GpuFit::WriteHamiAnnotations(framework::CycleState& state, const api::Pod& pod,
                                            const framework::NodeInfo& node, const std::string& reg,
                                            const api::GpuAssignment& chosen) const {
  GPUSCHED_ASSIGN_OR_RETURN(std::vector<api::HamiDevice> devices, api::ParseHamiNodeRegister(reg));
  // The devices go to the first container that asks for nvidia.com/gpu (else the first one).
  int gpu_container = 0;
  const common::Atom gpu = api::Names().nvidia_gpu;
  for (size_t i = 0; i < pod.containers.size(); ++i) {
    const api::Container& c = pod.containers[i];
    if (c.limits.Get(gpu) > 0 || c.requests.Get(gpu) > 0) {
      gpu_container = static_cast<int>(i);
      break;
    }
  }
  GPUSCHED_ASSIGN_OR_RETURN(
      std::string allocate,
      api::FormatHamiDevicesToAllocate(chosen, devices, node.node->gpu.memory_mib,
                                       static_cast<int>(pod.containers.size()), gpu_container));
  const int64_t now =
      clock_ == nullptr
          ? 0
          : std::chrono::duration_cast<std::chrono::seconds>(clock_->Now().time_since_epoch())
                .count();
  ClearHamiAnnotations(state);
  auto& a = state.allocation().annotations;
  a.emplace_back(std::string(api::kHamiDevicesToAllocateAnnotation), std::move(allocate));
  a.emplace_back(std::string(api::kHamiVgpuNodeAnnotation), std::string(node.name()));
  a.emplace_back(std::string(api::kHamiVgpuTimeAnnotation), std::to_string(now));
  a.emplace_back(std::string(api::kHamiBindTimeAnnotation), std::to_string(now));
  a.emplace_back(std::string(api::kHamiBindPhaseAnnotation), "allocating");
  return common::Status::Ok();
}

void GpuFit::ClearHamiAnnotations(framework::CycleState& state) {
  std::erase_if(state.allocation().annotations, [](const auto& kv) {
    return kv.first == api::kHamiDevicesToAllocateAnnotation ||
           kv.first == api::kHamiVgpuNodeAnnotation || kv.first == api::kHamiVgpuTimeAnnotation ||
           kv.first == api::kHamiBindTimeAnnotation || kv.first == api::kHamiBindPhaseAnnotation;
  });
}

void GpuFit::Unreserve(framework::CycleState& state, const api::Pod& /*pod*/,
                       std::string_view /*node*/) {
  state.allocation().ClearGpu();
  ClearHamiAnnotations(state);
}

using framework::ClusterEvent;
using framework::ClusterEventWithHint;
using framework::EventObjects;
using framework::EventResource;
using framework::QueueingHint;

std::vector<ClusterEventWithHint> GpuFit::EventsToRegister() const { return helper::GpuEvents(); }

}  // namespace gpusched::plugins::gpu_fit
