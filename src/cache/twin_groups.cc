// SPDX-License-Identifier: Apache-2.0
#include "src/cache/twin_groups.h"

#include <algorithm>
#include <tuple>
#include <vector>

#include "src/api/equivalence.h"
#include "src/api/key_writer.h"

namespace gpusched::cache {

namespace {

// Appends what plugins read of a node's pods in aggregate: requests, pod count, device usage,
// host ports (sorted: a multiset).
void AppendAggregates(const framework::NodeInfo& ni, api::KeyWriter& w) {
  w.Resources(ni.requested);
  w.U32(static_cast<uint32_t>(ni.pod_count));
  for (const api::GpuDeviceState& d : ni.gpus) {
    w.U32(static_cast<uint32_t>(d.used_milli));
    w.I64(d.used_memory_mib);
    w.U32(static_cast<uint32_t>(d.pods));
  }
  std::vector<framework::HostPort> ports(ni.used_ports.begin(), ni.used_ports.end());
  std::sort(ports.begin(), ports.end(), [](const auto& a, const auto& b) {
    return std::tie(a.ip.id, a.protocol.id, a.port) < std::tie(b.ip.id, b.protocol.id, b.port);
  });
  w.Size(ports.size());
  for (const framework::HostPort& p : ports) {
    w.A(p.ip);
    w.A(p.protocol);
    w.U32(static_cast<uint32_t>(p.port));
  }
}

}  // namespace

TwinGroups::Table::Entry* TwinGroups::Table::Acquire(const std::string& key) {
  auto [it, added] = map_.try_emplace(key, -1, 0);
  if (added) {
    if (free_ids_.empty()) {
      it->second.first = num_ids_++;
    } else {
      it->second.first = free_ids_.back();
      free_ids_.pop_back();
    }
  }
  ++it->second.second;
  return &*it;
}

void TwinGroups::Table::Release(Entry* e) {
  if (e == nullptr || --e->second.second > 0) return;
  free_ids_.push_back(e->second.first);
  map_.erase(map_.find(e->first));
}

int32_t TwinGroups::GroupOf(framework::NodeIndex i, const framework::NodeInfo& ni) {
  const size_t s = static_cast<size_t>(i);
  if (s >= slots_.size()) slots_.resize(s + 1);
  Slot& slot = slots_[s];
  if (slot.node != ni.node || slot.utilization != ni.gpu_utilization) {
    shapes_.Release(slot.shape);
    slot.shape = nullptr;
    slot.node = ni.node;
    slot.utilization = ni.gpu_utilization;
    if (ni.node != nullptr) {
      api::NodeTwinKey(*ni.node, key_);
      api::KeyWriter(key_).F64(ni.gpu_utilization);
      slot.shape = shapes_.Acquire(key_);
    }
  }
  if (slot.shape == nullptr) {
    groups_.Release(slot.group);
    slot.group = nullptr;
    return -1;
  }
  key_.clear();
  api::KeyWriter w(key_);
  w.U32(static_cast<uint32_t>(slot.shape->second.first));
  if (!ni.pods.empty()) AppendAggregates(ni, w);
  if (slot.group == nullptr || slot.group->first != key_) {
    Table::Entry* group = groups_.Acquire(key_);
    groups_.Release(slot.group);
    slot.group = group;
  }
  return slot.group->second.first;
}

}  // namespace gpusched::cache
