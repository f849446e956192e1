// SPDX-License-Identifier: Apache-2.0
// What the binary was built from, as `gpusched version` prints it (kube's version.Info fields).
// The definition is generated at build time by cmake/build_info.cmake.
#pragma once

#include <string_view>

namespace gpusched::cmd {

struct BuildInfo {
  std::string_view git_version;     // "v0.1.0", "v0.1.0-3-gabc", or "v0.1.0-dev+gabcdef123456"
  std::string_view git_commit;      // full commit hash, or "unknown" outside a git checkout
  std::string_view git_tree_state;  // "clean", "dirty" (tracked files changed) or "unknown"
  std::string_view build_date;      // the commit's date (ISO 8601), so builds are reproducible
  std::string_view compiler;        // e.g. "GNU 12.2.0"
  std::string_view platform;        // e.g. "linux/amd64"
  std::string_view build_type;      // CMAKE_BUILD_TYPE, e.g. "Release"
};

const BuildInfo& GetBuildInfo();

}  // namespace gpusched::cmd
