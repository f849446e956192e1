// SPDX-License-Identifier: Apache-2.0
// GpuFragmentation's args (KubeSchedulerConfiguration pluginConfig) and the pod annotation that
// overrides its packing: parsing and defaults.
#include "src/plugins/helper/args.h"

#include <boost/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/common/strings.h"
#include "src/plugins/gpu_fragmentation/gpu_fragmentation.h"

namespace gpusched::plugins::gpu_fragmentation {
namespace {

constexpr std::pair<Policy, std::string_view> kPolicyNames[] = {
    {Policy::kFgd, "FGD"},
    {Policy::kLearned, "Learned"},
    {Policy::kBestFit, "BestFit"},
    {Policy::kDotProd, "DotProd"},
    {Policy::kGpuClustering, "GpuClustering"},
    {Policy::kGpuPacking, "GpuPacking"},
    {Policy::kRandom, "Random"}};

// typicalPods[i]: {cpuMilli, gpuCount, gpuMilli, models, weight}; nullopt when it has an error.
std::optional<TypicalPod> ParseTypicalPod(api::ObjectFields& e) {
  TypicalPod m;
  const size_t errors_before = e.reader().error_count();
  if (auto v = e.Int("cpuMilli", 0, int64_t{1} << 40)) m.cpu_milli = *v;
  if (auto v = e.Int("gpuCount", 0, api::kMaxGpusPerNode)) m.count = static_cast<int32_t>(*v);
  if (auto v = e.Int("gpuMilli", 0, api::kMilliPerGpu)) m.milli = static_cast<int32_t>(*v);
  const bool ints_ok = e.reader().error_count() == errors_before;
  if (ints_ok && (m.count == 0) != (m.milli == 0)) {
    e.Error("gpuMilli", "must be 0 exactly when gpuCount is 0, got gpuCount " +
                            std::to_string(m.count) + " and gpuMilli " + std::to_string(m.milli));
  } else if (ints_ok && m.count > 1 && m.milli != api::kMilliPerGpu) {
    e.Error("gpuMilli", "must be 1000 when gpuCount > 1, got " + std::to_string(m.milli));
  }
  e.ForEachString("models", [&](std::string_view name, const api::FieldPath& path) {
    const std::string norm = api::NormalizeGpuModel(name);
    if (norm.empty()) {
      e.reader().Error(path, "empty GPU model");
    } else {
      m.models.push_back(common::Intern(norm));
    }
  });
  const size_t errors_before_weight = e.reader().error_count();
  const std::optional<double> weight = e.Number("weight");
  if (weight && *weight > 0) {
    m.p = *weight;
  } else if (e.reader().error_count() == errors_before_weight) {
    e.Error("weight", "must be a number > 0");
  }
  if (e.reader().error_count() != errors_before) return std::nullopt;
  return m;
}

// typicalPods: at most kMaxTypes, weights renormalised to sum to 1.
void ParseTypicalPods(api::ObjectFields& f, std::vector<TypicalPod>& out) {
  const boost::json::array* list = f.Array("typicalPods");
  if (list == nullptr) return;
  if (list->size() > static_cast<size_t>(kMaxTypes)) {
    f.Error("typicalPods", "at most " + std::to_string(kMaxTypes) + " entries, got " +
                               std::to_string(list->size()));
    return;
  }
  double total = 0;
  f.ForEachObject("typicalPods", [&](const boost::json::object& o, const api::FieldPath& path) {
    api::ObjectFields e(f.reader(), o, path);
    if (std::optional<TypicalPod> m = ParseTypicalPod(e)) {
      total += m->p;
      out.push_back(std::move(*m));
    }
  });
  for (TypicalPod& m : out) m.p /= total;
}

// An enumerated string member: the value whose name it is, or an error listing the names.
template <typename T, size_t N>
void ParseEnum(api::ObjectFields& f, std::string_view key,
               const std::pair<T, std::string_view> (&names)[N], std::string_view want, T& out) {
  const std::optional<std::string_view> v = f.String(key);
  if (!v) return;
  for (const auto& [value, name] : names) {
    if (name == *v) {
      out = value;
      return;
    }
  }
  f.Error(key, "unsupported value " + common::Quote(*v) + ", want " + std::string(want));
}

constexpr std::pair<TieOrder, std::string_view> kTieBreakNames[] = {
    {TieOrder::kRandom, "Random"}, {TieOrder::kNodeOrder, "NodeOrder"}};

}  // namespace

Args WithDefaults(Args a) {
  if (a.coverage_percent == 0) a.coverage_percent = a.policy == Policy::kLearned ? 100 : 95;
  if (a.delta_quantum == 0) a.delta_quantum = kDefaultDeltaQuantum;
  return a;
}

std::string_view PolicyName(Policy p) {
  for (const auto& [policy, name] : kPolicyNames) {
    if (policy == p) return name;
  }
  return "?";
}

PackOverride ParsePackOverride(std::string_view value) {
  auto one = [](std::string_view v) {
    if (v == "binpack") return Pack::kBinpack;
    if (v == "spread") return Pack::kSpread;
    return Pack::kNone;
  };
  const size_t slash = value.find('/');
  PackOverride out;
  if (slash == std::string_view::npos) {
    out.node = out.gpu = one(value);
    return out;
  }
  out.node = one(value.substr(0, slash));
  out.gpu = one(value.substr(slash + 1));
  if (out.node == Pack::kNone || out.gpu == Pack::kNone) return PackOverride{};
  return out;
}

common::StatusOr<Args> ParseArgs(const boost::json::value& raw) {
  Args out;
  GPUSCHED_RETURN_IF_ERROR(helper::ReadArgs(raw, [&](api::ObjectFields& f) {
    ParseEnum(f, "policy", kPolicyNames,
              "FGD, Learned, BestFit, DotProd, GpuClustering, GpuPacking or Random", out.policy);
    ParseEnum(f, "tieBreak", kTieBreakNames, "Random or NodeOrder", out.tie_break);
    if (auto v = f.Int("decayPpm", 1, 1000000)) out.decay_ppm = *v;
    if (auto v = f.Int("maxTypes", 1, kMaxTypes)) out.max_types = static_cast<int32_t>(*v);
    if (auto v = f.Int("coveragePercent", 1, 100)) out.coverage_percent = static_cast<int32_t>(*v);
    if (auto v = f.Int("deltaQuantum", 1, 1000000)) out.delta_quantum = *v;
    if (auto v = f.Int("distributionRefreshPods", 1, 100000)) {
      out.refresh_pods = static_cast<int32_t>(*v);
    }
    for (auto [key, slot] :
         {std::pair<std::string_view, int32_t*>{"cpuCostPermille", &out.cpu_cost_permille},
          {"utilizationCostPermille", &out.utilization_cost_permille},
          {"modelCostPermille", &out.model_cost_permille}}) {
      if (auto v = f.Int(key, 0, 10000)) *slot = static_cast<int32_t>(*v);
    }
    if (auto v = f.Int("deltaQuantumPermille", 0, 1000)) out.delta_quantum_permille = *v;
    if (auto v = f.Int("cpuPodDeltaQuantum", 1, 1000000)) out.cpu_pod_delta_quantum = *v;
    if (auto v = f.Int("seed")) out.seed = static_cast<uint64_t>(*v);
    ParseTypicalPods(f, out.typical_pods);
    if (auto v = f.Bool("exactScores")) out.exact_scores = *v;
  }));
  return WithDefaults(out);
}

}  // namespace gpusched::plugins::gpu_fragmentation
