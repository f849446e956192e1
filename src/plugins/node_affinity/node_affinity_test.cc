// SPDX-License-Identifier: Apache-2.0
#include "src/plugins/node_affinity/node_affinity.h"

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <memory>
#include <string>
#include <vector>

#include "src/framework/pre_filter_nodes.h"
#include "src/plugins/names.h"
#include "src/testing/builders.h"
#include "src/testing/plugin_fixture.h"

GPUSCHED_TESTING_COUNT_ALLOCATIONS();

namespace gpusched::plugins::node_affinity {
namespace {

using testing::MakeNode;
using testing::MakePod;
using testing::SnapshotOf;

std::unique_ptr<NodeAffinity> MustCreate(std::string_view args_json) {
  return testing::MustCreate<NodeAffinity>(args_json);
}

api::NodeSelectorTerm NameIn(std::string_view name) {
  api::NodeSelectorTerm t;
  t.match_fields_names_in.emplace_back(name);
  return t;
}

TEST(NodeAffinityTest, Filter) {
  const api::NodePtr node =
      MakeNode("n1").Zone("a").Label("gpu", "a100").Label("gpu-count", "8").Ptr();
  constexpr std::string_view kZone = "topology.kubernetes.io/zone";
  constexpr std::string_view kPod = "node(s) didn't match Pod's node affinity/selector";
  constexpr std::string_view kEnforced = "node(s) didn't match scheduler-enforced node affinity";

  struct Case {
    std::string name;
    std::string args;
    api::Pod pod;
    framework::Code prefilter;
    framework::Code code;
    std::string_view reason;
  };
  const std::vector<Case> cases = {
      {"a pod without constraints skips the filter", "", MakePod("ns", "p").Obj(),
       framework::Code::kSkip, framework::Code::kSuccess, ""},
      {"a matching nodeSelector fits", "", MakePod("ns", "p").NodeSelector("gpu", "a100").Obj(),
       framework::Code::kSuccess, framework::Code::kSuccess, ""},
      {"a nodeSelector with another value is rejected", "",
       MakePod("ns", "p").NodeSelector("gpu", "h100").Obj(), framework::Code::kSuccess,
       framework::Code::kUnschedulableAndUnresolvable, kPod},
      {"a nodeSelector on a missing label is rejected", "",
       MakePod("ns", "p").NodeSelector("gpu", "a100").NodeSelector("rack", "r1").Obj(),
       framework::Code::kSuccess, framework::Code::kUnschedulableAndUnresolvable, kPod},
      {"required affinity In matches", "",
       MakePod("ns", "p").NodeAffinityIn(kZone, {"a", "b"}).Obj(), framework::Code::kSuccess,
       framework::Code::kSuccess, ""},
      {"required affinity NotIn rejects", "",
       MakePod("ns", "p").NodeAffinityNotIn(kZone, {"a"}).Obj(), framework::Code::kSuccess,
       framework::Code::kUnschedulableAndUnresolvable, kPod},
      {"required affinity Gt compares numbers", "",
       MakePod("ns", "p").NodeAffinityGt("gpu-count", 4).Obj(), framework::Code::kSuccess,
       framework::Code::kSuccess, ""},
      {"required terms are ORed", "",
       MakePod("ns", "p").NodeAffinityIn(kZone, {"b"}).NodeAffinityIn("gpu", {"a100"}).Obj(),
       framework::Code::kSuccess, framework::Code::kSuccess, ""},
      {"nodeSelector and affinity must both match", "",
       MakePod("ns", "p").NodeSelector("gpu", "a100").NodeAffinityIn(kZone, {"b"}).Obj(),
       framework::Code::kSuccess, framework::Code::kUnschedulableAndUnresolvable, kPod},
      {"an empty required term matches nothing", "",
       MakePod("ns", "p").NodeAffinity(api::NodeSelectorTerm{}).Obj(), framework::Code::kSuccess,
       framework::Code::kUnschedulableAndUnresolvable, kPod},
      {"matchFields metadata.name In this node matches", "",
       MakePod("ns", "p").NodeAffinity(NameIn("n1")).Obj(), framework::Code::kSuccess,
       framework::Code::kSuccess, ""},
      {"matchFields metadata.name In another node rejects", "",
       MakePod("ns", "p").NodeAffinity(NameIn("n2")).Obj(), framework::Code::kSuccess,
       framework::Code::kUnschedulableAndUnresolvable, kPod},
      {"addedAffinity applies to pods without constraints",
       R"({"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms":
           [{"matchExpressions": [{"key": "topology.kubernetes.io/zone", "operator": "In",
                                   "values": ["b"]}]}]}}})",
       MakePod("ns", "p").Obj(), framework::Code::kSuccess,
       framework::Code::kUnschedulableAndUnresolvable, kEnforced},
      {"a node passing addedAffinity is still checked against the pod",
       R"({"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms":
           [{"matchExpressions": [{"key": "topology.kubernetes.io/zone", "operator": "In",
                                   "values": ["a"]}]}]}}})",
       MakePod("ns", "p").NodeSelector("gpu", "h100").Obj(), framework::Code::kSuccess,
       framework::Code::kUnschedulableAndUnresolvable, kPod},
  };
  const framework::Snapshot snapshot = SnapshotOf({node});
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto plugin = MustCreate(c.args);
    ASSERT_NE(plugin, nullptr);
    EXPECT_EQ(plugin->Name(), names::kNodeAffinity);
    framework::CycleState state;
    EXPECT_EQ(plugin->PreFilter(state, c.pod, snapshot).code(), c.prefilter);
    framework::Status s = plugin->Filter(state, c.pod, snapshot.at(0));
    EXPECT_EQ(s.code(), c.code);
    EXPECT_EQ(s.reason(), c.reason);
  }
}

