// SPDX-License-Identifier: Apache-2.0
// The binding protocol with real Framework, Cache and WaitingPodMap: Permit's Wait really holds the
// pod (assumed, devices claimed) until it is allowed, rejected or times out, and every failure
// after the assumption rolls back Reserve and the cache.
#include "src/binding/binding_cycle.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "src/testing/builders.h"
#include "src/testing/fake_handle.h"

namespace gpusched::binding {
namespace {

using framework::Code;
using framework::Status;
using testing::MakeNode;
using testing::MakePod;

// Records every point it is called at; Permit and Bind answer as the test says.
class Recorder final : public framework::QueueSortPlugin,
                       public framework::ReservePlugin,
                       public framework::PermitPlugin,
                       public framework::BindPlugin,
                       public framework::PostBindPlugin {
 public:
  std::string_view Name() const override { return "Recorder"; }
  bool Less(const framework::QueuedPodInfo&, const framework::QueuedPodInfo&) const override {
    return false;
  }
  Status Reserve(framework::CycleState&, const api::Pod&, const framework::NodeInfo&) override {
    calls.push_back("Reserve");
    return reserve;
  }
  void Unreserve(framework::CycleState&, const api::Pod&, std::string_view) override {
    calls.push_back("Unreserve");
  }
  Status Permit(framework::CycleState&, const api::Pod&, std::string_view,
                common::Duration* timeout) override {
    calls.push_back("Permit");
    *timeout = permit_timeout;
    return permit;
  }
  Status Bind(framework::CycleState&, const api::Pod&, std::string_view) override {
    calls.push_back("Bind");
    return bind;
  }
  void PostBind(framework::CycleState&, const api::Pod&, std::string_view) override {
    calls.push_back("PostBind");
  }

  std::vector<std::string> calls;
  Status reserve;
  Status permit;
  common::Duration permit_timeout = std::chrono::seconds(10);
  Status bind;
};

class BindingCycleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(registry_
                    .Register("Recorder",
                              [this](const boost::json::value&,
                                     framework::Handle&) -> common::StatusOr<framework::PluginPtr> {
                                auto p = std::make_unique<Recorder>();
                                plugin_ = p.get();
                                return framework::PluginPtr(std::move(p));
                              })
                    .ok());
    config::Profile profile;
    profile.path = "profiles[0]";
    for (auto point : {config::Point::kQueueSort, config::Point::kReserve, config::Point::kPermit,
                       config::Point::kBind, config::Point::kPostBind}) {
      profile.plugins.at(point).disabled.push_back({"*", 0, ""});
      profile.plugins.at(point).enabled.push_back({"Recorder", 0, ""});
    }
    auto fw = framework::runtime::Framework::Create(profile, 100, registry_, handle_);
    ASSERT_TRUE(fw.ok()) << fw.status().ToString();
    fw_ = std::move(fw).value();
    fw_->SetWaitingPods(&waiting_);
    handle_.SetWaitingPods(&waiting_);
    cache_.AddNode(MakeNode("n1").Cpu("8").Memory("16Gi").Pods(10).Gpus(8).Ptr());
    cache_.UpdateSnapshot(snapshot_);
  }

  Attempt NewAttempt(const std::string& name) {
    return Attempt{fw_.get(), MakePod("default", name).Uid("uid-" + name).Cpu("1").Gpus(1).Ptr(),
                   std::make_shared<framework::CycleState>(), "n1"};
  }
  // Reserve, then Bind; the outcome once `done` ran (nullopt while the pod waits).
  std::optional<Status>& Schedule(const Attempt& a) {
    outcome_.reset();
    Status st = cycle_.Reserve(a, *snapshot_.Get("n1"));
    if (!st.ok()) {
      outcome_ = st;
      return outcome_;
    }
    cycle_.Bind(a, [this](Status s) { outcome_ = std::move(s); });
    return outcome_;
  }

