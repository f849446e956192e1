// SPDX-License-Identifier: Apache-2.0
// fgd-bound: the limit beside the FGD protocol's results (issue #41 item 3). For each seed, the
// pods that have arrived by the curve's bucket --arrived (sim::trace::FgdPodSequence and
// FgdArrivedPrefix: the same pods, in the same order, as `gpusched simulate --trace-nodes ...
// --seed S` tries) and the fewest unallocated GPUs any placement of them could reach
// (sim::trace::ComputePackingBound): no scheduler, online or offline, gets below it.
//
//   fgd-bound --trace-nodes openb_node_list_gpu_node.csv --trace-pods openb_pod_list_default.csv
//             [--seeds 42-51] [--arrived 100] [--inflation 1.3]
//
// Prints one line per seed ("seed S: ... min unallocated X %") and, for several seeds, the median
// [min, max]. scripts/fgd-bench runs it for the "offline limit" row of its table.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "src/common/strings.h"
#include "src/sim/trace/fgd_protocol.h"
#include "src/sim/trace/openb.h"
#include "src/sim/trace/packing_bound.h"

namespace gpusched::bench {
namespace {

// Process CPU seconds (the solvers run in this thread).
double CpuSeconds() { return static_cast<double>(std::clock()) / CLOCKS_PER_SEC; }

struct Flags {
  std::string nodes, pods;
  uint64_t seed_lo = 42, seed_hi = 42;
  int32_t arrived = 100;
  double inflation = 1.3;
};

// A flag's value that is not what it should be: the flag and the value named.
bool BadValue(std::string_view flag, std::string_view value, std::string_view want) {
  std::fprintf(stderr, "fgd-bound: %.*s: invalid value %s (want %.*s)\n",
               static_cast<int>(flag.size()), flag.data(), common::Quote(value).c_str(),
               static_cast<int>(want.size()), want.data());
  return false;
}

bool ParseFlags(int argc, char** argv, Flags* f) {
  if (argc % 2 == 0) {
    std::fprintf(stderr, "fgd-bound: %s needs a value\n", argv[argc - 1]);
    return false;
  }
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string_view a = argv[i];
    const std::string_view v = argv[i + 1];
    if (a == "--trace-nodes") {
      f->nodes = v;
    } else if (a == "--trace-pods") {
      f->pods = v;
    } else if (a == "--arrived") {
      const std::optional<int64_t> pct = common::ParseInt64(v);
      if (!pct || *pct < 1 || *pct > 100) return BadValue(a, v, "a percentage, 1..100");
      f->arrived = static_cast<int32_t>(*pct);
    } else if (a == "--inflation") {
      const std::optional<double> x = common::ParseDouble(v);
      if (!x || !(*x >= 0)) return BadValue(a, v, "a factor such as 1.3, or 0 for none");
      f->inflation = *x;
    } else if (a == "--seeds") {
      const size_t dash = v.find('-');
      const std::optional<int64_t> lo = common::ParseInt64(v.substr(0, dash));
      const std::optional<int64_t> hi =
          dash == std::string_view::npos ? lo : common::ParseInt64(v.substr(dash + 1));
      if (!lo || !hi || *lo < 0 || *hi < *lo) return BadValue(a, v, "a seed or a range A-B");
      f->seed_lo = static_cast<uint64_t>(*lo);
      f->seed_hi = static_cast<uint64_t>(*hi);
    } else {
      std::fprintf(stderr, "fgd-bound: unknown flag %s\n", argv[i]);
      return false;
    }
  }
  if (f->nodes.empty() || f->pods.empty()) {
    std::fprintf(stderr,
                 "usage: fgd-bound --trace-nodes FILE --trace-pods FILE [--seeds A-B] "
                 "[--arrived PCT] [--inflation X]\n");
    return false;
  }
  return true;
}

int Run(int argc, char** argv) {
  Flags f;
  if (!ParseFlags(argc, argv, &f)) return 2;
  auto workload = sim::trace::LoadOpenbTrace(f.nodes, f.pods);
  if (!workload.ok()) {
    std::fprintf(stderr, "fgd-bound: %s\n", workload.status().ToString().c_str());
    return 1;
  }
  int64_t capacity = 0;
  for (const auto& n : workload->nodes) capacity += int64_t{n->gpu.count} * api::kMilliPerGpu;
  std::vector<double> bounds;
  for (uint64_t seed = f.seed_lo; seed <= f.seed_hi; ++seed) {
    sim::trace::FgdOptions opts;
    opts.seed = seed;
    opts.inflation = f.inflation;
    int64_t appended = 0, removed = 0;
    const std::vector<api::PodPtr> seq =
        sim::trace::FgdPodSequence(workload->pods, capacity, opts, &appended, &removed);
    const size_t arrived = sim::trace::FgdArrivedPrefix(seq, capacity, f.arrived);
    const std::span<const api::PodPtr> pods(seq.data(), arrived);
    const double c0 = CpuSeconds();
    auto bound = sim::trace::ComputePackingBound(workload->nodes, pods);
    if (!bound.ok()) {
      std::fprintf(stderr, "fgd-bound: seed %llu: %s\n", static_cast<unsigned long long>(seed),
                   bound.status().ToString().c_str());
      return 1;
    }
    std::printf(
        "seed %llu: %zu pods arrived by %d %% (GPU demand %.2f %% of %lld GPUs); %s over %lld GPU "
        "pod types x %lld node shapes, %.2f CPU s: min unallocated %.2f %%\n",
        static_cast<unsigned long long>(seed), arrived, f.arrived,
        100.0 * static_cast<double>(bound->demand_milli) / static_cast<double>(capacity),
        static_cast<long long>(capacity / api::kMilliPerGpu),
        bound->exact ? "exact" : "LP relaxation", static_cast<long long>(bound->gpu_pod_types),
        static_cast<long long>(bound->node_shapes), CpuSeconds() - c0, bound->MinUnallocatedPct());
    std::fflush(stdout);
    bounds.push_back(bound->MinUnallocatedPct());
  }
  if (bounds.size() > 1) {
    std::sort(bounds.begin(), bounds.end());
    const size_t n = bounds.size();
    const double median = n % 2 == 1 ? bounds[n / 2] : (bounds[n / 2 - 1] + bounds[n / 2]) / 2;
    std::printf("min unallocated %% over %zu seeds: median %.2f [%.2f, %.2f]\n", n, median,
                bounds.front(), bounds.back());
  }
  return 0;
}

}  // namespace
}  // namespace gpusched::bench

int main(int argc, char** argv) { return gpusched::bench::Run(argc, argv); }
