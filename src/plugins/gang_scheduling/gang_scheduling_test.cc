// SPDX-License-Identifier: Apache-2.0
// GangScheduling against a hand-filled Gangs: who is skipped, the unknown policy, the domain
// filter, and Permit's quorum (the member that completes it allows the waiting ones).
#include "src/plugins/gang_scheduling/gang_scheduling.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "src/common/interner.h"
#include "src/testing/builders.h"
#include "src/testing/fake_gangs.h"
#include "src/testing/fake_handle.h"

namespace gpusched::plugins::gang_scheduling {
namespace {

using testing::MakeNode;
using testing::MakePod;

using testing::FakeGangs;

// Records Allow calls.
class RecordingWaiting final : public framework::WaitingPods {
 public:
  std::vector<Info> List() const override { return {}; }
  bool Allow(std::string_view uid, std::string_view plugin) override {
    allowed.emplace_back(uid);
    EXPECT_EQ(plugin, "GangScheduling");
    return true;
  }
  bool Reject(std::string_view, std::string_view, std::string_view) override { return false; }
  std::vector<std::string> allowed;
};

api::PodPtr Member(const std::string& name, const std::string& group = "train") {
  return MakePod("ml", name).Label(api::kPodGroupLabel, group).Gpus(8).Ptr();
}

class GangSchedulingTest : public ::testing::Test {
 protected:
  GangSchedulingTest() {
    handle_.SetGangs(&gangs_);
    handle_.SetWaitingPods(&waiting_);
    auto policy = std::make_shared<api::PodGroup>();
    policy->api = api::GangApi::kPodGroup;
    policy->namespace_ = "ml";
    policy->name = "train";
    policy->min_member = 3;
    policy->schedule_timeout = std::chrono::seconds(30);
    gangs_.policies[policy->Key()] = policy;
  }
  framework::Status Permit(const api::PodPtr& pod) {
    framework::CycleState state;
    framework::NodeInfo node;
    node.node = MakeNode("n1").Ptr();
    EXPECT_TRUE(plugin_.Reserve(state, *pod, node).ok());
    timeout_ = common::Duration(0);
    return plugin_.Permit(state, *pod, "n1", &timeout_);
  }

  FakeGangs gangs_;
  RecordingWaiting waiting_;
  testing::FakeHandle handle_;
  GangScheduling plugin_{handle_};
  common::Duration timeout_{0};
};

TEST_F(GangSchedulingTest, PodsInNoGangAndUntrackedHandlesAreSkipped) {
  framework::CycleState state;
  framework::Snapshot snapshot;
  EXPECT_TRUE(plugin_.PreFilter(state, *MakePod("ml", "single").Ptr(), snapshot).IsSkip());
  testing::FakeHandle bare;
  GangScheduling without(bare);
  EXPECT_TRUE(without.PreFilter(state, *Member("a"), snapshot).IsSkip());
  common::Duration t{0};
  EXPECT_TRUE(without.Permit(state, *Member("a"), "n1", &t).ok());
}

TEST_F(GangSchedulingTest, AMemberOfAnUnknownPodGroupWaitsForIt) {
  framework::CycleState state;
  framework::Snapshot snapshot;
  framework::Status s = plugin_.PreFilter(state, *Member("a", "missing"), snapshot);
  EXPECT_EQ(s.code(), framework::Code::kUnschedulableAndUnresolvable);
  EXPECT_EQ(s.reason(), "waiting for pod group podgroup:ml/missing to be created");
}

TEST_F(GangSchedulingTest, ATrialDomainKeepsTheMemberInsideIt) {
  framework::CycleState state;
  framework::Snapshot snapshot;
  api::PodPtr pod = Member("a");
  EXPECT_TRUE(plugin_.PreFilter(state, *pod, snapshot).IsSkip()) << "no trial: no Filter";
  gangs_.domains[api::GangKey(*pod)] = {common::Intern("topology.kubernetes.io/zone"),
                                        common::Intern("zone-b")};
  ASSERT_TRUE(plugin_.PreFilter(state, *pod, snapshot).ok());
  framework::NodeInfo in, out, unlabelled;
  in.node = MakeNode("in").Label("topology.kubernetes.io/zone", "zone-b").Ptr();
  out.node = MakeNode("out").Label("topology.kubernetes.io/zone", "zone-a").Ptr();
  unlabelled.node = MakeNode("none").Ptr();
  EXPECT_TRUE(plugin_.Filter(state, *pod, in).ok());
  for (const framework::NodeInfo* n : {&out, &unlabelled}) {
    framework::Status s = plugin_.Filter(state, *pod, *n);
    EXPECT_EQ(s.code(), framework::Code::kUnschedulableAndUnresolvable);
    EXPECT_EQ(s.reason(), kReasonOutsideDomain);
  }
}

TEST_F(GangSchedulingTest, MembersWaitUntilTheQuorumAndTheLastOneAllowsTheOthers) {
  api::PodPtr a = Member("a"), b = Member("b"), c = Member("c");
  EXPECT_TRUE(Permit(a).IsWait());
  EXPECT_EQ(timeout_, std::chrono::seconds(30)) << "the PodGroup's scheduleTimeoutSeconds";
  EXPECT_TRUE(Permit(b).IsWait());
  EXPECT_TRUE(waiting_.allowed.empty());
  EXPECT_TRUE(Permit(c).ok());
  std::sort(waiting_.allowed.begin(), waiting_.allowed.end());
  EXPECT_EQ(waiting_.allowed, (std::vector<std::string>{a->meta.uid, b->meta.uid}));
  // Unreserve takes a member back: the next one waits again.
  framework::CycleState state;
  plugin_.Unreserve(state, *c, "n1");
  EXPECT_EQ(gangs_.ReservedMembers(api::GangKey(*a)).size(), 2u);
}

TEST_F(GangSchedulingTest, AWorkloadBasicPodGroupIsNoGang) {
  auto basic = std::make_shared<api::PodGroup>();
  basic->api = api::GangApi::kPodGroup;
  basic->namespace_ = "ml";
  basic->name = "loose";
  basic->gang = false;
  basic->min_member = 4;
  gangs_.policies[basic->Key()] = basic;
  EXPECT_TRUE(Permit(Member("x", "loose")).ok());
  EXPECT_TRUE(gangs_.ReservedMembers("podgroup:ml/loose").empty()) << "not tracked";
}

}  // namespace
}  // namespace gpusched::plugins::gang_scheduling
