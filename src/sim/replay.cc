// SPDX-License-Identifier: Apache-2.0
#include "src/sim/replay.h"

#include <algorithm>
#include <boost/json.hpp>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <queue>
#include <unordered_map>
#include <utility>

#include "src/api/resources.h"
#include "src/common/strings.h"
#include "src/config/duration.h"

namespace gpusched::sim {
namespace {

struct Arrival {
  common::Duration offset{0};  // after the start
  size_t index = 0;            // in workload.pods
};

struct Departure {
  common::TimePoint at;
  std::string uid;
  bool operator>(const Departure& o) const { return at > o.at; }
};

// A Go duration annotation of `pod`: nullopt when absent; an error naming the pod when invalid.
common::StatusOr<std::optional<common::Duration>> DurationAnnotation(const api::Pod& pod,
                                                                     std::string_view key) {
  const std::string* v = pod.meta.Annotation(key);
  if (v == nullptr) return std::optional<common::Duration>();
  std::optional<int64_t> nanos = config::ParseGoDurationNanos(*v);
  if (!nanos || *nanos < 0) {
    return common::InvalidArgumentError("pod " + pod.Key() + ": annotation " + std::string(key) +
                                        ": invalid value " + common::Quote(*v) +
                                        " (want a duration such as \"90m\" or \"2h30m\")");
  }
  return std::optional<common::Duration>(common::Duration(*nanos));
}

// Arrival offsets (see the header), sorted by time, ties in input order.
common::StatusOr<std::vector<Arrival>> Arrivals(const Workload& w) {
  std::optional<common::TimePoint> earliest;
  for (const api::PodPtr& p : w.pods) {
    if (p->meta.creation_timestamp && (!earliest || *p->meta.creation_timestamp < *earliest)) {
      earliest = p->meta.creation_timestamp;
    }
  }
  std::vector<Arrival> out;
  common::Duration previous{0};
  for (size_t i = 0; i < w.pods.size(); ++i) {
    const api::Pod& p = *w.pods[i];
    GPUSCHED_ASSIGN_OR_RETURN(std::optional<common::Duration> at,
                              DurationAnnotation(p, kArrivalAnnotation));
    Arrival a{previous + std::chrono::seconds(i == 0 ? 0 : 1), i};
    if (at) {
      a.offset = *at;
    } else if (p.meta.creation_timestamp) {
      a.offset = *p.meta.creation_timestamp - *earliest;
    }
    previous = a.offset;
    out.push_back(a);
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const Arrival& a, const Arrival& b) { return a.offset < b.offset; });
  return out;
}

// The node group as the report names it: instance type, else gpusched.io/node-group.
std::string GroupOf(const api::Node& node) {
  static const common::Atom node_group = common::Intern("gpusched.io/node-group");
  common::Atom v;
  if (node.meta.labels.Get(api::Names().instance_type, &v) && !v.empty()) {
    return std::string(common::Str(v));
  }
  if (node.meta.labels.Get(node_group, &v) && !v.empty()) return std::string(common::Str(v));
  return "(none)";
}

// The GPU allocation (%) of the cluster, and per model and node group, from SimCluster's ledger.
void Allocation(const Simulator& sim, ReplaySample& s) {
  std::map<std::string, std::pair<int64_t, int64_t>> models;  // used, total milli
  std::map<std::string, std::pair<int64_t, int64_t>> groups;
  int64_t used = 0;
  int64_t total = 0;
  for (const auto& [node, usage] : sim.cluster().NodesWithUsage()) {
    const int32_t count = std::min<int32_t>(node->gpu.count, api::kMaxGpusPerNode);
    if (count <= 0) continue;
    int64_t node_used = 0;
    for (int32_t d = 0; d < count; ++d) node_used += usage.gpu_milli[static_cast<size_t>(d)];
    const int64_t node_total = static_cast<int64_t>(count) * api::kMilliPerGpu;
    used += node_used;
    total += node_total;
    const std::string model = node->gpu.model.empty() ? std::string("(unknown)")
                                                      : std::string(common::Str(node->gpu.model));
    for (auto* m : {&models[model], &groups[GroupOf(*node)]}) {
      m->first += node_used;
      m->second += node_total;
    }
  }
  auto percent = [](int64_t part, int64_t whole) {
    return whole > 0 ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0.0;
  };
  s.gpu_allocation = percent(used, total);
  for (const auto& [name, m] : models) s.by_model.emplace_back(name, percent(m.first, m.second));
  for (const auto& [name, g] : groups) s.by_group.emplace_back(name, percent(g.first, g.second));
}

}  // namespace

