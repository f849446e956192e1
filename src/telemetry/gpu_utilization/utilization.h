// SPDX-License-Identifier: Apache-2.0
// UtilizationRefresher: reads the GPU utilization of each node from DCGM exporter metrics
// through the Prometheus HTTP API and hands it to a sink (cmd/ wires the sink to
// cache::Cache::SetGpuUtilization, which GpuFit's score reads as NodeInfo::gpu_utilization).
//
//   every --gpu-utilization-refresh-interval (a thread owned by cmd/):
//     RunOnce ─► QueryVector(UtilizationQuery())  avg by node of DCGM_FI_DEV_GPU_UTIL (percent)
//             └► QueryVector(MemoryQuery())       avg by node of FB_USED / (FB_USED + FB_FREE)
//             ─► per node max(util / 100, memory fraction), clamped to 0..1 ─► sink(node, value)
//
// The node is named by the first non-empty label of kNodeLabels (the exporter's `Hostname`, or
// `kubernetes_node` / `node` added by Prometheus' Kubernetes service discovery relabelling).
// Staleness: a node's value is kept while its last successful reading is younger than
// `staleness`; then the sink gets -1 (unknown: GpuFit scores it neutral, 50), once. A failed
// query changes nothing but the age of the readings, so a dead Prometheus makes every node
// unknown after `staleness`, never blocks a scheduling cycle, and never crashes.
//
// Thread safety: RunOnce must be called by one thread at a time; the sink is called on it.
#pragma once

#include <array>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/common/clock.h"
#include "src/common/status.h"
#include "src/telemetry/prometheus/query.h"

namespace gpusched::telemetry::gpu_utilization {

// Labels that name the node, in order of preference.
inline constexpr std::array<std::string_view, 3> kNodeLabels = {"kubernetes_node", "node",
                                                                "Hostname"};

// The PromQL of the two queries.
std::string UtilizationQuery();
std::string MemoryQuery();

// Per node utilization 0..1 from the two query results (either may be empty): max(util / 100,
// memory fraction); NaN and negative readings and series without a node label are skipped.
// Sorted by node name.
std::vector<std::pair<std::string, double>> CombineReadings(
    const std::vector<prometheus::Series>& util, const std::vector<prometheus::Series>& memory);

struct Options {
  std::string prometheus_url;                                // e.g. http://prometheus:9090
  common::Duration staleness = std::chrono::seconds(120);    // > 0
  common::Duration query_timeout = std::chrono::seconds(5);  // per HTTP request
};

class UtilizationRefresher {
 public:
  // `utilization` is 0..1, or -1 for unknown (stale, or gone from Prometheus' answer).
  using Sink = std::function<void(std::string_view node, double utilization)>;

  UtilizationRefresher(Options options, prometheus::HttpGetter& http, const common::Clock& clock,
                       Sink sink);

  // One refresh round. Returns the utilization query's error (the readings then only age); a
  // failed memory query is tolerated (utilization alone is used).
  common::Status RunOnce();

  // Nodes with a fresh reading after the last RunOnce.
  int FreshNodesForTest() const;

 private:
  struct Reading {
    double value = -1;
    common::TimePoint at;
    bool unknown_sent = false;
  };
  void ExpireStale();

  Options options_;
  prometheus::HttpGetter& http_;
  const common::Clock& clock_;
  Sink sink_;
  std::map<std::string, Reading, std::less<>> readings_;
};

}  // namespace gpusched::telemetry::gpu_utilization
