// SPDX-License-Identifier: Apache-2.0
// Loaders for the Alibaba GPU cluster trace v2023 ("openb", clusterdata/cluster-trace-gpu-v2023;
// docs/simulator.md, "The trace files"). Both lists are CSV with a header row; columns are
// found by name, extra columns are ignored, and the pod list's last six columns (gpu_spec, qos,
// pod_phase, *_time) are optional (the multigpu files omit them).
//
//   node list  sn,cpu_milli,memory_mib,gpu,model              ("num_gpu" and "gpu_type" accepted)
//   pod list   name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,...
//
// Conversion (as the paper's simulator does, docs/simulator.md protocol steps 1–2):
//   Node: allocatable = capacity = cpu_milli, memory_mib MiB, pods 1001, nvidia.com/gpu = gpu;
//         node.gpu = {count, model, memory per model from the artifact's table} set directly
//         (also written as gpu.nvidia.com/{model,count,memory} labels, and the model as
//         alibabacloud.com/gpu-card-model); label gpusched.io/node-group = "<model>x<count>".
//   Pod:  one container with requests = limits = cpu_milli, memory_mib MiB;
//         pod.gpu = GpuRequest{count = num_gpu, milli = gpu_milli, models = gpu_spec split on '|'}
//         set directly (no nvidia.com/gpu resource: a shared GPU is not a device-plugin unit);
//         creation/deletion/scheduled times (unless keep_times) and phase are dropped; qos
//         only marks pods movable (movable_qos).
//   Model names go through api::NormalizeGpuModel on both sides; the trace's names ("V100M16",
//   "G2", ...) contain no separator, so matching stays the paper's exact string match.
//
// Errors: a bad row is an InvalidArgument naming the file, the line (1-based), the column and the
// value, e.g.  pods.csv:17: column gpu_milli: invalid value "abc" (want an integer 0..1000).
// Nothing is skipped: every data row becomes an object or an error. No exceptions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "src/api/types.h"
#include "src/common/status.h"
#include "src/config/config.h"
#include "src/sim/workload.h"

namespace gpusched::sim::trace {

// Per-GPU memory of the trace's models in MiB (the artifact's table, docs/simulator.md "The trace
// files"; G2 and G3 are placeholders); 0 for a model not in the table.
int64_t OpenbGpuMemoryMiB(std::string_view model);

struct OpenbOptions {
  // The profile that schedules the pods.
  std::string scheduler_name = std::string(config::kDefaultSchedulerName);
  std::string pod_namespace = "openb";
  // allocatable pods of every node (the paper's node YAML uses 1001).
  int64_t node_max_pods = 1001;
  // Time replay (src/sim/replay.h): keep creation_time as the gpusched.io/arrival annotation and
  // deletion_time - creation_time as gpusched.io/duration (seconds). Off: times are dropped.
  bool keep_times = false;
  // Pods whose qos column ("LS", "BE", "Burstable", "Guaranteed") is listed are read as the one
  // replica of a ReplicaSet of their own (named after the pod) with gpusched.io/movable: "true",
  // so Consolidation may move them and the simulator recreates them (issue #41's what-if: "were
  // my latency-sensitive pods movable Deployments?"). A file without the qos column is an error
  // then. Empty: every pod is bare, as the trace gives it.
  std::vector<std::string> movable_qos;
};

common::StatusOr<std::vector<api::NodePtr>> ParseOpenbNodes(std::string_view csv,
                                                            std::string_view source,
                                                            const OpenbOptions& options = {});
common::StatusOr<std::vector<api::PodPtr>> ParseOpenbPods(std::string_view csv,
                                                          std::string_view source,
                                                          const OpenbOptions& options = {});

// Reads both files into a Workload (pods in file order).
common::StatusOr<Workload> LoadOpenbTrace(const std::string& nodes_path,
                                          const std::string& pods_path,
                                          const OpenbOptions& options = {});

}  // namespace gpusched::sim::trace
