// SPDX-License-Identifier: Apache-2.0
#include "src/sim/replay.h"

#include <algorithm>
#include <boost/json.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <queue>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "src/api/resources.h"
#include "src/common/random.h"
#include "src/common/strings.h"
#include "src/config/duration.h"
#include "src/sim/report.h"

namespace gpusched::sim {
namespace {

struct Arrival {
  common::Duration offset{0};  // after the start
  api::PodPtr pod;
  size_t source = 0;  // the pod's index in Workload::pods (a repeat's: the original's)
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

// Arrival offsets from the pods' own times (see the header), sorted by time, ties in input order.
common::StatusOr<std::vector<Arrival>> OwnArrivals(const Workload& w) {
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
    Arrival a{previous + std::chrono::seconds(i == 0 ? 0 : 1), w.pods[i], i};
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

// The saturated replay's arrivals (see the header): Poisson over the window at the rate that
// offers `load` times the cluster's milli-GPU, the pods in input order, repeated as needed.
common::StatusOr<std::vector<Arrival>> LoadArrivals(const Workload& w, const ReplayOptions& o) {
  int64_t capacity = 0;  // milli-GPU
  for (const api::NodePtr& n : w.nodes) {
    capacity +=
        static_cast<int64_t>(std::clamp(n->gpu.count, 0, api::kMaxGpusPerNode)) * api::kMilliPerGpu;
  }
  const double window_s = common::Seconds(o.window);
  double demand = 0;  // Σ milli × min(duration, window), milli-GPU seconds
  for (const api::PodPtr& p : w.pods) {
    GPUSCHED_ASSIGN_OR_RETURN(std::optional<common::Duration> run,
                              DurationAnnotation(*p, kDurationAnnotation));
    const double run_s = run ? std::min(common::Seconds(*run), window_s) : window_s;
    demand += static_cast<double>(p->gpu.TotalMilli()) * run_s;
  }
  if (window_s <= 0) return common::InvalidArgumentError("--load: the window must be above 0");
  if (capacity <= 0) return common::InvalidArgumentError("--load: no node has a GPU");
  if (demand <= 0) {
    return common::InvalidArgumentError(
        "--load: none of the " + std::to_string(w.pods.size()) +
        " pods asks for a GPU, so no arrival rate offers a GPU load");
  }
  const double rate = o.load * static_cast<double>(capacity) * static_cast<double>(w.pods.size()) /
                      demand;  // arrivals per second
  common::Random random(o.seed);
  std::vector<Arrival> out;
  double t = 0;
  for (size_t i = 0;; ++i) {
    t += -std::log1p(-random.NextDouble()) / rate;
    if (t > window_s) break;
    const size_t source = i % w.pods.size();
    const api::PodPtr& original = w.pods[source];
    api::PodPtr pod = original;
    if (const size_t repeat = i / w.pods.size(); repeat > 0) {
      auto copy = std::make_shared<api::Pod>(*original);
      copy->meta.name += "-r" + std::to_string(repeat);
      copy->meta.uid.clear();
      pod = std::move(copy);
    }
    out.push_back({std::chrono::duration_cast<common::Duration>(std::chrono::duration<double>(t)),
                   std::move(pod), source});
  }
  return out;
}

// The GPU allocation (%) of the cluster, and per model and node group, from SimCluster's ledger:
// which rows each node counts in is worked out once (again when the node count changes), so a
// kept sample costs one pass over a flat array, and the others (the cluster's total only) O(1).
class AllocationSampler {
 public:
  // `breakdown`: also the per-model and per-group rows (only the samples that are kept need them).
  void Sample(const SimCluster& cluster, ReplaySample& s, bool breakdown) {
    if (cluster.NodeCount() != total_.size()) Build(cluster);
    if (!breakdown) {  // the ledger's running total: O(1) per event
      s.gpu_allocation = Percent(cluster.GpuMilliUsedTotal(), cluster_total_);
      return;
    }
    cluster.GpuMilliUsed(used_);
    std::fill(model_used_.begin(), model_used_.end(), 0);
    std::fill(group_used_.begin(), group_used_.end(), 0);
    int64_t used = 0;
    for (size_t i = 0; i < used_.size(); ++i) {
      if (total_[i] <= 0) continue;
      used += used_[i];
      model_used_[model_of_[i]] += used_[i];
      group_used_[group_of_[i]] += used_[i];
    }
    s.gpu_allocation = Percent(used, cluster_total_);
    if (!breakdown) return;
    for (size_t m = 0; m < models_.size(); ++m) {
      s.by_model.emplace_back(models_[m], Percent(model_used_[m], model_total_[m]));
    }
    for (size_t g = 0; g < groups_.size(); ++g) {
      s.by_group.emplace_back(groups_[g], Percent(group_used_[g], group_total_[g]));
    }
  }

 private:
  static double Percent(int64_t part, int64_t whole) {
    return whole > 0 ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0.0;
  }
  // Row `name` of a sorted name list (added when new).
  static uint32_t Row(std::vector<std::string>& names, const std::string& name) {
    auto it = std::lower_bound(names.begin(), names.end(), name);
    if (it == names.end() || *it != name) it = names.insert(it, name);
    return static_cast<uint32_t>(it - names.begin());
  }
  void Build(const SimCluster& cluster) {
    const auto nodes = cluster.NodesWithUsage();
    models_.clear();
    groups_.clear();
    std::vector<std::pair<std::string, std::string>> names(nodes.size());
    for (size_t i = 0; i < nodes.size(); ++i) {
      const api::Node& n = *nodes[i].first;
      names[i] = {
          n.gpu.model.empty() ? std::string("(unknown)") : std::string(common::Str(n.gpu.model)),
          NodeGroupOf(n)};
      if (n.gpu.count <= 0) continue;
      Row(models_, names[i].first);
      Row(groups_, names[i].second);
    }
    total_.assign(nodes.size(), 0);
    model_of_.assign(nodes.size(), 0);
    group_of_.assign(nodes.size(), 0);
    model_total_.assign(models_.size(), 0);
    group_total_.assign(groups_.size(), 0);
    model_used_.assign(models_.size(), 0);
    group_used_.assign(groups_.size(), 0);
    cluster_total_ = 0;
    for (size_t i = 0; i < nodes.size(); ++i) {
      const int32_t count = std::min<int32_t>(nodes[i].first->gpu.count, api::kMaxGpusPerNode);
      if (count <= 0) continue;
      total_[i] = static_cast<int64_t>(count) * api::kMilliPerGpu;
      model_of_[i] = Row(models_, names[i].first);
      group_of_[i] = Row(groups_, names[i].second);
      model_total_[model_of_[i]] += total_[i];
      group_total_[group_of_[i]] += total_[i];
      cluster_total_ += total_[i];
    }
  }

  std::vector<std::string> models_, groups_;   // row names, sorted
  std::vector<uint32_t> model_of_, group_of_;  // per node: its rows
  std::vector<int64_t> total_, used_;          // per node, milli-GPU
  std::vector<int64_t> model_used_, model_total_, group_used_, group_total_;
  int64_t cluster_total_ = 0;
};

// The replay's samples, their time-weighted mean and the peak, written into a ReplayResult.
class Curve {
 public:
  // Keeps a sample at most every `resolution` (0: every one).
  Curve(const Simulator& sim, common::TimePoint start, common::Duration resolution,
        ReplayResult& out)
      : sim_(sim), start_(start), last_(start), resolution_(resolution), out_(out) {}

  // After every event, at sim time `now` (never earlier than the last).
  void Sample(common::TimePoint now) {
    weighted_ += previous_ * common::Seconds(now - last_) / 3600.0;
    const bool keep = !last_kept_ || now - *last_kept_ >= resolution_;
    ReplaySample s;
    s.hours = common::Seconds(now - start_) / 3600.0;
    sampler_.Sample(sim_.cluster(), s, keep);
    s.running = sim_.LiveCount(PodState::kScheduled) + sim_.LiveCount(PodState::kPreBound);
    s.waiting = sim_.LiveCount(PodState::kUnschedulable);
    previous_ = s.gpu_allocation;
    out_.peak_gpu_allocation = std::max(out_.peak_gpu_allocation, s.gpu_allocation);
    last_ = now;
    if (keep) {
      last_kept_ = now;
      out_.samples.push_back(std::move(s));
    }
  }
  // Sets the span and the mean.
  void Finish() {
    out_.span_hours = common::Seconds(last_ - start_) / 3600.0;
    out_.mean_gpu_allocation = out_.span_hours > 0 ? weighted_ / out_.span_hours : previous_;
  }
  common::TimePoint last() const { return last_; }

 private:
  const Simulator& sim_;
  const common::TimePoint start_;
  common::TimePoint last_;
  std::optional<common::TimePoint> last_kept_;
  const common::Duration resolution_;
  ReplayResult& out_;
  AllocationSampler sampler_;
  double weighted_ = 0;  // allocation % x hours
  double previous_ = 0;  // the allocation since the last sample
};

// A pod's size as the waits table names it, and its order there.
std::pair<int64_t, std::string> SizeOf(const api::GpuRequest& gpu) {
  if (gpu.empty()) return {0, "0"};
  if (gpu.shared()) return {1, "<1"};
  return {int64_t{1} + gpu.count, std::to_string(gpu.count)};
}

// One submitted pod's wait (see the header).
struct Track {
  common::TimePoint arrived;
  std::optional<common::TimePoint> placed;
  std::optional<common::Duration> run;  // its duration, if it leaves
  size_t outcome = 0;                   // index in Simulator::outcomes()
  size_t source = 0;                    // Arrival::source
};

// Each submitted pod's track, by uid, and the departures to come: a placed pod's departure is
// planned when its placement is observed.
struct Plan {
  explicit Plan(const Simulator& s) : sim(s) {}
  const Simulator& sim;
  std::vector<Track> tracks;
  std::unordered_map<std::string, size_t> track_of;
  std::priority_queue<Departure, std::vector<Departure>, std::greater<>> departures;
  // When each placed pod leaves, by namespace/name: a moved pod's replacement leaves then too.
  std::unordered_map<std::string, common::TimePoint> ends;
  // Placements of pods without a track: an arrival placed before its track existed, or a pod a
  // controller created (the replacement of a preempted or moved pod).
  std::vector<std::pair<common::TimePoint, api::PodPtr>> untracked;
  int64_t placements = 0;
  bool over = false;

  void Leaves(const api::Pod& pod, common::TimePoint at) {
    departures.push({at, pod.meta.uid});
    ends[pod.Key()] = at;
  }
  // The decision observer, at sim time `now`.
  void Observe(const scheduler::Decision& d, common::TimePoint now) {
    if (over || !d.scheduled) return;
    ++placements;
    auto it = track_of.find(d.pod->meta.uid);
    if (it == track_of.end()) {
      untracked.emplace_back(now, d.pod);  // sorted out by PlanUntracked after the event
      return;
    }
    Track& t = tracks[it->second];
    if (!t.placed) t.placed = now;
    if (t.run) Leaves(*d.pod, now + *t.run);
  }
  // After an event: the untracked placements that are not arrivals leave after their duration;
  // the replacement of a moved pod when the moved pod would have (it goes on serving).
  void PlanUntracked() {
    for (const auto& [at, pod] : std::exchange(untracked, {})) {
      if (track_of.contains(pod->meta.uid)) continue;  // an arrival, planned at submission
      const PodOutcome* o = sim.OutcomeOf(pod->meta.uid);
      if (o != nullptr && o->replaces_moved) {
        if (auto end = ends.find(o->replaces); end != ends.end()) {
          Leaves(*pod, std::max(end->second, at));
          continue;
        }
      }
      auto run = DurationAnnotation(*pod, kDurationAnnotation);
      if (run.ok() && *run) Leaves(*pod, at + **run);
    }
  }
};

// The nearest-rank percentile `q` of sorted `v` (not empty).
double Percentile(const std::vector<double>& v, double q) {
  const auto rank = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
  return v[std::clamp<size_t>(rank, 1, v.size()) - 1];
}

ReplayWaits Summarise(std::string size, std::vector<double> waits, int64_t never,
                      int64_t fit_no_node, double gpu_h) {
  std::sort(waits.begin(), waits.end());
  ReplayWaits w;
  w.size = std::move(size);
  w.fit_no_node = fit_no_node;
  w.pending_gpu_hours = gpu_h;
  if (waits.empty()) return w;  // every pod of the size fits no node
  w.pods = static_cast<int64_t>(waits.size());
  w.waited = static_cast<int64_t>(
      std::count_if(waits.begin(), waits.end(), [](double x) { return x > 0; }));
  w.never_placed = never;
  w.p50_s = Percentile(waits, 0.50);
  w.p90_s = Percentile(waits, 0.90);
  w.p99_s = Percentile(waits, 0.99);
  w.max_s = waits.back();
  return w;
}

// The waits table: the pods the scheduler handled (not rejected, not bound at arrival), per size;
// those never placed whose source fits no node (`fits_no_node`) are only counted.
std::vector<ReplayWaits> Waits(const Simulator& sim, const std::vector<Track>& tracks,
                               const std::vector<bool>& fits_no_node, common::TimePoint end) {
  struct Acc {
    std::string name;
    std::vector<double> waits;
    int64_t never = 0;
    int64_t fit_no_node = 0;
    double gpu_h = 0;
  };
  std::map<int64_t, Acc> by_size;
  Acc total{"total", {}, 0, 0, 0};
  for (const Track& t : tracks) {
    const PodOutcome& o = sim.outcomes()[t.outcome];
    if (o.state == PodState::kRejected || o.state == PodState::kPreBound) continue;
    auto [key, name] = SizeOf(o.pod->gpu);
    Acc& a = by_size[key];
    a.name = name;
    if (!t.placed && fits_no_node[t.source]) {
      ++a.fit_no_node;
      ++total.fit_no_node;
      continue;
    }
    const double wait_s =
        common::Seconds((t.placed ? *t.placed : std::max(end, t.arrived)) - t.arrived);
    const api::GpuRequest& gpu = o.pod->gpu;
    const int32_t milli = gpu.milli > 0 ? gpu.milli : o.gpu.milli;
    const double gpus = static_cast<double>(gpu.count) * milli / api::kMilliPerGpu;
    for (Acc* x : {&a, &total}) {
      x->waits.push_back(wait_s);
      x->never += t.placed ? 0 : 1;
      x->gpu_h += wait_s / 3600.0 * gpus;
    }
  }
  std::vector<ReplayWaits> out;
  for (auto& [key, a] : by_size) {
    out.push_back(Summarise(a.name, std::move(a.waits), a.never, a.fit_no_node, a.gpu_h));
  }
  if (!by_size.empty()) {
    out.push_back(
        Summarise("total", std::move(total.waits), total.never, total.fit_no_node, total.gpu_h));
  }
  return out;
}

// Per source pod (Workload::pods): whether it fits no node even with every node empty. Checked
// only for the sources of pods never placed, on a second Simulator with the workload's cluster
// objects and no pod (FeasibleNodes: the profile's own filters). Not for a gang member: alone,
// its gang's PreFilter would refuse it.
common::StatusOr<std::vector<bool>> FitsNoNode(const Simulator& sim, const Workload& w,
                                               const std::vector<Track>& tracks) {
  std::vector<bool> out(w.pods.size(), false);
  std::vector<bool> checked(w.pods.size(), false);
  std::unique_ptr<Simulator> empty;
  for (const Track& t : tracks) {
    if (t.placed || checked[t.source]) continue;
    const PodOutcome& o = sim.outcomes()[t.outcome];
    if (o.state == PodState::kRejected || o.state == PodState::kPreBound || !o.pod->gang.empty()) {
      continue;
    }
    checked[t.source] = true;
    if (empty == nullptr) {
      SimOptions options;
      options.arrival_interval = common::Duration(0);
      GPUSCHED_ASSIGN_OR_RETURN(empty, Simulator::Create(sim.config(), sim.deps(), options));
      GPUSCHED_RETURN_IF_ERROR(empty->AddClusterObjects(w));
    }
    GPUSCHED_ASSIGN_OR_RETURN(std::vector<api::NodePtr> nodes,
                              empty->FeasibleNodes(w.pods[t.source]));
    out[t.source] = nodes.empty();
  }
  return out;
}

}  // namespace

namespace {

// The consolidations' moves, and the moved pods that replaced a moved pod.
void CountMoves(const Simulator& sim, ReplayResult& r) {
  for (const Preemption& p : sim.preemptions()) {
    if (p.moves()) r.moves += static_cast<int64_t>(p.victims.size());
  }
  for (const PodOutcome& o : sim.outcomes()) {
    if (o.state == PodState::kMoved && o.replaces_moved) ++r.moved_again;
  }
}

}  // namespace

common::StatusOr<ReplayResult> RunReplay(Simulator& sim, const Workload& workload,
                                         const ReplayOptions& options) {
  GPUSCHED_RETURN_IF_ERROR(sim.AddClusterObjects(workload));
  GPUSCHED_ASSIGN_OR_RETURN(std::vector<Arrival> arrivals, options.load > 0
                                                               ? LoadArrivals(workload, options)
                                                               : OwnArrivals(workload));

  // The observer outlives this call (the scheduler keeps it): it shares the plan, which stops
  // planning once the replay is over.
  auto plan = std::make_shared<Plan>(sim);
  auto& departures = plan->departures;
  const common::TimePoint start = sim.sim_clock().Now();
  const common::FakeClock& clock = sim.sim_clock();
  sim.scheduler().AddDecisionObserver(
      [plan, &clock](const scheduler::Decision& d) { plan->Observe(d, clock.Now()); });

  ReplayResult r;
  r.options = options;
  // Under a load, a sample is kept at most every 1/10,000 of the window (the mean and the peak
  // still see every event), so that a day of arrivals does not keep one sample per event.
  Curve curve(sim, start, options.load > 0 ? options.window / 10000 : common::Duration(0), r);
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
      plan->PlanUntracked();
      curve.Sample(d.at);
    }
    return common::Status::Ok();
  };

