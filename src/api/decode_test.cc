// SPDX-License-Identifier: Apache-2.0
#include "src/api/decode.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <chrono>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include "src/api/manifest.h"

namespace gpusched::api {
namespace {

using common::Intern;
using common::Str;
using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string ReadTestdata(const std::string& name) {
  std::ifstream in(std::string(GPUSCHED_API_TESTDATA_DIR) + "/" + name);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

boost::json::value Json(std::string_view text) {
  auto v = ParseJson(text, "test");
  EXPECT_TRUE(v.ok()) << v.status().ToString();
  return v.ok() ? *v : boost::json::value();
}

common::TimePoint Time(int64_t seconds, int64_t nanos = 0) {
  return common::TimePoint(std::chrono::seconds(seconds) + std::chrono::nanoseconds(nanos));
}

std::string LabelValue(const Labels& labels, std::string_view key) {
  Atom v;
  return labels.Get(Intern(key), &v) ? std::string(Str(v)) : std::string("<absent>");
}

TEST(DecodePodTest, DecodesARealisticApiServerPod) {
  auto pod_or = DecodePod(Json(ReadTestdata("pod_training.json")));
  ASSERT_TRUE(pod_or.ok()) << pod_or.status().ToString();
  const Pod& pod = *pod_or;

  EXPECT_EQ(pod.meta.name, "train-7d9f8c6b5-x2x9q");
  EXPECT_EQ(pod.meta.namespace_, "ml");
  EXPECT_EQ(pod.Key(), "ml/train-7d9f8c6b5-x2x9q");
  EXPECT_EQ(pod.meta.uid, "0d7f3c7e-9a1b-4b7e-8f0e-2a6c5d4e3f21");
  EXPECT_EQ(pod.meta.resource_version, "123456");
  EXPECT_EQ(LabelValue(pod.meta.labels, "app.kubernetes.io/name"), "train");
  EXPECT_EQ(pod.meta.labels.size(), 3u);
  ASSERT_EQ(pod.meta.annotations.size(), 3u);
  EXPECT_EQ(pod.meta.annotations[0].first, "gpu.nvidia.com/memory");
  ASSERT_NE(pod.meta.Annotation("kubectl.kubernetes.io/restartedAt"), nullptr);
  ASSERT_EQ(pod.meta.owner_references.size(), 1u);
  EXPECT_EQ(pod.meta.owner_references[0].kind, "ReplicaSet");
  EXPECT_EQ(pod.meta.owner_references[0].name, "train-7d9f8c6b5");
  EXPECT_EQ(pod.meta.owner_references[0].api_version, "apps/v1");
  EXPECT_TRUE(pod.meta.owner_references[0].controller);
  EXPECT_EQ(pod.meta.creation_timestamp, Time(1714564800));
  EXPECT_FALSE(pod.meta.deletion_timestamp.has_value());

  EXPECT_EQ(pod.node_name, "");
  EXPECT_EQ(Str(pod.scheduler_name), "gpu-scheduler");
  EXPECT_EQ(pod.priority, 1000);
  EXPECT_EQ(pod.priority_class_name, "research-high");
  EXPECT_EQ(LabelValue(pod.node_selector, "kubernetes.io/os"), "linux");

  // Node affinity: two ORed required terms and one preferred term.
  ASSERT_TRUE(pod.affinity.node_affinity.required.has_value());
  const NodeSelector& required = *pod.affinity.node_affinity.required;
  ASSERT_EQ(required.terms.size(), 2u);
  ASSERT_EQ(required.terms[0].match_expressions.size(), 2u);
  EXPECT_EQ(required.terms[0].match_expressions[0].op, SelectorOp::kGt);
  EXPECT_EQ(required.terms[0].match_expressions[0].number, 32768);
  EXPECT_EQ(required.terms[0].match_expressions[1].op, SelectorOp::kDoesNotExist);
  EXPECT_EQ(required.terms[1].match_fields_names_in, std::vector<std::string>{"gpu-node-7"});
  Labels big_gpu;
  big_gpu.Set("nvidia.com/gpu.memory", "40960");
  EXPECT_TRUE(required.Matches(big_gpu, "other-node"));
  EXPECT_TRUE(required.Matches(Labels{}, "gpu-node-7"));
  EXPECT_FALSE(required.Matches(Labels{}, "other-node"));
  ASSERT_EQ(pod.affinity.node_affinity.preferred.size(), 1u);
  EXPECT_EQ(pod.affinity.node_affinity.preferred[0].weight, 50);

  // Pod anti-affinity.
  EXPECT_TRUE(pod.affinity.pod_affinity.empty());
  const PodAffinity& anti = pod.affinity.pod_anti_affinity;
  ASSERT_EQ(anti.required.size(), 1u);
  EXPECT_EQ(Str(anti.required[0].topology_key), "topology.kubernetes.io/zone");
  EXPECT_TRUE(anti.required[0].namespace_selector.has_value());
  EXPECT_TRUE(anti.required[0].namespace_selector->empty());
  ASSERT_EQ(anti.required[0].label_selector.requirements.size(), 1u);
  EXPECT_EQ(anti.required[0].label_selector.requirements[0].op, SelectorOp::kNotIn);
  ASSERT_EQ(anti.preferred.size(), 1u);
  EXPECT_EQ(anti.preferred[0].weight, 100);
  EXPECT_EQ(Str(anti.preferred[0].term.topology_key), "kubernetes.io/hostname");
  EXPECT_TRUE(anti.preferred[0].term.label_selector.Matches(pod.meta.labels));

  // Tolerations, spread constraints, gates.
  ASSERT_EQ(pod.tolerations.size(), 3u);
  EXPECT_EQ(pod.tolerations[0].op, Toleration::Op::kExists);
  EXPECT_EQ(pod.tolerations[0].effect, TaintEffect::kNoExecute);
  EXPECT_EQ(pod.tolerations[0].toleration_seconds, 300);
  EXPECT_EQ(pod.tolerations[2].op, Toleration::Op::kEqual);
  EXPECT_EQ(Str(pod.tolerations[2].value), "present");
  EXPECT_FALSE(pod.tolerations[2].toleration_seconds.has_value());
  ASSERT_EQ(pod.topology_spread_constraints.size(), 1u);
  const TopologySpreadConstraint& spread = pod.topology_spread_constraints[0];
  EXPECT_EQ(spread.max_skew, 2);
  EXPECT_EQ(spread.min_domains, 3);
  EXPECT_EQ(spread.when_unsatisfiable,
            TopologySpreadConstraint::WhenUnsatisfiable::kScheduleAnyway);
  EXPECT_TRUE(spread.label_selector.Matches(pod.meta.labels));
  EXPECT_EQ(pod.scheduling_gates, std::vector<std::string>{"example.com/quota"});

  // Containers: the logger has limits only, so its requests default to its limits.
  ASSERT_EQ(pod.containers.size(), 2u);
  EXPECT_EQ(pod.containers[0].requests.milli_cpu, 4000);
  EXPECT_EQ(pod.containers[0].limits.milli_cpu, 8000);
  EXPECT_EQ(pod.containers[1].requests.milli_cpu, 100);
  EXPECT_EQ(pod.containers[1].requests.memory, 128 << 20);
  ASSERT_EQ(pod.init_containers.size(), 2u);
  EXPECT_FALSE(pod.init_containers[0].restartable);
  EXPECT_TRUE(pod.init_containers[1].restartable);
  EXPECT_TRUE(pod.has_restartable_init_containers);
  EXPECT_EQ(pod.overhead.milli_cpu, 250);

  // Effective requests: max(4100m + 500m sidecar, 16 init) + 250m overhead; memory likewise.
  EXPECT_EQ(pod.requests.milli_cpu, 16250);
  EXPECT_EQ(pod.requests.memory, (64LL << 30) + (128LL << 20) + (256LL << 20) + (120LL << 20));
  EXPECT_EQ(pod.requests.Get(Names().nvidia_gpu), 2);
  EXPECT_EQ(pod.requests.pods, 1);

  // GPU request.
  EXPECT_EQ(pod.gpu_error, "");
  EXPECT_EQ(pod.gpu.count, 2);
  EXPECT_EQ(pod.gpu.milli, kMilliPerGpu);
  EXPECT_EQ(pod.gpu.min_device_memory_mib, 40960);
  ASSERT_EQ(pod.gpu.models.size(), 2u);
  EXPECT_EQ(Str(pod.gpu.models[0]), "A100");
  EXPECT_EQ(Str(pod.gpu.models[1]), "H100-80GB-HBM3");

  // Status.
  EXPECT_EQ(pod.phase, PodPhase::kPending);
  EXPECT_EQ(pod.nominated_node_name, "gpu-node-3");
  ASSERT_EQ(pod.conditions.size(), 1u);
  EXPECT_EQ(pod.conditions[0].type, "PodScheduled");
  EXPECT_EQ(pod.conditions[0].status, "False");
  EXPECT_EQ(pod.conditions[0].reason, "Unschedulable");
  EXPECT_EQ(pod.conditions[0].last_transition_time, Time(1714557601, 500000000));
}

TEST(DecodeNodeTest, DecodesANodeWithGfdLabels) {
  auto node_or = DecodeNode(Json(ReadTestdata("node_gfd.json")));
  ASSERT_TRUE(node_or.ok()) << node_or.status().ToString();
  const Node& node = *node_or;
  EXPECT_EQ(node.meta.name, "gpu-node-7");
  EXPECT_EQ(LabelValue(node.meta.labels, "topology.kubernetes.io/zone"), "us-east-1a");
  EXPECT_FALSE(node.unschedulable);
  ASSERT_EQ(node.taints.size(), 2u);
  EXPECT_EQ(Str(node.taints[0].key), "nvidia.com/gpu");
  EXPECT_EQ(Str(node.taints[0].value), "present");
  EXPECT_EQ(node.taints[0].effect, TaintEffect::kNoSchedule);
  EXPECT_EQ(node.taints[1].effect, TaintEffect::kNoExecute);
  EXPECT_TRUE(node.taints[1].value.empty());

  EXPECT_EQ(node.allocatable.milli_cpu, 95690);
  EXPECT_EQ(node.allocatable.memory, 1157123227648);
  EXPECT_EQ(node.allocatable.ephemeral_storage, 96143180846);
  EXPECT_EQ(node.allocatable.pods, 110);
  EXPECT_EQ(node.allocatable.Get(Names().nvidia_gpu), 8);
  EXPECT_EQ(node.allocatable.Get(Intern("hugepages-2Mi")), 21 << 20);
  EXPECT_EQ(node.allocatable.Get(Intern("hugepages-1Gi")), 0);
  EXPECT_EQ(node.capacity.milli_cpu, 96000);
  EXPECT_EQ(node.capacity.memory, 1171589386240);
  ASSERT_EQ(node.conditions.size(), 1u);
  EXPECT_EQ(node.conditions[0].type, "Ready");
  EXPECT_EQ(node.conditions[0].status, "True");

  EXPECT_EQ(node.gpu_error, "");
  EXPECT_EQ(node.gpu.count, 8);
  EXPECT_EQ(Str(node.gpu.model), "A100-SXM4-40GB");
  EXPECT_EQ(Str(node.gpu.model_family), "A100");
  EXPECT_EQ(node.gpu.memory_mib, 40960);
  EXPECT_EQ(node.gpu.source, "model=gfd count=gfd memory=gfd");
  EXPECT_EQ(node.gpu.unhealthy_mask, 1u << 5);
  EXPECT_FALSE(node.gpu.Healthy(5));
  EXPECT_EQ(node.gpu.island[3], 0);
  EXPECT_EQ(node.gpu.island[4], 1);
}

TEST(DecodePodTest, AppliesDefaults) {
  struct Case {
    std::string name;
    std::string json;
    std::string ns;
    std::string scheduler;
    int64_t cpu_request;
    int64_t gpu_request;
  };
  const std::vector<Case> cases = {
      {"a missing namespace and scheduler take their defaults",
       R"({"metadata":{"name":"p"},"spec":{"containers":[{"name":"c"}]}})", "default",
       "default-scheduler", 0, 0},
      {"a limit without a request is requested at the limit",
       R"({"metadata":{"name":"p","namespace":"n"},"spec":{"containers":[{"name":"c",
          "resources":{"limits":{"cpu":"2","nvidia.com/gpu":"1"}}}]}})",
       "n", "default-scheduler", 2000, 1},
      {"an explicit request is not overridden by the limit",
       R"({"metadata":{"name":"p"},"spec":{"containers":[{"name":"c",
          "resources":{"requests":{"cpu":"500m"},"limits":{"cpu":"2"}}}]}})",
       "default", "default-scheduler", 500, 0},
      {"an explicit zero request stays zero",
       R"({"metadata":{"name":"p"},"spec":{"containers":[{"name":"c",
          "resources":{"requests":{"cpu":"0"},"limits":{"cpu":"2"}}}]}})",
       "default", "default-scheduler", 0, 0},
      {"numbers are accepted as quantities",
       R"({"metadata":{"name":"p"},"spec":{"schedulerName":"s","containers":[{"name":"c",
          "resources":{"requests":{"cpu":1.5,"nvidia.com/gpu":2}}}]}})",
       "default", "s", 1500, 2},
      {"nulls are treated as absent",
       R"({"metadata":{"name":"p","labels":null,"creationTimestamp":null},"spec":{"nodeSelector":
          null,"affinity":null,"containers":[{"name":"c","resources":{"limits":null}}]},
          "status":null})",
       "default", "default-scheduler", 0, 0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto pod = DecodePod(Json(c.json));
    ASSERT_TRUE(pod.ok()) << pod.status().ToString();
    EXPECT_EQ(pod->meta.namespace_, c.ns);
    EXPECT_EQ(Str(pod->scheduler_name), c.scheduler);
    EXPECT_EQ(pod->requests.milli_cpu, c.cpu_request);
    EXPECT_EQ(pod->requests.Get(Names().nvidia_gpu), c.gpu_request);
    EXPECT_EQ(pod->requests.pods, 1);
  }
}

