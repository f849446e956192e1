// SPDX-License-Identifier: Apache-2.0
#include "src/common/backoff.h"

#include <gtest/gtest.h>

#include <chrono>
#include <limits>

namespace gpusched::common {
namespace {

using std::chrono::seconds;

TEST(ExponentialBackoffTest, DoublesFromTheInitialWaitUpToTheCap) {
  EXPECT_EQ(ExponentialBackoff(seconds(1), seconds(10), 0), seconds(1));
  EXPECT_EQ(ExponentialBackoff(seconds(1), seconds(10), 1), seconds(1));
  EXPECT_EQ(ExponentialBackoff(seconds(1), seconds(10), 2), seconds(2));
  EXPECT_EQ(ExponentialBackoff(seconds(1), seconds(10), 4), seconds(8));
  EXPECT_EQ(ExponentialBackoff(seconds(1), seconds(10), 5), seconds(10));
  // No overflow however many attempts: the doubling stops at the cap.
  EXPECT_EQ(ExponentialBackoff(seconds(1), seconds(10), std::numeric_limits<int64_t>::max()),
            seconds(10));
  // An initial wait above the cap is capped.
  EXPECT_EQ(ExponentialBackoff(seconds(20), seconds(10), 1), seconds(10));
}

}  // namespace
}  // namespace gpusched::common
