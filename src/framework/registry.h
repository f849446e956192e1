// SPDX-License-Identifier: Apache-2.0
// Registry: plugin name -> factory. The only list of built-in plugins is
// src/plugins/in_tree_registry.cc; out-of-tree plugins are added by cmd/ with Register().
// A factory validates its args before building anything and names the bad field in its error.
#pragma once

#include <boost/json/fwd.hpp>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "src/common/status.h"
#include "src/framework/handle.h"
#include "src/framework/plugin.h"

namespace gpusched::framework {

using PluginPtr = std::unique_ptr<Plugin>;
// `args` is the pluginConfig args object for the plugin (an empty object when none was given).
using PluginFactory =
    std::function<common::StatusOr<PluginPtr>(const boost::json::value& args, Handle& handle)>;

class Registry {
 public:
  // AlreadyExists if the name is taken.
  common::Status Register(std::string name, PluginFactory factory);
  // Makes `alias` another name of the registered plugin `canonical` (e.g. the seed's
  // "GPUTopologyPlugin" for "GpuFit"): a profile naming both gets one instance.
  common::Status RegisterAlias(std::string alias, std::string canonical);
  // Follows aliases. nullptr when unknown.
  const PluginFactory* Find(std::string_view name) const;
  // The registered name behind `name` (itself when not an alias).
  std::string_view Canonical(std::string_view name) const;
  std::vector<std::string> Names() const;

 private:
  std::map<std::string, PluginFactory, std::less<>> factories_;
  std::map<std::string, std::string, std::less<>> aliases_;
};

}  // namespace gpusched::framework
