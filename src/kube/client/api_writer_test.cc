// SPDX-License-Identifier: Apache-2.0
#include "src/kube/client/api_writer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <deque>
#include <functional>
#include <optional>

#include "src/api/names.h"
#include "src/kube/client/encoding.h"

namespace gpusched::kube::client {
namespace {

namespace json = boost::json;
using common::StatusCode;
using ::testing::HasSubstr;

// Answers each Do with the next scripted response and records the requests.
class FakeRestClient final : public RestClient {
 public:
  // status 0 = a transport error.
  void Push(int status, std::string body = "{}") {
    responses_.push_back(Response{status, std::move(body)});
  }

  common::StatusOr<Response> Do(const Request& request) override {
    requests.push_back(request);
    if (responses_.empty()) return common::InternalError("no scripted response");
    Response r = responses_.front();
    responses_.pop_front();
    if (r.status == 0) return common::UnavailableError("connection refused");
    return r;
  }
  common::Status Stream(const Request&, const std::function<bool(std::string_view)>&) override {
    return common::UnimplementedError("stream");
  }

  std::vector<Request> requests;

 private:
  std::deque<Response> responses_;
};

api::Pod MakePod(std::string ns = "ml", std::string name = "train-0", std::string uid = "uid-1") {
  api::Pod pod;
  pod.meta.namespace_ = std::move(ns);
  pod.meta.name = std::move(name);
  pod.meta.uid = std::move(uid);
  return pod;
}

std::string PodJson(const std::string& uid, const std::string& node,
                    const std::string& annotations = "{}") {
  return R"({"kind":"Pod","metadata":{"name":"train-0","namespace":"ml","uid":")" + uid +
         R"(","annotations":)" + annotations + R"(},"spec":{"nodeName":")" + node + R"("}})";
}

const std::string kConflict =
    R"({"kind":"Status","status":"Failure","message":"pod train-0 is already assigned to node \"n1\"","reason":"Conflict","code":409})";

