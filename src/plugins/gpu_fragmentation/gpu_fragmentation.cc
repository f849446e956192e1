// SPDX-License-Identifier: Apache-2.0
#include "src/plugins/gpu_fragmentation/gpu_fragmentation.h"

#include <algorithm>
#include <array>
#include <boost/container/small_vector.hpp>
#include <boost/json.hpp>
#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "src/api/gpu.h"
#include "src/api/gpu_devices.h"
#include "src/common/strings.h"
#include "src/plugins/gpu_fragmentation/model_pressure.h"
#include "src/plugins/gpu_fragmentation/score_memo.h"
#include "src/plugins/helper/args.h"
#include "src/plugins/helper/normalize.h"
#include "src/plugins/helper/queueing_hints.h"
#include "src/plugins/helper/resources.h"
#include "src/plugins/names.h"

namespace gpusched::plugins::gpu_fragmentation {
namespace {

using internal::KeyOf;
using internal::ModelPressure;
using internal::NodeKey;
using internal::ScoreMemo;

// The paper's normalisers: the largest node has 128 cores and 8 GPUs.
constexpr int64_t kNormCpuMilli = 128000;
constexpr int64_t kNormGpuMilli = 8000;
// Learned exact scores: -Δ in 1/16 milli, times kTieRange, plus a tie-break in [0, kTieRange).
constexpr double kDeltaScale = 16.0;
constexpr int64_t kTieRange = int64_t{1} << 20;
// |primary| bound of Learned exact scores: 2^40 * kTieRange = 2^60 < INT64_MAX.
constexpr double kMaxPrimary = 1099511627776.0;
// Learned: Δ steps subtracted from a GPU node's primary key for a pod that asks for no GPU, so
// that every node without GPUs that fits the pod beats every GPU node (the order among GPU nodes
// is unchanged, so where only GPU nodes fit, the pod still goes where it strands the least GPU).
constexpr int64_t kGpuNodePenalty = int64_t{1} << 20;

const framework::StateKey kStateKey{"GpuFragmentation/PreScore"};

bool UsesFragmentation(Policy p) { return p == Policy::kFgd || p == Policy::kLearned; }

// A shared request that gives only a memory share: its milli is resolved per node.
bool MemoryOnlyShare(const api::GpuRequest& g) { return g.count > 0 && g.milli == 0; }

// A node's state for the math: idle milli of healthy devices, free CPU.
NodeView ViewOf(const framework::NodeInfo& node) {
  NodeView v;
  const api::NodeGpuInfo& g = node.node->gpu;
  v.gpus = std::min<int32_t>(g.count, api::kMaxGpusPerNode);
  for (int i = 0; i < v.gpus; ++i) {
    const auto idx = static_cast<size_t>(i);
    v.idle[idx] = g.Healthy(i) ? std::max(0, api::kMilliPerGpu - node.gpus[idx].used_milli) : 0;
  }
  v.free_cpu = node.node->allocatable.milli_cpu - node.requested.milli_cpu;
  return v;
}

bool WholeFree(const framework::NodeInfo& node, int i) {
  const auto& d = node.gpus[static_cast<size_t>(i)];
  return node.node->gpu.Healthy(i) && d.used_milli == 0 && d.used_memory_mib == 0;
}

// Devices chosen for a pod on one node, with the Δ they cause (FGD/Learned).
struct Choice {
  bool ok = false;
  double delta = 0;
  // Inline up to one entry per GPU; only a pod asking more replicas of shared GPUs allocates.
  boost::container::small_vector<int8_t, api::kMaxGpusPerNode> devices;
  std::span<const int8_t> span() const { return {devices.data(), devices.size()}; }
};

// Lowest-index devices that fit a non-shared (or multi-device) request.
Choice LowestFitting(const framework::NodeInfo& node, const api::GpuRequest& req) {
  Choice c;
  const api::NodeGpuInfo& g = node.node->gpu;
  for (int i = 0; i < g.count && std::cmp_less(c.devices.size(), req.count); ++i) {
    const bool fits = req.milli >= api::kMilliPerGpu
                          ? WholeFree(node, i)
                          : api::DeviceFits(g, node.gpus[static_cast<size_t>(i)], i, req.milli,
                                            req.share_memory_mib);
    if (fits) c.devices.push_back(static_cast<int8_t>(i));
  }
  c.ok = std::cmp_greater_equal(c.devices.size(), req.count);
  return c;
}

// Whole or multi-device requests: on a node that publishes NVLink islands, the devices of one
// island when one has room (api::ChooseDevices, the island with the fewest fitting
// devices; GpuFit's Filter has already rejected nodes where a required island does not fit);
// otherwise the lowest-index fitting devices. Which whole free devices are taken does not change
// Δ, so this never changes a score.
// Replicas of shared GPUs (api::IsReplicaRequest on the pod's request, `req` being resolved) are
// chosen as the device plugin does (api::ChooseDevices), several from one GPU when needed.
Choice IslandAware(const framework::NodeInfo& node, const api::GpuRequest& pod_req,
                   const api::GpuRequest& req) {
  const bool replicas = api::IsReplicaRequest(node.node->gpu, pod_req);
  if (!replicas && (req.count <= 1 || !node.node->gpu.nvlink_known)) {
    return LowestFitting(node, req);
  }
  Choice c;
  const std::optional<api::GpuAssignment> a =
      api::ChooseDevices(node.node->gpu, node.gpus, pod_req, api::DevicePolicy::kBinpack);
  if (!a) return c;
  c.devices.assign(a->devices.begin(), a->devices.end());
  c.ok = std::cmp_greater_equal(c.devices.size(), req.count);
  return c;
}

}  // namespace

struct GpuFragmentation::Tables {
  std::vector<TypicalPod> types;
  // Distinct node model atom ids of the snapshot (sorted) and, per model, one byte per type: may
  // the type use it.
  std::vector<uint32_t> model_ids;
  std::vector<uint8_t> allowed;
  // Learned: per row of model_ids, the model's pressure (ModelPressure, 0..1); empty when none.
  std::vector<double> pressure;
};

struct GpuFragmentation::PodState final : framework::StateData {
  PackOverride pack;
  Policy policy = Policy::kLearned;
  int64_t cpu = 0;
  api::GpuRequest gpu;
  // FGD/Learned: M and what is derived from it and the node models (shared by the pods scored
  // between two refreshes); null for the other policies.
  std::shared_ptr<const Tables> tables;
  // Learned: the pod's Δ step in 1/16 milli-GPU (DeltaStep).
  int64_t delta_step = kDefaultDeltaQuantum;
  // GpuClustering: this pod's tag (0 none, 1 share-gpu, 1 + count otherwise).
  int32_t tag = 0;
};

namespace {

int32_t ClusterTag(const api::GpuRequest& g) {
  if (g.empty()) return 0;
  if (g.shared()) return 1;
  return 1 + g.count;
}

// The allowed bytes for `node`'s model; falls back to `scratch` for a model PreScore did not see.
std::span<const uint8_t> AllowedFor(const GpuFragmentation::PodState& s,
                                    const framework::NodeInfo& node,
                                    std::array<uint8_t, kMaxTypes>& scratch) {
  const GpuFragmentation::Tables& t = *s.tables;
  const size_t m = t.types.size();
  const common::Atom model = node.node->gpu.model;
  auto it = std::lower_bound(t.model_ids.begin(), t.model_ids.end(), model.id);
  if (it != t.model_ids.end() && *it == model.id) {
    const size_t row = static_cast<size_t>(it - t.model_ids.begin());
    return {t.allowed.data() + row * m, m};
  }
  for (size_t i = 0; i < m; ++i) {
    scratch[i] =
        t.types[i].models.empty() || helper::GpuModelMatchesAny(model, t.types[i].models) ? 1 : 0;
  }
  return {scratch.data(), m};
}

// FGD/Learned: the devices of the best Δ on `node` and that Δ. Allocation-free.
Choice EvaluateFragmentation(const GpuFragmentation::PodState& s, const framework::NodeInfo& node) {
  std::array<uint8_t, kMaxTypes> allowed_scratch{};
  std::array<TypeAggregate, kMaxTypes> agg{};
  const NodeView view = ViewOf(node);
  const std::span<const uint8_t> allowed = AllowedFor(s, node, allowed_scratch);
  const std::vector<TypicalPod>& types = s.tables->types;
  NodeFragmentation frag(types, allowed, std::span<TypeAggregate>(agg.data(), types.size()), view);
  const api::GpuRequest req = api::ResolvedOnNode(s.gpu, node.node->gpu);
  if (req.empty()) {
    Choice c;
    c.ok = true;
    c.delta = frag.Delta(s.cpu, 0, {});
    return c;
  }
  if (req.count == 1 && req.milli < api::kMilliPerGpu) {
    Choice best;
    int32_t best_idle = 0;
    // Δ depends on the device only through its idle milli, and an earlier device of equal Δ and
    // idle wins under both tie rules: a device whose idle milli was already evaluated is skipped.
    std::array<int32_t, api::kMaxGpusPerNode> evaluated{};
    size_t num_evaluated = 0;
    const api::NodeGpuInfo& g = node.node->gpu;
    for (int i = 0; i < view.gpus; ++i) {
      const auto idx = static_cast<size_t>(i);
      if (!api::DeviceFits(g, node.gpus[idx], i, req.milli, req.share_memory_mib)) continue;
      const auto seen_end = evaluated.begin() + static_cast<std::ptrdiff_t>(num_evaluated);
      if (std::find(evaluated.begin(), seen_end, view.idle[idx]) != seen_end) continue;
      evaluated[num_evaluated++] = view.idle[idx];
      const int8_t dev = static_cast<int8_t>(i);
      const double delta = frag.Delta(s.cpu, req.milli, std::span<const int8_t>(&dev, 1));
      const int32_t idle = view.idle[idx];
      bool better = !best.ok || delta < best.delta;
      // Ties: FGD keeps the first index; Learned takes the fullest device (best fit).
      if (!better && s.policy == Policy::kLearned && delta == best.delta && idle < best_idle) {
        better = true;
      }
      if (better) {
        best.ok = true;
        best.delta = delta;
        best.devices.assign(1, dev);
        best_idle = idle;
      }
    }
    return best;
  }
  Choice c = IslandAware(node, s.gpu, req);
  if (c.ok) c.delta = frag.Delta(s.cpu, req.milli, c.span());
  return c;
}

// Spread device choice: a shared request takes the fitting device with the most free milli
// (lowest index on ties); whole GPUs take the lowest-index free devices.
std::optional<api::GpuAssignment> ChooseDevicesSpread(const framework::NodeInfo& node,
                                                      const api::GpuRequest& pod_req) {
  const api::GpuRequest req = api::ResolvedOnNode(pod_req, node.node->gpu);
  api::GpuAssignment out;
  out.milli = req.milli;
  out.memory_mib = req.share_memory_mib;
  if (req.count == 1 && req.milli < api::kMilliPerGpu) {
    const api::NodeGpuInfo& g = node.node->gpu;
    int best = -1;
    int32_t best_used = api::kMilliPerGpu + 1;
    for (int i = 0; i < g.count; ++i) {
      const auto& d = node.gpus[static_cast<size_t>(i)];
      if (!api::DeviceFits(g, d, i, req.milli, req.share_memory_mib)) continue;
      if (d.used_milli < best_used) {
        best_used = d.used_milli;
        best = i;
      }
    }
    if (best < 0) return std::nullopt;
    out.devices.push_back(static_cast<int8_t>(best));
    return out;
  }
  if (api::IsReplicaRequest(node.node->gpu, pod_req)) {
    return api::ChooseDevices(node.node->gpu, node.gpus, pod_req, api::DevicePolicy::kSpread);
  }
  const Choice c = LowestFitting(node, req);
  if (!c.ok) return std::nullopt;
  out.devices.assign(c.span().begin(), c.span().end());
  return out;
}

// Learned's CPU cost of placing a pod of `cpu` milli-CPU on a node with `free_cpu` free before and
// `idle_after` idle GPU milli after the placement: weight * cpu * I' / C', where C' is the free CPU
// left (at least 1 milli). I'/C' is the idle GPU that each remaining milli-CPU of the node has to
// serve, so the term is the idle GPU whose CPU the pod takes: it steers CPU-heavy pods (CPU-only
// ones above all) to nodes whose GPUs are used up or that are rich in CPU per idle GPU, before the
// node's CPU runs out under idle GPUs (the stranding that Δ sees only one pod ahead).
double CpuCost(int32_t weight_permille, int64_t cpu, int64_t free_cpu, int64_t idle_after) {
  if (weight_permille <= 0 || cpu <= 0 || idle_after <= 0) return 0;
  const int64_t cpu_left = std::max<int64_t>(free_cpu - cpu, 1);
  return static_cast<double>(weight_permille) / 1000.0 * static_cast<double>(cpu) *
         static_cast<double>(idle_after) / static_cast<double>(cpu_left);
}

// Learned's model cost of taking `milli` GPU milli on a node whose model has `pressure`: the
// expected share of that milli that pods which may use only some models will need later.
double ModelCost(int32_t weight_permille, int64_t milli, double pressure) {
  if (weight_permille <= 0 || milli <= 0 || pressure <= 0) return 0;
  return static_cast<double>(weight_permille) / 1000.0 * static_cast<double>(milli) * pressure;
}

// Learned's utilization cost of taking `milli` GPU milli on a node whose GPUs are measured busy
// at `utilization` (0..1, DCGM through Prometheus; negative when unknown, then no cost): new
// work goes to GPUs that are idle in fact, not only unreserved.
double UtilizationCost(int32_t weight_permille, int64_t milli, double utilization) {
  if (weight_permille <= 0 || milli <= 0 || utilization <= 0) return 0;
  return static_cast<double>(weight_permille) / 1000.0 * static_cast<double>(milli) *
         std::min(utilization, 1.0);
}

// The pressure PreScore computed for `node`'s model (0 for a model it did not see).
double PressureOf(const GpuFragmentation::PodState& s, const framework::NodeInfo& node) {
  if (s.tables == nullptr || s.tables->pressure.empty()) return 0;
  const GpuFragmentation::Tables& t = *s.tables;
  const uint32_t id = node.node->gpu.model.id;
  auto it = std::lower_bound(t.model_ids.begin(), t.model_ids.end(), id);
  if (it == t.model_ids.end() || *it != id) return 0;
  return t.pressure[static_cast<size_t>(it - t.model_ids.begin())];
}

// Learned's Δ step for a pod, in 1/16 milli-GPU: differences in cost below it are not told apart,
// and the packing tie-break decides between them. For a GPU pod it grows with what the pod takes
// (deltaQuantumPermille of its GPU milli, at least deltaQuantum): a 0.1-GPU share is placed by
// 50 milli-GPU differences, an 8-GPU pod by 2-GPU ones. A pod without GPUs changes Δ only
// through the CPU it takes, and is placed in cpuPodDeltaQuantum steps, which lets packing decide
// more often (fewer nodes with their CPU partly used under idle GPUs).
int64_t DeltaStep(const Args& a, const api::GpuRequest& gpu) {
  if (gpu.empty()) return a.cpu_pod_delta_quantum;
  const int64_t relative = gpu.TotalMilli() * 16 * a.delta_quantum_permille / 1000;
  return std::max(a.delta_quantum, relative);
}

// Learned's key: the primary (Δ + costs, in steps; higher is better) in the high bits, then the
// packing tie-break: less idle GPU left, then less free CPU left.
int64_t LearnedKey(int64_t primary, int64_t idle_after, int64_t cpu_after) {
  const int64_t idle = std::clamp<int64_t>(idle_after, 0, 16000);
  const int64_t cpu = std::clamp<int64_t>(cpu_after, 0, 255999);
  const int64_t tie = (16000 - idle) * 64 + (255999 - cpu) / 4096;
  return primary * kTieRange + std::min<int64_t>(tie, kTieRange - 1);
}

int64_t SigmoidScore(double delta) {
  const double v = 100.0 / (1.0 + std::exp(delta / 1000.0));
  return static_cast<int64_t>(std::floor(v));
}

// GpuClustering: 25 * used share of the node's GPU, plus 75 when only pods of this pod's tag are
// there, 50 when others are too, 25 when no tagged pod is.
int64_t GpuClusteringScore(const GpuFragmentation::PodState& s, const framework::NodeInfo& node,
                           int64_t idle) {
  if (s.tag == 0) return 0;
  const int64_t b = 25 * (kNormGpuMilli - idle) / kNormGpuMilli;
  bool same = false;
  bool other = false;
  for (const api::PodPtr& p : node.pods) {
    const int32_t t = ClusterTag(p->gpu);
    if (t == 0) continue;
    (t == s.tag ? same : other) = true;
  }
  if (same && !other) return b + 75;
  if (same) return b + 50;
  if (!other) return b + 25;
  return b;
}

// GpuPacking: prefer nodes whose partly used GPUs take the pod (the fuller the better), then those
// where it opens the fewest free GPUs, then empty nodes (the fewer GPUs, the better). `gpu` is the
// request resolved on the node.
int64_t GpuPackingScore(const GpuFragmentation::PodState& s, const framework::NodeInfo& node,
                        const api::GpuRequest& gpu) {
  if (s.gpu.empty()) return 0;
  const api::NodeGpuInfo& g = node.node->gpu;
  int32_t free_whole = 0;
  for (int i = 0; i < g.count; ++i) free_whole += WholeFree(node, i) ? 1 : 0;
  if (free_whole == g.count) return 33 - free_whole;
  // Chosen GPUs: ascending free milli, the first k with R >= d.
  int32_t chosen = 0;
  int32_t fully_free_chosen = 0;
  int64_t sum = 0;
  std::array<int32_t, api::kMaxGpusPerNode> order{};
  int32_t n = 0;
  for (int i = 0; i < g.count; ++i) {
    if (!g.Healthy(i)) continue;
    if (api::kMilliPerGpu - node.gpus[static_cast<size_t>(i)].used_milli < gpu.milli) continue;
    order[static_cast<size_t>(n++)] = i;
  }
  std::sort(order.begin(), order.begin() + n, [&node](int32_t a, int32_t b) {
    const int32_t ua = node.gpus[static_cast<size_t>(a)].used_milli;
    const int32_t ub = node.gpus[static_cast<size_t>(b)].used_milli;
    return ua != ub ? ua > ub : a < b;
  });
  for (int32_t k = 0; k < n && chosen < s.gpu.count; ++k) {
    const int32_t i = order[static_cast<size_t>(k)];
    const int32_t free = api::kMilliPerGpu - node.gpus[static_cast<size_t>(i)].used_milli;
    ++chosen;
    if (free == api::kMilliPerGpu) ++fully_free_chosen;
    sum += free * 100 / api::kMilliPerGpu;
  }
  if (fully_free_chosen >= 1) return std::max<int64_t>(50 - fully_free_chosen, 33);
  return std::max<int64_t>(100 - sum / 10, 50);
}

// Learned's terms for one node, all in milli-GPU: its key is built from them (LearnedScore) and
// explain puts them in words (ExplainLearned).
struct LearnedTerms {
  bool fits = false;  // the pod's GPUs fit the node's devices (else the key is 0)
  double delta = 0;   // Δ: the change of the node's expected fragmentation
  double cpu = 0;     // CpuCost
  double model = 0;   // ModelCost
  double utilization = 0;
  int64_t idle_after = 0;  // GPU milli idle after the placement
  int64_t cpu_after = 0;   // free CPU milli after
  double Cost() const { return delta + cpu + model + utilization; }
};

LearnedTerms LearnedTermsOf(const GpuFragmentation::PodState& s, const Args& args,
                            const framework::NodeInfo& node) {
  LearnedTerms t;
  const int64_t free_cpu = node.node->allocatable.milli_cpu - node.requested.milli_cpu;
  const int64_t idle = node.FreeGpuMilli();
  const int64_t req_milli = api::ResolvedOnNode(s.gpu, node.node->gpu).TotalMilli();
  t.idle_after = idle - req_milli;
  t.cpu_after = free_cpu - s.cpu;
  if (node.node->gpu.count == 0 && s.gpu.empty()) {
    // No GPU on the node: F is 0 before and after, so Δ and every cost are 0 and only the
    // packing tie-break remains (the general path below gives the same key, slower).
    t.fits = true;
    return t;
  }
  const Choice c = EvaluateFragmentation(s, node);
  if (!c.ok) return t;
  t.fits = true;
  t.delta = c.delta;
  t.cpu = CpuCost(args.cpu_cost_permille, s.cpu, free_cpu, t.idle_after);
  t.model = ModelCost(args.model_cost_permille, req_milli, PressureOf(s, node));
  t.utilization = UtilizationCost(args.utilization_cost_permille, req_milli, node.gpu_utilization);
  return t;
}

// Learned's primary key: -(Δ + costs) in the pod's Δ steps, a GPU node losing kGpuNodePenalty
// steps for a pod without GPUs.
int64_t LearnedPrimary(const GpuFragmentation::PodState& s, const framework::NodeInfo& node,
                       const LearnedTerms& t) {
  // Clamped before the conversion so that primary * kTieRange stays inside int64 whatever the
  // pod asks for (the CPU cost grows with the pod's CPU).
  int64_t primary = static_cast<int64_t>(
      std::clamp(std::floor(-t.Cost() * kDeltaScale / static_cast<double>(s.delta_step)),
                 -kMaxPrimary, kMaxPrimary));
  if (s.gpu.empty() && node.node->gpu.count > 0) primary -= kGpuNodePenalty;
  return primary;
}

int64_t LearnedScore(const GpuFragmentation::PodState& s, const Args& args,
                     const framework::NodeInfo& node) {
  const LearnedTerms t = LearnedTermsOf(s, args, node);
  if (!t.fits) return 0;
  return LearnedKey(LearnedPrimary(s, node, t), t.idle_after, t.cpu_after);
}

int64_t ScoreOne(const GpuFragmentation::PodState& s, const Args& args,
                 const framework::NodeInfo& node) {
  if (s.policy == Policy::kLearned && s.pack.node == Pack::kNone) {
    return LearnedScore(s, args, node);
  }
  const int64_t free_cpu = node.node->allocatable.milli_cpu - node.requested.milli_cpu;
  const int64_t idle = node.FreeGpuMilli();
  const api::GpuRequest gpu = api::ResolvedOnNode(s.gpu, node.node->gpu);
  const int64_t req_milli = gpu.TotalMilli();
  if (s.pack.node != Pack::kNone) {
    const int64_t total = static_cast<int64_t>(node.node->gpu.count) * api::kMilliPerGpu;
    if (total <= 0) return 0;
    const int64_t used_after = std::clamp<int64_t>(total - idle + req_milli, 0, total);
    const int64_t packed = framework::kMaxNodeScore * used_after / total;
    return s.pack.node == Pack::kBinpack ? packed : framework::kMaxNodeScore - packed;
  }
  switch (s.policy) {
    case Policy::kRandom:
      return 0;  // all feasible nodes tie; the framework picks one uniformly at random
    case Policy::kFgd: {
      const Choice c = EvaluateFragmentation(s, node);
      return c.ok ? SigmoidScore(c.delta) : 0;
    }
    case Policy::kLearned: return LearnedScore(s, args, node);  // (taken above)
    case Policy::kBestFit: {
      const int64_t cpu_left = free_cpu - s.cpu;
      const int64_t gpu_left = idle - req_milli;
      const int64_t den = 2 * kNormCpuMilli;
      const int64_t num =
          framework::kMaxNodeScore * (den - cpu_left - gpu_left * (den / (2 * kNormGpuMilli)));
      return helper::FloorDiv(num, den);
    }
    case Policy::kDotProd: {
      const double dot = (static_cast<double>(free_cpu) / kNormCpuMilli) *
                             (static_cast<double>(s.cpu) / kNormCpuMilli) +
                         (static_cast<double>(idle) / kNormGpuMilli) *
                             (static_cast<double>(req_milli) / kNormGpuMilli);
      return static_cast<int64_t>(std::floor(100.0 * (1.0 - 0.5 * dot)));
    }
    case Policy::kGpuClustering: return GpuClusteringScore(s, node, idle);
    case Policy::kGpuPacking: return GpuPackingScore(s, node, gpu);
  }
  return 0;
}

// `milli` milli-GPU as GPUs, two decimals ("0.25"); `sign`: "+0.25" for positive values.
std::string Gpus(double milli, bool sign = false) {
  char buf[32];
  std::snprintf(buf, sizeof buf, sign ? "%+.2f" : "%.2f", milli / 1000.0);
  return buf;
}

// Learned's key in words: "cost 0.40 GPU (fragmentation +0.15, model 0.25, CPU 0.00,
// utilization 0.00) = 8 steps of 0.05 GPU; then 3.50 GPU idle, 12.0 CPU free after".
std::string ExplainLearned(const GpuFragmentation::PodState& s, const Args& args,
                           const framework::NodeInfo& node) {
  const LearnedTerms t = LearnedTermsOf(s, args, node);
  if (!t.fits) return "the pod's GPUs fit no set of this node's devices";
  char cpu_after[32];
  std::snprintf(cpu_after, sizeof cpu_after, "%.1f", static_cast<double>(t.cpu_after) / 1000.0);
  const std::string after = "then " + Gpus(static_cast<double>(t.idle_after)) + " GPU idle, " +
                            cpu_after + " CPU free after";
  if (node.node->gpu.count == 0 && s.gpu.empty()) return "no GPU here, no cost; " + after;
  int64_t steps = -LearnedPrimary(s, node, t);
  std::string penalty;
  if (s.gpu.empty() && node.node->gpu.count > 0) {
    steps -= kGpuNodePenalty;
    penalty = " + 2^20 steps (a pod without GPUs on a GPU node)";
  }
  return "cost " + Gpus(t.Cost()) + " GPU (fragmentation " + Gpus(t.delta, true) + ", model " +
         Gpus(t.model) + ", CPU " + Gpus(t.cpu) + ", utilization " + Gpus(t.utilization) +
         ") = " + std::to_string(steps) + (steps == 1 ? " step of " : " steps of ") +
         Gpus(static_cast<double>(s.delta_step) / kDeltaScale) + " GPU" + penalty + "; " + after;
}

}  // namespace

GpuFragmentation::GpuFragmentation(Args args, const framework::DraView* dra)
    : args_(WithDefaults(args)),
      dra_(dra),
      learner_(static_cast<double>(args_.decay_ppm) / 1e6, args_.max_types,
               static_cast<double>(args_.coverage_percent) / 100.0),
      random_(args_.seed) {}

common::StatusOr<framework::PluginPtr> GpuFragmentation::Create(const boost::json::value& args,
                                                                framework::Handle& handle) {
  GPUSCHED_ASSIGN_OR_RETURN(Args parsed, ParseArgs(args));
  return framework::PluginPtr(std::make_unique<GpuFragmentation>(parsed, handle.dra()));
}

std::string_view GpuFragmentation::Name() const { return names::kGpuFragmentation; }

bool GpuFragmentation::Learns() const {
  return UsesFragmentation(args_.policy) && args_.typical_pods.empty();
}

framework::Status GpuFragmentation::PreFilter(framework::CycleState& /*state*/, const api::Pod& pod,
                                              const framework::Snapshot& /*snapshot*/) {
  // A memory-only share (milli 0) has no compute share until a node is chosen: Reserve learns it
  // with the milli it resolves to there.
  if (Learns() && pod.gpu_error.empty() && !MemoryOnlyShare(pod.gpu)) {
    learner_.Observe(pod.requests.milli_cpu, pod.gpu);
    ++observed_since_refresh_;
  }
  return framework::Status::Success();
}

std::shared_ptr<const GpuFragmentation::Tables> GpuFragmentation::TablesFor(
    const api::Pod& pod, const framework::Snapshot& snapshot) {
  const bool learned_nothing = scoring_types_.empty();
  // Reused while neither M nor the node objects changed (node_set_version 0: unknown, rebuild).
  if (!learned_nothing && tables_ != nullptr && tables_version_ == scoring_version_ &&
      tables_snapshot_ == &snapshot && snapshot.node_set_version() != 0 &&
      tables_node_set_ == snapshot.node_set_version()) {
    return tables_;
  }
  auto t = std::make_shared<Tables>();
  t->types = scoring_types_;
  if (learned_nothing) {  // nothing learned yet (PreFilter disabled): the pod itself
    t->types.push_back(
        TypicalPod{pod.requests.milli_cpu, pod.gpu.count, pod.gpu.milli, pod.gpu.models, 1.0});
  }
  if (t->types.size() > static_cast<size_t>(kMaxTypes)) t->types.resize(kMaxTypes);
  for (const framework::NodeInfo& n : snapshot.nodes()) {
    if (!n.valid()) continue;
    const uint32_t id = n.node->gpu.model.id;
    auto it = std::lower_bound(t->model_ids.begin(), t->model_ids.end(), id);
    if (it == t->model_ids.end() || *it != id) t->model_ids.insert(it, id);
  }
  if (args_.policy == Policy::kLearned && args_.model_cost_permille > 0) {
    t->pressure = ModelPressure(t->types, t->model_ids, snapshot);
  }
  const size_t m = t->types.size();
  t->allowed.assign(t->model_ids.size() * m, 1);
  for (size_t row = 0; row < t->model_ids.size(); ++row) {
    const common::Atom model = common::Atom{t->model_ids[row]};
    for (size_t k = 0; k < m; ++k) {
      if (!t->types[k].models.empty()) {
        t->allowed[row * m + k] = helper::GpuModelMatchesAny(model, t->types[k].models) ? 1 : 0;
      }
    }
  }
  if (learned_nothing) return t;
  tables_ = std::move(t);
  tables_version_ = scoring_version_;
  tables_snapshot_ = &snapshot;
  tables_node_set_ = snapshot.node_set_version();
  return tables_;
}

bool GpuFragmentation::SameForTwinNodes(const framework::CycleState& /*state*/,
                                        const api::Pod& /*pod*/) const {
  return args_.policy != Policy::kGpuClustering;  // GpuClusteringScore reads node.pods
}

framework::Status GpuFragmentation::PreScore(framework::CycleState& state, const api::Pod& pod,
                                             const framework::Snapshot& snapshot,
                                             std::span<const framework::NodeIndex> /*feasible*/) {
  auto s = std::make_unique<PodState>();
  s->policy = args_.policy;
  s->cpu = pod.requests.milli_cpu;
  s->gpu = pod.gpu;
  s->tag = ClusterTag(pod.gpu);
  s->delta_step = DeltaStep(args_, pod.gpu);
  if (const std::string* v = pod.meta.Annotation(kGpuPolicyAnnotation)) {
    s->pack = ParsePackOverride(*v);
  }
  if (UsesFragmentation(args_.policy)) {
    if (!args_.typical_pods.empty()) {
      if (!scoring_types_valid_) {
        scoring_types_ = args_.typical_pods;
        scoring_types_valid_ = true;
        ++scoring_version_;
      }
    } else if (!scoring_types_valid_ || observed_since_refresh_ >= args_.refresh_pods ||
               learner_.observations() >= 2 * observations_at_refresh_ + 1) {
      scoring_types_ = learner_.Snapshot();
      scoring_types_valid_ = true;
      observed_since_refresh_ = 0;
      observations_at_refresh_ = learner_.observations();
      ++scoring_version_;
    }
    s->tables = TablesFor(pod, snapshot);
  }
  state.Write(kStateKey, std::move(s));
  return framework::Status::Success();
}

void GpuFragmentation::ScoreNodes(const framework::CycleState& state, const api::Pod& /*pod*/,
                                  const framework::Snapshot& snapshot,
                                  std::span<const framework::NodeIndex> nodes,
                                  std::span<int64_t> out) const {
  const PodState* s = state.Get<PodState>(kStateKey);
  if (s == nullptr || !UsesFragmentation(s->policy) || nodes.size() < 2) {
    for (size_t i = 0; i < nodes.size(); ++i) {
      out[i] = s == nullptr ? 0 : ScoreOne(*s, args_, snapshot.at(nodes[i]));
    }
    return;
  }
  thread_local ScoreMemo memo;  // at most half full: each call has at most nodes.size() states
  memo.Begin(nodes.size());
  NodeKey key;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const framework::NodeInfo& node = snapshot.at(nodes[i]);
    out[i] = KeyOf(node, key) ? memo.GetOrCompute(key, [&] { return ScoreOne(*s, args_, node); })
                              : ScoreOne(*s, args_, node);
  }
}