  framework::Registry registry_;
  testing::FakeHandle handle_;
  framework::runtime::WaitingPodMap waiting_;
  cache::Cache cache_{handle_.fake_clock()};
  common::InlineExecutor executor_;
  BindingCycle cycle_{cache_, waiting_, executor_};
  framework::Snapshot snapshot_;
  std::unique_ptr<framework::runtime::Framework> fw_;
  Recorder* plugin_ = nullptr;
  std::optional<Status> outcome_;
};

TEST_F(BindingCycleTest, BindsThroughEveryPointInOrderAndConfirmsTheAssumption) {
  Attempt a = NewAttempt("p");
  auto& outcome = Schedule(a);
  ASSERT_TRUE(outcome.has_value());
  EXPECT_TRUE(outcome->ok()) << outcome->ToString();
  EXPECT_EQ(plugin_->calls, (std::vector<std::string>{"Reserve", "Permit", "Bind", "PostBind"}));
  EXPECT_TRUE(cache_.IsAssumed("uid-p")) << "assumed until the informer confirms the bind";
}

TEST_F(BindingCycleTest, PermitWaitHoldsThePodAssumedUntilEveryHolderAllows) {
  plugin_->permit = Status::Wait();
  Attempt a = NewAttempt("p");
  auto& outcome = Schedule(a);
  EXPECT_FALSE(outcome.has_value()) << "the pod waits at Permit";
  EXPECT_TRUE(cache_.IsAssumed("uid-p")) << "its resources stay claimed while it waits";
  auto listed = handle_.waiting_pods().List();
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].node, "n1");
  EXPECT_EQ(listed[0].pending, (std::vector<std::string>{"Recorder"}));
  EXPECT_FALSE(handle_.waiting_pods().Allow("uid-p", "SomeoneElse")) << "only a holder can allow";
  EXPECT_FALSE(outcome.has_value());
  EXPECT_TRUE(handle_.waiting_pods().Allow("uid-p", "Recorder"));
  ASSERT_TRUE(outcome.has_value());
  EXPECT_TRUE(outcome->ok()) << outcome->ToString();
  EXPECT_EQ(plugin_->calls, (std::vector<std::string>{"Reserve", "Permit", "Bind", "PostBind"}));
  EXPECT_EQ(waiting_.size(), 0u);
}

TEST_F(BindingCycleTest, AllowedBeforeTheBindingHalfStartsStillBindsOnce) {
  plugin_->permit = Status::Wait();
  Attempt a = NewAttempt("p");
  ASSERT_TRUE(cycle_.Reserve(a, *snapshot_.Get("n1")).ok());
  EXPECT_TRUE(waiting_.Allow("uid-p", "Recorder"));  // e.g. the last gang member arrived
  int done = 0;
  cycle_.Bind(a, [&](Status s) {
    EXPECT_TRUE(s.ok());
    ++done;
  });
  EXPECT_EQ(done, 1);
}

TEST_F(BindingCycleTest, RejectedWhileWaitingRollsBackReserveAndTheCache) {
  plugin_->permit = Status::Wait();
  Attempt a = NewAttempt("p");
  auto& outcome = Schedule(a);
  EXPECT_TRUE(handle_.waiting_pods().Reject("uid-p", "Recorder", "gang default/job timed out"));
  ASSERT_TRUE(outcome.has_value());
  EXPECT_EQ(outcome->code(), Code::kUnschedulable);
  EXPECT_EQ(outcome->reason(), "gang default/job timed out");
  EXPECT_EQ(outcome->plugin(), "Recorder");
  EXPECT_EQ(plugin_->calls, (std::vector<std::string>{"Reserve", "Permit", "Unreserve"}));
  EXPECT_FALSE(cache_.Contains("uid-p")) << "a rejected pod releases its GPUs";
  EXPECT_FALSE(handle_.waiting_pods().Reject("uid-p", "Recorder", "twice")) << "no longer waiting";
}

