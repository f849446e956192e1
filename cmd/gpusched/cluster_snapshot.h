// SPDX-License-Identifier: Apache-2.0
// A read-only snapshot of a live cluster as simulator input (`gpusched simulate --from-cluster`):
// the nodes, and the pods that are bound and not terminal, listed once through the scheduler's
// own informers (GET /api/v1/nodes and /api/v1/pods, non-terminal field selector). Nothing is
// written: the only requests are lists and the first watch, ended once both lists arrived.
//
// The pods keep their spec.nodeName (the simulator counts them as pre-bound, with the GPU devices
// of their gpusched.io/gpu-devices annotation, or those the cache would charge them to); pods not
// yet bound are left out (they belong to whichever scheduler is placing them). Nodes come in name
// order, pods in creation order. Runs on the calling thread plus the two informer threads, which
// are joined before it returns.
#pragma once

#include <string>

#include "src/common/status.h"
#include "src/config/config.h"
#include "src/sim/workload.h"

namespace gpusched::cmd {

struct ClusterSnapshot {
  sim::Workload workload;   // nodes and bound pods
  std::string description;  // "cluster https://127.0.0.1:6443 (context ...)"
  size_t pending_pods = 0;  // not yet bound, left out
};

// Lists the cluster named by `kubeconfig` ("" for KUBECONFIG, in-cluster, ~/.kube/config).
// kUnavailable when the lists do not finish within `sync_timeout_s`.
common::StatusOr<ClusterSnapshot> SnapshotCluster(const std::string& kubeconfig,
                                                  const config::SchedulerConfig& config,
                                                  int sync_timeout_s);

}  // namespace gpusched::cmd
