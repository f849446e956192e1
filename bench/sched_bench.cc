// SPDX-License-Identifier: Apache-2.0
// gpusched-bench: the macro benchmark. Builds a synthetic mixed-GPU cluster (bench/synthetic.h),
// then schedules every pod in process through the production Scheduler (via sim::Simulator:
// SubmitPod = create + ScheduleOne + bind) with all feasible nodes scored
// (percentageOfNodesToScore 100), and prints pods/s, p50/p99/max per-pod latency (steady_clock
// around each SubmitPod), peak RSS (getrusage) and placement counts.
//
//   gpusched-bench --nodes 5000 --pods 50000 --profile default|fragmentation --seed 42
//                  [--config scheduler-config.yaml] [--repeat 3] [--reuse on|off] [--twins on|off]
//                  [--parallelism P]
//                  [--refresh K] [--owner none|replicaset] [--preemptors P]
//                  [--preemptor-classes like|distinct] [--gang M] [--gang-gpus G]
//                  [--unschedulable U] [--churn E] [--churn-seconds T]
//                  [--churn-relevant-every R] [--hints on|off]
//   gpusched-bench --workload dra [--nodes 500] [--pods 2000] [--seed 42] [--repeat R]
//                  [--waiting-claims W]
//   gpusched-bench --workload dra-mig [--nodes 500] [--pods 2000] [--seed 42] [--repeat R]
//
// --parallelism P: the configuration's `parallelism` (default: the config's, 16): Filter and
// Score fan out over P threads (framework/runtime/parallel.cc); the placement digest is the same
// for every P.
// --reuse off turns the runtime's result reuse across equivalent pods off (same placements, full
// per-node cost: the before/after comparison); --twins off evaluates every node instead of one
// per twin group (framework/runtime/twins.cc; same placements); --refresh K sets the
// fragmentation profile's GpuFragmentation distributionRefreshPods (default: the plugin's default);
// --owner replicaset gives every synthetic pod a ReplicaSet controller ownerReference per template
// (Deployment pods: PodTopologySpread's system default zone/hostname constraints apply,
// ScheduleAnyway).
//
// Pods that do not fit are deleted at once (no retries), so every pod costs one attempt.
//
// --preemptors P: after the pods (priority 0) have filled the cluster, P pods of priority 1000,
// each a copy of one of the workload's GPU pods, arrive one by one; each preempts (PostFilter:
// DefaultPreemption's dry run over the candidate nodes, victims evicted through the sim cluster)
// and binds on its nominated node once its victims are gone. Prints preempting pods/s: P over
// the wall time from the first preemptor's arrival until every one is bound or given up.
// --preemptor-classes like (default): the copies fall into the workload's few GPU pod shapes, as
// a Deployment's or Job's replicas do, so DefaultPreemption's kept per-node results
// (framework::preemption::VictimCache) serve the later ones; distinct: preemptor i gets priority
// 1000 + i, so every one is its own equivalence class and each dry run starts from nothing.
//
// --gang M (after the pods and preemptors): a PodGroup of minMember M and M members of --gang-gpus
// GPUs each (default 8) arrive one by one; the members wait until the last one arrives, then
// the gang cycle places all of them. Prints the time of that last cycle (the gang's placement)
// and whether every member was bound.
//
// --workload dra (issue #23): nodes with ResourceSlices of 8 GPUs and pods with DRA claims,
// scheduled with the default profile (bench/dra.h); the flags above other than --nodes, --pods,
// --seed, --repeat, --config and --profile do not apply. --waiting-claims W adds W unallocated
// ResourceClaims of the same mix that no pod uses: claims waiting for devices, so that
// DynamicResources' lookahead (small clusters) or device pressure is computed for every pod.
// --workload dra-mig (issue #42): the same nodes with their GPUs in MIG mode, published as
// partitionable devices (a counter set per GPU, 14 MIG placements each), and pods asking for one
// MIG partition each (--waiting-claims does not apply). --workload dra-extended (issue #42): the
// whole GPUs of --workload dra, the DeviceClass backing nvidia.com/gpu (KEP-5004), and plain pods
// asking for 1, 2 or 4 nvidia.com/gpu: DynamicResources makes and allocates each pod's claim.
//
// --unschedulable U (last): U pods no node can take now wait while the cluster churns, E events
// per simulated second (--churn, default 20) for T simulated seconds (--churn-seconds, default
// 60), with the events that can let pods in every R simulated seconds (--churn-relevant-every,
// default 10); prints the scheduling attempts, pods bound, attempts per bound pod, attempts/s and
// CPU time of the churn (bench/churn.h). --hints off: every event moves every waiting pod, as
// before queueing hints (the before/after comparison).
#include <sys/resource.h>

