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
  Atom gfd_product, gfd_memory, gfd_count, gfd_replicas, gfd_clique;
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
    k.gfd_clique = common::Intern(kGfdCliqueLabel);
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


// ---- Sharing dialects ----

// One normalised per-device fact and the field that gave it (for conflict messages).
struct Fact {
  int64_t value = 0;
  bool set = false;
  std::string from;  // e.g. `annotation gpu-fraction="0.5"`
};

struct ShareFacts {
  Fact count, milli, memory_mib, memory_permille;
  std::string errors;
};

std::string FieldText(std::string_view kind, std::string_view key, std::string_view value) {
  std::string m(kind);
  m += ' ';
  m += key;
  m += '=';
  m += common::Quote(value);
  return m;
}

void Put(ShareFacts& f, Fact& slot, std::string_view what, int64_t v,
         const std::string& from) {
  if (slot.set) {
    if (slot.value != v) {
      Warn(f.errors, std::string(what) + ": " + slot.from + " conflicts with " + from);
    }
    return;
  }
  slot.value = v;
  slot.set = true;
  slot.from = from;
}

void BadField(ShareFacts& f, std::string_view kind, std::string_view key, std::string_view value,
              std::string_view want) {
  std::string m(kind);
  m += ' ';
  m += key;
  m += ": invalid value ";
  m += common::Quote(value);
  m += " (";
  m += want;
  m += ')';
  Warn(f.errors, m);
}

// A container resource set by the pod's containers (limits, else requests). Every container that
// sets it must agree. Returns the value and its text form.
struct ResourceValue {
  int64_t value = 0;
  std::string text;
};
std::optional<ResourceValue> PodResource(const Pod& pod, std::string_view key, ShareFacts& f) {
  const Atom name = common::Intern(key);
  std::optional<ResourceValue> out;
  for (const Container& c : pod.containers) {
    int64_t v = c.limits.Get(name);
    if (v == 0) v = c.requests.Get(name);
    if (v == 0) continue;
    if (out && out->value != v) {
      Warn(f.errors, "resource " + std::string(key) + ": containers disagree (" +
                         std::to_string(out->value) + " vs " + std::to_string(v) + ")");
      return std::nullopt;
    }
    out = ResourceValue{v, std::to_string(v)};
  }
  return out;
}

// Parses a decimal fraction "0.5" / ".25" into thousandths, rounded to nearest; nullopt unless
// 0 < f < 1 (and at least 0.001).
std::optional<int64_t> ParseFractionMilli(std::string_view s) {
  s = common::Trim(s);
  size_t dot = s.find('.');
  std::string_view ip = dot == std::string_view::npos ? s : s.substr(0, dot);
  std::string_view fp = dot == std::string_view::npos ? std::string_view() : s.substr(dot + 1);
  if (s.empty() || (ip.empty() && fp.empty())) return std::nullopt;
  if (!ip.empty() && !ParseNonNegative(ip)) return std::nullopt;
  if (!ip.empty() && *ParseNonNegative(ip) != 0) return std::nullopt;  // >= 1
  if (fp.empty() || fp.size() > 9) return std::nullopt;
  for (char c : fp) {
    if (c < '0' || c > '9') return std::nullopt;
  }
  int64_t num = *ParseNonNegative(fp);
  int64_t den = 1;
  for (size_t i = 0; i < fp.size(); ++i) den *= 10;
  int64_t milli = (num * 1000 + den / 2) / den;
  if (num == 0 || milli < 1 || milli >= kMilliPerGpu) return std::nullopt;
  return milli;
}

