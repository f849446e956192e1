// SPDX-License-Identifier: Apache-2.0
// The objects are generated as JSON manifests and read by the simulator's manifest reader (the
// production decoders), as synthetic.cc does; only SubmitPod is timed.
#include "bench/dra.h"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "src/common/clock.h"
#include "src/sim/simulator.h"
#include "src/sim/workload.h"

namespace gpusched::bench {
namespace {

constexpr std::string_view kDriver = "gpu.nvidia.com";
constexpr std::string_view kH100 = "NVIDIA H100 80GB HBM3";
constexpr std::string_view kA100 = "NVIDIA A100-SXM4-80GB";

double CpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

double PeakRssMiB() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_maxrss) / 1024.0;
}

std::string Node(int32_t i) {
  const std::string name = "node-" + std::to_string(i);
  return R"({"apiVersion":"v1","kind":"Node","metadata":{"name":")" + name +
         R"(","labels":{"kubernetes.io/hostname":")" + name +
         R"(","node.kubernetes.io/instance-type":")" +
         (i % 2 == 0 ? "p5.48xlarge" : "p4de.24xlarge") +
         R"("}},"status":{"allocatable":{"cpu":"192","memory":"2Ti","pods":"110"}}})";
}

// 8 GPUs as NVIDIA's DRA driver (k8s-dra-driver-gpu) publishes them; two NVLink islands of 4.
std::string Slice(int32_t i) {
  const std::string node = "node-" + std::to_string(i);
  const bool h100 = i % 2 == 0;
  std::string devices;
  for (int g = 0; g < 8; ++g) {
    if (g > 0) devices += ",";
    devices += R"({"name":"gpu-)" + std::to_string(g) + R"(","attributes":{"index":{"int":)" +
               std::to_string(g) + R"(},"uuid":{"string":"GPU-)" + node + "-" + std::to_string(g) +
               R"("},"productName":{"string":")" + std::string(h100 ? kH100 : kA100) +
               R"("},"architecture":{"string":")" + (h100 ? "Hopper" : "Ampere") +
               R"("},"driverVersion":{"version":"550.54.15"},"cliqueId":{"string":")" + node + "." +
               std::to_string(g / 4) + R"("}},"capacity":{"memory":{"value":"80Gi"}}})";
  }
  return R"({"apiVersion":"resource.k8s.io/v1","kind":"ResourceSlice","metadata":{"name":")" +
         node + R"(-gpu"},"spec":{"driver":")" + std::string(kDriver) + R"(","nodeName":")" + node +
         R"(","pool":{"name":")" + node +
         R"(","generation":1,"resourceSliceCount":1},"devices":[)" + devices + "]}}";
}

// The MIG profiles of an 80 GB A100/H100 and where each may start (memory slices 0-7; NVIDIA's
// MIG user guide): compute slices, memory, memory slices taken.
struct MigProfile {
  std::string_view name;
  int compute;
  int memory_gi;
  int slices;
  std::vector<int> starts;
};

const std::vector<MigProfile>& MigProfiles() {
  static const std::vector<MigProfile> profiles = {
      {"7g.80gb", 7, 80, 8, {0}},
      {"4g.40gb", 4, 40, 4, {0}},
      {"3g.40gb", 3, 40, 4, {0, 4}},
      {"2g.20gb", 2, 20, 2, {0, 2, 4}},
      {"1g.10gb", 1, 10, 1, {0, 1, 2, 3, 4, 5, 6}},
  };
  return profiles;
}

std::string CounterValues(int compute, int memory_gi, int first_slice, int slices) {
  std::string c = R"("compute":{"value":")" + std::to_string(compute) +
                  R"("},"memory":{"value":")" + std::to_string(memory_gi) + R"(Gi"})";
  for (int m = first_slice; m < first_slice + slices; ++m) {
    c += R"(,"memory-slice-)" + std::to_string(m) + R"(":{"value":"1"})";
  }
  return c;
}

