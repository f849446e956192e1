// SPDX-License-Identifier: Apache-2.0
// The controller's reconcile loop against a fake RestClient, a fake HTTP transport and a
// FakeClock, with an InlineExecutor so every Tick runs its reconciles before returning.
#include "src/addons/deletion_cost/controller.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "src/addons/deletion_cost/plan.h"
#include "src/api/decode.h"
#include "src/kube/accepting_api_client.h"

namespace gpusched::addons::deletion_cost {
namespace {

namespace json = boost::json;
using std::chrono::seconds;

// Answers LISTs of workloads from `replicasets`/`deployments`, records every request, and
// answers PATCHes with `patch_status`.
class FakeRest final : public kube::RestClient {
 public:
  json::array replicasets;
  json::array deployments;
  int patch_status = 200;
  int list_status = 200;
  std::vector<kube::Request> requests;

  common::StatusOr<kube::Response> Do(const kube::Request& r) override {
    requests.push_back(r);
    if (r.method == "GET") {
      if (list_status != 200)
        return kube::Response{list_status, R"({"kind":"Status","message":"down"})"};
      if (r.path.ends_with("/replicasets")) return kube::Response{200, List(replicasets)};
      if (r.path.ends_with("/deployments")) return kube::Response{200, List(deployments)};
      return kube::Response{404, "{}"};
    }
    if (r.method == "PATCH")
      return kube::Response{patch_status, patch_status == 200 ? "{}" : R"({"message":"boom"})"};
    return kube::Response{405, "{}"};
  }
  common::Status Stream(const kube::Request&,
                        const std::function<bool(std::string_view)>&) override {
    return common::UnimplementedError("no watch in this fake");
  }

  std::vector<kube::Request> Patches() const {
    std::vector<kube::Request> out;
    for (const auto& r : requests) {
      if (r.method == "PATCH") out.push_back(r);
    }
    return out;
  }
  // The cost written by patch `i`.
  std::string PatchedCost(size_t i) const {
    auto v = json::parse(Patches().at(i).body);
    return std::string(
        v.at("metadata").at("annotations").at(kPodDeletionCostAnnotation).as_string());
  }

 private:
  static std::string List(const json::array& items) {
    return json::serialize(
        json::object{{"kind", "List"}, {"items", items}, {"metadata", json::object{}}});
  }
};

class FakeHttp final : public HttpGetter {
 public:
  std::map<std::string, common::StatusOr<HttpResult>> answers;
  int calls = 0;
  common::StatusOr<HttpResult> Get(const std::string& url, common::Duration) override {
    ++calls;
    auto it = answers.find(url);
    if (it == answers.end()) return common::UnavailableError("connection refused: " + url);
    return it->second;
  }
  void Conns(const std::string& pod, double n) {
    answers.insert_or_assign("http://10.0.0.1/" + pod,
                             HttpResult{200, "conns " + std::to_string(n) + "\n", "text/plain"});
  }
};

class FakeEvents final : public kube::AcceptingApiClient {
 public:
  std::vector<kube::EventRecord> events;
  common::Status BindPod(const api::Pod&, std::string_view,
                         const std::vector<std::pair<std::string, std::string>>&) override {
    return common::UnimplementedError("");
  }
  common::Status SetPodUnschedulable(const api::Pod&, std::string_view, std::string_view) override {
    return common::UnimplementedError("");
  }
  common::Status PatchPodCondition(const api::Pod&, const api::Condition&) override {
    return common::UnimplementedError("");
  }
  common::Status DeletePod(const api::Pod&) override { return common::UnimplementedError(""); }
  common::Status EvictPod(const api::Pod&) override { return common::UnimplementedError(""); }
  common::Status SetNominatedNodeName(const api::Pod&, std::string_view) override {
    return common::UnimplementedError("");
  }
  common::Status CreateEvent(const kube::EventRecord& e) override {
    events.push_back(e);
    return common::Status::Ok();
  }
  int Count(std::string_view reason) const {
    int n = 0;
    for (const auto& e : events) n += e.reason == reason ? 1 : 0;
    return n;
  }
};

struct PodSpec {
  std::string name;
  std::map<std::string, std::string> labels = {{"app", "web"}};
  std::map<std::string, std::string> annotations;
  bool ready = true;
  common::Duration ready_for = std::chrono::hours(1);
  std::string owner_rs_uid;
  std::string phase = "Running";
};

class ControllerTest : public ::testing::Test {
 protected:
  void Build(const std::string& policy_yaml) {
    auto cfg = ParsePolicyConfig(policy_yaml, "policy.yaml");
    ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
    controller_ = std::make_unique<Controller>(
        ControllerDeps{clock_, rest_, &events_, http_, executor_}, std::move(cfg).value());
  }

