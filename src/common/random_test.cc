// SPDX-License-Identifier: Apache-2.0
#include "src/common/random.h"

#include <gtest/gtest.h>

namespace gpusched::common {
namespace {

TEST(RandomTest, SameSeedSameSequenceAndUniformInRange) {
  Random a(42), b(42), c(43);
  bool differs = false;
  for (int i = 0; i < 100; ++i) {
    uint64_t x = a.Next();
    EXPECT_EQ(x, b.Next());
    differs |= x != c.Next();
    uint64_t u = a.Uniform(7);
    b.Uniform(7);
    EXPECT_LT(u, 7u);
    double d = a.NextDouble();
    b.NextDouble();
    EXPECT_GE(d, 0.0);
    EXPECT_LT(d, 1.0);
  }
  EXPECT_TRUE(differs);
}

}  // namespace
}  // namespace gpusched::common
