// SPDX-License-Identifier: Apache-2.0
// gpusched consolidate --dry-run: the moves that would make room for the largest GPU pods now,
// for a platform team to review before opting pods in to the Consolidation plugin (issue #41).
// Nothing is written anywhere: the cluster (live, read once through the scheduler's own
// informers, or manifests) is loaded into the simulator and the plugin plans there
// (src/sim/consolidation_dry_run.h says how).
//
//   gpusched consolidate --dry-run [--kubeconfig FILE]      a live cluster (read-only)
//   gpusched consolidate --dry-run -f manifests.yaml ...   simulator input, as `simulate -f`
//   [--config FILE] [--max-moves N] [-o text|json] [--seed N] [--sync-timeout S]
//
// The movable policy and maxMovesPerPod are the config's (default: the default profile's
// Consolidation args: pods opted in with gpusched.io/movable: "true"); --max-moves is the budget.
//
// Exit codes: 0 planned (whether or not a move makes room), 1 bad input (a file or the config,
// the cluster's API, a profile without Consolidation; objects that do not decode are listed and
// the rest is planned, then 1), 2 usage (no --dry-run: the scheduler makes the moves itself).
#include <CLI/CLI.hpp>
#include <boost/json.hpp>
#include <cstdint>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cmd/gpusched/cluster_snapshot.h"
#include "cmd/gpusched/commands.h"
#include "cmd/gpusched/wiring.h"
#include "src/common/clock.h"
#include "src/config/config.h"
#include "src/framework/registry.h"
#include "src/plugins/in_tree_registry.h"
#include "src/sim/consolidation_dry_run.h"
#include "src/sim/report.h"
#include "src/sim/simulator.h"

namespace gpusched::cmd {
namespace {

class ConsolidateCommand final : public Command {
 public:
  explicit ConsolidateCommand(CLI::App& root)
      : app_(*root.add_subcommand(
            "consolidate",
            "Show the pod moves that would make room for the largest GPU pods now (--dry-run)")) {
    app_.add_flag("--dry-run", dry_run_,
                  "Plan only (required: the Consolidation plugin makes the moves in the "
                  "scheduler)");
    in_.AddTo(app_,
              "Manifests instead of a live cluster: YAML/JSON Nodes, Pods and workload objects "
              "(repeatable; a file, a directory or - for standard input)");
    app_.add_option("--config", config_file_,
                    "KubeSchedulerConfiguration file: its first profile's Consolidation args say "
                    "which pods are movable (default: the default profile)");
    app_.add_option("--max-moves", max_moves_, "The most pods to move")
        ->check(CLI::Range(1, 10000))
        ->capture_default_str();
  }

  CLI::App& app() override { return app_; }

  int Run() override {
    if (!dry_run_) {
      return Usage(
          "consolidate runs only with --dry-run: the Consolidation plugin makes the moves in the "
          "scheduler (docs/consolidation.md)");
    }
    if (std::string conflict = in_.Conflict(); !conflict.empty()) return Usage(conflict);
    auto config = config_file_.empty()
                      ? common::StatusOr<config::SchedulerConfig>(sim::SimulationDefaultConfig())
                      : LoadSchedulerConfig(config_file_);
    if (!config.ok()) return BadInput(config.status());
    if (common::Status s = plugins::RegisterInTreePlugins(registry_); !s.ok()) return BadInput(s);

    std::string source;
    sim::Workload w;
    if (in_.files.empty()) {
      auto snap = SnapshotCluster(in_.kubeconfig, *config, in_.sync_timeout_s);
      if (!snap.ok()) return BadInput(snap.status());
      w = std::move(snap->workload);
      source = snap->description;
    } else if (common::Status s = AppendInputFiles(in_.files, in_.recursive, w, source); !s.ok()) {
      return BadInput(s);
    }
    for (const auto& warning : w.warnings) std::cerr << "warning: " << warning << "\n";
    for (const auto& warning : sim::NodeGpuWarnings(w)) std::cerr << "warning: " << warning << "\n";
    LogOnlyErrorsUnlessVerbose();

    common::SystemClock wall;
    sim::SimOptions opts;
    opts.seed = in_.seed;
    auto sim = sim::Simulator::Create(sim::DryRunConfig(*config, max_moves_),
                                      sim::Simulator::Deps{registry_, wall}, opts);
    if (!sim.ok()) return BadInput(sim.status());
    if (common::Status s = (*sim)->Run(w); !s.ok()) return BadInput(s);
    auto result = sim::PlanConsolidationMoves(**sim, max_moves_);
    if (!result.ok()) return BadInput(result.status());
    if (in_.output == "json") {
      boost::json::value json = sim::DryRunJson(*result);
      json.as_object()["cluster"] = source;
      std::cout << sim::FormatJson(json);
    } else {
      std::cout << "Cluster: " << source << "\n" << sim::FormatDryRunText(*result);
    }
    if (w.rejected.empty()) return kExitOk;
    std::cerr << "error: " << w.rejected.size() << " object(s) rejected and not planned with:\n";
    for (const sim::Rejection& r : w.rejected) std::cerr << "  " << r.ToString() << "\n";
    return kExitBadInput;
  }

 private:
  static int Usage(const std::string& message) {
    std::cerr << "error: " << message << "\nRun with --help for more information.\n";
    return kExitUsage;
  }
  static int BadInput(const common::Status& s) {
    std::cerr << "error: " << s.message() << "\n";
    return kExitBadInput;
  }

  CLI::App& app_;
  bool dry_run_ = false;
  ReadOnlyInputFlags in_;
  std::string config_file_;
  int32_t max_moves_ = 10;
  framework::Registry registry_;
};

}  // namespace

std::unique_ptr<Command> NewConsolidateCommand(CLI::App& root) {
  return std::make_unique<ConsolidateCommand>(root);
}

}  // namespace gpusched::cmd
