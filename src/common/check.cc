// SPDX-License-Identifier: Apache-2.0
#include "src/common/check.h"

#include <spdlog/spdlog.h>

#include <cstdio>
#include <cstdlib>

namespace gpusched::common {
namespace {
std::atomic<uint64_t> bug_count{0};
}  // namespace

void CheckFailed(const char* file, int line, const char* expr) {
  std::fprintf(stderr, "%s:%d: check failed: %s\n", file, line, expr);
  std::abort();
}

void ReportBug(const char* file, int line, std::string_view message) {
  bug_count.fetch_add(1, std::memory_order_relaxed);
  spdlog::error("internal bug at {}:{}: {}", file, line, message);
}

uint64_t InternalBugCount() { return bug_count.load(std::memory_order_relaxed); }

}  // namespace gpusched::common
