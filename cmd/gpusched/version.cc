// SPDX-License-Identifier: Apache-2.0
// gpusched version (and gpusched --version): the git version and build facts of the binary, in
// the fields kube's `version -o json` uses.
#include <CLI/CLI.hpp>
#include <boost/json.hpp>
#include <iostream>
#include <string>

#include "cmd/gpusched/build_info.h"
#include "cmd/gpusched/commands.h"

namespace gpusched::cmd {
namespace {

class VersionCommand final : public Command {
 public:
  explicit VersionCommand(CLI::App& root)
      : app_(*root.add_subcommand("version", "Print the gpusched version and build information")) {
    app_.add_option("-o,--output", output_, "Output format")
        ->check(CLI::IsMember({"text", "json", "short"}))
        ->capture_default_str();
  }
  CLI::App& app() override { return app_; }
  int Run() override {
    const BuildInfo& b = GetBuildInfo();
    if (output_ == "short") {
      std::cout << b.git_version << "\n";
    } else if (output_ == "json") {
      boost::json::object o;
      o["gitVersion"] = b.git_version;
      o["gitCommit"] = b.git_commit;
      o["gitTreeState"] = b.git_tree_state;
      o["buildDate"] = b.build_date;
      o["compiler"] = b.compiler;
      o["platform"] = b.platform;
      o["buildType"] = b.build_type;
      o["cplusplus"] = static_cast<std::int64_t>(__cplusplus);
      std::cout << boost::json::serialize(o) << "\n";
    } else {
      std::cout << VersionLine() << "\n"
                << "  gitCommit:    " << b.git_commit << "\n"
                << "  gitTreeState: " << b.git_tree_state << "\n"
                << "  buildDate:    " << b.build_date << "\n"
                << "  compiler:     " << b.compiler << " (C++ " << __cplusplus << ")\n"
                << "  platform:     " << b.platform << "\n"
                << "  buildType:    " << b.build_type << "\n";
    }
    return kExitOk;
  }

 private:
  CLI::App& app_;
  std::string output_ = "text";
};

}  // namespace

std::string VersionLine() { return "gpusched " + std::string(GetBuildInfo().git_version); }

std::unique_ptr<Command> NewVersionCommand(CLI::App& root) {
  return std::make_unique<VersionCommand>(root);
}

}  // namespace gpusched::cmd
