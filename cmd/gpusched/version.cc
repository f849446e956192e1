// SPDX-License-Identifier: Apache-2.0
// gpusched version: prints the version the binary was built from.
#include <CLI/CLI.hpp>
#include <iostream>
#include <string>

#include "cmd/gpusched/commands.h"

#ifndef GPUSCHED_VERSION
#define GPUSCHED_VERSION "0.0.0-unknown"
#endif

namespace gpusched::cmd {
namespace {

class VersionCommand final : public Command {
 public:
  explicit VersionCommand(CLI::App& root)
      : app_(*root.add_subcommand("version", "Print the gpusched version")) {
    app_.add_option("-o,--output", output_, "Output format")
        ->check(CLI::IsMember({"text", "json"}));
  }
  CLI::App& app() override { return app_; }
  int Run() override {
    if (output_ == "json") {
      std::cout << "{\"gitVersion\": \"v" GPUSCHED_VERSION "\", \"compiler\": \"" __VERSION__
                   "\", \"cplusplus\": "
                << __cplusplus << "}\n";
    } else {
      std::cout << "gpusched v" GPUSCHED_VERSION " (C++ " << __cplusplus << ", " __VERSION__ ")\n";
    }
    return kExitOk;
  }

 private:
  CLI::App& app_;
  std::string output_ = "text";
};

}  // namespace

std::unique_ptr<Command> NewVersionCommand(CLI::App& root) {
  return std::make_unique<VersionCommand>(root);
}

}  // namespace gpusched::cmd
