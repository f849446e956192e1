// SPDX-License-Identifier: Apache-2.0
#include "src/kube/informer/reflector.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <chrono>
#include <functional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "src/kube/informer/fake_rest_client_for_test.h"

namespace gpusched::kube::informer {
namespace {

using ::testing::ElementsAre;
using testing::FakeRestClient;
using ::testing::HasSubstr;
using testing::ScriptedStream;

// Records what the reflector delivers: "replace:<rv>:<names>" and "added:<name>" ...
class RecordingSink final : public ReflectorSink {
 public:
  void Replace(std::vector<boost::json::value> items, std::string_view rv) override {
    std::string s = "replace:" + std::string(rv) + ":";
    for (const auto& item : items) s += Name(item) + ",";
    log.push_back(s);
  }
  void Apply(EventType type, const boost::json::value& object) override {
    static const char* kNames[] = {"added", "modified", "deleted"};
    log.push_back(std::string(kNames[static_cast<int>(type)]) + ":" + Name(object));
  }
  static std::string Name(const boost::json::value& v) {
    const auto* m = v.as_object().if_contains("metadata");
    if (m == nullptr) return "?";
    const auto* n = m->as_object().if_contains("name");
    return n != nullptr && n->is_string() ? std::string(n->as_string()) : "?";
  }
  std::vector<std::string> log;
};

std::string Obj(std::string_view name, std::string_view rv) {
  return R"({"metadata":{"name":")" + std::string(name) + R"(","resourceVersion":")" +
         std::string(rv) + R"("}})";
}
std::string List(std::vector<std::string> items, std::string_view rv, std::string_view cont = "") {
  std::string s = R"({"kind":"PodList","metadata":{"resourceVersion":")" + std::string(rv) + "\"";
  if (!cont.empty()) s += R"(,"continue":")" + std::string(cont) + "\"";
  s += R"(},"items":[)";
  for (size_t i = 0; i < items.size(); ++i) s += (i ? "," : "") + items[i];
  return s + "]}";
}
std::string Event(std::string_view type, const std::string& object) {
  return R"({"type":")" + std::string(type) + R"(","object":)" + object + "}";
}
std::string Gone() {
  return Event(
      "ERROR",
      R"json({"kind":"Status","code":410,"reason":"Expired","message":"too old resource version: 5 (9)"})json");
}

ReflectorOptions Options() {
  ReflectorOptions o;
  o.name = "pods";
  o.path = "/api/v1/pods";
  o.field_selector = "status.phase!=Succeeded";
  o.page_size = 2;
  o.min_watch_duration = common::Duration(0);
  return o;
}

class ReflectorTest : public ::testing::Test {
 protected:
  FakeRestClient client_;
  RecordingSink sink_;
  common::FakeClock clock_;
};

TEST_F(ReflectorTest, ListsEveryPageThenWatchesFromTheListsResourceVersion) {
  client_.PushResponse(200, List({Obj("a", "3"), Obj("b", "4")}, "10", "token-1"));
  client_.PushResponse(200, List({Obj("c", "5")}, "10"));
  Reflector r(client_, sink_, clock_, Options());

  ASSERT_TRUE(r.Step().ok());
  EXPECT_EQ(r.state(), Reflector::State::kWatch);
  EXPECT_EQ(r.last_resource_version(), "10");
  EXPECT_THAT(sink_.log, ElementsAre("replace:10:a,b,c,"));
  ASSERT_EQ(client_.requests().size(), 2u);
  EXPECT_EQ(client_.requests()[0].path, "/api/v1/pods");
  EXPECT_EQ(client_.Query(0, "limit"), "2");
  EXPECT_EQ(client_.Query(0, "continue"), std::nullopt);
  EXPECT_EQ(client_.Query(0, "fieldSelector"), "status.phase!=Succeeded");
  EXPECT_EQ(client_.Query(1, "continue"), "token-1");

  client_.PushStream({{Event("ADDED", Obj("d", "11")), Event("BOOKMARK", Obj("", "15"))}, {}});
  ASSERT_TRUE(r.Step().ok());
  EXPECT_EQ(client_.Query(2, "watch"), "true");
  EXPECT_EQ(client_.Query(2, "allowWatchBookmarks"), "true");
  EXPECT_EQ(client_.Query(2, "resourceVersion"), "10");
  EXPECT_EQ(client_.Query(2, "fieldSelector"), "status.phase!=Succeeded");
  EXPECT_EQ(r.last_resource_version(), "15");

  // The stream ended normally: the next watch resumes from the bookmark, without a list.
  client_.PushStream({{Event("DELETED", Obj("a", "16"))}, {}});
  ASSERT_TRUE(r.Step().ok());
  EXPECT_EQ(client_.Query(3, "watch"), "true");
  EXPECT_EQ(client_.Query(3, "resourceVersion"), "15");
  EXPECT_THAT(sink_.log, ElementsAre("replace:10:a,b,c,", "added:d", "deleted:a"));
}

