// SPDX-License-Identifier: Apache-2.0
#include "src/api/resources.h"

#include <algorithm>
#include <cstdint>

namespace gpusched::api {

using common::Atom;

const WellKnown& Names() {
  // Interned once, on first use; the function-local static is thread-safe and never destroyed
  // before the interner (which is itself never destroyed).
  static const WellKnown names = [] {
    WellKnown n;
    n.cpu = common::Intern("cpu");
    n.memory = common::Intern("memory");
    n.ephemeral_storage = common::Intern("ephemeral-storage");
    n.pods = common::Intern("pods");
    n.nvidia_gpu = common::Intern("nvidia.com/gpu");
    n.nvidia_gpu_shared = common::Intern("nvidia.com/gpu.shared");
    n.hostname = common::Intern("kubernetes.io/hostname");
    n.zone = common::Intern("topology.kubernetes.io/zone");
    n.region = common::Intern("topology.kubernetes.io/region");
    n.instance_type = common::Intern("node.kubernetes.io/instance-type");
    n.default_scheduler = common::Intern("default-scheduler");
    return n;
  }();
  return names;
}

namespace {

// The fixed slot for a built-in resource, or nullptr for an extended one. RL is ResourceList or
// const ResourceList.
template <typename RL>
auto* Slot(RL& r, Atom name) {
  const WellKnown& n = Names();
  if (name == n.cpu) return &r.milli_cpu;
  if (name == n.memory) return &r.memory;
  if (name == n.ephemeral_storage) return &r.ephemeral_storage;
  if (name == n.pods) return &r.pods;
  return static_cast<decltype(&r.pods)>(nullptr);
}

// Saturating arithmetic: resource sums never overflow (UBSan runs in CI).
int64_t SatAdd(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return b > 0 ? INT64_MAX : INT64_MIN;
  return r;
}
int64_t SatSub(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_sub_overflow(a, b, &r)) return b < 0 ? INT64_MAX : INT64_MIN;
  return r;
}

// Merges `b` into `a` (both sorted by atom id): a[k] = op(a[k] or 0, b[k] or 0), dropping zeros.
template <typename Op>
void MergeScalars(std::vector<std::pair<Atom, int64_t>>& a,
                  const std::vector<std::pair<Atom, int64_t>>& b, Op op) {
  if (b.empty()) {
    if (a.empty()) return;
    // op(x, 0) may still change x (Max with a negative value); apply it in place.
    for (auto& [name, v] : a) v = op(v, 0);
    std::erase_if(a, [](const auto& e) { return e.second == 0; });
    return;
  }
  if (a.empty()) {  // into an empty list (a node's first pod): reuses a's capacity
    a.assign(b.begin(), b.end());
    for (auto& [name, v] : a) v = op(0, v);
    std::erase_if(a, [](const auto& e) { return e.second == 0; });
    return;
  }
  // In place when every key of `b` is already in `a` (the usual case: removing a pod's requests
  // from its node's sum, or adding requests of resources the node already has): no allocation.
  {
    size_t i = 0;
    bool subset = true;
    for (const auto& entry : b) {
      while (i < a.size() && a[i].first < entry.first) ++i;
      if (i == a.size() || a[i].first != entry.first) {
        subset = false;
        break;
      }
    }
    if (subset) {
      size_t j = 0;
      for (auto& [name, v] : a) {
        if (j < b.size() && b[j].first == name) {
          v = op(v, b[j++].second);
        } else {
          v = op(v, 0);
        }
      }
      std::erase_if(a, [](const auto& e) { return e.second == 0; });
      return;
    }
  }
  std::vector<std::pair<Atom, int64_t>> out;
  out.reserve(a.size() + b.size());
  size_t i = 0;
  size_t j = 0;
  while (i < a.size() || j < b.size()) {
    Atom name;
    int64_t v;
    if (j == b.size() || (i < a.size() && a[i].first < b[j].first)) {
      name = a[i].first;
      v = op(a[i++].second, 0);
    } else if (i == a.size() || b[j].first < a[i].first) {
      name = b[j].first;
      v = op(0, b[j++].second);
    } else {
      name = a[i].first;
      v = op(a[i++].second, b[j++].second);
    }
    if (v != 0) out.emplace_back(name, v);
  }
  a = std::move(out);
}

}  // namespace

int64_t ResourceList::Get(Atom name) const {
  if (const int64_t* slot = Slot(*this, name)) return *slot;
  auto it = std::lower_bound(scalar.begin(), scalar.end(), name,
                             [](const auto& e, Atom n) { return e.first < n; });
  return it != scalar.end() && it->first == name ? it->second : 0;
}

void ResourceList::Set(Atom name, int64_t value) {
  if (int64_t* slot = Slot(*this, name)) {
    *slot = value;
    return;
  }
  auto it = std::lower_bound(scalar.begin(), scalar.end(), name,
                             [](const auto& e, Atom n) { return e.first < n; });
  if (it != scalar.end() && it->first == name) {
    if (value == 0) {
      scalar.erase(it);
    } else {
      it->second = value;
    }
  } else if (value != 0) {
    scalar.insert(it, {name, value});
  }
}

void ResourceList::Add(const ResourceList& o) {
  milli_cpu = SatAdd(milli_cpu, o.milli_cpu);
  memory = SatAdd(memory, o.memory);
  ephemeral_storage = SatAdd(ephemeral_storage, o.ephemeral_storage);
  pods = SatAdd(pods, o.pods);
  if (!o.scalar.empty()) MergeScalars(scalar, o.scalar, SatAdd);
}

void ResourceList::Sub(const ResourceList& o) {
  milli_cpu = SatSub(milli_cpu, o.milli_cpu);
  memory = SatSub(memory, o.memory);
  ephemeral_storage = SatSub(ephemeral_storage, o.ephemeral_storage);
  pods = SatSub(pods, o.pods);
  if (!o.scalar.empty()) MergeScalars(scalar, o.scalar, SatSub);
}

void ResourceList::Max(const ResourceList& o) {
  milli_cpu = std::max(milli_cpu, o.milli_cpu);
  memory = std::max(memory, o.memory);
  ephemeral_storage = std::max(ephemeral_storage, o.ephemeral_storage);
  pods = std::max(pods, o.pods);
  MergeScalars(scalar, o.scalar, [](int64_t x, int64_t y) { return std::max(x, y); });
}

bool ResourceList::IsZero() const {
  return milli_cpu == 0 && memory == 0 && ephemeral_storage == 0 && pods == 0 && scalar.empty();
}

}  // namespace gpusched::api
