// SPDX-License-Identifier: Apache-2.0
#include "src/framework/cycle_state.h"

#include <algorithm>

namespace gpusched::framework {

void Allocation::SetGpu(api::GpuAssignment assignment) {
  ClearGpu();
  annotations.emplace_back(std::string(api::kPodGpuDevicesAnnotation),
                           api::FormatGpuAssignment(assignment));
  gpu = std::move(assignment);
}

void Allocation::ClearGpu() {
  gpu = api::GpuAssignment{};
  std::erase_if(annotations,
                [](const auto& kv) { return kv.first == api::kPodGpuDevicesAnnotation; });
}

void CycleState::Write(const StateKey& key, std::unique_ptr<StateData> data) {
  for (auto& [k, v] : data_) {
    if (k == &key) {
      v = std::move(data);
      return;
    }
  }
  data_.emplace_back(&key, std::move(data));
}

StateData* CycleState::Read(const StateKey& key) const {
  for (const auto& [k, v] : data_) {
    if (k == &key) return v.get();
  }
  return nullptr;
}

}  // namespace gpusched::framework
