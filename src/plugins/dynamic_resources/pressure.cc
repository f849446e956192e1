// SPDX-License-Identifier: Apache-2.0
#include "src/plugins/dynamic_resources/pressure.h"

#include <algorithm>

namespace gpusched::plugins::dynamic_resources {
namespace {

bool Free(const framework::DeviceUsage& usage, size_t d) {
  return d >= usage.holder.size() || usage.holder[d] == nullptr;
}

// The choice a waiting request would be allocated with first; null when it holds nothing.
const api::DeviceChoice* FirstChoice(const api::DeviceRequest& r) {
  const api::DeviceChoice* c = r.exactly                   ? &*r.exactly
                               : r.first_available.empty() ? nullptr
                                                           : &r.first_available.front().choice;
  if (c == nullptr || c->admin_access || c->mode != api::AllocationMode::kExactCount ||
      c->count <= 0) {
    return nullptr;
  }
  return c;
}

}  // namespace

uint32_t DevicePressure::ShapeOf(SelectorCache& selectors, const framework::DraView& view,
                                 const framework::DeviceIndex& index,
                                 std::shared_ptr<const ChoiceMatches> matches,
                                 const api::DeviceChoice& choice) {
  auto [it, added] = shape_of_.try_emplace(matches.get(), static_cast<uint32_t>(shapes_.size()));
  if (added) {
    auto cm = selectors.ClassMatches(view, index, choice.device_class);
    shapes_.push_back({std::move(matches), cm.ok() ? *std::move(cm) : nullptr});
  }
  return it->second;
}

const DevicePressure::ClaimDemand& DevicePressure::DemandOf(SelectorCache& selectors,
                                                            const framework::DraView& view,
                                                            const framework::DeviceIndex& index,
                                                            const api::ResourceClaimPtr& claim) {
  auto [it, added] = claims_.try_emplace(claim.get());
  ClaimDemand& d = it->second;
  if (!added) return d;
  d.claim = claim;
  for (const api::DeviceRequest& r : claim->spec.requests) {
    const api::DeviceChoice* choice = FirstChoice(r);
    if (choice == nullptr) continue;
    auto m = selectors.Matches(view, index, *choice);
    if (!m.ok()) continue;
    d.asks.emplace_back(ShapeOf(selectors, view, index, *std::move(m), *choice), choice->count);
  }
  return d;
}

std::vector<float> DevicePressure::Compute(SelectorCache& selectors, const framework::DraView& view,
                                           const framework::DeviceIndex& index,
                                           const framework::DeviceUsage& usage,
                                           std::span<const api::ResourceClaimPtr> pending,
                                           std::span<const api::ResourceClaimPtr> exclude) {
  const uint64_t class_version = view.class_version();
  // Forget everything the index or the classes invalidate, and claims no longer waiting once
  // they outnumber the waiting ones.
  if (index.version != index_version_ || class_version != class_version_ ||
      claims_.size() > 2 * pending.size() + 1024) {
    index_version_ = index.version;
    class_version_ = class_version;
    shapes_.clear();
    shape_of_.clear();
    claims_.clear();
  }
  std::vector<int64_t> demand(shapes_.size(), 0);
  for (const api::ResourceClaimPtr& claim : pending) {
    if (std::find(exclude.begin(), exclude.end(), claim) != exclude.end()) continue;
    for (const auto& [shape, count] : DemandOf(selectors, view, index, claim).asks) {
      if (shape >= demand.size()) demand.resize(shapes_.size(), 0);
      demand[shape] += count;
    }
  }
  std::vector<float> pressure;
  for (size_t i = 0; i < demand.size(); ++i) {
    const Shape& s = shapes_[i];
    if (demand[i] == 0 || s.class_matches == nullptr) continue;
    int64_t matching = 0;
    int64_t in_class = 0;
    for (size_t d = 0; d < index.devices.size(); ++d) {
      if (!Free(usage, d)) continue;
      matching += s.matches->match[d];
      in_class += s.class_matches->match[d];
    }
    if (matching == 0 || matching == in_class) continue;  // nothing to keep, or not restricted
    if (pressure.empty()) pressure.assign(index.devices.size(), 0.0F);
    const float share = static_cast<float>(demand[i]) / static_cast<float>(matching);
    for (size_t d = 0; d < index.devices.size(); ++d) {
      if (s.matches->match[d] != 0 && Free(usage, d)) pressure[d] += share;
    }
  }
  return pressure;
}

}  // namespace gpusched::plugins::dynamic_resources
