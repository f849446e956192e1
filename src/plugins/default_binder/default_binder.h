// SPDX-License-Identifier: Apache-2.0
// DefaultBinder: binds the pod through Handle::BindPod (pods/binding, after writing the
// allocation's annotations), as kube-scheduler's defaultbinder. A failed bind is kError with the
// API error's message: the scheduler forgets the assumed pod and retries it after backoff.
// No args. Bind runs in the binding cycle on the executor; it keeps no state.
#pragma once

#include <boost/json/fwd.hpp>
#include <string_view>

#include "src/api/types.h"
#include "src/common/status.h"
#include "src/framework/handle.h"
#include "src/framework/plugin.h"
#include "src/framework/registry.h"

namespace gpusched::plugins::default_binder {

class DefaultBinder final : public framework::BindPlugin {
 public:
  static common::StatusOr<framework::PluginPtr> Create(const boost::json::value& args,
                                                       framework::Handle& handle);
  explicit DefaultBinder(framework::Handle& handle) : handle_(handle) {}

  std::string_view Name() const override;
  framework::Status Bind(framework::CycleState& state, const api::Pod& pod,
                         std::string_view node) override;

 private:
  framework::Handle& handle_;
};

}  // namespace gpusched::plugins::default_binder
