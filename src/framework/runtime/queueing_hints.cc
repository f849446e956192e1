// SPDX-License-Identifier: Apache-2.0
// Framework::CollectQueueingHints: each rejecting plugin's EventsToRegister, once per profile.
#include <algorithm>

#include "src/framework/runtime/framework.h"

namespace gpusched::framework::runtime {

namespace {

void AddPluginEvents(Plugin* plugin, ProfileHints& out) {
  const std::string_view name = plugin->Name();
  if (std::any_of(out.begin(), out.end(), [&](const PluginEvents& p) { return p.plugin == name; }))
    return;
  PluginEvents entry{std::string(name), {}};
  if (const auto* ext = dynamic_cast<const EnqueueExtensions*>(plugin)) {
    entry.events = ext->EventsToRegister();
  } else {
    entry.events.push_back(EveryEvent());  // upstream's default for plugins without hints
  }
  out.push_back(std::move(entry));
}

}  // namespace

void Framework::CollectQueueingHints() {
  queueing_hints_.clear();
  for (auto* p : pre_filter_) AddPluginEvents(p, queueing_hints_);
  for (auto* p : filter_) AddPluginEvents(p, queueing_hints_);
  for (auto* p : reserve_) AddPluginEvents(p, queueing_hints_);
  for (auto* p : permit_) AddPluginEvents(p, queueing_hints_);
}

}  // namespace gpusched::framework::runtime
