// SPDX-License-Identifier: Apache-2.0
// Test helpers for a Scheduler fed by a SimCluster (the scheduler's gang, preemption and property
// tests): run it until nothing is ready, and read where a pod is.
#pragma once

#include <chrono>
#include <string>

#include "src/common/clock.h"
#include "src/scheduler/scheduler.h"
#include "src/sim/sim_cluster.h"

namespace gpusched::sim {

// Schedules until nothing is ready, then lets the backoff pass and ticks; `rounds` times.
inline void Settle(scheduler::Scheduler& sched, common::FakeClock& clock, int rounds) {
  for (int round = 0; round < rounds; ++round) {
    while (sched.ScheduleOne()) {
    }
    clock.Advance(std::chrono::seconds(11));
    sched.Tick();
  }
}

// The pod's node now: "" while pending, "<deleted>" once gone.
inline std::string NodeOrDeleted(const SimCluster& cluster, const api::PodPtr& pod) {
  api::PodPtr now = cluster.GetPod(pod->meta.uid);
  return now == nullptr ? "<deleted>" : now->node_name;
}

}  // namespace gpusched::sim