#include <algorithm>
#include <boost/json.hpp>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "bench/churn.h"
#include "bench/dra.h"
#include "bench/synthetic.h"
#include "src/api/decode.h"
#include "src/common/clock.h"
#include "src/config/config.h"
#include "src/framework/registry.h"
#include "src/framework/runtime/framework.h"
#include "src/plugins/in_tree_registry.h"
#include "src/sim/simulator.h"
#include "src/sim/workload.h"

namespace gpusched::bench {
namespace {

struct Flags {
  int32_t nodes = 5000;
  int32_t pods = 50000;
  std::string profile = "default";
  std::string config_file;
  uint64_t seed = 42;
  int repeat = 1;
  bool reuse = true;
  bool twins = true;
  int32_t parallelism = 0;           // --parallelism P; 0: the configuration's
  int32_t refresh = 0;               // 0: the plugin's default
  bool replicaset_owner = false;     // --owner replicaset
  int32_t preemptors = 0;            // --preemptors P
  bool distinct_preemptors = false;  // --preemptor-classes distinct
  int32_t gang = 0;                  // --gang M
  int32_t gang_gpus = 8;             // --gang-gpus G
  ChurnFlags churn;                  // --unschedulable U --churn E --churn-seconds T --hints
  bool dra = false;                  // --workload dra|dra-mig
  bool dra_mig = false;              // --workload dra-mig
  bool dra_extended = false;         // --workload dra-extended
  int32_t waiting_claims = 0;        // --waiting-claims W (dra)
  bool nodes_set = false;
  bool pods_set = false;
};

int Usage(const char* msg) {
  std::fprintf(
      stderr,
      "error: %s\nusage: gpusched-bench [--nodes N] [--pods M] "
      "[--profile default|fragmentation] [--config FILE] [--seed S] [--repeat R] "
      "[--reuse on|off] [--parallelism P] [--refresh K] [--owner none|replicaset] [--preemptors P] "
      "[--preemptor-classes like|distinct] [--gang M] [--gang-gpus G] [--unschedulable U] "
      "[--churn E] [--churn-seconds T] [--churn-relevant-every R] [--hints on|off] "
      "[--workload synthetic|dra|dra-mig|dra-extended]\n",
      msg);
  return 2;
}

double Percentile(std::vector<double>& v, double p) {
  if (v.empty()) return 0;
  const size_t k = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

// User + system CPU seconds of this process so far (robust to a shared, loaded machine).
double CpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

double PeakRssMiB() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_maxrss) / 1024.0;  // ru_maxrss is KiB on Linux
}

// The fragmentation-aware profile: the default profile plus the fragmentation score plugin, if
// this build registers one (any plugin whose name contains "Fragmentation").
common::StatusOr<config::SchedulerConfig> ProfileConfig(const Flags& f,
                                                        const framework::Registry& registry) {
  if (!f.config_file.empty()) {
    GPUSCHED_ASSIGN_OR_RETURN(std::string text, sim::ReadFile(f.config_file));
    std::vector<std::string> warnings;
    GPUSCHED_ASSIGN_OR_RETURN(config::SchedulerConfig c,
                              config::ParseSchedulerConfig(text, f.config_file, &warnings));
    c.percentage_of_nodes_to_score = 100;
    return c;
  }
  config::SchedulerConfig c = sim::SimulationDefaultConfig();
  if (f.profile == "default") return c;
  if (f.profile != "fragmentation") {
    return common::InvalidArgumentError("--profile: want default or fragmentation");
  }
  std::string plugin;
  for (const std::string& n : registry.Names()) {
    if (n.find("Fragmentation") != std::string::npos) plugin = n;
  }
  if (plugin.empty()) {
    return common::UnimplementedError(
        "--profile fragmentation: no fragmentation-aware plugin is registered in this build");
  }
  config::Profile& p = c.profiles.front();
  p.plugins.at(config::Point::kMultiPoint)
      .enabled.push_back(config::PluginRef{plugin, 1, p.path + ".plugins.multiPoint.enabled[0]"});
  if (f.refresh > 0) {
    config::PluginConfig pc;
    pc.name = plugin;
    pc.args = boost::json::object{{"distributionRefreshPods", f.refresh}};
    pc.path = p.path + ".pluginConfig[0]";
    p.plugin_config.push_back(std::move(pc));
  }
  return c;
}

// FNV-1a over strings, each followed by a separator.
struct Digest {
  uint64_t value = 1469598103934665603ull;
  void Mix(std::string_view v) {
    for (unsigned char c : v) value = (value ^ c) * 1099511628211ull;
    value = (value ^ 0xffu) * 1099511628211ull;
  }
};

// Every pod's outcome in submission order (node, GPU devices, FitError message), hashed: equal
// digests mean identical placements and diagnoses (compare before/after a change).
uint64_t PlacementDigest(const sim::Simulator& s) {
  Digest d;
  for (const sim::PodOutcome& o : s.outcomes()) {
    d.Mix(o.pod->meta.name);
    d.Mix(o.node);
    for (const auto& g : o.gpu.devices) d.Mix(std::to_string(g));
    d.Mix(o.message);
  }
  return d.value;
}

// Every preemption from `first` on (preemptor, node, victims in order), hashed.
uint64_t PreemptionDigest(const sim::Simulator& s, size_t first) {
  Digest d;
  for (size_t k = first; k < s.preemptions().size(); ++k) {
    const sim::Preemption& p = s.preemptions()[k];
    d.Mix(p.pod);
    d.Mix(p.node);
    for (const std::string& v : p.victims) d.Mix(v);
  }
  return d.value;
}

// The preemption phase (--preemptors): P high-priority copies of the workload's GPU pods.
int RunPreemptors(const Flags& f, const sim::Workload& workload, sim::Simulator& s) {
  std::vector<api::PodPtr> gpu_pods;
  for (const api::PodPtr& p : workload.pods) {
    if (!p->gpu.empty()) gpu_pods.push_back(p);
  }
  if (gpu_pods.empty()) return 0;
  const size_t before = s.preemptions().size();
  const double cpu0 = CpuSeconds();
  const auto start = std::chrono::steady_clock::now();
  for (int32_t i = 0; i < f.preemptors; ++i) {
    auto pod = std::make_shared<api::Pod>(*gpu_pods[static_cast<size_t>(i) % gpu_pods.size()]);
    pod->meta.name = "preemptor-" + std::to_string(i);
    pod->meta.uid.clear();
    pod->priority = 1000 + (f.distinct_preemptors ? i : 0);
    if (auto r = s.SubmitPod(pod); !r.ok()) {
      std::fprintf(stderr, "error: %s\n", r.status().ToString().c_str());
      return 1;
    }
  }
  if (common::Status st = s.Settle(); !st.ok()) {
    std::fprintf(stderr, "error: %s\n", st.ToString().c_str());
    return 1;
  }
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double cpu = CpuSeconds() - cpu0;
  int64_t bound = 0;
  int64_t victims = 0;
  for (const sim::PodOutcome& o : s.outcomes()) {
    if (o.pod->meta.name.rfind("preemptor-", 0) == 0 && o.state == sim::PodState::kScheduled) {
      ++bound;
    }
  }
  for (size_t k = before; k < s.preemptions().size(); ++k) {
    victims += static_cast<int64_t>(s.preemptions()[k].victims.size());
  }
  std::printf(
      "  preemption: %.0f preempting pods/s (%d pods in %.3f s; %.3f CPU s = %.0f per CPU s): "
      "%lld bound, %zu preemptions, %lld victims (%s classes)\n",
      static_cast<double>(f.preemptors) / secs, f.preemptors, secs, cpu,
      static_cast<double>(f.preemptors) / cpu, static_cast<long long>(bound),
      s.preemptions().size() - before, static_cast<long long>(victims),
      f.distinct_preemptors ? "distinct" : "like");
  std::printf("  preemption digest: %016llx\n",
              static_cast<unsigned long long>(PreemptionDigest(s, before)));
  return 0;
}

// The gang phase (--gang): one gang of f.gang members, placed when its last member arrives.
int RunGang(const Flags& f, sim::Simulator& s) {
  s.SetRetry(true);  // members wait for each other (the pod phase's FGD protocol deletes them)
  auto group = std::make_shared<api::PodGroup>();
  group->api = api::GangApi::kPodGroup;
  group->namespace_ = "bench";
  group->name = "gang";
  group->min_member = f.gang;
  if (common::Status st = s.cluster().AddPodGroup(group); !st.ok()) {
    std::fprintf(stderr, "error: %s\n", st.ToString().c_str());
    return 1;
  }
  double last_ms = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int32_t i = 0; i < f.gang; ++i) {
    const std::string gpus = std::to_string(f.gang_gpus);
    auto decoded = api::ParseJson(
        R"({"apiVersion":"v1","kind":"Pod","metadata":{"namespace":"bench","name":"gang-)" +
            std::to_string(i) +
            R"(","labels":{"scheduling.x-k8s.io/pod-group":"gang"}},"spec":{)"
            R"("schedulerName":"gpu-scheduler","tolerations":[{"key":"nvidia.com/gpu",)"
            R"("operator":"Exists","effect":"NoSchedule"}],"containers":[{"name":"main",)"
            R"("resources":{"requests":{"cpu":"1","memory":"8Gi"},"limits":{"nvidia.com/gpu":")" +
            gpus + R"("}}}]}})",
        "gang pod");
    common::StatusOr<api::Pod> member =
        decoded.ok() ? api::DecodePod(*decoded) : common::StatusOr<api::Pod>(decoded.status());
    if (!member.ok()) {
      std::fprintf(stderr, "error: %s\n", member.status().ToString().c_str());
      return 1;
    }
    auto pod = std::make_shared<const api::Pod>(std::move(member).value());
    const auto t = std::chrono::steady_clock::now();
    if (auto r = s.SubmitPod(pod); !r.ok()) {
      std::fprintf(stderr, "error: %s\n", r.status().ToString().c_str());
      return 1;
    }
    last_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
  }
  const double total_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  int32_t bound = 0;
  std::set<std::string> nodes;
  std::string why;  // the first member not bound: its state and message
  for (const sim::PodOutcome& o : s.outcomes()) {
    if (o.pod->meta.name.rfind("gang-", 0) != 0) continue;
    if (o.state == sim::PodState::kScheduled) {
      ++bound;
      nodes.insert(o.node);
    } else if (why.empty()) {
      why = o.pod->meta.name + " " + std::string(sim::PodStateName(o.state)) + ": " + o.message;
    }
  }
  if (!why.empty()) std::printf("  gang: not bound: %s\n", why.c_str());
  std::printf(
      "  gang: %d members x %d GPUs: %d bound on %zu nodes; the gang cycle that placed them took "
      "%.2f ms (%.2f ms for all %d arrivals)\n",
      f.gang, f.gang_gpus, bound, nodes.size(), last_ms, total_ms, f.gang);
  return 0;
}