bool GpuFragmentation::HasNormalizeScore() const {
  return args_.policy == Policy::kBestFit || LearnedOnSharedScale();
}

framework::Status GpuFragmentation::NormalizeScore(const framework::CycleState& state,
                                                   const api::Pod& /*pod*/,
                                                   std::span<int64_t> scores) const {
  if (args_.policy == Policy::kBestFit) {
    helper::MinMaxNormalizeScore(scores);
    return framework::Status::Success();
  }
  const PodState* s = state.Get<PodState>(kStateKey);
  if (!LearnedOnSharedScale() || s == nullptr || s->pack.node != Pack::kNone || scores.empty()) {
    return framework::Status::Success();  // the per-pod override scores 0..100 already
  }
  // One point per Δ step below the best node: 100 for the nodes of the best step, 0 from 100
  // steps below it. The raw score, the exact key, breaks the ties (TieBreakRule).
  int64_t best = helper::FloorDiv(scores[0], kTieRange);
  for (int64_t v : scores) best = std::max(best, helper::FloorDiv(v, kTieRange));
  for (int64_t& v : scores) {
    const int64_t below = best - helper::FloorDiv(v, kTieRange);
    v = framework::kMaxNodeScore - std::min<int64_t>(below, framework::kMaxNodeScore);
  }
  return framework::Status::Success();
}