TEST(DecodePodTest, ParsesRfc3339Timestamps) {
  struct Case {
    std::string name;
    std::string text;
    common::TimePoint want;
  };
  const std::vector<Case> cases = {
      {"UTC with Z", "2024-05-01T12:00:00Z", Time(1714564800)},
      {"a fraction of a second", "2024-05-01T12:00:00.123456789Z", Time(1714564800, 123456789)},
      {"digits beyond nanoseconds are dropped", "2024-05-01T12:00:00.1234567891Z",
       Time(1714564800, 123456789)},
      {"a positive offset is subtracted", "2024-05-01T14:00:00+02:00", Time(1714564800)},
      {"a negative offset is added", "2024-05-01T07:30:00-04:30", Time(1714564800)},
      {"the epoch is zero", "1970-01-01T00:00:00Z", Time(0)},
      {"a leap day is valid", "2024-02-29T00:00:00Z", Time(1709164800)},
      {"lower-case separators are accepted", "2024-05-01t12:00:00z", Time(1714564800)},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto pod =
        DecodePod(Json(R"({"metadata":{"name":"p","creationTimestamp":")" + c.text + R"("}})"));
    ASSERT_TRUE(pod.ok()) << pod.status().ToString();
    EXPECT_EQ(pod->meta.creation_timestamp, c.want);
  }
}

// Wraps a pod spec into a pod named ns/p.
std::string PodWithSpec(const std::string& spec) {
  return R"({"kind":"Pod","metadata":{"name":"p","namespace":"ns"},"spec":)" + spec + "}";
}

std::string PodWithContainer(const std::string& container) {
  return PodWithSpec(R"({"containers":[)" + container + "]}");
}

