// SPDX-License-Identifier: Apache-2.0
// GPU request and inventory normalisation. Runs once per object, on decode; error and warning text
// is built only when something is wrong. The pod GPU-sharing dialects are read in gpu_dialects.cc.
#include "src/api/gpu.h"

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <cstdlib>
#include <limits>
#include <optional>
#include <string>

#include "src/api/gpu_dialects.h"
#include "src/api/quantity.h"
#include "src/api/types.h"
#include "src/common/strings.h"

namespace gpusched::api {
namespace gpu_internal {

std::optional<int64_t> ParseNonNegative(std::string_view s) {
  if (s.empty()) return std::nullopt;
  int64_t v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size() || v < 0 || s.front() == '-') {
    return std::nullopt;
  }
  return v;
}

namespace {
bool IsUnitSuffix(char c) {
  return c == 'i' || c == 'k' || c == 'M' || c == 'G' || c == 'T' || c == 'P' || c == 'E';
}
}  // namespace

std::optional<MiB> ParseMiB(std::string_view s) {
  s = common::Trim(s);
  if (auto v = ParseNonNegative(s)) return MiB{*v, true};
  if (s.empty() || !IsUnitSuffix(s.back())) return std::nullopt;
  auto q = Quantity::Parse(s);
  if (!q.ok()) return std::nullopt;
  int64_t bytes = q->Value();
  if (bytes < 0) return std::nullopt;
  return MiB{bytes / kMiB + (bytes % kMiB != 0 ? 1 : 0), false};
}

void Warn(std::string& out, std::string_view msg) {
  if (!out.empty()) out += "; ";
  out += msg;
}

}  // namespace gpu_internal

