// SPDX-License-Identifier: Apache-2.0
// gpusched hpa simulate: replays a metric time series (CSV) through the upstream HPA algorithm
// (src/addons/hpa) and shows, for every scale-down, which pods the ReplicaSet controller removes
// given their deletion costs (src/addons/deletion_cost/ranking).
//
//   gpusched hpa simulate -f hpa.yaml --metrics load.csv [--replicas 10] [--request cpu=500m]
//       [--load total|per-pod] [--pod-startup 30s] [--changes-only] [-o text|json]
//
// -f takes the HorizontalPodAutoscaler (autoscaling/v2) and, optionally, its target Deployment
// (initial replicas and container requests) and the current Pods (names, nodes, readiness,
// deletion costs). Without Pods, the simulator starts from synthetic pods <target>-<n>, each on a
// node of its own, with cost 0; pods created by a scale-up are named <target>-new-<n>.
#include "src/addons/hpa/hpa.h"

#include <CLI/CLI.hpp>
#include <boost/json.hpp>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "cmd/gpusched/commands.h"
#include "cmd/gpusched/wiring.h"
#include "src/addons/deletion_cost/plan.h"
#include "src/addons/deletion_cost/ranking.h"
#include "src/addons/hpa/simulate.h"
#include "src/api/decode.h"
#include "src/api/quantity.h"
#include "src/api/resources.h"
#include "src/common/clock.h"
#include "src/common/strings.h"

namespace gpusched::cmd {
namespace {

namespace dc = addons::deletion_cost;
namespace hpa = addons::hpa;
namespace json = boost::json;

// Σ requests of `resource` of a Deployment's pod template in milli-units, over its containers
// and sidecars (restartable init containers), as the HPA controller sums a pod's
// (calculatePodRequestsFromContainers); nullopt when none requests it. The template's requests
// are defaulted as the API server defaults a pod's (a limit without a request).
std::optional<int64_t> TemplateRequestMilli(const api::WorkloadController& deployment,
                                            std::string_view resource) {
  const common::Atom name = common::Intern(resource);
  const bool cpu = name == api::Names().cpu;
  int64_t sum = 0;
  auto add = [&](const api::Container& c) {
    const int64_t v = c.requests.Get(name);
    sum += cpu ? v : v * 1000;
  };
  for (const api::Container& c : deployment.pod_template.containers) add(c);
  for (const api::Container& c : deployment.pod_template.init_containers) {
    if (c.restartable) add(c);
  }
  if (sum == 0) return std::nullopt;
  return sum;
}

std::string FormatValue(const std::optional<double>& v) {
  if (!v) return "-";
  std::ostringstream o;
  o << *v;
  return o.str();
}

class HpaSimulateCommand {
 public:
  explicit HpaSimulateCommand(CLI::App& parent)
      : app_(*parent.add_subcommand(
            "simulate",
            "Replay a metric CSV through the upstream HPA algorithm (tolerance, stabilization "
            "windows, Pods/Percent policies, selectPolicy) and show which pods each scale-down "
            "removes")) {
    app_.add_option("-f,--filename", files_,
                    "Manifests: the HorizontalPodAutoscaler (autoscaling/v2), optionally its "
                    "Deployment and the current Pods (repeatable)")
        ->required();
    app_.add_option("--metrics", csv_,
                    "Metric CSV: header time,<metric>... (seconds; one column per HPA metric, "
                    "named after it)")
        ->required();
    app_.add_option("--replicas", replicas_,
                    "Initial replicas (default: the Deployment's, the Pods', or minReplicas)");
    app_.add_option("--request", requests_,
                    "Per-pod request for a Utilization metric, e.g. cpu=500m (default: the "
                    "Deployment's pod template; repeatable)");
    app_.add_option("--load", load_,
                    "How to read Resource/Pods columns: total (spread over the Ready pods) or "
                    "per-pod (the per-pod average)")
        ->check(CLI::IsMember({"total", "per-pod"}))
        ->capture_default_str();
    app_.add_option("--pod-startup", startup_s_,
                    "Seconds a new pod stays Pending before it is Ready")
        ->capture_default_str();
    app_.add_option("--end", end_s_,
                    "Simulate until this many seconds (default: the last CSV time)");
    app_.add_option("--sync-period", sync_s_, "--horizontal-pod-autoscaler-sync-period, seconds")
        ->capture_default_str();
    app_.add_option("--tolerance", tolerance_, "--horizontal-pod-autoscaler-tolerance")
        ->capture_default_str();
    app_.add_option("--downscale-stabilization", downscale_s_,
                    "--horizontal-pod-autoscaler-downscale-stabilization, seconds")
        ->capture_default_str();
    app_.add_flag("--changes-only", changes_only_, "Print only the ticks that scale");
    app_.add_option("-o,--output", output_, "Output format")
        ->check(CLI::IsMember({"text", "json"}))
        ->capture_default_str();
  }