// The same 8 GPUs in MIG mode, as a partitionable device (KEP-4815) the way
// docs/examples/dra/mig.yaml publishes one: a slice with one counter set per GPU (7 compute
// slices, 80Gi, memory slices 0-7) and a slice with every MIG placement of every GPU (14 per GPU,
// 112 devices), each drawing on its GPU's counters.
std::string MigSlices(int32_t i) {
  const std::string node = "node-" + std::to_string(i);
  const bool h100 = i % 2 == 0;
  const std::string pool =
      R"(","pool":{"name":")" + node + R"(","generation":1,"resourceSliceCount":2},)";
  std::string sets;
  std::string devices;
  for (int g = 0; g < 8; ++g) {
    const std::string set = "gpu-" + std::to_string(g) + "-counters";
    if (g > 0) sets += ",";
    sets += R"({"name":")" + set + R"(","counters":{)" + CounterValues(7, 80, 0, 8) + "}}";
    for (const MigProfile& p : MigProfiles()) {
      for (int start : p.starts) {
        if (!devices.empty()) devices += ",";
        devices += R"({"name":"gpu-)" + std::to_string(g) + "-mig-" +
                   std::string(p.name.substr(0, 2)) + "-" + std::to_string(start) +
                   R"(","attributes":{"type":{"string":"mig"},"profile":{"string":")" +
                   std::string(p.name) + R"("},"parentIndex":{"int":)" + std::to_string(g) +
                   R"(},"productName":{"string":")" + std::string(h100 ? kH100 : kA100) +
                   R"("}},"capacity":{"memory":{"value":")" + std::to_string(p.memory_gi) +
                   R"(Gi"}},"consumesCounters":[{"counterSet":")" + set + R"(","counters":{)" +
                   CounterValues(p.compute, p.memory_gi, start, p.slices) + "}}]}";
      }
    }
  }
  const std::string head = R"({"apiVersion":"resource.k8s.io/v1","kind":"ResourceSlice",)"
                           R"("metadata":{"name":")" +
                           node;
  const std::string spec =
      R"("},"spec":{"driver":")" + std::string(kDriver) + R"(","nodeName":")" + node + pool;
  return head + "-counters" + spec + R"("sharedCounters":[)" + sets + "]}}," + head +
         "-partitions" + spec + R"("devices":[)" + devices + "]}}";
}

// A MIG template: one partition of `profile`.
std::string MigTemplate(std::string_view profile) {
  return R"({"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaimTemplate","metadata":{)"
         R"("name":"mig-)" +
         std::string(profile) +
         R"(","namespace":"bench"},"spec":{"spec":{"devices":{"requests":[{"name":"gpu",)"
         R"("exactly":{"deviceClassName":"mig.nvidia.com","selectors":[{"cel":{"expression":)"
         R"("device.attributes['gpu.nvidia.com'].profile == ')" +
         std::string(profile) + R"('"}}]}}]}}}})";
}

// A claim spec's "devices": `count` GPUs, of `product` when not empty, in one clique when more
// than one.
std::string ClaimDevices(int count, std::string_view product) {
  std::string exactly =
      R"({"deviceClassName":")" + std::string(kDriver) + R"(","count":)" + std::to_string(count);
  if (!product.empty()) {
    exactly += R"(,"selectors":[{"cel":{"expression":"device.attributes['gpu.nvidia.com'].)"
               R"(productName == ')" +
               std::string(product) + R"('"}}])";
  }
  exactly += "}";
  std::string devices = R"({"requests":[{"name":"gpu","exactly":)" + exactly + "}]";
  if (count > 1) devices += R"(,"constraints":[{"matchAttribute":"gpu.nvidia.com/cliqueId"}])";
  return devices + "}";
}