namespace {

using common::Atom;
using gpu_internal::ParseMiB;
using gpu_internal::ParseNonNegative;
using gpu_internal::ShareFacts;
using gpu_internal::Warn;

// Keys read here, interned once.
struct GpuKeys {
  Atom seed_model, seed_memory, seed_count;
  Atom gfd_product, gfd_memory, gfd_count, gfd_replicas, gfd_sharing, gfd_clique;
};
const GpuKeys& Keys() {
  static const GpuKeys keys = [] {
    GpuKeys k;
    k.seed_model = common::Intern(kSeedModelLabel);
    k.seed_memory = common::Intern(kSeedMemoryLabel);
    k.seed_count = common::Intern(kSeedCountLabel);
    k.gfd_product = common::Intern(kGfdProductLabel);
    k.gfd_memory = common::Intern(kGfdMemoryLabel);
    k.gfd_count = common::Intern(kGfdCountLabel);
    k.gfd_replicas = common::Intern(kGfdReplicasLabel);
    k.gfd_sharing = common::Intern(kGfdSharingStrategyLabel);
    k.gfd_clique = common::Intern(kGfdCliqueLabel);
    return k;
  }();
  return keys;
}

char Upper(char c) { return c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c; }
bool IsSep(char c) { return c == '-' || c == '_' || c == ' ' || c == '\t'; }

std::string_view LabelValue(const Labels& labels, Atom key, bool* present) {
  Atom v;
  *present = labels.Get(key, &v);
  return *present ? common::Str(v) : std::string_view();
}

std::string InvalidLabel(std::string_view key, std::string_view value, std::string_view want) {
  std::string m = "label ";
  m += key;
  m += ": invalid value ";
  m += common::Quote(value);
  m += " (";
  m += want;
  m += ")";
  return m;
}

// The normalised model text, before -SHARED/-MIG- handling, so the suffixes can be detected.
std::string FoldModel(std::string_view raw) {
  std::string out;
  out.reserve(raw.size());
  bool sep = false;
  for (char c : raw) {
    if (IsSep(c)) {
      sep = !out.empty();
      continue;
    }
    if (sep) out += '-';
    sep = false;
    out += Upper(c);
  }
  return out;
}

bool HasSharedSuffix(std::string_view folded) { return common::EndsWith(folded, "-SHARED"); }
bool HasMig(std::string_view folded) { return folded.find("-MIG-") != std::string_view::npos; }

// Parses "1,3" into a bit mask; bad entries are reported and skipped.
uint32_t ParseUnhealthy(std::string_view text, std::string& warnings) {
  uint32_t mask = 0;
  if (common::Trim(text).empty()) return 0;
  for (std::string_view tok : common::Split(text, ',')) {
    auto idx = ParseNonNegative(common::Trim(tok));
    if (!idx || *idx >= kMaxGpusPerNode) {
      std::string m = "annotation ";
      m += kNodeUnhealthyGpusAnnotation;
      m += ": invalid device index ";
      m += common::Quote(tok);
      m += " (want 0..15), skipped";
      Warn(warnings, m);
      continue;
    }
    mask |= 1u << *idx;
  }
  return mask;
}

// Parses "0,1;2,3" into island ids; returns false (and leaves `island` alone) when invalid.
bool ParseIslands(std::string_view text, int32_t count,
                  std::array<uint8_t, kMaxGpusPerNode>& island, std::string* why) {
  std::array<uint8_t, kMaxGpusPerNode> out{};
  uint32_t seen = 0;
  uint8_t id = 0;
  for (std::string_view group : common::Split(text, ';')) {
    if (common::Trim(group).empty()) {
      *why = "empty group";
      return false;
    }
    for (std::string_view tok : common::Split(group, ',')) {
      auto idx = ParseNonNegative(common::Trim(tok));
      if (!idx || *idx >= kMaxGpusPerNode) {
        *why = "invalid device index " + common::Quote(tok);
        return false;
      }
      if (seen >> *idx & 1u) {
        *why = "device " + std::to_string(*idx) + " listed twice";
        return false;
      }
      seen |= 1u << *idx;
      out[static_cast<size_t>(*idx)] = id;
    }
    ++id;
  }
  // Devices in no group are islands of their own.
  for (int32_t d = 0; d < count && d < kMaxGpusPerNode; ++d) {
    if (!(seen >> d & 1u)) out[static_cast<size_t>(d)] = id++;
  }
  island = out;
  return true;
}

int32_t ClampToInt32(int64_t v) {
  if (v > std::numeric_limits<int32_t>::max()) return std::numeric_limits<int32_t>::max();
  if (v < std::numeric_limits<int32_t>::min()) return std::numeric_limits<int32_t>::min();
  return static_cast<int32_t>(v);
}

int64_t SatAdd(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_add_overflow(a, b, &r) ? std::numeric_limits<int64_t>::max() : r;
}

int64_t ContainerGpus(const Container& c, Atom gpu) {
  int64_t v = c.limits.Get(gpu);
  return v != 0 ? v : c.requests.Get(gpu);
}

// The pod's count of resource `gpu` as kube-scheduler sums it: containers and sidecars, at least
// each init container with the sidecars started before it. `negative` is set when any container
// asks for a negative count.
int64_t WholeGpuCount(const Pod& pod, Atom gpu, bool* negative) {
  int64_t sum = 0;
  int64_t sidecars = 0;
  int64_t init_max = 0;
  for (const Container& c : pod.containers) {
    int64_t n = ContainerGpus(c, gpu);
    *negative |= n < 0;
    sum = SatAdd(sum, n);
  }
  for (const Container& c : pod.init_containers) {
    int64_t n = ContainerGpus(c, gpu);
    *negative |= n < 0;
    if (c.restartable) {
      sum = SatAdd(sum, n);
      sidecars = SatAdd(sidecars, n);
      init_max = std::max(init_max, sidecars);
    } else {
      init_max = std::max(init_max, SatAdd(n, sidecars));
    }
  }
  return std::max(sum, init_max);
}

// The request the agreed facts describe; `share` when any compute or memory share is set.
GpuRequest RequestFromFacts(const ShareFacts& f, bool share) {
  GpuRequest req;
  req.count = ClampToInt32(f.count.set ? f.count.value : 1);
  req.milli = kMilliPerGpu;
  if (share) {
    req.milli = f.milli.set ? static_cast<int32_t>(f.milli.value) : 0;
    req.share_memory_mib = f.memory_mib.set ? f.memory_mib.value : 0;
    req.share_memory_permille =
        f.memory_permille.set ? static_cast<int32_t>(f.memory_permille.value) : 0;
    if (req.milli == 0 && req.share_memory_permille >= kMilliPerGpu) req.milli = kMilliPerGpu;
    if (req.milli >= kMilliPerGpu) {
      // A whole device (HAMi gpucores=100, Koordinator 100 per GPU): its memory share is only
      // a minimum.
      req.min_device_memory_mib = req.share_memory_mib;
      req.share_memory_mib = 0;
      req.share_memory_permille = 0;
    }
  }
  return req;
}

// Annotation gpu.nvidia.com/model: the acceptable models, "A100|H100", normalised and
// deduplicated; an empty name is an error and clears the list.
void ReadModelAnnotation(const Pod& pod, GpuRequest& req, std::string& errors) {
  const std::string* models = pod.meta.Annotation(kPodGpuModelAnnotation);
  if (models == nullptr) return;
  for (std::string_view tok : common::Split(*models, '|')) {
    std::string norm = NormalizeGpuModel(common::Trim(tok));
    if (norm.empty()) {
      std::string m = "annotation ";
      m += kPodGpuModelAnnotation;
      m += ": invalid value ";
      m += common::Quote(*models);
      m += " (empty model name; want e.g. \"A100|H100\")";
      Warn(errors, m);
      req.models.clear();
      break;
    }
    Atom a = common::Intern(norm);
    if (std::find(req.models.begin(), req.models.end(), a) == req.models.end()) {
      req.models.push_back(a);
    }
  }
}

// Annotation gpu.nvidia.com/memory: the minimum memory per device, raising the request's.
void ReadMinMemoryAnnotation(const Pod& pod, GpuRequest& req, std::string& errors) {
  const std::string* mem = pod.meta.Annotation(kPodGpuMemoryAnnotation);
  if (mem == nullptr) return;
  if (auto mib = ParseMiB(*mem)) {
    req.min_device_memory_mib = std::max(req.min_device_memory_mib, mib->value);
  } else {
    std::string m = "annotation ";
    m += kPodGpuMemoryAnnotation;
    m += ": invalid value ";
    m += common::Quote(*mem);
    m += " (want MiB, e.g. 16384)";
    Warn(errors, m);
  }
}

// What DeriveNodeGpuInfo has read so far from a node's labels, annotations and allocatable.
struct NodeReading {
  const Labels& labels;
  const GpuKeys& keys;
  NodeGpuInfo info;
  std::string warnings;
  std::string source;       // becomes info.source: "model=seed count=gfd ..."
  bool shared = false;      // a -SHARED model label: allocatable counts replicas
  bool mig = false;         // a -MIG- model label: counts are MIG devices
  int64_t allocatable = 0;  // allocatable nvidia.com/gpu
  int64_t count = 0;        // the GPU count, clamped to kMaxGpusPerNode