std::string PodWithAffinity(const std::string& affinity) {
  return PodWithSpec(R"({"affinity":)" + affinity + "}");
}

std::string RequiredNodeTerm(const std::string& term) {
  return PodWithAffinity(
      R"({"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[)" +
      term + "]}}}");
}

TEST(DecodePodTest, ReportsEveryErrorWithObjectAndPath) {
  struct Case {
    std::string name;
    std::string json;
    std::string error;
  };
  const std::vector<Case> cases = {
      // Object shape and metadata.
      {"a non-object pod is rejected", "[1]", "pod: expected object, got array"},
      {"a different kind is rejected", R"({"kind":"Node","metadata":{"name":"p"}})",
       "pod default/p: kind: invalid value \"Node\" (want Pod)"},
      {"metadata must be an object", R"({"metadata":"p"})",
       "pod (no name): metadata: expected object, got string"},
      {"the name must be a string", R"({"metadata":{"name":7}})",
       "pod (no name): metadata.name: expected string, got number"},
      {"label values must be strings", R"({"metadata":{"name":"p","labels":{"tier":1}}})",
       "pod default/p: metadata.labels.tier: expected string, got number"},
      {"label keys with dots are bracketed in the path",
       R"({"metadata":{"name":"p","labels":{"app.kubernetes.io/name":true}}})",
       "metadata.labels[app.kubernetes.io/name]: expected string, got bool"},
      {"annotations must be an object", R"({"metadata":{"name":"p","annotations":[]}})",
       "metadata.annotations: expected object, got array"},
      {"owner references must be an array", R"({"metadata":{"name":"p","ownerReferences":{}}})",
       "metadata.ownerReferences: expected array, got object"},
      {"each owner reference must be an object",
       R"({"metadata":{"name":"p","ownerReferences":["x"]}})",
       "metadata.ownerReferences[0]: expected object, got string"},
      {"controller must be a bool",
       R"({"metadata":{"name":"p","ownerReferences":[{"controller":"yes"}]}})",
       "metadata.ownerReferences[0].controller: expected bool, got string"},
      {"a malformed creation timestamp is rejected",
       R"({"metadata":{"name":"p","creationTimestamp":"yesterday"}})",
       "metadata.creationTimestamp: invalid value \"yesterday\" (want RFC 3339 time, e.g. "
       "2024-05-01T12:00:00Z)"},
      {"an impossible date is rejected",
       R"({"metadata":{"name":"p","deletionTimestamp":"2023-02-29T00:00:00Z"}})",
       "metadata.deletionTimestamp: invalid value \"2023-02-29T00:00:00Z\""},
      {"a timestamp without a zone is rejected",
       R"({"metadata":{"name":"p","creationTimestamp":"2024-05-01T12:00:00"}})",
       "metadata.creationTimestamp: invalid value"},
      {"a timestamp beyond the nanosecond range is rejected",
       R"({"metadata":{"name":"p","creationTimestamp":"9999-12-31T23:59:59Z"}})",
       "metadata.creationTimestamp: invalid value"},
      // Spec scalars.
      {"spec must be an object", R"({"metadata":{"name":"p","namespace":"ns"},"spec":1})",
       "pod ns/p: spec: expected object, got number"},
      {"nodeName must be a string", PodWithSpec(R"({"nodeName":1})"),
       "pod ns/p: spec.nodeName: expected string, got number"},
      {"priority must be an integer", PodWithSpec(R"({"priority":"high"})"),
       "spec.priority: expected integer, got string"},
      {"a fractional priority is rejected", PodWithSpec(R"({"priority":1.5})"),
       "spec.priority: expected integer, got number"},
      {"priority must fit in int32", PodWithSpec(R"({"priority":3000000000})"),
       "spec.priority: value out of range [-2147483648, 2147483647]"},
      {"node selector values must be strings", PodWithSpec(R"({"nodeSelector":{"a":["b"]}})"),
       "spec.nodeSelector.a: expected string, got array"},
      {"scheduling gates need a name", PodWithSpec(R"({"schedulingGates":[{}]})"),
       "spec.schedulingGates[0].name: required"},
      // Affinity.
      {"affinity must be an object", PodWithSpec(R"({"affinity":[]})"),
       "spec.affinity: expected object, got array"},
      {"node selector terms must be an array",
       PodWithAffinity(R"({"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":
          {"nodeSelectorTerms":{}}}})"),
       "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution."
       "nodeSelectorTerms: expected array, got object"},
      {"an unknown operator is rejected",
       RequiredNodeTerm(R"({"matchExpressions":[{"key":"k","operator":"Near"}]})"),
       "nodeSelectorTerms[0].matchExpressions[0].operator: invalid value \"Near\" (want In, NotIn, "
       "Exists, DoesNotExist, Gt or Lt)"},
      {"a requirement needs a key",
       RequiredNodeTerm(R"({"matchExpressions":[{"operator":"Exists"}]})"),
       "matchExpressions[0].key: required"},
      {"In needs values",
       RequiredNodeTerm(R"({"matchExpressions":[{"key":"k","operator":"In","values":[]}]})"),
       "matchExpressions[0].values: must be non-empty for In and NotIn"},
      {"Exists takes no values",
       RequiredNodeTerm(R"({"matchExpressions":[{"key":"k","operator":"Exists","values":["x"]}]})"),
       "matchExpressions[0].values: must be empty for Exists and DoesNotExist"},
      {"Gt takes exactly one value",
       RequiredNodeTerm(R"({"matchExpressions":[{"key":"k","operator":"Gt","values":["1","2"]}]})"),
       "matchExpressions[0].values: must hold exactly one integer for Gt and Lt"},
      {"Gt needs an integer",
       RequiredNodeTerm(R"({"matchExpressions":[{"key":"k","operator":"Lt","values":["ten"]}]})"),
       "matchExpressions[0].values[0]: invalid value \"ten\" (want an integer)"},
      {"values must be strings",
       RequiredNodeTerm(R"({"matchExpressions":[{"key":"k","operator":"In","values":[1]}]})"),
       "matchExpressions[0].values[0]: expected string, got number"},
      {"match fields support only metadata.name",
       RequiredNodeTerm(
           R"({"matchFields":[{"key":"spec.nodeName","operator":"In","values":["a"]}]})"),
       "matchFields[0].key: invalid value \"spec.nodeName\" (want metadata.name)"},
      {"match fields support only In and NotIn",
       RequiredNodeTerm(R"({"matchFields":[{"key":"metadata.name","operator":"Exists"}]})"),
       "matchFields[0].operator: invalid value \"Exists\" (want In or NotIn)"},
      {"match fields need values",
       RequiredNodeTerm(R"({"matchFields":[{"key":"metadata.name","operator":"In"}]})"),
       "matchFields[0].values: must be non-empty"},
      {"a term must be an object", RequiredNodeTerm(R"("zone")"),
       "nodeSelectorTerms[0]: expected object, got string"},
      {"a preferred weight must be 1..100",
       PodWithAffinity(R"({"nodeAffinity":{"preferredDuringSchedulingIgnoredDuringExecution":
          [{"weight":0,"preference":{}}]}})"),
       "preferredDuringSchedulingIgnoredDuringExecution[0].weight: value out of range [1, 100]"},
      {"a preference must be an object",
       PodWithAffinity(R"({"nodeAffinity":{"preferredDuringSchedulingIgnoredDuringExecution":
          [{"weight":1,"preference":"x"}]}})"),
       "preferredDuringSchedulingIgnoredDuringExecution[0].preference: expected object, got "
       "string"},
      {"a pod affinity term needs a topology key",
       PodWithAffinity(R"({"podAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":
          [{"labelSelector":{}}]}})"),
       "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: "
       "required"},
      {"label selectors do not allow Gt",
       PodWithAffinity(R"({"podAntiAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":
          [{"labelSelector":{"matchExpressions":[{"key":"a","operator":"Gt","values":["1"]}]},
          "topologyKey":"t"}]}})"),
       "labelSelector.matchExpressions[0].operator: invalid value \"Gt\" (want In, NotIn, Exists "
       "or DoesNotExist)"},
      {"match labels must be strings",
       PodWithAffinity(R"({"podAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":
          [{"labelSelector":{"matchLabels":{"a":1}},"topologyKey":"t"}]}})"),
       "labelSelector.matchLabels.a: expected string, got number"},
      {"namespaces must be strings",
       PodWithAffinity(R"({"podAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":
          [{"namespaces":[null],"topologyKey":"t"}]}})"),
       "requiredDuringSchedulingIgnoredDuringExecution[0].namespaces[0]: expected string, got "
       "null"},
      {"a weighted term needs its podAffinityTerm",
       PodWithAffinity(R"({"podAntiAffinity":{"preferredDuringSchedulingIgnoredDuringExecution":
          [{"weight":10}]}})"),
       "preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm: required"},
      // Tolerations and spread constraints.
      {"tolerations must be an array", PodWithSpec(R"({"tolerations":{}})"),
       "spec.tolerations: expected array, got object"},
      {"a toleration operator must be Equal or Exists",
       PodWithSpec(R"({"tolerations":[{"key":"k","operator":"Maybe"}]})"),
       "spec.tolerations[0].operator: invalid value \"Maybe\" (want Equal or Exists)"},
      {"a toleration effect must be known",
       PodWithSpec(R"({"tolerations":[{"key":"k","effect":"NoWay"}]})"),
       "spec.tolerations[0].effect: invalid value \"NoWay\" (want empty, NoSchedule, "
       "PreferNoSchedule or NoExecute)"},
      {"tolerationSeconds must be an integer",
       PodWithSpec(R"({"tolerations":[{"key":"k","tolerationSeconds":"300"}]})"),
       "spec.tolerations[0].tolerationSeconds: expected integer, got string"},
      {"maxSkew must be positive",
       PodWithSpec(R"({"topologySpreadConstraints":[{"maxSkew":0,"topologyKey":"z"}]})"),
       "spec.topologySpreadConstraints[0].maxSkew: value out of range [1, 2147483647]"},
      {"a spread constraint needs a topology key",
       PodWithSpec(R"({"topologySpreadConstraints":[{"maxSkew":1}]})"),
       "spec.topologySpreadConstraints[0].topologyKey: required"},
      {"whenUnsatisfiable must be known",
       PodWithSpec(R"({"topologySpreadConstraints":[{"maxSkew":1,"topologyKey":"z",
          "whenUnsatisfiable":"Never"}]})"),
       "whenUnsatisfiable: invalid value \"Never\" (want DoNotSchedule or ScheduleAnyway)"},
      {"minDomains must be positive",
       PodWithSpec(R"({"topologySpreadConstraints":[{"maxSkew":1,"topologyKey":"z",
          "minDomains":0}]})"),
       "spec.topologySpreadConstraints[0].minDomains: value out of range"},
      {"a hostPort must be a port number",
       PodWithContainer(R"({"name":"c","ports":[{"containerPort":80,"hostPort":70000}]})"),
       "spec.containers[0].ports[0].hostPort: value out of range [0, 65535]"},
      {"a containerPort must be a number",
       PodWithContainer(R"({"name":"c","ports":[{"containerPort":"http","hostPort":80}]})"),
       "spec.containers[0].ports[0].containerPort: expected"},
      {"a port's protocol must be TCP, UDP or SCTP",
       PodWithContainer(R"({"name":"c","ports":[{"containerPort":80,"protocol":"tcp"}]})"),
       "spec.containers[0].ports[0].protocol: invalid value \"tcp\" (want TCP, UDP or SCTP)"},
      {"a hostIP must be an address",
       PodWithSpec(R"({"initContainers":[{"name":"s","restartPolicy":"Always",
          "ports":[{"containerPort":80,"hostPort":80,"hostIP":"localhost"}]}]})"),
       "spec.initContainers[0].ports[0].hostIP: invalid value \"localhost\" (want an IPv4 or "
       "IPv6 address)"},
      {"ports must be an array", PodWithContainer(R"({"name":"c","ports":{"hostPort":80}})"),
       "spec.containers[0].ports: expected array, got object"},
      {"an image must be a string", PodWithContainer(R"({"name":"c","image":["nginx"]})"),
       "spec.containers[0].image: expected string, got array"},
      {"nodeAffinityPolicy must be Honor or Ignore",
       PodWithSpec(R"({"topologySpreadConstraints":[{"maxSkew":1,"topologyKey":"z",
          "nodeAffinityPolicy":"Sometimes"}]})"),
       "spec.topologySpreadConstraints[0].nodeAffinityPolicy: invalid value \"Sometimes\" "
       "(want Honor or Ignore)"},
      {"nodeTaintsPolicy must be Honor or Ignore",
       PodWithSpec(R"({"topologySpreadConstraints":[{"maxSkew":1,"topologyKey":"z",
          "nodeTaintsPolicy":"honor"}]})"),
       "spec.topologySpreadConstraints[0].nodeTaintsPolicy: invalid value \"honor\""},
      {"spread matchLabelKeys must be strings",
       PodWithSpec(R"({"topologySpreadConstraints":[{"maxSkew":1,"topologyKey":"z",
          "matchLabelKeys":[3]}]})"),
       "spec.topologySpreadConstraints[0].matchLabelKeys[0]: expected string, got"},
      {"affinity matchLabelKeys must not be empty",
       PodWithAffinity(R"({"podAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[
          {"labelSelector":{},"topologyKey":"t","matchLabelKeys":[""]}]}})"),
       "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]."
       "matchLabelKeys[0]: must be a non-empty label key"},
      {"affinity mismatchLabelKeys must be an array",
       PodWithAffinity(R"({"podAntiAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[
          {"labelSelector":{},"topologyKey":"t","mismatchLabelKeys":"tenant"}]}})"),
       "requiredDuringSchedulingIgnoredDuringExecution[0].mismatchLabelKeys: expected array"},
      // Containers and quantities.
      {"containers must be an array", PodWithSpec(R"({"containers":{}})"),
       "spec.containers: expected array, got object"},
      {"a container must be an object", PodWithSpec(R"({"containers":[null]})"),
       "spec.containers[0]: expected object, got null"},
      {"resources must be an object", PodWithContainer(R"({"name":"c","resources":"big"})"),
       "spec.containers[0].resources: expected object, got string"},
      {"requests must be an object",
       PodWithContainer(R"({"name":"c","resources":{"requests":["1"]}})"),
       "spec.containers[0].resources.requests: expected object, got array"},
      {"a malformed cpu limit names the object, path and value",
       PodWithContainer(R"({"name":"c","resources":{"limits":{"cpu":"1.2.3"}}})"),
       "pod ns/p: spec.containers[0].resources.limits.cpu: invalid quantity \"1.2.3\": unknown "
       "suffix \".3\""},
      {"a malformed extended resource is bracketed in the path",
       PodWithContainer(R"({"name":"c","resources":{"limits":{"nvidia.com/gpu":"two"}}})"),
       "pod ns/p: spec.containers[0].resources.limits[nvidia.com/gpu]: invalid quantity \"two\""},
      {"a quantity must be a string or number",
       PodWithContainer(R"({"name":"c","resources":{"requests":{"memory":true}}})"),
       "spec.containers[0].resources.requests.memory: expected quantity string, got bool"},
      {"a malformed init container quantity names its path",
       PodWithSpec(
           R"({"initContainers":[{"name":"i","resources":{"requests":{"memory":"1gi"}}}]})"),
       "spec.initContainers[0].resources.requests.memory: invalid quantity \"1gi\""},
      {"an init container restart policy must be Always",
       PodWithSpec(R"({"initContainers":[{"name":"i","restartPolicy":"Never"}]})"),
       "spec.initContainers[0].restartPolicy: invalid value \"Never\" (want Always or unset)"},
      {"a malformed overhead is rejected", PodWithSpec(R"({"overhead":{"cpu":"lots"}})"),
       "spec.overhead.cpu: invalid quantity \"lots\""},
      // Status.
      {"status must be an object", R"({"metadata":{"name":"p"},"status":"Running"})",
       "pod default/p: status: expected object, got string"},
      {"phase must be a string", R"({"metadata":{"name":"p"},"status":{"phase":1}})",
       "status.phase: expected string, got number"},
      {"conditions must be objects", R"({"metadata":{"name":"p"},"status":{"conditions":[1]}})",
       "status.conditions[0]: expected object, got number"},
      {"a condition time must be RFC 3339",
       R"({"metadata":{"name":"p"},"status":{"conditions":[{"lastTransitionTime":"now"}]}})",
       "status.conditions[0].lastTransitionTime: invalid value \"now\""},
      {"nominatedNodeName must be a string",
       R"({"metadata":{"name":"p"},"status":{"nominatedNodeName":false}})",
       "status.nominatedNodeName: expected string, got bool"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto pod = DecodePod(Json(c.json));
    ASSERT_FALSE(pod.ok());
    EXPECT_EQ(pod.status().code(), common::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(pod.status().message()), HasSubstr(c.error));
  }
}

