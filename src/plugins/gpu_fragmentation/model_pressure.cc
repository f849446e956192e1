// SPDX-License-Identifier: Apache-2.0
#include "src/plugins/gpu_fragmentation/model_pressure.h"

#include <algorithm>
#include <string_view>

#include "src/plugins/helper/resources.h"

namespace gpusched::plugins::gpu_fragmentation::internal {

std::vector<double> ModelPressure(std::span<const TypicalPod> types,
                                  std::span<const uint32_t> model_ids,
                                  const framework::Snapshot& snapshot) {
  double demand = 0;
  bool restricted = false;
  for (const TypicalPod& m : types) {
    demand += m.p * m.count * m.milli;
    restricted = restricted || (!m.models.empty() && m.count > 0);
  }
  if (!restricted || demand <= 0) return {};
  std::vector<double> idle(model_ids.size(), 0.0);
  double total_idle = 0;
  for (const framework::NodeInfo& n : snapshot.nodes()) {
    if (!n.valid() || n.node->gpu.count <= 0 || n.node->gpu.model.empty()) continue;
    auto it = std::lower_bound(model_ids.begin(), model_ids.end(), n.node->gpu.model.id);
    const auto free = static_cast<double>(n.FreeGpuMilli());
    idle[static_cast<size_t>(it - model_ids.begin())] += free;  // every node model is listed
    total_idle += free;
  }
  std::vector<double> pressure(model_ids.size(), 0.0);
  std::vector<uint8_t> in_set(model_ids.size(), 0);
  for (const TypicalPod& m : types) {
    if (m.models.empty() || m.count <= 0) continue;
    double set_idle = 0;
    for (size_t t = 0; t < model_ids.size(); ++t) {
      in_set[t] = helper::GpuModelMatchesAny(common::Atom{model_ids[t]}, m.models) ? 1 : 0;
      if (in_set[t] != 0) set_idle += idle[t];
    }
    if (set_idle <= 0) continue;
    const double share = m.p * m.count * m.milli / demand * total_idle / set_idle;
    for (size_t t = 0; t < model_ids.size(); ++t) {
      if (in_set[t] != 0) pressure[t] += share;
    }
  }
  for (double& p : pressure) p = std::min(1.0, p);
  return pressure;
}

}  // namespace gpusched::plugins::gpu_fragmentation::internal
