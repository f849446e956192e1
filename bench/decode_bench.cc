// SPDX-License-Identifier: Apache-2.0
// JSON decoding of pods and nodes (what the informers and the simulator do per object): parse +
// api::DecodePod / api::DecodeNode on the synthetic benchmark objects.
#include <benchmark/benchmark.h>

#include <string>

#include "bench/synthetic.h"
#include "src/api/decode.h"

namespace {

std::string FirstLine(const std::string& s) { return s.substr(0, s.find('\n')); }

void BM_DecodePod(benchmark::State& state) {
  // A GPU pod with a toleration and model annotation is among the first few; take a mix of 64.
  const std::string all = gpusched::bench::SyntheticPodsJson(64, 42);
  std::vector<boost::json::value> docs;
  size_t start = 0;
  while (start < all.size()) {
    size_t end = all.find('\n', start);
    docs.push_back(*gpusched::api::ParseJson(all.substr(start, end - start), "bench"));
    start = end + 1;
  }
  size_t i = 0;
  for (auto _ : state) {
    auto pod = gpusched::api::DecodePod(docs[i++ % docs.size()]);
    benchmark::DoNotOptimize(pod);
  }
}
BENCHMARK(BM_DecodePod);

void BM_ParseAndDecodePod(benchmark::State& state) {
  const std::string text = FirstLine(gpusched::bench::SyntheticPodsJson(1, 42));
  for (auto _ : state) {
    auto json = gpusched::api::ParseJson(text, "bench");
    auto pod = gpusched::api::DecodePod(*json);
    benchmark::DoNotOptimize(pod);
  }
}
BENCHMARK(BM_ParseAndDecodePod);

void BM_ParseAndDecodeNode(benchmark::State& state) {
  const std::string text = FirstLine(gpusched::bench::SyntheticNodesJson(1, 42));
  for (auto _ : state) {
    auto json = gpusched::api::ParseJson(text, "bench");
    auto node = gpusched::api::DecodeNode(*json);
    benchmark::DoNotOptimize(node);
  }
}
BENCHMARK(BM_ParseAndDecodeNode);

}  // namespace