TEST(NodeAffinityTest, Score) {
  const framework::Snapshot snapshot = SnapshotOf({
      MakeNode("n1").Zone("a").Label("gpu", "a100").Ptr(),
      MakeNode("n2").Zone("b").Label("gpu", "a100").Ptr(),
      MakeNode("n3").Zone("b").Label("gpu", "h100").Ptr(),
  });
  constexpr std::string_view kZone = "topology.kubernetes.io/zone";
  const api::Pod preferring = MakePod("ns", "p")
                                  .PreferredNodeAffinity(10, kZone, {"b"})
                                  .PreferredNodeAffinity(5, "gpu", {"a100"})
                                  .PreferredNodeAffinity(0, kZone, {"a"})
                                  .Obj();
  struct Case {
    std::string name;
    std::string args;
    api::Pod pod;
    framework::Code prescore;
    std::vector<int64_t> raw;
    std::vector<int64_t> normalized;
  };
  const std::vector<Case> cases = {
      // n1: 5, n2: 10+5, n3: 10; weight-0 terms are ignored. 5*100/15 = 33, 10*100/15 = 66.
      {"matching preferred weights are summed and normalized to the best node",
       "",
       preferring,
       framework::Code::kSuccess,
       {5, 15, 10},
       {33, 100, 66}},
      // addedAffinity prefers h100 with weight 20: n3 = 30; 5*100/30 = 16, 15*100/30 = 50.
      {"addedAffinity preferred terms add to the pod's",
       R"({"addedAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 20,
           "preference": {"matchExpressions": [{"key": "gpu", "operator": "In",
                                                "values": ["h100"]}]}}]}})",
       preferring,
       framework::Code::kSuccess,
       {5, 15, 30},
       {16, 50, 100}},
      {"no node matching any preferred term scores 0 everywhere",
       "",
       MakePod("ns", "p").PreferredNodeAffinity(7, "gpu", {"t4"}).Obj(),
       framework::Code::kSuccess,
       {0, 0, 0},
       {0, 0, 0}},
      {"a pod without preferred terms skips scoring",
       "",
       MakePod("ns", "p").Obj(),
       framework::Code::kSkip,
       {0, 0, 0},
       {0, 0, 0}},
  };
  const std::vector<framework::NodeIndex> feasible = {0, 1, 2};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto plugin = MustCreate(c.args);
    ASSERT_NE(plugin, nullptr);
    ASSERT_TRUE(plugin->HasNormalizeScore());
    framework::CycleState state;
    EXPECT_EQ(plugin->PreScore(state, c.pod, snapshot, feasible).code(), c.prescore);
    if (c.prescore == framework::Code::kSkip) continue;
    std::vector<int64_t> scores(feasible.size());
    plugin->ScoreNodes(state, c.pod, snapshot, feasible, scores);
    EXPECT_EQ(scores, c.raw);
    EXPECT_EQ(testing::ScoreOf(*plugin, state, c.pod, snapshot, 1), c.raw[1]);
    ASSERT_TRUE(plugin->NormalizeScore(state, c.pod, scores).ok());
    EXPECT_EQ(scores, c.normalized);
  }
}

