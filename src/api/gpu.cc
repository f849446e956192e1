// SPDX-License-Identifier: Apache-2.0
// GPU request and inventory normalisation. Runs once per object, on decode; error and warning text
// is built only when something is wrong.
#include "src/api/gpu.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <limits>
#include <optional>
#include <string>

#include "src/api/quantity.h"
#include "src/api/types.h"
#include "src/common/strings.h"

namespace gpusched::api {
namespace {

using common::Atom;

constexpr int64_t kMiB = 1024 * 1024;

// Keys read here, interned once.
struct GpuKeys {
  Atom seed_model, seed_memory, seed_count;
  Atom gfd_product, gfd_memory, gfd_count, gfd_replicas;
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
    return k;
  }();
  return keys;
}

char Upper(char c) { return c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c; }
bool IsSep(char c) { return c == '-' || c == '_' || c == ' ' || c == '\t'; }

// A non-negative decimal integer, digits only.
std::optional<int64_t> ParseNonNegative(std::string_view s) {
  if (s.empty()) return std::nullopt;
  int64_t v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size() || v < 0 || s.front() == '-') {
    return std::nullopt;
  }
  return v;
}

bool IsUnitSuffix(char c) {
  return c == 'i' || c == 'k' || c == 'M' || c == 'G' || c == 'T' || c == 'P' || c == 'E';
}

struct MiB {
  int64_t value = 0;
  bool plain = false;  // a bare integer (unit implied), as opposed to "16Gi"
};

// A memory amount in MiB: a bare non-negative integer is MiB; a quantity ending in a byte unit
// (Ki..Ei, k..E) is bytes, rounded up to whole MiB.
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

std::string_view LabelValue(const Labels& labels, Atom key, bool* present) {
  Atom v;
  *present = labels.Get(key, &v);
  return *present ? common::Str(v) : std::string_view();
}

void Warn(std::string& out, std::string_view msg) {
  if (!out.empty()) out += "; ";
  out += msg;
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
  uint32_t seen = 0;
  bool first = true;
  bool whole = true;
  for (std::string_view tok : common::Split(text, ',')) {
    std::vector<std::string_view> parts = common::Split(tok, ':');
    if (parts.size() > 3) return error("too many ':' in " + common::Quote(tok));
    auto idx = ParseNonNegative(parts[0]);
    if (!idx || *idx >= kMaxGpusPerNode) {
      return error("invalid device index " + common::Quote(parts[0]) + " (want 0..15)");
    }
    if (seen >> *idx & 1u) return error("device " + std::to_string(*idx) + " listed twice");
    seen |= 1u << *idx;
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
    a.devices.push_back(static_cast<int8_t>(*idx));
  }
  return a;
}