TEST(KubeApiClientTest, BindPod) {
  struct Expect {
    std::string method;
    std::string path;
  };
  struct Case {
    const char* name;
    api::Pod pod;
    std::string node;
    std::vector<std::pair<std::string, std::string>> annotations;
    std::vector<std::pair<int, std::string>> responses;
    StatusCode want_code;
    std::string want_error;
    std::vector<Expect> want_requests;
  };
  const std::string binding = "/api/v1/namespaces/ml/pods/train-0/binding";
  const std::string pod_path = "/api/v1/namespaces/ml/pods/train-0";
  const Case cases[] = {
      {"a 201 binds in one request",
       MakePod(),
       "n1",
       {{"a", "1"}},
       {{201, "{}"}},
       StatusCode::kOk,
       "",
       {{"POST", binding}}},
      {"a conflict with the pod already on our node is success (a retried POST)",
       MakePod(),
       "n1",
       {},
       {{409, kConflict}, {200, PodJson("uid-1", "n1")}},
       StatusCode::kOk,
       "",
       {{"POST", binding}, {"GET", pod_path}}},
      {"a conflict on our node with annotations missing patches them",
       MakePod(),
       "n1",
       {{"a", "1"}, {"b", "2"}},
       {{409, kConflict}, {200, PodJson("uid-1", "n1", R"({"a":"1"})")}, {200, "{}"}},
       StatusCode::kOk,
       "",
       {{"POST", binding}, {"GET", pod_path}, {"PATCH", pod_path}}},
      {"a conflict with the pod on another node is Aborted",
       MakePod(),
       "n2",
       {},
       {{409, kConflict}, {200, PodJson("uid-1", "n1")}},
       StatusCode::kAborted,
       "already bound to n1",
       {{"POST", binding}, {"GET", pod_path}}},
      {"a conflict with a replaced pod is Aborted",
       MakePod(),
       "n1",
       {},
       {{409, kConflict}, {200, PodJson("uid-2", "n1")}},
       StatusCode::kAborted,
       "the pod was replaced",
       {{"POST", binding}, {"GET", pod_path}}},
      {"a conflict on an unbound pod returns the server's reason",
       MakePod(),
       "n1",
       {},
       {{409,
         R"({"kind":"Status","message":"pod train-0 is being deleted, cannot be assigned to a host"})"},
        {200, PodJson("uid-1", "")}},
       StatusCode::kAborted,
       "is being deleted",
       {{"POST", binding}, {"GET", pod_path}}},
      {"a conflict on a deleted pod is NotFound",
       MakePod(),
       "n1",
       {},
       {{409, kConflict}, {404, "{}"}},
       StatusCode::kNotFound,
       "no longer exists",
       {{"POST", binding}, {"GET", pod_path}}},
      {"a 404 on the binding is NotFound",
       MakePod(),
       "n1",
       {},
       {{404, "{}"}, {404, "{}"}},
       StatusCode::kNotFound,
       "no longer exists",
       {{"POST", binding}, {"GET", pod_path}}},
      {"a 403 on a pod still unbound is PermissionDenied",
       MakePod(),
       "n1",
       {},
       {{403, R"({"message":"cannot create pods/binding"})"}, {200, PodJson("uid-1", "")}},
       StatusCode::kPermissionDenied,
       "cannot create pods/binding",
       {{"POST", binding}, {"GET", pod_path}}},
      {"a 403 after an attempt that went through is success (restarted API server, RBAC loading)",
       MakePod(),
       "n1",
       {},
       {{403, R"({"message":"clusterrole not found"})"}, {200, PodJson("uid-1", "n1")}},
       StatusCode::kOk,
       "",
       {{"POST", binding}, {"GET", pod_path}}},
      {"a transport error that the read-back cannot settle is passed through",
       MakePod(),
       "n1",
       {},
       {{0, ""}, {0, ""}},
       StatusCode::kUnavailable,
       "connection refused; reading the pod back: connection refused",
       {{"POST", binding}, {"GET", pod_path}}},
      {"a pod name that is not DNS-1123 is refused unsent",
       MakePod("ml", "a/b"),
       "n1",
       {},
       {},
       StatusCode::kInvalidArgument,
       "DNS-1123",
       {}},
      {"a node name that is not DNS-1123 is refused unsent",
       MakePod(),
       "N?1",
       {},
       {},
       StatusCode::kInvalidArgument,
       "node name",
       {}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    FakeRestClient rest;
    for (const auto& [status, body] : c.responses) rest.Push(status, body);
    common::FakeClock clock;
    KubeApiClient api(rest, clock);
    common::Status s = api.BindPod(c.pod, c.node, c.annotations);
    EXPECT_EQ(s.code(), c.want_code) << s.ToString();
    EXPECT_THAT(std::string(s.message()), HasSubstr(c.want_error));
    ASSERT_EQ(rest.requests.size(), c.want_requests.size());
    for (size_t i = 0; i < rest.requests.size(); ++i) {
      EXPECT_EQ(rest.requests[i].method, c.want_requests[i].method) << i;
      EXPECT_EQ(rest.requests[i].path, c.want_requests[i].path) << i;
    }
    if (!rest.requests.empty()) {
      auto body = json::parse(rest.requests[0].body);
      EXPECT_EQ(body.at("kind"), "Binding");
      EXPECT_EQ(body.at("target").at("name").as_string(), c.node);
      EXPECT_EQ(body.at("metadata").at("uid"), "uid-1");
    }
    if (rest.requests.size() == 3) {
      EXPECT_EQ(rest.requests[2].content_type, "application/merge-patch+json");
      EXPECT_EQ(json::parse(rest.requests[2].body),
                json::parse(R"({"metadata":{"annotations":{"b":"2"}}})"));
    }
  }
}

TEST(KubeApiClientTest, BindPodRepeatsTheReadBackThroughWait) {
  const std::string pod_path = "/api/v1/namespaces/ml/pods/train-0";
  FakeRestClient rest;
  rest.Push(0, "");  // POST: connection broke after sending
  rest.Push(403, R"({"message":"RBAC: clusterrole not found"})");  // GET: RBAC still loading
  rest.Push(0, "");                                                // GET: API server gone again
  rest.Push(200, PodJson("uid-1", "n1"));  // GET: the first POST had bound it
  common::FakeClock clock;
  std::vector<common::Duration> waits;
  KubeApiClientOptions opts;
  opts.wait = [&](common::Duration d) { waits.push_back(d); };
  opts.bind_verify_interval = std::chrono::milliseconds(250);
  KubeApiClient api(rest, clock, opts);
  common::Status s = api.BindPod(MakePod(), "n1", {});
  EXPECT_TRUE(s.ok()) << s.ToString();
  ASSERT_EQ(rest.requests.size(), 4u);
  EXPECT_EQ(rest.requests[3].path, pod_path);
  EXPECT_EQ(waits, (std::vector<common::Duration>(2, std::chrono::milliseconds(250))));

  // The reads are bounded: bind_verify_reads in all, then the POST's error.
  FakeRestClient down;
  for (int i = 0; i < 10; ++i) down.Push(0, "");
  opts.bind_verify_reads = 3;
  waits.clear();
  KubeApiClient api2(down, clock, opts);
  s = api2.BindPod(MakePod(), "n1", {});
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
  EXPECT_EQ(down.requests.size(), 4u);  // POST + 3 reads
  EXPECT_EQ(waits.size(), 2u);
}

TEST(KubeApiClientTest, BindingJsonEscapesUserValues) {
  api::Pod pod = MakePod();
  auto b = BuildBinding(pod, "n1", {{"k\"ey", "v\"al}\n"}});
  std::string text = json::serialize(b);
  EXPECT_EQ(json::parse(text).at("metadata").at("annotations").at("k\"ey"), "v\"al}\n");
  EXPECT_FALSE(BuildBinding(pod, "n1", {}).at("metadata").as_object().contains("annotations"));
}

TEST(KubeApiClientTest, SetPodUnschedulable) {
  common::FakeClock clock(*ParseRfc3339("2024-05-01T12:00:00Z"));
  api::Condition old_false{"PodScheduled", "False", "Unschedulable", "0/3 nodes",
                           *ParseRfc3339("2024-05-01T11:00:00Z")};
  api::Condition old_true{"PodScheduled", "True", "", "", *ParseRfc3339("2024-05-01T10:00:00Z")};
  struct Case {
    const char* name;
    std::vector<api::Condition> conditions;
    std::string nominated;
    std::string reason;
    std::string message;
    std::string want_patch;  // "" = no request
  };
  const Case cases[] = {
      {"a new condition takes the current time",
       {},
       "",
       "Unschedulable",
       "0/3 nodes are available",
       R"({"status":{"conditions":[{"type":"PodScheduled","status":"False","reason":"Unschedulable","message":"0/3 nodes are available","lastProbeTime":null,"lastTransitionTime":"2024-05-01T12:00:00Z"}]}})"},
      {"a changed message keeps the transition time while the status stays False",
       {old_false},
       "",
       "Unschedulable",
       "0/4 nodes",
       R"({"status":{"conditions":[{"type":"PodScheduled","status":"False","reason":"Unschedulable","message":"0/4 nodes","lastProbeTime":null,"lastTransitionTime":"2024-05-01T11:00:00Z"}]}})"},
      {"a True condition turning False is a transition",
       {old_true},
       "",
       "SchedulerError",
       "boom",
       R"({"status":{"conditions":[{"type":"PodScheduled","status":"False","reason":"SchedulerError","message":"boom","lastProbeTime":null,"lastTransitionTime":"2024-05-01T12:00:00Z"}]}})"},
      {"the same condition again is not written",
       {old_false},
       "",
       "Unschedulable",
       "0/3 nodes",
       ""},
      {"a nominated node is written",
       {old_false},
       "n7",
       "Unschedulable",
       "0/3 nodes",
       R"({"status":{"conditions":[{"type":"PodScheduled","status":"False","reason":"Unschedulable","message":"0/3 nodes","lastProbeTime":null,"lastTransitionTime":"2024-05-01T11:00:00Z"}],"nominatedNodeName":"n7"}})"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    FakeRestClient rest;
    rest.Push(200);
    KubeApiClient api(rest, clock);
    api::Pod pod = MakePod();
    pod.conditions = c.conditions;
    pod.nominated_node_name = c.nominated;
    common::Status s = api.SetPodUnschedulable(pod, c.reason, c.message);
    ASSERT_TRUE(s.ok()) << s.ToString();
    if (c.want_patch.empty()) {
      EXPECT_TRUE(rest.requests.empty());
      continue;
    }
    ASSERT_EQ(rest.requests.size(), 1u);
    EXPECT_EQ(rest.requests[0].method, "PATCH");
    EXPECT_EQ(rest.requests[0].path, "/api/v1/namespaces/ml/pods/train-0/status");
    EXPECT_EQ(rest.requests[0].content_type, "application/strategic-merge-patch+json");
    EXPECT_EQ(json::parse(rest.requests[0].body), json::parse(c.want_patch));
  }
}

TEST(KubeApiClientTest, SetPodUnschedulableReportsApiErrors) {
  FakeRestClient rest;
  rest.Push(404, R"({"kind":"Status","message":"pods \"train-0\" not found"})");
  common::FakeClock clock;
  KubeApiClient api(rest, clock);
  common::Status s = api.SetPodUnschedulable(MakePod(), "Unschedulable", "m");
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(
      s.message(),
      "PATCH /api/v1/namespaces/ml/pods/train-0/status: 404 Not Found: pods \"train-0\" not found");
}

TEST(KubeApiClientTest, PatchPodCondition) {
  common::FakeClock clock(*ParseRfc3339("2024-05-01T12:00:00Z"));
  const api::Condition target{"DisruptionTarget", "True", "PreemptionByScheduler",
                              "gpu-scheduler: preempting to accommodate a higher priority pod",
                              std::nullopt};
  api::Condition old_target = target;
  old_target.last_transition_time = *ParseRfc3339("2024-05-01T11:00:00Z");
  api::Condition old_false{"DisruptionTarget", "False", "", "",
                           *ParseRfc3339("2024-05-01T10:00:00Z")};
  api::Condition given = target;
  given.last_transition_time = *ParseRfc3339("2024-05-01T09:00:00Z");
  // The expected patch of one condition.
  auto want = [](std::string reason_and_message, std::string time) {
    return R"({"status":{"conditions":[{"type":"DisruptionTarget","status":"True",)" +
           reason_and_message + R"("lastTransitionTime":")" + time + R"("}]}})";
  };
  const std::string preempting =
      R"("reason":"PreemptionByScheduler",)"
      R"("message":"gpu-scheduler: preempting to accommodate a higher priority pod",)";
  struct Case {
    const char* name;
    std::vector<api::Condition> conditions;  // the pod's
    api::Condition condition;
    std::string want_patch;  // "" = no request
  };
  api::Condition other_message = target;
  other_message.message = "other";
  const Case cases[] = {
      {"a new condition takes the current time",
       {{"Ready", "True", "", "", std::nullopt}},
       target,
       want(preempting, "2024-05-01T12:00:00Z")},
      {"a given transition time is kept", {}, given, want(preempting, "2024-05-01T09:00:00Z")},
      {"a status change is a transition",
       {old_false},
       target,
       want(preempting, "2024-05-01T12:00:00Z")},
      {"the same status keeps the old transition time",
       {old_target},
       other_message,
       want(R"("reason":"PreemptionByScheduler","message":"other",)", "2024-05-01T11:00:00Z")},
      {"empty reason and message are left out",
       {},
       {"DisruptionTarget", "True", "", "", std::nullopt},
       want("", "2024-05-01T12:00:00Z")},
      {"the same condition again is not written",
       {{"Ready", "True", "", "", std::nullopt}, old_target},
       target,
       ""},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    FakeRestClient rest;
    rest.Push(200);
    KubeApiClient api(rest, clock);
    api::Pod pod = MakePod();
    pod.conditions = c.conditions;
    common::Status s = api.PatchPodCondition(pod, c.condition);
    ASSERT_TRUE(s.ok()) << s.ToString();
    if (c.want_patch.empty()) {
      EXPECT_TRUE(rest.requests.empty());
      continue;
    }
    ASSERT_EQ(rest.requests.size(), 1u);
    EXPECT_EQ(rest.requests[0].method, "PATCH");
    EXPECT_EQ(rest.requests[0].path, "/api/v1/namespaces/ml/pods/train-0/status");
    EXPECT_EQ(rest.requests[0].content_type, "application/strategic-merge-patch+json");
    EXPECT_EQ(json::parse(rest.requests[0].body), json::parse(c.want_patch));
  }
}

TEST(KubeApiClientTest, PreemptionWritesReportErrors) {
  const std::string not_found = R"({"kind":"Status","message":"pods \"train-0\" not found"})";
  const api::Condition cond{"DisruptionTarget", "True", "PreemptionByScheduler", "m", std::nullopt};
  struct Case {
    const char* name;
    std::function<common::Status(KubeApiClient&, const api::Pod&)> call;
    api::Pod pod;
    int status;
    StatusCode want_code;
    std::string want_error;
    size_t want_requests;
  };
  const auto patch = [&](KubeApiClient& api, const api::Pod& p) {
    return api.PatchPodCondition(p, cond);
  };
  const auto del = [](KubeApiClient& api, const api::Pod& p) { return api.DeletePod(p); };
  const auto evict = [](KubeApiClient& api, const api::Pod& p) { return api.EvictPod(p); };
  const auto nominate = [](KubeApiClient& api, const api::Pod& p) {
    return api.SetNominatedNodeName(p, "n1");
  };
  const Case cases[] = {
      {"a condition on a deleted pod is NotFound", patch, MakePod(), 404, StatusCode::kNotFound,
       "PATCH /api/v1/namespaces/ml/pods/train-0/status: 404 Not Found", 1},
      {"deleting a deleted pod is NotFound", del, MakePod(), 404, StatusCode::kNotFound,
       "DELETE /api/v1/namespaces/ml/pods/train-0: 404 Not Found", 1},
      {"deleting a re-created pod (409) is NotFound", del, MakePod(), 409, StatusCode::kNotFound,
       "deleting pod ml/train-0 (uid \"uid-1\"): the pod was replaced", 1},
      {"a forbidden delete is PermissionDenied", del, MakePod(), 403, StatusCode::kPermissionDenied,
       "403", 1},
      {"an eviction a disruption budget forbids is ResourceExhausted", evict, MakePod(), 429,
       StatusCode::kResourceExhausted, "POST /api/v1/namespaces/ml/pods/train-0/eviction: 429", 1},
      {"evicting a re-created pod (409) is NotFound", evict, MakePod(), 409, StatusCode::kNotFound,
       "evicting pod ml/train-0 (uid \"uid-1\"): the pod was replaced", 1},
      {"nominating on a deleted pod is NotFound", nominate, MakePod(), 404, StatusCode::kNotFound,
       "404 Not Found", 1},
      {"a pod name that is not DNS-1123 is refused", del, MakePod("ml", "Bad_Name"), 200,
       StatusCode::kInvalidArgument, "DNS-1123", 0},
      {"a condition without a type is refused",
       [](KubeApiClient& api, const api::Pod& p) {
         return api.PatchPodCondition(p, api::Condition{"", "True", "", "", std::nullopt});
       },
       MakePod(), 200, StatusCode::kInvalidArgument, "needs a type and a status", 0},
      {"a nominated node that is not DNS-1123 is refused",
       [](KubeApiClient& api, const api::Pod& p) { return api.SetNominatedNodeName(p, "N 1"); },
       MakePod(), 200, StatusCode::kInvalidArgument, "is not a DNS-1123 name", 0},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    FakeRestClient rest;
    rest.Push(c.status, not_found);
    common::FakeClock clock;
    KubeApiClient api(rest, clock);
    common::Status s = c.call(api, c.pod);
    EXPECT_EQ(s.code(), c.want_code) << s.ToString();
    EXPECT_THAT(std::string(s.message()), HasSubstr(c.want_error));
    EXPECT_EQ(rest.requests.size(), c.want_requests);
  }
}

