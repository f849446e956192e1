// SPDX-License-Identifier: Apache-2.0
#include "src/common/interner.h"

#include <cstring>

#include "src/common/check.h"

namespace gpusched::common {

Interner::Interner() { Intern(""); }

Atom Interner::Intern(std::string_view s) {
  MutexLock lock(mu_);
  if (auto it = index_.find(s); it != index_.end()) return Atom{it->second};
  uint32_t id = next_;
  uint32_t chunk = id >> kChunkBits;
  GPUSCHED_CHECK(chunk < kMaxChunks);
  if ((id & kChunkMask) == 0) {
    owned_chunks_.push_back(std::make_unique<std::string_view[]>(kChunkMask + 1));
    chunks_[chunk].store(owned_chunks_.back().get(), std::memory_order_release);
  }
  auto text = std::make_unique<char[]>(s.size() + 1);
  std::memcpy(text.get(), s.data(), s.size());
  text[s.size()] = '\0';
  std::string_view stored(text.get(), s.size());
  storage_.push_back(std::move(text));
  chunks_[chunk].load(std::memory_order_relaxed)[id & kChunkMask] = stored;
  index_.emplace(stored, id);
  ++next_;
  return Atom{id};
}

bool Interner::Find(std::string_view s, Atom* out) const {
  MutexLock lock(mu_);
  auto it = index_.find(s);
  if (it == index_.end()) return false;
  *out = Atom{it->second};
  return true;
}

size_t Interner::size() const {
  MutexLock lock(mu_);
  return next_;
}

Interner& Symbols() {
  static Interner* interner = new Interner();  // never destroyed: atoms outlive static teardown
  return *interner;
}

}  // namespace gpusched::common