TEST(DecodePodTest, PodErrorsListsEveryErrorAndDecodePodReportsTheFirst) {
  const boost::json::value pod = Json(PodWithSpec(
      R"({"priority":"high","tolerations":[{"operator":"Maybe"},7],
          "containers":[{"name":"c","resources":{"limits":{"nvidia.com/gpu":"two","cpu":[]}}}]})"));
  const std::vector<std::string> want = {
      "pod ns/p: spec.priority: expected integer, got string",
      "pod ns/p: spec.tolerations[0].operator: invalid value \"Maybe\" (want Equal or Exists)",
      "pod ns/p: spec.tolerations[1]: expected object, got number",
      "pod ns/p: spec.containers[0].resources.limits[nvidia.com/gpu]: invalid quantity \"two\": "
      "no digits",
      "pod ns/p: spec.containers[0].resources.limits.cpu: expected quantity string, got array",
  };
  EXPECT_EQ(PodErrors(pod), want);
  auto decoded = DecodePod(pod);
  ASSERT_FALSE(decoded.ok());
  EXPECT_EQ(decoded.status().message(), want[0]);
  EXPECT_TRUE(PodErrors(Json(PodWithSpec("{}"))).empty());
  EXPECT_EQ(PodErrors(Json("[1]")), std::vector<std::string>{"pod: expected object, got array"});
}

