// SPDX-License-Identifier: Apache-2.0
// The limit of GPU packing (issue #41 item 3; docs/gpu-placement.md, "The offline limit"): an
// upper bound on the milli-GPU that any placement of a set of pods on a set of empty nodes can
// allocate, hence a lower bound on the unallocated GPU % that any scheduler (online or offline,
// gpusched, FGD or an oracle that knows the future) can reach with those pods.
//
// A placement: any subset of the pods, each on one node whose GPU model its `models` allow
// (api::GpuModelMatches), its `count` GPUs distinct healthy devices of that node with its `milli`
// free on each, its CPU and memory requests within the node's allocatable. The pods-per-node limit
// and GPU memory are not modelled (dropping a constraint keeps a bound valid). Pods without GPUs
// allocate none, so a best placement leaves them out and the bound ignores them.
//
// Two models, solved with COIN-OR CLP and CBC (docs/dependencies.md):
//   relaxation (any size, a linear program): nodes grouped by shape (model, healthy GPUs, CPU,
//     memory), GPU pods by type (CPU, memory, count, milli, models); y[t][s] >= 0 pods of type t
//     on shape s, at most the type's pods over all shapes; per shape, each resource's sum within
//     the shape's total, also after dual-feasible functions f (Fekete and Schepers 2001: any
//     x_1..x_n with sum x_i <= C have sum f(x_i) <= C) for one GPU's milli (C = 1000) and one
//     node's CPU and memory. Those rows see that an 810-milli pod leaves its GPU's other 190 only
//     to pods of at most 190, or that a pod asking over half a node's CPU has the node's CPU to
//     itself. Every placement satisfies every row, so the LP optimum bounds every placement.
//   exact (lists with at most `exact_max_binaries` binaries and no pod asking for GPU memory): one
//     binary per (pod, node) and per (pod, node, GPU), solved by CBC's branch and bound within
//     `exact_seconds`. Proven optimal, its value is the best placement itself (`exact`); stopped
//     earlier, its proven bound tightens the relaxation's when lower.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "src/api/types.h"
#include "src/common/status.h"

namespace gpusched::sim::trace {

struct PackingBoundOptions {
  int64_t exact_max_binaries = 4000;  // 0: the relaxation only
  double exact_seconds = 10;          // CBC's time limit for the exact model
};

struct PackingBound {
  int64_t capacity_milli = 0;       // healthy GPUs x 1000
  int64_t demand_milli = 0;         // sum of count x milli over the pods
  int64_t max_allocated_milli = 0;  // no placement allocates more
  bool exact = false;               // a placement allocates exactly max_allocated_milli
  int64_t gpu_pod_types = 0;        // relaxation size: distinct GPU pod types ...
  int64_t node_shapes = 0;          // ... and node shapes
  // The fewest unallocated GPUs, in % of capacity: 100 x (1 - max_allocated / capacity).
  double MinUnallocatedPct() const;
};

// InvalidArgument for a pod whose GPU share is given as memory only (milli 0: its milli depends on
// the node, which the relaxation does not model), naming the pod; Internal when a solver fails.
common::StatusOr<PackingBound> ComputePackingBound(std::span<const api::NodePtr> nodes,
                                                   std::span<const api::PodPtr> pods,
                                                   const PackingBoundOptions& options = {});

}  // namespace gpusched::sim::trace
