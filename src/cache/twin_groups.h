// SPDX-License-Identifier: Apache-2.0
// TwinGroups: the cache's grouping of nodes that differ only in identity and in which pods they
// hold, which it writes into Snapshot::twins (framework/node_info.h) for the runtime to evaluate
// one node per group.
//
// Two slots are in one group when both hold a valid node whose node objects have equal
// api::NodeTwinKey encodings (compared byte for byte; the hash maps only find them), equal
// gpu_utilization and equal aggregates of their pods: requested resources, pod count, every
// device's usage (GpuDeviceState) and the multiset of host ports. Two levels, so that a node's
// key is encoded only when its object changes: the node object's key → a shape id (per slot,
// recomputed only when the object or utilization changed), then shape id + aggregates → group.
// Ids at both levels are dense and reused once no slot has them, so memory follows the distinct
// node states of the cluster, not its history.
//
// Thread safety: none; the cache calls it under its lock.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "src/framework/node_info.h"

namespace gpusched::cache {

class TwinGroups {
 public:
  // The group of slot `i`, whose NodeInfo is `ni` (called whenever the slot changed): -1 when ni
  // is not valid.
  int32_t GroupOf(framework::NodeIndex i, const framework::NodeInfo& ni);
  // Every id GroupOf returned so far is below this.
  int32_t num_groups() const { return groups_.num_ids(); }

 private:
  // Interned byte strings with a count of holders; ids dense, reused once released.
  class Table {
   public:
    using Entry = std::unordered_map<std::string, std::pair<int32_t, int32_t>>::value_type;
    // The entry of `key` (added when new), held once more.
    Entry* Acquire(const std::string& key);
    // Drops one hold of `e` (may be null); forgets it when none is left.
    void Release(Entry* e);
    int32_t num_ids() const { return num_ids_; }

   private:
    std::unordered_map<std::string, std::pair<int32_t, int32_t>> map_;  // key -> (id, holders)
    std::vector<int32_t> free_ids_;
    int32_t num_ids_ = 0;
  };
  struct Slot {
    api::NodePtr node;  // the object the shape was computed from (kept, so its address stays its)
    double utilization = 0;
    Table::Entry* shape = nullptr;
    Table::Entry* group = nullptr;
  };

  Table shapes_;
  Table groups_;
  std::vector<Slot> slots_;
  std::string key_;  // scratch
};

}  // namespace gpusched::cache