// Upstream's PreFilterResult (node_affinity_test.go "TestNodeAffinityPreFilter" cases): terms
// that all name nodes restrict the nodes filtered; a term without a name leaves all nodes.
TEST(NodeAffinityTest, PreFilterNamesTheNodesOfTermsThatAllNameNodes) {
  framework::Snapshot snapshot = SnapshotOf({MakeNode("n1").Ptr()});
  auto plugin = MustCreate("");
  ASSERT_NE(plugin, nullptr);
  {
    framework::CycleState state;
    const api::Pod pod =
        MakePod("ns", "p").NodeAffinity(NameIn("b")).NodeAffinity(NameIn("a")).Obj();
    ASSERT_TRUE(plugin->PreFilter(state, pod, snapshot).ok());
    const auto* named = state.Get<framework::PreFilterNodes>(framework::kPreFilterNodesKey);
    ASSERT_NE(named, nullptr);
    EXPECT_EQ(named->names, (std::vector<std::string>{"a", "b"}));
    EXPECT_TRUE(named->Allows("a"));
    EXPECT_FALSE(named->Allows("c"));
    EXPECT_EQ(named->reason, "node(s) didn't satisfy plugin(s) [NodeAffinity]");
  }
  {
    framework::CycleState state;
    const api::Pod pod =
        MakePod("ns", "p").NodeAffinity(NameIn("a")).NodeAffinityIn("zone", {"z1"}).Obj();
    ASSERT_TRUE(plugin->PreFilter(state, pod, snapshot).ok());
    EXPECT_EQ(state.Read(framework::kPreFilterNodesKey), nullptr);
  }
  {
    framework::CycleState state;
    api::NodeSelectorTerm both = NameIn("a");
    both.match_fields_names_in.emplace_back("b");
    const api::Pod pod = MakePod("ns", "p").NodeAffinity(both).Obj();
    framework::Status s = plugin->PreFilter(state, pod, snapshot);
    EXPECT_EQ(s.code(), framework::Code::kUnschedulableAndUnresolvable);
    EXPECT_EQ(s.reason(), "pod affinity terms conflict");
  }
}

TEST(NodeAffinityTest, ArgsValidation) {
  struct Case {
    std::string name;
    std::string args;
    std::string error;
  };
  const std::vector<Case> cases = {
      {"an unknown field is rejected, with the nearest known name", R"({"addedAfinity": {}})",
       "addedAfinity: unknown field (did you mean \"addedAffinity\"?)"},
      {"addedAffinity must be an object", R"({"addedAffinity": 3})",
       "addedAffinity: must be an object"},
      {"a bad operator names its path under addedAffinity",
       R"({"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms":
           [{"matchExpressions": [{"key": "a", "operator": "Foo", "values": ["x"]}]}]}}})",
       "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]."
       "matchExpressions[0].operator: invalid value \"Foo\" (want In, NotIn, Exists, "
       "DoesNotExist, Gt or Lt)"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    testing::FakeHandle handle;
    auto plugin = NodeAffinity::Create(boost::json::parse(c.args), handle);
    ASSERT_FALSE(plugin.ok());
    EXPECT_EQ(plugin.status().code(), common::StatusCode::kInvalidArgument);
    EXPECT_EQ(plugin.status().message(), c.error);
  }
}

TEST(NodeAffinityTest, FilterAndScoreDoNotAllocate) {
  const framework::Snapshot snapshot = SnapshotOf({
      MakeNode("n1").Zone("a").Label("gpu", "a100").Ptr(),
      MakeNode("n2").Zone("b").Label("gpu", "h100").Ptr(),
  });
  const std::vector<framework::NodeIndex> all = {0, 1};
  const api::Pod pod = MakePod("ns", "p")
                           .NodeSelector("gpu", "a100")
                           .NodeAffinityIn("topology.kubernetes.io/zone", {"a", "c"})
                           .PreferredNodeAffinity(10, "gpu", {"h100"})
                           .Obj();
  auto plugin = MustCreate("");
  ASSERT_NE(plugin, nullptr);
  framework::CycleState state;
  ASSERT_TRUE(plugin->PreFilter(state, pod, snapshot).ok());
  ASSERT_TRUE(plugin->PreScore(state, pod, snapshot, all).ok());
  std::vector<int64_t> out(all.size());
  g_allocations = 0;
  g_counting = true;
  for (framework::NodeIndex i : all) {
    (void)plugin->Filter(state, pod, snapshot.at(i));
    out[static_cast<size_t>(i)] = testing::ScoreOf(*plugin, state, pod, snapshot, i);
  }
  plugin->ScoreNodes(state, pod, snapshot, all, out);
  (void)plugin->NormalizeScore(state, pod, out);
  g_counting = false;
  EXPECT_EQ(g_allocations, 0);
}

}  // namespace
}  // namespace gpusched::plugins::node_affinity
