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

// typicalPods: [{cpuMilli, gpuCount, gpuMilli, models, weight}], weights > 0, renormalised.
void ParseTypicalPods(const boost::json::array& list, std::vector<TypicalPod>& out,
                      helper::ArgErrors& errors) {
  if (list.size() > static_cast<size_t>(kMaxTypes)) {
    errors.Add("typicalPods", "at most " + std::to_string(kMaxTypes) + " entries, got " +
                                  std::to_string(list.size()));
    return;
  }
  double total = 0;
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string path = helper::IndexPath("typicalPods", i);
    const boost::json::object* e = helper::AsObject(list[i], path, errors);
    if (e == nullptr) {
      if (list[i].is_null()) errors.Add(path, "must be an object");
      continue;
    }
    helper::CheckKnownFields(*e, path, {"cpuMilli", "gpuCount", "gpuMilli", "models", "weight"},
                             errors);
    TypicalPod m;
    bool ok = true;
    if (std::optional<int64_t> v = helper::GetInt(*e, "cpuMilli", path, errors)) {
      ok &=
          helper::CheckRange(*v, 0, int64_t{1} << 40, helper::FieldPath(path, "cpuMilli"), errors);
      m.cpu_milli = *v;
    }
    if (std::optional<int64_t> v = helper::GetInt(*e, "gpuCount", path, errors)) {
      ok &= helper::CheckRange(*v, 0, api::kMaxGpusPerNode, helper::FieldPath(path, "gpuCount"),
                               errors);
      m.count = static_cast<int32_t>(*v);
    }
    if (std::optional<int64_t> v = helper::GetInt(*e, "gpuMilli", path, errors)) {
      ok &=
          helper::CheckRange(*v, 0, api::kMilliPerGpu, helper::FieldPath(path, "gpuMilli"), errors);
      m.milli = static_cast<int32_t>(*v);
    }
    if (ok && (m.count == 0) != (m.milli == 0)) {
      errors.Add(helper::FieldPath(path, "gpuMilli"),
                 "must be 0 exactly when gpuCount is 0, got gpuCount " + std::to_string(m.count) +
                     " and gpuMilli " + std::to_string(m.milli));
      ok = false;
    }
    if (ok && m.count > 1 && m.milli != api::kMilliPerGpu) {
      errors.Add(helper::FieldPath(path, "gpuMilli"),
                 "must be 1000 when gpuCount > 1, got " + std::to_string(m.milli));
      ok = false;
    }
    if (const boost::json::array* models = helper::GetArray(*e, "models", path, errors)) {
      for (size_t j = 0; j < models->size(); ++j) {
        const std::string mp = helper::IndexPath(helper::FieldPath(path, "models"), j);
        if (std::optional<std::string_view> name = helper::AsString((*models)[j], mp, errors)) {
          const std::string norm = api::NormalizeGpuModel(*name);
          if (norm.empty()) {
            errors.Add(mp, "empty GPU model");
            ok = false;
          } else {
            m.models.push_back(common::Intern(norm));
          }
        }
      }
    }
    const boost::json::value* w = e->if_contains("weight");
    if (w == nullptr || !(w->is_number())) {
      errors.Add(helper::FieldPath(path, "weight"), "must be a number > 0");
      ok = false;
    } else {
      m.p = w->is_double()  ? w->get_double()
            : w->is_int64() ? static_cast<double>(w->get_int64())
                            : static_cast<double>(w->get_uint64());
      if (!(m.p > 0) || !std::isfinite(m.p)) {
        errors.Add(helper::FieldPath(path, "weight"), "must be a number > 0");
        ok = false;
      }
    }
    if (ok) {
      total += m.p;
      out.push_back(std::move(m));
    }
  }
  for (TypicalPod& m : out) m.p /= total;
}

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
  helper::ArgErrors errors;
  if (const boost::json::object* obj = helper::ArgsObject(raw, errors)) {
    helper::CheckKnownFields(
        *obj, "",
        {"policy", "decayPpm", "maxTypes", "coveragePercent", "exactScores", "seed", "deltaQuantum",
         "distributionRefreshPods", "typicalPods", "cpuCostPermille", "modelCostPermille",
         "tieBreak", "deltaQuantumPermille", "cpuPodDeltaQuantum", "utilizationCostPermille"},
        errors, /*allow_type_meta=*/true);
    if (std::optional<std::string_view> p = helper::GetString(*obj, "policy", "", errors)) {
      bool found = false;
      for (const auto& [policy, name] : kPolicyNames) {
        if (name == *p) {
          out.policy = policy;
          found = true;
        }
      }
      if (!found) {
        errors.Add("policy", "unsupported value " + common::Quote(*p) +
                                 ", want FGD, Learned, BestFit, DotProd, GpuClustering, "
                                 "GpuPacking or Random");
      }
    }
    if (std::optional<int64_t> v = helper::GetInt(*obj, "decayPpm", "", errors)) {
      if (helper::CheckRange(*v, 1, 1000000, "decayPpm", errors)) out.decay_ppm = *v;
    }
    if (std::optional<int64_t> v = helper::GetInt(*obj, "maxTypes", "", errors)) {
      if (helper::CheckRange(*v, 1, kMaxTypes, "maxTypes", errors)) {
        out.max_types = static_cast<int32_t>(*v);
      }
    }
    if (std::optional<int64_t> v = helper::GetInt(*obj, "coveragePercent", "", errors)) {
      if (helper::CheckRange(*v, 1, 100, "coveragePercent", errors)) {
        out.coverage_percent = static_cast<int32_t>(*v);
      }
    }
    if (std::optional<int64_t> v = helper::GetInt(*obj, "deltaQuantum", "", errors)) {
      if (helper::CheckRange(*v, 1, 1000000, "deltaQuantum", errors)) out.delta_quantum = *v;
    }
    if (std::optional<int64_t> v = helper::GetInt(*obj, "distributionRefreshPods", "", errors)) {
      if (helper::CheckRange(*v, 1, 100000, "distributionRefreshPods", errors)) {
        out.refresh_pods = static_cast<int32_t>(*v);
      }
    }
    if (std::optional<int64_t> v = helper::GetInt(*obj, "cpuCostPermille", "", errors)) {
      if (helper::CheckRange(*v, 0, 10000, "cpuCostPermille", errors)) {
        out.cpu_cost_permille = static_cast<int32_t>(*v);
      }
    }
    if (std::optional<int64_t> v = helper::GetInt(*obj, "deltaQuantumPermille", "", errors)) {
      if (helper::CheckRange(*v, 0, 1000, "deltaQuantumPermille", errors)) {
        out.delta_quantum_permille = *v;
      }
    }
    if (std::optional<int64_t> v = helper::GetInt(*obj, "cpuPodDeltaQuantum", "", errors)) {
      if (helper::CheckRange(*v, 1, 1000000, "cpuPodDeltaQuantum", errors)) {
        out.cpu_pod_delta_quantum = *v;
      }
    }
    if (std::optional<int64_t> v = helper::GetInt(*obj, "utilizationCostPermille", "", errors)) {
      if (helper::CheckRange(*v, 0, 10000, "utilizationCostPermille", errors)) {
        out.utilization_cost_permille = static_cast<int32_t>(*v);
      }
    }
    if (std::optional<int64_t> v = helper::GetInt(*obj, "modelCostPermille", "", errors)) {
      if (helper::CheckRange(*v, 0, 10000, "modelCostPermille", errors)) {
        out.model_cost_permille = static_cast<int32_t>(*v);
      }
    }
    if (std::optional<std::string_view> t = helper::GetString(*obj, "tieBreak", "", errors)) {
      if (*t == "Random") {
        out.tie_break = TieOrder::kRandom;
      } else if (*t == "NodeOrder") {
        out.tie_break = TieOrder::kNodeOrder;
      } else {
        errors.Add("tieBreak",
                   "unsupported value " + common::Quote(*t) + ", want Random or NodeOrder");
      }
    }
    if (std::optional<int64_t> v = helper::GetInt(*obj, "seed", "", errors)) {
      out.seed = static_cast<uint64_t>(*v);
    }
    if (const boost::json::array* list = helper::GetArray(*obj, "typicalPods", "", errors)) {
      ParseTypicalPods(*list, out.typical_pods, errors);
    }
    if (const boost::json::value* v = obj->if_contains("exactScores")) {
      if (v->is_bool()) {
        out.exact_scores = v->get_bool();
      } else if (!v->is_null()) {
        errors.Add("exactScores", "must be a boolean");
      }
    }
  }
  GPUSCHED_RETURN_IF_ERROR(errors.ToStatus());
  return WithDefaults(out);
}

}  // namespace gpusched::plugins::gpu_fragmentation
