// SPDX-License-Identifier: Apache-2.0
#include "src/queue/scheduling_queue.h"

#include <gtest/gtest.h>

#include "src/common/interner.h"

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

TEST_F(QueueTest, FlushRetriesEachPodWhenItsOwnStayIsOver) {
  // Flush skips its pass over the pool until the earliest stay may be over: a pod that entered
  // later is flushed at its own time, also when the earlier one left the pool meanwhile.
  q_.Add(Pod("a"));
  q_.Requeue(*q_.TryPop(), false);
  clock_.Advance(std::chrono::minutes(2));
  q_.Add(Pod("b"));
  q_.Requeue(*q_.TryPop(), false);
  q_.Delete("uid-a");
  clock_.Advance(std::chrono::minutes(3));
  q_.Flush();  // a's stay would be over, but a left: nothing is due
  EXPECT_FALSE(q_.TryPop());
  clock_.Advance(std::chrono::seconds(119));
  q_.Flush();
  EXPECT_FALSE(q_.TryPop());
  clock_.Advance(std::chrono::seconds(1));
  q_.Flush();
  auto b = q_.TryPop();
  ASSERT_TRUE(b);
  EXPECT_EQ(b->pod->meta.name, "b");
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

// --- queueing hints ---------------------------------------------------------------------------

using framework::ClusterEvent;
using framework::EventResource;
using framework::QueueingHint;

// "NodeFit" rejects pods until a node named "big-*" is added; "Other" registers only assigned
// pod deletes. Profile "hinted".
framework::ProfileHints TestHints() {
  framework::ProfileHints hints;
  hints.push_back({"NodeFit",
                   {{ClusterEvent{EventResource::kNode, framework::kAdd},
                     [](const api::Pod&, const ClusterEvent&, const framework::EventObjects& o) {
                       return o.new_node != nullptr && o.new_node->meta.name.starts_with("big-")
                                  ? QueueingHint::kQueue
                                  : QueueingHint::kSkip;
                     }}}});
  hints.push_back(
      {"Other", {{ClusterEvent{EventResource::kAssignedPod, framework::kDelete}, nullptr}}});
  return hints;
}

api::PodPtr HintedPod(const std::string& name) {
  auto p = std::make_shared<api::Pod>(*Pod(name));
  p->scheduler_name = common::Intern("hinted");
  return p;
}

QueueEvent NodeAdded(const std::string& name) {
  auto n = std::make_shared<api::Node>();
  n->meta.name = name;
  QueueEvent e;
  e.event = {EventResource::kNode, framework::kAdd};
  e.new_node = n;
  return e;
}

QueueEvent AssignedPodDeleted() {
  QueueEvent e;
  e.event = {EventResource::kAssignedPod, framework::kDelete};
  e.old_pod = Pod("gone");
  return e;
}

class HintsTest : public QueueTest {
 protected:
  void SetUp() override { q_.SetProfileHints("hinted", TestHints()); }
  // Adds `name`, pops it and requeues it as rejected by `plugins`.
  void Reject(const std::string& name, std::vector<std::string> plugins,
              const std::vector<std::string>& pending = {}) {
    q_.Add(HintedPod(name));
    auto p = q_.TryPop();
    ASSERT_TRUE(p);
    p->unschedulable_plugins = std::move(plugins);
    q_.Requeue(*p, false, pending);
  }
};

TEST_F(HintsTest, AnEventMovesOnlyPodsWhoseRejectingPluginSaysItMayHelp) {
  Reject("fit", {"NodeFit"});
  Reject("other", {"Other"});
  EXPECT_EQ(q_.Counts().unschedulable, 2);
  q_.MoveOnEvent(NodeAdded("small-1"));  // NodeFit's hint: skip
  EXPECT_EQ(q_.Counts().unschedulable, 2);
  q_.MoveOnEvent(NodeAdded("big-1"));  // only "fit"
  EXPECT_EQ(q_.Counts().unschedulable, 1);
  EXPECT_EQ(q_.Counts().backoff, 1);
  q_.MoveOnEvent(AssignedPodDeleted());  // only "other"
  EXPECT_EQ(q_.Counts().unschedulable, 0);
  EXPECT_EQ(q_.Counts().backoff, 2);
}

TEST_F(HintsTest, PodsRejectedByNoOrUnknownPluginsMoveOnAnyEvent) {
  Reject("none", {});
  Reject("unknown", {"NotInTheTable"});
  Reject("fit", {"NodeFit"});
  q_.MoveOnEvent(AssignedPodDeleted());
  EXPECT_EQ(q_.Counts().unschedulable, 1) << "only the NodeFit pod stays";
  q_.MoveAllToActiveOrBackoff("Wildcard");
  EXPECT_EQ(q_.Counts().unschedulable, 0) << "a wildcard event moves every pod";
}

TEST_F(HintsTest, AProfileWithoutHintsMovesOnAnyEvent) {
  q_.Add(Pod("plain"));  // profile "" has no table
  auto p = q_.TryPop();
  p->unschedulable_plugins = {"NodeFit"};
  q_.Requeue(*p, false);
  q_.MoveOnEvent(NodeAdded("small-1"));
  EXPECT_EQ(q_.Counts().unschedulable, 0);
}

TEST_F(HintsTest, MovedPodsBackOffFromWhenTheyBecameUnschedulable) {
  Reject("fit", {"NodeFit"});
  clock_.Advance(std::chrono::seconds(2));  // past its 1 s backoff
  q_.MoveOnEvent(NodeAdded("big-1"));
  EXPECT_EQ(q_.Counts().active, 1);
}

TEST_F(HintsTest, EventsDuringTheAttemptAreCheckedWhenThePodComesBack) {
  q_.Add(HintedPod("a"));
  q_.Add(HintedPod("b"));
  auto a = q_.TryPop();
  q_.MoveOnEvent(NodeAdded("big-1"));  // while a is in flight
  auto b = q_.TryPop();
  q_.MoveOnEvent(NodeAdded("small-1"));  // while a and b are in flight
  a->unschedulable_plugins = {"NodeFit"};
  q_.Requeue(*a, false);
  EXPECT_EQ(q_.Counts().backoff, 1) << "big-1 arrived during a's attempt";
  b->unschedulable_plugins = {"NodeFit"};
  q_.Requeue(*b, false);
  EXPECT_EQ(q_.Counts().unschedulable, 1) << "b saw only small-1, which cannot help it";
  // Nothing in flight: the next pod starts with no remembered events.
  q_.Add(HintedPod("c"));
  auto c = q_.TryPop();
  c->unschedulable_plugins = {"Other"};
  q_.Requeue(*c, false);
  EXPECT_EQ(q_.Counts().unschedulable, 2);
}

TEST_F(HintsTest, InFlightEventsNotRegisteredByTheRejectorAreIgnored) {
  q_.Add(HintedPod("a"));
  auto a = q_.TryPop();
  q_.MoveOnEvent(AssignedPodDeleted());
  a->unschedulable_plugins = {"NodeFit"};
  q_.Requeue(*a, false);
  EXPECT_EQ(q_.Counts().unschedulable, 1);
}

TEST_F(HintsTest, AQueueFromAPendingPluginSkipsTheBackoff) {
  Reject("pending", {}, {"Other"});
  q_.MoveOnEvent(AssignedPodDeleted());
  EXPECT_EQ(q_.Counts().active, 1);
}

TEST_F(HintsTest, TheUnschedulableTimeoutStillFlushesHintedPods) {
  Reject("fit", {"NodeFit"});
  q_.MoveOnEvent(NodeAdded("small-1"));
  clock_.Advance(std::chrono::minutes(5));
  q_.Flush();
  EXPECT_TRUE(q_.TryPop());
}

TEST_F(HintsTest, TheIncomingMetricIsLabelledWithTheEvent) {
  Reject("fit", {"NodeFit"});
  q_.MoveOnEvent(NodeAdded("big-1"));
  bool found = false;
  for (const auto& [key, n] : q_.IncomingCountsForMetrics()) {
    if (key == "backoff|NodeAdd") found = n == 1;
  }
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace gpusched::queue
