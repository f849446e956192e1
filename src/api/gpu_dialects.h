// SPDX-License-Identifier: Apache-2.0
// Internal to src/api (not for other libraries): the pod GPU-sharing request dialects
// (gpu_dialects.cc) read into per-device facts for DeriveGpuRequest (gpu.cc), and the small
// parse and message helpers both files use.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gpusched::api {

struct Pod;

namespace gpu_internal {

inline constexpr int64_t kMiB = 1024 * 1024;

// A non-negative decimal integer, digits only.
std::optional<int64_t> ParseNonNegative(std::string_view s);

struct MiB {
  int64_t value = 0;
  bool plain = false;  // a bare integer (unit implied), as opposed to "16Gi"
};

// A memory amount in MiB: a bare non-negative integer is MiB; a quantity ending in a byte unit
// (Ki..Ei, k..E) is bytes, rounded up to whole MiB.
std::optional<MiB> ParseMiB(std::string_view s);

// Appends `msg` to a "; "-separated message list.
void Warn(std::string& out, std::string_view msg);

// One normalised per-device fact and the field that gave it (for conflict messages).
struct Fact {
  int64_t value = 0;
  bool set = false;
  std::string from;  // e.g. `annotation gpu-fraction="0.5"`
};

struct ShareFacts {
  Fact count, milli, memory_mib, memory_permille;
  std::string errors;
};

// The per-device facts of every sharing dialect present on the pod, and `whole_gpus` (the count of
// `whole_resource`, nvidia.com/gpu or nvidia.com/gpu.shared; 0 when none) as the GPU count; facts
// that disagree are reported in `errors`, in the order the dialects are read: ours, HAMi, Alibaba,
// aliyun gpushare, KAI, Koordinator.
ShareFacts ReadShareFacts(const Pod& pod, int64_t whole_gpus, std::string_view whole_resource);

}  // namespace gpu_internal
}  // namespace gpusched::api
