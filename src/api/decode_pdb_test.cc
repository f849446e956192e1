// SPDX-License-Identifier: Apache-2.0
// What preemption reads: PodDisruptionBudget and PriorityClass decoding (and their manifests),
// PodDisruptionBudget::Matches, and the pod's spec.preemptionPolicy and status.startTime.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <chrono>
#include <string>
#include <variant>
#include <vector>

#include "src/api/decode.h"

namespace gpusched::api {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

boost::json::value Json(std::string_view text) {
  auto v = ParseJson(text, "test");
  EXPECT_TRUE(v.ok()) << v.status().ToString();
  return v.ok() ? *v : boost::json::value();
}

std::string Pdb(const std::string& spec, const std::string& status = "{}") {
  return R"({"apiVersion":"policy/v1","kind":"PodDisruptionBudget",)"
         R"("metadata":{"name":"web","namespace":"ml","uid":"u1","resourceVersion":"7"},)"
         R"("spec":)" +
         spec + R"(,"status":)" + status + "}";
}

Labels MakeLabels(std::initializer_list<std::pair<std::string_view, std::string_view>> kv) {
  Labels l;
  for (const auto& [k, v] : kv) l.Set(k, v);
  return l;
}

TEST(DecodePdbTest, DecodesAnApiServerObject) {
  auto pdb = DecodePodDisruptionBudget(Json(Pdb(
      R"({"minAvailable":2,"selector":{"matchLabels":{"app":"web"},
          "matchExpressions":[{"key":"tier","operator":"In","values":["a","b"]}]}})",
      R"({"observedGeneration":3,"disruptionsAllowed":1,"currentHealthy":3,"desiredHealthy":2,
          "expectedPods":3,"disruptedPods":{"web-2":"2024-05-01T12:00:00Z",
          "web-0":"2024-05-01T12:00:01Z"},"conditions":[{"type":"DisruptionAllowed"}]})")));
  ASSERT_TRUE(pdb.ok()) << pdb.status().ToString();
  EXPECT_EQ(pdb->meta.name, "web");
  EXPECT_EQ(pdb->meta.namespace_, "ml");
  EXPECT_EQ(pdb->meta.uid, "u1");
  EXPECT_EQ(pdb->meta.resource_version, "7");
  ASSERT_TRUE(pdb->selector.has_value());
  EXPECT_EQ(pdb->selector->requirements.size(), 2u);
  EXPECT_EQ(pdb->disruptions_allowed, 1);
  EXPECT_THAT(pdb->disrupted_pods, ElementsAre("web-0", "web-2"));
  EXPECT_TRUE(pdb->Disrupted("web-2"));
  EXPECT_FALSE(pdb->Disrupted("web-1"));
}

TEST(DecodePdbTest, AppliesDefaults) {
  auto pdb = DecodePodDisruptionBudget(Json(R"({"metadata":{"name":"x"}})"));
  ASSERT_TRUE(pdb.ok()) << pdb.status().ToString();
  EXPECT_EQ(pdb->meta.namespace_, "default");
  EXPECT_FALSE(pdb->selector.has_value());
  EXPECT_EQ(pdb->disruptions_allowed, 0);
  EXPECT_THAT(pdb->disrupted_pods, IsEmpty());
  auto null_selector = DecodePodDisruptionBudget(Json(Pdb(R"({"selector":null})", "null")));
  ASSERT_TRUE(null_selector.ok()) << null_selector.status().ToString();
  EXPECT_FALSE(null_selector->selector.has_value());
}

TEST(DecodePdbTest, MatchesAsPreemptionDoes) {
  struct Case {
    std::string name;
    std::string spec;
    Labels labels;
    bool want;
  };
  const Labels web = MakeLabels({{"app", "web"}, {"tier", "a"}});
  const std::vector<Case> cases = {
      {"matching labels", R"({"selector":{"matchLabels":{"app":"web"}}})", web, true},
      {"other labels", R"({"selector":{"matchLabels":{"app":"db"}}})", web, false},
      {"an expression", R"({"selector":{"matchExpressions":[{"key":"tier","operator":"NotIn",
         "values":["b"]}]}})",
       web, true},
      {"a nil selector matches nothing", "{}", web, false},
      {"a null selector matches nothing", R"({"selector":null})", web, false},
      {"an empty selector matches nothing", R"({"selector":{}})", web, false},
      {"empty matchLabels match nothing", R"({"selector":{"matchLabels":{}}})", web, false},
      {"a pod without labels matches nothing",
       R"({"selector":{"matchExpressions":[{"key":"app","operator":"DoesNotExist"}]}})", Labels(),
       false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto pdb = DecodePodDisruptionBudget(Json(Pdb(c.spec)));
    ASSERT_TRUE(pdb.ok()) << pdb.status().ToString();
    EXPECT_EQ(pdb->Matches(c.labels), c.want);
  }
  auto pdb = DecodePodDisruptionBudget(Json(Pdb(R"({"selector":{"matchLabels":{"app":"web"}}})")));
  ASSERT_TRUE(pdb.ok());
  Pod pod;
  pod.meta.namespace_ = "ml";
  pod.meta.labels = web;
  EXPECT_TRUE(pdb->AppliesTo(pod));
  pod.meta.namespace_ = "other";
  EXPECT_FALSE(pdb->AppliesTo(pod));
}