TEST_F(ReflectorTest, WatchTimeoutsAreRandomisedBetweenFiveAndTenMinutes) {
  client_.PushResponse(200, List({}, "1"));
  Reflector r(client_, sink_, clock_, Options());
  ASSERT_TRUE(r.Step().ok());
  std::set<std::string> seen;
  for (int i = 0; i < 20; ++i) {
    client_.PushStream({{Event("ADDED", Obj("x", "2"))}, {}});
    ASSERT_TRUE(r.Step().ok());
    auto t = client_.Query(client_.requests().size() - 1, "timeoutSeconds");
    ASSERT_TRUE(t.has_value());
    int secs = std::stoi(*t);
    EXPECT_GE(secs, 300);
    EXPECT_LE(secs, 600);
    seen.insert(*t);
    // The client-side limit covers the server-side one.
    EXPECT_GT(client_.requests().back().timeout, std::chrono::seconds(secs));
  }
  EXPECT_GT(seen.size(), 1u);
}

TEST_F(ReflectorTest, ExpiryRelistsWhicheverWayTheServerSaysIt) {
  struct Case {
    std::string name;
    ScriptedStream stream;
  };
  std::vector<Case> cases = {
      {"an ERROR event with code 410 relists", {{Event("ADDED", Obj("d", "11")), Gone()}, {}}},
      {"an HTTP 410 answer to the watch relists",
       {{}, common::OutOfRangeError("GET /api/v1/pods: 410 Gone: too old resource version")}},
  };
  for (auto& c : cases) {
    SCOPED_TRACE(c.name);
    FakeRestClient client;
    RecordingSink sink;
    client.PushResponse(200, List({Obj("a", "3")}, "10"));
    Reflector r(client, sink, clock_, Options());
    ASSERT_TRUE(r.Step().ok());
    client.PushStream(c.stream);
    common::Status st = r.Step();
    EXPECT_EQ(st.code(), common::StatusCode::kOutOfRange) << st.ToString();
    EXPECT_EQ(r.state(), Reflector::State::kList);
    client.PushResponse(200, List({Obj("b", "20")}, "20"));
    ASSERT_TRUE(r.Step().ok());
    EXPECT_EQ(r.last_resource_version(), "20");
    EXPECT_EQ(sink.log.back(), "replace:20:b,");
    EXPECT_EQ(r.state(), Reflector::State::kWatch);
  }
}

TEST_F(ReflectorTest, MalformedEventsAreSkippedAndTheWatchGoesOn) {
  client_.PushResponse(200, List({}, "1"));
  Reflector r(client_, sink_, clock_, Options());
  ASSERT_TRUE(r.Step().ok());
  client_.PushStream(
      {{"this is not json", R"({"type":"ADDED"})", R"({"object":{}})",
        R"({"type":"EXPLODED","object":{}})", "[1,2]", "", Event("ADDED", Obj("ok", "7"))},
       {}});
  ASSERT_TRUE(r.Step().ok());
  EXPECT_EQ(r.malformed_events(), 5);
  EXPECT_THAT(sink_.log, ElementsAre("replace:1:", "added:ok"));
  EXPECT_EQ(r.last_resource_version(), "7");
}

