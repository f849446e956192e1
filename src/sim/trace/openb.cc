// SPDX-License-Identifier: Apache-2.0
#include "src/sim/trace/openb.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <unordered_set>
#include <utility>

#include "src/api/gpu.h"
#include "src/api/resources.h"
#include "src/common/strings.h"
#include "src/sim/replay.h"
#include "src/sim/workload.h"

namespace gpusched::sim::trace {
namespace {

constexpr int64_t kMiB = 1024 * 1024;
// Upper bounds that keep byte and milli arithmetic far from overflow.
constexpr int64_t kMaxMilliCpu = int64_t{1} << 40;
constexpr int64_t kMaxMemoryMib = int64_t{1} << 40;
constexpr int64_t kMaxTraceSeconds = int64_t{100} * 365 * 24 * 3600;  // a Go duration holds 292 y

struct ColumnSpec {
  std::vector<std::string_view> names;  // first is canonical; others are accepted aliases
  bool required = true;
};

struct CsvRow {
  int64_t line = 0;
  std::vector<std::string_view> fields;
};

struct Csv {
  std::vector<int> column;  // per ColumnSpec: field index, or -1 when absent (optional)
  std::vector<CsvRow> rows;
};

common::Status Bad(std::string_view source, int64_t line, std::string why) {
  return common::InvalidArgumentError(std::string(source) + ":" + std::to_string(line) + ": " +
                                      std::move(why));
}

common::Status BadValue(std::string_view source, int64_t line, std::string_view column,
                        std::string_view value, std::string_view want) {
  return Bad(source, line,
             "column " + std::string(column) + ": invalid value " + common::Quote(value) +
                 " (want " + std::string(want) + ")");
}

// Splits `text` into rows; checks the header against `specs` and every row's width.
common::StatusOr<Csv> ReadCsv(std::string_view text, std::string_view source,
                              const std::vector<ColumnSpec>& specs) {
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);  // UTF-8 byte order mark
  Csv csv;
  std::vector<std::string_view> header;
  int64_t line_no = 0;
  int64_t blank_line = 0;  // first blank line seen (allowed only at the end)
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (common::Trim(line).empty()) {
      if (blank_line == 0) blank_line = line_no;
      continue;
    }
    if (blank_line != 0) return Bad(source, blank_line, "empty row");
    if (line.find('"') != std::string_view::npos) {
      return Bad(source, line_no, "quoted fields are not supported");
    }
    std::vector<std::string_view> fields = common::Split(line, ',');
    for (auto& f : fields) f = common::Trim(f);
    if (header.empty()) {
      header = std::move(fields);
      for (size_t i = 0; i < header.size(); ++i) {
        for (size_t j = 0; j < i; ++j) {
          if (header[i] == header[j]) {
            return Bad(source, line_no, "header: duplicate column " + common::Quote(header[i]));
          }
        }
      }
      csv.column.assign(specs.size(), -1);
      for (size_t s = 0; s < specs.size(); ++s) {
        for (std::string_view name : specs[s].names) {
          auto it = std::find(header.begin(), header.end(), name);
          if (it != header.end()) {
            csv.column[s] = static_cast<int>(it - header.begin());
            break;
          }
        }
        if (csv.column[s] < 0 && specs[s].required) {
          std::string have;
          for (auto h : header) have += (have.empty() ? "" : ",") + std::string(h);
          return Bad(source, line_no,
                     "header: missing column " + common::Quote(specs[s].names.front()) +
                         " (header is " + common::Quote(have) + ")");
        }
      }
      continue;
    }
    if (fields.size() != header.size()) {
      return Bad(source, line_no,
                 "expected " + std::to_string(header.size()) + " columns, got " +
                     std::to_string(fields.size()));
    }
    csv.rows.push_back(CsvRow{line_no, std::move(fields)});
  }
  if (header.empty()) return Bad(source, 1, "empty file (want a header row)");
  return csv;
}

std::string_view Field(const Csv& csv, const CsvRow& row, size_t spec) {
  int c = csv.column[spec];
  return c < 0 ? std::string_view() : row.fields[static_cast<size_t>(c)];
}

common::StatusOr<int64_t> Int(std::string_view source, const CsvRow& row, std::string_view column,
                              std::string_view value, int64_t lo, int64_t hi) {
  auto v = common::ParseInt64(value);
  if (!v || *v < lo || *v > hi) {
    // The large bounds only guard arithmetic; name them as "non-negative".
    std::string want = lo == 0 && hi >= kMaxMilliCpu
                           ? std::string("a non-negative integer")
                           : "an integer " + std::to_string(lo) + ".." + std::to_string(hi);
    return BadValue(source, row.line, column, value, want);
  }
  return *v;
}

