// SPDX-License-Identifier: Apache-2.0
// The built-in example: what `gpusched simulate` runs with no input. It is generated
// deterministically in C++ (no files), and can be printed as Kubernetes manifests
// (`gpusched simulate --print-example`) to be edited and re-run with `-f`.
//
// Cluster: an EKS-like cluster in us-east-1, three zones (a/b/c), 48 nodes in seven node groups:
//   p4d.24xlarge   8 x A100-SXM4-40GB  96 vCPU 1152Gi   6 nodes  GFD labels (nvidia.com/gpu.*)
//   p3.8xlarge     4 x V100-SXM2-16GB  32 vCPU  244Gi   6 nodes  seed labels (gpu.nvidia.com/*)
//   p3.2xlarge     1 x V100-SXM2-16GB   8 vCPU   61Gi   6 nodes  seed labels
//   g4dn.12xlarge  4 x T4              48 vCPU  192Gi   6 nodes  GFD labels
//   g4dn.xlarge    1 x T4               4 vCPU   16Gi   9 nodes  GFD labels
//   g5.12xlarge    4 x A10G            48 vCPU  192Gi   6 nodes  seed labels
//   m5.4xlarge     CPU only            16 vCPU   64Gi   9 nodes
// GPU nodes carry the taint nvidia.com/gpu=present:NoSchedule (as EKS GPU node groups commonly
// do); GPU pods tolerate it. Allocatable is capacity minus EKS's kube-reserved formula.
//
// Workload: 269 pods arriving one by one: 1-8-GPU training pods (some requiring A100 or V100),
// inference pods with model alternatives ("T4|A10G") and per-GPU memory minimums
// (gpu.nvidia.com/memory), CPU services and batch jobs, plus four pods that must stay pending:
//   ml-training/h100-benchmark      asks for model H100, which the cluster does not have
//   ml-training/mega-train-16g      asks for 16 GPUs on one node
//   data/bigmem-analytics           128Gi of memory, more than any untainted node has
//   inference/embedder-bad-annotation  gpu.nvidia.com/memory: "lots" (malformed)
// Every other pod fits, whatever the tie-breaks (sim_test checks seeds 1-20), because the
// arrival order is chosen for it: pods with model constraints and whole-node shapes arrive first,
// flexible ones last. A100, A10G and T4 end fully allocated; V100 keeps 7 GPUs free.
#pragma once

#include <string>

#include "src/common/status.h"
#include "src/sim/workload.h"

namespace gpusched::sim {

// The example as objects, built directly (the same derivations as the decoder).
common::StatusOr<Workload> BuiltinExample();

// The example as multi-document YAML manifests (Nodes first, then Pods in arrival order).
// Decoding it gives the same objects as BuiltinExample().
std::string BuiltinExampleYaml();

}  // namespace gpusched::sim
