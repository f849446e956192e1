// SPDX-License-Identifier: Apache-2.0
#include "src/framework/runtime/plugin_names.h"

#include <string>
#include <vector>

#include "src/common/strings.h"

namespace gpusched::framework::runtime {

common::Status UnknownPluginError(const Registry& registry, std::string_view path,
                                  std::string_view name) {
  const std::vector<std::string> names = registry.Names();
  const std::vector<std::string_view> known(names.begin(), names.end());
  const std::string near = common::ClosestName(name, known);
  return common::InvalidArgumentError(
      std::string(path) + ": unknown plugin " + common::Quote(name) +
      (near.empty() ? "" : " (did you mean " + common::Quote(near) + "?)"));
}

namespace {

// CheckPluginNames without the file's name.
common::Status CheckNamesIn(const config::Profile& profile, const Registry& registry) {
  for (int pi = 0; pi < static_cast<int>(config::Point::kCount); ++pi) {
    const auto point = static_cast<config::Point>(pi);
    const std::vector<config::PluginRef>& refs = profile.plugins.at(point).enabled;
    for (size_t k = 0; k < refs.size(); ++k) {
      const config::PluginRef& ref = refs[k];
      if (ref.name == "*" || registry.Find(registry.Canonical(ref.name)) != nullptr) continue;
      const std::string path = ref.path.empty() ? profile.path + ".plugins." +
                                                      std::string(config::PointName(point)) +
                                                      ".enabled[" + std::to_string(k) + "]"
                                                : ref.path;
      return UnknownPluginError(registry, path, ref.name);
    }
  }
  for (const config::PluginConfig& pc : profile.plugin_config) {
    if (registry.Find(pc.name) == nullptr) {
      return UnknownPluginError(registry, pc.path + ".name", pc.name);
    }
  }
  return common::Status::Ok();
}

}  // namespace

common::Status CheckPluginNames(const config::Profile& profile, const Registry& registry) {
  common::Status s = CheckNamesIn(profile, registry);
  return s.ok() || profile.source.empty() ? s : s.WithContext(profile.source);
}

}  // namespace gpusched::framework::runtime
