// SPDX-License-Identifier: Apache-2.0
#include "src/scheduler/metrics_callbacks.h"

#include <algorithm>
#include <map>
#include <utility>

#include "src/api/gpu.h"
#include "src/metrics/catalog.h"

namespace gpusched::scheduler {

void RegisterSchedulerCallbacks(metrics::Registry& registry, const queue::SchedulingQueue& queue,
                                const cache::Cache& cache) {
  namespace n = metrics::names;
  metrics::AddCallback(registry, n::kPendingPods, [&queue](std::vector<metrics::Sample>& out) {
    queue::QueueCounts c = queue.Counts();
    out.push_back({{"active"}, static_cast<double>(c.active)});
    out.push_back({{"backoff"}, static_cast<double>(c.backoff)});
    out.push_back({{"unschedulable"}, static_cast<double>(c.unschedulable)});
    out.push_back({{"gated"}, static_cast<double>(c.gated)});
  });
  metrics::AddCallback(
      registry, n::kQueueIncomingPods, [&queue](std::vector<metrics::Sample>& out) {
        for (const auto& [key, count] : queue.IncomingCountsForMetrics()) {
          size_t bar = key.find('|');
          if (bar == std::string::npos) continue;
          out.push_back({{key.substr(0, bar), key.substr(bar + 1)}, static_cast<double>(count)});
        }
      });
  metrics::AddCallback(
      registry, n::kUnschedulablePods, [&queue](std::vector<metrics::Sample>& out) {
        for (auto& c : queue.UnschedulablePluginCountsForMetrics()) {
          out.push_back({{std::move(c.plugin), std::move(c.profile)}, static_cast<double>(c.pods)});
        }
      });
  metrics::AddCallback(registry, n::kCacheSize, [&cache](std::vector<metrics::Sample>& out) {
    int32_t assumed = cache.AssumedPodCount();
    out.push_back({{"nodes"}, static_cast<double>(cache.NodeCount())});
    out.push_back({{"pods"}, static_cast<double>(cache.PodCount())});
    out.push_back({{"assumed_pods"}, static_cast<double>(assumed)});
  });
}

ClusterGpuUsage SummariseGpus(const cache::Cache& cache,
                              const std::vector<std::string>& node_group_labels) {
  std::vector<common::Atom> keys;
  for (const auto& k : node_group_labels) keys.push_back(common::Intern(k));
  std::map<std::pair<std::string, std::string>, GpuGroupUsage> groups;
  int64_t free_total = 0;
  int64_t free_stranded = 0;
  cache.VisitNodes([&](const framework::NodeInfo& ni) {
    const api::Node& node = *ni.node;
    if (node.gpu.count <= 0) return;
    std::string model(common::Str(node.gpu.model));
    if (model.empty()) model = "unknown";
    std::string group;
    for (common::Atom k : keys) {
      common::Atom v;
      if (node.meta.labels.Get(k, &v)) {
        group = std::string(common::Str(v));
        break;
      }
    }
    GpuGroupUsage& g = groups[{model, group}];
    g.model = model;
    g.node_group = group;
    const int32_t count = std::min<int32_t>(node.gpu.count, api::kMaxGpusPerNode);
    for (int32_t i = 0; i < count; ++i) {
      if (!node.gpu.Healthy(i)) continue;
      const api::GpuDeviceState& d = ni.gpus[static_cast<size_t>(i)];
      ++g.gpus;
      g.allocated += d.used_milli / static_cast<double>(api::kMilliPerGpu);
      const int64_t free = api::kMilliPerGpu - d.used_milli;
      free_total += free;
      if (d.used_milli > 0 && d.used_milli < api::kMilliPerGpu) {
        ++g.shared_gpus;
        g.shared_pods += d.pods;
        free_stranded += free;
      }
    }
  });
  ClusterGpuUsage out;
  for (auto& [key, g] : groups) out.groups.push_back(std::move(g));
  out.fragmentation =
      free_total > 0 ? static_cast<double>(free_stranded) / static_cast<double>(free_total) : 0;
  return out;
}

void RegisterClusterGpuCallbacks(metrics::Registry& registry, const cache::Cache& cache,
                                 std::vector<std::string> node_group_labels) {
  namespace n = metrics::names;
  // One summary per scrape is enough; each callback recomputes it (a pass over the nodes under
  // the cache lock, which is cheap next to a scrape interval).
  auto per_group = [&cache, node_group_labels](auto field) {
    return [&cache, node_group_labels, field](std::vector<metrics::Sample>& out) {
      for (const auto& g : SummariseGpus(cache, node_group_labels).groups) {
        out.push_back({{g.model, g.node_group}, field(g)});
      }
    };
  };
  metrics::AddCallback(registry, n::kGpus, per_group([](const GpuGroupUsage& g) {
                         return static_cast<double>(g.gpus);
                       }));
  metrics::AddCallback(registry, n::kGpusAllocated,
                       per_group([](const GpuGroupUsage& g) { return g.allocated; }));
  metrics::AddCallback(registry, n::kSharedGpus, per_group([](const GpuGroupUsage& g) {
                         return static_cast<double>(g.shared_gpus);
                       }));
  metrics::AddCallback(registry, n::kSharedGpuPods, per_group([](const GpuGroupUsage& g) {
                         return static_cast<double>(g.shared_pods);
                       }));
  metrics::AddCallback(registry, n::kFragmentation,
                       [&cache, node_group_labels](std::vector<metrics::Sample>& out) {
                         out.push_back({{}, SummariseGpus(cache, node_group_labels).fragmentation});
                       });
}

void RegisterGangCallbacks(metrics::Registry& registry, const cache::GangStore& gangs) {
  metrics::AddCallback(registry, metrics::names::kGangs,
                       [&gangs](std::vector<metrics::Sample>& out) {
                         double waiting = 0, timed_out = 0, placed = 0;
                         for (const cache::GangStore::GangState& g : gangs.States()) {
                           waiting += g.waiting ? 1 : 0;
                           timed_out += g.timed_out ? 1 : 0;
                           placed += g.placed && !g.waiting ? 1 : 0;
                         }
                         out.push_back({{"waiting"}, waiting});
                         out.push_back({{"timed_out"}, timed_out});
                         out.push_back({{"placed"}, placed});
                       });
}

}  // namespace gpusched::scheduler
