// SPDX-License-Identifier: Apache-2.0
// Test helpers for the simulator's tests: manifests decoded as one -f file would be, and the
// default profile's Simulator, with the invariants checked after every placement, run over them.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>

#include "src/common/clock.h"
#include "src/framework/registry.h"
#include "src/sim/controllers.h"
#include "src/sim/simulator.h"
#include "src/sim/workload.h"

namespace gpusched::sim {

// Decodes `yaml` as the file `file`, then expands the workload objects.
inline Workload LoadForTest(const std::string& yaml, const std::string& file = "in.yaml") {
  Workload w;
  common::Status s = AppendManifests(yaml, file, w);
  EXPECT_TRUE(s.ok()) << s.ToString();
  ExpandControllers(w);
  return w;
}

// Runs `w` (the plain protocol) on the default profile with `registry`'s plugins (the tests pass
// plugins::InTreeRegistry()); nullptr (and a test failure) on error.
inline std::unique_ptr<Simulator> SimulateForTest(const Workload& w,
                                                  const framework::Registry& registry) {
  static const common::FakeClock wall;
  SimOptions opts;
  opts.check_invariants = true;
  auto sim = Simulator::Create(SimulationDefaultConfig(), {registry, wall}, opts);
  EXPECT_TRUE(sim.ok()) << sim.status().ToString();
  if (!sim.ok()) return nullptr;
  common::Status s = (*sim)->Run(w);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return std::move(*sim);
}

}  // namespace gpusched::sim
