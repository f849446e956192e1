// SPDX-License-Identifier: Apache-2.0
#include "src/cache/twin_groups.h"

#include <cstring>

#include "src/api/equivalence.h"

namespace gpusched::cache {

int32_t TwinGroups::GroupOf(framework::NodeIndex i, const framework::NodeInfo& ni) {
  const size_t s = static_cast<size_t>(i);
  if (s >= slots_.size()) slots_.resize(s + 1);
  Slot& slot = slots_[s];
  if (slot.node != ni.node || slot.utilization != ni.gpu_utilization) {
    Release(slot);
    if (ni.node != nullptr) {
      api::NodeTwinKey(*ni.node, key_);
      char bits[sizeof(double)];
      std::memcpy(bits, &ni.gpu_utilization, sizeof bits);
      key_.append(bits, sizeof bits);
      auto [it, added] = groups_.try_emplace(key_);
      if (added) {
        if (free_ids_.empty()) {
          it->second.id = num_ids_++;
        } else {
          it->second.id = free_ids_.back();
          free_ids_.pop_back();
        }
      }
      ++it->second.slots;
      slot.group = &*it;
      slot.node = ni.node;
      slot.utilization = ni.gpu_utilization;
    }
  }
  if (slot.group == nullptr || !ni.pods.empty()) return -1;
  return slot.group->second.id;
}

void TwinGroups::Release(Slot& slot) {
  if (slot.group != nullptr && --slot.group->second.slots == 0) {
    free_ids_.push_back(slot.group->second.id);
    groups_.erase(groups_.find(slot.group->first));
  }
  slot.group = nullptr;
  slot.node = nullptr;
}

}  // namespace gpusched::cache
