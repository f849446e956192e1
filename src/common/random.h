// SPDX-License-Identifier: Apache-2.0
// Random: a small, fast, seedable generator (xoshiro256**, seeded by splitmix64). Deterministic for
// a given seed, so simulations and tests replay exactly. Not thread-safe: one per thread of use.
#pragma once

#include <cstdint>

namespace gpusched::common {

class Random {
 public:
  explicit Random(uint64_t seed = 0x5eed);
  void Seed(uint64_t seed);
  uint64_t Next();
  // Uniform in [0, n). REQUIRES: n > 0.
  uint64_t Uniform(uint64_t n);
  // Uniform in [0, 1).
  double NextDouble() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

 private:
  uint64_t s_[4];
};

}  // namespace gpusched::common
