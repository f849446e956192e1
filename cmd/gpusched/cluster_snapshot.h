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
// by key. The workload's warnings are ClusterListing::Notes (collections forbidden or not listed)
// and the count of pods left out.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "src/common/status.h"
#include "src/config/config.h"
#include "src/sim/workload.h"

namespace CLI {
class App;
}

namespace gpusched::cmd {

// The flags of the read-only commands that read a live cluster or manifests (explain,
// consolidate): --kubeconfig, -f/--filename (its help text the command's), -R/--recursive,
// --sync-timeout, -o/--output text|json and --seed.
struct ReadOnlyInputFlags {
  std::string kubeconfig;
  std::vector<std::string> files;
  bool recursive = false;
  int sync_timeout_s = 30;
  std::string output = "text";
  uint64_t seed = 42;

  void AddTo(CLI::App& app, const std::string& files_help);
  // The usage error when both a kubeconfig and files are given; "" otherwise.
  std::string Conflict() const;
};

struct ClusterSnapshot {
  sim::Workload workload;   // nodes, bound pods and the other kinds
  std::string description;  // "cluster https://127.0.0.1:6443 (context ...)"
  size_t pending_pods = 0;  // not yet bound, left out
};

// The simulator input of -f/--filename (files, directories, - for standard input; `recursive`
// as kubectl -R) appended to `w` (a snapshot's workload, or empty), the controllers expanded, and
// the file names appended to `source`. A file or object that does not decode is one rejection in
// w.rejected: the rest is still read. InvalidArgument when a file cannot be read, or when the
// result has no Node (naming the first rejection, if any).
common::Status AppendInputFiles(const std::vector<std::string>& files, bool recursive,
                                sim::Workload& w, std::string& source);

// Lists the cluster named by `kubeconfig` ("" for KUBECONFIG, in-cluster, ~/.kube/config).
// kUnavailable when the lists do not finish within `sync_timeout_s`.
common::StatusOr<ClusterSnapshot> SnapshotCluster(const std::string& kubeconfig,
                                                  const config::SchedulerConfig& config,
                                                  int sync_timeout_s);

}  // namespace gpusched::cmd