TEST(DecodeNodeTest, NodeErrorsListsEveryError) {
  const boost::json::value node = Json(
      R"({"metadata":{"name":"n1"},"spec":{"taints":[{"effect":"NoSchedule"}]},
          "status":{"allocatable":{"memory":"lots"}}})");
  const std::vector<std::string> want = {
      "node n1: spec.taints[0].key: required",
      "node n1: status.allocatable.memory: invalid quantity \"lots\": no digits",
  };
  EXPECT_EQ(NodeErrors(node), want);
  EXPECT_EQ(DecodeNode(node).status().message(), want[0]);
}

TEST(DecodePodTest, NullSelectorsMatchNothingAndEmptyOnesMatchEverything) {
  auto pod = DecodePod(Json(PodWithAffinity(
      R"({"podAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[
          {"topologyKey":"t"},{"labelSelector":{},"topologyKey":"t"}]}})")));
  ASSERT_TRUE(pod.ok()) << pod.status().ToString();
  Labels labels;
  labels.Set("app", "x");
  ASSERT_EQ(pod->affinity.pod_affinity.required.size(), 2u);
  EXPECT_FALSE(pod->affinity.pod_affinity.required[0].label_selector.Matches(labels));
  EXPECT_TRUE(pod->affinity.pod_affinity.required[1].label_selector.Matches(labels));
}

TEST(DecodePodTest, SpreadPoliciesAndMatchLabelKeysMergeIntoSelectors) {
  auto pod = DecodePod(Json(
      R"({"kind":"Pod","metadata":{"name":"p","namespace":"ns",
          "labels":{"app":"web","pod-template-hash":"abc","tenant":"t1"}},
        "spec":{"topologySpreadConstraints":[
          {"maxSkew":1,"topologyKey":"zone","labelSelector":{"matchLabels":{"app":"web"}},
           "matchLabelKeys":["pod-template-hash","absent"],
           "nodeAffinityPolicy":"Ignore","nodeTaintsPolicy":"Honor"},
          {"maxSkew":1,"topologyKey":"host","labelSelector":{}}],
        "affinity":{"podAntiAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[
          {"labelSelector":{"matchLabels":{"app":"web"}},"topologyKey":"host",
           "matchLabelKeys":["pod-template-hash"],"mismatchLabelKeys":["tenant"]}]}}}})"));
  ASSERT_TRUE(pod.ok()) << pod.status().ToString();
  using Policy = TopologySpreadConstraint::NodeInclusionPolicy;
  ASSERT_EQ(pod->topology_spread_constraints.size(), 2u);
  const TopologySpreadConstraint& zone = pod->topology_spread_constraints[0];
  EXPECT_EQ(zone.node_affinity_policy, Policy::kIgnore);
  EXPECT_EQ(zone.node_taints_policy, Policy::kHonor);
  ASSERT_EQ(zone.match_label_keys.size(), 2u);
  // app In (web), plus pod-template-hash In (abc); the absent key adds nothing.
  EXPECT_EQ(zone.label_selector.requirements.size(), 2u);
  Labels same_rs;
  same_rs.Set("app", "web");
  same_rs.Set("pod-template-hash", "abc");
  Labels other_rs;
  other_rs.Set("app", "web");
  other_rs.Set("pod-template-hash", "def");
  EXPECT_TRUE(zone.label_selector.Matches(same_rs));
  EXPECT_FALSE(zone.label_selector.Matches(other_rs));
  // Defaults: nodeAffinityPolicy Honor, nodeTaintsPolicy Ignore.
  EXPECT_EQ(pod->topology_spread_constraints[1].node_affinity_policy, Policy::kHonor);
  EXPECT_EQ(pod->topology_spread_constraints[1].node_taints_policy, Policy::kIgnore);

  const PodAffinityTerm& anti = pod->affinity.pod_anti_affinity.required[0];
  ASSERT_EQ(anti.mismatch_label_keys.size(), 1u);
  Labels same_tenant = same_rs;
  same_tenant.Set("tenant", "t1");
  Labels other_tenant = same_rs;
  other_tenant.Set("tenant", "t2");
  EXPECT_FALSE(anti.label_selector.Matches(same_tenant));
  EXPECT_TRUE(anti.label_selector.Matches(other_tenant));
}

