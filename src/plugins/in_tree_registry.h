// SPDX-License-Identifier: Apache-2.0
// The only list of built-in plugins. cmd/ (and tests that need the full set) call
// RegisterInTreePlugins once on an empty Registry, then add out-of-tree plugins.
#pragma once

#include "src/common/status.h"
#include "src/framework/registry.h"

namespace gpusched::plugins {

// Adds every in-tree plugin by its name in names.h, and "GPUTopologyPlugin" as an alias of
// GpuFit. AlreadyExists if a name is already registered. What a plugin reads beyond the snapshot
// comes from the Handle its factory gets (e.g. NetworkLocality's Handle::network()).
common::Status RegisterInTreePlugins(framework::Registry& registry);

// A registry of the in-tree plugins alone, built on first use (thread-safe) and kept for the
// process: for callers that add no out-of-tree plugin (tests, benchmarks).
const framework::Registry& InTreeRegistry();

}  // namespace gpusched::plugins
