// SPDX-License-Identifier: Apache-2.0
// The subcommands of the gpusched binary. Each lives in its own file and registers itself on the
// root CLI::App; main parses, initialises logging, then runs the one that was chosen. Only cmd/
// reads argv or the environment and creates real clocks.
//
// Exit codes (every subcommand): 0 success, 1 bad input (a file or field is wrong; the message
// names it), 2 usage error (unknown flag, conflicting flags).
#pragma once

#include <memory>
#include <string>

namespace CLI {
class App;
}

namespace gpusched::cmd {

inline constexpr int kExitOk = 0;
inline constexpr int kExitBadInput = 1;
inline constexpr int kExitUsage = 2;

class Command {
 public:
  virtual ~Command() = default;
  // The subcommand's parser (owned by the root app).
  virtual CLI::App& app() = 0;
  // Runs after a successful parse; returns the exit code.
  virtual int Run() = 0;
};

std::unique_ptr<Command> NewSchedulerCommand(CLI::App& root);
std::unique_ptr<Command> NewSimulateCommand(CLI::App& root);
std::unique_ptr<Command> NewVersionCommand(CLI::App& root);
std::unique_ptr<Command> NewDeletionCostCommand(CLI::App& root);
std::unique_ptr<Command> NewHpaCommand(CLI::App& root);
std::unique_ptr<Command> NewExtenderCommand(CLI::App& root);
std::unique_ptr<Command> NewExplainCommand(CLI::App& root);
std::unique_ptr<Command> NewConsolidateCommand(CLI::App& root);

// For the commands whose output is a report (simulate, explain -f, consolidate --dry-run): the
// embedded scheduler's log lines (a node's GPU facts, a plugin's notes) reach stderr only with
// -v 1 or more, so that a warning is printed once, by the report (main.cc).
void LogOnlyErrorsUnlessVerbose();

// "gpusched <gitVersion>": the line `gpusched --version` prints (version.cc).
std::string VersionLine();

}  // namespace gpusched::cmd