  CLI::App& app() { return app_; }

  int Run() {
    auto manifests = ReadManifests();
    if (!manifests.ok()) return Fail(manifests.status(), kExitBadInput);
    const hpa::HpaSpec& spec = manifests->spec;
    const api::WorkloadController* target =
        TargetDeployment(manifests->deployments, spec.target_name);

    auto csv_text = ReadTextFile(csv_);
    if (!csv_text.ok()) return Fail(csv_text.status(), kExitBadInput);
    auto series = hpa::ParseMetricCsv(*csv_text, csv_);
    if (!series.ok()) return Fail(series.status(), kExitBadInput);

    const hpa::Settings settings = MakeSettings();
    if (sync_s_ <= 0 || tolerance_ < 0 || downscale_s_ < 0 || startup_s_ < 0) {
      std::cerr << "error: --sync-period must be > 0; --tolerance, --downscale-stabilization and "
                   "--pod-startup >= 0\n";
      return kExitUsage;
    }
    hpa::SimOptions options;
    if (!MakeOptions(spec, target, options)) return kExitUsage;

    // The pods: from the manifests (real facts, costs), or synthetic.
    auto initial = PodsFromManifests(manifests->pods, options.start);
    if (!initial.ok()) return Fail(initial.status(), kExitBadInput);
    if (initial->empty()) {
      options.initial_replicas = InitialReplicas(spec, target);
    } else if (replicas_ && *replicas_ != static_cast<int32_t>(initial->size())) {
      std::cerr << "warning: --replicas " << *replicas_ << " ignored: -f holds " << initial->size()
                << " active pods\n";
    }

    hpa::SimHooks hooks;
    hooks.choose_victims = [this](common::TimePoint now, std::span<const hpa::SimPod> pods,
                                  int32_t count) { return ChooseVictims(now, pods, count); };
    auto steps = hpa::Simulate(spec, *series, std::move(initial).value(), options, settings, hooks);
    if (!steps.ok()) return Fail(steps.status(), kExitBadInput);
    if (output_ == "json") {
      PrintJson(spec, *steps);
    } else {
      PrintText(spec, *steps);
    }
    return kExitOk;
  }

 private:
  // What -f holds: exactly one HorizontalPodAutoscaler, and the Deployments and Pods.
  struct Manifests {
    hpa::HpaSpec spec;
    std::vector<api::WorkloadController> deployments;
    std::vector<json::value> pods;
  };

