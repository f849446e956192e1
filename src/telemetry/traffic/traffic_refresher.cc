// SPDX-License-Identifier: Apache-2.0
#include "src/telemetry/traffic/traffic_refresher.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <utility>

namespace gpusched::telemetry::traffic {
namespace {

using prometheus::Series;

constexpr double kBytesPerMB = 1e6;

// The first non-empty label of `names`, or "".
std::string_view FirstLabel(const Series& s, std::initializer_list<std::string_view> names) {
  for (std::string_view n : names) {
    if (std::string_view v = s.Label(n); !v.empty()) return v;
  }
  return {};
}

std::string Describe(const Series& s) {
  std::string out = "{";
  for (size_t i = 0; i < s.labels.size(); ++i) {
    if (i > 0) out += ", ";
    out += s.labels[i].first + "=\"" + s.labels[i].second + "\"";
  }
  return out + "}";
}

}  // namespace

ParsedSeries ParseTrafficSeries(const std::vector<Series>& series) {
  ParsedSeries out;
  for (const Series& s : series) {
    api::WorkloadEdge e;
    e.src_workload = std::string(s.Label("source_workload"));
    e.src_namespace = std::string(FirstLabel(s, {"source_workload_namespace", "source_namespace"}));
    e.dst_workload = std::string(s.Label("destination_workload"));
    e.dst_namespace =
        std::string(FirstLabel(s, {"destination_workload_namespace", "destination_namespace"}));
    std::string_view missing;
    if (e.src_workload.empty()) {
      missing = "source_workload";
    } else if (e.src_namespace.empty()) {
      missing = "source_workload_namespace (or source_namespace)";
    } else if (e.dst_workload.empty()) {
      missing = "destination_workload";
    } else if (e.dst_namespace.empty()) {
      missing = "destination_workload_namespace (or destination_namespace)";
    }
    if (!missing.empty()) {
      out.skipped.push_back("series " + Describe(s) + ": missing label " + std::string(missing));
      continue;
    }
    if (e.src_workload == "unknown" || e.dst_workload == "unknown") {
      // Istio's name for a peer outside the mesh: no pods to place near.
      continue;
    }
    if (!std::isfinite(s.value) || s.value < 0) {
      out.skipped.push_back("series " + Describe(s) +
                            ": value must be a finite number of bytes "
                            "per second >= 0, got " +
                            fmt::format("{}", s.value));
      out.bad_values.push_back(std::move(e));
      continue;
    }
    if (s.value == 0) continue;
    e.mbps = s.value / kBytesPerMB;
    out.edges.push_back(std::move(e));
  }
  return out;
}

TrafficMatrixRefresher::TrafficMatrixRefresher(Options options, prometheus::HttpGetter& http,
                                               const common::Clock& clock,
                                               cache::NetworkStore& store)
    : options_(std::move(options)), http_(http), clock_(clock), store_(store) {}

common::Status TrafficMatrixRefresher::RunOnce() {
  last_ = RoundStats{};
  const common::TimePoint now = clock_.Now();
  auto answer = prometheus::QueryVector(http_, options_.prometheus_url, options_.query,
                                        options_.query_timeout);
  common::Status result = common::Status::Ok();
  if (!answer.ok()) {
    result =
        common::Status(answer.status().code(),
                       "NetworkLocality traffic matrix: query " + options_.prometheus_url + " \"" +
                           options_.query + "\": " + std::string(answer.status().message()));
    if (result.message() != last_error_) {
      spdlog::warn("{}; keeping the last matrix ({} edges) until it is older than {}s",
                   result.message(), readings_.size(), common::Seconds(options_.staleness));
      last_error_ = std::string(result.message());
    }
  } else {
    if (!last_error_.empty()) {
      spdlog::info("NetworkLocality traffic matrix: query {} succeeds again",
                   options_.prometheus_url);
      last_error_.clear();
    }
    ParsedSeries parsed = ParseTrafficSeries(*answer);
    last_.series = static_cast<int>(answer->size());
    last_.skipped = static_cast<int>(parsed.skipped.size());
    if (parsed.skipped != last_skipped_) {
      if (!parsed.skipped.empty()) {
        std::string msg;
        for (size_t i = 0; i < parsed.skipped.size() && i < 5; ++i) msg += "; " + parsed.skipped[i];
        if (parsed.skipped.size() > 5)
          msg += fmt::format("; and {} more", parsed.skipped.size() - 5);
        spdlog::warn("NetworkLocality traffic matrix: query \"{}\": skipped {} of {} series{}",
                     options_.query, parsed.skipped.size(), answer->size(), msg);
      }
      last_skipped_ = parsed.skipped;
    }
    // A series with a bad value keeps its edge's previous reading; every other edge the answer
    // does not carry is gone.
    std::map<EdgeKey, Reading> next;
    for (const api::WorkloadEdge& e : parsed.bad_values) {
      EdgeKey k{e.src_namespace, e.src_workload, e.dst_namespace, e.dst_workload};
      if (auto it = readings_.find(k); it != readings_.end()) next.emplace(k, it->second);
    }
    std::map<EdgeKey, double> fresh;
    for (const api::WorkloadEdge& e : parsed.edges) {
      fresh[EdgeKey{e.src_namespace, e.src_workload, e.dst_namespace, e.dst_workload}] += e.mbps;
    }
    for (const auto& [k, mbps] : fresh) next[k] = Reading{mbps, now};
    readings_ = std::move(next);
  }
  // Staleness.
  for (auto it = readings_.begin(); it != readings_.end();) {
    it = now - it->second.at > options_.staleness ? readings_.erase(it) : std::next(it);
  }
  Publish();
  return result;
}

void TrafficMatrixRefresher::Publish() {
  std::vector<api::WorkloadEdge> edges;
  edges.reserve(readings_.size());
  for (const auto& [k, r] : readings_) {
    const auto& [sn, sw, dn, dw] = k;
    edges.push_back(api::WorkloadEdge{sn, sw, dn, dw, r.mbps});
  }
  last_.edges = static_cast<int>(edges.size());
  auto same = [](const api::WorkloadEdge& a, const api::WorkloadEdge& b) {
    return a.src_namespace == b.src_namespace && a.src_workload == b.src_workload &&
           a.dst_namespace == b.dst_namespace && a.dst_workload == b.dst_workload &&
           a.mbps == b.mbps;
  };
  if (ever_published_ && edges.size() == published_.size() &&
      std::equal(edges.begin(), edges.end(), published_.begin(), same)) {
    return;
  }
  published_ = edges;
  ever_published_ = true;
  last_.published = true;
  store_.SetTrafficMatrix(edges.empty() ? nullptr
                                        : std::make_shared<const api::TrafficMatrix>(
                                              options_.workload_label, std::move(edges)));
}

}  // namespace gpusched::telemetry::traffic
