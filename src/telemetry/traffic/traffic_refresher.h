// SPDX-License-Identifier: Apache-2.0
// TrafficMatrixRefresher: the measured traffic matrix, from service mesh metrics in Prometheus,
// published into the cache::NetworkStore for NetworkLocality (docs/network-locality.md).
//
//   every --network-traffic-refresh-interval (a thread owned by cmd/):
//     RunOnce ─► QueryVector(query)   one series per (source, destination) workload pair,
//             │                        value = bytes per second
//             ├► ParseTrafficSeries   series -> api::WorkloadEdge (MB/s); malformed series skipped
//             ├► merge into readings  each edge keeps the time of the answer that carried it
//             └► drop stale edges ─► cache::NetworkStore::SetTrafficMatrix
//
// Series labels. The workload of each side is `source_workload` / `destination_workload` and its
// namespace `source_workload_namespace` / `destination_workload_namespace` (Istio), or, when
// those are absent, `source_namespace` / `destination_namespace` (Hubble's labelsContext names).
//
// Freshness. A successful answer is the truth for every edge it carries; an edge it no longer
// carries is gone (no traffic in the rate window). A series that is malformed (a value that is
// not a number, NaN, ±Inf or negative; a missing workload or namespace label) is skipped with a
// message and its edge keeps its previous reading. A failed query (Prometheus down, HTTP error,
// bad payload) changes nothing: the last good matrix is kept. Either way an edge whose last
// reading is older than `staleness` is dropped, so a dead Prometheus empties the matrix after
// `staleness` — the plugin then works from AppGroups and annotations alone. The store is written
// only when the set of edges or their values change; nothing here ever blocks a scheduling cycle
// (readers take the store's current immutable catalog).
//
// Logging (spdlog): a failed query at warn with the URL, the query and the reason, when the
// reason changes; recovery at info; skipped series at warn, once per distinct set of reasons.
//
// Thread safety: RunOnce must be called by one thread at a time. The store is thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "src/api/traffic_matrix.h"
#include "src/cache/network_store.h"
#include "src/common/clock.h"
#include "src/common/status.h"
#include "src/telemetry/prometheus/query.h"

namespace gpusched::telemetry::traffic {

// Istio (sidecar or ambient waypoint telemetry v2): bytes of TCP connections and of HTTP/gRPC
// request and response bodies, as reported by the client side (reporter="source"; the server
// side reports the same bytes again), per workload pair. Bytes per second over 5 minutes.
inline constexpr std::string_view kIstioQuery =
    "sum by (source_workload, source_workload_namespace, destination_workload, "
    "destination_workload_namespace) (rate({__name__=~\"istio_tcp_sent_bytes_total|"
    "istio_tcp_received_bytes_total|istio_request_bytes_sum|istio_response_bytes_sum\", "
    "reporter=\"source\"}[5m]))";

// Cilium/Hubble exports flow counts, not bytes (hubble_flows_processed_total with
// labelsContext=source_namespace,source_workload,destination_namespace,destination_workload).
// This query turns flows per second into a traffic weight with an assumed 10 kB per flow; use it
// only as a relative weight, or replace the constant with a measured mean. See
// docs/network-locality.md.
inline constexpr std::string_view kHubbleFlowsQuery =
    "sum by (source_workload, source_namespace, destination_workload, destination_namespace) "
    "(rate(hubble_flows_processed_total{verdict=\"FORWARDED\"}[5m])) * 10000";

struct Options {
  std::string prometheus_url;                    // e.g. http://prometheus:9090
  std::string query = std::string(kIstioQuery);  // PromQL; values in bytes per second
  // The pod label naming a workload.
  std::string workload_label = std::string(api::kDefaultWorkloadLabel);
  common::Duration staleness = std::chrono::minutes(5);      // > 0
  common::Duration query_timeout = std::chrono::seconds(5);  // per HTTP request
};

// One series converted, or why it was skipped.
struct ParsedSeries {
  std::vector<api::WorkloadEdge> edges;  // MB/s > 0; zero-traffic series are dropped silently
  std::vector<std::string> skipped;      // one message per malformed series, naming label and value
  // Edges of series whose labels were fine but whose value was not (mbps 0): they keep their
  // previous reading.
  std::vector<api::WorkloadEdge> bad_values;
};

// Converts an instant vector of bytes/s per workload pair into edges (MB/s = bytes/s / 10^6).
ParsedSeries ParseTrafficSeries(const std::vector<prometheus::Series>& series);

// What the last RunOnce did.
struct RoundStats {
  int series = 0;          // in the answer
  int skipped = 0;         // malformed series
  int edges = 0;           // in the published matrix
  bool published = false;  // the store was written
};

class TrafficMatrixRefresher {
 public:
  // `http`, `clock` and `store` are borrowed and must outlive the refresher.
  TrafficMatrixRefresher(Options options, prometheus::HttpGetter& http, const common::Clock& clock,
                         cache::NetworkStore& store);

  // One refresh round. Returns the query's error (the matrix then only ages) naming the URL, the
  // query and the reason.
  common::Status RunOnce();

  const RoundStats& last_round() const { return last_; }

 private:
  using EdgeKey = std::tuple<std::string, std::string, std::string, std::string>;
  struct Reading {
    double mbps = 0;
    common::TimePoint at;
  };
  void Publish();

  Options options_;
  prometheus::HttpGetter& http_;
  const common::Clock& clock_;
  cache::NetworkStore& store_;
  std::map<EdgeKey, Reading> readings_;
  std::vector<api::WorkloadEdge> published_;  // what the store holds
  bool ever_published_ = false;
  std::string last_error_;
  std::vector<std::string> last_skipped_;
  RoundStats last_;
};

}  // namespace gpusched::telemetry::traffic
