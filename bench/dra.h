// SPDX-License-Identifier: Apache-2.0
// gpusched-bench's DRA mode (--workload dra, issue #23): N nodes, each with a ResourceSlice of 8
// GPUs as NVIDIA's DRA driver publishes them (productName, memory capacity, cliqueId: two NVLink
// islands of 4 per node; half the nodes H100, half A100), one DeviceClass, four
// ResourceClaimTemplates, and M pods with one template claim each: 60 % one GPU chosen by product
// name with a CEL selector, 25 % two GPUs and 15 % four GPUs with matchAttribute cliqueId.
// Scheduled through the production Scheduler with the default profile (sim::Simulator: the
// resourceclaim controller, DynamicResources' Reserve and PreBind writes, the bind), one pod at a
// time as the other modes. With `mig`, the GPUs are in MIG mode, published as partitionable devices
// (KEP-4815), and every pod asks for one MIG partition. With `extended`, the class backs
// `nvidia.com/gpu` (KEP-5004) and the pods ask for 1, 2 or 4 `nvidia.com/gpu` with no claim: the
// scheduler makes each one's claim. See dra.cc and BENCHMARKS.md.
#pragma once

#include <cstdint>

#include "src/config/config.h"
#include "src/framework/registry.h"

namespace gpusched::bench {

struct DraFlags {
  int32_t nodes = 500;
  int32_t pods = 2000;
  uint64_t seed = 42;
  int repeat = 1;
  // The GPUs in MIG mode (partitionable devices: counter sets and 112 partitions per node) and
  // pods asking for one MIG partition each, instead of whole GPUs.
  bool mig = false;
  // Plain pods asking for nvidia.com/gpu, which the DeviceClass backs (extended resources).
  bool extended = false;
  // Unallocated ResourceClaims of the pods' mix that no pod uses (claims waiting for devices).
  int32_t waiting_claims = 0;
};

// Builds the cluster, schedules the pods and prints pods/s, per-pod latency, CPU time, claims
// allocated, pods unschedulable with their reasons and a digest of every claim's devices. Returns
// a process exit code.
int RunDra(const DraFlags& f, const config::SchedulerConfig& config,
           const framework::Registry& registry);

}  // namespace gpusched::bench
