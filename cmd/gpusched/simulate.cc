// SPDX-License-Identifier: Apache-2.0
// gpusched simulate: runs the production scheduler over a simulated cluster (src/sim).
//
//   gpusched simulate                         the built-in example, text report
//   gpusched simulate --print-example > x.yaml; gpusched simulate -f x.yaml
//   gpusched simulate --trace-nodes N.csv --trace-pods P.csv --policy best-fit --seed 42
//   gpusched simulate --from-cluster [--kubeconfig K] -f jobs.yaml   will these fit, and where?
//   gpusched simulate --trace-nodes N.csv --trace-pods P.csv --load 1.2   a saturated replay
//
// Inputs (one kind at a time): -f/--filename (YAML manifests, repeatable; workload objects expanded
// into pods, invalid objects reported and skipped, exit 1 when any was), --trace-nodes with
// --trace-pods (the openb CSV trace), or nothing (the built-in example).
// Protocols: "plain" (nodes, then pods in order, with retries; default for manifests) and "fgd"
// (the FGD paper's replay: shuffle, inflate to 130 %, no retries; default for traces).
#include <CLI/CLI.hpp>
#include <boost/json.hpp>
#include <cstdint>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cmd/gpusched/cluster_snapshot.h"
#include "cmd/gpusched/commands.h"
#include "cmd/gpusched/wiring.h"
#include "src/common/clock.h"
#include "src/common/logging.h"
#include "src/config/config.h"
#include "src/config/duration.h"
#include "src/framework/registry.h"
#include "src/plugins/in_tree_registry.h"
#include "src/scheduler/decision_log.h"
#include "src/sim/builtin_example.h"
#include "src/sim/compare.h"
#include "src/sim/controllers.h"
#include "src/sim/html_report.h"
#include "src/sim/microservices.h"
#include "src/sim/replay.h"
#include "src/sim/report.h"
#include "src/sim/simulator.h"
#include "src/sim/trace/fgd_protocol.h"
#include "src/sim/trace/openb.h"
#include "src/sim/traffic_report.h"
#include "src/sim/workload.h"