void ReadOwnDialect(const Pod& pod, ShareFacts& f) {
  if (const std::string* v = pod.meta.Annotation(kPodGpuMilliAnnotation)) {
    auto m = ParseNonNegative(common::Trim(*v));
    if (!m || *m < 1 || *m > kMilliPerGpu) {
      BadField(f, "annotation", kPodGpuMilliAnnotation, *v, "want 1..1000 milli-GPU per device");
    } else {
      Put(f, f.milli, "GPU compute share", *m,
          FieldText("annotation", kPodGpuMilliAnnotation, *v));
    }
  }
  if (const std::string* v = pod.meta.Annotation(kPodGpuShareMemoryAnnotation)) {
    auto mib = ParseMiB(*v);
    if (!mib || mib->value <= 0) {
      BadField(f, "annotation", kPodGpuShareMemoryAnnotation, *v,
               "want MiB per device or a quantity, e.g. 4096 or 4Gi");
    } else {
      Put(f, f.memory_mib, "GPU memory", mib->value,
          FieldText("annotation", kPodGpuShareMemoryAnnotation, *v));
    }
  }
  if (const std::string* v = pod.meta.Annotation(kPodGpuMemoryPercentAnnotation)) {
    auto p = ParseNonNegative(common::Trim(*v));
    if (!p || *p < 1 || *p > 100) {
      BadField(f, "annotation", kPodGpuMemoryPercentAnnotation, *v, "want 1..100 per device");
    } else {
      Put(f, f.memory_permille, "GPU memory share", *p * 10,
          FieldText("annotation", kPodGpuMemoryPercentAnnotation, *v));
    }
  }
}

void ReadHami(const Pod& pod, ShareFacts& f) {
  if (auto r = PodResource(pod, kHamiGpuMemResource, f)) {
    if (r->value < 0) {
      BadField(f, "resource", kHamiGpuMemResource, r->text, "want MiB per GPU");
    } else {
      Put(f, f.memory_mib, "GPU memory", r->value,
          FieldText("resource", kHamiGpuMemResource, r->text));
    }
  }
  if (auto r = PodResource(pod, kHamiGpuMemPercentResource, f)) {
    if (r->value < 1 || r->value > 100) {
      BadField(f, "resource", kHamiGpuMemPercentResource, r->text, "want 1..100 per GPU");
    } else {
      Put(f, f.memory_permille, "GPU memory share", r->value * 10,
          FieldText("resource", kHamiGpuMemPercentResource, r->text));
    }
  }
  if (auto r = PodResource(pod, kHamiGpuCoresResource, f)) {
    if (r->value < 0 || r->value > 100) {
      BadField(f, "resource", kHamiGpuCoresResource, r->text, "want 0..100 percent per GPU");
    } else {
      Put(f, f.milli, "GPU compute share", r->value * 10,
          FieldText("resource", kHamiGpuCoresResource, r->text));
    }
  }
}

void ReadAlibaba(const Pod& pod, ShareFacts& f) {
  const std::string* milli = pod.meta.Annotation(kAlibabaGpuMilliAnnotation);
  const std::string* count = pod.meta.Annotation(kAlibabaGpuCountAnnotation);
  int64_t m = 0;  // 0: absent or invalid (valid values are >= 1)
  int64_t n = 0;
  if (milli != nullptr) {
    const std::optional<int64_t> v = ParseNonNegative(common::Trim(*milli));
    if (!v || *v < 1 || *v > kMilliPerGpu) {
      BadField(f, "annotation", kAlibabaGpuMilliAnnotation, *milli, "want 1..1000 per GPU");
    } else {
      m = *v;
    }
  }
  if (count != nullptr) {
    const std::optional<int64_t> v = ParseNonNegative(common::Trim(*count));
    if (!v || *v < 1 || *v > kMaxGpusPerNode) {
      BadField(f, "annotation", kAlibabaGpuCountAnnotation, *count, "want 1..16 GPUs");
    } else {
      n = *v;
    }
  }
  if (m > 0 && n > 1 && m < kMilliPerGpu) {
    Warn(f.errors, FieldText("annotation", kAlibabaGpuMilliAnnotation, *milli) + " with " +
                       FieldText("annotation", kAlibabaGpuCountAnnotation, *count) +
                       ": a GPU fraction is for one GPU only (multi-GPU tasks use 1000)");
    return;
  }
  if (n > 0) Put(f, f.count, "GPU count", n, FieldText("annotation", kAlibabaGpuCountAnnotation, *count));
  if (m > 0) {
    const std::string from = FieldText("annotation", kAlibabaGpuMilliAnnotation, *milli);
    Put(f, f.milli, "GPU compute share", m, from);
    // A fraction of a GPU implies the same fraction of its memory (gpu-dialects.md §2.8).
    if (m < kMilliPerGpu) Put(f, f.memory_permille, "GPU memory share", m, from);
  }
}