TEST(DecodeNodeTest, ReportsEveryErrorWithObjectAndPath) {
  struct Case {
    std::string name;
    std::string json;
    std::string error;
  };
  const std::vector<Case> cases = {
      {"a non-object node is rejected", "\"n1\"", "node: expected object, got string"},
      {"a different kind is rejected", R"({"kind":"Pod","metadata":{"name":"n1"}})",
       "node n1: kind: invalid value \"Pod\" (want Node)"},
      {"unschedulable must be a bool", R"({"metadata":{"name":"n1"},"spec":{"unschedulable":1}})",
       "node n1: spec.unschedulable: expected bool, got number"},
      {"taints must be an array", R"({"metadata":{"name":"n1"},"spec":{"taints":{}}})",
       "node n1: spec.taints: expected array, got object"},
      {"a taint needs a key",
       R"({"metadata":{"name":"n1"},"spec":{"taints":[{"effect":"NoSchedule"}]}})",
       "node n1: spec.taints[0].key: required"},
      {"a taint needs an effect", R"({"metadata":{"name":"n1"},"spec":{"taints":[{"key":"k"}]}})",
       "node n1: spec.taints[0].effect: invalid value \"\" (want NoSchedule, PreferNoSchedule or "
       "NoExecute)"},
      {"a malformed capacity names the path",
       R"({"metadata":{"name":"n1"},"status":{"capacity":{"memory":"lots"}}})",
       "node n1: status.capacity.memory: invalid quantity \"lots\""},
      {"allocatable must be an object",
       R"({"metadata":{"name":"n1"},"status":{"allocatable":"8"}})",
       "node n1: status.allocatable: expected object, got string"},
      {"a malformed allocatable GPU count names the path",
       R"({"metadata":{"name":"n1"},"status":{"allocatable":{"nvidia.com/gpu":"8x"}}})",
       "node n1: status.allocatable[nvidia.com/gpu]: invalid quantity \"8x\""},
      {"conditions must be an array",
       R"({"metadata":{"name":"n1"},"status":{"conditions":{"type":"Ready"}}})",
       "node n1: status.conditions: expected array, got object"},
      {"labels must be an object", R"({"metadata":{"name":"n1","labels":"gpu"}})",
       "node n1: metadata.labels: expected object, got string"},
      {"images must be an array", R"({"metadata":{"name":"n1"},"status":{"images":{}}})",
       "node n1: status.images: expected array, got object"},
      {"image names must be strings",
       R"({"metadata":{"name":"n1"},"status":{"images":[{"names":["a",1]}]}})",
       "node n1: status.images[0].names[1]: expected string, got number"},
      {"an image size must not be negative",
       R"({"metadata":{"name":"n1"},"status":{"images":[{"names":["a"],"sizeBytes":-1}]}})",
       "node n1: status.images[0].sizeBytes: value out of range"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto node = DecodeNode(Json(c.json));
    ASSERT_FALSE(node.ok());
    EXPECT_THAT(std::string(node.status().message()), HasSubstr(c.error));
  }
}

TEST(DecodePodTest, KeepsImagesAndOnlyThePortsWithAHostPort) {
  auto pod = DecodePod(Json(PodWithSpec(R"({
      "initContainers":[
        {"name":"init","image":"busybox","ports":[{"containerPort":1,"hostPort":1}]},
        {"name":"sidecar","restartPolicy":"Always","image":"envoy:1",
         "ports":[{"containerPort":9901,"hostPort":9901,"protocol":"UDP","hostIP":"10.0.0.1"}]}],
      "containers":[{"name":"web","image":"gcr.io/x/web:v2","ports":[
        {"containerPort":8080},
        {"containerPort":80,"hostPort":8000},
        {"containerPort":443,"hostPort":8443,"protocol":"SCTP","hostIP":"::1"}]}]})")));
  ASSERT_TRUE(pod.ok()) << pod.status().message();
  ASSERT_EQ(pod->containers.size(), 1u);
  const Container& web = pod->containers[0];
  EXPECT_EQ(web.image, "gcr.io/x/web:v2");
  ASSERT_EQ(web.ports.size(), 2u);
  EXPECT_EQ(web.ports[0], (ContainerPort{8000, 80, Intern("TCP"), ""}));
  EXPECT_EQ(web.ports[1], (ContainerPort{8443, 443, Intern("SCTP"), "::1"}));
  ASSERT_EQ(pod->init_containers.size(), 2u);
  EXPECT_EQ(pod->init_containers[0].image, "busybox");
  EXPECT_EQ(pod->init_containers[0].ports.size(), 1u);  // kept; NodePorts skips non-sidecars
  EXPECT_EQ(pod->init_containers[1].ports[0],
            (ContainerPort{9901, 9901, Intern("UDP"), "10.0.0.1"}));
}

TEST(DecodeNodeTest, DecodesStatusImages) {
  auto node = DecodeNode(Json(R"({"metadata":{"name":"n1"},"status":{"images":[
      {"names":["registry.k8s.io/pause@sha256:abc","registry.k8s.io/pause:3.9"],"sizeBytes":300000},
      {"names":["nvcr.io/nvidia/pytorch:24.01"],"sizeBytes":9000000000},
      {"names":[]}]}})"));
  ASSERT_TRUE(node.ok()) << node.status().message();
  ASSERT_EQ(node->images.size(), 3u);
  EXPECT_EQ(
      node->images[0],
      (ContainerImage{{"registry.k8s.io/pause@sha256:abc", "registry.k8s.io/pause:3.9"}, 300000}));
  EXPECT_EQ(node->images[1].size_bytes, 9000000000);
  EXPECT_TRUE(node->images[2].names.empty());
  EXPECT_EQ(node->images[2].size_bytes, 0);
}

TEST(DecodeNodeTest, MalformedGpuLabelsAreWarningsNotErrors) {
  auto node = DecodeNode(Json(R"({"metadata":{"name":"n1","labels":{
      "gpu.nvidia.com/count":"many","nvidia.com/gpu.count":"4"}},
      "status":{"allocatable":{"nvidia.com/gpu":"4"}}})"));
  ASSERT_TRUE(node.ok()) << node.status().ToString();
  EXPECT_EQ(node->gpu.count, 4);
  EXPECT_THAT(node->gpu_error, HasSubstr("label gpu.nvidia.com/count: invalid value \"many\""));
}

TEST(ParseJsonTest, ReportsSourceLineAndColumn) {
  struct Case {
    std::string name;
    std::string text;
    std::string error;
  };
  const std::vector<Case> cases = {
      {"a syntax error names line and column", "{\"a\": [1,\n 2,}",
       "resp: invalid JSON at line 2, column 4 (offset 13): syntax error"},
      {"trailing data is rejected", "{\"a\":1} x",
       "resp: invalid JSON at line 1, column 9 (offset 8): unexpected data after the JSON value"},
      {"an incomplete document is rejected", "{\"a\":", "resp: invalid JSON at line 1, column 6"},
      {"empty text is rejected", "", "resp: invalid JSON at line 1, column 1 (offset 0)"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto v = ParseJson(c.text, "resp");
    ASSERT_FALSE(v.ok());
    EXPECT_THAT(std::string(v.status().message()), HasSubstr(c.error));
  }
  auto ok = ParseJson(" {\"a\": [1, 2.5, \"x\", null]}\n", "resp");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->at("a").as_array().size(), 4u);
}

TEST(JsonParserTest, ParsesOneDocumentAfterAnotherAndReportsErrorsAsParseJson) {
  JsonParser parser(256);  // a small arena: the large document below must grow past it
  auto a = parser.Parse("{\"type\":\"ADDED\",\"object\":{\"n\":1}}", "watch event");
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ((*a)->at("object").at("n").as_int64(), 1);

  std::string big = "{\"items\":[";
  for (int i = 0; i < 2000; ++i)
    big += (i ? ",\"" : "\"") + std::string(40, 'x') + std::to_string(i) + "\"";
  big += "]}";
  auto b = parser.Parse(big, "watch event");
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  ASSERT_EQ((*b)->at("items").as_array().size(), 2000u);
  EXPECT_EQ((*b)->at("items").as_array()[1999].as_string(), std::string(40, 'x') + "1999");

  auto bad = parser.Parse("{\"a\": [1,\n 2,}", "watch event");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()),
              HasSubstr("watch event: invalid JSON at line 2, column 4 (offset 13): syntax error"));
  auto trailing = parser.Parse("{\"a\":1} x", "watch event");
  ASSERT_FALSE(trailing.ok());
  EXPECT_THAT(std::string(trailing.status().message()),
              HasSubstr("unexpected data after the JSON value"));

  // After errors the parser is usable again, and many documents do not grow it without bound.
  for (int i = 0; i < 1000; ++i) {
    auto c = parser.Parse(
        "{\"i\":" + std::to_string(i) + ",\"s\":\"" + std::string(100, 'y') + "\"}", "e");
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    ASSERT_EQ((*c)->at("i").as_int64(), i);
  }
}

TEST(ParseJsonTest, BuildsTheValueInTheGivenStorage) {
  boost::json::monotonic_resource arena;
  auto v = ParseJson("{\"a\":[1,2,3]}", "resp", boost::json::storage_ptr(&arena));
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->storage().get(), &arena);
  EXPECT_EQ(v->at("a").as_array().size(), 3u);
}