// creation_time and deletion_time (seconds) as the replay's arrival and duration annotations
// (src/sim/replay.h); a pod without a later deletion time never leaves.
// The gpu_spec column: the models a pod may run on ('|'-separated, repeats dropped); none when
// empty.
common::StatusOr<std::vector<common::Atom>> GpuSpecModels(std::string_view source,
                                                          const CsvRow& row, std::string_view spec,
                                                          int64_t num_gpu) {
  std::vector<common::Atom> models;
  if (spec.empty()) return models;
  if (num_gpu == 0) return BadValue(source, row.line, "gpu_spec", spec, "empty when num_gpu is 0");
  for (std::string_view tok : common::Split(spec, '|')) {
    std::string norm = api::NormalizeGpuModel(common::Trim(tok));
    if (norm.empty()) {
      return BadValue(source, row.line, "gpu_spec", spec,
                      "GPU models separated by '|', e.g. V100M16|V100M32");
    }
    common::Atom a = common::Intern(norm);
    if (std::find(models.begin(), models.end(), a) == models.end()) models.push_back(a);
  }
  return models;
}

// The one replica of a ReplicaSet of its own (named after the pod), opted in to consolidation.
void MakeMovable(api::Pod& pod) {
  api::OwnerReference rs;
  rs.api_version = "apps/v1";
  rs.kind = "ReplicaSet";
  rs.name = pod.meta.name;
  rs.uid = pod.meta.uid + "/replicaset";
  rs.controller = true;
  pod.meta.owner_references.push_back(std::move(rs));
  pod.meta.annotations.emplace_back("gpusched.io/movable", "true");
}

common::Status KeepTimes(std::string_view source, const CsvRow& row, std::string_view creation,
                         std::string_view deletion, api::Pod& pod) {
  if (creation.empty()) return common::Status::Ok();
  GPUSCHED_ASSIGN_OR_RETURN(int64_t created,
                            Int(source, row, "creation_time", creation, 0, kMaxTraceSeconds));
  pod.meta.annotations.emplace_back(std::string(kArrivalAnnotation), std::to_string(created) + "s");
  if (deletion.empty()) return common::Status::Ok();
  GPUSCHED_ASSIGN_OR_RETURN(int64_t deleted,
                            Int(source, row, "deletion_time", deletion, 0, kMaxTraceSeconds));
  if (deleted > created) {
    pod.meta.annotations.emplace_back(std::string(kDurationAnnotation),
                                      std::to_string(deleted - created) + "s");
  }
  return common::Status::Ok();
}

std::string Family(const std::string& model) { return model.substr(0, model.find('-')); }

void SetResources(api::ResourceList& r, int64_t milli_cpu, int64_t memory_mib) {
  r.milli_cpu = milli_cpu;
  r.memory = memory_mib * kMiB;
}

}  // namespace

int64_t OpenbGpuMemoryMiB(std::string_view model) {
  // docs/simulator.md, "The trace files" (G2, G3: the simulator's placeholders).
  static constexpr std::pair<std::string_view, int64_t> kTable[] = {
      {"G2", 20000},      {"T4", 15109},      {"G3", 30000},  {"P100", 16280},
      {"V100M32", 32510}, {"V100M16", 16160}, {"A10", 22731},
  };
  for (const auto& [name, mib] : kTable) {
    if (name == model) return mib;
  }
  return 0;
}

