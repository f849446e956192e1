// SPDX-License-Identifier: Apache-2.0
// Learned's model pressure (internal to GpuFragmentation): how much of each GPU model's idle GPU
// the pods that may use only some models are expected to claim (docs/gpu-placement.md).
//
// Pure functions; thread-compatible.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "src/common/interner.h"
#include "src/framework/node_info.h"
#include "src/plugins/gpu_fragmentation/frag.h"

namespace gpusched::plugins::gpu_fragmentation::internal {

// Per model of `model_ids` (the snapshot's distinct node models, sorted): the pressure that pods
// restricted to some models put on it. A restricted type m of M with allowed models S is
// expected to bring the share w_m = p_m k_m d_m / Σ_j p_j k_j d_j of the GPU demand still to
// come; if the idle GPU of the whole cluster, I, is eventually claimed, type m needs w_m · I of
// the idle GPU of S, I_S, spread over S's models in proportion to their idle GPU. Model t's
// pressure is the share of its idle GPU that restricted pods will claim:
// min(1, Σ_{m : t ∈ S_m} w_m · I / I_{S_m}). Empty without restricted types.
std::vector<double> ModelPressure(std::span<const TypicalPod> types,
                                  std::span<const uint32_t> model_ids,
                                  const framework::Snapshot& snapshot);

}  // namespace gpusched::plugins::gpu_fragmentation::internal