common::StatusOr<ReplayResult> RunReplay(Simulator& sim, const Workload& workload) {
  GPUSCHED_RETURN_IF_ERROR(sim.AddClusterObjects(workload));
  GPUSCHED_ASSIGN_OR_RETURN(std::vector<Arrival> arrivals, Arrivals(workload));

  // Durations by uid; a placed pod's departure is planned when its placement is observed. The
  // observer outlives this call (the scheduler keeps it), so it shares the state and stops
  // planning once the replay is over.
  struct Plan {
    std::unordered_map<std::string, common::Duration> duration_of;
    std::priority_queue<Departure, std::vector<Departure>, std::greater<>> departures;
    bool over = false;
  };
  auto plan = std::make_shared<Plan>();
  auto& duration_of = plan->duration_of;
  auto& departures = plan->departures;
  const common::TimePoint start = sim.sim_clock().Now();
  const common::FakeClock& clock = sim.sim_clock();
  sim.scheduler().AddDecisionObserver([plan, &clock](const scheduler::Decision& d) {
    if (plan->over || !d.scheduled) return;
    auto it = plan->duration_of.find(d.pod->meta.uid);
    if (it != plan->duration_of.end()) plan->departures.push({clock.Now() + it->second, it->first});
  });

  ReplayResult r;
  common::TimePoint last = start;
  double weighted = 0;  // allocation % x hours
  double previous_allocation = 0;
  auto sample = [&](common::TimePoint now) {
    const double hours = common::Seconds(now - start) / 3600.0;
    weighted += previous_allocation * common::Seconds(now - last) / 3600.0;
    last = now;
    ReplaySample s;
    s.hours = hours;
    Allocation(sim, s);
    for (const PodOutcome& o : sim.outcomes()) {
      if (o.deleted) continue;
      if (o.state == PodState::kScheduled || o.state == PodState::kPreBound) ++s.running;
      if (o.state == PodState::kUnschedulable) ++s.waiting;
    }
    previous_allocation = s.gpu_allocation;
    r.peak_gpu_allocation = std::max(r.peak_gpu_allocation, s.gpu_allocation);
    r.samples.push_back(s);
  };
  // A pod waiting for room is retried when a pod leaves, but only once its backoff (at most
  // podMaxBackoffSeconds, 10 s by default) is over: time runs on up to kSettle after a departure
  // (never past the next event) so that it can take the room, as it would in a cluster.
  constexpr common::Duration kSettle = std::chrono::seconds(11);
  auto depart_until = [&](common::TimePoint t) -> common::Status {
    while (!departures.empty() && departures.top().at <= t) {
      Departure d = departures.top();
      departures.pop();
      GPUSCHED_RETURN_IF_ERROR(sim.AdvanceTo(d.at));
      common::Status s = sim.RemovePod(d.uid);
      if (s.code() == common::StatusCode::kNotFound) continue;  // preempted meanwhile
      GPUSCHED_RETURN_IF_ERROR(s);
      ++r.departed;
      common::TimePoint settle = std::min(d.at + kSettle, t);
      if (!departures.empty()) settle = std::min(settle, departures.top().at);
      GPUSCHED_RETURN_IF_ERROR(sim.AdvanceTo(settle));
      sample(d.at);
    }
    return common::Status::Ok();
  };

  for (const Arrival& a : arrivals) {
    const common::TimePoint at = start + a.offset;
    GPUSCHED_RETURN_IF_ERROR(depart_until(at));
    GPUSCHED_RETURN_IF_ERROR(sim.AdvanceTo(at));
    const api::PodPtr& pod = workload.pods[a.index];
    GPUSCHED_ASSIGN_OR_RETURN(std::optional<common::Duration> run,
                              DurationAnnotation(*pod, kDurationAnnotation));
    GPUSCHED_ASSIGN_OR_RETURN(size_t index, sim.SubmitWorkloadPod(pod));
    const PodOutcome& outcome = sim.outcomes()[index];
    const std::string& uid = outcome.pod->meta.uid;
    if (run && outcome.state != PodState::kRejected) {
      duration_of[uid] = *run;
      // A pod placed before its duration was known (SubmitPod placed it at once).
      if (outcome.state == PodState::kScheduled) departures.push({at + *run, uid});
    }
    sample(at);
  }
  GPUSCHED_RETURN_IF_ERROR(depart_until(common::TimePoint::max()));
  // A preemptor still waiting for its victims binds, as at the end of a static run.
  const common::TimePoint before_settle = clock.Now();
  GPUSCHED_RETURN_IF_ERROR(sim.SettleNominated());
  if (clock.Now() != before_settle) sample(clock.Now());
  plan->over = true;
  r.span_hours = common::Seconds(last - start) / 3600.0;
  r.mean_gpu_allocation = r.span_hours > 0 ? weighted / r.span_hours : previous_allocation;
  return r;
}

