// SPDX-License-Identifier: Apache-2.0
#include "src/kube/client/async_events.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "src/kube/accepting_api_client.h"
#include "src/testing/builders.h"

namespace gpusched::kube::client {
namespace {

// Records what reaches the API; CreateEvent blocks while `hold` is set.
class FakeApi final : public AcceptingApiClient {
 public:
  common::Status BindPod(const api::Pod& pod, std::string_view node,
                         const std::vector<std::pair<std::string, std::string>>&) override {
    std::lock_guard<std::mutex> l(mu);
    binds.push_back(pod.meta.name + "->" + std::string(node));
    return common::Status::Ok();
  }
  common::Status SetPodUnschedulable(const api::Pod& pod, std::string_view,
                                     std::string_view) override {
    std::lock_guard<std::mutex> l(mu);
    conditions.push_back(pod.meta.name);
    return common::Status::Ok();
  }
  common::Status PatchPodCondition(const api::Pod& pod, const api::Condition& c) override {
    std::lock_guard<std::mutex> l(mu);
    conditions.push_back(pod.meta.name + ":" + c.type);
    return common::Status::Ok();
  }
  common::Status DeletePod(const api::Pod& pod) override {
    std::lock_guard<std::mutex> l(mu);
    deletes.push_back(pod.meta.name);
    return common::Status::Ok();
  }
  common::Status SetNominatedNodeName(const api::Pod& pod, std::string_view node) override {
    std::lock_guard<std::mutex> l(mu);
    nominations.push_back(pod.meta.name + "->" + std::string(node));
    return common::Status::Ok();
  }
  common::Status UpdatePodGroupStatus(const api::PodGroup& g,
                                      const api::PodGroupStatus& st) override {
    std::lock_guard<std::mutex> l(mu);
    pod_groups.push_back(g.name + ":" + st.phase);
    return common::Status::Ok();
  }
  common::StatusOr<api::ResourceClaimPtr> UpdateResourceClaimStatus(
      const api::ResourceClaim& claim) override {
    std::lock_guard<std::mutex> l(mu);
    claims.push_back(claim.meta.name);
    auto stored = std::make_shared<api::ResourceClaim>(claim);
    stored->meta.resource_version = "stored";
    return api::ResourceClaimPtr(std::move(stored));
  }
  common::StatusOr<api::ResourceClaimPtr> CreateResourceClaim(
      const api::ResourceClaim& claim) override {
    std::lock_guard<std::mutex> l(mu);
    claims.push_back("create " + claim.meta.name);
    return api::ResourceClaimPtr(std::make_shared<const api::ResourceClaim>(claim));
  }
  common::Status DeleteResourceClaim(const api::ResourceClaim& claim) override {
    std::lock_guard<std::mutex> l(mu);
    claims.push_back("delete " + claim.meta.name);
    return common::Status::Ok();
  }
  common::Status SetPodExtendedResourceClaimStatus(
      const api::Pod& pod, const api::PodExtendedResourceClaimStatus& status) override {
    std::lock_guard<std::mutex> l(mu);
    claims.push_back("status " + pod.meta.name + " " + status.resource_claim_name);
    return common::Status::Ok();
  }
  common::Status CreateEvent(const EventRecord& e) override {
    std::unique_lock<std::mutex> l(mu);
    cv.wait(l, [&] { return !hold; });
    events.push_back(e.pod_name);
    times[e.pod_name].push_back(e.event_time);
    if (!fail_codes.empty()) {
      const common::StatusCode code = fail_codes.front();
      fail_codes.pop_front();
      return common::Status(code, "refused");
    }
    if (failures > 0) {
      --failures;
      return common::Status(fail_code, "down");
    }
    return common::Status::Ok();
  }
  void Release() {
    {
      std::lock_guard<std::mutex> l(mu);
      hold = false;
    }
    cv.notify_all();
  }
  size_t Events() {
    std::lock_guard<std::mutex> l(mu);
    return events.size();
  }
  void FailNext(std::deque<common::StatusCode> codes) {
    std::lock_guard<std::mutex> l(mu);
    fail_codes = std::move(codes);
  }