  void AddSource(std::string_view fact, std::string_view from) {
    if (!source.empty()) source += ' ';
    source += fact;
    source += '=';
    source += from;
  }
};

// The model (seed label, else GFD's product label), and whether either label says shared or MIG.
void ReadNodeModel(NodeReading& r) {
  bool seed_model_present = false;
  bool gfd_model_present = false;
  std::string_view seed_model = LabelValue(r.labels, r.keys.seed_model, &seed_model_present);
  std::string_view gfd_model = LabelValue(r.labels, r.keys.gfd_product, &gfd_model_present);
  std::string folded_seed = seed_model_present ? FoldModel(seed_model) : std::string();
  std::string folded_gfd = gfd_model_present ? FoldModel(gfd_model) : std::string();
  r.shared = HasSharedSuffix(folded_seed) || HasSharedSuffix(folded_gfd);
  r.mig = HasMig(folded_seed) || HasMig(folded_gfd);
  std::string model;
  if (seed_model_present) {
    model = NormalizeGpuModel(seed_model);
    if (!model.empty()) {
      r.AddSource("model", "seed");
    } else {
      Warn(r.warnings, InvalidLabel(kSeedModelLabel, seed_model, "want a GPU model, e.g. A100"));
    }
  }
  if (!model.empty() && gfd_model_present) {
    const std::string gfd = NormalizeGpuModel(gfd_model);
    if (!gfd.empty() && !GpuModelMatches(gfd, model) && !GpuModelMatches(model, gfd)) {
      Warn(r.warnings, "label " + std::string(kSeedModelLabel) + "=" + std::string(seed_model) +
                           " (" + model + ") disagrees with " + std::string(kGfdProductLabel) +
                           "=" + std::string(gfd_model) + " (" + gfd + "); using " + model);
    }
  }
  if (model.empty() && gfd_model_present) {
    model = NormalizeGpuModel(gfd_model);
    if (!model.empty()) {
      r.AddSource("model", "gfd");
    } else {
      Warn(r.warnings, InvalidLabel(kGfdProductLabel, gfd_model, "want a GPU model, e.g. A100"));
    }
  }
  if (!model.empty()) {
    r.info.model = common::Intern(model);
    r.info.model_family = common::Intern(std::string_view(model).substr(0, model.find('-')));
  }
}

// A count label: unset when absent, nullopt (and a warning) when not an integer.
void ReadCountLabel(NodeReading& r, Atom key, std::string_view name, std::optional<int64_t>* out) {
  bool present = false;
  std::string_view v = LabelValue(r.labels, key, &present);
  if (!present) return;
  *out = ParseNonNegative(v);
  if (!*out) Warn(r.warnings, InvalidLabel(name, v, "want an integer count"));
}

// A shared node's replicas per GPU: GFD's replicas label, else allocatable / count; and whether
// they are MPS replicas (GFD's sharing-strategy label).
void ReadNodeReplicas(NodeReading& r) {
  bool present = false;
  const std::string_view label = LabelValue(r.labels, r.keys.gfd_replicas, &present);
  std::optional<int64_t> replicas = present ? ParseNonNegative(label) : std::nullopt;
  if (present && (!replicas || *replicas == 0)) {
    Warn(r.warnings, InvalidLabel(kGfdReplicasLabel, label, "want a positive integer"));
    replicas.reset();
  }
  if (!replicas && r.count > 0 && r.allocatable > r.count) replicas = r.allocatable / r.count;
  if (!replicas || *replicas <= 1) return;
  r.info.replicas = static_cast<int32_t>(std::min<int64_t>(*replicas, kMilliPerGpu));
  r.info.mps = LabelValue(r.labels, r.keys.gfd_sharing, &present) == "mps";
}

// The count: seed label, else GFD's (not on MIG nodes), else allocatable (divided by GFD's
// replicas on shared nodes); clamped to kMaxGpusPerNode.
void ReadNodeCount(NodeReading& r) {
  std::optional<int64_t> seed_count;
  std::optional<int64_t> gfd_count;
  ReadCountLabel(r, r.keys.seed_count, kSeedCountLabel, &seed_count);
  ReadCountLabel(r, r.keys.gfd_count, kGfdCountLabel, &gfd_count);
  int64_t count = 0;
  if (r.mig) Warn(r.warnings, "MIG single strategy: counts MIG devices");
  if (seed_count) {
    count = *seed_count;
    r.AddSource("count", "seed");
    if (gfd_count && *gfd_count != *seed_count && !r.mig) {
      Warn(r.warnings, "label " + std::string(kSeedCountLabel) + "=" + std::to_string(*seed_count) +
                           " disagrees with " + std::string(kGfdCountLabel) + "=" +
                           std::to_string(*gfd_count) + "; using " + std::to_string(*seed_count));
    }
  } else if (gfd_count && !r.mig) {
    count = *gfd_count;
    r.AddSource("count", "gfd");
  } else if (r.allocatable > 0) {
    count = r.allocatable;
    r.AddSource("count", "allocatable");
    if (r.shared && !r.mig) {
      bool present = false;
      auto replicas = ParseNonNegative(LabelValue(r.labels, r.keys.gfd_replicas, &present));
      if (replicas && *replicas > 0) {
        count = r.allocatable / *replicas;
      } else {
        Warn(r.warnings,
             "shared GPUs without a count label: allocatable nvidia.com/gpu counts "
             "replicas, not GPUs");
      }
    }
  }
  // The device plugin advertises more GPUs than the label says: the label wins (devices above
  // it are never allocated), but one of the two is wrong. (Fewer: MarkUnadvertisedDevices.)
  if ((seed_count || (gfd_count && !r.mig)) && !r.shared && !r.mig && r.allocatable > count) {
    Warn(r.warnings, "allocatable nvidia.com/gpu=" + std::to_string(r.allocatable) +
                         " is above the labelled GPU count " + std::to_string(count) + "; using " +
                         std::to_string(count));
  }
  if (count > kMaxGpusPerNode) {
    Warn(r.warnings, "GPU count " + std::to_string(count) + " exceeds " +
                         std::to_string(kMaxGpusPerNode) + "; clamped");
    count = kMaxGpusPerNode;
  }
  r.count = count;
  r.info.count = static_cast<int32_t>(count);
  if (r.shared && !r.mig) ReadNodeReplicas(r);
}

// Memory per GPU from one label; false when absent or invalid (then the next label is tried).
bool ReadNodeMemory(NodeReading& r, Atom key, std::string_view name, std::string_view from) {
  bool present = false;
  std::string_view v = LabelValue(r.labels, key, &present);
  if (!present) return false;
  auto mib = ParseMiB(v);
  if (!mib || mib->value <= 0) {
    Warn(r.warnings, InvalidLabel(name, v, "want MiB, e.g. 40960"));
    return false;
  }
  r.info.memory_mib = mib->value;
  if (mib->plain && mib->value < 1024) {
    r.info.memory_mib = mib->value * 1024;
    Warn(r.warnings, "label " + std::string(name) + ": value " + common::Quote(v) +
                         " is below 1024, probably GB; read as " +
                         std::to_string(r.info.memory_mib) + " MiB");
  }
  r.AddSource("memory", from);
  return true;
}

// The seed memory label was read: GFD's, when more than 10 % away from it (rounding, such as
// 81559 MiB for "80Gi", is not a conflict), is flagged.
void WarnGfdMemoryConflict(NodeReading& r) {
  bool present = false;
  const std::string_view v = LabelValue(r.labels, r.keys.gfd_memory, &present);
  const std::optional<gpu_internal::MiB> mib =
      present ? ParseMiB(v) : std::optional<gpu_internal::MiB>();
  if (!mib || mib->value <= 0) return;
  const int64_t gfd = mib->plain && mib->value < 1024 ? mib->value * 1024 : mib->value;
  const int64_t seed = r.info.memory_mib;
  if (std::abs(gfd - seed) * 10 <= std::max(gfd, seed)) return;
  bool seed_present = false;
  Warn(r.warnings, "label " + std::string(kSeedMemoryLabel) + "=" +
                       std::string(LabelValue(r.labels, r.keys.seed_memory, &seed_present)) +
                       " disagrees with " + std::string(kGfdMemoryLabel) + "=" + std::string(v) +
                       "; using " + std::to_string(seed) + " MiB");
}

// A device plugin that stops advertising a device lowers allocatable below the labelled count:
// the missing devices (we cannot tell which, so the highest indices) are never allocated.
// Only when the count came from a label and allocatable still lists some GPUs (0 usually means
// "not reported yet"); shared and MIG nodes advertise replicas or slices, not GPUs.
void MarkUnadvertisedDevices(NodeReading& r) {
  const int64_t count = r.count;
  if (r.source.empty() || r.source.find("count=allocatable") != std::string::npos || r.shared ||
      r.mig || r.allocatable <= 0 || r.allocatable >= count) {
    return;
  }
  int64_t healthy =
      count - std::popcount(r.info.unhealthy_mask & ((count >= 32 ? 0u : (1u << count)) - 1u));
  for (int d = r.info.count - 1; d >= 0 && healthy > r.allocatable; --d) {
    if (r.info.Healthy(d)) {
      r.info.unhealthy_mask |= 1u << d;
      --healthy;
    }
  }
  Warn(r.warnings, "allocatable nvidia.com/gpu=" + std::to_string(r.allocatable) +
                       " is below the GPU count " + std::to_string(count) +
                       "; the highest-index devices are treated as unhealthy");
}

// NVLink islands: the node's islands annotation (nullptr when absent), else GFD's clique label
// (the node's GPUs are all in one NVLink domain, island 0 for all).
void ReadNodeNvlink(NodeReading& r, const std::string* islands) {
  if (islands != nullptr) {
    std::string why;
    if (!ParseIslands(*islands, r.info.count, r.info.island, &why)) {
      Warn(r.warnings, "annotation " + std::string(kNodeNvlinkIslandsAnnotation) +
                           ": invalid value " + common::Quote(*islands) + " (" + why +
                           "), ignored");
    } else {
      r.info.nvlink_known = true;
    }
  }
  if (!r.info.nvlink_known) {
    bool present = false;
    std::string_view clique = LabelValue(r.labels, r.keys.gfd_clique, &present);
    if (present && !common::Trim(clique).empty()) r.info.nvlink_known = true;
  }
}

}  // namespace