std::string GpuFragmentation::ExplainScore(const framework::CycleState& state,
                                           const api::Pod& /*pod*/, const framework::NodeInfo& node,
                                           int64_t raw) const {
  const PodState* s = state.Get<PodState>(kStateKey);
  if (s == nullptr) return "";
  if (s->pack.node != Pack::kNone) {
    return std::string(s->pack.node == Pack::kBinpack ? "binpack" : "spread") +
           " (gpusched.io/gpu-policy): " +
           std::to_string(s->pack.node == Pack::kBinpack ? raw : 100 - raw) +
           "% of the node's GPU used after";
  }
  switch (s->policy) {
    case Policy::kLearned: return ExplainLearned(*s, args_, node);
    case Policy::kFgd: {
      const Choice c = EvaluateFragmentation(*s, node);
      return c.ok ? "fragmentation " + Gpus(c.delta, true) + " GPU, 100/(1+e^(Δ/1000 milli))"
                  : "the pod's GPUs fit no set of this node's devices";
    }
    default: return "";  // the paper's formulas (docs/gpu-placement.md)
  }
}

framework::ScorePlugin::TieBreak GpuFragmentation::TieBreakRule() const {
  if (LearnedOnSharedScale()) return TieBreak::kRawScore;
  if (args_.tie_break == TieOrder::kNodeOrder && args_.policy != Policy::kRandom &&
      args_.policy != Policy::kLearned) {
    return TieBreak::kFirstNode;
  }
  return TieBreak::kNone;
}

