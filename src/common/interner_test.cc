// SPDX-License-Identifier: Apache-2.0
#include "src/common/interner.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace gpusched::common {
namespace {

TEST(InternerTest, SameStringSameAtom) {
  Interner in;
  Atom a = in.Intern("nvidia.com/gpu");
  Atom b = in.Intern(std::string("nvidia.com/") + "gpu");
  EXPECT_EQ(a, b);
  EXPECT_EQ(in.Str(a), "nvidia.com/gpu");
  EXPECT_TRUE(in.Intern("").empty());
  Atom found;
  EXPECT_TRUE(in.Find("nvidia.com/gpu", &found));
  EXPECT_EQ(found, a);
  EXPECT_FALSE(in.Find("never-seen", &found));
}

TEST(InternerTest, GrowsPastOneChunkAndIsThreadSafe) {
  Interner in;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&in] {
      for (int i = 0; i < 10000; ++i) {
        Atom a = in.Intern("key-" + std::to_string(i));
        ASSERT_EQ(in.Str(a), "key-" + std::to_string(i));
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(in.size(), 10001u);
}

}  // namespace
}  // namespace gpusched::common