  common::StatusOr<Manifests> ReadManifests() const {
    std::optional<hpa::HpaSpec> spec;
    Manifests m;
    for (const std::string& f : files_) {
      GPUSCHED_ASSIGN_OR_RETURN(std::string text, ReadTextFile(f));
      GPUSCHED_ASSIGN_OR_RETURN(std::vector<json::value> docs, api::ParseYamlDocuments(text, f));
      for (json::value& d : docs) {
        const std::string_view kind = api::PeekString(d, "kind");
        if (kind == "HorizontalPodAutoscaler") {
          if (spec)
            return common::InvalidArgumentError("more than one HorizontalPodAutoscaler in -f");
          GPUSCHED_ASSIGN_OR_RETURN(spec, hpa::DecodeHpa(d));
        } else if (kind == "Deployment") {
          common::StatusOr<api::WorkloadController> w = api::DecodeWorkloadController(d);
          if (!w.ok()) return w.status().WithContext(f);
          m.deployments.push_back(std::move(w).value());
        } else if (kind == "Pod") {
          m.pods.push_back(std::move(d));
        }
      }
    }
    if (!spec) return common::InvalidArgumentError("no HorizontalPodAutoscaler in -f");
    m.spec = std::move(spec).value();
    return m;
  }

  // The last Deployment named `name`, or nullptr.
  static const api::WorkloadController* TargetDeployment(
      const std::vector<api::WorkloadController>& deployments, const std::string& name) {
    const api::WorkloadController* target = nullptr;
    for (const api::WorkloadController& d : deployments) {
      if (d.meta.name == name) target = &d;
    }
    return target;
  }

  hpa::Settings MakeSettings() const {
    hpa::Settings settings;
    settings.sync_period =
        std::chrono::duration_cast<common::Duration>(std::chrono::duration<double>(sync_s_));
    settings.tolerance = tolerance_;
    settings.downscale_stabilization =
        std::chrono::duration_cast<common::Duration>(std::chrono::duration<double>(downscale_s_));
    return settings;
  }

  // The simulation options from the flags, starting now (recorded in start_); requests from the
  // target's pod template, overridden by --request. False (reported) for a bad --request.
  bool MakeOptions(const hpa::HpaSpec& spec, const api::WorkloadController* target,
                   hpa::SimOptions& options) {
    common::SystemClock clock;
    options.start = std::chrono::floor<std::chrono::seconds>(clock.Now());
    start_ = options.start;
    options.end = end_s_;
    options.pod_prefix = spec.target_name.empty() ? "pod" : spec.target_name;
    options.load =
        load_ == "per-pod" ? hpa::SimOptions::Load::kPerPod : hpa::SimOptions::Load::kTotal;
    options.pod_startup =
        std::chrono::duration_cast<common::Duration>(std::chrono::duration<double>(startup_s_));
    for (const hpa::MetricSpec& m : spec.metrics) {
      if (target == nullptr) break;
      if (auto r = TemplateRequestMilli(*target, m.name)) options.request_milli[m.name] = *r;
    }
    for (const std::string& r : requests_) {
      const size_t eq = r.find('=');
      auto q =
          eq == std::string::npos
              ? common::StatusOr<api::Quantity>(common::InvalidArgumentError("want name=quantity"))
              : api::Quantity::Parse(r.substr(eq + 1));
      if (!q.ok()) {
        std::cerr << "error: --request " << common::Quote(r) << ": " << q.status().message()
                  << "\n";
        return false;
      }
      options.request_milli[r.substr(0, eq)] = q->MilliValue();
    }
    return true;
  }

  // The active pods of -f (their facts kept in facts_ for the ranking); a pod without a
  // creation time was created an hour before `start`, an unready one is Ready in a year.
  common::StatusOr<std::vector<hpa::SimPod>> PodsFromManifests(
      const std::vector<json::value>& pod_docs, common::TimePoint start) {
    std::vector<hpa::SimPod> initial;
    for (const json::value& d : pod_docs) {
      GPUSCHED_ASSIGN_OR_RETURN(dc::PodFacts f, dc::DecodePodFacts(d));
      if (!f.Active()) continue;
      hpa::SimPod p;
      p.name = f.name;
      p.created = f.created.value_or(start - std::chrono::hours(1));
      p.ready_at =
          f.ready ? f.ready_time.value_or(p.created) : start + std::chrono::hours(24 * 365);
      initial.push_back(p);
      facts_[f.name] = std::move(f);
    }
    return initial;
  }

