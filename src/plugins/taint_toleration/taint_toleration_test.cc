// SPDX-License-Identifier: Apache-2.0
#include "src/plugins/taint_toleration/taint_toleration.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "src/plugins/names.h"
#include "src/testing/builders.h"
#include "src/testing/plugin_fixture.h"

GPUSCHED_TESTING_COUNT_ALLOCATIONS();

namespace gpusched::plugins::taint_toleration {
namespace {

using api::TaintEffect;
using testing::MakeNode;
using testing::MakePod;
using testing::SnapshotOf;

std::unique_ptr<TaintToleration> MustCreate() { return testing::MustCreate<TaintToleration>(); }

TEST(TaintTolerationTest, Filter) {
  struct Case {
    std::string name;
    api::Pod pod;
    api::NodePtr node;
    framework::Code code;
    std::string_view reason;
  };
  const std::vector<Case> cases = {
      {"a node without taints accepts the pod", MakePod("ns", "p").Obj(), MakeNode("n").Ptr(),
       framework::Code::kSuccess, ""},
      {"an untolerated NoSchedule taint rejects the pod and names the taint",
       MakePod("ns", "p").Obj(),
       MakeNode("n").Taint("dedicated", "gpu", TaintEffect::kNoSchedule).Ptr(),
       framework::Code::kUnschedulableAndUnresolvable, "node(s) had untolerated taint(s)"},
      {"an untolerated NoExecute taint rejects the pod", MakePod("ns", "p").Obj(),
       MakeNode("n").Taint("maintenance", "", TaintEffect::kNoExecute).Ptr(),
       framework::Code::kUnschedulableAndUnresolvable, "node(s) had untolerated taint(s)"},
      {"a PreferNoSchedule taint never rejects", MakePod("ns", "p").Obj(),
       MakeNode("n").Taint("soft", "x", TaintEffect::kPreferNoSchedule).Ptr(),
       framework::Code::kSuccess, ""},
      {"an Equal toleration with the same key, value and effect tolerates",
       MakePod("ns", "p").Toleration("dedicated", "gpu", TaintEffect::kNoSchedule).Obj(),
       MakeNode("n").Taint("dedicated", "gpu", TaintEffect::kNoSchedule).Ptr(),
       framework::Code::kSuccess, ""},
      {"an Equal toleration with another value does not tolerate",
       MakePod("ns", "p").Toleration("dedicated", "cpu").Obj(),
       MakeNode("n").Taint("dedicated", "gpu", TaintEffect::kNoSchedule).Ptr(),
       framework::Code::kUnschedulableAndUnresolvable, "node(s) had untolerated taint(s)"},
      {"an Exists toleration for the key tolerates any value",
       MakePod("ns", "p").TolerationExists("dedicated").Obj(),
       MakeNode("n").Taint("dedicated", "gpu", TaintEffect::kNoSchedule).Ptr(),
       framework::Code::kSuccess, ""},
      {"a toleration for NoSchedule does not tolerate NoExecute",
       MakePod("ns", "p").TolerationExists("dedicated", TaintEffect::kNoSchedule).Obj(),
       MakeNode("n").Taint("dedicated", "gpu", TaintEffect::kNoExecute).Ptr(),
       framework::Code::kUnschedulableAndUnresolvable, "node(s) had untolerated taint(s)"},
      {"the first untolerated taint in node order is reported",
       MakePod("ns", "p").TolerationExists("a").Obj(),
       MakeNode("n")
           .Taint("a", "1", TaintEffect::kNoSchedule)
           .Taint("b", "2", TaintEffect::kPreferNoSchedule)
           .Taint("c", "3", TaintEffect::kNoSchedule)
           .Taint("d", "4", TaintEffect::kNoExecute)
           .Ptr(),
       framework::Code::kUnschedulableAndUnresolvable, "node(s) had untolerated taint(s)"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto plugin = MustCreate();
    ASSERT_NE(plugin, nullptr);
    EXPECT_EQ(plugin->Name(), names::kTaintToleration);
    framework::Snapshot snapshot = SnapshotOf({c.node});
    framework::CycleState state;
    framework::Status s = plugin->Filter(state, c.pod, snapshot.at(0));
    EXPECT_EQ(s.code(), c.code);
    EXPECT_EQ(s.reason(), c.reason);
  }
}

TEST(TaintTolerationTest, ScoreCountsIntolerablePreferNoScheduleTaintsReversed) {
  const std::vector<api::NodePtr> nodes = {
      MakeNode("no-taints").Ptr(),
      MakeNode("one-soft").Taint("a", "1", TaintEffect::kPreferNoSchedule).Ptr(),
      MakeNode("two-soft-one-hard")
          .Taint("a", "1", TaintEffect::kPreferNoSchedule)
          .Taint("b", "2", TaintEffect::kPreferNoSchedule)
          .Taint("c", "3", TaintEffect::kNoSchedule)
          .Ptr(),
      MakeNode("two-soft-one-tolerated")
          .Taint("a", "1", TaintEffect::kPreferNoSchedule)
          .Taint("t", "x", TaintEffect::kPreferNoSchedule)
          .Ptr(),
  };
  struct Case {
    std::string name;
    api::Pod pod;
    std::vector<int64_t> raw;
    std::vector<int64_t> normalized;
  };
  const std::vector<Case> cases = {
      {"fewer intolerable soft taints score higher",
       MakePod("ns", "p").Toleration("t", "x", TaintEffect::kPreferNoSchedule).Obj(),
       {0, 1, 2, 1},
       {100, 50, 0, 50}},
      {"a pod tolerating everything scores 100 everywhere",
       MakePod("ns", "p").TolerationExists("").Obj(),
       {0, 0, 0, 0},
       {100, 100, 100, 100}},
      {"a NoSchedule-only toleration does not tolerate soft taints",
       MakePod("ns", "p").TolerationExists("a", TaintEffect::kNoSchedule).Obj(),
       {0, 1, 2, 2},
       {100, 50, 0, 0}},
  };
  const framework::Snapshot snapshot = SnapshotOf(nodes);
  const std::vector<framework::NodeIndex> feasible = {0, 1, 2, 3};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto plugin = MustCreate();
    ASSERT_NE(plugin, nullptr);
    ASSERT_TRUE(plugin->HasNormalizeScore());
    framework::CycleState state;
    std::vector<int64_t> scores(feasible.size());
    plugin->ScoreNodes(state, c.pod, snapshot, feasible, scores);
    EXPECT_EQ(scores, c.raw);
    for (size_t i = 0; i < feasible.size(); ++i) {
      EXPECT_EQ(testing::ScoreOf(*plugin, state, c.pod, snapshot, feasible[i]), c.raw[i]);
    }
    ASSERT_TRUE(plugin->NormalizeScore(state, c.pod, scores).ok());
    EXPECT_EQ(scores, c.normalized);
  }
}

TEST(TaintTolerationTest, RejectsArgs) {
  testing::FakeHandle handle;
  auto plugin = TaintToleration::Create(boost::json::object{{"x", 1}}, handle);
  ASSERT_FALSE(plugin.ok());
  EXPECT_EQ(plugin.status().message(), "x: unknown field");
}

TEST(TaintTolerationTest, FilterAndScoreDoNotAllocate) {
  const framework::Snapshot snapshot = SnapshotOf({
      MakeNode("a").Taint("dedicated", "gpu", TaintEffect::kNoSchedule).Ptr(),
      MakeNode("b").Taint("soft", "x", TaintEffect::kPreferNoSchedule).Ptr(),
      MakeNode("c").Ptr(),
  });
  const std::vector<framework::NodeIndex> all = {0, 1, 2};
  const api::Pod pod = MakePod("ns", "p").TolerationExists("other").Obj();
  auto plugin = MustCreate();
  ASSERT_NE(plugin, nullptr);
  framework::CycleState state;
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
}  // namespace gpusched::plugins::taint_toleration