framework::Status GpuFragmentation::Reserve(framework::CycleState& state, const api::Pod& pod,
                                            const framework::NodeInfo& node) {
  if (pod.gpu.empty() || helper::GpusLeftToDra(dra_, pod, *node.node)) {
    return framework::Status::Success();
  }
  const api::GpuRequest gpu = api::ResolvedOnNode(pod.gpu, node.node->gpu);
  std::optional<api::GpuAssignment> chosen;
  const PodState* s = state.Get<PodState>(kStateKey);
  const Pack gpu_pack = s != nullptr ? s->pack.gpu : Pack::kNone;
  if (gpu_pack == Pack::kSpread) {
    chosen = ChooseDevicesSpread(node, pod.gpu);
  } else if (gpu_pack == Pack::kBinpack) {
    chosen = api::ChooseDevicesBestFit(node.node->gpu, node.gpus, pod.gpu);
  } else if (UsesFragmentation(args_.policy) && s != nullptr) {
    const Choice c = EvaluateFragmentation(*s, node);
    if (c.ok) {
      api::GpuAssignment a;
      a.milli = gpu.milli;
      a.memory_mib = gpu.share_memory_mib;
      a.devices.assign(c.span().begin(), c.span().end());
      chosen = std::move(a);
    }
  } else if (args_.policy == Policy::kRandom && gpu.shared()) {
    const api::NodeGpuInfo& g = node.node->gpu;
    std::array<int8_t, api::kMaxGpusPerNode> fit{};
    uint64_t n = 0;
    for (int i = 0; i < g.count; ++i) {
      if (api::DeviceFits(g, node.gpus[static_cast<size_t>(i)], i, gpu.milli,
                          gpu.share_memory_mib)) {
        fit[n++] = static_cast<int8_t>(i);
      }
    }
    if (n > 0) {
      api::GpuAssignment a;
      a.milli = gpu.milli;
      a.memory_mib = gpu.share_memory_mib;
      a.devices.push_back(fit[random_.Uniform(n)]);
      chosen = std::move(a);
    }
  } else {
    chosen = api::ChooseDevicesBestFit(node.node->gpu, node.gpus, pod.gpu);
  }
  if (!chosen) return framework::Status::Unschedulable("Insufficient nvidia.com/gpu");
  if (Learns() && pod.gpu_error.empty() && MemoryOnlyShare(pod.gpu) && gpu.milli > 0) {
    learner_.Observe(pod.requests.milli_cpu, gpu);
    ++observed_since_refresh_;
  }
  state.allocation().SetGpu(std::move(*chosen));
  return framework::Status::Success();
}

void GpuFragmentation::Unreserve(framework::CycleState& state, const api::Pod& /*pod*/,
                                 std::string_view /*node*/) {
  state.allocation().ClearGpu();
}

using framework::ClusterEvent;
using framework::ClusterEventWithHint;
using framework::EventObjects;
using framework::EventResource;
using framework::QueueingHint;

std::vector<ClusterEventWithHint> GpuFragmentation::EventsToRegister() const {
  return helper::GpuEvents();
}

}  // namespace gpusched::plugins::gpu_fragmentation