TEST(KubeApiClientTest, DeletePod) {
  struct Case {
    const char* name;
    api::Pod pod;
    std::string want_body;
  };
  const Case cases[] = {
      {"the uid is a precondition", MakePod(), R"({"preconditions":{"uid":"uid-1"}})"},
      {"without a uid there is none", MakePod("ml", "train-0", ""), "{}"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    FakeRestClient rest;
    rest.Push(200, R"({"kind":"Pod","metadata":{"name":"train-0"}})");
    common::FakeClock clock;
    KubeApiClient api(rest, clock);
    common::Status s = api.DeletePod(c.pod);
    ASSERT_TRUE(s.ok()) << s.ToString();
    ASSERT_EQ(rest.requests.size(), 1u);
    EXPECT_EQ(rest.requests[0].method, "DELETE");
    EXPECT_EQ(rest.requests[0].path, "/api/v1/namespaces/ml/pods/train-0");
    EXPECT_EQ(rest.requests[0].content_type, "application/json");
    EXPECT_EQ(json::parse(rest.requests[0].body), json::parse(c.want_body));
  }
}

TEST(KubeApiClientTest, EvictPodPostsAPolicyV1Eviction) {
  FakeRestClient rest;
  rest.Push(201, R"({"kind":"Status","status":"Success"})");
  common::FakeClock clock;
  KubeApiClient api(rest, clock);
  common::Status s = api.EvictPod(MakePod());
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_EQ(rest.requests.size(), 1u);
  EXPECT_EQ(rest.requests[0].method, "POST");
  EXPECT_EQ(rest.requests[0].path, "/api/v1/namespaces/ml/pods/train-0/eviction");
  EXPECT_FALSE(rest.requests[0].retry_too_many_requests) << "a budget's 429 is the answer";
  EXPECT_EQ(json::parse(rest.requests[0].body),
            json::parse(R"({"apiVersion":"policy/v1","kind":"Eviction",)"
                        R"("metadata":{"name":"train-0","namespace":"ml"},)"
                        R"("deleteOptions":{"preconditions":{"uid":"uid-1"}}})"));
}

TEST(KubeApiClientTest, SetNominatedNodeName) {
  struct Case {
    const char* name;
    std::string current;
    std::string node;
    std::string want_patch;  // "" = no request
  };
  const Case cases[] = {
      {"nominates a node", "", "n1", R"({"status":{"nominatedNodeName":"n1"}})"},
      {"moves the nomination", "n1", "n2", R"({"status":{"nominatedNodeName":"n2"}})"},
      {"an empty node clears it with null", "n1", "", R"({"status":{"nominatedNodeName":null}})"},
      {"the same node is not written", "n1", "n1", ""},
      {"clearing an empty nomination is not written", "", "", ""},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    FakeRestClient rest;
    rest.Push(200);
    common::FakeClock clock;
    KubeApiClient api(rest, clock);
    api::Pod pod = MakePod();
    pod.nominated_node_name = c.current;
    common::Status s = api.SetNominatedNodeName(pod, c.node);
    ASSERT_TRUE(s.ok()) << s.ToString();
    if (c.want_patch.empty()) {
      EXPECT_TRUE(rest.requests.empty());
      continue;
    }
    ASSERT_EQ(rest.requests.size(), 1u);
    EXPECT_EQ(rest.requests[0].method, "PATCH");
    EXPECT_EQ(rest.requests[0].path, "/api/v1/namespaces/ml/pods/train-0/status");
    EXPECT_EQ(rest.requests[0].content_type, "application/strategic-merge-patch+json");
    EXPECT_EQ(json::parse(rest.requests[0].body), json::parse(c.want_patch));
  }
}

TEST(KubeApiClientTest, UpdatePodGroupStatusOfANativePodGroupPatchesOneCondition) {
  FakeRestClient rest;
  rest.Push(200);
  rest.Push(200);
  common::FakeClock clock;
  KubeApiClient api(rest, clock);
  api::PodGroup g;
  g.api = api::GangApi::kNative;
  g.api_version = "scheduling.k8s.io/v1alpha3";
  g.namespace_ = "ml";
  g.name = "train-0";
  api::PodGroupStatus waiting;
  waiting.phase = "Unschedulable";
  waiting.unschedulable = true;
  waiting.reason = "Unschedulable";
  waiting.message = "2/4 tasks in gang unschedulable";
  ASSERT_TRUE(api.UpdatePodGroupStatus(g, waiting).ok());
  api::PodGroupStatus placed;
  placed.phase = "Scheduled";
  ASSERT_TRUE(api.UpdatePodGroupStatus(g, placed).ok());
  ASSERT_EQ(rest.requests.size(), 2u);
  EXPECT_EQ(rest.requests[0].method, "PATCH");
  EXPECT_EQ(rest.requests[0].path,
            "/apis/scheduling.k8s.io/v1alpha3/namespaces/ml/podgroups/train-0/status");
  EXPECT_EQ(rest.requests[0].content_type, "application/strategic-merge-patch+json");
  const std::string time = FormatRfc3339(clock.Now());
  EXPECT_EQ(json::parse(rest.requests[0].body),
            json::parse(R"({"status":{"conditions":[{"type":"PodGroupInitiallyScheduled",
              "status":"False","reason":"Unschedulable",
              "message":"2/4 tasks in gang unschedulable","lastTransitionTime":")" +
                        time + R"("}]}})"));
  EXPECT_EQ(json::parse(rest.requests[1].body),
            json::parse(R"({"status":{"conditions":[{"type":"PodGroupInitiallyScheduled",
              "status":"True","reason":"Scheduled","message":"","lastTransitionTime":")" +
                        time + R"("}]}})"));
}