TEST_F(ReflectorTest, ErrorsLeaveTheStateWhereItWas) {
  struct Case {
    std::string name;
    std::function<void(FakeRestClient&)> script;
    Reflector::State want_state;
    std::string want_message;
  };
  std::vector<Case> cases = {
      {"a transport error on list stays in List",
       [](FakeRestClient& c) { c.PushDoError(common::UnavailableError("connection refused")); },
       Reflector::State::kList, "connection refused"},
      {"a 403 on list stays in List",
       [](FakeRestClient& c) {
         c.PushResponse(403, R"({"kind":"Status","message":"pods is forbidden"})");
       },
       Reflector::State::kList, "pods is forbidden"},
      {"a list body that is not JSON stays in List",
       [](FakeRestClient& c) { c.PushResponse(200, "<html>"); }, Reflector::State::kList,
       "invalid JSON"},
      {"a list without a resourceVersion stays in List",
       [](FakeRestClient& c) { c.PushResponse(200, R"({"items":[]})"); }, Reflector::State::kList,
       "no resourceVersion"},
      {"a watch ERROR event other than 410 keeps watching from the same resourceVersion",
       [](FakeRestClient& c) {
         c.PushResponse(200, List({}, "5"));
         c.PushStream(
             {{Event("ERROR", R"({"kind":"Status","code":500,"message":"etcd hiccup"})")}, {}});
       },
       Reflector::State::kWatch, "etcd hiccup"},
      {"a broken watch connection keeps watching",
       [](FakeRestClient& c) {
         c.PushResponse(200, List({}, "5"));
         c.PushStream({{}, common::UnavailableError("connection reset")});
       },
       Reflector::State::kWatch, "connection reset"},
  };
  for (auto& c : cases) {
    SCOPED_TRACE(c.name);
    FakeRestClient client;
    RecordingSink sink;
    c.script(client);
    Reflector r(client, sink, clock_, Options());
    common::Status st = r.Step();
    if (c.want_state == Reflector::State::kWatch) {
      ASSERT_TRUE(st.ok()) << st.ToString();
      st = r.Step();
    }
    EXPECT_FALSE(st.ok());
    EXPECT_THAT(std::string(st.message()), HasSubstr(c.want_message));
    EXPECT_EQ(r.state(), c.want_state);
    if (c.want_state == Reflector::State::kWatch) {
      EXPECT_EQ(r.last_resource_version(), "5");
    }
  }
}

TEST_F(ReflectorTest, TheLastListErrorSaysWhetherTheCollectionIsServedAndReadable) {
  Reflector r(client_, sink_, clock_, Options());
  EXPECT_EQ(r.last_list_error(), common::StatusCode::kOk);
  client_.PushResponse(404, R"({"kind":"Status","message":"the server could not find it"})");
  EXPECT_FALSE(r.Step().ok());
  EXPECT_EQ(r.last_list_error(), common::StatusCode::kNotFound);
  client_.PushResponse(403, R"({"kind":"Status","message":"pods is forbidden"})");
  EXPECT_FALSE(r.Step().ok());
  EXPECT_EQ(r.last_list_error(), common::StatusCode::kPermissionDenied);
  client_.PushResponse(200, List({Obj("a", "3")}, "10"));
  ASSERT_TRUE(r.Step().ok());
  EXPECT_EQ(r.last_list_error(), common::StatusCode::kOk);
}

TEST_F(ReflectorTest, AnExpiredContinueTokenRestartsTheList) {
  client_.PushResponse(200, List({Obj("a", "3"), Obj("b", "4")}, "10", "token-1"));
  client_.PushResponse(
      410,
      R"({"kind":"Status","code":410,"message":"The provided continue parameter is too old"})");
  client_.PushResponse(200, List({Obj("a", "3")}, "12", "token-2"));
  client_.PushResponse(200, List({Obj("c", "12")}, "12"));
  Reflector r(client_, sink_, clock_, Options());
  ASSERT_TRUE(r.Step().ok());
  EXPECT_THAT(sink_.log, ElementsAre("replace:12:a,c,"));
  EXPECT_EQ(client_.Query(2, "continue"), std::nullopt);
  EXPECT_EQ(client_.Query(3, "continue"), "token-2");
}

