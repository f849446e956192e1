// SPDX-License-Identifier: Apache-2.0
// Quantity parsing (every request/allocatable of every decoded object).
#include <benchmark/benchmark.h>

#include <string_view>

#include "src/api/quantity.h"

namespace {

void BM_QuantityParse(benchmark::State& state, std::string_view text) {
  for (auto _ : state) {
    auto q = gpusched::api::Quantity::Parse(text);
    benchmark::DoNotOptimize(q);
  }
}
BENCHMARK_CAPTURE(BM_QuantityParse, cpu_milli, std::string_view("250m"));
BENCHMARK_CAPTURE(BM_QuantityParse, cpu_int, std::string_view("96"));
BENCHMARK_CAPTURE(BM_QuantityParse, memory_gi, std::string_view("1152Gi"));
BENCHMARK_CAPTURE(BM_QuantityParse, memory_decimal_exp, std::string_view("1.5e9"));

void BM_QuantityMilliValue(benchmark::State& state) {
  auto q = gpusched::api::Quantity::Parse("1500m");
  for (auto _ : state) benchmark::DoNotOptimize(q->MilliValue());
}
BENCHMARK(BM_QuantityMilliValue);

}  // namespace
