// SPDX-License-Identifier: Apache-2.0
// A read-only snapshot of a live cluster as simulator input (`gpusched simulate --from-cluster`):
// every kind the scheduler reads, listed once through its own informers (ListCluster,
// cluster_list.h), and the PriorityClasses and ResourceClaimTemplates the input's pods are
// admitted and given claims with (its AdmissionObjects). Nothing is written.
//
// The pods are those bound and not terminal. They keep their spec.nodeName (the simulator counts
// them as pre-bound, with the GPU devices of their gpusched.io/gpu-devices annotation, or those the
// cache would charge them to); pods not yet bound are left out (they belong to whichever scheduler
// is placing them) and counted. Nodes come in name order, pods in creation order, the other kinds
// by key. The workload's warnings are ClusterListing::Notes (collections forbidden or not listed).
#pragma once

#include <string>

#include "src/common/status.h"
#include "src/config/config.h"
#include "src/sim/workload.h"

namespace gpusched::cmd {

struct ClusterSnapshot {
  sim::Workload workload;   // nodes, bound pods and the other kinds
  std::string description;  // "cluster https://127.0.0.1:6443 (context ...)"
  size_t pending_pods = 0;  // not yet bound, left out
};

// Lists the cluster named by `kubeconfig` ("" for KUBECONFIG, in-cluster, ~/.kube/config).
// kUnavailable when the lists do not finish within `sync_timeout_s`.
common::StatusOr<ClusterSnapshot> SnapshotCluster(const std::string& kubeconfig,
                                                  const config::SchedulerConfig& config,
                                                  int sync_timeout_s);

}  // namespace gpusched::cmd
