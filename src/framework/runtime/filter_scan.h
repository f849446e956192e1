// SPDX-License-Identifier: Apache-2.0
// Private to the runtime: the state of SchedulePod's Filter scan (schedule_pod.cc), shared with the
// parallel Filter (parallel.cc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <utility>

#include "src/framework/pre_filter_nodes.h"
#include "src/framework/runtime/framework.h"

namespace gpusched::framework::runtime {

// The state of one Filter scan over the snapshot's slots, starting at the rotating index.
struct Framework::FilterScan {
  NodeIndex* feasible = nullptr;  // into feasible_
  size_t num_feasible = 0;
  size_t want = 0;  // stop once this many feasible nodes are found
  size_t slots = 0;
  size_t start = 0;
  size_t next = 0;      // the slot visited next
  size_t visited = 0;   // nodes visited; next = (start + visited) % slots
  uint64_t reused = 0;  // nodes decided from a stored verdict
  // The last rejection counted, so that a repeat is recognised by pointer.
  std::pair<std::string_view, int32_t>* last_reason = nullptr;  // into diag.reason_counts
  std::string_view last_plugin;
  const uint64_t* gen = nullptr;         // the snapshot's per-slot generations
  uint64_t snapshot_generation = 0;      // Snapshot::generation()
  const uint64_t* stored_gen = nullptr;  // reuse_: the generation each stored verdict is for
  const uint16_t* stored_id = nullptr;   // reuse_: the stored verdict ids (0: feasible)
  size_t num_ids = 0;
  int32_t* id_hits = nullptr;  // into id_hits_
  // A PreFilter's node names (pre_filter_nodes.h): other nodes are rejected without Filter.
  const PreFilterNodes* named = nullptr;
  // Parallel Filter (parallel.cc): the scan filtered the nodes before this visit count at once.
  size_t window_end = 0;

  bool FoundEnough() const { return num_feasible >= want; }
  bool Done() const { return visited >= slots; }
};

}  // namespace gpusched::framework::runtime