  std::mutex mu;
  std::condition_variable cv;
  bool hold = false;
  int failures = 0;  // how many of the next sends fail, with fail_code
  common::StatusCode fail_code = common::StatusCode::kUnavailable;
  std::deque<common::StatusCode> fail_codes;  // the next sends fail with these, before `failures`
  std::vector<std::string> binds, conditions, events, deletes, nominations, pod_groups, claims;
  std::map<std::string, std::vector<common::TimePoint>> times;  // event_time of each send
};

common::FakeClock clock;  // NOLINT: shared by the tests, thread-safe

EventRecord Event(int i) {
  EventRecord e;
  e.namespace_ = "ns";
  e.pod_name = "p" + std::to_string(i);
  e.reason = "Scheduled";
  return e;
}

TEST(AsyncEventClientTest, CreateEventReturnsBeforeTheEventIsSentAndSendsInOrder) {
  FakeApi api;
  api.hold = true;
  AsyncEventClient events(api, api, clock, {.max_queued = 100, .senders = 1});
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(events.CreateEvent(Event(i)).ok());
  EXPECT_EQ(api.Events(), 0u);  // all still waiting behind the held send
  api.Release();
  EXPECT_EQ(events.Shutdown(std::chrono::seconds(10)), 0u);
  EXPECT_EQ(api.events, (std::vector<std::string>{"p0", "p1", "p2", "p3", "p4"}));
  EXPECT_EQ(events.dropped(), 0u);
}

TEST(AsyncEventClientTest, BindsAndConditionsPassStraightThrough) {
  FakeApi api;
  api.hold = true;  // events stuck: binds must not wait for them
  AsyncEventClient events(api, api, clock, {.max_queued = 100, .senders = 1});
  ASSERT_TRUE(events.CreateEvent(Event(0)).ok());
  api::Pod pod = testing::MakePod("ns", "a").Obj();
  ASSERT_TRUE(events.BindPod(pod, "n1", {}).ok());
  ASSERT_TRUE(events.SetPodUnschedulable(pod, "Unschedulable", "no").ok());
  ASSERT_TRUE(events.PatchPodCondition(pod, {"DisruptionTarget", "True", "", "", {}}).ok());
  ASSERT_TRUE(events.DeletePod(pod).ok());
  ASSERT_TRUE(events.SetNominatedNodeName(pod, "n2").ok());
  api::PodGroup group;
  group.name = "train";
  ASSERT_TRUE(events.UpdatePodGroupStatus(group, {.phase = "Running"}).ok());
  // The claim write reaches the API and its answer comes back (no silent default).
  api::ResourceClaim claim;
  claim.meta.name = "gpu";
  common::StatusOr<api::ResourceClaimPtr> stored = events.UpdateResourceClaimStatus(claim);
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ((*stored)->meta.resource_version, "stored");
  // So do the extended resource claim's writes.
  ASSERT_TRUE(events.CreateResourceClaim(claim).ok());
  ASSERT_TRUE(events.SetPodExtendedResourceClaimStatus(pod, {{}, "gpu"}).ok());
  ASSERT_TRUE(events.DeleteResourceClaim(claim).ok());
  {
    std::lock_guard<std::mutex> l(api.mu);
    EXPECT_EQ(api.binds, (std::vector<std::string>{"a->n1"}));
    EXPECT_EQ(api.conditions, (std::vector<std::string>{"a", "a:DisruptionTarget"}));
    EXPECT_EQ(api.deletes, (std::vector<std::string>{"a"}));
    EXPECT_EQ(api.nominations, (std::vector<std::string>{"a->n2"}));
    EXPECT_EQ(api.pod_groups, (std::vector<std::string>{"train:Running"}));
    EXPECT_EQ(api.claims,
              (std::vector<std::string>{"gpu", "create gpu", "status a gpu", "delete gpu"}));
  }
  api.Release();
}

TEST(AsyncEventClientTest, AFullQueueDropsAndCounts) {
  FakeApi api;
  api.hold = true;
  AsyncEventClient events(api, api, clock, {.max_queued = 3, .senders = 1});
  int accepted = 0;
  int refused = 0;
  for (int i = 0; i < 10; ++i) {
    common::Status s = events.CreateEvent(Event(i));
    if (s.ok()) {
      ++accepted;
    } else {
      EXPECT_EQ(s.code(), common::StatusCode::kResourceExhausted);
      EXPECT_NE(s.message().find("ns/p" + std::to_string(i)), std::string::npos) << s.ToString();
      ++refused;
    }
  }
  // One may already be in the sender's hands, so 3 or 4 are accepted.
  EXPECT_GE(accepted, 3);
  EXPECT_LE(accepted, 4);
  EXPECT_EQ(events.dropped(), static_cast<uint64_t>(refused));
  api.Release();
  EXPECT_EQ(events.Shutdown(std::chrono::seconds(10)), 0u);
  EXPECT_EQ(api.Events(), static_cast<size_t>(accepted));
}

TEST(AsyncEventClientTest, ShutdownDropsWhatTimeDoesNotAllowThenSendsSynchronously) {
  FakeApi api;
  api.hold = true;
  AsyncEventClient events(api, api, clock, {.max_queued = 100, .senders = 1});
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(events.CreateEvent(Event(i)).ok());
  std::thread release([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    api.Release();  // lets the sender finish the event it holds, after Shutdown gave up
  });
  const size_t lost = events.Shutdown(std::chrono::milliseconds(50));
  release.join();
  EXPECT_GE(lost, 3u);  // p1..p3 were still queued (p0 possibly in flight)
  EXPECT_EQ(events.dropped(), lost);
  EXPECT_EQ(events.queued(), 0u);
  const size_t sent = api.Events();
  ASSERT_TRUE(events.CreateEvent(Event(9)).ok());  // after Shutdown: synchronous
  EXPECT_EQ(api.Events(), sent + 1);
  EXPECT_EQ(events.Shutdown(std::chrono::seconds(1)), 0u);  // idempotent
}

constexpr AsyncEventOptions kFastRetries{.max_queued = 100,
                                         .senders = 2,
                                         .max_tries = 4,
                                         .first_retry_wait = std::chrono::milliseconds(1),
                                         .max_retry_wait = std::chrono::milliseconds(4)};

TEST(AsyncEventClientTest, SendsRetriedWhileTheApiServerIsAwayLandUnderOneName) {
  FakeApi api;
  api.failures = 3;  // the API server is away for 3 sends: one fewer than max_tries
  AsyncEventOptions one_sender = kFastRetries;
  one_sender.senders = 1;
  AsyncEventClient events(api, api, clock, one_sender);
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(events.CreateEvent(Event(i)).ok());
  EXPECT_EQ(events.Shutdown(std::chrono::seconds(10)), 0u);
  EXPECT_EQ(events.dropped(), 0u);
  EXPECT_EQ(api.Events(), 23u);  // p0 three times in vain, then each event once
  for (const auto& [pod, times] : api.times) {
    // Stamped when queued, the same at every try: the event keeps its name.
    ASSERT_FALSE(times.empty());
    EXPECT_NE(times.front(), common::TimePoint{}) << pod;
    for (common::TimePoint t : times) EXPECT_EQ(t, times.front()) << pod;
  }
}

TEST(AsyncEventClientTest, AnEventWhoseTriesRunOutIsDroppedAndTheSendersGoOn) {
  FakeApi api;
  api.failures = 1 << 30;
  AsyncEventClient events(api, api, clock, kFastRetries);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(events.CreateEvent(Event(i)).ok());
  EXPECT_EQ(events.Shutdown(std::chrono::seconds(10)), 0u);  // all tried in time
  EXPECT_EQ(api.Events(), 5u * 4u);                          // max_tries each
  EXPECT_EQ(events.dropped(), 5u);
}

TEST(AsyncEventClientTest, AnEventTheApiServerRefusesIsNotRetried) {
  FakeApi api;
  api.failures = 1;
  api.fail_code = common::StatusCode::kInvalidArgument;  // a 422: resending changes nothing
  AsyncEventClient events(api, api, clock, kFastRetries);
  ASSERT_TRUE(events.CreateEvent(Event(0)).ok());
  ASSERT_TRUE(events.CreateEvent(Event(1)).ok());
  EXPECT_EQ(events.Shutdown(std::chrono::seconds(10)), 0u);
  EXPECT_EQ(api.Events(), 2u);
  EXPECT_EQ(events.dropped(), 1u);
}

// A restarted API server answers 403 until its RBAC authorizer has synced: a 403 soon after the
// server was unavailable is retried; one with no unavailability within restart_grace is not.
TEST(AsyncEventClientTest, ForbiddenRightAfterTheApiServerCameBackIsRetried) {
  FakeApi api;
  api.FailNext({common::StatusCode::kUnavailable, common::StatusCode::kPermissionDenied,
                common::StatusCode::kPermissionDenied});
  AsyncEventOptions one_sender = kFastRetries;
  one_sender.senders = 1;
  {
    AsyncEventClient events(api, api, clock, one_sender);
    ASSERT_TRUE(events.CreateEvent(Event(0)).ok());
    EXPECT_EQ(events.Shutdown(std::chrono::seconds(10)), 0u);
    EXPECT_EQ(api.Events(), 4u);  // unavailable, two 403s, then written
    EXPECT_EQ(events.dropped(), 0u);
    clock.Advance(one_sender.restart_grace + std::chrono::seconds(1));
  }
  {
    AsyncEventClient events(api, api, clock, one_sender);
    api.FailNext({common::StatusCode::kUnavailable});
    ASSERT_TRUE(events.CreateEvent(Event(1)).ok());
    while (api.Events() < 6) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    clock.Advance(one_sender.restart_grace + std::chrono::seconds(1));
    api.FailNext({common::StatusCode::kPermissionDenied});  // long after: RBAC says no
    ASSERT_TRUE(events.CreateEvent(Event(2)).ok());
    EXPECT_EQ(events.Shutdown(std::chrono::seconds(10)), 0u);
    EXPECT_EQ(api.Events(), 4u + 2u + 1u);
    EXPECT_EQ(events.dropped(), 1u);
  }
  AsyncEventClient fresh(api, api, clock, one_sender);  // never saw the server away
  api.FailNext({common::StatusCode::kPermissionDenied});
  ASSERT_TRUE(fresh.CreateEvent(Event(3)).ok());
  EXPECT_EQ(fresh.Shutdown(std::chrono::seconds(10)), 0u);
  EXPECT_EQ(fresh.dropped(), 1u);
}

TEST(AsyncEventClientTest, ShutdownEndsARetryWaitAndCountsTheEventAsLost) {
  FakeApi api;
  api.failures = 1 << 30;
  AsyncEventOptions slow = kFastRetries;
  slow.senders = 1;
  slow.first_retry_wait = slow.max_retry_wait = std::chrono::hours(1);
  AsyncEventClient events(api, api, clock, slow);
  ASSERT_TRUE(events.CreateEvent(Event(0)).ok());
  ASSERT_TRUE(events.CreateEvent(Event(1)).ok());
  while (api.Events() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(events.Shutdown(std::chrono::milliseconds(20)), 2u);  // p0 waiting, p1 queued
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::minutes(1));
  EXPECT_EQ(events.dropped(), 2u);
  EXPECT_EQ(api.Events(), 1u);
}

}  // namespace
}  // namespace gpusched::kube::client