std::string Template(std::string_view name, int count, std::string_view product) {
  return R"({"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaimTemplate","metadata":{)"
         R"("name":")" +
         std::string(name) + R"(","namespace":"bench"},"spec":{"spec":{"devices":)" +
         ClaimDevices(count, product) + "}}}";
}

std::string WaitingClaim(int32_t i, int count, std::string_view product) {
  return R"({"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim","metadata":{)"
         R"("name":"waiting-)" +
         std::to_string(i) + R"(","namespace":"bench"},"spec":{"devices":)" +
         ClaimDevices(count, product) + "}}";
}

std::string Pod(int32_t i, std::string_view tmpl) {
  return R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p-)" + std::to_string(i) +
         R"(","namespace":"bench"},"spec":{"containers":[{"name":"main","resources":{)"
         R"("requests":{"cpu":"2","memory":"8Gi"},"claims":[{"name":"gpu"}]}}],)"
         R"("resourceClaims":[{"name":"gpu","resourceClaimTemplateName":")" +
         std::string(tmpl) + R"("}]}})";
}

// A pod asking for `gpus` nvidia.com/gpu and no claim (--workload dra-extended).
std::string PlainPod(int32_t i, int gpus) {
  return R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p-)" + std::to_string(i) +
         R"(","namespace":"bench"},"spec":{"containers":[{"name":"main","resources":{)"
         R"("requests":{"cpu":"2","memory":"8Gi"},"limits":{"nvidia.com/gpu":")" +
         std::to_string(gpus) + R"("}}}]}})";
}

uint64_t NextDraw(uint64_t& state) {
  state = state * 6364136223846793005ULL + 1442695040888963407ULL;
  return (state >> 33) % 100;
}

// --mig: the MIG class and templates, nodes with their partitionable GPUs, pods asking for one
// partition each: 1g.10gb 40 %, 2g.20gb 20 %, 3g.40gb 20 %, 4g.40gb 10 %, 7g.80gb 10 %.
std::string MigObjects(const DraFlags& f) {
  std::string text =
      R"({"apiVersion":"resource.k8s.io/v1","kind":"DeviceClass","metadata":{"name":)"
      R"("mig.nvidia.com"},"spec":{"selectors":[{"cel":{"expression":"device.driver == )"
      R"('gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig'"}}]}})";
  for (const MigProfile& p : MigProfiles()) text += "," + MigTemplate(p.name);
  for (int32_t i = 0; i < f.nodes; ++i) text += "," + Node(i) + "," + MigSlices(i);
  uint64_t state = f.seed * 6364136223846793005ULL + 1442695040888963407ULL;
  for (int32_t i = 0; i < f.pods; ++i) {
    const uint64_t r = NextDraw(state);
    const std::string_view profile = r < 40   ? "1g.10gb"
                                     : r < 60 ? "2g.20gb"
                                     : r < 80 ? "3g.40gb"
                                     : r < 90 ? "4g.40gb"
                                              : "7g.80gb";
    text += "," + Pod(i, "mig-" + std::string(profile));
  }
  return text;
}

// Whole GPUs: the DeviceClass, templates, nodes with their slices, the waiting claims and the
// pods.
std::string GpuObjects(const DraFlags& f) {
  std::string text =
      R"({"apiVersion":"resource.k8s.io/v1","kind":"DeviceClass","metadata":{"name":")" +
      std::string(kDriver) +
      R"("},"spec":{"selectors":[{"cel":{"expression":"device.driver == 'gpu.nvidia.com'"}}])" +
      (f.extended ? R"(,"extendedResourceName":"nvidia.com/gpu"}})" : "}}");
  text += "," + Template("h100-1", 1, kH100) + "," + Template("a100-1", 1, kA100) + "," +
          Template("gpu-2", 2, "") + "," + Template("gpu-4", 4, "");
  for (int32_t i = 0; i < f.nodes; ++i) text += "," + Node(i) + "," + Slice(i);
  uint64_t state = f.seed * 6364136223846793005ULL + 1442695040888963407ULL;
  for (int32_t i = 0; i < f.waiting_claims; ++i) {
    const uint64_t r = NextDraw(state);
    text += "," + (r < 30   ? WaitingClaim(i, 1, kH100)
                   : r < 60 ? WaitingClaim(i, 1, kA100)
                   : r < 85 ? WaitingClaim(i, 2, "")
                            : WaitingClaim(i, 4, ""));
  }
  for (int32_t i = 0; i < f.pods; ++i) {
    const uint64_t r = NextDraw(state);
    if (f.extended) {
      text += "," + PlainPod(i, r < 60 ? 1 : r < 85 ? 2 : 4);
      continue;
    }
    const char* tmpl = r < 30 ? "h100-1" : r < 60 ? "a100-1" : r < 85 ? "gpu-2" : "gpu-4";
    text += "," + Pod(i, tmpl);
  }
  return text;
}

