// SPDX-License-Identifier: Apache-2.0
// Interned strings. Label keys and values, resource names, GPU models and taint keys are interned
// to a dense uint32_t on ingest, so the hot path compares integers and allocates nothing.
//
// There is one process-wide table (Symbols()): interned ids are vocabulary shared by the decoder,
// the cache and every plugin, like string literals. Strings are never freed; the table grows with
// the number of distinct strings seen, not with the number of objects.
//
// Thread safety: Intern() and Find() lock; Str() is lock-free and may run concurrently with
// Intern() (an id is only ever handed out after its text is published).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include "src/common/mutex.h"

namespace gpusched::common {

// An interned string. Atom{} (id 0) is the empty string.
struct Atom {
  uint32_t id = 0;
  bool empty() const { return id == 0; }
  friend bool operator==(Atom a, Atom b) { return a.id == b.id; }
  friend auto operator<=>(Atom a, Atom b) { return a.id <=> b.id; }
};

class Interner {
 public:
  Interner();
  Interner(const Interner&) = delete;
  Interner& operator=(const Interner&) = delete;

  // Returns the atom for `s`, adding it if new.
  Atom Intern(std::string_view s);
  // Returns the atom for `s` if it was ever interned; Atom{} with found=false otherwise. Used to
  // match a selector value against labels without growing the table.
  bool Find(std::string_view s, Atom* out) const;
  // The text of `a`. REQUIRES: `a` came from this interner.
  std::string_view Str(Atom a) const {
    return chunks_[a.id >> kChunkBits].load(std::memory_order_acquire)[a.id & kChunkMask];
  }
  size_t size() const;

 private:
  static constexpr uint32_t kChunkBits = 12;
  static constexpr uint32_t kChunkMask = (1u << kChunkBits) - 1;
  static constexpr uint32_t kMaxChunks = 1u << 12;  // 16M distinct strings

  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };

  mutable Mutex mu_;
  std::unordered_map<std::string_view, uint32_t, Hash, std::equal_to<>> index_
      GPUSCHED_GUARDED_BY(mu_);
  std::vector<std::unique_ptr<char[]>> storage_ GPUSCHED_GUARDED_BY(mu_);
  std::vector<std::unique_ptr<std::string_view[]>> owned_chunks_ GPUSCHED_GUARDED_BY(mu_);
  uint32_t next_ GPUSCHED_GUARDED_BY(mu_) = 0;
  std::array<std::atomic<std::string_view*>, kMaxChunks> chunks_{};
};

// The process-wide table.
Interner& Symbols();
inline Atom Intern(std::string_view s) { return Symbols().Intern(s); }
inline std::string_view Str(Atom a) { return Symbols().Str(a); }

}  // namespace gpusched::common

template <>
struct std::hash<gpusched::common::Atom> {
  size_t operator()(gpusched::common::Atom a) const noexcept {
    return a.id * 0x9E3779B97F4A7C15ull;
  }
};
