// SPDX-License-Identifier: Apache-2.0
// CycleState: per-pod, per-cycle scratch space. Plugins compute per-pod facts once in PreFilter /
// PreScore and store them here under a key they own; Filter and Score read them per node.
// It also carries the Allocation that Reserve plugins fill (the exact GPUs, annotations to write),
// which the scheduler hands to the cache and the binder.
//
// Thread safety: written during PreFilter/PreScore/Reserve on the scheduling thread; read-only
// during Filter/Score, which may run on several threads.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "src/api/gpu.h"

namespace gpusched::framework {

class StateData {
 public:
  virtual ~StateData() = default;
};

// A key is the address of a plugin-owned static: `static const StateKey kKey = {"GpuFit"};`.
struct StateKey {
  const char* name;
};

// What the pod is given at Reserve, beyond the node.
struct Allocation {
  api::GpuAssignment gpu;
  // Annotations to set on the pod before binding (device choice, decision summary).
  std::vector<std::pair<std::string, std::string>> annotations;

  // Records the devices chosen at Reserve: `gpu` and the gpusched.io/gpu-devices annotation
  // that the cache reads back after a restart. Replaces an earlier choice.
  void SetGpu(api::GpuAssignment assignment);
  // Undoes SetGpu (Unreserve). Idempotent.
  void ClearGpu();
};

class CycleState {
 public:
  void Write(const StateKey& key, std::unique_ptr<StateData> data);
  // nullptr when absent.
  StateData* Read(const StateKey& key) const;
  template <typename T>
  T* Get(const StateKey& key) const {
    return static_cast<T*>(Read(key));
  }

  Allocation& allocation() { return allocation_; }
  const Allocation& allocation() const { return allocation_; }

  // Set by the runtime from PreFilter/PreScore kSkip results; index = plugin slot in that point.
  std::vector<bool>& skip_filter() { return skip_filter_; }
  std::vector<bool>& skip_score() { return skip_score_; }
  const std::vector<bool>& skip_filter() const { return skip_filter_; }
  const std::vector<bool>& skip_score() const { return skip_score_; }

 private:
  std::vector<std::pair<const StateKey*, std::unique_ptr<StateData>>> data_;
  Allocation allocation_;
  std::vector<bool> skip_filter_;
  std::vector<bool> skip_score_;
};

}  // namespace gpusched::framework
