// SPDX-License-Identifier: Apache-2.0
#include "src/telemetry/gpu_utilization/utilization.h"

#include <algorithm>
#include <cmath>

namespace gpusched::telemetry::gpu_utilization {
namespace {

std::string ByNode() {
  std::string out = "avg by (";
  for (size_t i = 0; i < kNodeLabels.size(); ++i) {
    if (i > 0) out += ", ";
    out += kNodeLabels[i];
  }
  out += ") ";
  return out;
}

std::string_view NodeOf(const prometheus::Series& s) {
  for (std::string_view label : kNodeLabels) {
    std::string_view v = s.Label(label);
    if (!v.empty()) return v;
  }
  return {};
}

void Merge(std::map<std::string, double, std::less<>>& out,
           const std::vector<prometheus::Series>& series, double scale) {
  for (const prometheus::Series& s : series) {
    const std::string_view node = NodeOf(s);
    if (node.empty() || !std::isfinite(s.value) || s.value < 0) continue;
    const double v = std::min(s.value * scale, 1.0);
    auto it = out.find(node);
    if (it == out.end()) {
      out.emplace(std::string(node), v);
    } else {
      it->second = std::max(it->second, v);
    }
  }
}

}  // namespace

std::string UtilizationQuery() { return ByNode() + "(DCGM_FI_DEV_GPU_UTIL)"; }

std::string MemoryQuery() {
  return ByNode() + "(DCGM_FI_DEV_FB_USED / (DCGM_FI_DEV_FB_USED + DCGM_FI_DEV_FB_FREE))";
}

std::vector<std::pair<std::string, double>> CombineReadings(
    const std::vector<prometheus::Series>& util, const std::vector<prometheus::Series>& memory) {
  std::map<std::string, double, std::less<>> merged;
  Merge(merged, util, 0.01);
  Merge(merged, memory, 1.0);
  return {merged.begin(), merged.end()};
}

UtilizationRefresher::UtilizationRefresher(Options options, prometheus::HttpGetter& http,
                                           const common::Clock& clock, Sink sink)
    : options_(std::move(options)), http_(http), clock_(clock), sink_(std::move(sink)) {}

void UtilizationRefresher::ExpireStale() {
  const common::TimePoint now = clock_.Now();
  for (auto& [node, r] : readings_) {
    if (!r.unknown_sent && now - r.at > options_.staleness) {
      r.unknown_sent = true;
      sink_(node, -1);
    }
  }
}

common::Status UtilizationRefresher::RunOnce() {
  auto util = prometheus::QueryVector(http_, options_.prometheus_url, UtilizationQuery(),
                                      options_.query_timeout);
  if (!util.ok()) {
    ExpireStale();
    return util.status().WithContext("GPU utilization from Prometheus");
  }
  auto memory = prometheus::QueryVector(http_, options_.prometheus_url, MemoryQuery(),
                                        options_.query_timeout);
  const std::vector<prometheus::Series> none;
  const common::TimePoint now = clock_.Now();
  for (const auto& [node, value] : CombineReadings(*util, memory.ok() ? *memory : none)) {
    Reading& r = readings_[node];
    const bool changed = r.unknown_sent || r.value != value || r.at == common::TimePoint();
    r.value = value;
    r.at = now;
    r.unknown_sent = false;
    if (changed) sink_(node, value);
  }
  ExpireStale();
  return common::Status::Ok();
}

int UtilizationRefresher::FreshNodesForTest() const {
  int n = 0;
  for (const auto& [node, r] : readings_) n += r.unknown_sent ? 0 : 1;
  return n;
}

}  // namespace gpusched::telemetry::gpu_utilization
