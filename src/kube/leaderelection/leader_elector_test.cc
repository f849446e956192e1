// SPDX-License-Identifier: Apache-2.0
#include "src/kube/leaderelection/leader_elector.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <chrono>
#include <deque>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "src/api/decode.h"
#include "src/common/mutex.h"

namespace gpusched::kube::leaderelection {
namespace {

namespace json = boost::json;
using std::chrono::seconds;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr std::string_view kLeasePath =
    "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/gpu-scheduler";

// An API server holding at most one Lease, with resourceVersion checks like the real one.
class FakeLeaseServer final : public RestClient {
 public:
  common::StatusOr<Response> Do(const Request& req) override {
    if (req.method == "PUT") {
      std::function<void()> hook;
      {
        common::MutexLock l(mu_);
        hook = std::exchange(before_put_, nullptr);
      }
      if (hook) hook();
    }
    common::MutexLock l(mu_);
    log_.push_back(req.method);
    if (!failures_.empty()) {
      Response r = failures_.front();
      failures_.pop_front();
      return r;
    }
    if (fail_all_) return Response{500, R"({"kind":"Status","message":"etcd is down"})"};
    if (req.method == "GET" && req.path == kLeasePath) {
      if (!lease_) return Response{404, R"({"kind":"Status","reason":"NotFound"})"};
      return Response{200, Serialize()};
    }
    auto body = api::ParseJson(req.body, "request");
    if (!body.ok()) return Response{400, ""};
    const json::object& o = body->as_object();
    if (req.method == "POST" &&
        req.path == "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases") {
      if (lease_) return Response{409, R"({"kind":"Status","reason":"AlreadyExists"})"};
      lease_ = json::value_to<json::object>(o.at("spec"));
      ++rv_;
      return Response{201, Serialize()};
    }
    if (req.method == "PUT" && req.path == kLeasePath) {
      if (!lease_) return Response{404, ""};
      std::string rv(o.at("metadata").as_object().at("resourceVersion").as_string());
      if (rv != std::to_string(rv_) || conflict_next_put_) {
        conflict_next_put_ = false;
        return Response{
            409,
            R"({"kind":"Status","reason":"Conflict","message":"the object has been modified"})"};
      }
      lease_ = json::value_to<json::object>(o.at("spec"));
      ++rv_;
      return Response{200, Serialize()};
    }
    return Response{405, ""};
  }
  common::Status Stream(const Request&, const std::function<bool(std::string_view)>&) override {
    return common::UnimplementedError("no watches here");
  }

  // Someone else writes the lease (another replica).
  void SetHolder(std::string holder, int64_t duration_s = 15,
                 std::string renew = "2023-11-14T22:13:20.000000Z") {
    common::MutexLock l(mu_);
    json::object spec{{"holderIdentity", holder},
                      {"leaseDurationSeconds", duration_s},
                      {"acquireTime", renew},
                      {"renewTime", renew},
                      {"leaseTransitions", 3}};
    lease_ = spec;
    ++rv_;
  }
  std::optional<json::object> Lease() {
    common::MutexLock l(mu_);
    return lease_;
  }
  std::string Holder() {
    auto l = Lease();
    return l ? std::string(l->at("holderIdentity").as_string()) : "<none>";
  }
  void FailNext(int status) {
    common::MutexLock l(mu_);
    failures_.push_back(Response{status, R"({"kind":"Status","message":"injected"})"});
  }
  void FailAll(bool on) {
    common::MutexLock l(mu_);
    fail_all_ = on;
  }
  // Runs `fn` (without the server's lock) just before the next PUT is applied.
  void BeforeNextPut(std::function<void()> fn) {
    common::MutexLock l(mu_);
    before_put_ = std::move(fn);
  }
  void ConflictNextPut() {
    common::MutexLock l(mu_);
    conflict_next_put_ = true;
  }
  std::vector<std::string> TakeLog() {
    common::MutexLock l(mu_);
    return std::exchange(log_, {});
  }

