// SPDX-License-Identifier: Apache-2.0
#include "src/plugins/default_binder/default_binder.h"

#include <memory>
#include <string>

#include "src/plugins/helper/args.h"
#include "src/plugins/names.h"

namespace gpusched::plugins::default_binder {

common::StatusOr<framework::PluginPtr> DefaultBinder::Create(const boost::json::value& args,
                                                             framework::Handle& handle) {
  GPUSCHED_RETURN_IF_ERROR(helper::ReadNoArgs(args));
  return framework::PluginPtr(std::make_unique<DefaultBinder>(handle));
}

std::string_view DefaultBinder::Name() const { return names::kDefaultBinder; }

framework::Status DefaultBinder::Bind(framework::CycleState& state, const api::Pod& pod,
                                      std::string_view node) {
  common::Status s = handle_.BindPod(pod, node, state.allocation());
  if (!s.ok()) return framework::Status::Error(std::string(s.message()));
  return framework::Status::Success();
}

}  // namespace gpusched::plugins::default_binder
