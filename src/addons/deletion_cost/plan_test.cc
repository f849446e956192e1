// SPDX-License-Identifier: Apache-2.0
#include "src/addons/deletion_cost/plan.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "src/api/decode.h"

namespace gpusched::addons::deletion_cost {
namespace {

namespace json = boost::json;
using std::chrono::seconds;

const common::TimePoint kNow = common::TimePoint(seconds(1'700'000'000));

// Example D of docs/replicaset-scale-down.md §7 as manifests: Deployment web, new ReplicaSet
// web-new (6 pods), old ReplicaSet web-old (replicas 0 in spec, 2 pods still running), one
// unrelated pod.
std::string Manifests(bool second_active = false) {
  std::string out = R"(
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, uid: dep-1}
spec: {replicas: 6, selector: {matchLabels: {app: web}}}
---
apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: web-new
  uid: rs-new
  ownerReferences: [{apiVersion: apps/v1, kind: Deployment, name: web, uid: dep-1, controller: true}]
spec:
  replicas: 6
  selector: {matchLabels: {app: web, rev: new}}
---
apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: web-old
  uid: rs-old
  ownerReferences: [{apiVersion: apps/v1, kind: Deployment, name: web, uid: dep-1, controller: true}]
spec:
  replicas: )" + std::string(second_active ? "2" : "0") +
                    R"(
  selector: {matchLabels: {app: web, rev: old}}
)";
  const auto pod = [&](std::string name, std::string uid, std::string node, std::string rs,
                       std::string rev, int ready_ago, std::string extra_ann = "") {
    std::string ann = extra_ann.empty() ? "{}" : extra_ann;
    out += "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name + "\n  uid: " + uid +
           "\n  creationTimestamp: '" + FormatTime(kNow - std::chrono::hours(1)) +
           "'\n  labels: {app: web, rev: " + rev + "}\n  annotations: " + ann + "\n";
    if (!rs.empty()) {
      out += "  ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: " + rs +
             ", uid: " + (rs == "web-new" ? "rs-new" : "rs-old") + ", controller: true}]\n";
    }
    out += "spec: {nodeName: " + node +
           ", containers: [{name: app}]}\nstatus:\n  phase: Running\n"
           "  conditions: [{type: Ready, status: 'True', lastTransitionTime: '" +
           FormatTime(kNow - seconds(ready_ago)) + "'}]\n";
  };
  pod("A1", "u1", "n1", "web-new", "new", 40);
  pod("A2", "u2", "n1", "web-new", "new", 41);
  pod("A3", "u3", "n2", "web-new", "new", 42);
  pod("A4", "u4", "n3", "web-new", "new", 43,
      "{controller.kubernetes.io/pod-deletion-cost: 'abc'}");
  pod("A5", "u5", "n4", "web-new", "new", 44);
  pod("A6", "u6", "n4", "web-new", "new", 45);
  pod("O1", "o1", "n1", "web-old", "old", 7200);
  pod("O2", "o2", "n2", "web-old", "old", 7200);
  pod("orphan", "x1", "n9", "", "new", 10);
  return out;
}

ClusterObjects Objects(const std::string& yaml) {
  auto docs = api::ParseYamlDocuments(yaml, "test.yaml");
  EXPECT_TRUE(docs.ok()) << docs.status().ToString();
  return ClassifyObjects(*docs, "default");
}

TEST(MakePlanTest, ExampleDFromManifests) {
  ClusterObjects objects = Objects(Manifests());
  EXPECT_EQ(objects.deployments.size(), 1u);
  EXPECT_EQ(objects.replicasets.size(), 2u);
  EXPECT_EQ(objects.pods.size(), 9u);
  auto r = MakePlan(
      objects,
      {.kind = "Deployment", .namespace_ = "default", .name = "web", .replicas = 4, .now = kNow});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->replicaset.name, "web-new");
  ASSERT_TRUE(r->owner.has_value());
  EXPECT_EQ(r->related_pods, 9u);  // both ReplicaSets' pods, and the orphan web-new selects
  ASSERT_EQ(r->plan.deletions, 2);
  std::set<std::string> victims;
  for (const auto& v : r->plan.victims()) victims.insert(v.facts.name);
  EXPECT_EQ(victims, (std::set<std::string>{"A1", "A2"}));
  // Warnings: the invalid annotation, the orphan.
  std::string all;
  for (const auto& w : r->warnings) all += w + "\n";
  EXPECT_NE(
      all.find(
          "pod A4: annotations[controller.kubernetes.io/pod-deletion-cost]: invalid value \"abc\""),
      std::string::npos)
      << all;
  EXPECT_NE(all.find("1 active pod(s) match the selector without a controller owner"),
            std::string::npos)
      << all;

