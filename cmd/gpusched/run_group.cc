// SPDX-License-Identifier: Apache-2.0
#include "cmd/gpusched/run_group.h"

#include <spdlog/spdlog.h>

#include <utility>

namespace gpusched::cmd {

void RunGroup::Add(std::string name, std::function<void()> start, std::function<void()> stop) {
  members_.push_back(Member{std::move(name), std::move(start), std::move(stop)});
}

void RunGroup::Start() {
  for (Member& m : members_) {
    if (m.started) continue;
    spdlog::debug("starting {}", m.name);
    if (m.start) m.start();
    m.started = true;
  }
}

void RunGroup::Stop() {
  for (auto it = members_.rbegin(); it != members_.rend(); ++it) {
    if (!it->started) continue;
    spdlog::debug("stopping {}", it->name);
    it->started = false;
    if (it->stop) it->stop();
  }
}

void PeriodicThread::Start(std::function<void()> fn, common::Duration interval) {
  thread_ = std::thread([this, fn = std::move(fn), interval] {
    do {
      fn();
    } while (!stop_.Wait(interval));
  });
}

void PeriodicThread::Stop() {
  stop_.Stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace gpusched::cmd