std::string NormalizeGpuModel(std::string_view raw) {
  std::string out = FoldModel(raw);
  if (HasSharedSuffix(out)) out.resize(out.size() - 7);
  if (size_t mig = out.find("-MIG-"); mig != std::string::npos) out.resize(mig);
  for (;;) {
    if (common::StartsWith(out, "NVIDIA-")) {
      out.erase(0, 7);
    } else if (common::StartsWith(out, "TESLA-")) {
      out.erase(0, 6);
    } else {
      break;
    }
  }
  return out;
}

bool GpuModelMatches(std::string_view node_model, std::string_view want) {
  if (node_model.empty() || want.empty()) return false;
  for (size_t pos = node_model.find(want); pos != std::string_view::npos;
       pos = node_model.find(want, pos + 1)) {
    bool starts = pos == 0 || node_model[pos - 1] == '-';
    size_t end = pos + want.size();
    bool ends = end == node_model.size() || node_model[end] == '-';
    if (starts && ends) return true;
  }
  return false;
}

std::string FormatGpuAssignment(const GpuAssignment& a) {
  std::string out;
  bool whole = a.milli >= kMilliPerGpu && a.memory_mib == 0;
  for (size_t i = 0; i < a.devices.size(); ++i) {
    if (i > 0) out += ',';
    out += std::to_string(a.devices[i]);
    if (!whole) {
      out += ':';
      out += std::to_string(a.milli);
      out += 'm';
      if (a.memory_mib > 0) {
        out += ':';
        out += std::to_string(a.memory_mib);
        out += "Mi";
      }
    }
  }
  return out;
}

