// SPDX-License-Identifier: Apache-2.0
// gpusched-bench's churn phase (--unschedulable U): U pods that no node can take now wait in the
// unschedulable pool while the cluster churns, to measure what the queueing hints save. See
// churn.cc for the pod kinds and the event mix.
#pragma once

#include <cstdint>

#include "src/sim/simulator.h"

namespace gpusched::bench {

struct ChurnFlags {
  int32_t unschedulable = 0;    // U waiting pods
  int32_t events = 20;          // cluster events per simulated second
  int32_t seconds = 60;         // simulated seconds of churn
  int32_t relevant_every = 10;  // a CPU node added and a zone relabel every this many seconds,
                                // an H100 node half-way between
  bool hints = true;            // --hints off: every event moves every waiting pod
  uint64_t seed = 42;
};

// Submits the waiting pods, then churns for `seconds` simulated seconds and prints the scheduling
// attempts, pods bound, attempts per bound pod, attempts per wall second and CPU time of the
// churn. Returns a process exit code.
int RunChurn(const ChurnFlags& f, sim::Simulator& s);

}  // namespace gpusched::bench