  json::value Pod(const PodSpec& p) {
    json::object labels;
    for (const auto& [k, v] : p.labels) labels[k] = v;
    json::object ann;
    for (const auto& [k, v] : p.annotations) ann[k] = v;
    json::object meta{{"name", p.name},
                      {"namespace", "prod"},
                      {"uid", "uid-" + p.name},
                      {"creationTimestamp", FormatTime(clock_.Now() - std::chrono::hours(2))},
                      {"labels", labels},
                      {"annotations", ann}};
    if (!p.owner_rs_uid.empty()) {
      meta["ownerReferences"] = json::array{json::object{{"apiVersion", "apps/v1"},
                                                         {"kind", "ReplicaSet"},
                                                         {"name", "web-rs"},
                                                         {"uid", p.owner_rs_uid},
                                                         {"controller", true}}};
    }
    json::object ready{{"type", "Ready"},
                       {"status", p.ready ? "True" : "False"},
                       {"lastTransitionTime", FormatTime(clock_.Now() - p.ready_for)}};
    return json::object{
        {"apiVersion", "v1"},
        {"kind", "Pod"},
        {"metadata", meta},
        {"spec", json::object{{"nodeName", "n1"},
                              {"containers", json::array{json::object{{"name", "app"}}}}}},
        {"status",
         json::object{
             {"phase", p.phase}, {"podIP", "10.0.0.1"}, {"conditions", json::array{ready}}}}};
  }

  void Add(const PodSpec& p) { controller_->Apply(kube::informer::EventType::kAdded, Pod(p)); }