TEST(ServedGroupVersionTest, TheFirstPreferredVersionTheServerLists) {
  const std::string group =
      R"({"kind":"APIGroup","name":"scheduling.k8s.io","versions":[
        {"groupVersion":"scheduling.k8s.io/v1","version":"v1"},
        {"groupVersion":"scheduling.k8s.io/v1alpha3","version":"v1alpha3"}]})";
  FakeRestClient rest;
  rest.Push(200, group);
  auto v = ServedGroupVersion(rest, "scheduling.k8s.io", api::kNativePodGroupApiVersions);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(*v, "scheduling.k8s.io/v1alpha3");
  EXPECT_EQ(rest.requests[0].path, "/apis/scheduling.k8s.io");

  rest.Push(200, R"({"kind":"APIGroup","versions":[{"groupVersion":"scheduling.k8s.io/v1"}]})");
  auto none = ServedGroupVersion(rest, "scheduling.k8s.io", api::kNativePodGroupApiVersions);
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
  rest.Push(404);
  EXPECT_EQ(ServedGroupVersion(rest, "nope.io", api::kNativePodGroupApiVersions).status().code(),
            StatusCode::kNotFound);
}

TEST(KubeApiClientTest, VolumeBindingWrites) {
  FakeRestClient rest;
  rest.Push(200, R"({"kind":"PersistentVolume","metadata":{"name":"pv-1","resourceVersion":"8"}})");
  rest.Push(200, R"({"kind":"PersistentVolumeClaim","metadata":{"resourceVersion":"9"}})");
  rest.Push(409, R"({"kind":"Status","status":"Failure","reason":"Conflict","code":409})");
  common::FakeClock clock;
  KubeApiClient api(rest, clock);
  api::PersistentVolume pv;
  pv.meta.name = "pv-1";
  pv.meta.resource_version = "7";
  pv.claim_ref = api::ClaimRef{"ml", "data", "uid-c"};
  common::StatusOr<std::string> rv = api.BindPersistentVolume(pv, true);
  ASSERT_TRUE(rv.ok()) << rv.status().ToString();
  EXPECT_EQ(*rv, "8");
  ASSERT_EQ(rest.requests.size(), 1u);
  EXPECT_EQ(rest.requests[0].method, "PATCH");
  EXPECT_EQ(rest.requests[0].path, "/api/v1/persistentvolumes/pv-1");
  EXPECT_EQ(rest.requests[0].content_type, "application/merge-patch+json");
  EXPECT_EQ(json::parse(rest.requests[0].body),
            json::parse(R"({"metadata":{"resourceVersion":"7","annotations":{
                "pv.kubernetes.io/bound-by-controller":"yes"}},
                "spec":{"claimRef":{"kind":"PersistentVolumeClaim","apiVersion":"v1",
                "namespace":"ml","name":"data","uid":"uid-c"}}})"));

  api::PersistentVolumeClaim pvc;
  pvc.meta.name = "data";
  pvc.meta.namespace_ = "ml";
  pvc.meta.resource_version = "5";
  rv = api.SetPvcSelectedNode(pvc, "node-1");
  ASSERT_TRUE(rv.ok()) << rv.status().ToString();
  EXPECT_EQ(*rv, "9");
  ASSERT_EQ(rest.requests.size(), 2u);
  EXPECT_EQ(rest.requests[1].path, "/api/v1/namespaces/ml/persistentvolumeclaims/data");
  EXPECT_EQ(json::parse(rest.requests[1].body),
            json::parse(R"({"metadata":{"resourceVersion":"5","annotations":{
                "volume.kubernetes.io/selected-node":"node-1"}}})"));
  // A stale resourceVersion is a conflict; a bad name is refused without a request.
  EXPECT_EQ(api.SetPvcSelectedNode(pvc, "node-1").status().code(), StatusCode::kAborted);
  EXPECT_EQ(api.SetPvcSelectedNode(pvc, "Bad_Node").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(rest.requests.size(), 3u);
}

