// SPDX-License-Identifier: Apache-2.0
// Logging: spdlog underneath, klog-style verbosity on top. cmd/ calls InitLogging once; everything
// else logs through spdlog's default logger and gates chatty lines with V(n):
//   if (common::V(4)) spdlog::info("...");
// Levels follow kube-scheduler's conventions: 2 = per-decision summaries, 4 = per-plugin detail,
// 5+ = per-node detail.
#pragma once

#include <atomic>
#include <string_view>

#include "src/common/status.h"

namespace gpusched::common {

enum class LogFormat { kText, kJson };

// Parses "text" or "json" (kube-scheduler's --logging-format values).
StatusOr<LogFormat> ParseLogFormat(std::string_view s);
void InitLogging(LogFormat format, int verbosity);

namespace internal {
extern std::atomic<int> g_verbosity;
}
inline bool V(int level) { return internal::g_verbosity.load(std::memory_order_relaxed) >= level; }

}  // namespace gpusched::common
