// SPDX-License-Identifier: Apache-2.0
#include "src/queue/scheduling_queue.h"

#include <gtest/gtest.h>

namespace gpusched::queue {
namespace {

using framework::QueuedPodInfo;

api::PodPtr Pod(const std::string& name, int32_t priority = 0) {
  auto p = std::make_shared<api::Pod>();
  p->meta.name = name;
  p->meta.namespace_ = "default";
  p->meta.uid = "uid-" + name;
  p->priority = priority;
  return p;
}

bool ByPriority(const QueuedPodInfo& a, const QueuedPodInfo& b) {
  return a.pod->priority > b.pod->priority;
}

class QueueTest : public ::testing::Test {
 protected:
  common::FakeClock clock_;
  SchedulingQueue q_{clock_, ByPriority};
};

TEST_F(QueueTest, PopsByPriorityThenArrivalOrder) {
  q_.Add(Pod("low", 1));
  q_.Add(Pod("high-a", 10));
  q_.Add(Pod("high-b", 10));
  std::vector<std::string> order;
  while (auto p = q_.TryPop()) {
    order.push_back(p->pod->meta.name);
    q_.Done(p->pod->meta.uid);
  }
  EXPECT_EQ(order, (std::vector<std::string>{"high-a", "high-b", "low"}));
  EXPECT_EQ(q_.Counts().in_flight, 0);
}

TEST_F(QueueTest, UnschedulablePodWaitsForAnEventThenBacksOff) {
  q_.Add(Pod("a"));
  auto p = q_.TryPop();
  ASSERT_TRUE(p);
  EXPECT_EQ(p->attempts, 1);
  q_.Requeue(*p, /*error=*/false);
  EXPECT_EQ(q_.Counts().unschedulable, 1);
  EXPECT_FALSE(q_.TryPop()) << "an unschedulable pod must wait for a cluster event";
  q_.MoveAllToActiveOrBackoff("NodeAdd");
  EXPECT_EQ(q_.Counts().backoff, 1) << "its 1 s backoff has not expired yet";
  EXPECT_FALSE(q_.TryPop());
  clock_.Advance(std::chrono::milliseconds(1001));
  auto again = q_.TryPop();
  ASSERT_TRUE(again);
  EXPECT_EQ(again->attempts, 2);
}

TEST_F(QueueTest, ErrorsGoToBackoffThatDoublesUpToTheMaximum) {
  q_.Add(Pod("a"));
  for (int attempt = 1; attempt <= 6; ++attempt) {
    auto p = q_.TryPop();
    ASSERT_TRUE(p) << "attempt " << attempt;
    q_.Requeue(*p, /*error=*/true);
    auto want = std::min<int64_t>(1LL << (attempt - 1), 10);
    clock_.Advance(std::chrono::seconds(want) - std::chrono::milliseconds(1));
    EXPECT_FALSE(q_.TryPop()) << "attempt " << attempt << " backoff " << want << "s";
    clock_.Advance(std::chrono::milliseconds(2));
  }
}

TEST_F(QueueTest, EventDuringAttemptSendsRejectionToBackoffNotThePool) {
  q_.Add(Pod("a"));
  auto p = q_.TryPop();
  q_.MoveAllToActiveOrBackoff("NodeAdd");  // arrives while the pod is in flight
  q_.Requeue(*p, false);
  EXPECT_EQ(q_.Counts().unschedulable, 0);
  EXPECT_EQ(q_.Counts().backoff, 1);
}

TEST_F(QueueTest, DeleteAndUpdateAreSafeInEveryState) {
  q_.Add(Pod("a", 1));
  q_.Add(Pod("b", 2));
  q_.Update(Pod("a", 5));  // a now outranks b
  q_.Delete("uid-b");
  auto p = q_.TryPop();
  ASSERT_TRUE(p);
  EXPECT_EQ(p->pod->meta.name, "a");
  EXPECT_EQ(p->pod->priority, 5);
  EXPECT_FALSE(q_.TryPop()) << "the deleted pod's stale heap entry must be skipped";
  q_.Delete("uid-a");     // while in flight
  q_.Requeue(*p, false);  // requeue of a deleted pod is ignored
  EXPECT_FALSE(q_.Contains("uid-a"));
  auto c = q_.Counts();
  EXPECT_EQ(c.active + c.backoff + c.unschedulable + c.in_flight, 0);
}

TEST_F(QueueTest, GatedPodsWaitUntilTheirGatesAreRemoved) {
  auto gated = std::make_shared<api::Pod>(*Pod("g"));
  gated->scheduling_gates = {"example.com/quota"};
  q_.Add(gated);
  EXPECT_EQ(q_.Counts().gated, 1);
  EXPECT_FALSE(q_.TryPop());
  q_.Update(Pod("g"));
  EXPECT_TRUE(q_.TryPop());
}

TEST_F(QueueTest, FlushRetriesPodsStuckInThePool) {
  q_.Add(Pod("a"));
  auto p = q_.TryPop();
  q_.Requeue(*p, false);
  clock_.Advance(std::chrono::minutes(5));
  q_.Flush();
  EXPECT_TRUE(q_.TryPop());
}

api::PodPtr Member(const std::string& name, const std::string& group) {
  auto p = std::make_shared<api::Pod>(*Pod(name));
  p->gang.api = api::GangApi::kPodGroup;
  p->gang.name = group;
  return p;
}

TEST_F(QueueTest, PopGangTakesTheWaitingMembersOfOneGangFromEverySubQueue) {
  q_.Add(Member("a", "train"));
  q_.Add(Member("b", "train"));
  q_.Add(Member("c", "train"));
  q_.Add(Member("x", "other"));
  q_.Add(Pod("plain"));
  auto first = q_.TryPop();
  ASSERT_TRUE(first);
  EXPECT_EQ(first->pod->meta.name, "a");
  // b fails alone (unschedulable pool), c stays active.
  auto b = q_.TryPop();
  ASSERT_EQ(b->pod->meta.name, "b");
  q_.Requeue(*b, /*error=*/false);
  std::vector<QueuedPodInfo> rest = q_.PopGang("podgroup:default/train");
  std::vector<std::string> names;
  for (const auto& m : rest) names.push_back(m.pod->meta.name);
  EXPECT_EQ(names, (std::vector<std::string>{"b", "c"})) << "a is in flight already";
  EXPECT_EQ(rest[0].attempts, 2);
  EXPECT_EQ(rest[1].attempts, 1);
  EXPECT_EQ(q_.Counts().in_flight, 3);
  EXPECT_EQ(q_.Counts().unschedulable, 0);
  // The others are untouched and c is not popped twice.
  std::vector<std::string> order;
  while (auto p = q_.TryPop()) order.push_back(p->pod->meta.name);
  EXPECT_EQ(order, (std::vector<std::string>{"x", "plain"}));
  EXPECT_TRUE(q_.PopGang("podgroup:default/none").empty());
}

TEST_F(QueueTest, ActivateGangWakesItsMembersOnly) {
  q_.Add(Member("a", "train"));
  q_.Add(Pod("plain"));
  for (int i = 0; i < 2; ++i) {
    auto p = q_.TryPop();
    ASSERT_TRUE(p);
    q_.Requeue(*p, /*error=*/false);
  }
  EXPECT_EQ(q_.Counts().unschedulable, 2);
  q_.ActivateGang("podgroup:default/train", "GangMemberAdd");
  auto p = q_.TryPop();
  ASSERT_TRUE(p);
  EXPECT_EQ(p->pod->meta.name, "a");
  EXPECT_FALSE(q_.TryPop()) << "the plain pod waits for a cluster event";
  q_.Done(p->pod->meta.uid);
  EXPECT_TRUE(q_.PopGang("podgroup:default/train").empty()) << "done members leave the index";
}

}  // namespace
}  // namespace gpusched::queue
