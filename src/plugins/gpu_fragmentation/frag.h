// SPDX-License-Identifier: Apache-2.0
// Fragmentation math of the FGD paper (Weng et al., USENIX ATC '23;
// docs/gpu-placement.md, "The FGD paper's definitions") and the online typical-pod learner.
//
//   TypicalPodLearner  an exponentially decayed histogram of pod types (cpu, GPU count, milli,
//                      models), bounded to max_types entries (the lightest entry is replaced when a
//                      new type arrives and the table is full). Snapshot() returns the paper's M:
//                      the heaviest types covering >= `coverage` of the weight, renormalised.
//   NodeView           one node as the math sees it: idle milli per GPU (0 for unhealthy GPUs),
//                      free CPU, and per typical type whether the node model is allowed.
//   FragmentDelta      Δ = F_{n'}(M) − F_n(M) for placing (c, k, d) on a set of GPUs, computed
//                      incrementally in O(|M|) after an O(|M|·G) base pass.
//
// Pure functions and a plain value class; no locking (the plugin owns the learner and calls it on
// the scheduling thread only). Nothing here allocates except TypicalPodLearner::Observe/Snapshot.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "src/api/gpu.h"
#include "src/common/interner.h"

namespace gpusched::plugins::gpu_fragmentation {

// One typical pod type m with its probability p_m.
struct TypicalPod {
  int64_t cpu_milli = 0;             // c_m
  int32_t count = 0;                 // k_m (0 for CPU-only)
  int32_t milli = 0;                 // d_m per GPU (0 for CPU-only)
  std::vector<common::Atom> models;  // T_m, empty = any
  double p = 0;
};

class TypicalPodLearner {
 public:
  // decay: weight multiplier per observation, (0, 1]; 1 = no decay. max_types >= 1.
  TypicalPodLearner(double decay, int32_t max_types, double coverage)
      : decay_(decay), max_types_(max_types), coverage_(coverage) {}

  // Records one pod (CPU-only pods included).
  void Observe(int64_t cpu_milli, const api::GpuRequest& gpu);
  // The typical-pod distribution M (heaviest first; empty before any observation).
  std::vector<TypicalPod> Snapshot() const;
  int64_t observations() const { return observations_; }

 private:
  struct Entry {
    int64_t cpu_milli;
    int32_t count;
    int32_t milli;
    std::vector<common::Atom> models;
    double weight;  // in units of scale_ at observation time
  };
  double decay_;
  int32_t max_types_;
  double coverage_;
  double scale_ = 1.0;  // weight of the next observation (grows by 1/decay; renormalised)
  int64_t observations_ = 0;
  std::vector<Entry> entries_;
};

// A node's state for the fragmentation math.
struct NodeView {
  int32_t gpus = 0;
  std::array<int32_t, api::kMaxGpusPerNode> idle{};  // R_{n,g}, 0 for unhealthy devices
  int64_t free_cpu = 0;                              // C_n
};

// Per-type aggregate of a node (kept to compute Δ incrementally).
struct TypeAggregate {
  int32_t fit = 0;    // #{g : R_g >= d_m}
  int64_t small = 0;  // sum of R_g over g with R_g < d_m
};

// F_n(m) from the aggregate (docs/gpu-placement.md, "The FGD paper's definitions"). `allowed`:
// T_m empty or the node model is in T_m.
inline int64_t FragmentOf(const TypicalPod& m, bool allowed, const TypeAggregate& a,
                          int64_t idle_total, int64_t free_cpu) {
  if (m.milli == 0 || !allowed || a.fit < m.count || free_cpu < m.cpu_milli) return idle_total;
  return a.small;
}

// Evaluates Δ for candidate placements on one node. REQUIRES: aggregates.size() >= types.size().
// `allowed[m]` is whether type m may use this node's model.
class NodeFragmentation {
 public:
  NodeFragmentation(std::span<const TypicalPod> types, std::span<const uint8_t> allowed,
                    std::span<TypeAggregate> aggregates, const NodeView& node);
  // F_n(M).
  double base() const { return base_; }
  // Δ for placing a pod of cpu `c` taking `d` milli from each GPU in `devices` (milli 0 and no
  // devices for a CPU-only pod). A device listed n times (replicas of one shared GPU) gives
  // n * d; each device's idle milli must be >= what it gives.
  double Delta(int64_t c, int32_t d, std::span<const int8_t> devices) const;

 private:
  std::span<const TypicalPod> types_;
  std::span<const uint8_t> allowed_;
  std::span<TypeAggregate> agg_;
  const NodeView& node_;
  int64_t idle_total_ = 0;
  double base_ = 0;
};

}  // namespace gpusched::plugins::gpu_fragmentation
