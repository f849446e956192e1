// SPDX-License-Identifier: Apache-2.0
// The devices one node offers the allocator (allocator.h), in the order it should try them.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "src/common/mutex.h"
#include "src/framework/dra_view.h"
#include "src/framework/node_info.h"
#include "src/plugins/dynamic_resources/allocator.h"

namespace gpusched::plugins::dynamic_resources {

// Fills `out` with the devices `node` reaches (its own, and those whose node selector it matches
// or that every node reaches), busy or not, in preference order, and with what the counters they
// draw on have left (SettleCounters).
//
// Held: a claim in `usage` holds the device, unless `original` (the node before a preemption dry
// run removed pods from `node`; may be null) shows that only removed pods use that claim, or only
// pods the cache hides (`hidden`, uids: Snapshot::hidden_pods); or `taken` (by device number; may
// be empty) marks it. Busy: held, or not allocatable (SettleCounters).
//
// Order: the islands with the fewest free devices first (best fit keeps whole islands free),
// devices without an island last; within that, devices drawing on a counter set (a MIG
// partition's GPU) or shared device (KEP-5075) whose counters or capacities have the least left
// first (best fit keeps whole GPUs whole),
// and then those that rule out the fewest other devices of their set (DeviceEntry::conflicts:
// the partition that leaves the most shapes open); otherwise the index's order.
void GatherNodeDevices(const framework::DeviceIndex& index, const framework::DeviceUsage& usage,
                       const framework::NodeInfo& node, const framework::NodeInfo* original,
                       std::span<const uint8_t> taken, NodeDevices& out,
                       std::span<const std::string> hidden = {});

// Fills `out.counters` for the counters `out.devices` draw on and the capacities of the shared
// ones: capacity less the draws of the held devices and what the shares consume, with
// `out.devices[i].busy` saying which of them are held (the usage's holders, told otherwise where a
// device's flag differs); then marks busy the free devices that cannot be allocated
// (NodeDevices::MarkUnallocatable).
void SettleCounters(const framework::DeviceIndex& index, const framework::DeviceUsage& usage,
                    NodeDevices& out);

// GatherNodeDevices for the plain case (no preemption dry run, nothing hidden or taken), kept per
// node until the usage of the node's devices (DeviceUsage::node_version, shared_version), the
// index or the node object changes: a cycle's Filter and Score redo only the nodes whose devices
// changed since, not all of them. Thread-safe.
class NodeDevicesCache {
 public:
  // What GatherNodeDevices(index, usage, node, nullptr, {}, out) fills `out` with. REQUIRES:
  // `usage` is of `index`.
  std::shared_ptr<const NodeDevices> Get(const framework::DeviceIndex& index,
                                         const framework::DeviceUsage& usage,
                                         const framework::NodeInfo& node);

 private:
  struct Entry {
    api::NodePtr node;  // the object gathered for (its labels pick the devices not node-local)
    uint64_t index_version = 0;
    uint32_t slot = framework::kNoNodeSlot;  // its local devices' node slot, if any has one
    uint64_t node_version = 0;
    uint64_t shared_version = 0;
    std::shared_ptr<const NodeDevices> devices;
  };
  common::Mutex mu_;
  std::vector<Entry> entries_ GPUSCHED_GUARDED_BY(mu_);  // by NodeInfo::index
};

}  // namespace gpusched::plugins::dynamic_resources