common::StatusOr<std::vector<api::NodePtr>> ParseOpenbNodes(std::string_view text,
                                                            std::string_view source,
                                                            const OpenbOptions& options) {
  enum { kName, kCpu, kMemory, kGpu, kModel };
  const std::vector<ColumnSpec> specs = {{{"sn", "name"}},
                                         {{"cpu_milli"}},
                                         {{"memory_mib"}},
                                         {{"gpu", "num_gpu"}},
                                         {{"model", "gpu_type"}}};
  GPUSCHED_ASSIGN_OR_RETURN(Csv csv, ReadCsv(text, source, specs));
  const api::WellKnown& wk = api::Names();
  const common::Atom hostname = wk.hostname;
  const common::Atom node_group = common::Intern("gpusched.io/node-group");
  const common::Atom card_model = common::Intern("alibabacloud.com/gpu-card-model");
  const common::Atom seed_model = common::Intern(api::kSeedModelLabel);
  const common::Atom seed_count = common::Intern(api::kSeedCountLabel);
  const common::Atom seed_memory = common::Intern(api::kSeedMemoryLabel);

  std::vector<api::NodePtr> nodes;
  nodes.reserve(csv.rows.size());
  std::unordered_set<std::string_view> names;
  for (const CsvRow& row : csv.rows) {
    std::string_view name = Field(csv, row, kName);
    if (name.empty()) return BadValue(source, row.line, "sn", name, "a node name");
    if (!names.insert(name).second) {
      return Bad(source, row.line, "column sn: duplicate node name " + common::Quote(name));
    }
    GPUSCHED_ASSIGN_OR_RETURN(
        int64_t cpu, Int(source, row, "cpu_milli", Field(csv, row, kCpu), 0, kMaxMilliCpu));
    GPUSCHED_ASSIGN_OR_RETURN(
        int64_t mem, Int(source, row, "memory_mib", Field(csv, row, kMemory), 0, kMaxMemoryMib));
    GPUSCHED_ASSIGN_OR_RETURN(
        int64_t gpus, Int(source, row, "gpu", Field(csv, row, kGpu), 0, api::kMaxGpusPerNode));
    std::string_view model_raw = Field(csv, row, kModel);
    std::string model = api::NormalizeGpuModel(model_raw);
    if (gpus > 0 && model.empty()) {
      return BadValue(source, row.line, "model", model_raw, "a GPU model for a node with GPUs");
    }
    if (gpus == 0 && !model.empty()) {
      return BadValue(source, row.line, "model", model_raw, "empty for a node without GPUs");
    }

    auto node = std::make_shared<api::Node>();
    node->meta.name = std::string(name);
    node->meta.labels.Set(hostname, common::Intern(name));
    DefaultKubeletLabels(*node);  // os and arch as a kubelet sets them
    node->meta.labels.Set(node_group, common::Intern(gpus > 0 ? model + "x" + std::to_string(gpus)
                                                              : std::string("cpu")));
    SetResources(node->capacity, cpu, mem);
    node->capacity.pods = options.node_max_pods;
    if (gpus > 0) {
      const int64_t memory_mib = OpenbGpuMemoryMiB(model);
      node->meta.labels.Set(card_model, common::Intern(model_raw));
      node->meta.labels.Set(seed_model, common::Intern(model));
      node->meta.labels.Set(seed_count, common::Intern(std::to_string(gpus)));
      if (memory_mib > 0) {
        node->meta.labels.Set(seed_memory, common::Intern(std::to_string(memory_mib)));
      }
      node->capacity.Set(wk.nvidia_gpu, gpus);
      node->gpu.count = static_cast<int32_t>(gpus);
      node->gpu.model = common::Intern(model);
      node->gpu.model_family = common::Intern(Family(model));
      node->gpu.memory_mib = memory_mib;
      node->gpu.source = "openb trace";
    }
    node->allocatable = node->capacity;
    nodes.push_back(std::move(node));
  }
  return nodes;
}

