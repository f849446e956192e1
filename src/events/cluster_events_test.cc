// SPDX-License-Identifier: Apache-2.0
#include "src/events/cluster_events.h"

#include <gtest/gtest.h>

#include "src/framework/plugin.h"
#include "src/testing/builders.h"

namespace gpusched::events {
namespace {

using testing::MakeNode;
using testing::MakePod;

TEST(ClusterEventsTest, NodeUpdatesAreClassifiedAsUpstream) {
  const auto base = MakeNode("n").Cpu("8").Label("a", "1");
  struct Case {
    const char* name;
    api::Node changed;
    uint32_t want;
  };
  const Case cases[] = {
      {"nothing", base.Obj(), 0},
      {"allocatable", MakeNode("n").Cpu("16").Label("a", "1").Obj(),
       framework::kUpdateNodeAllocatable},
      {"GPU facts", MakeNode("n").Cpu("8").Label("a", "1").Gpus(4).Obj(),
       framework::kUpdateNodeAllocatable | framework::kUpdateNodeLabel},
      {"label", MakeNode("n").Cpu("8").Label("a", "2").Obj(), framework::kUpdateNodeLabel},
      {"taint",
       MakeNode("n").Cpu("8").Label("a", "1").Taint("k", "v", api::TaintEffect::kNoSchedule).Obj(),
       framework::kUpdateNodeTaint},
      {"cordon", MakeNode("n").Cpu("8").Label("a", "1").Unschedulable().Obj(), 0},
      {"condition", MakeNode("n").Cpu("8").Label("a", "1").Condition("Ready", "False").Obj(),
       framework::kUpdateNodeCondition},
      {"annotation", MakeNode("n").Cpu("8").Label("a", "1").Annotation("x", "y").Obj(),
       framework::kUpdateNodeAnnotation},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(NodeUpdateActions(base.Obj(), c.changed), c.want);
  }
  // Uncordoning counts as a taint change (upstream), cordoning as nothing a hint can use.
  EXPECT_EQ(NodeUpdateActions(MakeNode("n").Unschedulable().Obj(), MakeNode("n").Obj()),
            framework::kUpdateNodeTaint);
}

TEST(ClusterEventsTest, AssignedPodUpdatesAreClassifiedAsUpstream) {
  const auto pod = MakePod("ns", "p").Cpu("2").Label("app", "a").NodeName("n");
  EXPECT_EQ(AssignedPodUpdateActions(pod.Obj(), pod.Obj()), 0U);
  EXPECT_EQ(
      AssignedPodUpdateActions(pod.Obj(), MakePod("ns", "p").Cpu("2").Label("app", "b").Obj()),
      framework::kUpdatePodLabel);
  EXPECT_EQ(
      AssignedPodUpdateActions(pod.Obj(), MakePod("ns", "p").Cpu("1").Label("app", "a").Obj()),
      framework::kUpdatePodScaleDown);
  EXPECT_EQ(
      AssignedPodUpdateActions(pod.Obj(), MakePod("ns", "p").Cpu("4").Label("app", "a").Obj()), 0U)
      << "scaling up frees nothing";
  auto done = pod;
  EXPECT_EQ(AssignedPodUpdateActions(pod.Obj(), done.Phase(api::PodPhase::kSucceeded).Obj()),
            framework::kDelete);
}

}  // namespace
}  // namespace gpusched::events
