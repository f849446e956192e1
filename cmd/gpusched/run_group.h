// SPDX-License-Identifier: Apache-2.0
// RunGroup: the long-running parts of a command (informers, watches, refreshers, leader election,
// the scheduling loop), started in the order they were added and stopped in the reverse order, so
// that nothing is stopped while something started after it still uses it.
// PeriodicThread: a thread that runs a function now and then every interval until stopped.
//
// Threading: a RunGroup is driven by one thread (Start, then Stop). PeriodicThread::Stop may be
// called from any thread; it joins.
#pragma once

#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "cmd/gpusched/wiring.h"
#include "src/common/clock.h"

namespace gpusched::cmd {

class RunGroup {
 public:
  // `stop` runs only if `start` ran. Either may be empty.
  void Add(std::string name, std::function<void()> start, std::function<void()> stop);
  // Starts every member not yet started, in order.
  void Start();
  // Stops the started members in reverse order (idempotent).
  void Stop();
  ~RunGroup() { Stop(); }

 private:
  struct Member {
    std::string name;
    std::function<void()> start;
    std::function<void()> stop;
    bool started = false;
  };
  std::vector<Member> members_;
};

class PeriodicThread {
 public:
  // Runs `fn` at once and then every `interval` on a new thread.
  void Start(std::function<void()> fn, common::Duration interval);
  void Stop();
  ~PeriodicThread() { Stop(); }

 private:
  Stopper stop_;
  std::thread thread_;
};

}  // namespace gpusched::cmd