namespace gpusched::cmd {
namespace {

class SimulateCommand final : public Command {
 public:
  explicit SimulateCommand(CLI::App& root)
      : app_(*root.add_subcommand(
            "simulate",
            "Simulate scheduling with the production scheduler over an in-memory cluster")) {
    app_.add_option("-f,--filename", files_,
                    "YAML/JSON manifests of Nodes and Pods (multi-document; repeatable): a file, "
                    "a directory (its .yaml, .yml and .json files) or - (standard input). Pods "
                    "arrive in document order")
        ->allow_extra_args(false);
    app_.add_flag("-R,--recursive", recursive_,
                  "Read the directories -f names recursively, as kubectl -R");
    app_.add_option("--trace-nodes", trace_nodes_,
                    "openb node list CSV (sn,cpu_milli,memory_mib,gpu,model)");
    app_.add_option("--trace-pods", trace_pods_,
                    "openb pod list CSV "
                    "(name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,...)");
    app_.add_option("--config", config_file_,
                    "KubeSchedulerConfiguration file (default: the default profile with "
                    "percentageOfNodesToScore 100)");
    app_.add_option("--policy", policy_,
                    "Shortcut for a profile: best-fit (the FGD paper's BestFit baseline: GpuFit "
                    "scoreMode BestFit as the only score plugin), default, or a GpuFragmentation "
                    "policy as the only score plugin: learned (gpusched's), fgd, bestfit, dotprod, "
                    "gpuclustering, gpupacking, random, or fgd-trace (the paper's FGD, its "
                    "typical pods read from the trace's pod list; docs/gpu-placement.md)")
        ->check(CLI::IsMember({"best-fit", "default", "learned", "fgd", "bestfit", "dotprod",
                               "gpuclustering", "gpupacking", "random", "fgd-trace"}));
    app_.add_option("--seed", seed_, "Seed of the tie-breaking and protocol random streams")
        ->capture_default_str();
    app_.add_option("--protocol", protocol_,
                    "plain (apply nodes, then pods in order, with retries) or fgd (the FGD "
                    "paper's replay). Default: fgd for traces, plain otherwise")
        ->check(CLI::IsMember({"plain", "fgd"}));
    app_.add_option("--inflation", inflation_, "fgd: target GPU demand in multiples of capacity")
        ->capture_default_str();
    app_.add_option("-o,--output", output_,
                    "Report format: text, json, csv (one row per pod: pod, node, gpuDevices, "
                    "state, message) or html (one self-contained page with charts)")
        ->check(CLI::IsMember({"text", "json", "csv", "html"}))
        ->capture_default_str();
    app_.add_option("--curve-csv", curve_csv_,
                    "fgd or --replay: also write the allocation curve as CSV here");
    app_.add_flag("--check-invariants", check_invariants_,
                  "Check the cache and cluster invariants after every placement");
    app_.add_flag("--print-example", print_example_,
                  "Print the built-in example as Kubernetes manifests and exit");
    app_.add_flag("--replay", replay_,
                  "Time replay: pods arrive at gpusched.io/arrival (or creationTimestamp; the "
                  "trace's creation_time) and leave after gpusched.io/duration (the trace's "
                  "deletion_time); reports GPU allocation over time");
    app_.add_option("--load", load_,
                    "Saturated replay (implies --replay): pods arrive in input order, repeated "
                    "as needed, as a Poisson process (--seed) whose rate offers this many times "
                    "the cluster's GPUs (durations counted up to --load-window); reports waits "
                    "and pending GPU-hours per pod size");
    app_.add_option("--movable-qos", movable_qos_,
                    "Trace input: pods of these qos classes (LS, BE, Burstable, Guaranteed) are "
                    "read as one-replica ReplicaSets marked gpusched.io/movable, so "
                    "Consolidation may move them (docs/consolidation.md)")
        ->delimiter(',')
        ->check(CLI::IsMember({"LS", "BE", "Burstable", "Guaranteed"}));
    app_.add_option("--load-window", load_window_,
                    "--load: how long the arrivals go on (a Go duration)")
        ->capture_default_str();
    app_.add_option("--compare", compare_,
                    "Run the same input under two KubeSchedulerConfiguration files and print "
                    "them side by side")
        ->expected(2);
    app_.add_flag("--from-cluster", from_cluster_,
                  "Start from a read-only snapshot of a live cluster (its nodes, bound pods and "
                  "every other kind the scheduler reads), then place the pods of -f on it");
    app_.add_option("--kubeconfig", kubeconfig_,
                    "--from-cluster: kubeconfig of the cluster (default: KUBECONFIG, in-cluster "
                    "config, ~/.kube/config)");
    app_.add_option("--sync-timeout", sync_timeout_s_,
                    "--from-cluster: seconds to wait for the cluster's lists")
        ->capture_default_str();
    app_.add_option("--example", example_,
                    "Which built-in example: gpu (default), or a network-locality example: "
                    "microservices, microservices-b (docs/network-locality.md)")
        ->check(CLI::IsMember({"gpu", "microservices", "microservices-b"}));
  }

  CLI::App& app() override { return app_; }

  int Run() override {
    if (int rc = CheckUsage(); rc != kExitOk) return rc;
    replay_ = replay_ || load_ > 0;
    if (print_example_) {
      if (!example_.empty() && example_ != "gpu") {
        auto yaml = sim::MicroserviceExampleYaml(example_);
        if (!yaml.ok()) return BadInput(yaml.status());
        std::cout << *yaml;
        return kExitOk;
      }
      std::cout << sim::BuiltinExampleYaml();
      return kExitOk;
    }
    auto config = LoadConfig();
    if (!config.ok()) return BadInput(config.status());

    framework::Registry registry;
    common::Status reg = plugins::RegisterInTreePlugins(registry);
    if (!reg.ok()) {
      std::cerr << "error: registering plugins: " << reg.ToString() << "\n";
      return kExitBadInput;
    }

    std::string source;
    auto workload = LoadWorkload(*config, &source);
    if (!workload.ok()) return BadInput(workload.status());
    if (policy_ == "fgd-trace") *config = sim::trace::TraceFgdSchedulerConfig(*workload);
    // The text, JSON and HTML reports list the warnings; the others get them here, once.
    if (!compare_.empty() || output_ == "csv") {
      for (const std::string& w : ReportWarnings(*workload)) std::cerr << "warning: " << w << "\n";
    }
    LogOnlyErrorsUnlessVerbose();

    const bool trace = !trace_nodes_.empty();
    const std::string protocol =
        protocol_.empty() ? (trace && !replay_ ? "fgd" : "plain") : protocol_;
    common::SystemClock wall;
    sim::Simulator::Deps deps{registry, wall};
    if (!compare_.empty()) return RunCompare(deps, *workload, source);
    if (protocol == "fgd") return RunFgd(*config, deps, *workload, source);
    return RunPlain(*config, deps, *workload, source);
  }

