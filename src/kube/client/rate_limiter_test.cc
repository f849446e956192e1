// SPDX-License-Identifier: Apache-2.0
#include "src/kube/client/rate_limiter.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace gpusched::kube::client {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(RateLimiterTest, TokenBucketMath) {
  struct Step {
    common::Duration advance;  // before the request
    common::Duration want_wait;
  };
  struct Case {
    const char* name;
    double qps;
    int burst;
    std::vector<Step> steps;
  };
  const Case cases[] = {
      {"the burst passes at once, then one request per 1/qps",
       2,
       3,
       {{{}, {}}, {{}, {}}, {{}, {}}, {{}, milliseconds(500)}, {{}, milliseconds(1000)}}},
      {"tokens refill while idle, up to the burst",
       2,
       2,
       {{{}, {}}, {{}, {}}, {seconds(10), {}}, {{}, {}}, {{}, milliseconds(500)}}},
      {"a partial refill shortens the wait",
       4,
       1,
       {{{}, {}}, {milliseconds(100), milliseconds(150)}}},
      {"a burst below one behaves as one", 1, 0, {{{}, {}}, {{}, seconds(1)}}},
      {"qps zero disables the limiter", 0, 1, {{{}, {}}, {{}, {}}, {{}, {}}, {{}, {}}}},
      {"negative qps disables the limiter", -1, 1, {{{}, {}}, {{}, {}}}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    common::FakeClock clock;
    std::vector<common::Duration> waits;
    RateLimiter limiter(c.qps, c.burst, clock, [&](common::Duration d) { waits.push_back(d); });
    for (size_t i = 0; i < c.steps.size(); ++i) {
      SCOPED_TRACE(i);
      clock.Advance(c.steps[i].advance);
      // Float math: equal to within a microsecond.
      EXPECT_NEAR(static_cast<double>(limiter.Reserve().count()),
                  static_cast<double>(c.steps[i].want_wait.count()), 1000.0);
    }
    EXPECT_TRUE(waits.empty()) << "Reserve never waits itself";
  }
}

TEST(RateLimiterTest, AcceptWaitsThroughTheInjectedWaitAndKeepsTheLongRunRate) {
  common::FakeClock clock;
  common::Duration total{0};
  RateLimiter limiter(10, 5, clock, [&](common::Duration d) {
    total += d;
    clock.Advance(d);
  });
  auto start = clock.Now();
  for (int i = 0; i < 105; ++i) limiter.Accept();
  // 5 from the burst, then 100 at 10/s.
  EXPECT_NEAR(common::Seconds(clock.Now() - start), 10.0, 1e-6);
  EXPECT_NEAR(common::Seconds(total), 10.0, 1e-6);
}

TEST(RateLimiterTest, TryAcceptDoesNotBorrow) {
  common::FakeClock clock;
  RateLimiter limiter(1, 2, clock, nullptr);
  EXPECT_TRUE(limiter.TryAccept());
  EXPECT_TRUE(limiter.TryAccept());
  EXPECT_FALSE(limiter.TryAccept());
  clock.Advance(milliseconds(999));
  EXPECT_FALSE(limiter.TryAccept());
  clock.Advance(milliseconds(1));
  EXPECT_TRUE(limiter.TryAccept());
}

TEST(RateLimiterTest, ConcurrentReservationsAreEachCountedOnce) {
  common::FakeClock clock;
  RateLimiter limiter(100, 10, clock, nullptr);
  std::vector<std::thread> threads;
  std::atomic<int64_t> max_wait_ns{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 100; ++i) {
        int64_t w = limiter.Reserve().count();
        int64_t prev = max_wait_ns.load();
        while (w > prev && !max_wait_ns.compare_exchange_weak(prev, w)) {
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  // 800 reservations, 10 free: the last one is due (800 - 10) / 100 s from now.
  EXPECT_NEAR(static_cast<double>(max_wait_ns.load()) / 1e9, 7.9, 1e-6);
}

}  // namespace
}  // namespace gpusched::kube::client
