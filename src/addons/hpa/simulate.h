// SPDX-License-Identifier: Apache-2.0
// Simulate: drives one Autoscaler (hpa.h) over a metric time series, tick by tick, as the HPA
// controller would see it every sync period.
//
//   CSV row in effect at t (the last row with time <= t)
//     └─► per metric: pod samples of the simulated pods ─► replica calculator ─► proposal
//     └─► CombineProposals ─► Autoscaler::Reconcile(t, current) ─► desired
//     └─► scale up: new pods (Pending for `pod_startup`, then Ready)
//         scale down: hooks.choose_victims picks the pods to remove (gpusched wires the exact
//         ReplicaSet ranking in here; the default removes the newest pods)
//
// CSV: a header "time,<metric>,..." then rows; time in seconds from the start (ascending);
// one column per HPA metric, named after it (resource name "cpu"/"memory", or the metric name
// of Pods/Object/External metrics). Values are in the metric's own unit (cpu in cores, memory in
// bytes, custom metrics as plain numbers). An empty cell means "no sample" (that metric fails
// at that tick). Lines starting with '#' are comments.
//
// Load model for Resource and Pods metrics: `kTotal` (default) reads the value as the total over
// the workload and spreads it evenly over the Ready pods, so scaling changes the per-pod value;
// `kPerPod` reads it as the per-pod average. Object/External values are used as they are.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "src/addons/hpa/hpa.h"
#include "src/common/clock.h"
#include "src/common/status.h"

namespace gpusched::addons::hpa {

struct MetricSeries {
  std::vector<std::string> columns;                      // without "time"
  std::vector<double> times;                             // seconds, ascending
  std::vector<std::vector<std::optional<double>>> rows;  // rows[i][column]
};

// Errors name `source`, the line and the column.
common::StatusOr<MetricSeries> ParseMetricCsv(std::string_view text, std::string_view source);

struct SimPod {
  std::string name;
  common::TimePoint created{};
  common::TimePoint ready_at{};  // Pending before, Running and Ready from then on
};

struct SimOptions {
  common::TimePoint start{};       // time of CSV time 0
  std::optional<double> end;       // seconds; default: the last CSV time
  int32_t initial_replicas = 1;    // used when no initial pods are given
  std::string pod_prefix = "pod";  // names of synthesized pods: <prefix>-<n>
  std::map<std::string, int64_t, std::less<>> request_milli;  // per resource, for Utilization
  enum class Load : uint8_t { kTotal, kPerPod } load = Load::kTotal;
  common::Duration pod_startup = std::chrono::seconds(0);
};

struct SimHooks {
  // Called for every pod a scale-up creates.
  std::function<void(const SimPod&)> on_add;
  // Picks `count` pods of `pods` to remove at `now`; returns their names. Default: newest first.
  std::function<std::vector<std::string>(common::TimePoint now, std::span<const SimPod> pods,
                                         int32_t count)>
      choose_victims;
};

struct SimStep {
  double t = 0;                               // seconds since start
  std::vector<std::optional<double>> values;  // the CSV values in effect, per HPA metric
  std::vector<std::string> metric_results;    // per metric: "6" or the error
  Decision decision;
  std::vector<std::string> added;
  std::vector<std::string> removed;
};

// Runs the simulation. Errors: a metric without a CSV column, a Utilization metric without a
// request, an empty series.
common::StatusOr<std::vector<SimStep>> Simulate(const HpaSpec& spec, const MetricSeries& series,
                                                std::vector<SimPod> initial_pods,
                                                const SimOptions& options, const Settings& settings,
                                                const SimHooks& hooks = {});

}  // namespace gpusched::addons::hpa
