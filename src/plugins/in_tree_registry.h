// SPDX-License-Identifier: Apache-2.0
// The only list of built-in plugins. cmd/ (and tests that need the full set) call
// RegisterInTreePlugins once on an empty Registry, then add out-of-tree plugins.
#pragma once

#include "src/common/status.h"
#include "src/framework/registry.h"
#include "src/network/store.h"

namespace gpusched::plugins {

// Adds every in-tree plugin by its name in names.h, and "GPUTopologyPlugin" as an alias of
// GpuFit. AlreadyExists if a name is already registered.
common::Status RegisterInTreePlugins(framework::Registry& registry);

// What some in-tree plugins read beyond the snapshot, owned by cmd/ (or a test). Null members
// mean "none": e.g. NetworkLocality then knows no AppGroup/NetworkTopology and uses annotations.
struct InTreeDeps {
  const network::NetworkStore* network_store = nullptr;  // borrowed; outlives the registry
};
common::Status RegisterInTreePlugins(framework::Registry& registry, const InTreeDeps& deps);

}  // namespace gpusched::plugins
