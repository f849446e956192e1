// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <string>
#include <string_view>

#include "src/api/decode.h"

namespace gpusched::api {
namespace {

boost::json::value Yaml(std::string_view text) {
  auto docs = ParseYamlDocuments(text, "t.yaml");
  EXPECT_TRUE(docs.ok()) << docs.status().ToString();
  return docs.ok() && !docs->empty() ? (*docs)[0] : boost::json::value();
}

TEST(DecodeLabelSelectorTest, AllOperatorsAndErrors) {
  auto sel = DecodeLabelSelector(Yaml(R"({matchLabels: {app: web}, matchExpressions: [
      {key: tier, operator: In, values: [a, b]}, {key: env, operator: NotIn, values: [dev]},
      {key: team, operator: Exists}, {key: legacy, operator: DoesNotExist}]})"));
  ASSERT_TRUE(sel.ok()) << sel.status().ToString();
  Labels l;
  l.Set("app", "web");
  l.Set("tier", "a");
  l.Set("team", "x");
  EXPECT_TRUE(sel->Matches(l));
  l.Set("legacy", "1");
  EXPECT_FALSE(sel->Matches(l));
  EXPECT_TRUE(DecodeLabelSelector(Yaml("{}"))->Matches(Labels()));  // empty: everything
  const auto no_values = DecodeLabelSelector(Yaml("{matchExpressions: [{key: a, operator: In}]}"));
  ASSERT_FALSE(no_values.ok());
  EXPECT_EQ(no_values.status().message(),
            "matchExpressions[0].values: must be non-empty for In and NotIn");
  const auto gt =
      DecodeLabelSelector(Yaml("{matchExpressions: [{key: a, operator: Gt, values: ['1']}]}"));
  ASSERT_FALSE(gt.ok());
  EXPECT_EQ(gt.status().message(),
            "matchExpressions[0].operator: invalid value \"Gt\" (want In, NotIn, Exists or "
            "DoesNotExist)");
  EXPECT_FALSE(DecodeLabelSelector(Yaml("[1]")).ok());
}

TEST(DecodeNodeAffinityTest, ReadsTermsAndNamesEveryErrorUnderItsPath) {
  auto a = DecodeNodeAffinity(Yaml(R"({
    requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [
      {matchExpressions: [{key: gpu, operator: In, values: [h100]}]}]},
    preferredDuringSchedulingIgnoredDuringExecution: [
      {weight: 20, preference: {matchExpressions: [{key: zone, operator: Exists}]}}]})"),
                              "addedAffinity");
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  ASSERT_TRUE(a->required.has_value());
  ASSERT_EQ(a->required->terms.size(), 1u);
  ASSERT_EQ(a->preferred.size(), 1u);
  EXPECT_EQ(a->preferred[0].weight, 20);
  const auto bad = DecodeNodeAffinity(Yaml(R"({
    requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [
      {matchExpressions: [{key: gpu, operator: Near, values: [h100]}]}]},
    preferredDuringSchedulingIgnoredDuringExecution: [{weight: 200, preference: {}}]})"),
                                      "addedAffinity");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]."
            "matchExpressions[0].operator: invalid value \"Near\" (want In, NotIn, Exists, "
            "DoesNotExist, Gt or Lt); addedAffinity."
            "preferredDuringSchedulingIgnoredDuringExecution[0].weight: value out of range "
            "[1, 100]");
}

TEST(DecodeWorkloadControllerTest, ReadsMetadataReplicasSelectorAndTheTemplatesRequests) {
  auto w = DecodeWorkloadController(Yaml(R"(
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: ml, uid: u1, annotations: {a: b}}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: a, resources: {requests: {cpu: 500m}, limits: {nvidia.com/gpu: 1}}}
      - {name: b, resources: {requests: {cpu: "1", memory: 1Gi}}}
)"));
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_EQ(w->kind, "Deployment");
  EXPECT_EQ(w->meta.namespace_, "ml");
  EXPECT_EQ(w->meta.uid, "u1");
  ASSERT_NE(w->meta.Annotation("a"), nullptr);
  EXPECT_EQ(w->replicas, 3);
  Labels l;
  l.Set("app", "web");
  EXPECT_TRUE(w->selector.Matches(l));
  EXPECT_EQ(w->pod_template.meta.labels, l);
  ASSERT_EQ(w->pod_template.containers.size(), 2u);
  EXPECT_EQ(w->pod_template.requests.milli_cpu, 1500);
  EXPECT_EQ(w->pod_template.requests.memory, int64_t{1} << 30);
  // A limit without a request is requested at the limit, as the API server defaults it.
  EXPECT_EQ(w->pod_template.containers[0].requests.Get(common::Intern("nvidia.com/gpu")), 1);
}

TEST(DecodeWorkloadControllerTest, DefaultsAndErrorsNameTheObjectAndField) {
  auto bare = DecodeWorkloadController(Yaml("{kind: ReplicaSet, metadata: {name: rs}}"));
  ASSERT_TRUE(bare.ok()) << bare.status().ToString();
  EXPECT_EQ(bare->meta.namespace_, "default");
  EXPECT_EQ(bare->replicas, std::nullopt);
  EXPECT_FALSE(bare->selector.Matches(Labels()));  // no selector: nothing
  struct Case {
    std::string name;
    std::string yaml;
    std::string error;
  };
  const Case cases[] = {
      {"a bad quantity in the template",
       "{kind: Deployment, metadata: {name: web, namespace: ml}, spec: {template: {spec: "
       "{containers: [{name: a, resources: {requests: {cpu: lots}}}]}}}}",
       "deployment ml/web: spec.template.spec.containers[0].resources.requests.cpu: invalid "
       "quantity \"lots\""},
      {"negative replicas", "{kind: Job, metadata: {name: j}, spec: {replicas: -1}}",
       "job default/j: spec.replicas: "},
      {"another kind", "{kind: ConfigMap, metadata: {name: c}}",
       "configmap c: kind: invalid value \"ConfigMap\" (want Deployment, ReplicaSet, "
       "StatefulSet, DaemonSet or Job)"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto w = DecodeWorkloadController(Yaml(c.yaml));
    ASSERT_FALSE(w.ok());
    EXPECT_EQ(w.status().message().substr(0, c.error.size()), c.error) << w.status().message();
  }
}

}  // namespace
}  // namespace gpusched::api
