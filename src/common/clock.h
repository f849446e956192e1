// SPDX-License-Identifier: Apache-2.0
// Clock: the only way code below cmd/ reads time. SystemClock in production (built by cmd/),
// FakeClock in tests, the simulator's clock in sim. Thread-safe.
#pragma once

#include <atomic>
#include <chrono>

namespace gpusched::common {

using Duration = std::chrono::nanoseconds;
// Wall-clock time since the Unix epoch. The simulator starts at the trace's time zero.
using TimePoint = std::chrono::time_point<std::chrono::system_clock, Duration>;

class Clock {
 public:
  virtual ~Clock() = default;
  virtual TimePoint Now() const = 0;
};

class SystemClock final : public Clock {
 public:
  TimePoint Now() const override {
    return std::chrono::time_point_cast<Duration>(std::chrono::system_clock::now());
  }
};

// A clock that moves only when told. Thread-safe.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(TimePoint start = TimePoint(std::chrono::seconds(1'700'000'000)))
      : now_(start.time_since_epoch().count()) {}
  TimePoint Now() const override { return TimePoint(Duration(now_.load())); }
  void Advance(Duration d) { now_.fetch_add(d.count()); }
  void Set(TimePoint t) { now_.store(t.time_since_epoch().count()); }

 private:
  std::atomic<int64_t> now_;
};

inline double Seconds(Duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace gpusched::common