  // Synthetic pods: --replicas, else the target Deployment's spec.replicas, else minReplicas.
  int32_t InitialReplicas(const hpa::HpaSpec& spec, const api::WorkloadController* target) const {
    if (replicas_) return *replicas_;
    if (target != nullptr && target->replicas) return *target->replicas;
    return spec.min_replicas;
  }

  static int Fail(const common::Status& s, int rc) {
    std::cerr << "error: " << s.message() << "\n";
    return rc;
  }

  // The exact ReplicaSet ranking over the simulated pods at `now`.
  std::vector<std::string> ChooseVictims(common::TimePoint now, std::span<const hpa::SimPod> pods,
                                         int32_t count) {
    dc::ScaleDownInput in;
    in.now = now;
    in.replicas = static_cast<int32_t>(pods.size()) - count;
    for (size_t k = 0; k < pods.size(); ++k) {
      const hpa::SimPod& p = pods[k];
      auto it = facts_.find(p.name);
      if (it != facts_.end()) {
        in.owned.push_back(it->second);
        continue;
      }
      dc::PodFacts f;
      f.namespace_ = "sim";
      f.name = p.name;
      f.uid = p.name;
      f.node_name = "node-" + p.name;  // one node per synthetic pod: no co-location
      f.created = p.created;
      if (p.ready_at <= now) {
        f.phase = "Running";
        f.ready = true;
        f.ready_time = p.ready_at;
      } else {
        f.phase = "Pending";
      }
      in.owned.push_back(std::move(f));
    }
    in.related = in.owned;
    dc::ScaleDownPlan plan = dc::PlanScaleDown(in);
    std::vector<std::string> names;
    std::vector<std::string> why;
    for (size_t v = 0; v < static_cast<size_t>(plan.deletions); ++v) {
      names.push_back(plan.pods[v].facts.name);
      std::string reason = "cost " + std::to_string(plan.pods[v].cost.value);
      if (v < plan.versus_survivor.size()) {
        reason += "; rule " + std::to_string(static_cast<int>(plan.versus_survivor[v].rule)) + " " +
                  std::string(dc::RuleName(plan.versus_survivor[v].rule)) + ": " +
                  plan.versus_survivor[v].detail;
      } else if (!plan.ranked) {
        reason += "; every pod goes";
      }
      why.push_back(std::move(reason));
    }
    reasons_[now] = std::move(why);
    return names;
  }

  void PrintText(const hpa::HpaSpec& spec, const std::vector<hpa::SimStep>& steps) {
    std::cout << "HPA " << spec.namespace_ << "/" << spec.name << " -> " << spec.target_kind << " "
              << spec.target_name << ": min " << spec.min_replicas << ", max " << spec.max_replicas
              << ", " << (spec.behavior ? "behavior path" : "legacy path (no behavior)") << "\n";
    std::string header = "T(s)";
    for (const auto& m : spec.metrics) header += "\t" + m.Describe() + "\t(replicas)";
    std::cout << header << "\tPROPOSAL\tSTABILIZED\tREPLICAS\tREASON\n";
    int32_t last = steps.empty() ? 0 : steps.front().decision.current;
    for (const hpa::SimStep& s : steps) {
      const bool changed = s.decision.scaled();
      if (changes_only_ && !changed) continue;
      std::ostringstream line;
      line << s.t;
      for (size_t m = 0; m < spec.metrics.size(); ++m) {
        line << "\t" << FormatValue(s.values[m]) << "\t" << s.metric_results[m];
      }
      line << "\t" << (s.decision.proposal ? std::to_string(*s.decision.proposal) : "-") << "\t"
           << s.decision.stabilized << "\t" << s.decision.current
           << (changed ? " -> " + std::to_string(s.decision.desired) : "") << "\t"
           << s.decision.reason;
      if (!s.decision.error.empty()) line << " (" << s.decision.error << ")";
      std::cout << line.str() << "\n";
      if (!s.added.empty()) {
        std::cout << "\tadded:";
        for (const auto& n : s.added) std::cout << " " << n;
        std::cout << "\n";
      }
      if (!s.removed.empty()) {
        const auto it = reasons_.find(Time(s.t));
        for (size_t k = 0; k < s.removed.size(); ++k) {
          std::cout << "\tremoved: " << s.removed[k];
          if (it != reasons_.end() && k < it->second.size())
            std::cout << " (" << it->second[k] << ")";
          std::cout << "\n";
        }
      }
      last = s.decision.desired;
    }
    std::cout << "final replicas: " << last << "\n";
  }