int Run(const Flags& f) {
  framework::Registry registry;
  if (common::Status s = plugins::RegisterInTreePlugins(registry); !s.ok()) {
    std::fprintf(stderr, "error: %s\n", s.ToString().c_str());
    return 1;
  }
  auto config = ProfileConfig(f, registry);
  if (!config.ok()) {
    std::fprintf(stderr, "error: %s\n", config.status().ToString().c_str());
    return 2;
  }
  if (f.parallelism > 0) config->parallelism = f.parallelism;
  if (f.dra) {
    if (f.dra_mig && f.waiting_claims > 0) {
      return gpusched::bench::Usage("--waiting-claims: not with --workload dra-mig");
    }
    DraFlags d;
    d.nodes = f.nodes_set ? f.nodes : d.nodes;
    d.pods = f.pods_set ? f.pods : d.pods;
    d.seed = f.seed;
    d.repeat = f.repeat;
    d.waiting_claims = f.waiting_claims;
    d.mig = f.dra_mig;
    d.extended = f.dra_extended;
    return RunDra(d, *config, registry);
  }
  const auto t_gen = std::chrono::steady_clock::now();
  auto workload = SyntheticWorkload(f.nodes, f.pods, f.seed, f.replicaset_owner);
  if (!workload.ok()) {
    std::fprintf(stderr, "error: %s\n", workload.status().ToString().c_str());
    return 1;
  }
  const double gen_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t_gen).count();
  std::printf(
      "cluster: %d nodes, %d pods, profile %s, owner %s, seed %llu, parallelism %d "
      "(generated+decoded in %.2f s)\n",
      f.nodes, f.pods, f.profile.c_str(), f.replicaset_owner ? "replicaset" : "none",
      static_cast<unsigned long long>(f.seed), config->parallelism, gen_s);

  for (int rep = 0; rep < f.repeat; ++rep) {
    common::SystemClock wall;
    sim::SimOptions opts;
    opts.seed = f.seed;
    opts.retry = false;
    auto simulator = sim::Simulator::Create(*config, {registry, wall}, opts);
    if (!simulator.ok()) {
      std::fprintf(stderr, "error: %s\n", simulator.status().ToString().c_str());
      return 1;
    }
    sim::Simulator& s = **simulator;
    framework::runtime::Framework* fw =
        s.scheduler().FrameworkFor(config->profiles.front().scheduler_name);
    if (fw != nullptr) {
      fw->SetResultReuse(f.reuse);
      fw->SetTwinNodes(f.twins);
    }
    for (const auto& n : workload->nodes) {
      if (common::Status st = s.AddNode(n); !st.ok()) {
        std::fprintf(stderr, "error: %s\n", st.ToString().c_str());
        return 1;
      }
    }
    std::vector<double> lat_us;
    lat_us.reserve(workload->pods.size());
    const double cpu0 = CpuSeconds();
    const auto start = std::chrono::steady_clock::now();
    for (const auto& p : workload->pods) {
      const auto t0 = std::chrono::steady_clock::now();
      auto r = s.SubmitPod(p);
      const auto t1 = std::chrono::steady_clock::now();
      if (!r.ok()) {
        std::fprintf(stderr, "error: %s\n", r.status().ToString().c_str());
        return 1;
      }
      lat_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    }
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double cpu = CpuSeconds() - cpu0;
    const sim::SimStats st = s.Stats();
    const double mean = lat_us.empty() ? 0 : [&] {
      double t = 0;
      for (double x : lat_us) t += x;
      return t;
    }() / static_cast<double>(lat_us.size());
    const double p50 = Percentile(lat_us, 0.50);
    const double p99 = Percentile(lat_us, 0.99);
    const double mx = lat_us.empty() ? 0 : *std::max_element(lat_us.begin(), lat_us.end());
    std::printf(
        "run %d: %.0f pods/s  (%lld pods in %.3f s; %.3f CPU s = %.0f pods per CPU s)  latency us: "
        "mean %.1f p50 %.1f p99 %.1f max "
        "%.1f  scheduled %lld unschedulable %lld errors %lld  peak RSS %.0f MiB\n",
        rep + 1, static_cast<double>(lat_us.size()) / secs, static_cast<long long>(lat_us.size()),
        secs, cpu, static_cast<double>(lat_us.size()) / cpu, mean, p50, p99, mx,
        static_cast<long long>(st.scheduled), static_cast<long long>(st.unschedulable),
        static_cast<long long>(st.errors), PeakRssMiB());
    if (fw != nullptr) {
      const auto& rs = fw->result_reuse_stats();
      std::printf(
          "  result reuse %s: filter %llu reused / %llu evaluated, score %llu reused / %llu "
          "evaluated\n",
          f.reuse ? "on" : "off", static_cast<unsigned long long>(rs.filter_reused),
          static_cast<unsigned long long>(rs.filter_evaluated),
          static_cast<unsigned long long>(rs.score_reused),
          static_cast<unsigned long long>(rs.score_evaluated));
      const auto& ts = fw->twin_stats();
      std::printf("  twin nodes %s: filter %llu shared, score %llu shared\n",
                  f.twins ? "on" : "off", static_cast<unsigned long long>(ts.filter_shared),
                  static_cast<unsigned long long>(ts.score_shared));
      const auto& ps = fw->parallel_stats();
      std::printf("  parallel: %llu nodes filtered, %llu scores computed on %d threads\n",
                  static_cast<unsigned long long>(ps.filtered),
                  static_cast<unsigned long long>(ps.scored), config->parallelism);
    }
    if (rep == 0) {
      std::map<std::string, int64_t> reasons;
      for (const sim::PodOutcome& o : s.outcomes()) {
        for (const std::string& r : o.reasons) ++reasons[r];
      }
      for (const auto& [r, n] : reasons)
        std::printf("  unschedulable reason: %lld x %s\n", static_cast<long long>(n), r.c_str());
    }
    // Every pod's outcome in submission order (node, GPU devices, FitError message), hashed:
    // equal digests mean identical placements and diagnoses (compare before/after a change).
    std::printf("  placement digest: %016llx (%zu pods)\n",
                static_cast<unsigned long long>(PlacementDigest(s)), s.outcomes().size());
    if (f.preemptors > 0) {
      if (int rc = RunPreemptors(f, *workload, s); rc != 0) return rc;
    }
    if (f.gang > 0) {
      if (int rc = RunGang(f, s); rc != 0) return rc;
    }
    if (f.churn.unschedulable > 0) {
      if (int rc = RunChurn(f.churn, s); rc != 0) return rc;
    }
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace
}  // namespace gpusched::bench