std::string ReplayCurveCsv(const ReplayResult& result) {
  std::string out = "t_hours,gpu_allocation_percent,running_pods,waiting_pods\n";
  char buf[128];
  for (const ReplaySample& s : result.samples) {
    std::snprintf(buf, sizeof(buf), "%.6f,%.3f,%lld,%lld\n", s.hours, s.gpu_allocation,
                  static_cast<long long>(s.running), static_cast<long long>(s.waiting));
    out += buf;
  }
  return out;
}

std::string FormatReplayText(const ReplayResult& r) {
  char buf[256];
  std::snprintf(buf, sizeof(buf),
                "\nReplay over %.2f h: GPU allocation mean %.1f%%, peak %.1f%%; %lld pods "
                "departed, %lld running and %lld waiting at the end\n",
                r.span_hours, r.mean_gpu_allocation, r.peak_gpu_allocation,
                static_cast<long long>(r.departed),
                static_cast<long long>(r.samples.empty() ? 0 : r.samples.back().running),
                static_cast<long long>(r.samples.empty() ? 0 : r.samples.back().waiting));
  return buf;
}

boost::json::value ReplayToJson(const ReplayResult& r) {
  auto round3 = [](double v) { return std::round(v * 1000) / 1000; };
  boost::json::array samples;
  auto named = [&](const std::vector<std::pair<std::string, double>>& values) {
    boost::json::object o;
    for (const auto& [name, v] : values) o[name] = round3(v);
    return o;
  };
  for (const ReplaySample& s : r.samples) {
    samples.push_back(boost::json::object{{"hours", round3(s.hours)},
                                          {"gpuAllocation", round3(s.gpu_allocation)},
                                          {"running", s.running},
                                          {"waiting", s.waiting},
                                          {"byModel", named(s.by_model)},
                                          {"byGroup", named(s.by_group)}});
  }
  return boost::json::object{{"spanHours", round3(r.span_hours)},
                             {"meanGpuAllocation", round3(r.mean_gpu_allocation)},
                             {"peakGpuAllocation", round3(r.peak_gpu_allocation)},
                             {"departed", r.departed},
                             {"samples", std::move(samples)}};
}

}  // namespace gpusched::sim