  void PrintJson(const hpa::HpaSpec& spec, const std::vector<hpa::SimStep>& steps) {
    json::array out;
    for (const hpa::SimStep& s : steps) {
      if (changes_only_ && !s.decision.scaled()) continue;
      json::object o;
      o["t"] = s.t;
      json::object metrics;
      for (size_t m = 0; m < spec.metrics.size(); ++m) {
        json::object mv;
        if (s.values[m]) mv["value"] = *s.values[m];
        mv["replicas"] = s.metric_results[m];
        metrics[spec.metrics[m].Describe()] = std::move(mv);
      }
      o["metrics"] = std::move(metrics);
      if (s.decision.proposal) o["proposal"] = *s.decision.proposal;
      o["stabilized"] = s.decision.stabilized;
      o["current"] = s.decision.current;
      o["replicas"] = s.decision.desired;
      o["reason"] = s.decision.reason;
      if (!s.decision.error.empty()) o["error"] = s.decision.error;
      json::array added;
      for (const auto& n : s.added) added.emplace_back(n);
      o["added"] = std::move(added);
      json::array removed;
      const auto it = reasons_.find(Time(s.t));
      for (size_t k = 0; k < s.removed.size(); ++k) {
        json::object r{{"pod", s.removed[k]}};
        if (it != reasons_.end() && k < it->second.size()) r["why"] = it->second[k];
        removed.push_back(std::move(r));
      }
      o["removed"] = std::move(removed);
      out.push_back(std::move(o));
    }
    std::cout << json::serialize(json::object{{"hpa", spec.name}, {"steps", std::move(out)}})
              << "\n";
  }

  common::TimePoint Time(double t) const {
    return start_ + std::chrono::duration_cast<common::Duration>(std::chrono::duration<double>(t));
  }

  CLI::App& app_;
  std::vector<std::string> files_;
  std::string csv_;
  std::optional<int32_t> replicas_;
  std::vector<std::string> requests_;
  std::string load_ = "total";
  double startup_s_ = 0;
  std::optional<double> end_s_;
  double sync_s_ = 15;
  double tolerance_ = 0.1;
  double downscale_s_ = 300;
  bool changes_only_ = false;
  std::string output_ = "text";
  common::TimePoint start_{};
  std::map<std::string, dc::PodFacts> facts_;
  std::map<common::TimePoint, std::vector<std::string>> reasons_;
};

class HpaCommand final : public Command {
 public:
  explicit HpaCommand(CLI::App& root)
      : app_(*root.add_subcommand("hpa", "HorizontalPodAutoscaler tools")), simulate_(app_) {
    app_.require_subcommand(1);
  }
  CLI::App& app() override { return app_; }
  int Run() override { return simulate_.Run(); }

 private:
  CLI::App& app_;
  HpaSimulateCommand simulate_;
};

}  // namespace

std::unique_ptr<Command> NewHpaCommand(CLI::App& root) {
  return std::make_unique<HpaCommand>(root);
}

}  // namespace gpusched::cmd
