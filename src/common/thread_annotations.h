// SPDX-License-Identifier: Apache-2.0
// Clang thread-safety annotations; they expand to nothing on other compilers.
#pragma once

#if defined(__clang__)
#define GPUSCHED_THREAD_ANNOTATION_(x) __attribute__((x))
#else
#define GPUSCHED_THREAD_ANNOTATION_(x)
#endif

#define GPUSCHED_CAPABILITY(x) GPUSCHED_THREAD_ANNOTATION_(capability(x))
#define GPUSCHED_SCOPED_CAPABILITY GPUSCHED_THREAD_ANNOTATION_(scoped_lockable)
#define GPUSCHED_GUARDED_BY(x) GPUSCHED_THREAD_ANNOTATION_(guarded_by(x))
#define GPUSCHED_PT_GUARDED_BY(x) GPUSCHED_THREAD_ANNOTATION_(pt_guarded_by(x))
#define GPUSCHED_REQUIRES(...) GPUSCHED_THREAD_ANNOTATION_(requires_capability(__VA_ARGS__))
#define GPUSCHED_EXCLUDES(...) GPUSCHED_THREAD_ANNOTATION_(locks_excluded(__VA_ARGS__))
#define GPUSCHED_ACQUIRE(...) GPUSCHED_THREAD_ANNOTATION_(acquire_capability(__VA_ARGS__))
#define GPUSCHED_RELEASE(...) GPUSCHED_THREAD_ANNOTATION_(release_capability(__VA_ARGS__))
#define GPUSCHED_NO_THREAD_SAFETY_ANALYSIS GPUSCHED_THREAD_ANNOTATION_(no_thread_safety_analysis)