TEST(TakeListPageTest, MovesTheItemsOutAndReadsTheListMetadata) {
  boost::json::value list = boost::json::parse(
      R"({"kind":"PodList","metadata":{"resourceVersion":"42","continue":"abc"},)"
      R"("items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}}]})");
  auto page = TakeListPage(list, "pods");
  ASSERT_TRUE(page.ok()) << page.status().ToString();
  ASSERT_EQ(page->items.size(), 2u);
  EXPECT_EQ(MetaString(page->items[1], "name"), "b");
  EXPECT_EQ(page->resource_version, "42");
  EXPECT_EQ(page->continue_token, "abc");
  boost::json::value last = boost::json::parse(R"({"items":null,"metadata":{}})");
  auto empty = TakeListPage(last, "pods");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->items.empty());
  EXPECT_EQ(empty->continue_token, "");
  for (const char* bad : {R"([])", R"({"items":{}})", R"({"metadata":{"continue":7}})"}) {
    boost::json::value v = boost::json::parse(bad);
    auto got = TakeListPage(v, "pods");
    ASSERT_FALSE(got.ok()) << bad;
    EXPECT_EQ(got.status().message().substr(0, 6), "pods: ") << got.status().message();
  }
}

TEST(MetaStringTest, PeeksAtAStringMetadataMemberOnly) {
  EXPECT_EQ(MetaString(boost::json::parse(R"({"metadata":{"name":"a","uid":7}})"), "name"), "a");
  EXPECT_EQ(MetaString(boost::json::parse(R"({"metadata":{"name":"a","uid":7}})"), "uid"), "");
  EXPECT_EQ(MetaString(boost::json::parse(R"({"metadata":null})"), "name"), "");
  EXPECT_EQ(MetaString(boost::json::parse(R"([1])"), "name"), "");
}

TEST(ParseYamlDocumentsTest, TypesScalarsWithTheCoreSchema) {
  auto docs = ParseYamlDocuments(R"(
plain: hello
quoted_int: "10"
single_quoted_bool: 'true'
int: 10
negative: -7
plus: +3
octal: 0o17
hex: 0x1F
float: 0.5
exp: 1e3
big: 100000000000000000000
uint: 18446744073709551615
yes_is_a_string: yes
true_bool: true
False_bool: False
null_tilde: ~
null_word: null
empty:
inf: .inf
neg_inf: -.Inf
nan: .NaN
block: |
  line one
str_tag: !!str 42
version: 1.10.2
quantity: 500m
)",
                                 "values.yaml");
  ASSERT_TRUE(docs.ok()) << docs.status().ToString();
  ASSERT_EQ(docs->size(), 1u);
  const boost::json::object& o = (*docs)[0].as_object();
  auto kind_of = [&](const char* key) { return o.at(key).kind(); };
  using boost::json::kind;
  struct Case {
    std::string key;
    boost::json::kind want;
  };
  const std::vector<Case> cases = {
      {"plain", kind::string},
      {"quoted_int", kind::string},
      {"single_quoted_bool", kind::string},
      {"int", kind::int64},
      {"negative", kind::int64},
      {"plus", kind::int64},
      {"octal", kind::int64},
      {"hex", kind::int64},
      {"float", kind::double_},
      {"exp", kind::double_},
      {"big", kind::double_},
      {"uint", kind::uint64},
      {"yes_is_a_string", kind::string},
      {"true_bool", kind::bool_},
      {"False_bool", kind::bool_},
      {"null_tilde", kind::null},
      {"null_word", kind::null},
      {"empty", kind::null},
      {"inf", kind::double_},
      {"neg_inf", kind::double_},
      {"nan", kind::double_},
      {"block", kind::string},
      {"str_tag", kind::string},
      {"version", kind::string},
      {"quantity", kind::string},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.key);
    EXPECT_EQ(kind_of(c.key.c_str()), c.want);
  }
  EXPECT_EQ(o.at("quoted_int").as_string(), "10");
  EXPECT_EQ(o.at("int").as_int64(), 10);
  EXPECT_EQ(o.at("plus").as_int64(), 3);
  EXPECT_EQ(o.at("octal").as_int64(), 15);
  EXPECT_EQ(o.at("hex").as_int64(), 31);
  EXPECT_EQ(o.at("float").as_double(), 0.5);
  EXPECT_EQ(o.at("exp").as_double(), 1000.0);
  EXPECT_TRUE(std::isinf(o.at("neg_inf").as_double()));
  EXPECT_TRUE(std::isnan(o.at("nan").as_double()));
  EXPECT_EQ(o.at("block").as_string(), "line one\n");
  EXPECT_EQ(o.at("str_tag").as_string(), "42");
  EXPECT_FALSE(o.at("False_bool").as_bool());
}

TEST(ParseYamlDocumentsTest, SkipsEmptyDocumentsAndReportsErrorsWithLines) {
  auto docs = ParseYamlDocuments("---\n---\na: 1\n---\n# only a comment\n---\n- x\n", "m.yaml");
  ASSERT_TRUE(docs.ok()) << docs.status().ToString();
  ASSERT_EQ(docs->size(), 2u);
  EXPECT_TRUE((*docs)[0].is_object());
  EXPECT_TRUE((*docs)[1].is_array());

  struct Case {
    std::string name;
    std::string text;
    std::string error;
  };
  const std::vector<Case> cases = {
      {"an unclosed flow sequence names its line", "a: 1\nb: [1, 2\nc: 3\n",
       "m.yaml: YAML error at line 3, column 2: end of sequence flow not found"},
      {"bad indentation names its line", "a:\n  b: 1\n c: 2\n",
       "m.yaml: YAML error at line 3, column 2: end of map not found"},
      {"an unknown alias names its line", "a: 1\nb: *missing\n",
       "m.yaml: YAML error at line 2, column 4: the referenced anchor is not defined"},
      {"a mapping key that is not a scalar is rejected", "? [a, b]\n: 1\n",
       "m.yaml: YAML error at line 1, column 3: mapping key is not a scalar"},
      {"a nested plain mapping on one line is rejected", "a: b: c\n",
       "m.yaml: YAML error at line 1, column 5: illegal map value"},
      // yaml-cpp 0.7 alone loops forever on these; the decoder must stop it.
      {"a comma after a flow mapping is rejected", "{},",
       "m.yaml: YAML error at line 1, column 3: unexpected ',' outside a flow collection"},
      {"a comma after a flow sequence on a later line is rejected", "[a]\n  ,\n",
       "m.yaml: YAML error at line 2, column 3: unexpected ','"},
      {"a lone comma is rejected", ",", "unexpected ',' outside a flow collection"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto r = ParseYamlDocuments(c.text, "m.yaml");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), common::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(r.status().message()), HasSubstr(c.error));
  }
}

TEST(ParseYamlDocumentsTest, StopsAliasExpansionBombs) {
  std::string text = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < 9; ++i) {
    text += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int j = 0; j < 10; ++j) text += std::string(j ? ", " : "") + "*a" + std::to_string(i - 1);
    text += "]\n";
  }
  auto r = ParseYamlDocuments(text, "bomb.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("document too large"));
}

