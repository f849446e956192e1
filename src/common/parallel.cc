// SPDX-License-Identifier: Apache-2.0
#include "src/common/parallel.h"

#include <tbb/blocked_range.h>
#include <tbb/info.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <cmath>

namespace gpusched::common {

// One arena per Parallelizer: it caps the threads a For uses at `parallelism`, and at the CPUs
// this process may run on (more threads than CPUs only wait for each other; oneTBB warns on
// stderr when asked for them); the workers are oneTBB's process-wide pool.
struct Parallelizer::Arena {
  explicit Arena(int threads) : arena(threads) {}
  tbb::task_arena arena;
};

Parallelizer::Parallelizer(int parallelism) : parallelism_(std::max(parallelism, 1)) {
  threads_ = std::min(parallelism_, std::max(tbb::info::default_concurrency(), 1));
  if (threads_ > 1) arena_ = std::make_unique<Arena>(threads_);
}

Parallelizer::~Parallelizer() = default;

size_t Parallelizer::ChunkSize(size_t n, int parallelism) {
  const auto root = static_cast<size_t>(std::sqrt(static_cast<double>(n)));
  const size_t even = n / static_cast<size_t>(std::max(parallelism, 1)) + 1;
  return std::max<size_t>(std::min(root, even), 1);
}

void Parallelizer::ForChunks(size_t n, void (*call)(void*, size_t, size_t), void* fn) {
  if (n == 0) return;
  const size_t chunk = ChunkSize(n, parallelism_);
  const size_t chunks = (n + chunk - 1) / chunk;
  if (arena_ == nullptr || chunks <= 1) {
    call(fn, 0, n);
    return;
  }
  arena_->arena.execute([&] {
    tbb::parallel_for(
        tbb::blocked_range<size_t>(0, chunks, 1),
        [&](const tbb::blocked_range<size_t>& r) {
          for (size_t c = r.begin(); c < r.end(); ++c) {
            call(fn, c * chunk, std::min(n, (c + 1) * chunk));
          }
        },
        tbb::simple_partitioner());
  });
}

}  // namespace gpusched::common