common::StatusOr<std::vector<api::PodPtr>> ParseOpenbPods(std::string_view text,
                                                          std::string_view source,
                                                          const OpenbOptions& options) {
  enum { kName, kCpu, kMemory, kNumGpu, kGpuMilli, kGpuSpec, kQos, kCreation, kDeletion };
  const std::vector<ColumnSpec> specs = {{{"name"}},
                                         {{"cpu_milli"}},
                                         {{"memory_mib"}},
                                         {{"num_gpu"}},
                                         {{"gpu_milli"}},
                                         {{"gpu_spec"}, false},
                                         {{"qos"}, false},
                                         {{"creation_time"}, false},
                                         {{"deletion_time"}, false}};
  GPUSCHED_ASSIGN_OR_RETURN(Csv csv, ReadCsv(text, source, specs));
  if (!options.movable_qos.empty() && csv.column[kQos] < 0) {
    return common::InvalidArgumentError(std::string(source) +
                                        ": no qos column, so no pod can be read as movable");
  }
  const common::Atom scheduler = common::Intern(options.scheduler_name);
  const common::Atom app = common::Intern("app");
  const common::Atom openb = common::Intern("openb");

  std::vector<api::PodPtr> pods;
  pods.reserve(csv.rows.size());
  std::unordered_set<std::string_view> names;
  for (const CsvRow& row : csv.rows) {
    std::string_view name = Field(csv, row, kName);
    if (name.empty()) return BadValue(source, row.line, "name", name, "a pod name");
    if (!names.insert(name).second) {
      return Bad(source, row.line, "column name: duplicate pod name " + common::Quote(name));
    }
    GPUSCHED_ASSIGN_OR_RETURN(
        int64_t cpu, Int(source, row, "cpu_milli", Field(csv, row, kCpu), 0, kMaxMilliCpu));
    GPUSCHED_ASSIGN_OR_RETURN(
        int64_t mem, Int(source, row, "memory_mib", Field(csv, row, kMemory), 0, kMaxMemoryMib));
    std::string_view num_gpu_text = Field(csv, row, kNumGpu);
    GPUSCHED_ASSIGN_OR_RETURN(int64_t num_gpu,
                              Int(source, row, "num_gpu", num_gpu_text, 0, api::kMaxGpusPerNode));
    std::string_view milli_text = Field(csv, row, kGpuMilli);
    GPUSCHED_ASSIGN_OR_RETURN(int64_t milli,
                              Int(source, row, "gpu_milli", milli_text, 0, api::kMilliPerGpu));
    if (num_gpu == 0 && milli != 0) {
      return BadValue(source, row.line, "gpu_milli", milli_text, "0 when num_gpu is 0");
    }
    if (num_gpu > 0 && milli == 0) {
      return BadValue(source, row.line, "gpu_milli", milli_text, "1..1000 when num_gpu > 0");
    }
    if (num_gpu > 1 && milli != api::kMilliPerGpu) {
      return BadValue(source, row.line, "gpu_milli", milli_text,
                      "1000 when num_gpu > 1: only single-GPU tasks share a GPU");
    }
    std::string_view spec = Field(csv, row, kGpuSpec);
    GPUSCHED_ASSIGN_OR_RETURN(std::vector<common::Atom> models,
                              GpuSpecModels(source, row, spec, num_gpu));

    auto pod = std::make_shared<api::Pod>();
    pod->meta.name = std::string(name);
    pod->meta.namespace_ = options.pod_namespace;
    pod->meta.uid = options.pod_namespace + "/" + std::string(name);
    pod->meta.labels.Set(app, openb);
    if (num_gpu > 0) {
      pod->meta.annotations.emplace_back("alibabacloud.com/gpu-count", std::to_string(num_gpu));
      pod->meta.annotations.emplace_back("alibabacloud.com/gpu-milli", std::to_string(milli));
      if (!spec.empty()) {
        pod->meta.annotations.emplace_back("alibabacloud.com/gpu-card-model", spec);
      }
    }
    if (options.keep_times) {
      GPUSCHED_RETURN_IF_ERROR(
          KeepTimes(source, row, Field(csv, row, kCreation), Field(csv, row, kDeletion), *pod));
    }
    if (std::string_view qos = Field(csv, row, kQos);
        !qos.empty() && std::find(options.movable_qos.begin(), options.movable_qos.end(), qos) !=
                            options.movable_qos.end()) {
      MakeMovable(*pod);
    }
    std::sort(pod->meta.annotations.begin(), pod->meta.annotations.end());
    pod->scheduler_name = scheduler;
    api::Container c;
    c.name = "main";
    SetResources(c.requests, cpu, mem);
    SetResources(c.limits, cpu, mem);
    pod->containers.push_back(std::move(c));
    api::ComputeEffectiveRequests(*pod);
    if (num_gpu > 0) {
      pod->gpu.count = static_cast<int32_t>(num_gpu);
      pod->gpu.milli = static_cast<int32_t>(milli);
      pod->gpu.models = std::move(models);
    }
    pods.push_back(std::move(pod));
  }
  return pods;
}

common::StatusOr<Workload> LoadOpenbTrace(const std::string& nodes_path,
                                          const std::string& pods_path,
                                          const OpenbOptions& options) {
  Workload w;
  GPUSCHED_ASSIGN_OR_RETURN(std::string nodes_csv, ReadFile(nodes_path));
  GPUSCHED_ASSIGN_OR_RETURN(w.nodes, ParseOpenbNodes(nodes_csv, nodes_path, options));
  GPUSCHED_ASSIGN_OR_RETURN(std::string pods_csv, ReadFile(pods_path));
  GPUSCHED_ASSIGN_OR_RETURN(w.pods, ParseOpenbPods(pods_csv, pods_path, options));
  return w;
}

}  // namespace gpusched::sim::trace