int main(int argc, char** argv) {
  gpusched::bench::Flags f;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--help" || a == "-h") {
      std::printf(
          "usage: gpusched-bench [--nodes N] [--pods M] [--profile default|fragmentation] "
          "[--config FILE] [--seed S] [--repeat R] [--reuse on|off] [--twins on|off] "
          "[--parallelism P] [--refresh K] "
          "[--owner none|replicaset] [--preemptors P] [--preemptor-classes like|distinct] "
          "[--gang M] [--gang-gpus G] [--unschedulable U] [--churn E] [--churn-seconds T] "
          "[--churn-relevant-every R] [--hints on|off] [--workload "
          "synthetic|dra|dra-mig|dra-extended]\n");
      return 0;
    }
    if (a != "--nodes" && a != "--pods" && a != "--profile" && a != "--config" && a != "--seed" &&
        a != "--repeat" && a != "--reuse" && a != "--twins" && a != "--refresh" && a != "--owner" &&
        a != "--parallelism" && a != "--preemptors" && a != "--preemptor-classes" &&
        a != "--gang" && a != "--gang-gpus" && a != "--unschedulable" && a != "--churn" &&
        a != "--churn-seconds" && a != "--hints" && a != "--churn-relevant-every" &&
        a != "--workload" && a != "--waiting-claims") {
      return gpusched::bench::Usage("unknown flag");
    }
    if (i + 1 >= argc) return gpusched::bench::Usage("flag needs a value");
    const char* v = argv[++i];
    if (a == "--nodes") {
      f.nodes = std::atoi(v);
      f.nodes_set = true;
    } else if (a == "--pods") {
      f.pods = std::atoi(v);
      f.pods_set = true;
    } else if (a == "--workload") {
      const std::string_view w = v;
      if (w != "synthetic" && w != "dra" && w != "dra-mig" && w != "dra-extended") {
        return gpusched::bench::Usage("--workload: want synthetic, dra, dra-mig or dra-extended");
      }
      f.dra = w != "synthetic";
      f.dra_mig = w == "dra-mig";
      f.dra_extended = w == "dra-extended";
    } else if (a == "--profile") {
      f.profile = v;
    } else if (a == "--config") {
      f.config_file = v;
    } else if (a == "--seed") {
      f.seed = std::strtoull(v, nullptr, 10);
    } else if (a == "--reuse") {
      if (std::strcmp(v, "on") != 0 && std::strcmp(v, "off") != 0) {
        return gpusched::bench::Usage("--reuse: want on or off");
      }
      f.reuse = std::strcmp(v, "on") == 0;
    } else if (a == "--twins") {
      if (std::strcmp(v, "on") != 0 && std::strcmp(v, "off") != 0) {
        return gpusched::bench::Usage("--twins: want on or off");
      }
      f.twins = std::strcmp(v, "on") == 0;
    } else if (a == "--parallelism") {
      f.parallelism = std::atoi(v);
      if (f.parallelism < 1) return gpusched::bench::Usage("--parallelism: want >= 1");
    } else if (a == "--owner") {
      if (std::strcmp(v, "none") != 0 && std::strcmp(v, "replicaset") != 0) {
        return gpusched::bench::Usage("--owner: want none or replicaset");
      }
      f.replicaset_owner = std::strcmp(v, "replicaset") == 0;
    } else if (a == "--preemptors") {
      f.preemptors = std::atoi(v);
      if (f.preemptors < 0) return gpusched::bench::Usage("--preemptors: want >= 0");
    } else if (a == "--waiting-claims") {
      f.waiting_claims = std::atoi(v);
      if (f.waiting_claims < 0) return gpusched::bench::Usage("--waiting-claims: want >= 0");
    } else if (a == "--gang") {
      f.gang = std::atoi(v);
      if (f.gang < 0) return gpusched::bench::Usage("--gang: want >= 0");
    } else if (a == "--gang-gpus") {
      f.gang_gpus = std::atoi(v);
      if (f.gang_gpus < 0 || f.gang_gpus > 16) return gpusched::bench::Usage("--gang-gpus: 0..16");
    } else if (a == "--preemptor-classes") {
      if (std::strcmp(v, "like") != 0 && std::strcmp(v, "distinct") != 0) {
        return gpusched::bench::Usage("--preemptor-classes: want like or distinct");
      }
      f.distinct_preemptors = std::strcmp(v, "distinct") == 0;
    } else if (a == "--unschedulable") {
      f.churn.unschedulable = std::max(0, std::atoi(v));
    } else if (a == "--churn") {
      f.churn.events = std::max(0, std::atoi(v));
    } else if (a == "--churn-relevant-every") {
      f.churn.relevant_every = std::max(1, std::atoi(v));
    } else if (a == "--churn-seconds") {
      f.churn.seconds = std::max(1, std::atoi(v));
    } else if (a == "--hints") {
      if (std::strcmp(v, "on") != 0 && std::strcmp(v, "off") != 0) {
        return gpusched::bench::Usage("--hints: want on or off");
      }
      f.churn.hints = std::strcmp(v, "on") == 0;
    } else if (a == "--refresh") {
      f.refresh = std::atoi(v);
      if (f.refresh < 1 || f.refresh > 100000)
        return gpusched::bench::Usage("--refresh: want 1..100000");
    } else {
      f.repeat = std::max(1, std::atoi(v));
    }
  }
  if (f.nodes <= 0 || f.pods < 0) return gpusched::bench::Usage("--nodes must be > 0");
  f.churn.seed = f.seed;
  return gpusched::bench::Run(f);
}