TEST_F(BindingCycleTest, WaitTimesOutOnTheInjectedClockWithKubeSchedulersMessage) {
  plugin_->permit = Status::Wait();
  plugin_->permit_timeout = std::chrono::seconds(30);
  Attempt a = NewAttempt("p");
  auto& outcome = Schedule(a);
  handle_.fake_clock().Advance(std::chrono::seconds(29));
  EXPECT_EQ(waiting_.ExpireDue(handle_.fake_clock().Now()), 0);
  EXPECT_FALSE(outcome.has_value());
  handle_.fake_clock().Advance(std::chrono::seconds(1));
  EXPECT_EQ(waiting_.ExpireDue(handle_.fake_clock().Now()), 1);
  ASSERT_TRUE(outcome.has_value());
  EXPECT_EQ(outcome->code(), Code::kUnschedulable);
  EXPECT_EQ(outcome->reason(), "rejected due to timeout after waiting 30s at plugin Recorder");
  EXPECT_FALSE(cache_.Contains("uid-p"));
}

TEST_F(BindingCycleTest, PermitTimeoutsAreCappedAtFifteenMinutes) {
  plugin_->permit = Status::Wait();
  plugin_->permit_timeout = std::chrono::hours(2);
  Attempt a = NewAttempt("p");
  auto& outcome = Schedule(a);
  handle_.fake_clock().Advance(std::chrono::minutes(15));
  waiting_.ExpireDue(handle_.fake_clock().Now());
  ASSERT_TRUE(outcome.has_value());
  EXPECT_EQ(outcome->reason(), "rejected due to timeout after waiting 15m0s at plugin Recorder");
}

TEST_F(BindingCycleTest, PermitRejectionEndsTheAttemptInTheSchedulingCycle) {
  plugin_->permit = Status::Unschedulable("not now");
  Attempt a = NewAttempt("p");
  auto& outcome = Schedule(a);
  ASSERT_TRUE(outcome.has_value());
  EXPECT_EQ(outcome->code(), Code::kUnschedulable);
  EXPECT_EQ(outcome->plugin(), "Recorder");
  EXPECT_EQ(plugin_->calls, (std::vector<std::string>{"Reserve", "Permit", "Unreserve"}));
  EXPECT_FALSE(cache_.Contains("uid-p"));
}

TEST_F(BindingCycleTest, BindFailureRollsBackAndReportsAnError) {
  plugin_->bind = Status::Error("API server unreachable");
  Attempt a = NewAttempt("p");
  auto& outcome = Schedule(a);
  ASSERT_TRUE(outcome.has_value());
  EXPECT_TRUE(outcome->IsError());
  EXPECT_EQ(outcome->reason(), "Binding rejected: Error (Recorder): API server unreachable");
  EXPECT_EQ(plugin_->calls, (std::vector<std::string>{"Reserve", "Permit", "Bind", "Unreserve"}));
  EXPECT_FALSE(cache_.Contains("uid-p"));
}

TEST_F(BindingCycleTest, ReserveFailureNeverAssumes) {
  plugin_->reserve = Status::Unschedulable("devices gone");
  Attempt a = NewAttempt("p");
  auto& outcome = Schedule(a);
  ASSERT_TRUE(outcome.has_value());
  EXPECT_TRUE(outcome->IsRejected());
  EXPECT_FALSE(cache_.Contains("uid-p"));
  EXPECT_EQ(plugin_->calls, (std::vector<std::string>{"Reserve", "Unreserve"}));
}

TEST(FormatWaitTest, PrintsLikeGoDurations) {
  using framework::runtime::FormatWait;
  EXPECT_EQ(FormatWait(std::chrono::seconds(30)), "30s");
  EXPECT_EQ(FormatWait(std::chrono::seconds(90)), "1m30s");
  EXPECT_EQ(FormatWait(std::chrono::milliseconds(1500)), "1.5s");
  EXPECT_EQ(FormatWait(std::chrono::milliseconds(250)), "250ms");
  EXPECT_EQ(FormatWait(std::chrono::hours(1)), "1h0m0s");
}

}  // namespace
}  // namespace gpusched::binding