  const common::TimePoint stop = options.until ? start + *options.until : common::TimePoint::max();
  for (size_t i = 0; i < arrivals.size(); ++i) {
    const Arrival& a = arrivals[i];
    const common::TimePoint at = start + a.offset;
    if (at > stop) break;
    GPUSCHED_RETURN_IF_ERROR(depart_until(at));
    GPUSCHED_RETURN_IF_ERROR(sim.AdvanceTo(at));
    GPUSCHED_ASSIGN_OR_RETURN(std::optional<common::Duration> run,
                              DurationAnnotation(*a.pod, kDurationAnnotation));
    GPUSCHED_ASSIGN_OR_RETURN(size_t index, sim.SubmitWorkloadPod(a.pod));
    ++r.arrivals;
    const PodOutcome& outcome = sim.outcomes()[index];
    Track t{at, std::nullopt, run, index, a.source};
    // Placed at once (SubmitPod placed it before its track existed): it leaves after its run.
    if (outcome.state == PodState::kScheduled) {
      t.placed = at;
      if (run) plan->Leaves(*outcome.pod, at + *run);
    }
    if (outcome.state != PodState::kRejected) {
      plan->track_of[outcome.pod->meta.uid] = plan->tracks.size();
    }
    plan->tracks.push_back(t);
    if (!outcome.nominated_node.empty()) {
      // It preempted: it binds once its victims are gone and its backoff is over, as after a
      // departure (never past the next event).
      common::TimePoint settle = std::min(at + kSettle, stop);
      if (i + 1 < arrivals.size()) settle = std::min(settle, start + arrivals[i + 1].offset);
      if (!departures.empty()) settle = std::min(settle, departures.top().at);
      GPUSCHED_RETURN_IF_ERROR(sim.AdvanceTo(settle));
    }
    plan->PlanUntracked();
    curve.Sample(at);
  }
  // Under a load the replay ends with the window, and at `until` when set: what still runs or
  // waits then is counted as is.
  const common::TimePoint end =
      std::min(options.load > 0 ? start + options.window : common::TimePoint::max(), stop);
  GPUSCHED_RETURN_IF_ERROR(depart_until(end));
  if (end != common::TimePoint::max()) {
    GPUSCHED_RETURN_IF_ERROR(sim.AdvanceTo(std::max(end, clock.Now())));
    curve.Sample(clock.Now());
  }
  // A preemptor still waiting for its victims binds, as at the end of a static run.
  const common::TimePoint before_settle = clock.Now();
  if (!options.until) GPUSCHED_RETURN_IF_ERROR(sim.SettleNominated());
  if (clock.Now() != before_settle) curve.Sample(clock.Now());
  plan->over = true;
  curve.Finish();
  GPUSCHED_ASSIGN_OR_RETURN(std::vector<bool> fits_no_node,
                            FitsNoNode(sim, workload, plan->tracks));
  r.waits = Waits(sim, plan->tracks, fits_no_node, curve.last());
  r.placements = plan->placements;
  CountMoves(sim, r);
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

namespace {

// A wait for people: "0s", "42s", "12.5m", "3.2h", "2.1d".
std::string WaitText(double seconds) {
  char buf[32];
  if (seconds < 60) {
    std::snprintf(buf, sizeof(buf), "%.0fs", seconds);
  } else if (seconds < 3600) {
    std::snprintf(buf, sizeof(buf), "%.1fm", seconds / 60);
  } else if (seconds < 2 * 86400) {
    std::snprintf(buf, sizeof(buf), "%.1fh", seconds / 3600);
  } else {
    std::snprintf(buf, sizeof(buf), "%.1fd", seconds / 86400);
  }
  return buf;
}

}  // namespace

std::string FormatReplayText(const ReplayResult& r) {
  char buf[256];
  std::snprintf(buf, sizeof(buf),
                "\nReplay over %.2f h: GPU allocation mean %.1f%%, peak %.1f%%; %lld pods "
                "departed, %lld running and %lld waiting at the end\n",
                r.span_hours, r.mean_gpu_allocation, r.peak_gpu_allocation,
                static_cast<long long>(r.departed),
                static_cast<long long>(r.samples.empty() ? 0 : r.samples.back().running),
                static_cast<long long>(r.samples.empty() ? 0 : r.samples.back().waiting));
  std::string out = buf;
  if (r.options.load > 0) {
    std::snprintf(buf, sizeof(buf),
                  "Offered GPU load %.2f: %lld arrivals over %.2f h (Poisson, seed %llu)\n",
                  r.options.load, static_cast<long long>(r.arrivals),
                  common::Seconds(r.options.window) / 3600.0,
                  static_cast<unsigned long long>(r.options.seed));
    out += buf;
  }
  if (r.moves > 0) {
    std::snprintf(buf, sizeof(buf),
                  "Consolidation: %lld pods moved (%.2f%% of %lld placements), %lld of them "
                  "replacements of moved pods\n",
                  static_cast<long long>(r.moves),
                  r.placements > 0
                      ? 100.0 * static_cast<double>(r.moves) / static_cast<double>(r.placements)
                      : 0.0,
                  static_cast<long long>(r.placements), static_cast<long long>(r.moved_again));
    out += buf;
  }
  if (r.waits.empty()) return out;
  out += "Waits, arrival to first placement (never placed: until the end; FIT NO NODE: no wait):\n";
  std::vector<std::vector<std::string>> rows = {{"GPUS", "PODS", "WAITED", "NEVER PLACED", "P50",
                                                 "P90", "P99", "MAX", "PENDING GPU-H",
                                                 "FIT NO NODE"}};
  for (const ReplayWaits& w : r.waits) {
    std::snprintf(buf, sizeof(buf), "%.2f", w.pending_gpu_hours);
    rows.push_back({w.size, std::to_string(w.pods), std::to_string(w.waited),
                    std::to_string(w.never_placed), WaitText(w.p50_s), WaitText(w.p90_s),
                    WaitText(w.p99_s), WaitText(w.max_s), buf, std::to_string(w.fit_no_node)});
  }
  return out + TextTable(rows);
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
  boost::json::array waits;
  for (const ReplayWaits& w : r.waits) {
    waits.push_back(boost::json::object{{"gpus", w.size},
                                        {"pods", w.pods},
                                        {"waited", w.waited},
                                        {"neverPlaced", w.never_placed},
                                        {"p50Seconds", round3(w.p50_s)},
                                        {"p90Seconds", round3(w.p90_s)},
                                        {"p99Seconds", round3(w.p99_s)},
                                        {"maxSeconds", round3(w.max_s)},
                                        {"pendingGpuHours", round3(w.pending_gpu_hours)},
                                        {"fitNoNode", w.fit_no_node}});
  }
  boost::json::object out{{"spanHours", round3(r.span_hours)},
                          {"meanGpuAllocation", round3(r.mean_gpu_allocation)},
                          {"peakGpuAllocation", round3(r.peak_gpu_allocation)},
                          {"departed", r.departed},
                          {"arrivals", r.arrivals},
                          {"placements", r.placements},
                          {"moves", r.moves},
                          {"movedAgain", r.moved_again},
                          {"waits", std::move(waits)},
                          {"samples", std::move(samples)}};
  if (r.options.load > 0) {
    out["load"] =
        boost::json::object{{"offered", r.options.load},
                            {"windowHours", round3(common::Seconds(r.options.window) / 3600.0)},
                            {"seed", r.options.seed}};
  }
  return out;
}

}  // namespace gpusched::sim