common::StatusOr<GpuAssignment> ParseGpuAssignment(std::string_view text) {
  auto error = [&](std::string_view why) {
    std::string m = "invalid GPU assignment ";
    m += common::Quote(text);
    m += ": ";
    m += why;
    return common::InvalidArgumentError(std::move(m));
  };
  if (text.empty()) return error("empty");
  GpuAssignment a;
  std::array<int64_t, kMaxGpusPerNode> milli_on{};  // per device, over its entries
  bool first = true;
  bool whole = true;
  for (std::string_view tok : common::Split(text, ',')) {
    std::vector<std::string_view> parts = common::Split(tok, ':');
    if (parts.size() > 3) return error("too many ':' in " + common::Quote(tok));
    auto idx = ParseNonNegative(parts[0]);
    if (!idx || *idx >= kMaxGpusPerNode) {
      return error("invalid device index " + common::Quote(parts[0]) + " (want 0..15)");
    }
    bool tok_whole = parts.size() == 1;
    int64_t milli = kMilliPerGpu;
    int64_t mem = 0;
    if (!tok_whole) {
      std::string_view m = parts[1];
      std::optional<int64_t> mv;
      if (common::EndsWith(m, "m")) mv = ParseNonNegative(m.substr(0, m.size() - 1));
      if (!mv || *mv < 1 || *mv > kMilliPerGpu) {
        return error("invalid share " + common::Quote(m) + " (want 1m..1000m)");
      }
      milli = *mv;
      if (parts.size() == 3) {
        std::string_view mm = parts[2];
        std::optional<int64_t> memv;
        if (common::EndsWith(mm, "Mi")) memv = ParseNonNegative(mm.substr(0, mm.size() - 2));
        if (!memv || *memv < 1) {
          return error("invalid memory " + common::Quote(mm) + " (want e.g. 4096Mi)");
        }
        mem = *memv;
      }
    }
    if (first) {
      whole = tok_whole;
      a.milli = static_cast<int32_t>(milli);
      a.memory_mib = mem;
      first = false;
    } else if (whole != tok_whole) {
      return error("mixes whole and shared devices");
    } else if (a.milli != milli || a.memory_mib != mem) {
      return error("devices have different shares");
    }
    int64_t& on = milli_on[static_cast<size_t>(*idx)];
    if (on > 0 && tok_whole) return error("device " + std::to_string(*idx) + " listed twice");
    on += milli;
    if (on > kMilliPerGpu) {
      return error("device " + std::to_string(*idx) + " is given more than 1000m");
    }
    a.devices.push_back(static_cast<int8_t>(*idx));
  }
  return a;
}

