// SPDX-License-Identifier: Apache-2.0
// Scrape-time metric callbacks of the scheduler: values its components already keep (queue
// lengths, incoming counts, cache sizes, the GPU inventory and usage) are read when Prometheus
// scrapes, so the scheduling cycle pays nothing for them.
//
//   RegisterSchedulerCallbacks   scheduler_pending_pods{queue},
//   scheduler_queue_incoming_pods_total,
//                                scheduler_unschedulable_pods{plugin,profile},
//                                scheduler_cache_size{type}
//   RegisterClusterGpuCallbacks  gpusched_cluster_gpus / _gpus_allocated / _shared_gpus /
//                                _shared_gpu_pods{model,node_group} and
//                                gpusched_cluster_gpu_fragmentation_ratio
//   RegisterGangCallbacks        gpusched_gangs{state}
// Scheduler::Create registers them when SchedulerDeps::metrics is set.
//
// Thread safety: the callbacks run on the scraping thread and take the queue's or the cache's
// lock for the duration of one pass over its pods or nodes.
#pragma once

#include <string>
#include <vector>

#include "src/cache/cache.h"
#include "src/cache/gang_store.h"
#include "src/metrics/registry.h"
#include "src/queue/scheduling_queue.h"

namespace gpusched::scheduler {

// `queue` and `cache` must outlive every scrape of `registry`.
void RegisterSchedulerCallbacks(metrics::Registry& registry, const queue::SchedulingQueue& queue,
                                const cache::Cache& cache);

// gpusched_gangs{state}: waiting, timed_out (a subset of waiting), placed. `gangs` must outlive
// every scrape.
void RegisterGangCallbacks(metrics::Registry& registry, const cache::GangStore& gangs);

// The GPU summary behind the gpusched_cluster_* gauges.
struct GpuGroupUsage {
  std::string model;        // normalised model; "unknown" when the node does not say
  std::string node_group;   // value of the node-group label; "" when absent
  int64_t gpus = 0;         // healthy devices
  double allocated = 0;     // in GPU units (sum of used milli / 1000)
  int64_t shared_gpus = 0;  // devices with a fractional share on them
  int64_t shared_pods = 0;  // pods holding those shares (per device)
};
struct ClusterGpuUsage {
  std::vector<GpuGroupUsage> groups;  // sorted by (model, node_group)
  // Share of free capacity stranded on partly used devices: Σ free milli of devices with
  // 0 < used < 1000, over Σ free milli of all healthy devices (0 when nothing is free).
  double fragmentation = 0;
};
// Summarises the cache's nodes. `node_group_labels`: label keys tried in order for the group
// (e.g. eks.amazonaws.com/nodegroup, cloud.google.com/gke-nodepool).
ClusterGpuUsage SummariseGpus(const cache::Cache& cache,
                              const std::vector<std::string>& node_group_labels);

void RegisterClusterGpuCallbacks(metrics::Registry& registry, const cache::Cache& cache,
                                 std::vector<std::string> node_group_labels);

}  // namespace gpusched::scheduler