  const std::string text = FormatPlanText(*r);
  EXPECT_NE(
      text.find(
          "ReplicaSet default/web-new (Deployment web): 6 active pod(s) -> 4 replica(s): delete 2"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("DELETE"), std::string::npos);
  EXPECT_NE(text.find("5 rank: rank 3 > 2"), std::string::npos) << text;
  EXPECT_NE(text.find("Each victim against the first kept pod (A3)"), std::string::npos) << text;

  json::value j = PlanToJson(*r);
  EXPECT_EQ(j.at("deletions").as_int64(), 2);
  EXPECT_EQ(j.at("victims").as_array().size(), 2u);
  EXPECT_EQ(j.at("pods").as_array()[0].at("versusFirstKept").at("name").as_string(), "rank");
  EXPECT_EQ(j.at("pods").as_array()[5].at("name").as_string(), "A4");
  EXPECT_TRUE(j.at("pods").as_array()[5].at("costError").is_string());  // invalid: cost 0
}

TEST(MakePlanTest, TargetsAndRefusals) {
  struct Case {
    std::string name;
    std::string yaml;
    PlanRequest request;
    common::StatusCode code;
    std::string error;
  };
  const std::vector<Case> cases = {
      {"missing Deployment",
       Manifests(),
       {.kind = "Deployment", .namespace_ = "default", .name = "nope"},
       common::StatusCode::kNotFound,
       "Deployment default/nope not found"},
      {"missing ReplicaSet",
       Manifests(),
       {.kind = "ReplicaSet", .namespace_ = "default", .name = "nope"},
       common::StatusCode::kNotFound,
       "ReplicaSet default/nope not found"},
      {"another namespace",
       Manifests(),
       {.kind = "Deployment", .namespace_ = "prod", .name = "web"},
       common::StatusCode::kNotFound,
       "not found"},
      {"mid-rollout Deployment",
       Manifests(true),
       {.kind = "Deployment", .namespace_ = "default", .name = "web"},
       common::StatusCode::kFailedPrecondition,
       "middle of a rollout (ReplicaSets with replicas: web-new, web-old)"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto r = MakePlan(Objects(c.yaml), c.request);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), c.code);
    EXPECT_NE(r.status().message().find(c.error), std::string_view::npos) << r.status().message();
  }
  // A ReplicaSet can still be planned during a rollout; the rank spans both sets.
  auto r = MakePlan(Objects(Manifests(true)), {.kind = "ReplicaSet",
                                               .namespace_ = "default",
                                               .name = "web-old",
                                               .replicas = 1,
                                               .now = kNow});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->plan.deletions, 1);
  EXPECT_EQ(r->plan.victims()[0].facts.name, "O1");  // n1 holds 3 related pods, n2 two
}

TEST(ClassifyObjectsTest, ExpandsListsAndDefaultsTheNamespace) {
  auto docs = api::ParseYamlDocuments(R"(
apiVersion: v1
kind: PodList
items:
- metadata: {name: a, namespace: x}
- metadata: {name: b}
---
apiVersion: v1
kind: List
items:
- {kind: ReplicaSet, metadata: {name: rs}}
- {kind: ConfigMap, metadata: {name: cm}}
)",
                                      "t");
  ASSERT_TRUE(docs.ok());
  ClusterObjects o = ClassifyObjects(*docs, "dflt");
  ASSERT_EQ(o.pods.size(), 2u);
  EXPECT_EQ(o.pods[0].at("kind").as_string(), "Pod");
  EXPECT_EQ(o.pods[0].at("metadata").at("namespace").as_string(), "x");
  EXPECT_EQ(o.pods[1].at("metadata").at("namespace").as_string(), "dflt");
  EXPECT_EQ(o.replicasets.size(), 1u);
  EXPECT_TRUE(o.deployments.empty());
}

}  // namespace
}  // namespace gpusched::addons::deletion_cost
