// SPDX-License-Identifier: Apache-2.0
// The devices one node offers the allocator (allocator.h), in the order it should try them.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "src/framework/dra_view.h"
#include "src/framework/node_info.h"
#include "src/plugins/dynamic_resources/allocator.h"

namespace gpusched::plugins::dynamic_resources {

// Fills `out` with the devices `node` reaches (its own, and those whose node selector it matches
// or that every node reaches), busy or not, in preference order: the islands with the fewest free
// devices first (best fit keeps whole islands free), devices without an island last, otherwise
// the index's order. A device is busy when a claim in `usage` holds it, unless `original` (the
// node before a preemption dry run removed pods from `node`; may be null) shows that only removed
// pods use that claim, or only pods the cache hides (`hidden`, uids: Snapshot::hidden_pods);
// or when `taken` (by device number; may be empty) marks it.
void GatherNodeDevices(const framework::DeviceIndex& index, const framework::DeviceUsage& usage,
                       const framework::NodeInfo& node, const framework::NodeInfo* original,
                       std::span<const uint8_t> taken, std::vector<NodeDevice>& out,
                       std::span<const std::string> hidden = {});

}  // namespace gpusched::plugins::dynamic_resources
