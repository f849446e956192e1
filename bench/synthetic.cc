// SPDX-License-Identifier: Apache-2.0
#include "bench/synthetic.h"

#include <cstddef>
#include <string>
#include <string_view>

#include "src/common/random.h"

namespace gpusched::bench {
namespace {

struct Group {
  const char* instance_type;
  int weight;  // share of the nodes, out of kTotalWeight
  int vcpu;
  int memory_gi;
  int max_pods;
  int gpus;
  int dialect;  // 0 none, 1 GFD, 2 seed
  const char* product;
  int gpu_memory_mib;
};

// Proportions of the built-in example (48 nodes) plus 24 larger CPU-only nodes per 72, so the
// (untainted) CPU nodes can hold the CPU pods.
constexpr Group kGroups[] = {
    {"p4d.24xlarge", 6, 96, 1152, 110, 8, 1, "NVIDIA-A100-SXM4-40GB", 40960},
    {"p3.8xlarge", 6, 32, 244, 110, 4, 2, "V100-SXM2-16GB", 16384},
    {"p3.2xlarge", 6, 8, 61, 58, 1, 2, "V100-SXM2-16GB", 16384},
    {"g4dn.12xlarge", 6, 48, 192, 110, 4, 1, "Tesla-T4", 15360},
    {"g4dn.xlarge", 9, 4, 16, 29, 1, 1, "Tesla-T4", 15360},
    {"g5.12xlarge", 6, 48, 192, 110, 4, 2, "A10G", 23028},
    {"m5.4xlarge", 9, 16, 64, 110, 0, 0, "", 0},
    {"m5.12xlarge", 24, 48, 192, 110, 0, 0, "", 0},
};
constexpr int kTotalWeight = 72;
constexpr const char* kZones[] = {"us-east-1a", "us-east-1b", "us-east-1c"};

void Label(std::string& out, std::string_view k, std::string_view v) {
  out += '"';
  out += k;
  out += "\":\"";
  out += v;
  out += "\",";
}

std::string NodeJson(const Group& g, int index, const char* zone) {
  const std::string name = "node-" + std::to_string(index);
  std::string s =
      R"({"apiVersion":"v1","kind":"Node","metadata":{"name":")" + name + R"(","labels":{)";
  Label(s, "kubernetes.io/hostname", name);
  Label(s, "kubernetes.io/os", "linux");
  Label(s, "node.kubernetes.io/instance-type", g.instance_type);
  Label(s, "topology.kubernetes.io/zone", zone);
  if (g.dialect == 1) {
    Label(s, "nvidia.com/gpu.count", std::to_string(g.gpus));
    Label(s, "nvidia.com/gpu.memory", std::to_string(g.gpu_memory_mib));
    Label(s, "nvidia.com/gpu.product", g.product);
  } else if (g.dialect == 2) {
    Label(s, "gpu.nvidia.com/count", std::to_string(g.gpus));
    Label(s, "gpu.nvidia.com/memory", std::to_string(g.gpu_memory_mib));
    Label(s, "gpu.nvidia.com/model", g.product);
  }
  Label(s, "topology.kubernetes.io/region", "us-east-1");
  s.pop_back();
  s += "}},\"spec\":{";
  if (g.gpus > 0) {
    s += R"("taints":[{"key":"nvidia.com/gpu","value":"present","effect":"NoSchedule"}])";
  }
  s += "},\"status\":{";
  std::string res = "\"cpu\":\"" + std::to_string(g.vcpu * 1000 - 100) + "m\",\"memory\":\"" +
                    std::to_string(g.memory_gi * 1024 - 1024) + "Mi\",\"pods\":\"" +
                    std::to_string(g.max_pods) + "\"";
  if (g.gpus > 0) res += ",\"nvidia.com/gpu\":\"" + std::to_string(g.gpus) + "\"";
  s += "\"capacity\":{" + res + "},\"allocatable\":{" + res + "}}}";
  return s;
}

struct Shape {
  const char* cpu;
  const char* memory;
  int gpus;
  const char* model;  // "" = any
};

}  // namespace

std::string SyntheticNodesJson(int32_t nodes, uint64_t seed) {
  (void)seed;  // node layout is fixed by the proportions; seed reserved for variation
  std::string out;
  out.reserve(static_cast<size_t>(nodes) * 700);
  int index = 0;
  // Deal nodes round-robin over a 48-slot pattern so every prefix of the cluster is mixed.
  for (int32_t i = 0; i < nodes; ++i) {
    int slot = i % kTotalWeight;
    size_t g = 0;
    while (slot >= kGroups[g].weight) slot -= kGroups[g++].weight;
    out += NodeJson(kGroups[g], index, kZones[(i / kTotalWeight + slot) % 3]);
    out += '\n';
    ++index;
  }
  return out;
}

std::string SyntheticPodsJson(int32_t pods, uint64_t seed, bool replicaset_owner) {
  // clang-format off
  static constexpr Shape kCpu[] = {
      {"250m", "512Mi", 0, ""}, {"500m", "1Gi", 0, ""}, {"1", "2Gi", 0, ""},
      {"2", "4Gi", 0, ""}, {"4", "16Gi", 0, ""}, {"1", "1Gi", 0, ""},
  };
  static constexpr Shape kGpu[] = {
      {"4", "16Gi", 1, ""}, {"4", "16Gi", 1, ""}, {"4", "24Gi", 1, "T4|A10G"},
      {"8", "48Gi", 1, "A10G"}, {"4", "24Gi", 1, "V100"}, {"2", "8Gi", 1, ""},
      {"8", "64Gi", 2, ""}, {"12", "96Gi", 2, "A100"}, {"24", "160Gi", 4, "V100"},
      {"88", "1000Gi", 8, "A100"},
  };
  // clang-format on
  common::Random rng(seed);
  std::string out;
  out.reserve(static_cast<size_t>(pods) * 600);
  for (int32_t i = 0; i < pods; ++i) {
    const uint64_t r = rng.Uniform(100);
    const bool gpu = r < 8;
    const uint64_t shape = gpu ? rng.Uniform(std::size(kGpu)) : rng.Uniform(std::size(kCpu));
    const Shape& sh = gpu ? kGpu[shape] : kCpu[shape];
    const bool zone_affine = !gpu && r >= 80;  // 20 % of pods require one or two zones
    const uint64_t z = zone_affine ? rng.Uniform(3) : 0;
    std::string s =
        R"({"apiVersion":"v1","kind":"Pod","metadata":{"namespace":"bench","name":"pod-)" +
        std::to_string(i) + R"(","uid":"uid-)" + std::to_string(i) + R"(","labels":{"app":"app-)" +
        std::to_string(i % 50) + "\"}";
    if (replicaset_owner) {  // one ReplicaSet per template: shape, zone set
      std::string rs = std::string(gpu ? "gpu-" : "cpu-") + std::to_string(shape);
      if (zone_affine) rs += "-z" + std::to_string(z) + (r >= 90 ? "b" : "a");
      s += R"(,"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"rs-)" + rs +
           R"(","uid":"rs-uid-)" + rs + R"(","controller":true}])";
    }
    if (gpu && sh.model[0] != '\0') {
      s += R"(,"annotations":{"gpu.nvidia.com/model":")" + std::string(sh.model) + "\"}";
    }
    s += R"(},"spec":{"schedulerName":"gpu-scheduler",)";
    if (gpu) {
      s += R"("tolerations":[{"key":"nvidia.com/gpu","operator":"Exists","effect":"NoSchedule"}],)";
    }
    if (zone_affine) {
      std::string values;
      values.append("\"").append(kZones[z]).append("\"");
      if (r >= 90) values.append(",\"").append(kZones[(z + 1) % 3]).append("\"");
      s += R"("affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":)"
           R"({"nodeSelectorTerms":[{"matchExpressions":[{"key":"topology.kubernetes.io/zone",)"
           R"("operator":"In","values":[)" +
           values + "]}]}]}}},";
    }
    s +=
        R"("containers":[{"name":"main","image":"example/app:1","resources":{"requests":{"cpu":")" +
        std::string(sh.cpu) + R"(","memory":")" + sh.memory + "\"}";
    if (gpu) s += R"(,"limits":{"nvidia.com/gpu":")" + std::to_string(sh.gpus) + "\"}";
    s += "}}]}}\n";
    out += s;
  }
  return out;
}

std::string ManifestList(const std::string& objects) {
  std::string out = R"({"apiVersion":"v1","kind":"List","items":[)";
  out.reserve(objects.size() + 64);
  size_t start = 0;
  bool first = true;
  while (start < objects.size()) {
    size_t end = objects.find('\n', start);
    if (end == std::string::npos) end = objects.size();
    if (end > start) {
      if (!first) out += ',';
      out.append(objects, start, end - start);
      first = false;
    }
    start = end + 1;
  }
  out += "]}";
  return out;
}

common::StatusOr<sim::Workload> SyntheticWorkload(int32_t nodes, int32_t pods, uint64_t seed,
                                                  bool replicaset_owner) {
  sim::Workload w;
  GPUSCHED_RETURN_IF_ERROR(
      sim::AppendManifests(ManifestList(SyntheticNodesJson(nodes, seed)), "synthetic nodes", w));
  GPUSCHED_RETURN_IF_ERROR(sim::AppendManifests(
      ManifestList(SyntheticPodsJson(pods, seed, replicaset_owner)), "synthetic pods", w));
  return w;
}

}  // namespace gpusched::bench