// The claim DynamicResources' Reserve produced: two devices on n1, reserved for pod p.
api::ResourceClaim AllocatedClaim() {
  api::ResourceClaim c;
  c.meta.namespace_ = "ml";
  c.meta.name = "gpu";
  c.meta.uid = "uid-c";
  c.meta.resource_version = "5";
  api::AllocationResult a;
  a.devices = {{"gpu", "gpu.nvidia.com", "n1", "gpu-0", false},
               {"gpu", "gpu.nvidia.com", "n1", "gpu-1", true}};
  api::NodeSelectorTerm term;
  term.match_fields_names_in = {"n1"};
  a.node_selector = api::NodeSelector{{term}};
  c.allocation = std::move(a);
  c.reserved_for = {{"pods", "p", "uid-p"}};
  return c;
}

std::string StoredClaim(std::string_view rv, std::string_view finalizers,
                        std::string_view status = "{}") {
  return R"({"kind":"ResourceClaim","metadata":{"name":"gpu","namespace":"ml","uid":"uid-c",)"
         R"("resourceVersion":")" +
         std::string(rv) + R"(","finalizers":)" + std::string(finalizers) +
         R"(},"spec":{"devices":{"requests":[{"name":"gpu","exactly":{)"
         R"("deviceClassName":"gpu.nvidia.com","count":2}}]}},"status":)" +
         std::string(status) + "}";
}

TEST(KubeApiClientTest, EncodeAllocationWritesAShareAsUpstream) {
  api::AllocationResult a;
  api::DeviceResult r{"gpu", "gpu.nvidia.com", "n1", "gpu-0", false};
  r.share_id = "9a3c1e0b-5d2f-4c1a-8b7e-0f1e2d3c4b5a";
  r.consumed_capacity = {{"gpu.nvidia.com/memory", *api::Quantity::Parse("32Gi")},
                         {"other.io/slots", *api::Quantity::Parse("2")}};
  a.devices = {r};
  EXPECT_EQ(boost::json::serialize(EncodeAllocation(a)),
            R"({"devices":{"results":[{"request":"gpu","driver":"gpu.nvidia.com","pool":"n1",)"
            R"("device":"gpu-0","shareID":"9a3c1e0b-5d2f-4c1a-8b7e-0f1e2d3c4b5a",)"
            R"("consumedCapacity":{"memory":"34359738368","other.io/slots":"2"}}]}})");
}