 private:
  int CheckUsage() const {
    auto usage = [](const std::string& msg) {
      std::cerr << "error: " << msg << "\nRun with --help for more information.\n";
      return kExitUsage;
    };
    const bool trace = !trace_nodes_.empty() || !trace_pods_.empty();
    if (trace && (trace_nodes_.empty() || trace_pods_.empty())) {
      return usage("--trace-nodes and --trace-pods go together");
    }
    if (trace && !files_.empty()) return usage("-f/--filename and --trace-* are exclusive");
    if (print_example_ && (trace || !files_.empty() || !config_file_.empty())) {
      return usage("--print-example takes no input or config");
    }
    if (!example_.empty() && (trace || !files_.empty())) {
      return usage("--example takes no -f/--filename or --trace-* input");
    }
    if (from_cluster_ && (trace || !example_.empty() || print_example_)) {
      return usage("--from-cluster takes -f/--filename input only");
    }
    if (!kubeconfig_.empty() && !from_cluster_) return usage("--kubeconfig needs --from-cluster");
    if (!movable_qos_.empty() && !trace) return usage("--movable-qos needs --trace-* input");
    if (!config_file_.empty() && !policy_.empty()) {
      return usage("--config and --policy are exclusive");
    }
    const bool replay = replay_ || load_ > 0;  // --load implies --replay
    if (!curve_csv_.empty() && !replay && (protocol_ == "plain" || (!trace && protocol_.empty()))) {
      return usage("--curve-csv needs --protocol fgd or --replay");
    }
    if (replay && protocol_ == "fgd") {
      return usage(std::string(replay_ ? "--replay" : "--load") +
                   " and --protocol fgd are exclusive");
    }
    if (load_ < 0) return usage("--load must be above 0, got " + std::to_string(load_));
    if (app_.count("--load-window") > 0 && load_ <= 0) return usage("--load-window needs --load");
    const std::optional<int64_t> window = config::ParseGoDurationNanos(load_window_);
    if (!window || *window <= 0) {
      return usage("--load-window: invalid value \"" + load_window_ +
                   "\" (want a duration above 0 such as \"24h\" or \"90m\")");
    }
    if (!compare_.empty()) {
      if (!config_file_.empty() || !policy_.empty()) {
        return usage("--compare takes the configs to compare; drop --config/--policy");
      }
      if (protocol_ == "fgd") return usage("--compare and --protocol fgd are exclusive");
      if (output_ == "csv" || output_ == "html") return usage("--compare writes text or json");
    }
    return kExitOk;
  }

  // The GpuFragmentation policy behind a --policy value; empty for best-fit/default.
  static std::string_view FragmentationPolicyName(std::string_view flag) {
    constexpr std::pair<std::string_view, std::string_view> kNames[] = {
        {"learned", "Learned"},
        {"fgd", "FGD"},
        {"bestfit", "BestFit"},
        {"dotprod", "DotProd"},
        {"gpuclustering", "GpuClustering"},
        {"gpupacking", "GpuPacking"},
        {"random", "Random"},
        {"fgd-trace", "FGD"}};
    for (const auto& [flag_name, policy] : kNames) {
      if (flag == flag_name) return policy;
    }
    return {};
  }

  static int BadInput(const common::Status& s) {
    std::cerr << "error: " << s.message() << "\n";
    return kExitBadInput;
  }

  common::StatusOr<config::SchedulerConfig> LoadConfig() const {
    if (policy_ == "best-fit") return sim::trace::BestFitSchedulerConfig();
    if (std::string_view name = FragmentationPolicyName(policy_); !name.empty()) {
      return sim::trace::FragmentationSchedulerConfig(name);
    }
    if (config_file_.empty()) return sim::SimulationDefaultConfig();
    return LoadSchedulerConfig(config_file_);
  }