void DeriveGpuRequest(Pod& pod) {
  pod.gpu = GpuRequest{};
  pod.gpu_error.clear();
  bool negative = false;
  bool negative_replicas = false;
  // Replicas of time-sliced GPUs under the device plugin's renameByDefault are
  // nvidia.com/gpu.shared; either resource is a count of what the device plugin advertises.
  const int64_t whole = WholeGpuCount(pod, Names().nvidia_gpu, &negative);
  const int64_t replicas = WholeGpuCount(pod, Names().nvidia_gpu_shared, &negative_replicas);
  if (negative || negative_replicas) {
    pod.gpu_error = negative ? "resource nvidia.com/gpu: negative count"
                             : "resource nvidia.com/gpu.shared: negative count";
    return;
  }
  if (whole > 0 && replicas > 0) {
    pod.gpu_error =
        "resources nvidia.com/gpu and nvidia.com/gpu.shared: ask for one of them (a node's "
        "device plugin advertises its GPUs under one name)";
    return;
  }
  const int64_t count = whole > 0 ? whole : replicas;
  const std::string_view resource = whole > 0 ? "nvidia.com/gpu" : "nvidia.com/gpu.shared";

  // Sharing dialects: per-device facts from every dialect present; they must agree.
  ShareFacts f = gpu_internal::ReadShareFacts(pod, count, resource);
  if (!f.errors.empty()) {
    pod.gpu_error = std::move(f.errors);
    return;
  }
  const bool share = f.milli.set || f.memory_mib.set || f.memory_permille.set;
  if (!f.count.set && !share) return;

  GpuRequest req = RequestFromFacts(f, share);
  std::string errors;
  ReadModelAnnotation(pod, req, errors);
  ReadMinMemoryAnnotation(pod, req, errors);
  if (!errors.empty()) {
    pod.gpu_error = std::move(errors);
    return;
  }
  pod.gpu = std::move(req);
}