 private:
  std::string Serialize() const GPUSCHED_REQUIRES(mu_) {
    json::object lease{{"apiVersion", "coordination.k8s.io/v1"},
                       {"kind", "Lease"},
                       {"metadata", json::object{{"name", "gpu-scheduler"},
                                                 {"namespace", "kube-system"},
                                                 {"resourceVersion", std::to_string(rv_)}}},
                       {"spec", *lease_}};
    return json::serialize(lease);
  }
  common::Mutex mu_;
  std::optional<json::object> lease_ GPUSCHED_GUARDED_BY(mu_);
  int64_t rv_ GPUSCHED_GUARDED_BY(mu_) = 100;
  std::deque<Response> failures_ GPUSCHED_GUARDED_BY(mu_);
  bool fail_all_ GPUSCHED_GUARDED_BY(mu_) = false;
  bool conflict_next_put_ GPUSCHED_GUARDED_BY(mu_) = false;
  std::function<void()> before_put_ GPUSCHED_GUARDED_BY(mu_);
  std::vector<std::string> log_ GPUSCHED_GUARDED_BY(mu_);
};

struct Recorder {
  std::vector<std::string> events;
  LeaderCallbacks Callbacks() {
    return {[this] { events.push_back("started"); }, [this] { events.push_back("stopped"); },
            [this](std::string_view id) { events.push_back("leader:" + std::string(id)); }};
  }
};

LeaderElectionConfig Config(std::string identity = "me") {
  LeaderElectionConfig c;
  c.identity = std::move(identity);
  return c;  // 15 s / 10 s / 2 s, kube-system/gpu-scheduler
}

class LeaderElectorTest : public ::testing::Test {
 protected:
  std::unique_ptr<LeaderElector> New(LeaderElectionConfig c = Config()) {
    auto le = LeaderElector::Create(server_, clock_, std::move(c), rec_.Callbacks());
    EXPECT_TRUE(le.ok()) << le.status().ToString();
    return le.ok() ? std::move(le).value() : nullptr;
  }
  FakeLeaseServer server_;
  common::FakeClock clock_;
  Recorder rec_;
};

TEST_F(LeaderElectorTest, AcquiresALeaseThatDoesNotExistYet) {
  auto le = New();
  EXPECT_TRUE(le->Step());
  EXPECT_TRUE(le->IsLeader());
  EXPECT_EQ(le->GetLeader(), "me");
  EXPECT_THAT(server_.TakeLog(), ElementsAre("GET", "POST"));
  auto lease = server_.Lease();
  ASSERT_TRUE(lease.has_value());
  EXPECT_EQ(lease->at("holderIdentity").as_string(), "me");
  EXPECT_EQ(lease->at("leaseDurationSeconds").as_int64(), 15);
  EXPECT_EQ(lease->at("renewTime").as_string(), FormatMicroTime(clock_.Now()));
  EXPECT_EQ(lease->at("leaseTransitions").as_int64(), 0);
  EXPECT_THAT(rec_.events, ElementsAre("leader:me", "started"));
}

TEST_F(LeaderElectorTest, RenewsKeepingAcquireTimeAndTransitions) {
  auto le = New();
  ASSERT_TRUE(le->Step());
  std::string acquired(server_.Lease()->at("acquireTime").as_string());
  clock_.Advance(seconds(2));
  EXPECT_TRUE(le->Step());
  EXPECT_THAT(server_.TakeLog(), ElementsAre("GET", "POST", "GET", "PUT"));
  auto lease = server_.Lease();
  EXPECT_EQ(lease->at("acquireTime").as_string(), acquired);
  EXPECT_EQ(lease->at("renewTime").as_string(), FormatMicroTime(clock_.Now()));
  EXPECT_EQ(lease->at("leaseTransitions").as_int64(), 0);
  EXPECT_THAT(rec_.events, ElementsAre("leader:me", "started"));  // no second "started"
}

TEST_F(LeaderElectorTest, FollowsOrTakesOverDependingOnWhatItSees) {
  struct Case {
    std::string name;
    std::string holder;
    int64_t lease_seconds;
    // Seconds to advance between the first and second attempt, and whether the holder renews
    // meanwhile.
    int64_t wait_s;
    bool holder_renews;
    bool want_leader;
    int64_t want_transitions;
  };
  std::vector<Case> cases = {
      {"another holder with a fresh lease blocks", "other", 15, 0, false, false, 3},
      {"another holder that keeps renewing is never taken over", "other", 15, 16, true, false, 3},
      {"a lease not renewed for its duration is taken over", "other", 15, 16, false, true, 4},
      {"the record's own duration counts, not ours", "other", 30, 16, false, false, 3},
      {"a released lease (empty holder) is taken at once", "", 1, 0, false, true, 4},
      {"our own lease from before a restart is taken at once", "me", 15, 0, false, true, 3},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    FakeLeaseServer server;
    common::FakeClock clock;
    Recorder rec;
    server.SetHolder(c.holder, c.lease_seconds);
    auto le = LeaderElector::Create(server, clock, Config(), rec.Callbacks());
    ASSERT_TRUE(le.ok());
    bool first = (*le)->Step();
    if (c.wait_s > 0) {
      EXPECT_FALSE(first);
      for (int64_t t = 0; t < c.wait_s; t += 2) {
        clock.Advance(seconds(2));
        if (c.holder_renews)
          server.SetHolder(c.holder, c.lease_seconds, FormatMicroTime(clock.Now()));
        if (t + 2 < c.wait_s) (*le)->Step();
      }
    }
    bool leader = c.wait_s > 0 ? (*le)->Step() : first;
    EXPECT_EQ(leader, c.want_leader);
    EXPECT_EQ((*le)->IsLeader(), c.want_leader);
    EXPECT_EQ(server.Lease()->at("leaseTransitions").as_int64(), c.want_transitions);
    EXPECT_EQ(server.Holder(), c.want_leader ? "me" : c.holder);
    if (!c.holder.empty()) {
      EXPECT_EQ(rec.events.front(), "leader:" + c.holder);
    }
  }
}

TEST_F(LeaderElectorTest, AFollowerWaitsNoLongerThanUntilTheHoldersLeaseExpires) {
  server_.SetHolder("other", 15);
  auto le = New();
  using std::chrono::milliseconds;
  struct Case {
    std::string name;
    common::Duration advance;   // before the attempt
    common::Duration min, max;  // of the wait after it
  };
  std::vector<Case> cases = {
      {"far from expiry: retryPeriod with jitter", seconds(0), seconds(2), milliseconds(4400)},
      {"14 s in: just after the expiry 1 s later", seconds(14), milliseconds(1000),
       milliseconds(1100)},
      {"14.99 s in: at once, but not in a hot loop", milliseconds(990), milliseconds(50),
       milliseconds(60)},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    clock_.Advance(c.advance);
    EXPECT_FALSE(le->Step());
    common::Duration wait = le->NextWait();
    EXPECT_GE(wait, c.min);
    EXPECT_LE(wait, c.max);
  }
  clock_.Advance(std::chrono::milliseconds(60));
  EXPECT_TRUE(le->Step());                // 15.05 s after it was first seen unchanged
  EXPECT_EQ(le->NextWait(), seconds(2));  // a leader renews every retryPeriod
}

TEST_F(LeaderElectorTest, AConflictIsRetriedWithAFreshRead) {
  auto le = New();
  ASSERT_TRUE(le->Step());
  server_.TakeLog();
  server_.ConflictNextPut();
  clock_.Advance(seconds(2));
  EXPECT_TRUE(le->Step());
  EXPECT_THAT(server_.TakeLog(), ElementsAre("GET", "PUT", "GET", "PUT"));
  EXPECT_TRUE(le->IsLeader());
}

TEST_F(LeaderElectorTest, LosingTheRaceForAnExpiredLeaseLeavesAFollower) {
  // Both candidates read the expired lease; b writes first, so a's write is stale (409): a
  // re-reads, sees b's fresh lease and stays a follower.
  server_.SetHolder("dead", 15);
  Recorder rb;
  auto a = New(Config("a"));
  auto b = LeaderElector::Create(server_, clock_, Config("b"), rb.Callbacks());
  ASSERT_TRUE(b.ok());
  EXPECT_FALSE(a->Step());
  EXPECT_FALSE((*b)->Step());
  clock_.Advance(seconds(16));
  server_.TakeLog();
  bool b_won = false;
  server_.BeforeNextPut([&] { b_won = (*b)->Step(); });
  EXPECT_FALSE(a->Step());
  EXPECT_TRUE(b_won);
  EXPECT_THAT(server_.TakeLog(), ElementsAre("GET", "GET", "PUT", "PUT", "GET"));
  EXPECT_EQ(server_.Holder(), "b");
  EXPECT_EQ(a->GetLeader(), "b");
  EXPECT_FALSE(a->IsLeader());
  EXPECT_THAT(rec_.events, ElementsAre("leader:dead", "leader:b"));
}

TEST_F(LeaderElectorTest, StopsLeadingWhenItCannotRenewWithinTheDeadline) {
  auto le = New();
  ASSERT_TRUE(le->Step());
  server_.FailAll(true);
  for (int i = 0; i < 4; ++i) {  // 2 s, 4 s, 6 s, 8 s: still within the 10 s deadline
    clock_.Advance(seconds(2));
    EXPECT_FALSE(le->Step());
    EXPECT_TRUE(le->IsLeader()) << "after " << (i + 1) * 2 << "s";
  }
  clock_.Advance(seconds(2));
  EXPECT_FALSE(le->Step());
  EXPECT_FALSE(le->IsLeader());
  EXPECT_THAT(rec_.events, ElementsAre("leader:me", "started", "stopped"));
}

TEST_F(LeaderElectorTest, AnotherHolderSeenWhileLeadingStopsLeadingAtOnce) {
  auto le = New();
  ASSERT_TRUE(le->Step());
  server_.SetHolder("usurper");
  clock_.Advance(seconds(2));
  EXPECT_FALSE(le->Step());
  EXPECT_FALSE(le->IsLeader());
  EXPECT_THAT(rec_.events, ElementsAre("leader:me", "started", "leader:usurper", "stopped"));
}

TEST_F(LeaderElectorTest, ReleaseLetsAFollowerTakeOverAtOnce) {
  auto a = New(Config("a"));
  Recorder rb;
  auto b = LeaderElector::Create(server_, clock_, Config("b"), rb.Callbacks());
  ASSERT_TRUE(b.ok());
  ASSERT_TRUE(a->Step());
  EXPECT_FALSE((*b)->Step());
  ASSERT_TRUE(a->Release().ok());
  EXPECT_FALSE(a->IsLeader());
  auto lease = server_.Lease();
  EXPECT_EQ(lease->at("holderIdentity").as_string(), "");
  EXPECT_EQ(lease->at("leaseDurationSeconds").as_int64(), 1);
  clock_.Advance(seconds(2));
  EXPECT_TRUE((*b)->Step());
  EXPECT_EQ(server_.Lease()->at("leaseTransitions").as_int64(), 1);
  EXPECT_THAT(rec_.events, ElementsAre("leader:a", "started", "stopped"));
}

TEST_F(LeaderElectorTest, ReadErrorsKeepAFollowerFollowing) {
  struct Case {
    std::string name;
    int status;
  };
  for (const Case& c :
       std::vector<Case>{{"server error", 500}, {"forbidden", 403}, {"garbage", 200}}) {
    SCOPED_TRACE(c.name);
    FakeLeaseServer server;
    common::FakeClock clock;
    Recorder rec;
    server.FailNext(c.status);
    auto le = LeaderElector::Create(server, clock, Config(), rec.Callbacks());
    ASSERT_TRUE(le.ok());
    EXPECT_FALSE((*le)->Step());
    EXPECT_TRUE(rec.events.empty());
    EXPECT_TRUE((*le)->Step());  // the next attempt works
  }
}

TEST_F(LeaderElectorTest, RunAcquiresAndReleasesOnStop) {
  LeaderElectionConfig c = Config();
  c.retry_period = std::chrono::milliseconds(5);
  c.renew_deadline = std::chrono::milliseconds(50);
  c.lease_duration = seconds(1);
  auto le = New(c);
  std::thread t([&] { le->Run(); });
  auto deadline = std::chrono::steady_clock::now() + seconds(10);
  while (!le->IsLeader() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_TRUE(le->IsLeader());
  le->Stop();
  t.join();
  EXPECT_FALSE(le->IsLeader());
  EXPECT_EQ(server_.Holder(), "");
}

TEST(ValidateTest, ReportsEveryError) {
  struct Case {
    std::string name;
    std::function<void(LeaderElectionConfig&)> edit;
    std::vector<std::string> want;  // substrings; empty = valid
  };
  std::vector<Case> cases = {
      {"kube-scheduler's defaults are valid", [](LeaderElectionConfig&) {}, {}},
      {"an empty identity", [](LeaderElectionConfig& c) { c.identity.clear(); }, {"identity"}},
      {"lease not longer than the renew deadline",
       [](LeaderElectionConfig& c) { c.lease_duration = seconds(10); },
       {"leaseDuration (10s) must be greater than renewDeadline (10s)"}},
      {"renew deadline too short for the retry period",
       [](LeaderElectionConfig& c) {
         c.renew_deadline = seconds(2);
         c.retry_period = seconds(2);
         c.lease_name.clear();
       },
       {"renewDeadline (2s) must be greater than 1.2 x retryPeriod (2s)", "resourceName"}},
      {"no retry period",
       [](LeaderElectionConfig& c) { c.retry_period = common::Duration(0); },
       {"retryPeriod: must be greater than zero"}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    LeaderElectionConfig cfg = Config();
    c.edit(cfg);
    common::Status st = Validate(cfg);
    EXPECT_EQ(st.ok(), c.want.empty()) << st.ToString();
    for (const auto& w : c.want) EXPECT_THAT(std::string(st.message()), HasSubstr(w));
  }
}

TEST(MicroTimeTest, FormatsWhatTheRfc3339ParserReadsBack) {
  common::TimePoint t(std::chrono::seconds(1'700'000'000) + std::chrono::microseconds(123456));
  EXPECT_EQ(FormatMicroTime(t), "2023-11-14T22:13:20.123456Z");
  EXPECT_EQ(api::ParseRfc3339("2023-11-14T22:13:20.123456Z"), t);
  EXPECT_EQ(api::ParseRfc3339("2023-11-14T23:13:20.123456+01:00"), t);
  EXPECT_EQ(api::ParseRfc3339("2023-11-14T22:13:20Z"),
            common::TimePoint(std::chrono::seconds(1'700'000'000)));
  for (std::string_view bad :
       {"", "yesterday", "2023-11-14", "2023-13-14T22:13:20Z", "2023-11-14T22:13:20",
        "2023-11-14T22:13:20.Z", "2023-11-14T22:13:20Zjunk"}) {
    EXPECT_EQ(api::ParseRfc3339(bad), std::nullopt) << bad;
  }
}

}  // namespace
}  // namespace gpusched::kube::leaderelection