TEST(DecodePdbTest, ReportsEveryMalformedFieldWithPathAndValue) {
  struct Case {
    std::string name;
    std::string json;
    std::string error;
  };
  const std::vector<Case> cases = {
      {"not an object", "[1]", "poddisruptionbudget: expected object, got array"},
      {"another kind", R"({"kind":"Pod","metadata":{"name":"x","namespace":"ml"}})",
       "poddisruptionbudget ml/x: kind: invalid value \"Pod\" (want PodDisruptionBudget)"},
      {"metadata", R"({"metadata":[]})",
       "poddisruptionbudget (no name): metadata: expected object, got array"},
      {"the name", R"({"metadata":{"name":1}})",
       "poddisruptionbudget (no name): metadata.name: expected string, got number"},
      {"a label value", R"({"metadata":{"name":"x","labels":{"a":1}}})",
       "poddisruptionbudget default/x: metadata.labels.a: expected string, got number"},
      {"spec", R"({"metadata":{"name":"x"},"spec":"all"})",
       "poddisruptionbudget default/x: spec: expected object, got string"},
      {"the selector", Pdb(R"({"selector":"app=web"})"),
       "poddisruptionbudget ml/web: spec.selector: expected object, got string"},
      {"matchLabels", Pdb(R"({"selector":{"matchLabels":{"app":2}}})"),
       "poddisruptionbudget ml/web: spec.selector.matchLabels.app: expected string, got number"},
      {"matchExpressions", Pdb(R"({"selector":{"matchExpressions":{}}})"),
       "poddisruptionbudget ml/web: spec.selector.matchExpressions: expected array, got object"},
      {"an operator",
       Pdb(R"({"selector":{"matchExpressions":[{"key":"a","operator":"Gt","values":["1"]}]}})"),
       "poddisruptionbudget ml/web: spec.selector.matchExpressions[0].operator: invalid value "
       "\"Gt\" (want In, NotIn, Exists or DoesNotExist)"},
      {"a missing key", Pdb(R"({"selector":{"matchExpressions":[{"operator":"Exists"}]}})"),
       "poddisruptionbudget ml/web: spec.selector.matchExpressions[0].key: required"},
      {"In without values",
       Pdb(R"({"selector":{"matchExpressions":[{"key":"a","operator":"In","values":[]}]}})"),
       "poddisruptionbudget ml/web: spec.selector.matchExpressions[0].values: must be non-empty "
       "for In and NotIn"},
      {"status", Pdb("{}", "[]"), "poddisruptionbudget ml/web: status: expected object, got array"},
      {"disruptionsAllowed type", Pdb("{}", R"({"disruptionsAllowed":"1"})"),
       "poddisruptionbudget ml/web: status.disruptionsAllowed: expected integer, got string"},
      {"negative disruptionsAllowed", Pdb("{}", R"({"disruptionsAllowed":-1})"),
       "poddisruptionbudget ml/web: status.disruptionsAllowed: value out of range [0, "
       "2147483647]"},
      {"disruptionsAllowed beyond int32", Pdb("{}", R"({"disruptionsAllowed":2147483648})"),
       "status.disruptionsAllowed: value out of range [0, 2147483647]"},
      {"disruptedPods", Pdb("{}", R"({"disruptedPods":["web-0"]})"),
       "poddisruptionbudget ml/web: status.disruptedPods: expected object, got array"},
      {"a disrupted pod's time", Pdb("{}", R"({"disruptedPods":{"web-0":"soon"}})"),
       "poddisruptionbudget ml/web: status.disruptedPods.web-0: invalid value \"soon\" (want RFC "
       "3339 time, e.g. 2024-05-01T12:00:00Z)"},
      {"a disrupted pod's time type", Pdb("{}", R"({"disruptedPods":{"web-0":5}})"),
       "poddisruptionbudget ml/web: status.disruptedPods.web-0: expected string, got number"},
      {"an empty disrupted pod name", Pdb("{}", R"({"disruptedPods":{"":null}})"),
       "poddisruptionbudget ml/web: status.disruptedPods: empty pod name"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto pdb = DecodePodDisruptionBudget(Json(c.json));
    ASSERT_FALSE(pdb.ok());
    EXPECT_EQ(pdb.status().code(), common::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(pdb.status().message()), HasSubstr(c.error));
  }
}

TEST(DecodePriorityClassTest, DecodesAndDefaults) {
  auto pc = DecodePriorityClass(Json(
      R"({"apiVersion":"scheduling.k8s.io/v1","kind":"PriorityClass","metadata":{"name":"high"},
          "value":1000000,"globalDefault":true,"preemptionPolicy":"Never","description":"d"})"));
  ASSERT_TRUE(pc.ok()) << pc.status().ToString();
  EXPECT_EQ(pc->name, "high");
  EXPECT_EQ(pc->value, 1000000);
  EXPECT_TRUE(pc->global_default);
  EXPECT_EQ(pc->preemption_policy, PreemptionPolicy::kNever);

  auto plain = DecodePriorityClass(Json(R"({"metadata":{"name":"low"},"value":-5})"));
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_EQ(plain->value, -5);
  EXPECT_FALSE(plain->global_default);
  EXPECT_EQ(plain->preemption_policy, PreemptionPolicy::kPreemptLowerPriority);
}

TEST(DecodePriorityClassTest, ReportsEveryMalformedFieldWithPathAndValue) {
  struct Case {
    std::string name;
    std::string json;
    std::string error;
  };
  const std::vector<Case> cases = {
      {"not an object", "7", "priorityclass: expected object, got number"},
      {"another kind", R"({"kind":"Node","metadata":{"name":"h"}})",
       "priorityclass h: kind: invalid value \"Node\" (want PriorityClass)"},
      {"the value type", R"({"metadata":{"name":"h"},"value":"high"})",
       "priorityclass h: value: expected integer, got string"},
      {"the value range", R"({"metadata":{"name":"h"},"value":3000000000})",
       "priorityclass h: value: value out of range [-2147483648, 2147483647]"},
      {"globalDefault", R"({"metadata":{"name":"h"},"globalDefault":"yes"})",
       "priorityclass h: globalDefault: expected bool, got string"},
      {"an unknown preemption policy", R"({"metadata":{"name":"h"},"preemptionPolicy":"Always"})",
       "priorityclass h: preemptionPolicy: invalid value \"Always\" (want PreemptLowerPriority or "
       "Never)"},
      {"the preemption policy type", R"({"metadata":{"name":"h"},"preemptionPolicy":1})",
       "priorityclass h: preemptionPolicy: expected string, got number"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto pc = DecodePriorityClass(Json(c.json));
    ASSERT_FALSE(pc.ok());
    EXPECT_EQ(pc.status().code(), common::StatusCode::kInvalidArgument);
    EXPECT_EQ(std::string(pc.status().message()), c.error);
  }
}

TEST(DecodePodPreemptionTest, PreemptionPolicyAndStartTime) {
  struct Case {
    std::string name;
    std::string json;
    PreemptionPolicy policy;
    std::optional<common::TimePoint> start;
    std::string error;  // "" = decodes
  };
  const common::TimePoint t(std::chrono::seconds(1714564800) + std::chrono::milliseconds(250));
  auto pod = [](const std::string& spec, const std::string& status) {
    return R"({"kind":"Pod","metadata":{"name":"p","namespace":"ns"},"spec":)" + spec +
           R"(,"status":)" + status + "}";
  };
  const std::vector<Case> cases = {
      {"defaults", pod("{}", "{}"), PreemptionPolicy::kPreemptLowerPriority, std::nullopt, ""},
      {"PreemptLowerPriority", pod(R"({"preemptionPolicy":"PreemptLowerPriority"})", "{}"),
       PreemptionPolicy::kPreemptLowerPriority, std::nullopt, ""},
      {"Never", pod(R"({"preemptionPolicy":"Never"})", "{}"), PreemptionPolicy::kNever,
       std::nullopt, ""},
      {"null is unset", pod(R"({"preemptionPolicy":null})", R"({"startTime":null})"),
       PreemptionPolicy::kPreemptLowerPriority, std::nullopt, ""},
      {"a start time", pod("{}", R"({"startTime":"2024-05-01T12:00:00.25Z"})"),
       PreemptionPolicy::kPreemptLowerPriority, t, ""},
      {"an unknown policy", pod(R"({"preemptionPolicy":"never"})", "{}"),
       PreemptionPolicy::kPreemptLowerPriority, std::nullopt,
       "pod ns/p: spec.preemptionPolicy: invalid value \"never\" (want PreemptLowerPriority or "
       "Never)"},
      {"a policy of another type", pod(R"({"preemptionPolicy":true})", "{}"),
       PreemptionPolicy::kPreemptLowerPriority, std::nullopt,
       "pod ns/p: spec.preemptionPolicy: expected string, got bool"},
      {"a malformed start time", pod("{}", R"({"startTime":"12:00"})"),
       PreemptionPolicy::kPreemptLowerPriority, std::nullopt,
       "pod ns/p: status.startTime: invalid value \"12:00\" (want RFC 3339 time, e.g. "
       "2024-05-01T12:00:00Z)"},
      {"a start time of another type", pod("{}", R"({"startTime":1714564800})"),
       PreemptionPolicy::kPreemptLowerPriority, std::nullopt,
       "pod ns/p: status.startTime: expected string, got number"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto p = DecodePod(Json(c.json));
    if (!c.error.empty()) {
      ASSERT_FALSE(p.ok());
      EXPECT_EQ(std::string(p.status().message()), c.error);
      continue;
    }
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    EXPECT_EQ(p->preemption_policy, c.policy);
    EXPECT_EQ(p->start_time, c.start);
  }
  EXPECT_EQ(PreemptionPolicyName(PreemptionPolicy::kNever), "Never");
  EXPECT_EQ(PreemptionPolicyName(PreemptionPolicy::kPreemptLowerPriority), "PreemptLowerPriority");
}

TEST(DecodeManifestsTest, DecodesPdbsAndPriorityClasses) {
  const std::string text = R"(apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web, namespace: ml}
spec:
  minAvailable: 1
  selector: {matchLabels: {app: web}}
status: {disruptionsAllowed: 2}
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
preemptionPolicy: Never
---
apiVersion: policy/v1beta1
kind: PodDisruptionBudget
metadata: {name: old}
---
kind: PodDisruptionBudgetList
items:
- metadata: {name: listed}
)";
  auto objects = DecodeManifests(text, "in.yaml");
  ASSERT_TRUE(objects.ok()) << objects.status().ToString();
  ASSERT_EQ(objects->size(), 4u);
  const auto* pdb = std::get_if<PodDisruptionBudget>(&(*objects)[0]);
  ASSERT_NE(pdb, nullptr);
  EXPECT_EQ(pdb->meta.namespace_, "ml");
  EXPECT_EQ(pdb->disruptions_allowed, 2);
  EXPECT_TRUE(pdb->Matches(MakeLabels({{"app", "web"}})));
  const auto* pc = std::get_if<PriorityClass>(&(*objects)[1]);
  ASSERT_NE(pc, nullptr);
  EXPECT_EQ(pc->name, "high");
  EXPECT_EQ(pc->value, 1000);
  EXPECT_EQ(pc->preemption_policy, PreemptionPolicy::kNever);
  // Another apiVersion is not modelled (policy/v1beta1's empty selector meant "everything").
  const auto* old = std::get_if<OtherObject>(&(*objects)[2]);
  ASSERT_NE(old, nullptr);
  EXPECT_EQ(old->api_version, "policy/v1beta1");
  const auto* listed = std::get_if<PodDisruptionBudget>(&(*objects)[3]);
  ASSERT_NE(listed, nullptr);
  EXPECT_EQ(listed->meta.name, "listed");

  auto bad = DecodeManifests(
      "kind: PriorityClass\nmetadata: {name: x}\nvalue: 1\n---\n"
      "kind: PodDisruptionBudget\nmetadata: {name: y}\nspec: {selector: {matchLabels: [a]}}\n",
      "bad.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "bad.yaml: document 2: poddisruptionbudget default/y: spec.selector.matchLabels: "
            "expected object, got array");
}

}  // namespace
}  // namespace gpusched::api