std::optional<GpuShare> ResolveGpuShare(const GpuRequest& req, const NodeGpuInfo& node) {
  if (!req.shared()) {
    if (node.replicas <= 1) return GpuShare{};
    return GpuShare{kMilliPerGpu / node.replicas, node.mps ? node.memory_mib / node.replicas : 0};
  }
  const int64_t device_mib = node.memory_mib;
  int64_t memory = req.share_memory_mib;
  if (req.share_memory_permille > 0) {
    if (device_mib > 0) {
      memory = (device_mib * req.share_memory_permille + kMilliPerGpu - 1) / kMilliPerGpu;
    } else if (req.milli == 0) {
      return std::nullopt;
    }
  }
  if (memory > 0 && device_mib > 0 && memory > device_mib) return std::nullopt;
  int32_t milli = req.milli;
  if (milli == 0 && req.share_memory_permille > 0) milli = req.share_memory_permille;
  if (milli == 0) {
    if (device_mib <= 0 || memory <= 0) return std::nullopt;
    const int64_t m = (memory * kMilliPerGpu + device_mib - 1) / device_mib;
    milli = static_cast<int32_t>(std::clamp<int64_t>(m, 1, kMilliPerGpu));
  }
  return GpuShare{milli, memory};
}

common::StatusOr<std::vector<HamiDevice>> ParseHamiNodeRegister(std::string_view text) {
  std::vector<HamiDevice> out;
  int position = 0;
  for (std::string_view entry : common::Split(text, ':')) {
    if (common::Trim(entry).empty()) continue;  // the trailing ':'
    auto error = [&](std::string_view why) {
      return common::InvalidArgumentError("annotation " + std::string(kHamiNodeRegisterAnnotation) +
                                          ": device " + std::to_string(position) + " " +
                                          common::Quote(entry) + ": " + std::string(why));
    };
    const std::vector<std::string_view> f = common::Split(entry, ',');
    if (f.size() < 7) return error("want UUID,split,memory,cores,type,numa,healthy");
    HamiDevice d;
    d.uuid = std::string(common::Trim(f[0]));
    if (d.uuid.empty()) return error("empty UUID");
    auto mem = ParseNonNegative(common::Trim(f[2]));
    if (!mem) return error("invalid memory " + common::Quote(f[2]));
    d.memory_mib = *mem;
    d.type = std::string(common::Trim(f[4]));
    const std::string_view healthy = common::Trim(f[6]);
    if (healthy != "true" && healthy != "false")
      return error("invalid health " + common::Quote(f[6]));
    d.healthy = healthy == "true";
    d.index = position;
    if (f.size() >= 8) {
      auto idx = ParseNonNegative(common::Trim(f[7]));
      if (!idx || *idx >= kMaxGpusPerNode) return error("invalid index " + common::Quote(f[7]));
      d.index = static_cast<int32_t>(*idx);
    }
    out.push_back(std::move(d));
    ++position;
  }
  return out;
}