TEST(KubeApiClientTest, AClaimReservedForAPodGroupNamesItsApiGroup) {
  api::ResourceClaim c;
  c.reserved_for = {{"podgroups", "train", "uid-g", "scheduling.k8s.io"}, {"pods", "p", "uid-p"}};
  EXPECT_EQ(boost::json::serialize(BuildClaimStatusPatch(c, "7", false)),
            R"({"metadata":{"resourceVersion":"7"},"status":{"reservedFor":[)"
            R"({"resource":"podgroups","name":"train","uid":"uid-g",)"
            R"("apiGroup":"scheduling.k8s.io"},)"
            R"({"resource":"pods","name":"p","uid":"uid-p"}]}})");
}

TEST(KubeApiClientTest, UpdateResourceClaimStatus) {
  const std::string claim_path = "/apis/resource.k8s.io/v1/namespaces/ml/resourceclaims/gpu";
  const std::string allocation =
      R"({"devices":{"results":[)"
      R"({"request":"gpu","driver":"gpu.nvidia.com","pool":"n1","device":"gpu-0"},)"
      R"({"request":"gpu","driver":"gpu.nvidia.com","pool":"n1","device":"gpu-1",)"
      R"("adminAccess":true}]},)"
      R"("nodeSelector":{"nodeSelectorTerms":[{"matchFields":[{"key":"metadata.name",)"
      R"("operator":"In","values":["n1"]}]}]}})";
  const std::string stored_status =
      R"({"allocation":)" + allocation +
      R"(,"reservedFor":[{"resource":"pods","name":"p","uid":"uid-p"}]})";
  const std::string reserved = R"([{"resource":"pods","name":"p","uid":"uid-p"}])";
  struct Request {
    std::string method;
    std::string path;
    std::string body;  // JSON, "" for none
  };
  struct Case {
    const char* name;
    std::vector<std::pair<int, std::string>> responses;
    StatusCode want_code;
    std::string want_error;
    std::vector<Request> want_requests;
  };
  const std::string kept_finalizer = R"(["example.com/keep"])";
  const std::vector<Case> cases = {
      {"without the finalizer: it is added (keeping the others), then the status is written",
       {{200, StoredClaim("5", kept_finalizer)},
        {200,
         StoredClaim("6", R"(["example.com/keep","resource.kubernetes.io/delete-protection"])")},
        {200, StoredClaim("7", R"(["resource.kubernetes.io/delete-protection"])", stored_status)}},
       StatusCode::kOk,
       "",
       {{"GET", claim_path, ""},
        {"PATCH", claim_path,
         R"({"metadata":{"resourceVersion":"5","finalizers":["example.com/keep",)"
         R"("resource.kubernetes.io/delete-protection"]}})"},
        {"PATCH", claim_path + "/status",
         R"({"metadata":{"resourceVersion":"6"},"status":{"allocation":)" + allocation +
             R"(,"reservedFor":)" + reserved + "}}"}}},
      {"with the finalizer: only the status, guarded by the claim's resourceVersion",
       {{200, StoredClaim("5", R"(["resource.kubernetes.io/delete-protection"])")},
        {200, StoredClaim("8", R"(["resource.kubernetes.io/delete-protection"])", stored_status)}},
       StatusCode::kOk,
       "",
       {{"GET", claim_path, ""},
        {"PATCH", claim_path + "/status",
         R"({"metadata":{"resourceVersion":"5"},"status":{"allocation":)" + allocation +
             R"(,"reservedFor":)" + reserved + "}}"}}},
      {"an allocated (shared) claim: reservedFor only, the allocation is immutable",
       {{200, StoredClaim("5", R"(["resource.kubernetes.io/delete-protection"])",
                          R"({"allocation":)" + allocation + "}")},
        {200, StoredClaim("8", R"(["resource.kubernetes.io/delete-protection"])", stored_status)}},
       StatusCode::kOk,
       "",
       {{"GET", claim_path, ""},
        {"PATCH", claim_path + "/status",
         R"({"metadata":{"resourceVersion":"5"},"status":{"reservedFor":)" + reserved + "}}"}}},
      {"a claim changed since it was read is a conflict, without a write",
       {{200, StoredClaim("9", "[]")}},
       StatusCode::kAborted,
       "resourceclaim ml/gpu: changed (resourceVersion 9, scheduled against 5)",
       {{"GET", claim_path, ""}}},
      {"a conflict on the status write names the claim",
       {{200, StoredClaim("5", R"(["resource.kubernetes.io/delete-protection"])")},
        {409, R"({"kind":"Status","status":"Failure","reason":"Conflict","code":409})"}},
       StatusCode::kAborted,
       "resourceclaim ml/gpu: writing status",
       {{"GET", claim_path, ""}, {"PATCH", claim_path + "/status", ""}}},
      {"a deleted claim is NotFound, naming it",
       {{404, R"({"kind":"Status","status":"Failure","reason":"NotFound","code":404})"}},
       StatusCode::kNotFound,
       "resourceclaim ml/gpu",
       {{"GET", claim_path, ""}}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    FakeRestClient rest;
    for (const auto& [code, body] : c.responses) rest.Push(code, body);
    common::FakeClock clock;
    KubeApiClient api(rest, clock);
    common::StatusOr<api::ResourceClaimPtr> got = api.UpdateResourceClaimStatus(AllocatedClaim());
    EXPECT_EQ(got.status().code(), c.want_code) << got.status().ToString();
    if (!c.want_error.empty()) {
      EXPECT_THAT(std::string(got.status().message()), HasSubstr(c.want_error));
    }
    ASSERT_EQ(rest.requests.size(), c.want_requests.size());
    for (size_t i = 0; i < c.want_requests.size(); ++i) {
      SCOPED_TRACE(i);
      EXPECT_EQ(rest.requests[i].method, c.want_requests[i].method);
      EXPECT_EQ(rest.requests[i].path, c.want_requests[i].path);
      if (c.want_requests[i].method == "PATCH") {
        EXPECT_EQ(rest.requests[i].content_type, "application/merge-patch+json");
      }
      if (!c.want_requests[i].body.empty()) {
        EXPECT_EQ(json::parse(rest.requests[i].body), json::parse(c.want_requests[i].body));
      }
    }
    if (got.ok()) {
      // The decoded answer: the stored claim, allocated and reserved.
      const api::ResourceClaim& stored = **got;
      EXPECT_EQ(stored.meta.name, "gpu");
      ASSERT_TRUE(stored.allocation.has_value());
      EXPECT_EQ(stored.allocation->devices, AllocatedClaim().allocation->devices);
      ASSERT_TRUE(stored.allocation->node_selector.has_value());
      EXPECT_EQ(stored.allocation->node_selector->terms[0].match_fields_names_in,
                std::vector<std::string>{"n1"});
      EXPECT_EQ(stored.reserved_for, AllocatedClaim().reserved_for);
    }
  }
}

TEST(KubeApiClientTest, UpdateResourceClaimStatusRefusesBadNames) {
  FakeRestClient rest;
  common::FakeClock clock;
  KubeApiClient api(rest, clock);
  api::ResourceClaim claim = AllocatedClaim();
  claim.meta.name = "Bad_Name";
  common::StatusOr<api::ResourceClaimPtr> got = api.UpdateResourceClaimStatus(claim);
  EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(got.status().message()), HasSubstr("resourceclaim ml/Bad_Name"));
  EXPECT_TRUE(rest.requests.empty());
}

