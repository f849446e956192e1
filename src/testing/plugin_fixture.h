// SPDX-License-Identifier: Apache-2.0
// Fixtures shared by the plugin unit tests (test-only; include only from GoogleTest targets):
//
//   GPUSCHED_TESTING_COUNT_ALLOCATIONS()   // once per test binary, at global scope
//   auto plugin = testing::MustCreate<TaintToleration>(R"({"k": 1})");
//   framework::Snapshot snap = testing::SnapshotOf({MakeNode("n1").Ptr()}, {placed_pod});
//   g_counting = true; g_allocations = 0; plugin->Filter(...); g_counting = false;
//   EXPECT_EQ(g_allocations, 0);
//   std::vector<int64_t> s = testing::NormalizedScores(*plugin, pod, snap, g_counting,
//   g_allocations);
//
// SnapshotOf fills a hand-made snapshot (node_set_version 0, generation 1) as the cache would
// present it; MustCreate builds a plugin through its validating factory with a throwaway
// FakeHandle (the plugins under test keep no reference to it).
#pragma once

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "src/api/types.h"
#include "src/framework/cycle_state.h"
#include "src/framework/node_info.h"
#include "src/framework/plugin.h"
#include "src/framework/status.h"
#include "src/testing/fake_handle.h"

// Replaces the global operator new/delete of the test binary to count the heap allocations made
// by the current thread while `g_counting` is set (into `g_allocations`), to check that Filter
// and Score allocate nothing (style guide 4.15). A macro because replacement allocation functions
// must be defined once per program, outside any namespace; use it once per test binary, at
// global scope, before the tests' namespace.
#define GPUSCHED_TESTING_COUNT_ALLOCATIONS()                                              \
  namespace {                                                                             \
  thread_local bool g_counting = false;                                                   \
  thread_local int64_t g_allocations = 0;                                                 \
  }                                                                                       \
  [[gnu::noinline]] void* operator new(std::size_t n) {                                   \
    if (g_counting) ++g_allocations;                                                      \
    if (void* p = std::malloc(n == 0 ? 1 : n)) return p;                                  \
    throw std::bad_alloc();                                                               \
  }                                                                                       \
  [[gnu::noinline]] void operator delete(void* p) noexcept { std::free(p); }              \
  [[gnu::noinline]] void operator delete(void* p, std::size_t) noexcept { std::free(p); } \
  static_assert(true, "require a semicolon")

namespace gpusched::testing {

// A snapshot with nodes[i] in slot i (NodeInfo::index i, indexed by name), holding every pod in
// `pods` whose spec.nodeName names that node (pod_count set to match). Nothing is charged to
// NodeInfo::requested; node_set_version stays 0.
inline framework::Snapshot SnapshotOf(const std::vector<api::NodePtr>& nodes,
                                      const std::vector<api::PodPtr>& pods = {}) {
  framework::Snapshot snapshot;
  for (size_t i = 0; i < nodes.size(); ++i) {
    framework::NodeInfo& info = snapshot.MutableSlotForCache(static_cast<framework::NodeIndex>(i));
    info.node = nodes[i];
    info.index = static_cast<framework::NodeIndex>(i);
    snapshot.IndexNameForCache(nodes[i]->meta.name, info.index);
    for (const api::PodPtr& p : pods) {
      if (p->node_name != nodes[i]->meta.name) continue;
      info.pods.push_back(p);
      info.pod_devices.emplace_back();
      info.pod_priorities.push_back(p->priority);
    }
    info.pod_count = static_cast<int32_t>(info.pods.size());
  }
  snapshot.SetNodeCountForCache(static_cast<int32_t>(nodes.size()), 1);
  return snapshot;
}

// A snapshot with infos[i] in slot i: its NodeInfo::index is set to i and its node is indexed by
// name. REQUIRES: every info has a node.
inline framework::Snapshot SnapshotOfInfos(std::vector<framework::NodeInfo> infos) {
  framework::Snapshot snapshot;
  for (size_t i = 0; i < infos.size(); ++i) {
    const auto index = static_cast<framework::NodeIndex>(i);
    infos[i].index = index;
    snapshot.IndexNameForCache(infos[i].node->meta.name, index);
    snapshot.MutableSlotForCache(index) = std::move(infos[i]);
  }
  snapshot.SetNodeCountForCache(static_cast<int32_t>(infos.size()), 1);
  return snapshot;
}

// Plugin P built by P::Create from `args_json` (empty: JSON null, i.e. default args). Adds a
// test failure naming the status, and returns nullptr, when the factory rejects the args.
template <typename P>
std::unique_ptr<P> MustCreate(std::string_view args_json = "") {
  FakeHandle handle;
  boost::json::value args =
      args_json.empty() ? boost::json::value() : boost::json::parse(args_json);
  auto plugin = P::Create(args, handle);
  EXPECT_TRUE(plugin.ok()) << plugin.status().ToString();
  if (!plugin.ok()) return nullptr;
  return std::unique_ptr<P>(dynamic_cast<P*>(std::move(plugin).value().release()));
}

// The raw score `plugin` gives node `node` of `snapshot`: ScoreNodes over that node alone, which
// the contract says is its score in any list (after PreScore, where the plugin has one).
inline int64_t ScoreOf(const framework::ScorePlugin& plugin, const framework::CycleState& state,
                       const api::Pod& pod, const framework::Snapshot& snapshot,
                       framework::NodeIndex node) {
  int64_t out = 0;
  const framework::NodeIndex nodes[] = {node};
  plugin.ScoreNodes(state, pod, snapshot, nodes, std::span<int64_t>(&out, 1));
  return out;
}

// PreScore, ScoreNodes over every node of `snapshot` (all feasible) and NormalizeScore: the
// normalized scores in slot order, or {} when PreScore skips the pod. Adds a test failure when
// PreScore fails or ScoreNodes allocates; `counting`/`allocations` are the test binary's
// GPUSCHED_TESTING_COUNT_ALLOCATIONS counters (g_counting, g_allocations).
template <typename P>
std::vector<int64_t> NormalizedScores(P& plugin, const api::Pod& pod,
                                      const framework::Snapshot& snapshot, bool& counting,
                                      int64_t& allocations) {
  std::vector<framework::NodeIndex> feasible;
  for (const framework::NodeInfo& n : snapshot.nodes()) feasible.push_back(n.index);
  framework::CycleState state;
  framework::Status pre = plugin.PreScore(state, pod, snapshot, feasible);
  if (pre.IsSkip()) return {};
  EXPECT_TRUE(pre.ok()) << pre.ToString();
  std::vector<int64_t> scores(feasible.size());
  counting = true;
  allocations = 0;
  plugin.ScoreNodes(state, pod, snapshot, feasible, scores);
  counting = false;
  EXPECT_EQ(allocations, 0) << "Score must not allocate";
  EXPECT_TRUE(plugin.NormalizeScore(state, pod, scores).ok());
  return scores;
}

}  // namespace gpusched::testing
