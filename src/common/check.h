// SPDX-License-Identifier: Apache-2.0
// Invariant checks in three tiers (never use them on data from the API server, a file or a
// request):
//   GPUSCHED_DCHECK(cond)  debug builds only.
//   GPUSCHED_CHECK(cond)   always; aborts. For startup and programmer errors.
//   GPUSCHED_BUG(msg)      logs an error, counts it (InternalBugCount()) and continues.
#pragma once

#include <atomic>
#include <cstdint>
#include <string_view>

namespace gpusched::common {

[[noreturn]] void CheckFailed(const char* file, int line, const char* expr);
void ReportBug(const char* file, int line, std::string_view message);
// Number of GPUSCHED_BUG reports since start. (Not exported as a metric: the catalog has no
// gpusched_internal_bugs_total.)
uint64_t InternalBugCount();

}  // namespace gpusched::common

#define GPUSCHED_CHECK(cond) \
  ((cond) ? (void)0 : ::gpusched::common::CheckFailed(__FILE__, __LINE__, #cond))
#ifdef NDEBUG
#define GPUSCHED_DCHECK(cond) ((void)0)
#else
#define GPUSCHED_DCHECK(cond) GPUSCHED_CHECK(cond)
#endif
#define GPUSCHED_BUG(msg) ::gpusched::common::ReportBug(__FILE__, __LINE__, (msg))
