// SPDX-License-Identifier: Apache-2.0
// Mutex and MutexLock: std::mutex with thread-safety annotations, so Clang checks GUARDED_BY.
#pragma once

#include <condition_variable>
#include <mutex>

#include "src/common/thread_annotations.h"

namespace gpusched::common {

class GPUSCHED_CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;
  void Lock() GPUSCHED_ACQUIRE() { mu_.lock(); }
  void Unlock() GPUSCHED_RELEASE() { mu_.unlock(); }
  std::mutex& native() { return mu_; }

 private:
  std::mutex mu_;
};

class GPUSCHED_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) GPUSCHED_ACQUIRE(mu) : mu_(mu) { mu_.Lock(); }
  ~MutexLock() GPUSCHED_RELEASE() { mu_.Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex& mu_;
};

}  // namespace gpusched::common
