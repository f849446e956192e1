// SPDX-License-Identifier: Apache-2.0
#include "src/sim/compare.h"

#include <algorithm>
#include <boost/json.hpp>
#include <cstdio>

namespace gpusched::sim {
namespace {

std::string Percent(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f%%", v);
  return buf;
}

double GpuAllocation(const Report& r) {
  int64_t used = 0;
  int64_t total = 0;
  for (const ModelRow& m : r.models) {
    used += m.milli_allocated;
    total += m.milli_total;
  }
  return total > 0 ? 100.0 * static_cast<double>(used) / static_cast<double>(total) : 0.0;
}

}  // namespace

std::string FormatComparisonText(const std::vector<ComparedRun>& runs) {
  std::vector<std::vector<std::string>> rows = {{""}};
  for (const ComparedRun& run : runs) rows[0].push_back(run.name);
  auto row = [&](std::string label, auto value) {
    std::vector<std::string> cells = {std::move(label)};
    for (const ComparedRun& run : runs) cells.push_back(value(run));
    rows.push_back(std::move(cells));
  };
  row("profile", [](const ComparedRun& x) { return x.report.profile; });
  row("pods scheduled",
      [](const ComparedRun& x) { return std::to_string(x.report.stats.scheduled); });
  row("pods unschedulable",
      [](const ComparedRun& x) { return std::to_string(x.report.stats.unschedulable); });
  row("GPU allocation at the end",
      [](const ComparedRun& x) { return Percent(GpuAllocation(x.report)); });
  row("GPUs partly used",
      [](const ComparedRun& x) { return std::to_string(x.report.gpus_partly_used); });
  row("GPU nodes idle",
      [](const ComparedRun& x) { return std::to_string(x.report.gpu_nodes_idle); });
  row("decisions", [](const ComparedRun& x) { return std::to_string(x.report.stats.decisions); });
  const bool replay = std::any_of(runs.begin(), runs.end(),
                                  [](const ComparedRun& x) { return x.replay.has_value(); });
  if (replay) {
    row("GPU allocation, mean over time", [](const ComparedRun& x) {
      return x.replay ? Percent(x.replay->mean_gpu_allocation) : std::string("-");
    });
    row("GPU allocation, peak", [](const ComparedRun& x) {
      return x.replay ? Percent(x.replay->peak_gpu_allocation) : std::string("-");
    });
    row("pods departed", [](const ComparedRun& x) {
      return x.replay ? std::to_string(x.replay->departed) : std::string("-");
    });
    row("pending GPU-hours", [](const ComparedRun& x) {
      if (!x.replay || x.replay->waits.empty()) return std::string("-");
      char buf[32];
      std::snprintf(buf, sizeof(buf), "%.2f", x.replay->waits.back().pending_gpu_hours);
      return std::string(buf);
    });
  }
  std::vector<size_t> width(rows[0].size(), 0);
  for (const auto& r : rows) {
    for (size_t c = 0; c < r.size(); ++c) width[c] = std::max(width[c], r[c].size());
  }
  std::string out =
      "Comparison on " + (runs.empty() ? std::string() : runs[0].report.source) + "\n";
  for (const auto& r : rows) {
    std::string line = "  " + r[0] + std::string(width[0] - r[0].size(), ' ');
    for (size_t c = 1; c < r.size(); ++c)
      line += "  " + std::string(width[c] - r[c].size(), ' ') + r[c];
    out += line + "\n";
  }
  return out;
}

boost::json::value ComparisonToJson(const std::vector<ComparedRun>& runs) {
  boost::json::array out;
  for (const ComparedRun& run : runs) {
    boost::json::object o{{"name", run.name}, {"report", ReportToJson(run.report)}};
    if (run.replay) o["replay"] = ReplayToJson(*run.replay);
    out.push_back(std::move(o));
  }
  return boost::json::object{{"runs", std::move(out)}};
}

}  // namespace gpusched::sim