  common::StatusOr<sim::Workload> LoadWorkload(const config::SchedulerConfig& config,
                                               std::string* source) const {
    if (!trace_nodes_.empty()) {
      sim::trace::OpenbOptions opts;
      opts.keep_times = replay_;
      opts.movable_qos = movable_qos_;
      if (!config.profiles.empty()) opts.scheduler_name = config.profiles.front().scheduler_name;
      *source = "openb trace " + trace_pods_ + " on " + trace_nodes_;
      return sim::trace::LoadOpenbTrace(trace_nodes_, trace_pods_, opts);
    }
    if (!files_.empty() || from_cluster_) {
      sim::Workload w;
      if (from_cluster_) {
        GPUSCHED_ASSIGN_OR_RETURN(ClusterSnapshot snap,
                                  SnapshotCluster(kubeconfig_, config, sync_timeout_s_));
        w = std::move(snap.workload);
        *source = snap.description;
      }
      GPUSCHED_RETURN_IF_ERROR(AppendInputFiles(files_, recursive_, w, *source));
      return w;
    }
    if (!example_.empty() && example_ != "gpu") {
      *source = "the built-in example " + example_;
      return sim::MicroserviceExample(example_);
    }
    *source = "the built-in example";
    return sim::BuiltinExample();
  }

  // One simulation of `workload` under `config`: the plain protocol, or the time replay.
  struct Outcome {
    std::unique_ptr<sim::Simulator> sim;
    sim::Report report;
    std::optional<sim::ReplayResult> replay;
  };
  common::StatusOr<Outcome> SimulateOnce(const config::SchedulerConfig& config,
                                         sim::Simulator::Deps deps, const sim::Workload& workload,
                                         const std::string& source) const {
    sim::SimOptions opts;
    opts.seed = seed_;
    opts.check_invariants = check_invariants_;
    if (replay_) opts.arrival_interval = common::Duration(0);  // the replay sets the clock
    GPUSCHED_ASSIGN_OR_RETURN(std::unique_ptr<sim::Simulator> simulator,
                              sim::Simulator::Create(config, deps, opts));
    // -v 2: one line per decision, as `gpusched scheduler` logs them.
    if (common::V(2)) simulator->scheduler().AddDecisionObserver(scheduler::LogDecision);
    Outcome out;
    if (replay_) {
      sim::ReplayOptions replay;
      replay.load = load_;
      replay.window = common::Duration(config::ParseGoDurationNanos(load_window_).value_or(0));
      replay.seed = seed_;
      GPUSCHED_ASSIGN_OR_RETURN(sim::ReplayResult r, sim::RunReplay(*simulator, workload, replay));
      out.replay = std::move(r);
    } else {
      GPUSCHED_RETURN_IF_ERROR(simulator->Run(workload));
    }
    out.report = sim::BuildReport(*simulator, source, ReportWarnings(workload), workload.rejected);
    out.sim = std::move(simulator);
    return out;
  }

  int RunPlain(const config::SchedulerConfig& config, sim::Simulator::Deps deps,
               const sim::Workload& workload, const std::string& source) {
    auto run = SimulateOnce(config, deps, workload, source);
    if (!run.ok()) return BadInput(run.status());
    if (run->replay && !curve_csv_.empty()) {
      if (int rc = WriteFile(curve_csv_, sim::ReplayCurveCsv(*run->replay)); rc != kExitOk)
        return rc;
    }
    const sim::Report& report = run->report;
    // Workloads that declare traffic (gpusched.io/traffic) also get the cross-zone report.
    const bool traffic = sim::HasTrafficDeclarations(workload);
    if (output_ == "csv") {
      std::cout << sim::FormatPlacementsCsv(report);
    } else if (output_ == "html") {
      std::cout << sim::FormatReportHtml(report, run->replay ? &*run->replay : nullptr);
    } else if (output_ == "json") {
      boost::json::value json = sim::ReportToJson(report);
      if (run->replay) json.as_object()["replay"] = sim::ReplayToJson(*run->replay);
      if (traffic) {
        json.as_object()["network"] = sim::TrafficToJson(sim::BuildTrafficReport(*run->sim));
      }
      std::cout << sim::FormatJson(json);
    } else {
      std::cout << sim::FormatReportText(report);
      if (run->replay) std::cout << sim::FormatReplayText(*run->replay);
      if (traffic) std::cout << "\n" << sim::FormatTrafficText(sim::BuildTrafficReport(*run->sim));
    }
    return RejectionsExit(report);
  }

