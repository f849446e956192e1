// SPDX-License-Identifier: Apache-2.0
// A profile's plugin names checked against a registry without creating any plugin, so that a
// command reports a config file's typo with the file's name before it builds a scheduler (issue
// #40). Framework::Create runs it first: one check of the names for every mode.
#pragma once

#include <string_view>

#include "src/common/status.h"
#include "src/config/config.h"
#include "src/framework/registry.h"

namespace gpusched::framework::runtime {

// InvalidArgument `<path>: unknown plugin "<name>"`, with ` (did you mean "<closest>"?)` when a
// registered name is close (common::ClosestName).
common::Status UnknownPluginError(const Registry& registry, std::string_view path,
                                  std::string_view name);

// The first name the profile writes that `registry` does not know (every point's enabled list,
// multiPoint's included, then pluginConfig), as UnknownPluginError prefixed with the profile's
// file (Profile::source) when it has one; OK when all are known.
// Disabled names are not checked: disabling a plugin that does not exist changes nothing.
common::Status CheckPluginNames(const config::Profile& profile, const Registry& registry);

}  // namespace gpusched::framework::runtime