TEST(KubeApiClientTest, CreateResourceClaimPostsTheExtendedResourceClaim) {
  FakeRestClient rest;
  rest.Push(201, StoredClaim("3", "[]"));
  common::FakeClock clock;
  KubeApiClient api(rest, clock);
  api::ResourceClaim claim;
  claim.meta.namespace_ = "ml";
  claim.meta.name = "train-extended-resources-bcdfg";
  claim.meta.owner_references.push_back({"v1", "Pod", "train", "uid-p", true});
  claim.meta.annotations.emplace_back("resource.kubernetes.io/extended-resource-claim", "true");
  api::DeviceRequest r;
  r.name = "container-0-request-0";
  r.exactly = api::DeviceChoice{};
  r.exactly->device_class = "gpu.nvidia.com";
  r.exactly->count = 2;
  claim.spec.requests.push_back(r);
  common::StatusOr<api::ResourceClaimPtr> got = api.CreateResourceClaim(claim);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ((*got)->meta.resource_version, "3");
  ASSERT_EQ(rest.requests.size(), 1u);
  EXPECT_EQ(rest.requests[0].method, "POST");
  EXPECT_EQ(rest.requests[0].path, "/apis/resource.k8s.io/v1/namespaces/ml/resourceclaims");
  EXPECT_EQ(json::parse(rest.requests[0].body),
            json::parse(R"({"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim",)"
                        R"("metadata":{"name":"train-extended-resources-bcdfg","namespace":"ml",)"
                        R"("ownerReferences":[{"apiVersion":"v1","kind":"Pod","name":"train",)"
                        R"("uid":"uid-p","controller":true}],"annotations":{)"
                        R"("resource.kubernetes.io/extended-resource-claim":"true"}},)"
                        R"("spec":{"devices":{"requests":[{"name":"container-0-request-0",)"
                        R"("exactly":{"deviceClassName":"gpu.nvidia.com",)"
                        R"("allocationMode":"ExactCount","count":2}}]}}})"));

  rest.Push(409, R"({"kind":"Status","status":"Failure","reason":"AlreadyExists","code":409})");
  got = api.CreateResourceClaim(claim);
  EXPECT_FALSE(got.ok());
  EXPECT_THAT(std::string(got.status().message()),
              HasSubstr("creating resourceclaim ml/train-extended-resources-bcdfg"));
}

TEST(KubeApiClientTest, DeleteResourceClaimRemovesTheFinalizerFirst) {
  const std::string path = "/apis/resource.k8s.io/v1/namespaces/ml/resourceclaims/gpu";
  FakeRestClient rest;
  rest.Push(200,
            StoredClaim("5", R"(["example.com/keep","resource.kubernetes.io/delete-protection"])"));
  rest.Push(200, StoredClaim("6", R"(["example.com/keep"])"));
  rest.Push(200, "{}");
  common::FakeClock clock;
  KubeApiClient api(rest, clock);
  ASSERT_TRUE(api.DeleteResourceClaim(AllocatedClaim()).ok());
  ASSERT_EQ(rest.requests.size(), 3u);
  EXPECT_EQ(rest.requests[0].method, "GET");
  EXPECT_EQ(rest.requests[1].method, "PATCH");
  EXPECT_EQ(rest.requests[1].path, path);
  EXPECT_EQ(
      json::parse(rest.requests[1].body),
      json::parse(R"({"metadata":{"resourceVersion":"5","finalizers":["example.com/keep"]}})"));
  EXPECT_EQ(rest.requests[2].method, "DELETE");
  EXPECT_EQ(json::parse(rest.requests[2].body),
            json::parse(R"({"preconditions":{"uid":"uid-c"}})"));

  // Gone already: OK, nothing else sent.
  FakeRestClient gone;
  gone.Push(404, R"({"kind":"Status","status":"Failure","reason":"NotFound","code":404})");
  KubeApiClient api2(gone, clock);
  EXPECT_TRUE(api2.DeleteResourceClaim(AllocatedClaim()).ok());
  EXPECT_EQ(gone.requests.size(), 1u);
}

TEST(KubeApiClientTest, SetPodExtendedResourceClaimStatus) {
  FakeRestClient rest;
  rest.Push(200, "{}");
  common::FakeClock clock;
  KubeApiClient api(rest, clock);
  api::Pod pod = MakePod("ml", "train");
  api::PodExtendedResourceClaimStatus st{{{"main", "nvidia.com/gpu", "container-0-request-0"}},
                                         "train-extended-resources-bcdfg"};
  ASSERT_TRUE(api.SetPodExtendedResourceClaimStatus(pod, st).ok());
  ASSERT_EQ(rest.requests.size(), 1u);
  EXPECT_EQ(rest.requests[0].method, "PATCH");
  EXPECT_EQ(rest.requests[0].path, "/api/v1/namespaces/ml/pods/train/status");
  EXPECT_EQ(json::parse(rest.requests[0].body),
            json::parse(R"({"status":{"extendedResourceClaimStatus":{"requestMappings":[)"
                        R"({"containerName":"main","resourceName":"nvidia.com/gpu",)"
                        R"("requestName":"container-0-request-0"}],)"
                        R"("resourceClaimName":"train-extended-resources-bcdfg"}}})"));
}

