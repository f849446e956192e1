// SPDX-License-Identifier: Apache-2.0
// The pod GPU-sharing request dialects (docs/gpu-request-dialects.md §2): ours
// (gpusched.io/gpu-* annotations), HAMi resources, Alibaba annotations, aliyun gpushare, KAI
// annotations and Koordinator resources, each read into the per-device facts that
// DeriveGpuRequest (gpu.cc) turns into a GpuRequest. Error text is built only when something is
// wrong.
#include "src/api/gpu_dialects.h"

#include <optional>
#include <string>

#include "src/api/gpu.h"
#include "src/api/types.h"
#include "src/common/strings.h"

namespace gpusched::api::gpu_internal {
namespace {

using common::Atom;

std::string FieldText(std::string_view kind, std::string_view key, std::string_view value) {
  std::string m(kind);
  m += ' ';
  m += key;
  m += '=';
  m += common::Quote(value);
  return m;
}

void Put(ShareFacts& f, Fact& slot, std::string_view what, int64_t v, const std::string& from) {
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
      Put(f, f.milli, "GPU compute share", *m, FieldText("annotation", kPodGpuMilliAnnotation, *v));
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
  if (n > 0)
    Put(f, f.count, "GPU count", n, FieldText("annotation", kAlibabaGpuCountAnnotation, *count));
  if (m > 0) {
    const std::string from = FieldText("annotation", kAlibabaGpuMilliAnnotation, *milli);
    Put(f, f.milli, "GPU compute share", m, from);
    // A fraction of a GPU implies the same fraction of its memory (docs/gpu-request-dialects.md
    // §2, Alibaba).
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
      Put(f, f.count, "GPU count", *n, FieldText("annotation", kKaiNumDevicesAnnotation, *num));
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
  if (ratio)
    first = FieldText("resource", kKoordGpuMemoryRatioResource, ratio->text);
  else if (mem)
    first = FieldText("resource", kKoordGpuMemoryResource, mem->text);
  else if (core)
    first = FieldText("resource", kKoordGpuCoreResource, core->text);
  else if (shared)
    first = FieldText("resource", kKoordGpuSharedResource, shared->text);
  if (first.empty()) return first;
  if (ratio && mem) {
    Warn(f.errors, FieldText("resource", kKoordGpuMemoryRatioResource, ratio->text) + " and " +
                       FieldText("resource", kKoordGpuMemoryResource, mem->text) +
                       ": set only one of them");
    return first;
  }
  if (!ratio && !mem) {
    Warn(f.errors, first + ": Koordinator GPU shares need " + std::string(kKoordGpuMemoryResource) +
                       " or " + std::string(kKoordGpuMemoryRatioResource));
    return first;
  }
  int64_t s = 1;
  if (shared) {
    if (shared->value < 1 || shared->value > kMaxGpusPerNode) {
      BadField(f, "resource", kKoordGpuSharedResource, shared->text, "want 1..16 GPUs");
      return first;
    }
    s = shared->value;
    Put(f, f.count, "GPU count", s, FieldText("resource", kKoordGpuSharedResource, shared->text));
  }
  auto per_device = [&](int64_t total) { return total / s + (total % s != 0 ? 1 : 0); };
  if (ratio) {
    const int64_t p = ratio->value < 1 ? 0 : per_device(ratio->value * 10);
    if (p < 1 || p > kMilliPerGpu) {
      BadField(
          f, "resource", kKoordGpuMemoryRatioResource, ratio->text,
          "want 1..100 per shared GPU, in total 1..100 x " + std::string(kKoordGpuSharedResource));
    } else {
      Put(f, f.memory_permille, "GPU memory share", p,
          FieldText("resource", kKoordGpuMemoryRatioResource, ratio->text));
    }
  }
  if (mem) {
    const int64_t mib =
        mem->value < 1 ? 0 : per_device(mem->value / kMiB + (mem->value % kMiB != 0));
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
      BadField(
          f, "resource", kKoordGpuCoreResource, core->text,
          "want 1..100 per shared GPU, in total 1..100 x " + std::string(kKoordGpuSharedResource));
    } else {
      Put(f, f.milli, "GPU compute share", m,
          FieldText("resource", kKoordGpuCoreResource, core->text));
    }
  }
  return first;
}

}  // namespace

ShareFacts ReadShareFacts(const Pod& pod, int64_t whole_gpus, std::string_view whole_resource) {
  ShareFacts f;
  ReadOwnDialect(pod, f);
  ReadHami(pod, f);
  ReadAlibaba(pod, f);
  ReadAliyun(pod, f);
  ReadKai(pod, f);
  const std::string koord = ReadKoordinator(pod, f);
  if (whole_gpus > 0) {
    const std::string from =
        "resource " + std::string(whole_resource) + "=" + common::Quote(std::to_string(whole_gpus));
    if (!koord.empty()) {
      Warn(f.errors,
           from + " with " + koord + ": Koordinator GPU shares must not be mixed with whole GPUs");
    } else {
      Put(f, f.count, "GPU count", whole_gpus, from);
    }
  }
  if (f.memory_mib.set && f.memory_permille.set) {
    Warn(f.errors, "GPU memory: " + f.memory_mib.from + " conflicts with " +
                       f.memory_permille.from + " (give the memory share once)");
  }
  return f;
}

}  // namespace gpusched::api::gpu_internal
