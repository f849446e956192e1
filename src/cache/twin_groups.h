// SPDX-License-Identifier: Apache-2.0
// TwinGroups: the cache's grouping of empty nodes that differ only in identity, which it writes
// into Snapshot::twins (framework/node_info.h) for the runtime to evaluate one node per group.
//
// Two slots are in one group when both hold a valid node with no pod, their node objects have
// equal api::NodeTwinKey encodings (compared byte for byte; the hash map only finds them) and
// their gpu_utilization is equal. A slot's key is recomputed only when its node object (by
// pointer) or utilization changed since the last call for that slot; group ids are dense and
// reused once no slot's node has that key any more, so memory follows the distinct node shapes
// of the cluster, not its history.
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
  // The group of slot `i`, whose NodeInfo is `ni`: -1 unless ni is valid and holds no pod.
  int32_t GroupOf(framework::NodeIndex i, const framework::NodeInfo& ni);
  // Every id GroupOf returned so far is below this.
  int32_t num_groups() const { return num_ids_; }

 private:
  struct Group {
    int32_t id = -1;
    int32_t slots = 0;  // slots whose node object has this key
  };
  using Entry = std::unordered_map<std::string, Group>::value_type;
  struct Slot {
    api::NodePtr node;  // the object the key was computed from (kept, so its address stays its)
    double utilization = 0;
    Entry* group = nullptr;
  };

  void Release(Slot& slot);

  std::unordered_map<std::string, Group> groups_;
  std::vector<Slot> slots_;
  std::vector<int32_t> free_ids_;
  int32_t num_ids_ = 0;
  std::string key_;  // scratch
};

}  // namespace gpusched::cache