  common::FakeClock clock_{common::TimePoint(seconds(1'700'000'000))};
  FakeRest rest_;
  FakeHttp http_;
  FakeEvents events_;
  common::InlineExecutor executor_;
  std::unique_ptr<Controller> controller_;
};

// One connections policy: 10 per connection, capped; URL per pod on a fake host.
constexpr const char* kPolicy = R"(
apiVersion: gpusched.io/v1alpha1
kind: DeletionCostPolicy
controller: {resyncPeriod: 30s, events: All, retryBackoff: 2s}
policies:
- name: conns
  selector: {namespaces: [prod], matchLabels: {app: web}}
  metrics: {pod: {url: "http://{podIP}/{name}"}}
  terms: [{metric: conns, weight: 10, max: 1000}]
  hysteresis: 25
)";

TEST_F(ControllerTest, PatchesTheComputedCostWithAMergePatch) {
  Build(kPolicy);
  http_.Conns("web-1", 7);
  Add({.name = "web-1"});
  controller_->Tick();
  ASSERT_EQ(rest_.Patches().size(), 1u);
  const kube::Request p = rest_.Patches()[0];
  EXPECT_EQ(p.path, "/api/v1/namespaces/prod/pods/web-1");
  EXPECT_EQ(p.content_type, "application/merge-patch+json");
  EXPECT_EQ(p.body,
            R"({"metadata":{"annotations":{"controller.kubernetes.io/pod-deletion-cost":"70"}}})");
  EXPECT_EQ(controller_->stats().patches_success, 1);
  EXPECT_EQ(controller_->LastCostForTest("prod/web-1"), 70);
  EXPECT_EQ(events_.Count("DeletionCostUpdated"), 1);  // events: All
  // The workloads were listed before the first reconcile.
  EXPECT_EQ(rest_.requests[0].path, "/apis/apps/v1/deployments");
  EXPECT_EQ(rest_.requests[1].path, "/apis/apps/v1/replicasets");
  // Our own write echoing back through the watch queues nothing new.
  Add({.name = "web-1", .annotations = {{std::string(kPodDeletionCostAnnotation), "70"}}});
  EXPECT_EQ(controller_->QueueDepth(), 0u);
}

TEST_F(ControllerTest, PatchesOnlyBeyondTheHysteresisBand) {
  Build(kPolicy);
  struct Case {
    std::string name;
    std::string current;
    double conns;
    std::string want;  // "" = no patch
  };
  const std::vector<Case> cases = {
      {"unchanged", "70", 7, ""},
      {"+20 is inside the band of 25", "70", 9, ""},
      {"-20 is inside the band", "70", 5, ""},
      {"+30 is beyond the band", "70", 10, "100"},
      {"crossing zero always patches", "-5", 1, "10"},
      {"from zero to positive always patches", "0", 1, "10"},
      {"an absent annotation always patches", "", 0, "0"},
  };
  int pod = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string name = "web-" + std::to_string(pod++);
    http_.Conns(name, c.conns);
    PodSpec spec{.name = name};
    if (!c.current.empty()) spec.annotations[std::string(kPodDeletionCostAnnotation)] = c.current;
    const size_t before = rest_.Patches().size();
    Add(spec);
    controller_->Tick();
    if (c.want.empty()) {
      EXPECT_EQ(rest_.Patches().size(), before);
    } else {
      ASSERT_EQ(rest_.Patches().size(), before + 1);
      EXPECT_EQ(rest_.PatchedCost(before), c.want);
    }
  }
  EXPECT_EQ(controller_->stats().skipped_unchanged, 1);
  EXPECT_EQ(controller_->stats().skipped_hysteresis, 2);
}

TEST_F(ControllerTest, DryRunComputesAndCountsButNeverPatches) {
  auto cfg =
      ParsePolicyConfig(std::string(kPolicy).replace(std::string(kPolicy).find("events: All"), 11,
                                                     "events: All, dryRun: true"),
                        "p.yaml");
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  controller_ = std::make_unique<Controller>(
      ControllerDeps{clock_, rest_, &events_, http_, executor_}, std::move(cfg).value());
  http_.Conns("web-1", 7);
  Add({.name = "web-1"});
  controller_->Tick();
  EXPECT_TRUE(rest_.Patches().empty());
  EXPECT_EQ(controller_->stats().patches_dry_run, 1);
  EXPECT_EQ(controller_->LastCostForTest("prod/web-1"), 70);
}

TEST_F(ControllerTest, InvalidAnnotationCountsAsZeroAndIsReported) {
  Build(kPolicy);
  http_.Conns("web-1", 0);
  http_.Conns("web-2", 2);
  Add({.name = "web-1", .annotations = {{std::string(kPodDeletionCostAnnotation), "abc"}}});
  Add({.name = "web-2", .annotations = {{std::string(kPodDeletionCostAnnotation), "0x10"}}});
  controller_->Tick();
  // Even a computed 0 is written over an invalid value, which the ReplicaSet controller reads as 0.
  ASSERT_EQ(rest_.Patches().size(), 2u);
  std::set<std::string> written = {rest_.PatchedCost(0), rest_.PatchedCost(1)};
  EXPECT_EQ(written, (std::set<std::string>{"0", "20"}));
  EXPECT_EQ(controller_->stats().invalid_annotations, 2);
  EXPECT_EQ(events_.Count("InvalidDeletionCost"), 2);
  for (const auto& e : events_.events) {
    if (e.reason == "InvalidDeletionCost") {
      EXPECT_EQ(e.type, "Warning");
      EXPECT_NE(e.note.find("must be a 32bit integer"), std::string::npos);
    }
  }
}

TEST_F(ControllerTest, BadMetricsCountAsZeroAndNeverCrash) {
  Build(kPolicy);
  struct Case {
    std::string name;
    common::StatusOr<HttpResult> answer;
  };
  std::vector<Case> cases;
  cases.push_back({"malformed exposition", HttpResult{200, "conns{state=\"a\" 7\n", "text/plain"}});
  cases.push_back({"metric missing", HttpResult{200, "other 7\n", "text/plain"}});
  cases.push_back({"HTTP 500", HttpResult{500, "boom", "text/plain"}});
  cases.push_back(
      {"binary garbage", HttpResult{200, std::string("\x00\xff\xfe", 3), "text/plain"}});
  cases.push_back({"NaN", HttpResult{200, "conns NaN\n", "text/plain"}});
  cases.push_back({"+Inf", HttpResult{200, "conns +Inf\n", "text/plain"}});
  cases.push_back({"timeout", common::DeadlineExceededError("timed out")});
  int pod = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string name = "bad-" + std::to_string(pod++);
    http_.answers.insert_or_assign("http://10.0.0.1/" + name, c.answer);
    const size_t before = rest_.Patches().size();
    Add({.name = name});
    controller_->Tick();
    ASSERT_EQ(rest_.Patches().size(), before + 1);
    EXPECT_EQ(rest_.PatchedCost(before), "0");
  }
  EXPECT_EQ(controller_->stats().metric_errors_pod, static_cast<int64_t>(cases.size()));
  EXPECT_EQ(events_.Count("DeletionCostMetricsFailed"), static_cast<int>(cases.size()));
  // Warnings are rate-limited per pod: a resync does not repeat them.
  clock_.Advance(seconds(31));
  controller_->Tick();
  EXPECT_EQ(events_.Count("DeletionCostMetricsFailed"), static_cast<int>(cases.size()));
}

TEST_F(ControllerTest, OnMetricErrorSkipLeavesTheAnnotationAlone) {
  Build(R"(
apiVersion: gpusched.io/v1alpha1
kind: DeletionCostPolicy
policies:
- name: conns
  selector: {matchLabels: {app: web}}
  metrics: {pod: {url: "http://{podIP}/{name}"}}
  terms: [{metric: conns, weight: 10}]
  onMetricError: Skip
)");
  Add({.name = "web-1", .annotations = {{std::string(kPodDeletionCostAnnotation), "500"}}});
  controller_->Tick();  // no answer scripted: connection refused
  EXPECT_TRUE(rest_.Patches().empty());
  EXPECT_EQ(controller_->stats().skipped_metric_error, 1);
}

TEST_F(ControllerTest, WarmUpThenNormalCost) {
  Build(R"(
apiVersion: gpusched.io/v1alpha1
kind: DeletionCostPolicy
controller: {resyncPeriod: 10m}
policies:
- name: conns
  selector: {matchLabels: {app: web}}
  metrics: {pod: {url: "http://{podIP}/{name}"}}
  terms: [{metric: conns, weight: 10}]
  warmup: {cost: -50, readyFor: 60s}
)");
  http_.Conns("web-1", 3);
  Add({.name = "web-1", .ready = true, .ready_for = seconds(20)});
  Add({.name = "web-2", .ready = false});
  controller_->Tick();
  ASSERT_EQ(rest_.Patches().size(), 2u);
  EXPECT_EQ(rest_.PatchedCost(0), "-50");
  EXPECT_EQ(rest_.PatchedCost(1), "-50");
  EXPECT_EQ(http_.calls, 0);  // nothing is scraped during warm-up
  // web-1 is re-evaluated when its warm-up ends (40 s later), without waiting for a resync.
  clock_.Advance(seconds(39));
  controller_->Tick();
  EXPECT_EQ(rest_.Patches().size(), 2u);
  clock_.Advance(seconds(1));
  controller_->Tick();
  ASSERT_EQ(rest_.Patches().size(), 3u);
  EXPECT_EQ(rest_.Patches()[2].path, "/api/v1/namespaces/prod/pods/web-1");
  EXPECT_EQ(rest_.PatchedCost(2), "30");
}

TEST_F(ControllerTest, OptInAnnotationOnTheDeployment) {
  Build(R"(
apiVersion: gpusched.io/v1alpha1
kind: DeletionCostPolicy
policies:
- name: keep-warm
  terms: [{label: cache-warmed, value: "true", cost: 100}]
)");
  rest_.deployments.push_back(json::object{
      {"metadata",
       json::object{{"name", "web"},
                    {"namespace", "prod"},
                    {"uid", "dep-1"},
                    {"annotations", json::object{{std::string(kPolicyAnnotation), "keep-warm"}}}}},
      {"spec",
       json::object{{"selector", json::object{{"matchLabels", json::object{{"app", "web"}}}}}}}});
  rest_.replicasets.push_back(json::object{
      {"metadata",
       json::object{{"name", "web-rs"},
                    {"namespace", "prod"},
                    {"uid", "rs-1"},
                    {"ownerReferences", json::array{json::object{{"kind", "Deployment"},
                                                                 {"name", "web"},
                                                                 {"uid", "dep-1"},
                                                                 {"controller", true}}}}}},
      {"spec",
       json::object{{"replicas", 2},
                    {"selector", json::object{{"matchLabels", json::object{{"app", "web"}}}}}}}});
  Add({.name = "web-1",
       .labels = {{"app", "web"}, {"cache-warmed", "true"}},
       .owner_rs_uid = "rs-1"});
  Add({.name = "web-2", .owner_rs_uid = "rs-1"});
  Add({.name = "other", .labels = {{"app", "other"}}, .owner_rs_uid = "rs-9"});
  controller_->Tick();
  ASSERT_EQ(rest_.Patches().size(), 2u);
  std::map<std::string, std::string> got;
  for (size_t i = 0; i < 2; ++i) got[rest_.Patches()[i].path] = rest_.PatchedCost(i);
  EXPECT_EQ(got["/api/v1/namespaces/prod/pods/web-1"], "100");
  EXPECT_EQ(got["/api/v1/namespaces/prod/pods/web-2"], "0");
  EXPECT_FALSE(controller_->LastCostForTest("prod/other").has_value());
}

TEST_F(ControllerTest, FailedPatchesAreRetriedWithBackoff) {
  Build(kPolicy);
  http_.Conns("web-1", 7);
  rest_.patch_status = 500;
  Add({.name = "web-1"});
  controller_->Tick();
  EXPECT_EQ(controller_->stats().patches_error, 1);
  EXPECT_EQ(controller_->QueueDepth(), 1u);  // waiting for its backoff (2 s)
  clock_.Advance(seconds(1));
  controller_->Tick();
  EXPECT_EQ(controller_->stats().patches_error, 1);
  clock_.Advance(seconds(1));
  controller_->Tick();
  EXPECT_EQ(controller_->stats().patches_error, 2);  // second failure: next backoff 4 s
  rest_.patch_status = 200;
  clock_.Advance(seconds(4));
  controller_->Tick();
  EXPECT_EQ(controller_->stats().patches_success, 1);
  EXPECT_EQ(controller_->QueueDepth(), 0u);
  // 404: the pod went away meanwhile; not an error.
  rest_.patch_status = 404;
  http_.Conns("web-2", 1);
  Add({.name = "web-2"});
  controller_->Tick();
  EXPECT_EQ(controller_->stats().patches_error, 2);
  EXPECT_EQ(controller_->QueueDepth(), 0u);
}

TEST_F(ControllerTest, ResyncReevaluatesAndStoreFollowsTheReflector) {
  Build(kPolicy);
  http_.Conns("web-1", 7);
  http_.Conns("web-2", 1);
  controller_->Replace({Pod({.name = "web-1"}), Pod({.name = "web-2"})}, "1");
  controller_->Tick();
  EXPECT_EQ(rest_.Patches().size(), 2u);
  // The reflector relists without web-2: it is forgotten.
  controller_->Replace(
      {Pod({.name = "web-1", .annotations = {{std::string(kPodDeletionCostAnnotation), "70"}}})},
      "2");
  EXPECT_FALSE(controller_->LastCostForTest("prod/web-2").has_value());
  // A metric change is picked up by the next resync, not before.
  http_.Conns("web-1", 20);
  clock_.Advance(seconds(29));
  controller_->Tick();
  EXPECT_EQ(rest_.Patches().size(), 2u);
  clock_.Advance(seconds(1));
  controller_->Tick();
  ASSERT_EQ(rest_.Patches().size(), 3u);
  EXPECT_EQ(rest_.PatchedCost(2), "200");
  // DELETED events forget the pod; terminal and terminating pods are left alone.
  controller_->Apply(kube::informer::EventType::kDeleted, Pod({.name = "web-1"}));
  EXPECT_FALSE(controller_->LastCostForTest("prod/web-1").has_value());
  Add({.name = "done", .phase = "Succeeded"});
  controller_->Tick();
  EXPECT_EQ(rest_.Patches().size(), 3u);
  // An object that does not decode is skipped, not fatal.
  controller_->Apply(kube::informer::EventType::kAdded, json::value("not a pod"));
  controller_->Replace({json::value(42)}, "3");
  controller_->Tick();
}

TEST_F(ControllerTest, WorkloadListFailureIsReportedAndSelectorsStillWork) {
  Build(kPolicy);
  rest_.list_status = 503;
  http_.Conns("web-1", 7);
  Add({.name = "web-1"});
  controller_->Tick();
  EXPECT_EQ(controller_->stats().workload_refresh_errors, 1);
  EXPECT_EQ(rest_.Patches().size(), 1u);
}

TEST_F(ControllerTest, MetricsTextIsValidExposition) {
  Build(kPolicy);
  http_.Conns("web-1", 7);
  http_.answers.insert_or_assign("http://10.0.0.1/web-2",
                                 HttpResult{200, "garbage{", "text/plain"});
  Add({.name = "web-1"});
  Add({.name = "web-2"});
  controller_->Tick();
  const std::string text = controller_->MetricsText();
  auto samples = ParseExposition(text);
  ASSERT_TRUE(samples.ok()) << samples.status().ToString() << "\n" << text;
  EXPECT_EQ(*SumSeries(*samples, "gpusched_deletion_cost_patches_total", {{"result", "success"}}),
            2);
  EXPECT_EQ(*SumSeries(*samples, "gpusched_deletion_cost_metric_errors_total", {{"source", "pod"}}),
            1);
  EXPECT_EQ(*SumSeries(*samples, "gpusched_deletion_cost_computed_cost_count", {}), 2);
  EXPECT_EQ(*SumSeries(*samples, "gpusched_deletion_cost_managed_pods", {{"band", "medium"}}),
            1);  // 70
  EXPECT_EQ(*SumSeries(*samples, "gpusched_deletion_cost_managed_pods", {{"band", "default"}}),
            1);  // 0
  EXPECT_EQ(*SumSeries(*samples, "gpusched_deletion_cost_computed_cost_bucket", {{"le", "+Inf"}}),
            2);
}

}  // namespace
}  // namespace gpusched::addons::deletion_cost
