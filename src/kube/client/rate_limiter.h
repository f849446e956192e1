// SPDX-License-Identifier: Apache-2.0
// RateLimiter: the client-side token bucket of client-go's flowcontrol (clientConnection.qps and
// .burst). The bucket holds at most `burst` tokens and refills at `qps` per second; every request
// attempt (retries included) takes one. Callers that find the bucket empty reserve a future token
// and wait for it outside the lock, so waiters are served in arrival order and the long-run rate
// never exceeds qps. qps <= 0 disables limiting.
//
// Time comes from the injected Clock and waiting goes through the injected WaitFn (cmd/ passes a
// real sleep; tests advance a FakeClock), so nothing here sleeps on its own. Thread-safe.
#pragma once

#include <functional>

#include "src/common/clock.h"
#include "src/common/mutex.h"

namespace gpusched::kube::client {

// Blocks the calling thread for `d` (d > 0). cmd/ supplies std::this_thread::sleep_for or a wait
// that returns early on shutdown; tests advance a FakeClock.
using WaitFn = std::function<void(common::Duration d)>;

class RateLimiter {
 public:
  // `qps` tokens per second, bucket size `burst` (values < 1 become 1). The bucket starts full.
  RateLimiter(double qps, int burst, const common::Clock& clock, WaitFn wait);
  RateLimiter(const RateLimiter&) = delete;
  RateLimiter& operator=(const RateLimiter&) = delete;

  bool enabled() const { return qps_ > 0; }
  double qps() const { return qps_; }
  int burst() const { return burst_; }

  // Takes a token, waiting (through WaitFn) until it is due. Returns the wait it asked for.
  common::Duration Accept();
  // Takes a token only if one is available now.
  bool TryAccept();
  // Takes the next token and returns how long from now until it is due (0 if available now).
  // The caller must wait that long before sending.
  common::Duration Reserve();

 private:
  void RefillLocked(common::TimePoint now) GPUSCHED_REQUIRES(mu_);

  const double qps_;
  const int burst_;
  const common::Clock& clock_;
  const WaitFn wait_;
  common::Mutex mu_;
  double tokens_ GPUSCHED_GUARDED_BY(mu_);  // may go negative: tokens promised to waiters
  common::TimePoint last_ GPUSCHED_GUARDED_BY(mu_);
};

}  // namespace gpusched::kube::client