void ReadAliyun(const Pod& pod, ShareFacts& f) {
  auto r = PodResource(pod, kAliyunGpuMemResource, f);
  if (!r) return;
  if (r->value < 1 || r->value > (int64_t{1} << 20)) {
    BadField(f, "resource", kAliyunGpuMemResource, r->text, "want GiB on one GPU");
    return;
  }
  const std::string from = FieldText("resource", kAliyunGpuMemResource, r->text);
  Put(f, f.count, "GPU count", 1, from);
  Put(f, f.memory_mib, "GPU memory", r->value * 1024, from);
}

void ReadKai(const Pod& pod, ShareFacts& f) {
  const std::string* frac = pod.meta.Annotation(kKaiGpuFractionAnnotation);
  const std::string* mem = pod.meta.Annotation(kKaiGpuMemoryAnnotation);
  const std::string* num = pod.meta.Annotation(kKaiNumDevicesAnnotation);
  if (frac != nullptr && mem != nullptr) {
    Warn(f.errors, FieldText("annotation", kKaiGpuFractionAnnotation, *frac) + " and " +
                       FieldText("annotation", kKaiGpuMemoryAnnotation, *mem) +
                       ": set only one of them");
    return;
  }
  if (frac != nullptr) {
    if (auto m = ParseFractionMilli(*frac)) {
      const std::string from = FieldText("annotation", kKaiGpuFractionAnnotation, *frac);
      // A KAI fraction is a share of the device's memory; co-located fractions time-slice, so
      // the compute share is accounted the same.
      Put(f, f.memory_permille, "GPU memory share", *m, from);
      Put(f, f.milli, "GPU compute share", *m, from);
    } else {
      BadField(f, "annotation", kKaiGpuFractionAnnotation, *frac,
               "want a fraction 0 < f < 1, e.g. 0.5");
    }
  }
  if (mem != nullptr) {
    auto mib = ParseMiB(*mem);
    if (!mib || mib->value <= 0) {
      BadField(f, "annotation", kKaiGpuMemoryAnnotation, *mem, "want MiB per GPU, e.g. 4096");
    } else {
      Put(f, f.memory_mib, "GPU memory", mib->value,
          FieldText("annotation", kKaiGpuMemoryAnnotation, *mem));
    }
  }
  if (num != nullptr) {
    auto n = ParseNonNegative(common::Trim(*num));
    if (!n || *n < 1 || *n > kMaxGpusPerNode) {
      BadField(f, "annotation", kKaiNumDevicesAnnotation, *num, "want 1..16 GPUs");
    } else if (frac == nullptr && mem == nullptr) {
      Warn(f.errors, FieldText("annotation", kKaiNumDevicesAnnotation, *num) + " needs " +
                         std::string(kKaiGpuFractionAnnotation) + " or " +
                         std::string(kKaiGpuMemoryAnnotation));
    } else {
      Put(f, f.count, "GPU count", *n,
          FieldText("annotation", kKaiNumDevicesAnnotation, *num));
    }
  }
}

