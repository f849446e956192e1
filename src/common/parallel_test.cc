// SPDX-License-Identifier: Apache-2.0
#include "src/common/parallel.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <vector>

namespace gpusched::common {
namespace {

// Every index of [0, n) is visited exactly once, by chunks that tile the range, whatever the
// parallelism and n.
TEST(ParallelizerTest, ChunksCoverTheRangeOnce) {
  for (int parallelism : {1, 2, 3, 16}) {
    Parallelizer p(parallelism);
    EXPECT_EQ(p.parallelism(), parallelism);
    EXPECT_GE(p.threads(), 1);
    EXPECT_LE(p.threads(), parallelism);
    for (size_t n : {0, 1, 2, 7, 100, 1001, 15000}) {
      std::vector<std::atomic<int>> seen(n);
      std::atomic<size_t> covered{0};
      p.For(n, [&](size_t begin, size_t end) {
        ASSERT_LT(begin, end);
        ASSERT_LE(end, n);
        for (size_t i = begin; i < end; ++i) seen[i].fetch_add(1);
        covered.fetch_add(end - begin);
      });
      EXPECT_EQ(covered.load(), n) << "parallelism " << parallelism << " n " << n;
      for (size_t i = 0; i < n; ++i) ASSERT_EQ(seen[i].load(), 1) << i;
    }
  }
}

// Results written per index are the same for every parallelism.
TEST(ParallelizerTest, PerIndexResultsDoNotDependOnParallelism) {
  constexpr size_t kN = 5000;
  std::vector<uint64_t> want(kN);
  for (size_t i = 0; i < kN; ++i) want[i] = i * 2654435761u % 1000003u;
  for (int parallelism : {1, 2, 16}) {
    Parallelizer p(parallelism);
    std::vector<uint64_t> got(kN, 0);
    p.For(kN, [&](size_t begin, size_t end) {
      for (size_t i = begin; i < end; ++i) got[i] = i * 2654435761u % 1000003u;
    });
    EXPECT_EQ(got, want) << "parallelism " << parallelism;
  }
}

TEST(ParallelizerTest, ChunkSizeIsKubeSchedulers) {
  EXPECT_EQ(Parallelizer::ChunkSize(0, 16), 1u);
  EXPECT_EQ(Parallelizer::ChunkSize(5000, 16), 70u);  // sqrt(5000) = 70 < 5000/16 + 1
  EXPECT_EQ(Parallelizer::ChunkSize(100, 16), 7u);    // 100/16 + 1 = 7 < 10
  EXPECT_EQ(Parallelizer::ChunkSize(5000, 1), 70u);
  EXPECT_EQ(Parallelizer::ChunkSize(3, 0), 1u);
}

TEST(ParallelizerTest, ParallelismBelowOneMeansOne) {
  Parallelizer p(0);
  EXPECT_EQ(p.parallelism(), 1);
  size_t calls = 0;
  p.For(10000, [&](size_t begin, size_t end) {
    ++calls;  // inline: one call over the whole range
    EXPECT_EQ(begin, 0u);
    EXPECT_EQ(end, 10000u);
  });
  EXPECT_EQ(calls, 1u);
}

}  // namespace
}  // namespace gpusched::common
