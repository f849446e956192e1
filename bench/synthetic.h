// SPDX-License-Identifier: Apache-2.0
// Synthetic mixed-GPU clusters for the benchmarks: node groups like the simulator's built-in
// example plus big CPU-only nodes (A100 / V100 / T4 / A10G / CPU-only, GFD and seed label
// dialects), three zones, GPU taints, and a pod mix of CPU services, whole-GPU pods (1/2/4/8 GPUs,
// some pinned to a model) and zone-affine pods (required node affinity). Generated as Kubernetes
// JSON manifests and decoded by the production decoder, so derived fields (GPU info, requests) are
// the real ones. Deterministic for a given seed.
#pragma once

#include <cstdint>
#include <string>

#include "src/common/status.h"
#include "src/sim/workload.h"

namespace gpusched::bench {

// One JSON object per line ("{...}\n"), joined into a v1 List by ManifestList.
std::string SyntheticNodesJson(int32_t nodes, uint64_t seed);
// With `replicaset_owner`, every pod gets a controller ownerReference to the ReplicaSet of its
// template (shape x zone-affinity variant), as a Deployment's pods have; the pods are otherwise
// the same (same random draws), so PodTopologySpread's system default constraints apply to them.
std::string SyntheticPodsJson(int32_t pods, uint64_t seed, bool replicaset_owner = false);
// Wraps newline-separated objects into {"apiVersion":"v1","kind":"List","items":[...]}.
std::string ManifestList(const std::string& objects);

common::StatusOr<sim::Workload> SyntheticWorkload(int32_t nodes, int32_t pods, uint64_t seed,
                                                  bool replicaset_owner = false);

}  // namespace gpusched::bench
