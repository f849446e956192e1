// SPDX-License-Identifier: Apache-2.0
// FUZZ_CHECK(cond, what): a property a fuzz target asserts about the code under test. On failure
// it prints the condition and aborts, which libFuzzer reports as a crash and saves the input.
// Used only by the targets in fuzz/; never on anything but the parsed result of fuzzer input.
#pragma once

#include <cstdio>
#include <cstdlib>

#define FUZZ_CHECK(cond, what)                                                               \
  do {                                                                                       \
    if (!(cond)) {                                                                           \
      std::fprintf(stderr, "%s:%d: property violated: %s (%s)\n", __FILE__, __LINE__, #cond, \
                   what);                                                                    \
      std::abort();                                                                          \
    }                                                                                        \
  } while (0)
