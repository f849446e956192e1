// SPDX-License-Identifier: Apache-2.0
#include "src/addons/hpa/simulate.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "src/common/strings.h"

namespace gpusched::addons::hpa {
namespace {

int64_t ToMilli(double v) {
  const double m = std::round(v * 1000.0);
  if (m >= 9.2e18) return INT64_MAX;
  if (m <= -9.2e18) return INT64_MIN;
  return static_cast<int64_t>(m);
}

std::string FormatReplicas(const common::StatusOr<MetricResult>& r) {
  if (!r.ok()) return "error: " + std::string(r.status().message());
  return std::to_string(r->replicas);
}

// Each HPA metric's CSV column; errors for a metric without one, or a Utilization target
// without the pods' request.
common::StatusOr<std::vector<size_t>> MetricColumns(const HpaSpec& spec, const MetricSeries& series,
                                                    const SimOptions& options) {
  std::vector<size_t> column(spec.metrics.size());
  for (size_t m = 0; m < spec.metrics.size(); ++m) {
    const MetricSpec& ms = spec.metrics[m];
    auto it = std::find(series.columns.begin(), series.columns.end(), ms.name);
    if (it == series.columns.end()) {
      return common::InvalidArgumentError("metric " + ms.Describe() + " has no CSV column named " +
                                          common::Quote(ms.name));
    }
    column[m] = static_cast<size_t>(it - series.columns.begin());
    const bool per_pod =
        ms.type == MetricType::kResource || ms.type == MetricType::kContainerResource;
    if (per_pod && ms.target == TargetType::kUtilization &&
        !options.request_milli.contains(ms.name)) {
      return common::InvalidArgumentError("metric " + ms.Describe() +
                                          " has a Utilization target: give the pods' request for " +
                                          ms.name);
    }
  }
  return column;
}

// options.initial_replicas synthesized pods, created an hour before the start, Ready 5 s later.
std::vector<SimPod> InitialPods(const SimOptions& options) {
  std::vector<SimPod> pods;
  for (int32_t k = 0; k < options.initial_replicas; ++k) {
    SimPod p;
    p.name = options.pod_prefix + "-" + std::to_string(k);
    // Staggered, so that the synthetic pods are not all ties for the ReplicaSet ranking.
    p.created = options.start - std::chrono::hours(1) - std::chrono::seconds(10 * k);
    p.ready_at = p.created + std::chrono::seconds(5);
    pods.push_back(std::move(p));
  }
  return pods;
}

// What every metric of one tick is computed against.
struct TickContext {
  const std::vector<SimPod>& pods;
  const SimOptions& options;
  const Settings& settings;
  const Tolerances& tol;
  double t;  // seconds since start
  common::TimePoint now;
  int32_t current;  // replicas before this tick
  int32_t ready;    // of them Ready
};

// The pods' samples of a Resource/Pods metric: Ready pods carry `per_pod` milli-units.
std::vector<PodSample> PodSamples(const MetricSpec& ms, int64_t per_pod, const TickContext& tc) {
  std::vector<PodSample> samples;
  for (const SimPod& p : tc.pods) {
    PodSample s;
    s.name = p.name;
    s.start_time = p.created;
    if (p.ready_at > tc.now) {
      s.phase = "Pending";
    } else {
      s.ready = true;
      s.ready_transition = p.ready_at;
      s.value_milli = per_pod;
      s.sample_time = tc.now;
    }
    if (auto it = tc.options.request_milli.find(ms.name); it != tc.options.request_milli.end()) {
      s.request_milli = it->second;
    }
    samples.push_back(std::move(s));
  }
  return samples;
}

// The replica calculator's answer for one metric whose CSV value in effect is `v`.
common::StatusOr<MetricResult> MetricReplicas(const MetricSpec& ms, std::optional<double> v,
                                              const TickContext& tc) {
  common::StatusOr<MetricResult> r = common::UnavailableError("no sample");
  if (!v) {
    r = common::UnavailableError("no sample for " + ms.name +
                                 " at t=" + std::to_string(static_cast<int64_t>(tc.t)));
  } else if (ms.type == MetricType::kResource || ms.type == MetricType::kContainerResource ||
             ms.type == MetricType::kPods) {
    const int64_t value = ToMilli(*v);
    const int64_t per_pod = tc.options.load == SimOptions::Load::kPerPod
                                ? value
                                : (tc.ready > 0 ? value / tc.ready : 0);
    const std::vector<PodSample> samples = PodSamples(ms, per_pod, tc);
    const bool cpu = ms.type != MetricType::kPods && ms.name == "cpu";
    if (ms.type != MetricType::kPods && ms.target == TargetType::kUtilization) {
      r = ResourceUtilizationReplicas(tc.current, samples, ms.average_utilization, cpu, tc.tol,
                                      tc.now, tc.settings);
    } else {
      r = PlainMetricReplicas(tc.current, samples, ms.average_value_milli, cpu, tc.tol, tc.now,
                              tc.settings);
    }
  } else if (ms.target == TargetType::kValue) {
    r = ValueReplicas(tc.current, ToMilli(*v), ms.value_milli, tc.ready, tc.tol);
  } else {
    r = AverageValueReplicas(tc.current, ToMilli(*v), ms.average_value_milli, tc.tol);
  }
  return r;
}

// New pods up to `desired`, created `now`, Ready after options.pod_startup.
void ScaleUp(std::vector<SimPod>& pods, int32_t desired, common::TimePoint now,
             const SimOptions& options, const SimHooks& hooks, int& next_name, SimStep& step) {
  for (int32_t k = static_cast<int32_t>(pods.size()); k < desired; ++k) {
    SimPod p;
    p.name = options.pod_prefix + "-new-" + std::to_string(next_name++);
    p.created = now;
    p.ready_at = now + options.pod_startup;
    if (hooks.on_add) hooks.on_add(p);
    step.added.push_back(p.name);
    pods.push_back(std::move(p));
  }
}

// Removes pods down to `desired`: hooks.choose_victims picks them, else the newest go first.
common::Status ScaleDown(std::vector<SimPod>& pods, int32_t desired, common::TimePoint now,
                         const SimHooks& hooks, SimStep& step) {
  const int32_t count = static_cast<int32_t>(pods.size()) - desired;
  std::vector<std::string> victims;
  if (hooks.choose_victims) {
    victims = hooks.choose_victims(now, pods, count);
  } else {
    std::vector<const SimPod*> order;
    for (const SimPod& p : pods) order.push_back(&p);
    std::stable_sort(order.begin(), order.end(),
                     [](const SimPod* a, const SimPod* b) { return a->created > b->created; });
    for (int32_t k = 0; k < count; ++k) victims.push_back(order[static_cast<size_t>(k)]->name);
  }
  std::set<std::string> gone(victims.begin(), victims.end());
  if (static_cast<int32_t>(gone.size()) != count) {
    return common::InternalError("the victim chooser returned " + std::to_string(gone.size()) +
                                 " distinct pods, want " + std::to_string(count));
  }
  std::erase_if(pods, [&](const SimPod& p) { return gone.contains(p.name); });
  if (static_cast<int32_t>(pods.size()) != desired) {
    return common::InternalError("the victim chooser returned unknown pods");
  }
  step.removed = std::move(victims);
  return common::Status::Ok();
}

}  // namespace

common::StatusOr<MetricSeries> ParseMetricCsv(std::string_view text, std::string_view source) {
  MetricSeries s;
  const std::string src(source);
  size_t lineno = 0;
  bool header = false;
  for (std::string_view raw : common::Split(text, '\n')) {
    ++lineno;
    std::string_view line = common::Trim(raw);
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string_view> cells = common::Split(line, ',');
    const std::string where = src + ":" + std::to_string(lineno);
    if (!header) {
      if (common::Trim(cells[0]) != "time") {
        return common::InvalidArgumentError(where + ": the header must start with \"time\"");
      }
      std::set<std::string> seen;
      for (size_t c = 1; c < cells.size(); ++c) {
        std::string name(common::Trim(cells[c]));
        if (name.empty())
          return common::InvalidArgumentError(where + ": column " + std::to_string(c + 1) +
                                              " has no name");
        if (!seen.insert(name).second)
          return common::InvalidArgumentError(where + ": duplicate column " + common::Quote(name));
        s.columns.push_back(std::move(name));
      }
      if (s.columns.empty()) return common::InvalidArgumentError(where + ": no metric columns");
      header = true;
      continue;
    }
    if (cells.size() != s.columns.size() + 1) {
      return common::InvalidArgumentError(where + ": want " + std::to_string(s.columns.size() + 1) +
                                          " cells, got " + std::to_string(cells.size()));
    }
    auto t = common::ParseDouble(cells[0]);
    if (!t || !std::isfinite(*t) || *t < 0) {
      return common::InvalidArgumentError(where + ": column time: invalid value " +
                                          common::Quote(cells[0]));
    }
    if (!s.times.empty() && *t <= s.times.back()) {
      return common::InvalidArgumentError(where + ": times must increase (" +
                                          common::Quote(cells[0]) + ")");
    }
    std::vector<std::optional<double>> row;
    for (size_t c = 1; c < cells.size(); ++c) {
      std::string_view cell = common::Trim(cells[c]);
      if (cell.empty()) {
        row.emplace_back();
        continue;
      }
      auto v = common::ParseDouble(cell);
      if (!v || !std::isfinite(*v)) {
        return common::InvalidArgumentError(where + ": column " + s.columns[c - 1] +
                                            ": invalid value " + common::Quote(cell));
      }
      row.emplace_back(*v);
    }
    s.times.push_back(*t);
    s.rows.push_back(std::move(row));
  }
  if (!header)
    return common::InvalidArgumentError(src + ": empty CSV (want a header \"time,<metric>,...\")");
  if (s.rows.empty()) return common::InvalidArgumentError(src + ": no rows");
  return s;
}

common::StatusOr<std::vector<SimStep>> Simulate(const HpaSpec& spec, const MetricSeries& series,
                                                std::vector<SimPod> pods, const SimOptions& options,
                                                const Settings& settings, const SimHooks& hooks) {
  if (series.rows.empty()) return common::InvalidArgumentError("empty metric series");
  GPUSCHED_ASSIGN_OR_RETURN(const std::vector<size_t> column, MetricColumns(spec, series, options));
  if (pods.empty()) pods = InitialPods(options);
  Autoscaler hpa(spec, settings);
  const Tolerances tol = hpa.tolerances();
  const double end = options.end.value_or(series.times.back());
  const double period = common::Seconds(settings.sync_period);
  if (period <= 0) return common::InvalidArgumentError("sync period must be positive");
  std::vector<SimStep> steps;
  int next_name = 0;
  size_t row = 0;
  for (int64_t tick = 0;; ++tick) {
    const double t = series.times.front() + static_cast<double>(tick) * period;
    if (t > end + 1e-9) break;
    while (row + 1 < series.rows.size() && series.times[row + 1] <= t + 1e-9) ++row;
    const common::TimePoint now = options.start + std::chrono::duration_cast<common::Duration>(
                                                      std::chrono::duration<double>(t));
    const int32_t current = static_cast<int32_t>(pods.size());
    SimStep step;
    step.t = t;
    int32_t ready = 0;
    for (const SimPod& p : pods) ready += p.ready_at <= now ? 1 : 0;
    const TickContext tc{pods, options, settings, tol, t, now, current, ready};
    std::vector<common::StatusOr<int32_t>> proposals;
    for (size_t m = 0; m < spec.metrics.size(); ++m) {
      const std::optional<double> v = series.rows[row][column[m]];
      step.values.push_back(v);
      const common::StatusOr<MetricResult> r = MetricReplicas(spec.metrics[m], v, tc);
      step.metric_results.push_back(FormatReplicas(r));
      if (r.ok()) {
        proposals.emplace_back(r->replicas);
      } else {
        proposals.emplace_back(r.status());
      }
    }
    common::StatusOr<int32_t> combined = CombineProposals(current, proposals);
    step.decision = hpa.Reconcile(now, current, combined);
    const int32_t desired = step.decision.desired;
    if (desired > current) {
      ScaleUp(pods, desired, now, options, hooks, next_name, step);
    } else if (desired < current) {
      GPUSCHED_RETURN_IF_ERROR(ScaleDown(pods, desired, now, hooks, step));
    }
    steps.push_back(std::move(step));
  }
  return steps;
}

}  // namespace gpusched::addons::hpa