  // --compare A.yaml B.yaml: the same workload under each config, side by side.
  int RunCompare(sim::Simulator::Deps deps, const sim::Workload& workload,
                 const std::string& source) {
    std::vector<sim::ComparedRun> runs;
    for (const std::string& file : compare_) {
      auto config = LoadSchedulerConfig(file);
      if (!config.ok()) return BadInput(config.status());
      auto run = SimulateOnce(*config, deps, workload, source);
      if (!run.ok()) return BadInput(run.status());
      runs.push_back(sim::ComparedRun{file, std::move(run->report), std::move(run->replay)});
    }
    if (output_ == "json") {
      std::cout << sim::FormatJson(sim::ComparisonToJson(runs));
    } else {
      std::cout << sim::FormatComparisonText(runs);
    }
    return RejectionsExit(runs.front().report);
  }

  static int WriteFile(const std::string& path, const std::string& text) {
    std::ofstream out(path);
    out << text;
    if (!out) {
      std::cerr << "error: " << path << ": cannot write\n";
      return kExitBadInput;
    }
    return kExitOk;
  }

  // The workload's warnings and the nodes' GPU facts that were clamped or disagree (the scheduler
  // logs the latter itself, so they are on stderr once).
  static std::vector<std::string> ReportWarnings(const sim::Workload& workload) {
    std::vector<std::string> out = workload.warnings;
    for (std::string& w : sim::NodeGpuWarnings(workload)) out.push_back(std::move(w));
    return out;
  }

  // Everything valid was simulated and reported; refused objects still fail the run, so that a
  // pipeline notices.
  static int RejectionsExit(const sim::Report& report) {
    const size_t refused = report.rejected.size() + static_cast<size_t>(report.stats.rejected);
    if (refused == 0) return kExitOk;
    std::cerr << "error: " << refused << " object(s) rejected and not simulated:\n";
    for (const sim::Rejection& r : report.rejected) std::cerr << "  " << r.ToString() << "\n";
    for (const sim::PlacementRow& p : report.placements) {
      if (p.state == "Rejected") std::cerr << "  pod " << p.pod << ": " << p.message << "\n";
    }
    return kExitBadInput;
  }

  int RunFgd(const config::SchedulerConfig& config, sim::Simulator::Deps deps,
             const sim::Workload& workload, const std::string& source) {
    sim::trace::FgdOptions opts;
    opts.seed = seed_;
    opts.inflation = inflation_;
    opts.check_invariants = check_invariants_;
    auto run = sim::trace::RunFgdProtocol(workload, config, deps, opts);
    if (!run.ok()) return BadInput(run.status());
    if (!curve_csv_.empty()) {
      if (int rc = WriteFile(curve_csv_, sim::trace::FgdCurveCsv(run->result)); rc != kExitOk) {
        return rc;
      }
    }
    sim::Report report =
        sim::BuildReport(*run->sim, source, ReportWarnings(workload), workload.rejected);
    if (output_ == "csv") {
      std::cout << sim::FormatPlacementsCsv(report);
    } else if (output_ == "html") {
      std::cout << sim::FormatReportHtml(report, nullptr);
    } else if (output_ == "json") {
      boost::json::object o;
      o["fgd"] = sim::trace::FgdToJson(run->result);
      o["report"] = sim::ReportToJson(report);
      std::cout << sim::FormatJson(o);
    } else {
      std::cout << sim::trace::FgdSummaryText(run->result) << "\n";
      std::cout << sim::FormatReportText(report, 10, 10);
    }
    return RejectionsExit(report);
  }

  CLI::App& app_;
  std::vector<std::string> files_;
  bool recursive_ = false;
  std::string trace_nodes_;
  std::string trace_pods_;
  std::string config_file_;
  std::string policy_;
  uint64_t seed_ = 42;
  std::string protocol_;
  double inflation_ = 1.3;
  std::string output_ = "text";
  std::string curve_csv_;
  bool check_invariants_ = false;
  bool print_example_ = false;
  std::string example_;
  bool replay_ = false;
  double load_ = 0;
  std::string load_window_ = "24h";
  std::vector<std::string> movable_qos_;
  std::vector<std::string> compare_;
  bool from_cluster_ = false;
  std::string kubeconfig_;
  int sync_timeout_s_ = 30;
};

}  // namespace

std::unique_ptr<Command> NewSimulateCommand(CLI::App& root) {
  return std::make_unique<SimulateCommand>(root);
}

}  // namespace gpusched::cmd
