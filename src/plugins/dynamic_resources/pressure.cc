// SPDX-License-Identifier: Apache-2.0
#include "src/plugins/dynamic_resources/pressure.h"

#include <algorithm>
#include <cstdint>
#include <unordered_map>
#include <utility>

namespace gpusched::plugins::dynamic_resources {
namespace {

// One distinct restricted choice among the waiting requests, with the devices it asks for.
struct Shape {
  std::shared_ptr<const ChoiceMatches> matches;
  std::shared_ptr<const ChoiceMatches> class_matches;
  int64_t demand = 0;
};

bool Free(const framework::DeviceUsage& usage, size_t d) {
  return d >= usage.holder.size() || usage.holder[d] == nullptr;
}

// The choice a waiting request would be allocated with first; null when it holds nothing.
const api::DeviceChoice* FirstChoice(const api::DeviceRequest& r) {
  const api::DeviceChoice* c = r.exactly                   ? &*r.exactly
                               : r.first_available.empty() ? nullptr
                                                           : &r.first_available.front().choice;
  if (c == nullptr || c->admin_access || c->mode != api::AllocationMode::kExactCount) {
    return nullptr;
  }
  return c;
}

}  // namespace

std::vector<float> DevicePressure(SelectorCache& selectors, const framework::DraView& view,
                                  const framework::DeviceIndex& index,
                                  const framework::DeviceUsage& usage,
                                  std::span<const api::ResourceClaimPtr> pending,
                                  std::span<const api::ResourceClaimPtr> exclude) {
  // In the order first seen (the view's claim order): the sums below are deterministic.
  std::vector<Shape> shapes;
  std::unordered_map<const ChoiceMatches*, size_t> shape_of;
  for (const api::ResourceClaimPtr& claim : pending) {
    if (std::find(exclude.begin(), exclude.end(), claim) != exclude.end()) continue;
    for (const api::DeviceRequest& r : claim->spec.requests) {
      const api::DeviceChoice* choice = FirstChoice(r);
      if (choice == nullptr || choice->count <= 0) continue;
      auto m = selectors.Matches(view, index, *choice);
      if (!m.ok()) continue;
      auto [it, added] = shape_of.try_emplace(m->get(), shapes.size());
      if (added) shapes.emplace_back();
      Shape& s = shapes[it->second];
      if (added) {
        s.matches = *m;
        api::DeviceChoice class_only;
        class_only.device_class = choice->device_class;
        auto cm = selectors.Matches(view, index, class_only);
        if (cm.ok()) s.class_matches = *std::move(cm);
      }
      s.demand += choice->count;
    }
  }
  std::vector<float> pressure;
  for (const Shape& s : shapes) {
    if (s.class_matches == nullptr) continue;
    int64_t matching = 0;
    int64_t in_class = 0;
    for (size_t d = 0; d < index.devices.size(); ++d) {
      if (!Free(usage, d)) continue;
      matching += s.matches->match[d];
      in_class += s.class_matches->match[d];
    }
    if (matching == 0 || matching == in_class) continue;  // nothing to keep, or not restricted
    if (pressure.empty()) pressure.assign(index.devices.size(), 0.0F);
    const float share = static_cast<float>(s.demand) / static_cast<float>(matching);
    for (size_t d = 0; d < index.devices.size(); ++d) {
      if (s.matches->match[d] != 0 && Free(usage, d)) pressure[d] += share;
    }
  }
  return pressure;
}

}  // namespace gpusched::plugins::dynamic_resources
