// SPDX-License-Identifier: Apache-2.0
// gpusched: one binary, one subcommand per file (simulate.cc, version.cc, ...). main owns the
// global flags (klog-style verbosity, log format), parses argv, initialises logging and runs the
// chosen subcommand. It holds the program's one last-resort catch.
//
// Installed (or linked) as `kubectl-gpusched` on PATH, the same binary is a kubectl plugin:
// `kubectl gpusched explain|simulate|plan ...` runs `kubectl-gpusched explain ...`, and `plan` is
// `deletion-cost plan` (the kubectl verb for "which pods would a scale-down remove").
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <exception>
#include <iostream>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cmd/gpusched/commands.h"
#include "src/common/logging.h"

namespace {

// True when argv[0] names the kubectl plugin (kubectl runs "kubectl-gpusched" from PATH).
bool InvokedAsKubectlPlugin(const char* argv0) {
  std::string_view name(argv0 == nullptr ? "" : argv0);
  if (auto slash = name.rfind('/'); slash != std::string_view::npos) name.remove_prefix(slash + 1);
  return name == "kubectl-gpusched";
}

// argv as the parser sees it: for the plugin, `plan ...` is `deletion-cost plan ...`.
std::vector<std::string> Arguments(int argc, char** argv, bool plugin) {
  std::vector<std::string> args(argv, argv + argc);
  if (plugin && args.size() > 1 && args[1] == "plan")
    args.insert(args.begin() + 1, "deletion-cost");
  return args;
}

}  // namespace

namespace gpusched::cmd {

void LogOnlyErrorsUnlessVerbose() {
  if (!common::V(1)) spdlog::set_level(spdlog::level::err);
}

}  // namespace gpusched::cmd

int main(int argc, char** argv) {
  using namespace gpusched;
  try {
    const bool plugin = argc > 0 && InvokedAsKubectlPlugin(argv[0]);
    CLI::App app("gpusched: a GPU-aware Kubernetes scheduler, its extender and its simulator",
                 plugin ? "kubectl gpusched" : "gpusched");
    app.set_version_flag("--version", cmd::VersionLine());
    app.require_subcommand(1);
    app.fallthrough();  // global flags may follow the subcommand
    int verbosity = 0;
    std::string log_format = "text";
    app.add_option("-v,--v", verbosity,
                   "Log verbosity (kube-scheduler levels: 2 decisions, 4 plugins)")
        ->check(CLI::Range(0, 10));
    app.add_option("--logging-format", log_format, "Log format")
        ->check(CLI::IsMember({"text", "json"}));

    std::vector<std::unique_ptr<cmd::Command>> commands;
    commands.push_back(cmd::NewSchedulerCommand(app));
    commands.push_back(cmd::NewSimulateCommand(app));
    commands.push_back(cmd::NewVersionCommand(app));
    commands.push_back(cmd::NewDeletionCostCommand(app));
    commands.push_back(cmd::NewHpaCommand(app));
    commands.push_back(cmd::NewExtenderCommand(app));
    commands.push_back(cmd::NewExplainCommand(app));
    commands.push_back(cmd::NewConsolidateCommand(app));

    const std::vector<std::string> args = Arguments(argc, argv, plugin);
    std::vector<const char*> cargs;
    for (const auto& a : args) cargs.push_back(a.c_str());
    try {
      app.parse(static_cast<int>(cargs.size()), cargs.data());
    } catch (const CLI::CallForVersion& e) {
      return app.exit(e);
    } catch (const CLI::CallForHelp& e) {
      return app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
      return app.exit(e);
    } catch (const CLI::ParseError& e) {
      app.exit(e);  // prints the message
      return cmd::kExitUsage;
    }
    auto format = common::ParseLogFormat(log_format);
    if (!format.ok()) {
      std::cerr << "error: " << format.status().message() << "\n";
      return cmd::kExitUsage;
    }
    common::InitLogging(*format, verbosity);
    for (auto& c : commands) {
      if (c->app().parsed()) return c->Run();
    }
    std::cerr << "error: no subcommand given; see gpusched --help\n";
    return cmd::kExitUsage;
  } catch (const std::exception& e) {
    std::cerr << "gpusched: internal error: " << e.what() << "\n";
    return 3;
  } catch (...) {
    std::cerr << "gpusched: internal error: unknown exception\n";
    return 3;
  }
}