void DeriveGpuRequest(Pod& pod) {
  pod.gpu = GpuRequest{};
  pod.gpu_error.clear();
  const Atom gpu = Names().nvidia_gpu;
  int64_t sum = 0;
  int64_t sidecars = 0;
  int64_t init_max = 0;
  bool negative = false;
  for (const Container& c : pod.containers) {
    int64_t n = ContainerGpus(c, gpu);
    negative |= n < 0;
    sum = SatAdd(sum, n);
  }
  for (const Container& c : pod.init_containers) {
    int64_t n = ContainerGpus(c, gpu);
    negative |= n < 0;
    if (c.restartable) {
      sum = SatAdd(sum, n);
      sidecars = SatAdd(sidecars, n);
      init_max = std::max(init_max, sidecars);
    } else {
      init_max = std::max(init_max, SatAdd(n, sidecars));
    }
  }
  int64_t count = std::max(sum, init_max);
  if (negative) {
    pod.gpu_error = "resource nvidia.com/gpu: negative count";
    return;
  }
  if (count == 0) return;

  GpuRequest req;
  req.count = ClampToInt32(count);
  req.milli = kMilliPerGpu;
  std::string errors;
  if (const std::string* models = pod.meta.Annotation(kPodGpuModelAnnotation)) {
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
  if (const std::string* mem = pod.meta.Annotation(kPodGpuMemoryAnnotation)) {
    if (auto mib = ParseMiB(*mem)) {
      req.min_device_memory_mib = mib->value;
    } else {
      std::string m = "annotation ";
      m += kPodGpuMemoryAnnotation;
      m += ": invalid value ";
      m += common::Quote(*mem);
      m += " (want MiB, e.g. 16384)";
      Warn(errors, m);
    }
  }
  if (!errors.empty()) {
    pod.gpu_error = std::move(errors);
    return;
  }
  pod.gpu = std::move(req);
}

void DeriveNodeGpuInfo(Node& node) {
  const GpuKeys& k = Keys();
  const Labels& labels = node.meta.labels;
  NodeGpuInfo info;
  std::string warnings;
  std::string source;
  auto add_source = [&](std::string_view fact, std::string_view from) {
    if (!source.empty()) source += ' ';
    source += fact;
    source += '=';
    source += from;
  };

  // Model.
  bool seed_model_present = false;
  bool gfd_model_present = false;
  std::string_view seed_model = LabelValue(labels, k.seed_model, &seed_model_present);
  std::string_view gfd_model = LabelValue(labels, k.gfd_product, &gfd_model_present);
  std::string folded_seed = seed_model_present ? FoldModel(seed_model) : std::string();
  std::string folded_gfd = gfd_model_present ? FoldModel(gfd_model) : std::string();
  bool shared = HasSharedSuffix(folded_seed) || HasSharedSuffix(folded_gfd);
  bool mig = HasMig(folded_seed) || HasMig(folded_gfd);
  std::string model;
  if (seed_model_present) {
    model = NormalizeGpuModel(seed_model);
    if (!model.empty()) {
      add_source("model", "seed");
    } else {
      Warn(warnings, InvalidLabel(kSeedModelLabel, seed_model, "want a GPU model, e.g. A100"));
    }
  }
  if (model.empty() && gfd_model_present) {
    model = NormalizeGpuModel(gfd_model);
    if (!model.empty()) {
      add_source("model", "gfd");
    } else {
      Warn(warnings, InvalidLabel(kGfdProductLabel, gfd_model, "want a GPU model, e.g. A100"));
    }
  }
  if (!model.empty()) {
    info.model = common::Intern(model);
    info.model_family = common::Intern(std::string_view(model).substr(0, model.find('-')));
  }

  // Count.
  auto read_count = [&](Atom key, std::string_view name, std::optional<int64_t>* out) {
    bool present = false;
    std::string_view v = LabelValue(labels, key, &present);
    if (!present) return;
    *out = ParseNonNegative(v);
    if (!*out) Warn(warnings, InvalidLabel(name, v, "want an integer count"));
  };
  std::optional<int64_t> seed_count;
  std::optional<int64_t> gfd_count;
  read_count(k.seed_count, kSeedCountLabel, &seed_count);
  read_count(k.gfd_count, kGfdCountLabel, &gfd_count);
  int64_t allocatable = node.allocatable.Get(Names().nvidia_gpu);
  int64_t count = 0;
  if (mig) Warn(warnings, "MIG single strategy: counts MIG devices");
  if (seed_count) {
    count = *seed_count;
    add_source("count", "seed");
    if (gfd_count && *gfd_count != *seed_count && !mig) {
      Warn(warnings, "label " + std::string(kSeedCountLabel) + "=" + std::to_string(*seed_count) +
                         " disagrees with " + std::string(kGfdCountLabel) + "=" +
                         std::to_string(*gfd_count) + "; using " + std::to_string(*seed_count));
    }
  } else if (gfd_count && !mig) {
    count = *gfd_count;
    add_source("count", "gfd");
  } else if (allocatable > 0) {
    count = allocatable;
    add_source("count", "allocatable");
    if (shared && !mig) {
      bool present = false;
      auto replicas = ParseNonNegative(LabelValue(labels, k.gfd_replicas, &present));
      if (replicas && *replicas > 0) {
        count = allocatable / *replicas;
      } else {
        Warn(warnings, "shared GPUs without a count label: allocatable nvidia.com/gpu counts "
                       "replicas, not GPUs");
      }
    }
  }
  if (count > kMaxGpusPerNode) {
    Warn(warnings, "GPU count " + std::to_string(count) + " exceeds " +
                       std::to_string(kMaxGpusPerNode) + "; clamped");
    count = kMaxGpusPerNode;
  }
  info.count = static_cast<int32_t>(count);

  // Memory per GPU.
  auto read_memory = [&](Atom key, std::string_view name, std::string_view from) {
    bool present = false;
    std::string_view v = LabelValue(labels, key, &present);
    if (!present) return false;
    auto mib = ParseMiB(v);
    if (!mib || mib->value <= 0) {
      Warn(warnings, InvalidLabel(name, v, "want MiB, e.g. 40960"));
      return false;
    }
    info.memory_mib = mib->value;
    if (mib->plain && mib->value < 1024) {
      info.memory_mib = mib->value * 1024;
      Warn(warnings, "label " + std::string(name) + ": value " + common::Quote(v) +
                         " is below 1024, probably GB; read as " +
                         std::to_string(info.memory_mib) + " MiB");
    }
    add_source("memory", from);
    return true;
  };
  if (!read_memory(k.seed_memory, kSeedMemoryLabel, "seed")) {
    read_memory(k.gfd_memory, kGfdMemoryLabel, "gfd");
  }

  // Health and topology annotations.
  if (const std::string* unhealthy = node.meta.Annotation(kNodeUnhealthyGpusAnnotation)) {
    info.unhealthy_mask = ParseUnhealthy(*unhealthy, warnings);
  }
  // A device plugin that stops advertising a device lowers allocatable below the labelled count:
  // the missing devices (we cannot tell which, so the highest indices) are never allocated.
  // Only when the count came from a label and allocatable still lists some GPUs (0 usually means
  // "not reported yet"); shared and MIG nodes advertise replicas or slices, not GPUs.
  if (!source.empty() && source.find("count=allocatable") == std::string::npos && !shared &&
      !mig && allocatable > 0 && allocatable < count) {
    int64_t healthy = count - std::popcount(info.unhealthy_mask &
                                            ((count >= 32 ? 0u : (1u << count)) - 1u));
    for (int d = info.count - 1; d >= 0 && healthy > allocatable; --d) {
      if (info.Healthy(d)) {
        info.unhealthy_mask |= 1u << d;
        --healthy;
      }
    }
    Warn(warnings, "allocatable nvidia.com/gpu=" + std::to_string(allocatable) +
                       " is below the GPU count " + std::to_string(count) +
                       "; the highest-index devices are treated as unhealthy");
  }
  if (const std::string* islands = node.meta.Annotation(kNodeNvlinkIslandsAnnotation)) {
    std::string why;
    if (!ParseIslands(*islands, info.count, info.island, &why)) {
      Warn(warnings, "annotation " + std::string(kNodeNvlinkIslandsAnnotation) +
                         ": invalid value " + common::Quote(*islands) + " (" + why +
                         "), ignored");
    }
  }

  info.source = std::move(source);
  node.gpu = std::move(info);
  node.gpu_error = std::move(warnings);
}

}  // namespace gpusched::api