// The workload (the mix drawn with a 64-bit LCG from `seed`), through the manifest reader.
common::StatusOr<sim::Workload> DraWorkload(const DraFlags& f) {
  const std::string text = "[" + (f.mig ? MigObjects(f) : GpuObjects(f)) + "]";
  sim::Workload w;
  GPUSCHED_RETURN_IF_ERROR(sim::AppendManifests(text, "dra-bench", w));
  if (!w.rejected.empty()) return common::InternalError(w.rejected.front().ToString());
  return w;
}

double Percentile(std::vector<double>& v, double p) {
  if (v.empty()) return 0;
  const size_t k = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

}  // namespace

int RunDra(const DraFlags& f, const config::SchedulerConfig& config,
           const framework::Registry& registry) {
  const auto t_gen = std::chrono::steady_clock::now();
  common::StatusOr<sim::Workload> workload = DraWorkload(f);
  if (!workload.ok()) {
    std::fprintf(stderr, "error: %s\n", workload.status().ToString().c_str());
    return 1;
  }
  const double gen_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t_gen).count();
  if (f.mig) {
    std::printf(
        "dra --mig: %d nodes x 8 GPUs in MIG mode (8 counter sets, 112 partitions per node), %d "
        "pods with one partition each (1g.10gb 40 %%, 2g.20gb 20 %%, 3g.40gb 20 %%, 4g.40gb 10 "
        "%%, 7g.80gb 10 %%), seed %llu (generated+decoded in %.2f s)\n",
        f.nodes, f.pods, static_cast<unsigned long long>(f.seed), gen_s);
  } else if (f.extended) {
    std::printf(
        "dra --extended: %d nodes x 8 GPUs (ResourceSlices; the class backs nvidia.com/gpu), %d "
        "plain pods asking for nvidia.com/gpu (1 60 %%, 2 25 %%, 4 15 %%), %d waiting claims, "
        "seed %llu (generated+decoded in %.2f s)\n",
        f.nodes, f.pods, f.waiting_claims, static_cast<unsigned long long>(f.seed), gen_s);
  } else {
    std::printf(
        "dra: %d nodes x 8 GPUs (ResourceSlices), %d pods with one template claim each (1 GPU by "
        "product name 60 %%, 2 GPUs 25 %%, 4 GPUs 15 %%; matchAttribute cliqueId), %d waiting "
        "claims, seed %llu (generated+decoded in %.2f s)\n",
        f.nodes, f.pods, f.waiting_claims, static_cast<unsigned long long>(f.seed), gen_s);
  }
  for (int rep = 0; rep < f.repeat; ++rep) {
    common::SystemClock wall;
    sim::SimOptions opts;
    opts.seed = f.seed;
    opts.retry = false;
    auto simulator = sim::Simulator::Create(config, {registry, wall}, opts);
    if (!simulator.ok()) {
      std::fprintf(stderr, "error: %s\n", simulator.status().ToString().c_str());
      return 1;
    }
    sim::Simulator& s = **simulator;
    for (const sim::DraObject& o : workload->dra) s.cluster().AddDra(o);
    for (const api::NodePtr& n : workload->nodes) {
      if (common::Status st = s.AddNode(n); !st.ok()) {
        std::fprintf(stderr, "error: %s\n", st.ToString().c_str());
        return 1;
      }
    }
    std::vector<double> lat_us;
    lat_us.reserve(workload->pods.size());
    const double cpu0 = CpuSeconds();
    const auto start = std::chrono::steady_clock::now();
    for (const api::PodPtr& p : workload->pods) {
      const auto t0 = std::chrono::steady_clock::now();
      auto r = s.SubmitPod(p);
      lat_us.push_back(
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
      if (!r.ok()) {
        std::fprintf(stderr, "error: %s\n", r.status().ToString().c_str());
        return 1;
      }
    }
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double cpu = CpuSeconds() - cpu0;
    const sim::SimStats st = s.Stats();
    double mean = 0;
    for (double x : lat_us) mean += x;
    mean /= std::max<double>(1, static_cast<double>(lat_us.size()));
    const double p50 = Percentile(lat_us, 0.5);
    const double p99 = Percentile(lat_us, 0.99);
    // The placement: claims allocated, their devices on the pod's node, a digest of every
    // claim's devices (FNV-1a, by claim name).
    int64_t allocated = 0;
    int64_t devices = 0;
    int64_t elsewhere = 0;  // allocated on another node than the pod's (must be 0)
    uint64_t digest = 1469598103934665603ULL;
    auto mix = [&digest](std::string_view v) {
      for (unsigned char c : v) digest = (digest ^ c) * 1099511628211ULL;
      digest = (digest ^ 0xffU) * 1099511628211ULL;
    };
    for (const api::ResourceClaimPtr& c : s.cluster().Claims()) {
      if (!c->allocation) continue;
      ++allocated;
      mix(c->meta.name);
      for (const api::DeviceResult& d : c->allocation->devices) {
        ++devices;
        mix(d.pool);
        mix(d.device);
        if (c->reserved_for.empty()) continue;
        api::PodPtr pod = s.cluster().GetPod(c->reserved_for.front().uid);
        if (pod == nullptr || pod->node_name != d.pool) ++elsewhere;
      }
    }
    std::printf(
        "run %d: %.0f pods/s  (%zu pods in %.3f s; %.3f CPU s = %.0f pods per CPU s)  latency us: "
        "mean %.1f p50 %.1f p99 %.1f  scheduled %lld unschedulable %lld errors %lld  claims "
        "allocated %lld (%lld devices of %d %s)  peak RSS %.0f MiB\n",
        rep + 1, static_cast<double>(lat_us.size()) / secs, lat_us.size(), secs, cpu,
        static_cast<double>(lat_us.size()) / cpu, mean, p50, p99,
        static_cast<long long>(st.scheduled), static_cast<long long>(st.unschedulable),
        static_cast<long long>(st.errors), static_cast<long long>(allocated),
        static_cast<long long>(devices), f.nodes * (f.mig ? 112 : 8), f.mig ? "partitions" : "GPUs",
        PeakRssMiB());
    if (elsewhere > 0) {
      std::printf("  error: %lld devices allocated on another node than their pod's\n",
                  static_cast<long long>(elsewhere));
    }
    if (rep == 0) {
      std::map<std::string, int64_t> reasons;
      for (const sim::PodOutcome& o : s.outcomes()) {
        for (const std::string& r : o.reasons) ++reasons[r];
      }
      for (const auto& [r, n] : reasons) {
        std::printf("  unschedulable reason: %lld x %s\n", static_cast<long long>(n), r.c_str());
      }
    }
    std::printf("  claim digest: %016llx (%lld claims)\n", static_cast<unsigned long long>(digest),
                static_cast<long long>(allocated));
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace gpusched::bench