common::StatusOr<std::string> FormatHamiDevicesToAllocate(const GpuAssignment& a,
                                                          const std::vector<HamiDevice>& devices,
                                                          int64_t device_memory_mib, int containers,
                                                          int gpu_container) {
  std::string entry;
  const bool whole = a.milli >= kMilliPerGpu && a.memory_mib == 0;
  for (int8_t idx : a.devices) {
    auto it = std::find_if(devices.begin(), devices.end(),
                           [&](const HamiDevice& d) { return d.index == idx; });
    if (it == devices.end()) {
      return common::NotFoundError("device " + std::to_string(idx) + " is not in annotation " +
                                   std::string(kHamiNodeRegisterAnnotation));
    }
    const int64_t device = device_memory_mib > 0 ? device_memory_mib : it->memory_mib;
    int64_t memory = whole ? device : a.memory_mib;
    // A compute-only share gets the same fraction of the device's memory.
    if (memory <= 0) memory = (device * a.milli + kMilliPerGpu - 1) / kMilliPerGpu;
    entry += it->uuid;
    entry += ",NVIDIA,";
    entry += std::to_string(memory);
    entry += ',';
    entry += std::to_string(a.milli / 10);
    entry += ':';
  }
  std::string out;
  for (int c = 0; c < std::max(containers, 1); ++c) {
    if (c == gpu_container) out += entry;
    out += ';';
  }
  return out;
}

void DeriveNodeGpuInfo(Node& node) {
  NodeReading r{node.meta.labels, Keys()};
  ReadNodeModel(r);
  r.allocatable = node.allocatable.Get(Names().nvidia_gpu);
  if (r.allocatable == 0) {
    // Time-slicing or MPS with renameByDefault: the replicas are nvidia.com/gpu.shared and the
    // product label keeps its plain name.
    r.allocatable = node.allocatable.Get(Names().nvidia_gpu_shared);
    if (r.allocatable > 0 && !r.mig) r.shared = true;
  }
  ReadNodeCount(r);
  if (!ReadNodeMemory(r, r.keys.seed_memory, kSeedMemoryLabel, "seed")) {
    ReadNodeMemory(r, r.keys.gfd_memory, kGfdMemoryLabel, "gfd");
  } else {
    WarnGfdMemoryConflict(r);
  }

  // Health and topology annotations.
  if (const std::string* unhealthy = node.meta.Annotation(kNodeUnhealthyGpusAnnotation)) {
    r.info.unhealthy_mask = ParseUnhealthy(*unhealthy, r.warnings);
  }
  MarkUnadvertisedDevices(r);
  ReadNodeNvlink(r, node.meta.Annotation(kNodeNvlinkIslandsAnnotation));

  r.info.source = std::move(r.source);
  node.gpu = std::move(r.info);
  node.gpu_error = std::move(r.warnings);
}

}  // namespace gpusched::api
