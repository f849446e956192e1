// SPDX-License-Identifier: Apache-2.0
// Executor: where asynchronous work (the binding cycle, background refreshes) runs. Production uses
// a ThreadPoolExecutor built in cmd/; tests and the simulator use InlineExecutor so that binds and
// the events they cause are ordered deterministically.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "src/common/mutex.h"

namespace gpusched::common {

class Executor {
 public:
  virtual ~Executor() = default;
  // Runs `task` at some later point (or now, for InlineExecutor). Thread-safe.
  virtual void Post(std::function<void()> task) = 0;
};

class InlineExecutor final : public Executor {
 public:
  void Post(std::function<void()> task) override { task(); }
};

// A fixed pool of threads. The destructor runs every task already posted, then joins.
class ThreadPoolExecutor final : public Executor {
 public:
  explicit ThreadPoolExecutor(int threads);
  ~ThreadPoolExecutor() override;
  void Post(std::function<void()> task) override;
  // Blocks until every task posted so far has finished.
  void Drain();

 private:
  void Worker();
  Mutex mu_;
  std::condition_variable_any cv_;
  std::condition_variable_any idle_cv_;
  std::deque<std::function<void()>> tasks_ GPUSCHED_GUARDED_BY(mu_);
  int running_ GPUSCHED_GUARDED_BY(mu_) = 0;
  bool stopping_ GPUSCHED_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace gpusched::common
