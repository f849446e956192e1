// SPDX-License-Identifier: Apache-2.0
#include "src/plugins/gpu_fragmentation/frag.h"

#include <algorithm>
#include <array>
#include <numeric>

namespace gpusched::plugins::gpu_fragmentation {
namespace {

// Rescale stored weights when the observation scale grows this large (keeps doubles finite).
constexpr double kRenormaliseAt = 1e200;

}  // namespace

void TypicalPodLearner::Observe(int64_t cpu_milli, const api::GpuRequest& gpu) {
  ++observations_;
  const int32_t count = gpu.empty() ? 0 : gpu.count;
  const int32_t milli = gpu.empty() ? 0 : gpu.milli;
  const double w = scale_;
  scale_ /= decay_;
  if (scale_ > kRenormaliseAt) {
    for (Entry& e : entries_) e.weight /= scale_;
    scale_ = 1.0;
  }
  for (Entry& e : entries_) {
    if (e.cpu_milli == cpu_milli && e.count == count && e.milli == milli &&
        e.models == gpu.models) {
      e.weight += w;
      return;
    }
  }
  if (static_cast<int32_t>(entries_.size()) < max_types_) {
    entries_.push_back(Entry{cpu_milli, count, milli, gpu.models, w});
    return;
  }
  // Full: the new type replaces the lightest entry and inherits its weight (space-saving), so a
  // type that keeps arriving climbs while one-off types do not churn the heavy ones.
  auto lightest =
      std::min_element(entries_.begin(), entries_.end(),
                       [](const Entry& a, const Entry& b) { return a.weight < b.weight; });
  *lightest = Entry{cpu_milli, count, milli, gpu.models, lightest->weight + w};
}

std::vector<TypicalPod> TypicalPodLearner::Snapshot() const {
  std::vector<size_t> order(entries_.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [this](size_t a, size_t b) {
    const Entry& x = entries_[a];
    const Entry& y = entries_[b];
    if (x.weight != y.weight) return x.weight > y.weight;
    if (x.cpu_milli != y.cpu_milli) return x.cpu_milli > y.cpu_milli;
    if (x.milli != y.milli) return x.milli > y.milli;
    return x.count > y.count;
  });
  double total = 0;
  for (const Entry& e : entries_) total += e.weight;
  std::vector<TypicalPod> out;
  if (total <= 0) return out;
  double kept = 0;
  for (size_t i : order) {
    const Entry& e = entries_[i];
    out.push_back(TypicalPod{e.cpu_milli, e.count, e.milli, e.models, e.weight});
    kept += e.weight;
    if (kept >= coverage_ * total) break;
  }
  for (TypicalPod& m : out) m.p /= kept;
  return out;
}

NodeFragmentation::NodeFragmentation(std::span<const TypicalPod> types,
                                     std::span<const uint8_t> allowed,
                                     std::span<TypeAggregate> aggregates, const NodeView& node)
    : types_(types), allowed_(allowed), agg_(aggregates), node_(node) {
  for (int g = 0; g < node.gpus; ++g) idle_total_ += node.idle[static_cast<size_t>(g)];
  for (size_t m = 0; m < types.size(); ++m) {
    TypeAggregate a;
    const int32_t d = types[m].milli;
    for (int g = 0; g < node.gpus; ++g) {
      const int32_t r = node.idle[static_cast<size_t>(g)];
      if (r >= d) {
        ++a.fit;
      } else {
        a.small += r;
      }
    }
    agg_[m] = a;
    base_ += types[m].p * static_cast<double>(
                              FragmentOf(types[m], allowed[m] != 0, a, idle_total_, node.free_cpu));
  }
}

double NodeFragmentation::Delta(int64_t c, int32_t d, std::span<const int8_t> devices) const {
  const int64_t idle_after =
      idle_total_ - static_cast<int64_t>(d) * static_cast<int64_t>(devices.size());
  const int64_t cpu_after = node_.free_cpu - c;
  // The devices once each, with the milli each takes: a device listed n times (replicas of one
  // shared GPU) takes n * d.
  std::array<int8_t, api::kMaxGpusPerNode> gpu{};
  std::array<int32_t, api::kMaxGpusPerNode> take{};
  size_t n = 0;
  for (int8_t g : devices) {
    size_t k = 0;
    while (k < n && gpu[k] != g) ++k;
    if (k == n) gpu[n++] = g;
    take[k] += d;
  }
  double after = 0;
  for (size_t m = 0; m < types_.size(); ++m) {
    TypeAggregate a = agg_[m];
    const int32_t dm = types_[m].milli;
    for (size_t k = 0; k < n; ++k) {
      const int32_t r = node_.idle[static_cast<size_t>(gpu[k])];
      const int32_t r2 = r - take[k];
      if (r >= dm) {
        --a.fit;
      } else {
        a.small -= r;
      }
      if (r2 >= dm) {
        ++a.fit;
      } else {
        a.small += r2;
      }
    }
    after += types_[m].p *
             static_cast<double>(FragmentOf(types_[m], allowed_[m] != 0, a, idle_after, cpu_after));
  }
  return after - base_;
}

}  // namespace gpusched::plugins::gpu_fragmentation
