// SPDX-License-Identifier: Apache-2.0
// Fuzzes api::Quantity::Parse, the parser of every resource quantity in pods, nodes and traces.
// Properties: no crash, no UB, no leak; a parsed value prints (ToString) as text that parses back
// to the same Value() and MilliValue().
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz/fuzz_check.h"
#include "src/api/quantity.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto q = gpusched::api::Quantity::Parse(text);
  if (!q.ok()) return 0;
  const int64_t value = q->Value();
  const int64_t milli = q->MilliValue();
  (void)q->IsZero();
  auto again = gpusched::api::Quantity::Parse(q->ToString());
  FUZZ_CHECK(again.ok(), "ToString() of a parsed quantity parses");
  FUZZ_CHECK(again->Value() == value, "round trip keeps Value()");
  FUZZ_CHECK(again->MilliValue() == milli, "round trip keeps MilliValue()");
  return 0;
}
