// SPDX-License-Identifier: Apache-2.0
// Filter and Score fanned out over nodes (Framework::SetParallelizer), with the outcome of the
// sequential cycle.
//
// Filter: the scan visits nodes from the rotating start index until it has found `want` feasible
// ones. Each node adds at most one, so the next want − found nodes are visited whatever their
// verdicts: that window is filtered at once, in parallel, before the scan walks it, and the scan
// takes each node's verdict in order from there (FilterNode). No node outside the window is
// filtered, so no work is wasted and the scan's stop point, rotating index, diagnosis, twin
// sharing and stored verdicts are those of the sequential scan. A window goes to the other
// threads only when its filters outweigh what that adds on this thread (WorthSplitting): a
// window mostly decided by stored verdicts or twins stays on this thread.
//
// Score: ScoreNodes over chunks of a long list, under the same rule; out[i] depends only on
// nodes[i] (plugin.h).
#include <algorithm>

#include "src/framework/runtime/filter_scan.h"
#include "src/framework/runtime/framework.h"

namespace gpusched::framework::runtime {

namespace {

// Slots in [begin, end) whose stored verdict is stale: a bound on the nodes a window filters
// (one vectorizable pass, so that a window decided by stored verdicts costs little).
size_t CountStale(const uint64_t* stored_gen, const uint64_t* gen, size_t begin, size_t end) {
  size_t stale = 0;
  for (size_t i = begin; i < end; ++i) stale += stored_gen[i] != gen[i] ? 1 : 0;
  return stale;
}

}  // namespace

// Must mirror FilterNextNode's choice of the general path that runs the filters.
bool Framework::NeedsFilter(const FilterScan& scan, const Snapshot& snapshot, size_t slot) {
  const bool nominated_here =
      nominated_ != nullptr && nominated_->Has(static_cast<NodeIndex>(slot));
  if (nominated_here) return false;  // filtered with its nominated pods, on this thread
  if (scan.stored_gen != nullptr && scan.stored_gen[slot] == scan.gen[slot]) return false;
  const NodeInfo& ni = snapshot.nodes()[slot];
  if (!ni.valid()) return false;
  if (scan.named != nullptr && !scan.named->Allows(ni.name())) return false;
  if (!twin_filters_) return true;
  const std::span<const int32_t> twins = snapshot.twins();
  const int32_t t = slot < twins.size() ? twins[slot] : -1;
  if (t < 0) return true;
  const auto g = static_cast<size_t>(t);
  // The group's first node in the window is filtered; the scan shares its verdict (FilterOrShare)
  // with the others, as it does with a verdict from an earlier window.
  if (twin_verdict_round_[g] == twin_round_ || twin_prefilter_round_[g] == prefilter_round_) {
    return false;
  }
  twin_prefilter_round_[g] = prefilter_round_;
  return true;
}

// Handing `nodes` off pays when the work the other threads take, a share (threads − 1) / threads,
// costs more than what the hand-off adds on this thread: walking `walked` slots to pick the nodes
// out, taking each result back, and a fork-join. Measured with the default plugins (BENCHMARKS.md,
// "Fifteenth round"): a node's filters about 18 ns, the walk and the take about 9 ns with the
// cache misses of results written on another core, a fork-join about 1.5 µs (160 slots' worth);
// a Score plugin's list, split without a walk, lost about 10 % on two threads all the same (its
// inputs were written by PreScore on this core). So with the in-tree plugins it pays from 3
// threads on.
bool Framework::WorthSplitting(size_t nodes, size_t walked, size_t minimum) const {
  if (nodes < minimum) return false;
  if (!parallel_min_.by_cost) return true;
  const auto threads = static_cast<size_t>(parallel_->threads());
  return nodes * (threads - 1) * 2 >= (walked + 160) * threads;
}

size_t Framework::TwinBound(const Snapshot& snapshot) {
  if (&snapshot != twin_bound_snapshot_ || snapshot.generation() != twin_bound_generation_ ||
      snapshot.generation() == 0) {
    const std::span<const int32_t> twins = snapshot.twins();
    size_t alone = snapshot.nodes().size() - std::min(twins.size(), snapshot.nodes().size());
    for (int32_t t : twins) alone += t < 0 ? 1 : 0;
    twin_bound_ = alone + static_cast<size_t>(snapshot.num_twin_groups());
    twin_bound_snapshot_ = &snapshot;
    twin_bound_generation_ = snapshot.generation();
  }
  return twin_bound_;
}

void Framework::PrefilterWindow(FilterScan& scan, const CycleState& state, const api::Pod& pod,
                                const Snapshot& snapshot) {
  const size_t left = scan.slots - scan.visited;
  const size_t window = std::min(left, std::max<size_t>(scan.want - scan.num_feasible, 1));
  scan.window_end = scan.visited + window;
  ++prefilter_round_;
  const size_t min = parallel_min_.filter_nodes;
  if (!WorthSplitting(window, window, min)) return;  // (never with one thread, by cost)
  // Bounds on the nodes to filter, cheapest first, before the walk that counts them.
  if (twin_filters_ && !WorthSplitting(std::min(window, TwinBound(snapshot)), window, min)) {
    return;
  }
  if (scan.stored_gen != nullptr) {
    // One generation per node change since this class's last full scan.
    const uint64_t scanned_all_at = reuse_->scanned_all_at();
    if (scanned_all_at != 0 &&
        !WorthSplitting(std::min<uint64_t>(window, scan.snapshot_generation - scanned_all_at),
                        window, min)) {
      return;
    }
    const size_t first = std::min(window, scan.slots - scan.next);  // then wraps to slot 0
    const size_t stale = CountStale(scan.stored_gen, scan.gen, scan.next, scan.next + first) +
                         CountStale(scan.stored_gen, scan.gen, 0, window - first);
    if (!WorthSplitting(stale, window, min)) return;
  }
  if (prefilter_round_of_.size() < scan.slots) {
    prefilter_round_of_.resize(scan.slots, 0);
    prefilter_at_.resize(scan.slots, 0);
  }
  if (twin_filters_ && twin_prefilter_round_.size() < twin_verdict_round_.size()) {
    twin_prefilter_round_.resize(twin_verdict_round_.size(), 0);
  }
  prefilter_nodes_.clear();
  size_t slot = scan.next;
  for (size_t k = 0; k < window; ++k) {
    if (NeedsFilter(scan, snapshot, slot)) prefilter_nodes_.push_back(static_cast<NodeIndex>(slot));
    slot = slot + 1 == scan.slots ? 0 : slot + 1;
  }
  const size_t num = prefilter_nodes_.size();
  if (!WorthSplitting(num, window, min)) return;
  parallel_stats_.filtered += num;
  if (prefiltered_.size() < num) prefiltered_.resize(num);
  parallel_->For(num, [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) {
      prefiltered_[i] = RunActiveFilters(state, pod, snapshot.at(prefilter_nodes_[i]));
    }
  });
  for (size_t i = 0; i < num; ++i) {
    const auto n = static_cast<size_t>(prefilter_nodes_[i]);
    prefilter_round_of_[n] = prefilter_round_;
    prefilter_at_[n] = static_cast<uint32_t>(i);
  }
}

Status Framework::FilterNode(const CycleState& state, const api::Pod& pod, const NodeInfo& node) {
  const auto n = static_cast<size_t>(node.index);
  if (n < prefilter_round_of_.size() && prefilter_round_of_[n] == prefilter_round_) {
    prefilter_round_of_[n] = 0;  // taken once
    return std::move(prefiltered_[prefilter_at_[n]]);
  }
  return RunActiveFilters(state, pod, node);
}

void Framework::ScoreNodes(const ScorePlugin& plugin, const CycleState& state, const api::Pod& pod,
                           const Snapshot& snapshot, std::span<const NodeIndex> list,
                           std::span<int64_t> out) {
  if (parallel_ == nullptr ||
      !WorthSplitting(list.size(), list.size(), parallel_min_.score_nodes)) {
    plugin.ScoreNodes(state, pod, snapshot, list, out);
    return;
  }
  parallel_stats_.scored += list.size();
  parallel_->For(list.size(), [&](size_t begin, size_t end) {
    plugin.ScoreNodes(state, pod, snapshot, list.subspan(begin, end - begin),
                      out.subspan(begin, end - begin));
  });
}

}  // namespace gpusched::framework::runtime
