// SPDX-License-Identifier: Apache-2.0
// fgd-refresh-bench: the placement quality and CPU cost of GpuFragmentation's
// distributionRefreshPods (how often scoring re-takes the learned distribution M), on the Alibaba
// openb traces with the FGD paper's protocol (sim::trace::RunFgdProtocol; the same runs as
// `gpusched simulate --trace-nodes ... --policy learned`, docs/gpu-placement.md).
//
//   fgd-refresh-bench --trace-dir ../shared/traces/alibaba-gpu-v2023 --traces default,multigpu30
//                     --seeds 42-46 --refresh 1,64,256 [--policy Learned|FGD|fgd-trace|...]
//                     [--args '{"deltaQuantum": 400}']
//
// --args: a JSON object merged into GpuFragmentation's args (to compare variants of a policy);
// --policy fgd-trace: the paper's FGD, its typical pods read from the trace
// (TraceFgdSchedulerConfig); --policy learned-trace: Learned with the trace's M (a diagnostic).
//
// Prints one line per (trace, refresh, seed): unallocated GPU % at 100 % arrived (lower is
// better) and the CPU seconds of the run, then the median per (trace, refresh).
#include <sys/resource.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "src/common/clock.h"
#include "src/framework/registry.h"
#include "src/framework/runtime/framework.h"
#include "src/plugins/in_tree_registry.h"
#include "src/sim/trace/fgd_protocol.h"
#include "src/sim/trace/openb.h"

namespace gpusched::bench {
namespace {

double CpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

std::vector<std::string> Split(std::string_view s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(',', start);
    if (end == std::string_view::npos) end = s.size();
    if (end > start) out.emplace_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 == 1 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

int Run(int argc, char** argv) {
  std::string trace_dir = "../shared/traces/alibaba-gpu-v2023";
  std::string traces = "default";
  std::string refresh = "1,64,256";
  std::string policy = "Learned";
  std::string extra_args;
  uint64_t seed_lo = 42, seed_hi = 44;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string_view a = argv[i];
    const char* v = argv[i + 1];
    if (a == "--trace-dir") {
      trace_dir = v;
    } else if (a == "--traces") {
      traces = v;
    } else if (a == "--refresh") {
      refresh = v;
    } else if (a == "--policy") {
      policy = v;
    } else if (a == "--args") {
      extra_args = v;
    } else if (a == "--seeds") {
      const std::string_view s = v;
      const size_t dash = s.find('-');
      seed_lo = std::strtoull(std::string(s.substr(0, dash)).c_str(), nullptr, 10);
      seed_hi = dash == std::string_view::npos
                    ? seed_lo
                    : std::strtoull(std::string(s.substr(dash + 1)).c_str(), nullptr, 10);
    } else {
      std::fprintf(stderr, "error: unknown flag %s\n", argv[i]);
      return 2;
    }
  }
  framework::Registry registry;
  if (common::Status s = plugins::RegisterInTreePlugins(registry); !s.ok()) {
    std::fprintf(stderr, "error: %s\n", s.ToString().c_str());
    return 1;
  }
  boost::json::object extra;
  if (!extra_args.empty()) {
    boost::system::error_code ec;
    boost::json::value v = boost::json::parse(extra_args, ec);
    if (ec || !v.is_object()) {
      std::fprintf(stderr, "error: --args: not a JSON object: %s\n", extra_args.c_str());
      return 2;
    }
    extra = v.as_object();
  }
  common::SystemClock wall;
  for (const std::string& trace : Split(traces)) {
    // fgd-trace: the paper's FGD; learned-trace: Learned scoring with the trace's M (diagnostic).
    const bool from_trace = policy == "fgd-trace" || policy == "learned-trace";
    config::SchedulerConfig base =
        sim::trace::FragmentationSchedulerConfig(from_trace ? "FGD" : policy);
    sim::trace::OpenbOptions load;
    load.scheduler_name = base.profiles.front().scheduler_name;
    auto workload =
        sim::trace::LoadOpenbTrace(trace_dir + "/openb_node_list_gpu_node.csv",
                                   trace_dir + "/openb_pod_list_" + trace + ".csv", load);
    if (!workload.ok()) {
      std::fprintf(stderr, "error: %s\n", workload.status().ToString().c_str());
      return 1;
    }
    if (from_trace) base = sim::trace::TraceFgdSchedulerConfig(*workload);
    if (policy == "learned-trace") extra["policy"] = "Learned";
    for (config::PluginConfig& pc : base.profiles.front().plugin_config) {
      if (pc.name == "GpuFragmentation" && pc.args.is_object()) {
        for (const auto& kv : extra) pc.args.as_object()[kv.key()] = kv.value();
      }
    }
    for (const std::string& k : Split(refresh)) {
      std::vector<double> unalloc, cpu;
      for (uint64_t seed = seed_lo; seed <= seed_hi; ++seed) {
        config::SchedulerConfig c = base;
        for (config::PluginConfig& pc : c.profiles.front().plugin_config) {
          if (pc.name == "GpuFragmentation" && pc.args.is_object()) {
            pc.args.as_object()["distributionRefreshPods"] = std::atoi(k.c_str());
          }
        }
        sim::trace::FgdOptions opts;
        opts.seed = seed;
        const double c0 = CpuSeconds();
        auto run = sim::trace::RunFgdProtocol(*workload, c, {registry, wall}, opts);
        const double secs = CpuSeconds() - c0;
        if (!run.ok()) {
          std::fprintf(stderr, "error: %s\n", run.status().ToString().c_str());
          return 1;
        }
        const double u = run->result.unallocated_at_100.value_or(-1);
        std::printf("trace %s refresh %s seed %llu: unallocated %.2f %%  %.2f CPU s\n",
                    trace.c_str(), k.c_str(), static_cast<unsigned long long>(seed), u, secs);
        std::fflush(stdout);
        unalloc.push_back(u);
        cpu.push_back(secs);
      }
      std::printf(
          "SUMMARY trace %s refresh %s: median unallocated %.2f %% [%.2f, %.2f], median %.2f CPU "
          "s\n",
          trace.c_str(), k.c_str(), Median(unalloc),
          *std::min_element(unalloc.begin(), unalloc.end()),
          *std::max_element(unalloc.begin(), unalloc.end()), Median(cpu));
      std::fflush(stdout);
    }
  }
  return 0;
}

}  // namespace
}  // namespace gpusched::bench

int main(int argc, char** argv) { return gpusched::bench::Run(argc, argv); }
