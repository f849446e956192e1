// SPDX-License-Identifier: Apache-2.0
#include "src/common/random.h"

namespace gpusched::common {
namespace {
uint64_t SplitMix64(uint64_t& x) {
  uint64_t z = (x += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
inline uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
}  // namespace

Random::Random(uint64_t seed) { Seed(seed); }

void Random::Seed(uint64_t seed) {
  for (auto& s : s_) s = SplitMix64(seed);
}

uint64_t Random::Next() {
  const uint64_t result = Rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = Rotl(s_[3], 45);
  return result;
}

uint64_t Random::Uniform(uint64_t n) {
  // Lemire's multiply-shift; the tiny bias is irrelevant for tie-breaking and sampling.
  return static_cast<uint64_t>((static_cast<unsigned __int128>(Next()) * n) >> 64);
}

}  // namespace gpusched::common