TEST(KubeApiClientTest, CreateEvent) {
  common::FakeClock clock(common::TimePoint(common::Duration(1714564800'123456789)));
  struct Case {
    const char* name;
    EventRecord event;
    KubeApiClientOptions options;
    std::string want_controller;
    std::string want_instance;
    size_t want_note_size;
  };
  EventRecord ev{"ml",
                 "train-0",
                 "uid-1",
                 "Warning",
                 "FailedScheduling",
                 "Scheduling",
                 "0/3 nodes are available",
                 "gpu-scheduler"};
  EventRecord long_note = ev;
  long_note.note = std::string(3000, 'x');
  EventRecord no_controller = ev;
  no_controller.reporting_controller.clear();
  KubeApiClientOptions with_instance;
  with_instance.reporting_instance = "gpu-scheduler-host1";
  const Case cases[] = {
      {"the instance defaults to the controller", ev, {}, "gpu-scheduler", "gpu-scheduler", 23},
      {"an explicit instance", ev, with_instance, "gpu-scheduler", "gpu-scheduler-host1", 23},
      {"a long note is cut to 1024 bytes", long_note, {}, "gpu-scheduler", "gpu-scheduler", 1024},
      {"a missing controller takes the default", no_controller, {}, "gpusched", "gpusched", 23},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    FakeRestClient rest;
    rest.Push(201);
    KubeApiClient api(rest, clock, c.options);
    common::Status s = api.CreateEvent(c.event);
    ASSERT_TRUE(s.ok()) << s.ToString();
    ASSERT_EQ(rest.requests.size(), 1u);
    EXPECT_EQ(rest.requests[0].method, "POST");
    EXPECT_EQ(rest.requests[0].path, "/apis/events.k8s.io/v1/namespaces/ml/events");
    auto body = json::parse(rest.requests[0].body).as_object();
    EXPECT_EQ(body.at("apiVersion"), "events.k8s.io/v1");
    EXPECT_EQ(body.at("kind"), "Event");
    EXPECT_EQ(body.at("metadata"),
              json::parse(R"({"name":"train-0.17cb5b99ffbf4d15","namespace":"ml"})"));
    EXPECT_EQ(body.at("eventTime"), "2024-05-01T12:00:00.123456Z");
    EXPECT_EQ(body.at("reportingController").as_string(), c.want_controller);
    EXPECT_EQ(body.at("reportingInstance").as_string(), c.want_instance);
    EXPECT_EQ(body.at("type"), "Warning");
    EXPECT_EQ(body.at("reason"), "FailedScheduling");
    EXPECT_EQ(body.at("action"), "Scheduling");
    EXPECT_EQ(body.at("note").as_string().size(), c.want_note_size);
    EXPECT_EQ(
        body.at("regarding"),
        json::parse(
            R"({"apiVersion":"v1","kind":"Pod","namespace":"ml","name":"train-0","uid":"uid-1"})"));
  }
}

TEST(KubeApiClientTest, AResentEventKeepsItsNameAndItsConflictMeansItWasWritten) {
  common::FakeClock clock(common::TimePoint(common::Duration(1714564800'123456789)));
  EventRecord ev{"ml", "train-0", "u", "Normal", "Scheduled", "Binding", "ok", "s"};
  ev.event_time = common::TimePoint(common::Duration(0x10));
  FakeRestClient rest;
  rest.Push(201);
  rest.Push(409, R"({"kind":"Status","reason":"AlreadyExists"})");
  rest.Push(403, R"({"kind":"Status","reason":"Forbidden"})");
  KubeApiClient api(rest, clock, {});
  ASSERT_TRUE(api.CreateEvent(ev).ok());
  clock.Advance(std::chrono::seconds(5));
  common::Status again = api.CreateEvent(ev);  // the first answer was lost: sent once more
  EXPECT_TRUE(again.ok()) << again.ToString();
  EXPECT_EQ(api.CreateEvent(ev).code(), common::StatusCode::kPermissionDenied);
  ASSERT_EQ(rest.requests.size(), 3u);
  for (const Request& r : rest.requests) {
    auto body = json::parse(r.body).as_object();
    EXPECT_EQ(body.at("metadata").at("name"), "train-0.10");  // from event_time, not the clock
  }
}

TEST(KubeApiClientTest, EventNamesOfLongPodsStayValid) {
  EventRecord ev{"ml", std::string(250, 'a') + "-b", "u", "Normal", "Scheduled", "Binding", "ok",
                 "s"};
  auto e = BuildEvent(ev, "", common::TimePoint(common::Duration(1)));
  std::string name(e.at("metadata").at("name").as_string());
  EXPECT_LE(name.size(), 253u);
  EXPECT_TRUE(api::IsDns1123Subdomain(name)) << name;
  EXPECT_TRUE(name.ends_with(".1")) << name;
}

TEST(KubeApiClientTest, JsonHelpers) {
  FakeRestClient rest;
  rest.Push(200, R"({"kind":"Node","metadata":{"name":"n1"}})");
  rest.Push(200, R"({"kind":"Node"})");
  rest.Push(500, "oops");
  rest.Push(200, "not json");
  common::FakeClock clock;
  KubeApiClient api(rest, clock);

  auto got = api.GetJson("/api/v1/nodes/n1", {{"resourceVersion", "0"}});
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->at("metadata").at("name"), "n1");
  EXPECT_EQ(rest.requests[0].query.at(0).first, "resourceVersion");

  auto patched =
      api.PatchMergeJson("/api/v1/nodes/n1", json::parse(R"({"metadata":{"labels":{"a":"b"}}})"));
  ASSERT_TRUE(patched.ok());
  EXPECT_EQ(rest.requests[1].method, "PATCH");
  EXPECT_EQ(rest.requests[1].content_type, "application/merge-patch+json");
  EXPECT_EQ(rest.requests[1].body, R"({"metadata":{"labels":{"a":"b"}}})");

  EXPECT_EQ(api.GetJson("/x").status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(api.GetJson("/x").status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gpusched::kube::client
