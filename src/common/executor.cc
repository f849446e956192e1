// SPDX-License-Identifier: Apache-2.0
#include "src/common/executor.h"

namespace gpusched::common {

ThreadPoolExecutor::ThreadPoolExecutor(int threads) {
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Worker(); });
}

ThreadPoolExecutor::~ThreadPoolExecutor() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void ThreadPoolExecutor::Post(std::function<void()> task) {
  {
    MutexLock lock(mu_);
    tasks_.push_back(std::move(task));
  }
  cv_.notify_one();
}

void ThreadPoolExecutor::Drain() {
  MutexLock lock(mu_);
  lock.Wait(idle_cv_, [this]() GPUSCHED_REQUIRES(mu_) { return tasks_.empty() && running_ == 0; });
}

void ThreadPoolExecutor::Worker() {
  for (;;) {
    std::function<void()> task;
    {
      MutexLock lock(mu_);
      lock.Wait(cv_, [this]() GPUSCHED_REQUIRES(mu_) { return stopping_ || !tasks_.empty(); });
      if (tasks_.empty()) return;  // stopping and drained
      task = std::move(tasks_.front());
      tasks_.pop_front();
      ++running_;
    }
    task();
    {
      MutexLock lock(mu_);
      --running_;
    }
    idle_cv_.notify_all();
  }
}

}  // namespace gpusched::common
