// SPDX-License-Identifier: Apache-2.0
// GpuFragmentation's score memo (internal to the plugin): ScoreNodes scores one node per distinct
// node state and copies the score to the nodes in the same state.
//
//   NodeKey / KeyOf  a node's state as the FGD and Learned scores read it (false: not keyed)
//   ScoreMemo        a per-thread open-addressing table of one ScoreNodes call's scores by key
//
// Not thread-safe: one ScoreMemo per thread.
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "src/api/gpu.h"
#include "src/framework/node_info.h"

namespace gpusched::plugins::gpu_fragmentation::internal {

// Nodes in the same state score the same (ScoreOne reads nothing else of a node, for FGD and
// Learned): ScoreNodes scores one node per distinct state and copies the score to the others. On
// a cluster of few node shapes with many empty or alike nodes that is most of them.
//
// A node's state as ScoreOne reads it: model, GPU count, health, per-GPU memory, free CPU,
// measured utilization, and each device's used milli and memory. NVLink-island nodes are not
// keyed (IslandAware reads the islands), nor nodes of more than kKeyedGpus GPUs (the key has room
// for the devices of 8): they are always scored.
inline constexpr int kKeyedGpus = 8;
struct NodeKey {
  // 5 node words, then the used milli of 4 devices per word, then each device's used memory.
  std::array<uint64_t, 5 + kKeyedGpus / 4 + kKeyedGpus> words{};
  friend bool operator==(const NodeKey&, const NodeKey&) = default;
};

inline bool KeyOf(const framework::NodeInfo& node, NodeKey& key) {
  const api::NodeGpuInfo& g = node.node->gpu;
  if (g.nvlink_known || g.count > kKeyedGpus) return false;
  auto& w = key.words;
  w.fill(0);
  w[0] = uint64_t{g.model.id} | static_cast<uint64_t>(static_cast<uint32_t>(g.count)) << 32;
  w[1] = g.unhealthy_mask;
  w[2] = static_cast<uint64_t>(g.memory_mib);
  w[3] = static_cast<uint64_t>(node.node->allocatable.milli_cpu - node.requested.milli_cpu);
  w[4] = std::bit_cast<uint64_t>(node.gpu_utilization);
  for (int i = 0; i < g.count; ++i) {
    const api::GpuDeviceState& d = node.gpus[static_cast<size_t>(i)];
    w[5 + static_cast<size_t>(i / 4)] |= static_cast<uint64_t>(static_cast<uint16_t>(d.used_milli))
                                         << (16 * (i % 4));
    w[5 + kKeyedGpus / 4 + static_cast<size_t>(i)] = static_cast<uint64_t>(d.used_memory_mib);
  }
  return true;
}

// The scores of one ScoreNodes call by node state: open addressing, a slot valid when its stamp
// is the call's. One per thread, grown to the largest call seen; no allocation after that.
class ScoreMemo {
 public:
  // Starts a call over `nodes` nodes.
  void Begin(size_t nodes) {
    size_t want = 64;
    while (want < 2 * nodes) want *= 2;
    if (slots_.size() < want) slots_.assign(want, Slot{});
    if (++stamp_ == 0) {  // wrapped: forget every slot
      for (Slot& s : slots_) s.stamp = 0;
      stamp_ = 1;
    }
  }
  // The stored score of `key`, else compute() stored.
  template <typename F>
  int64_t GetOrCompute(const NodeKey& key, F&& compute) {
    uint64_t h = 0x9e3779b97f4a7c15ULL;
    for (uint64_t w : key.words) h = (h ^ w) * 0xff51afd7ed558ccdULL;
    const size_t mask = slots_.size() - 1;
    for (size_t i = static_cast<size_t>(h ^ (h >> 29)) & mask;; i = (i + 1) & mask) {
      Slot& s = slots_[i];
      if (s.stamp != stamp_) {
        s = Slot{key, compute(), stamp_};
        return s.score;
      }
      if (s.key == key) return s.score;
    }
  }

 private:
  struct Slot {
    NodeKey key;
    int64_t score = 0;
    uint32_t stamp = 0;
  };
  std::vector<Slot> slots_;
  uint32_t stamp_ = 0;
};

}  // namespace gpusched::plugins::gpu_fragmentation::internal