TEST(DecodeManifestsTest, DecodesAMultiDocumentManifest) {
  auto objects = DecodeManifests(ReadTestdata("manifest.yaml"), "manifest.yaml");
  ASSERT_TRUE(objects.ok()) << objects.status().ToString();
  ASSERT_EQ(objects->size(), 4u);

  const auto* deploy = std::get_if<OtherObject>(&(*objects)[0]);
  ASSERT_NE(deploy, nullptr);
  EXPECT_EQ(deploy->kind, "Deployment");
  EXPECT_EQ(deploy->api_version, "apps/v1");
  EXPECT_EQ(deploy->name, "inference");
  EXPECT_EQ(deploy->json.at("spec").at("replicas").as_int64(), 3);

  const auto* node = std::get_if<Node>(&(*objects)[1]);
  ASSERT_NE(node, nullptr);
  EXPECT_EQ(node->meta.name, "gpu-node-1");
  EXPECT_EQ(node->allocatable.milli_cpu, 64000);
  EXPECT_EQ(node->allocatable.memory, 512LL << 30);
  EXPECT_EQ(node->allocatable.Get(Names().nvidia_gpu), 8);
  EXPECT_EQ(node->gpu.count, 8);
  EXPECT_EQ(Str(node->gpu.model), "A100-SXM4-80GB");
  EXPECT_EQ(node->gpu.memory_mib, 81920);
  EXPECT_EQ(node->gpu_error, "");

  const auto* train = std::get_if<Pod>(&(*objects)[2]);
  ASSERT_NE(train, nullptr);
  EXPECT_EQ(train->Key(), "default/train-0");
  EXPECT_EQ(Str(train->scheduler_name), "gpu-scheduler");
  EXPECT_EQ(train->priority, 10);
  EXPECT_EQ(train->requests.milli_cpu, 500);
  EXPECT_EQ(train->requests.memory, 1LL << 30);
  EXPECT_EQ(train->gpu.count, 1);
  ASSERT_EQ(train->gpu.models.size(), 1u);
  EXPECT_EQ(Str(train->gpu.models[0]), "A100");

  // A malformed GPU annotation does not fail the decode: the pod carries the reason.
  const auto* broken = std::get_if<Pod>(&(*objects)[3]);
  ASSERT_NE(broken, nullptr);
  EXPECT_EQ(broken->Key(), "ml/broken-gpu");
  EXPECT_TRUE(broken->gpu.empty());
  EXPECT_EQ(broken->gpu_error,
            "annotation gpu.nvidia.com/memory: invalid value \"abc\" (want MiB, e.g. 16384)");
  EXPECT_EQ(broken->requests.Get(Names().nvidia_gpu), 2);
}

TEST(DecodeManifestsTest, ExpandsListsFromJsonAndYaml) {
  struct Case {
    std::string name;
    std::string text;
    std::vector<std::string> kinds;  // "Pod", "Node" or the other object's kind
  };
  const std::vector<Case> cases = {
      {"a JSON PodList gives pods even without item kinds",
       R"({"kind":"PodList","items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}}]})",
       {"Pod", "Pod"}},
      {"a v1 List keeps each item's kind",
       R"({"kind":"List","items":[{"kind":"Node","metadata":{"name":"n"}},
          {"kind":"ConfigMap","metadata":{"name":"c"}}]})",
       {"Node", "ConfigMap"}},
      {"a top-level JSON array is a list of documents",
       R"([{"kind":"Pod","metadata":{"name":"a"}},{"kind":"Node","metadata":{"name":"n"}}])",
       {"Pod", "Node"}},
      {"a YAML NodeList gives nodes", "kind: NodeList\nitems:\n- metadata: {name: n1}\n", {"Node"}},
      {"an empty list gives nothing", "kind: PodList\nitems: []\n", {}},
      {"an empty manifest gives nothing", "# nothing here\n", {}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto objects = DecodeManifests(c.text, "in");
    ASSERT_TRUE(objects.ok()) << objects.status().ToString();
    std::vector<std::string> kinds;
    for (const Object& o : *objects) {
      if (std::holds_alternative<Pod>(o)) kinds.push_back("Pod");
      if (std::holds_alternative<Node>(o)) kinds.push_back("Node");
      if (const auto* other = std::get_if<OtherObject>(&o)) kinds.push_back(other->kind);
    }
    EXPECT_EQ(kinds, c.kinds);
  }
}

TEST(DecodeManifestsTest, ErrorsNameTheSourceAndDocument) {
  struct Case {
    std::string name;
    std::string text;
    std::string error;
  };
  const std::vector<Case> cases = {
      {"a document without kind is rejected", "kind: Pod\nmetadata: {name: a}\n---\nfoo: bar\n",
       "in: document 2: missing \"kind\""},
      {"a scalar document is rejected", "just text\n",
       "in: document 1: document: expected object, got string"},
      {"a pod error names the document and field",
       "kind: Pod\nmetadata: {name: a}\nspec:\n  containers:\n  - name: c\n    resources:\n"
       "      requests: {cpu: 1.2.3}\n",
       "in: document 1: pod default/a: spec.containers[0].resources.requests.cpu: invalid "
       "quantity \"1.2.3\""},
      {"an unquoted number label is a type error naming the field",
       "kind: Node\nmetadata:\n  name: n1\n  labels: {gpu.nvidia.com/count: 8}\n",
       "in: document 1: node n1: metadata.labels[gpu.nvidia.com/count]: expected string, got "
       "number"},
      {"an error inside a list names the item",
       R"({"kind":"List","items":[{"kind":"Pod","metadata":{"name":"a"}},{"kind":"Node",
          "metadata":{"name":"n"},"spec":{"taints":[{"key":"k","effect":"Bad"}]}}]})",
       "in: document 1: items[1]: node n: spec.taints[0].effect: invalid value \"Bad\""},
      {"list items must be an array", "kind: PodList\nitems: {}\n",
       "in: document 1: PodList: items: expected array, got object"},
      {"malformed YAML names the line", "kind: Pod\nmetadata:\n  name: [a\n",
       "in: YAML error at line 4, column 1: end of sequence flow not found"},
      {"broken JSON reports the JSON error", "{\"kind\": \"Pod\",\n \"metadata\": {}},",
       "in: invalid JSON at line 2, column 17 (offset 32): unexpected data after the JSON value"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto objects = DecodeManifests(c.text, "in");
    ASSERT_FALSE(objects.ok());
    EXPECT_THAT(std::string(objects.status().message()), StartsWith("in: "));
    EXPECT_THAT(std::string(objects.status().message()), HasSubstr(c.error));
  }
}

// One result per document: a YAML syntax error loses only its document (its line counted in the
// whole text); document markers end block scalars; comments and directives stay with the next
// document; JSON is parsed whole.
TEST(ParseManifestDocumentsEachTest, AYamlErrorLosesOnlyItsDocument) {
  auto docs = ParseManifestDocumentsEach("a: 1\n---\nb: [\n---\nc: 3\n", "in.yaml");
  ASSERT_EQ(docs.size(), 3u);
  ASSERT_TRUE(docs[0].ok());
  EXPECT_EQ(docs[0]->at("a").as_int64(), 1);
  ASSERT_FALSE(docs[1].ok());
  EXPECT_THAT(std::string(docs[1].status().message()),
              ::testing::StartsWith("in.yaml: YAML error at line 4,"));
  ASSERT_TRUE(docs[2].ok());
  EXPECT_EQ(docs[2]->at("c").as_int64(), 3);

  auto scalar =
      ParseManifestDocumentsEach("# c\n%YAML 1.2\n---\nk: |\n  text\n--- {b: 2}\n", "s.yaml");
  ASSERT_EQ(scalar.size(), 2u);
  ASSERT_TRUE(scalar[0].ok()) << scalar[0].status().ToString();
  EXPECT_EQ(scalar[0]->at("k").as_string(), "text\n");
  ASSERT_TRUE(scalar[1].ok()) << scalar[1].status().ToString();
  EXPECT_EQ(scalar[1]->at("b").as_int64(), 2);

  auto json = ParseManifestDocumentsEach(R"([{"a": 1}, {"b": 2}])", "in.json");
  ASSERT_EQ(json.size(), 2u);
  EXPECT_TRUE(json[1].ok());
  auto bad_json = ParseManifestDocumentsEach(R"({"a": )", "in.json");
  ASSERT_EQ(bad_json.size(), 1u);
  EXPECT_FALSE(bad_json[0].ok());
  EXPECT_TRUE(ParseManifestDocumentsEach("", "empty.yaml").empty());
}

}  // namespace
}  // namespace gpusched::api