TEST_F(ReflectorTest, AWatchThatEndsAtOnceWithoutEventsIsAnError) {
  ReflectorOptions o = Options();
  o.min_watch_duration = std::chrono::seconds(1);
  client_.PushResponse(200, List({}, "1"));
  client_.PushStream({{}, {}});
  Reflector r(client_, sink_, clock_, o);
  ASSERT_TRUE(r.Step().ok());
  common::Status st = r.Step();
  EXPECT_EQ(st.code(), common::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(st.message()), HasSubstr("very short watch"));
}

TEST_F(ReflectorTest, RunRetriesWithBackoffAndStopsPromptly) {
  ReflectorOptions o = Options();
  o.initial_backoff = std::chrono::milliseconds(1);
  o.max_backoff = std::chrono::milliseconds(4);
  // The first two lists fail, the third works; then watches fail for ever (no stream scripted).
  client_.PushDoError(common::UnavailableError("refused"));
  client_.PushDoError(common::UnavailableError("refused"));
  client_.PushResponse(200, List({Obj("a", "1")}, "1"));
  Reflector r(client_, sink_, clock_, o);
  std::thread t([&] { r.Run(); });
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (client_.requests().size() < 6 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(r.NextBackoffForTest() <= o.max_backoff, true);
  r.Stop();
  t.join();
  EXPECT_EQ(r.state(), Reflector::State::kStopped);
  ASSERT_GE(client_.requests().size(), 6u);
  EXPECT_THAT(sink_.log, ElementsAre("replace:1:a,"));
  EXPECT_EQ(client_.Query(3, "watch"), "true");
}

TEST_F(ReflectorTest, AStoppedReflectorSendsNothing) {
  client_.PushResponse(200, List({}, "1"));
  Reflector r(client_, sink_, clock_, Options());
  ASSERT_TRUE(r.Step().ok());
  client_.PushStream({{Event("ADDED", Obj("a", "2")), Event("ADDED", Obj("b", "3"))}, {}});
  r.Stop();
  EXPECT_EQ(r.Step().code(), common::StatusCode::kAborted);
  EXPECT_THAT(sink_.log, ElementsAre("replace:1:"));
  EXPECT_EQ(client_.requests().size(), 1u);
}

TEST_F(ReflectorTest, StopEndsAWatchAtItsNextLine) {
  struct StoppingSink final : ReflectorSink {
    Reflector* reflector = nullptr;
    int applied = 0;
    void Replace(std::vector<boost::json::value>, std::string_view) override {}
    void Apply(EventType, const boost::json::value&) override {
      ++applied;
      reflector->Stop();
    }
  } sink;
  client_.PushResponse(200, List({}, "1"));
  client_.PushStream({{Event("ADDED", Obj("a", "2")), Event("ADDED", Obj("b", "3"))}, {}});
  Reflector r(client_, sink, clock_, Options());
  sink.reflector = &r;
  std::thread t([&] { r.Run(); });
  t.join();  // returns by itself: the first event stops it
  EXPECT_EQ(sink.applied, 1);
  EXPECT_EQ(r.state(), Reflector::State::kStopped);
}

TEST(IsResourceExpiredTest, RecognisesGone) {
  EXPECT_TRUE(IsResourceExpired(common::OutOfRangeError("x")));
  EXPECT_TRUE(IsResourceExpired(common::UnavailableError("GET /api/v1/pods: 410 Gone")));
  EXPECT_FALSE(IsResourceExpired(common::UnavailableError("GET /api/v1/pods: 503")));
  EXPECT_FALSE(IsResourceExpired(common::Status::Ok()));
}

}  // namespace
}  // namespace gpusched::kube::informer
