// SPDX-License-Identifier: Apache-2.0
// The example is first described as plain specs (strings, as a manifest would spell them); the
// specs are then rendered twice: into api objects (BuiltinExample) and into YAML
// (BuiltinExampleYaml). Both renderings read the same specs, so they cannot drift apart.
#include "src/sim/builtin_example.h"

#include <algorithm>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "src/api/quantity.h"
#include "src/api/types.h"
#include "src/config/config.h"

namespace gpusched::sim {
namespace {

using KV = std::pair<std::string, std::string>;

struct TaintSpec {
  std::string key, value, effect;
};

struct TolerationSpec {
  std::string key, op, value, effect;
};

struct NodeSpec {
  std::string name;
  std::vector<KV> labels;
  std::vector<TaintSpec> taints;
  std::vector<KV> capacity;
  std::vector<KV> allocatable;
};

struct PodSpec {
  std::string ns, name;
  std::vector<KV> labels;
  std::vector<KV> annotations;
  std::vector<TolerationSpec> tolerations;
  std::string image;
  std::vector<KV> requests;
  std::vector<KV> limits;
};

constexpr std::string_view kGpuTaintKey = "nvidia.com/gpu";

enum class Dialect { kNone, kGfd, kSeed };

struct GroupSpec {
  const char* instance_type;
  const char* nodegroup;
  int per_zone;
  int vcpu;
  int memory_gi;
  int max_pods;
  int gpus;
  Dialect dialect;
  const char* product;  // GFD product or seed model
  int gpu_memory_mib;
  const char* family;       // GFD only
  const char* accelerator;  // k8s.amazonaws.com/accelerator
};

// clang-format off
constexpr GroupSpec kGroups[] = {
  {"p4d.24xlarge",  "gpu-p4d-24xl",  2, 96, 1152, 110, 8, Dialect::kGfd,
   "NVIDIA-A100-SXM4-40GB", 40960, "ampere", "nvidia-tesla-a100"},
  {"p3.8xlarge",    "gpu-p3-8xl",    2, 32,  244, 110, 4, Dialect::kSeed,
   "V100-SXM2-16GB",        16384, "",       "nvidia-tesla-v100"},
  {"p3.2xlarge",    "gpu-p3-2xl",    2,  8,   61,  58, 1, Dialect::kSeed,
   "V100-SXM2-16GB",        16384, "",       "nvidia-tesla-v100"},
  {"g4dn.12xlarge", "gpu-g4dn-12xl", 2, 48,  192, 110, 4, Dialect::kGfd,
   "Tesla-T4",              15360, "turing", "nvidia-tesla-t4"},
  {"g4dn.xlarge",   "gpu-g4dn-xl",   3,  4,   16,  29, 1, Dialect::kGfd,
   "Tesla-T4",              15360, "turing", "nvidia-tesla-t4"},
  {"g5.12xlarge",   "gpu-g5-12xl",   2, 48,  192, 110, 4, Dialect::kSeed,
   "A10G",                  23028, "",       "nvidia-a10g"},
  {"m5.4xlarge",    "cpu-m5-4xl",    3, 16,   64, 110, 0, Dialect::kNone,
   "",                          0, "",       ""},
};
// clang-format on

constexpr const char* kZones[] = {"us-east-1a", "us-east-1b", "us-east-1c"};

// EKS kube-reserved CPU: 6% of the first core, 1% of the second, 0.5% of the next two, 0.25%
// of the rest (in millicores).
int ReservedMilliCpu(int vcpu) {
  double m = 60;
  if (vcpu > 1) m += 10;
  if (vcpu > 2) m += 5 * std::min(vcpu - 2, 2);
  if (vcpu > 4) m += 2.5 * (vcpu - 4);
  return static_cast<int>(m);
}

// EKS kube-reserved memory (255Mi + 11Mi per pod) plus the 100Mi eviction threshold.
int ReservedMemoryMi(int max_pods) { return 255 + 11 * max_pods + 100; }

std::vector<NodeSpec> ExampleNodes() {
  std::vector<NodeSpec> nodes;
  for (size_t g = 0; g < std::size(kGroups); ++g) {
    const GroupSpec& gs = kGroups[g];
    for (int z = 0; z < 3; ++z) {
      for (int i = 0; i < gs.per_zone; ++i) {
        NodeSpec n;
        n.name = "ip-10-0-" + std::to_string(z * 32 + static_cast<int>(g)) + "-" +
                 std::to_string(10 + i) + ".ec2.internal";
        n.labels = {
            {"beta.kubernetes.io/arch", "amd64"},
            {"beta.kubernetes.io/os", "linux"},
            {"eks.amazonaws.com/capacityType", "ON_DEMAND"},
            {"eks.amazonaws.com/nodegroup", gs.nodegroup},
            {"kubernetes.io/arch", "amd64"},
            {"kubernetes.io/hostname", n.name},
            {"kubernetes.io/os", "linux"},
            {"node.kubernetes.io/instance-type", gs.instance_type},
            {"topology.kubernetes.io/region", "us-east-1"},
            {"topology.kubernetes.io/zone", kZones[z]},
        };
        if (gs.gpus > 0) {
          n.labels.emplace_back("k8s.amazonaws.com/accelerator", gs.accelerator);
          n.taints.push_back({std::string(kGpuTaintKey), "present", "NoSchedule"});
        }
        if (gs.dialect == Dialect::kGfd) {
          n.labels.emplace_back("nvidia.com/gpu.count", std::to_string(gs.gpus));
          n.labels.emplace_back("nvidia.com/gpu.family", gs.family);
          n.labels.emplace_back("nvidia.com/gpu.memory", std::to_string(gs.gpu_memory_mib));
          n.labels.emplace_back("nvidia.com/gpu.product", gs.product);
        } else if (gs.dialect == Dialect::kSeed) {
          n.labels.emplace_back("gpu.nvidia.com/count", std::to_string(gs.gpus));
          n.labels.emplace_back("gpu.nvidia.com/memory", std::to_string(gs.gpu_memory_mib));
          n.labels.emplace_back("gpu.nvidia.com/model", gs.product);
        }
        std::sort(n.labels.begin(), n.labels.end());
        const int mem_mi = gs.memory_gi * 1024;
        n.capacity = {{"cpu", std::to_string(gs.vcpu)},
                      {"memory", std::to_string(gs.memory_gi) + "Gi"},
                      {"pods", std::to_string(gs.max_pods)}};
        n.allocatable = {{"cpu", std::to_string(gs.vcpu * 1000 - ReservedMilliCpu(gs.vcpu)) + "m"},
                         {"memory", std::to_string(mem_mi - ReservedMemoryMi(gs.max_pods)) + "Mi"},
                         {"pods", std::to_string(gs.max_pods)}};
        if (gs.gpus > 0) {
          n.capacity.emplace_back("nvidia.com/gpu", std::to_string(gs.gpus));
          n.allocatable.emplace_back("nvidia.com/gpu", std::to_string(gs.gpus));
        }
        nodes.push_back(std::move(n));
      }
    }
  }
  return nodes;
}

struct PodShape {
  std::string cpu;
  std::string memory;
  int gpus = 0;
  std::string model;       // gpu.nvidia.com/model, "" = any
  std::string gpu_memory;  // gpu.nvidia.com/memory, "" = none
};

PodSpec MakePodSpec(std::string ns, std::string name, std::string app, std::string image,
                    const PodShape& s) {
  PodSpec p;
  p.ns = std::move(ns);
  p.name = std::move(name);
  p.labels = {{"app", std::move(app)}};
  p.image = std::move(image);
  p.requests = {{"cpu", s.cpu}, {"memory", s.memory}};
  p.limits = {{"memory", s.memory}};
  if (s.gpus > 0) {
    p.limits.emplace_back("nvidia.com/gpu", std::to_string(s.gpus));
    p.tolerations.push_back({std::string(kGpuTaintKey), "Exists", "", "NoSchedule"});
    if (!s.model.empty()) p.annotations.emplace_back("gpu.nvidia.com/model", s.model);
    if (!s.gpu_memory.empty()) p.annotations.emplace_back("gpu.nvidia.com/memory", s.gpu_memory);
    std::sort(p.annotations.begin(), p.annotations.end());
  }
  return p;
}

// GPU pods in arrival order: model-constrained and whole-node shapes first, flexible ones last.
std::vector<PodSpec> GpuPods() {
  const std::string pytorch = "nvcr.io/nvidia/pytorch:24.05-py3";
  const std::string triton = "nvcr.io/nvidia/tritonserver:24.05-py3";
  std::vector<PodSpec> pods;
  auto add = [&](std::string ns, std::string name, std::string app, const std::string& image,
                 PodShape shape) {
    pods.push_back(MakePodSpec(std::move(ns), std::move(name), std::move(app), image, shape));
  };
  auto series = [&](int n, const std::string& ns, const std::string& prefix,
                    const std::string& image, const PodShape& shape) {
    for (int i = 0; i < n; ++i) add(ns, prefix + "-" + std::to_string(i), prefix, image, shape);
  };
  // Cannot fit: no H100 in the cluster.
  add("ml-training", "h100-benchmark", "h100-benchmark", pytorch, {"2", "8Gi", 1, "H100", ""});
  series(3, "ml-training", "llm-pretrain", pytorch, {"88", "1000Gi", 8, "A100", ""});
  // Cannot fit: no node has 16 GPUs.
  add("ml-training", "mega-train-16g", "mega-train", pytorch, {"2", "8Gi", 16, "", ""});
  series(1, "ml-training", "bert-large-8g", pytorch, {"64", "512Gi", 8, "", ""});
  series(2, "ml-training", "diffusion-train", pytorch, {"40", "400Gi", 4, "A100", ""});
  series(3, "ml-training", "rl-train", pytorch, {"12", "96Gi", 2, "A100", ""});
  series(4, "ml-training", "resnet-v100", pytorch, {"24", "160Gi", 4, "V100", ""});
  series(6, "ml-training", "xgboost-v100", pytorch, {"4", "24Gi", 1, "V100", ""});
  series(10, "inference", "llm-serve-a10g", triton, {"8", "48Gi", 1, "A10G", "20Gi"});
  series(10, "inference", "triton-large", triton, {"4", "16Gi", 1, "T4|A10G", "16384"});
  // Malformed: the memory annotation is not a number.
  add("inference", "embedder-bad-annotation", "embedder", triton,
      {"3", "12Gi", 1, "T4|A10G", "lots"});
  series(30, "inference", "triton", triton, {"3", "12Gi", 1, "T4|A10G", "12Gi"});
  series(2, "ml-training", "llama-lora", pytorch, {"8", "64Gi", 2, "", ""});
  series(6, "notebooks", "notebook", "jupyter/tensorflow-notebook:2024-05-27",
         {"2", "8Gi", 1, "", ""});
  return pods;
}

std::vector<PodSpec> CpuPods() {
  std::vector<PodSpec> pods;
  auto series = [&](int n, const std::string& ns, const std::string& prefix,
                    const std::string& image, const PodShape& shape) {
    for (int i = 0; i < n; ++i) {
      pods.push_back(MakePodSpec(ns, prefix + "-" + std::to_string(i), prefix, image, shape));
    }
  };
  // Cannot fit: more memory than an m5.4xlarge has, and it does not tolerate the GPU taint.
  pods.push_back(MakePodSpec("data", "bigmem-analytics", "bigmem-analytics", "apache/spark:3.5.1",
                             {"1", "128Gi", 0, "", ""}));
  series(12, "data", "etl", "apache/spark:3.5.1", {"4", "16Gi", 0, "", ""});
  series(80, "web", "web", "nginx:1.27", {"250m", "512Mi", 0, "", ""});
  series(60, "web", "api", "ghcr.io/example/api:1.4.2", {"500m", "1Gi", 0, "", ""});
  series(6, "web", "redis", "redis:7.2", {"1", "8Gi", 0, "", ""});
  series(30, "default", "report-cron", "busybox:1.36", {"200m", "256Mi", 0, "", ""});
  return pods;
}

// One GPU pod, then two CPU pods, and so on; order within each list is kept.
std::vector<PodSpec> ExamplePods() {
  std::vector<PodSpec> gpu = GpuPods();
  std::vector<PodSpec> cpu = CpuPods();
  std::vector<PodSpec> out;
  out.reserve(gpu.size() + cpu.size());
  size_t g = 0;
  size_t c = 0;
  while (g < gpu.size() || c < cpu.size()) {
    if (g < gpu.size()) out.push_back(std::move(gpu[g++]));
    for (int k = 0; k < 2 && c < cpu.size(); ++k) out.push_back(std::move(cpu[c++]));
  }
  return out;
}

// --- rendering into objects ----------------------------------------------------------------

common::Status SetResources(const std::vector<KV>& in, api::ResourceList& out,
                            std::string_view where) {
  for (const auto& [name, qty] : in) {
    auto q = api::Quantity::Parse(qty);
    if (!q.ok()) return q.status().WithContext(std::string(where) + "." + name);
    common::Atom atom = common::Intern(name);
    out.Set(atom, atom == api::Names().cpu ? q->MilliValue() : q->Value());
  }
  return common::Status::Ok();
}

api::TaintEffect Effect(std::string_view e) {
  if (e == "NoSchedule") return api::TaintEffect::kNoSchedule;
  if (e == "PreferNoSchedule") return api::TaintEffect::kPreferNoSchedule;
  if (e == "NoExecute") return api::TaintEffect::kNoExecute;
  return api::TaintEffect::kAll;
}

common::StatusOr<api::NodePtr> BuildNode(const NodeSpec& s) {
  auto node = std::make_shared<api::Node>();
  node->meta.name = s.name;
  for (const auto& [k, v] : s.labels) node->meta.labels.Set(k, v);
  for (const auto& t : s.taints) {
    node->taints.push_back(
        api::Taint{common::Intern(t.key), common::Intern(t.value), Effect(t.effect)});
  }
  GPUSCHED_RETURN_IF_ERROR(
      SetResources(s.capacity, node->capacity, "node " + s.name + " capacity"));
  GPUSCHED_RETURN_IF_ERROR(
      SetResources(s.allocatable, node->allocatable, "node " + s.name + " allocatable"));
  api::DeriveNodeGpuInfo(*node);
  return api::NodePtr(std::move(node));
}

common::StatusOr<api::PodPtr> BuildPod(const PodSpec& s) {
  auto pod = std::make_shared<api::Pod>();
  pod->meta.name = s.name;
  pod->meta.namespace_ = s.ns;
  for (const auto& [k, v] : s.labels) pod->meta.labels.Set(k, v);
  pod->meta.annotations = s.annotations;
  std::sort(pod->meta.annotations.begin(), pod->meta.annotations.end());
  pod->scheduler_name = common::Intern(config::kDefaultSchedulerName);
  for (const auto& t : s.tolerations) {
    api::Toleration tol;
    tol.key = common::Intern(t.key);
    tol.op = t.op == "Exists" ? api::Toleration::Op::kExists : api::Toleration::Op::kEqual;
    tol.value = common::Intern(t.value);
    tol.effect = Effect(t.effect);
    pod->tolerations.push_back(tol);
  }
  api::Container c;
  c.name = "main";
  std::string where = "pod " + s.ns + "/" + s.name;
  GPUSCHED_RETURN_IF_ERROR(SetResources(s.requests, c.requests, where + " requests"));
  GPUSCHED_RETURN_IF_ERROR(SetResources(s.limits, c.limits, where + " limits"));
  // API defaulting: a limit without a request is requested at the limit.
  for (const auto& [name, qty] : s.limits) {
    common::Atom atom = common::Intern(name);
    if (c.requests.Get(atom) == 0) c.requests.Set(atom, c.limits.Get(atom));
  }
  pod->containers.push_back(std::move(c));
  api::ComputeEffectiveRequests(*pod);
  api::DeriveGpuRequest(*pod);
  return api::PodPtr(std::move(pod));
}

// --- rendering into YAML -------------------------------------------------------------------

std::string Q(std::string_view s) {
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\') out += '\\';
    out += ch;
  }
  out += '"';
  return out;
}

void Map(std::string& out, std::string_view indent, std::string_view key,
         const std::vector<KV>& kv) {
  if (kv.empty()) return;
  out += std::string(indent) + std::string(key) + ":\n";
  for (const auto& [k, v] : kv) out += std::string(indent) + "  " + k + ": " + Q(v) + "\n";
}

void NodeYaml(std::string& out, const NodeSpec& n) {
  out += "---\napiVersion: v1\nkind: Node\nmetadata:\n";
  out += "  name: " + Q(n.name) + "\n";
  Map(out, "  ", "labels", n.labels);
  if (!n.taints.empty()) {
    out += "spec:\n  taints:\n";
    for (const auto& t : n.taints) {
      out += "  - key: " + Q(t.key) + "\n    value: " + Q(t.value) +
             "\n    effect: " + Q(t.effect) + "\n";
    }
  }
  out += "status:\n";
  Map(out, "  ", "capacity", n.capacity);
  Map(out, "  ", "allocatable", n.allocatable);
}

void PodYaml(std::string& out, const PodSpec& p) {
  out += "---\napiVersion: v1\nkind: Pod\nmetadata:\n";
  out += "  name: " + Q(p.name) + "\n  namespace: " + Q(p.ns) + "\n";
  Map(out, "  ", "labels", p.labels);
  Map(out, "  ", "annotations", p.annotations);
  out += "spec:\n  schedulerName: " + Q(config::kDefaultSchedulerName) + "\n";
  if (!p.tolerations.empty()) {
    out += "  tolerations:\n";
    for (const auto& t : p.tolerations) {
      out += "  - key: " + Q(t.key) + "\n    operator: " + Q(t.op) + "\n";
      if (!t.value.empty()) out += "    value: " + Q(t.value) + "\n";
      out += "    effect: " + Q(t.effect) + "\n";
    }
  }
  out += "  containers:\n  - name: \"main\"\n    image: " + Q(p.image) + "\n    resources:\n";
  Map(out, "      ", "requests", p.requests);
  Map(out, "      ", "limits", p.limits);
}

}  // namespace

common::StatusOr<Workload> BuiltinExample() {
  Workload w;
  for (const auto& n : ExampleNodes()) {
    GPUSCHED_ASSIGN_OR_RETURN(api::NodePtr node, BuildNode(n));
    w.nodes.push_back(std::move(node));
  }
  for (const auto& p : ExamplePods()) {
    GPUSCHED_ASSIGN_OR_RETURN(api::PodPtr pod, BuildPod(p));
    w.pods.push_back(std::move(pod));
  }
  return w;
}

std::string BuiltinExampleYaml() {
  std::string out =
      "# gpusched built-in example: an EKS-like GPU cluster in us-east-1 (48 nodes, 3 zones) and\n"
      "# 269 pods in arrival order. Edit it and run it with:\n"
      "#   gpusched simulate -f example.yaml\n"
      "# Nodes come first, then pods; pods arrive in document order.\n";
  for (const auto& n : ExampleNodes()) NodeYaml(out, n);
  for (const auto& p : ExamplePods()) PodYaml(out, p);
  return out;
}

}  // namespace gpusched::sim
