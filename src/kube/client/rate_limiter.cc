// SPDX-License-Identifier: Apache-2.0
#include "src/kube/client/rate_limiter.h"

#include <algorithm>
#include <cmath>

namespace gpusched::kube::client {

RateLimiter::RateLimiter(double qps, int burst, const common::Clock& clock, WaitFn wait)
    : qps_(std::isfinite(qps) ? qps : 0),
      burst_(std::max(burst, 1)),
      clock_(clock),
      wait_(std::move(wait)),
      tokens_(burst_),
      last_(clock.Now()) {}

void RateLimiter::RefillLocked(common::TimePoint now) {
  if (now <= last_) return;
  double elapsed = common::Seconds(now - last_);
  tokens_ = std::min(static_cast<double>(burst_), tokens_ + elapsed * qps_);
  last_ = now;
}

common::Duration RateLimiter::Reserve() {
  if (!enabled()) return common::Duration(0);
  common::MutexLock lock(mu_);
  RefillLocked(clock_.Now());
  tokens_ -= 1;
  if (tokens_ >= 0) return common::Duration(0);
  double wait_s = -tokens_ / qps_;
  return std::chrono::duration_cast<common::Duration>(std::chrono::duration<double>(wait_s));
}

bool RateLimiter::TryAccept() {
  if (!enabled()) return true;
  common::MutexLock lock(mu_);
  RefillLocked(clock_.Now());
  if (tokens_ < 1) return false;
  tokens_ -= 1;
  return true;
}

common::Duration RateLimiter::Accept() {
  common::Duration d = Reserve();
  if (d > common::Duration(0) && wait_) wait_(d);
  return d;
}

}  // namespace gpusched::kube::client
