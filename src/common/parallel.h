// SPDX-License-Identifier: Apache-2.0
// Parallelizer: the scheduling cycle's fan-out over nodes (kube-scheduler's
// parallelize.Parallelizer, sized by KubeSchedulerConfiguration's `parallelism`), on oneTBB.
//
// For(n, fn) calls fn(begin, end) on chunks that cover [0, n) once each, on up to `parallelism`
// threads (the caller's included), and returns when all are done. A caller that writes index i's
// result to slot i gets the same result for every parallelism; how [0, n) is cut into chunks
// depends on the parallelism and n, so fn(begin, end) must not depend on where a chunk starts or
// ends. The threads are also capped at the CPUs the process may use (oneTBB's default
// concurrency). Parallelism 1 (or one CPU) makes no thread and runs fn inline, as does a range of
// one chunk. Idle workers sleep (oneTBB's workers spin briefly after a fork-join, then block): no
// CPU between cycles. Several threads may call For at once (they share the workers); For is not
// called from inside fn.
#pragma once

#include <cstddef>
#include <memory>
#include <type_traits>

namespace gpusched::common {

class Parallelizer {
 public:
  // REQUIRES: parallelism >= 1 (config validation rejects the rest; a smaller value means 1).
  explicit Parallelizer(int parallelism);
  ~Parallelizer();
  Parallelizer(const Parallelizer&) = delete;
  Parallelizer& operator=(const Parallelizer&) = delete;

  int parallelism() const { return parallelism_; }
  // The threads a For uses, the caller's included: parallelism capped at the CPUs.
  int threads() const { return threads_; }

  // fn: callable as fn(size_t begin, size_t end); thread-safe. Allocates nothing of its own.
  template <typename Fn>
  void For(size_t n, Fn&& fn) {
    using F = std::remove_reference_t<Fn>;
    ForChunks(
        n, [](void* f, size_t begin, size_t end) { (*static_cast<F*>(f))(begin, end); },
        static_cast<void*>(&fn));
  }

  // kube-scheduler's chunk size for n items: min(sqrt(n), n / parallelism + 1), at least 1.
  static size_t ChunkSize(size_t n, int parallelism);

 private:
  void ForChunks(size_t n, void (*call)(void*, size_t, size_t), void* fn);

  struct Arena;
  int parallelism_ = 1;
  int threads_ = 1;
  std::unique_ptr<Arena> arena_;  // null for parallelism 1
};

}  // namespace gpusched::common