// Koordinator values are totals over gpu.shared devices: per device = total / shared, rounded up.
// Returns the first Koordinator field present ("" when none): the caller rejects mixing them with
// nvidia.com/gpu.
std::string ReadKoordinator(const Pod& pod, ShareFacts& f) {
  auto ratio = PodResource(pod, kKoordGpuMemoryRatioResource, f);
  auto core = PodResource(pod, kKoordGpuCoreResource, f);
  auto mem = PodResource(pod, kKoordGpuMemoryResource, f);
  auto shared = PodResource(pod, kKoordGpuSharedResource, f);
  std::string first;  // the first Koordinator field present, for messages
  if (ratio) first = FieldText("resource", kKoordGpuMemoryRatioResource, ratio->text);
  else if (mem) first = FieldText("resource", kKoordGpuMemoryResource, mem->text);
  else if (core) first = FieldText("resource", kKoordGpuCoreResource, core->text);
  else if (shared) first = FieldText("resource", kKoordGpuSharedResource, shared->text);
  if (first.empty()) return first;
  if (ratio && mem) {
    Warn(f.errors, FieldText("resource", kKoordGpuMemoryRatioResource, ratio->text) + " and " +
                       FieldText("resource", kKoordGpuMemoryResource, mem->text) +
                       ": set only one of them");
    return first;
  }
  if (!ratio && !mem) {
    Warn(f.errors, first + ": Koordinator GPU shares need " +
                       std::string(kKoordGpuMemoryResource) + " or " +
                       std::string(kKoordGpuMemoryRatioResource));
    return first;
  }
  int64_t s = 1;
  if (shared) {
    if (shared->value < 1 || shared->value > kMaxGpusPerNode) {
      BadField(f, "resource", kKoordGpuSharedResource, shared->text, "want 1..16 GPUs");
      return first;
    }
    s = shared->value;
    Put(f, f.count, "GPU count", s,
        FieldText("resource", kKoordGpuSharedResource, shared->text));
  }
  auto per_device = [&](int64_t total) { return total / s + (total % s != 0 ? 1 : 0); };
  if (ratio) {
    const int64_t p = ratio->value < 1 ? 0 : per_device(ratio->value * 10);
    if (p < 1 || p > kMilliPerGpu) {
      BadField(f, "resource", kKoordGpuMemoryRatioResource, ratio->text,
               "want 1..100 per shared GPU, in total 1..100 x " +
                   std::string(kKoordGpuSharedResource));
    } else {
      Put(f, f.memory_permille, "GPU memory share", p,
          FieldText("resource", kKoordGpuMemoryRatioResource, ratio->text));
    }
  }
  if (mem) {
    const int64_t mib = mem->value < 1 ? 0 : per_device(mem->value / kMiB + (mem->value % kMiB != 0));
    if (mib < 1) {
      BadField(f, "resource", kKoordGpuMemoryResource, mem->text, "want bytes, e.g. 8Gi");
    } else {
      Put(f, f.memory_mib, "GPU memory", mib,
          FieldText("resource", kKoordGpuMemoryResource, mem->text));
    }
  }
  if (core) {
    const int64_t m = core->value < 1 ? 0 : per_device(core->value * 10);
    if (m < 1 || m > kMilliPerGpu) {
      BadField(f, "resource", kKoordGpuCoreResource, core->text,
               "want 1..100 per shared GPU, in total 1..100 x " +
                   std::string(kKoordGpuSharedResource));
    } else {
      Put(f, f.milli, "GPU compute share", m,
          FieldText("resource", kKoordGpuCoreResource, core->text));
    }
  }
  return first;
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

  // Sharing dialects: per-device facts from every dialect present; they must agree.
  ShareFacts f;
  ReadOwnDialect(pod, f);
  ReadHami(pod, f);
  ReadAlibaba(pod, f);
  ReadAliyun(pod, f);
  ReadKai(pod, f);
  const std::string koord = ReadKoordinator(pod, f);
  if (count > 0) {
    const std::string from = "resource nvidia.com/gpu=" + common::Quote(std::to_string(count));
    if (!koord.empty()) {
      Warn(f.errors, from + " with " + koord +
                         ": Koordinator GPU shares must not be mixed with whole GPUs");
    } else {
      Put(f, f.count, "GPU count", count, from);
    }
  }
  if (f.memory_mib.set && f.memory_permille.set) {
    Warn(f.errors, "GPU memory: " + f.memory_mib.from + " conflicts with " +
                       f.memory_permille.from + " (give the memory share once)");
  }
  if (!f.errors.empty()) {
    pod.gpu_error = std::move(f.errors);
    return;
  }
  const bool share = f.milli.set || f.memory_mib.set || f.memory_permille.set;
  if (!f.count.set && !share) return;

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
  if (!errors.empty()) {
    pod.gpu_error = std::move(errors);
    return;
  }
  pod.gpu = std::move(req);
}

std::optional<GpuShare> ResolveGpuShare(const GpuRequest& req, const NodeGpuInfo& node) {
  if (!req.shared()) return GpuShare{};
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
    if (healthy != "true" && healthy != "false") return error("invalid health " + common::Quote(f[6]));
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
                                                          int64_t device_memory_mib,
                                                          int containers, int gpu_container) {
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
    } else {
      info.nvlink_known = true;
    }
  }
  // GFD's clique label: the node's GPUs are all in one NVLink domain (island 0 for all).
  if (!info.nvlink_known) {
    bool present = false;
    std::string_view clique = LabelValue(labels, k.gfd_clique, &present);
    if (present && !common::Trim(clique).empty()) info.nvlink_known = true;
  }

  info.source = std::move(source);
  node.gpu = std::move(info);
  node.gpu_error = std::move(warnings);
}

}  // namespace gpusched::api
