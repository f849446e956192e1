// SPDX-License-Identifier: Apache-2.0
// Mutex and MutexLock: std::mutex with thread-safety annotations, so Clang checks GUARDED_BY
// (the asan-ubsan preset, which CI builds, has -Wthread-safety -Werror).
//
// Condition variables: wait through the MutexLock that holds the mutex, so the analysis knows
// the mutex is held before and after the wait:
//
//   common::MutexLock l(mu_);
//   l.Wait(cv_, [this]() GPUSCHED_REQUIRES(mu_) { return !queue_.empty(); });
//
// The predicate runs with the mutex held; annotating it GPUSCHED_REQUIRES(mu_) lets it read the
// guarded state, checked. Any std::condition_variable or std::condition_variable_any works.
// Thread safety: a Mutex is shared between threads; a MutexLock belongs to one.
#pragma once

#include <chrono>
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
  // The std::mutex itself, for code the analysis cannot follow (it sees no lock taken through
  // it): prefer MutexLock and its Wait* functions.
  std::mutex& native() { return mu_; }

 private:
  std::mutex mu_;
};

class GPUSCHED_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) GPUSCHED_ACQUIRE(mu) : mu_(mu) { mu_.Lock(); }
  ~MutexLock() GPUSCHED_RELEASE() {
    if (held_) mu_.Unlock();
  }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  // Releases the mutex before the end of the scope, e.g. around a slow call; Lock() takes it
  // again. REQUIRES: held (Unlock) / not held (Lock).
  void Unlock() GPUSCHED_RELEASE() {
    mu_.Unlock();
    held_ = false;
  }
  void Lock() GPUSCHED_ACQUIRE() {
    mu_.Lock();
    held_ = true;
  }

  // Blocks on cv until notified (or a spurious wake-up); the mutex is released while blocked and
  // held again on return. REQUIRES: held.
  template <class CondVar>
  void Wait(CondVar& cv) GPUSCHED_NO_THREAD_SAFETY_ANALYSIS {
    std::unique_lock<std::mutex> l(mu_.native(), std::adopt_lock);
    cv.wait(l);
    l.release();
  }
  // Waits until pred() is true; pred runs with the mutex held.
  template <class CondVar, class Pred>
  void Wait(CondVar& cv, Pred pred) GPUSCHED_NO_THREAD_SAFETY_ANALYSIS {
    while (!pred()) Wait(cv);
  }
  // Waits until pred() is true or the time is up; returns pred() (false: timed out).
  template <class CondVar, class Clock, class Dur, class Pred>
  bool WaitUntil(CondVar& cv, const std::chrono::time_point<Clock, Dur>& deadline,
                 Pred pred) GPUSCHED_NO_THREAD_SAFETY_ANALYSIS {
    std::unique_lock<std::mutex> l(mu_.native(), std::adopt_lock);
    bool ok = cv.wait_until(l, deadline, pred);
    l.release();
    return ok;
  }
  template <class CondVar, class Rep, class Period, class Pred>
  bool WaitFor(CondVar& cv, const std::chrono::duration<Rep, Period>& timeout, Pred pred) {
    return WaitUntil(cv, std::chrono::steady_clock::now() + timeout, pred);
  }
  // One timed wait, no predicate: returns false if the time ran out before a notification.
  template <class CondVar, class Rep, class Period>
  bool WaitFor(CondVar& cv, const std::chrono::duration<Rep, Period>& timeout)
      GPUSCHED_NO_THREAD_SAFETY_ANALYSIS {
    std::unique_lock<std::mutex> l(mu_.native(), std::adopt_lock);
    bool notified = cv.wait_for(l, timeout) == std::cv_status::no_timeout;
    l.release();
    return notified;
  }

 private:
  Mutex& mu_;
  bool held_ = true;
};

}  // namespace gpusched::common
