// SPDX-License-Identifier: Apache-2.0
// Gangs from the four APIs: pod membership (label, annotation, spec.workloadRef,
// spec.schedulingGroup and their precedence), the keys, and the PodGroup / Workload decoders
// with their errors; a native PodGroup's resource claims (KEP-5729) and whom they are reserved
// for.
#include "src/api/gang.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <string>

#include "src/api/decode.h"
#include "src/api/dra.h"
#include "src/api/types.h"

namespace gpusched::api {
namespace {

using ::testing::HasSubstr;

boost::json::value Json(std::string_view text) {
  auto v = ParseJson(text, "test");
  EXPECT_TRUE(v.ok()) << v.status().ToString();
  return v.ok() ? *v : boost::json::value();
}

Pod PodWith(const std::string& metadata, const std::string& spec_extra = "") {
  auto pod = DecodePod(Json(R"({"kind":"Pod","metadata":)" + metadata +
                            R"(,"spec":{"containers":[{"name":"c"}])" + spec_extra + "}}"));
  EXPECT_TRUE(pod.ok()) << pod.status().ToString();
  return pod.ok() ? *pod : Pod();
}

TEST(GangRefTest, TheLabelTheAnnotationAndWorkloadRefMakeAPodAMember) {
  Pod plain = PodWith(R"({"name":"a","namespace":"ml"})");
  EXPECT_TRUE(plain.gang.empty());
  EXPECT_EQ(GangKey(plain), "");

  Pod sp = PodWith(
      R"({"name":"a","namespace":"ml","labels":{"scheduling.x-k8s.io/pod-group":"train"}})");
  EXPECT_EQ(sp.gang.api, GangApi::kPodGroup);
  EXPECT_EQ(GangKey(sp), "podgroup:ml/train");

  Pod vc = PodWith(
      R"({"name":"a","namespace":"ml","annotations":{"scheduling.k8s.io/group-name":"job-1"}})");
  EXPECT_EQ(vc.gang.api, GangApi::kVolcano);
  EXPECT_EQ(GangKey(vc), "volcano:ml/job-1");

  Pod wl =
      PodWith(R"({"name":"a","namespace":"ml","labels":{"scheduling.x-k8s.io/pod-group":"x"}})",
              R"(,"workloadRef":{"name":"llm","podGroup":"workers","podGroupReplicaKey":"r1"})");
  EXPECT_EQ(wl.gang.api, GangApi::kWorkload) << "workloadRef wins over the label";
  EXPECT_EQ(PolicyKey(wl), "workload:ml/llm/workers");
  EXPECT_EQ(GangKey(wl), "workload:ml/llm/workers#r1") << "each replica is a gang of its own";
}

TEST(GangRefTest, AnEmptyNameIsNoMembershipAndABadWorkloadRefIsAnError) {
  EXPECT_TRUE(
      PodWith(R"({"name":"a","labels":{"scheduling.x-k8s.io/pod-group":""}})").gang.empty());
  auto bad = DecodePod(Json(
      R"({"kind":"Pod","metadata":{"name":"a","namespace":"ml"},"spec":{"workloadRef":{"name":"w"}}})"));
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("spec.workloadRef.podGroup: required"));
}

TEST(PodGroupDecodeTest, SchedulerPluginsPodGroupWithTopologyAnnotations) {
  auto g = DecodePodGroup(Json(R"({"apiVersion":"scheduling.x-k8s.io/v1alpha1","kind":"PodGroup",
    "metadata":{"name":"train","namespace":"ml","uid":"u1",
      "annotations":{"gpusched.io/gang-topology-required":"topology.kubernetes.io/zone",
                     "kueue.x-k8s.io/podset-preferred-topology":"example.com/rack"}},
    "spec":{"minMember":4,"minResources":{"nvidia.com/gpu":"32","cpu":"8"},
            "scheduleTimeoutSeconds":30},
    "status":{"phase":"Pending"}})"));
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(g->api, GangApi::kPodGroup);
  EXPECT_EQ(g->Key(), "podgroup:ml/train");
  EXPECT_EQ(g->min_member, 4);
  EXPECT_EQ(g->min_resources.Get(common::Intern("nvidia.com/gpu")), 32);
  EXPECT_EQ(g->min_resources.milli_cpu, 8000);
  ASSERT_TRUE(g->schedule_timeout.has_value());
  EXPECT_EQ(*g->schedule_timeout, std::chrono::seconds(30));
  EXPECT_EQ(g->topology_required, "topology.kubernetes.io/zone");
  EXPECT_EQ(g->topology_preferred, "example.com/rack");
  EXPECT_EQ(g->phase, "Pending");
  EXPECT_TRUE(g->gang);
}

TEST(PodGroupDecodeTest, VolcanoPodGroupHasNoTimeoutOfItsOwn) {
  auto g = DecodePodGroup(Json(R"({"apiVersion":"scheduling.volcano.sh/v1beta1","kind":"PodGroup",
    "metadata":{"name":"job-1"},"spec":{"minMember":2,"queue":"default"}})"));
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(g->api, GangApi::kVolcano);
  EXPECT_EQ(g->Key(), "volcano:default/job-1");
  EXPECT_EQ(g->min_member, 2);
  EXPECT_FALSE(g->schedule_timeout.has_value());
}

TEST(PodGroupDecodeTest, ErrorsNameTheObjectAndTheField) {
  struct Case {
    const char* json;
    const char* want;
  } cases[] = {
      {R"({"apiVersion":"scheduling.x-k8s.io/v1alpha1","kind":"PodGroup","metadata":{"name":"t","namespace":"ml"},"spec":{"minMember":-1}})",
       "podgroup ml/t: spec.minMember: value out of range"},
      {R"({"apiVersion":"scheduling.x-k8s.io/v1alpha1","kind":"PodGroup","metadata":{"name":"t"},"spec":{"minResources":{"cpu":"lots"}}})",
       "podgroup default/t: spec.minResources.cpu: invalid quantity \"lots\""},
      {R"({"apiVersion":"v1","kind":"PodGroup","metadata":{"name":"t"}})",
       "apiVersion: invalid value \"v1\""},
      {R"({"apiVersion":"scheduling.x-k8s.io/v1alpha1","kind":"PodGroup","metadata":{}})",
       "metadata.name: required"},
  };
  for (const Case& c : cases) {
    auto g = DecodePodGroup(Json(c.json));
    ASSERT_FALSE(g.ok()) << c.json;
    EXPECT_THAT(g.status().message(), HasSubstr(c.want));
  }
}

TEST(WorkloadDecodeTest, OnePodGroupPerEntryGangOrBasic) {
  auto groups = DecodeWorkload(Json(R"({"apiVersion":"scheduling.k8s.io/v1alpha1","kind":"Workload",
    "metadata":{"name":"llm","namespace":"ml",
      "annotations":{"gpusched.io/gang-topology-required":"topology.kubernetes.io/zone"}},
    "spec":{"podGroups":[{"name":"workers","policy":{"gang":{"minCount":8}}},
                         {"name":"driver","policy":{"basic":{}}}]}})"));
  ASSERT_TRUE(groups.ok()) << groups.status().ToString();
  ASSERT_EQ(groups->size(), 2u);
  EXPECT_EQ((*groups)[0].Key(), "workload:ml/llm/workers");
  EXPECT_EQ((*groups)[0].min_member, 8);
  EXPECT_TRUE((*groups)[0].gang);
  EXPECT_EQ((*groups)[0].topology_required, "topology.kubernetes.io/zone");
  EXPECT_FALSE((*groups)[1].gang);
}

TEST(WorkloadDecodeTest, APolicyNeedsExactlyOneKindAndGangNeedsMinCount) {
  auto both =
      DecodeWorkload(Json(R"({"kind":"Workload","metadata":{"name":"w"},"spec":{"podGroups":[
    {"name":"g","policy":{"gang":{"minCount":2},"basic":{}}}]}})"));
  ASSERT_FALSE(both.ok());
  EXPECT_THAT(both.status().message(),
              HasSubstr("spec.podGroups[0].policy: exactly one of basic and gang must be set"));
  auto no_count = DecodeWorkload(Json(
      R"({"kind":"Workload","metadata":{"name":"w"},"spec":{"podGroups":[{"name":"g","policy":{"gang":{}}}]}})"));
  ASSERT_FALSE(no_count.ok());
  EXPECT_THAT(no_count.status().message(),
              HasSubstr("spec.podGroups[0].policy.gang.minCount: required"));
}

TEST(GangRefTest, SchedulingGroupMakesAPodAMemberOfANativePodGroupUnlessALabelSaysOtherwise) {
  Pod p = PodWith(R"({"name":"a","namespace":"ml"})",
                  R"(,"schedulingGroup":{"podGroupName":"train-0"})");
  EXPECT_EQ(p.gang.api, GangApi::kNative);
  EXPECT_EQ(GangKey(p), "native:ml/train-0");
  // 1.37's Job controller (WorkloadWithJob) names a basic PodGroup in every Job's pods: the
  // user's scheduler-plugins label keeps its gang.
  Pod labelled =
      PodWith(R"({"name":"a","namespace":"ml","labels":{"scheduling.x-k8s.io/pod-group":"train"}})",
              R"(,"schedulingGroup":{"podGroupName":"job-train-abcde"})");
  EXPECT_EQ(GangKey(labelled), "podgroup:ml/train");
  auto bad = DecodePod(Json(
      R"({"kind":"Pod","metadata":{"name":"a","namespace":"ml"},"spec":{"schedulingGroup":{}}})"));
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("spec.schedulingGroup.podGroupName: required"));
}

TEST(PodGroupDecodeTest, NativePodGroupInEveryServedVersion) {
  for (std::string_view version : kNativePodGroupApiVersions) {
    auto g = DecodePodGroup(Json(R"({"apiVersion":")" + std::string(version) +
                                 R"(","kind":"PodGroup",
      "metadata":{"name":"train-0","namespace":"ml","uid":"u1"},
      "spec":{"schedulingPolicy":{"gang":{"minCount":4}},
              "schedulingConstraints":{"topology":[{"key":"topology.kubernetes.io/zone"}]}},
      "status":{"conditions":[{"type":"PodGroupInitiallyScheduled","status":"True"}]}})"));
    ASSERT_TRUE(g.ok()) << version << ": " << g.status().ToString();
    EXPECT_EQ(g->api, GangApi::kNative);
    EXPECT_EQ(g->api_version, version);
    EXPECT_EQ(g->Key(), "native:ml/train-0");
    EXPECT_TRUE(g->gang);
    EXPECT_EQ(g->min_member, 4);
    EXPECT_EQ(g->topology_required, "topology.kubernetes.io/zone");
    EXPECT_EQ(g->phase, kNativePhaseScheduled);
  }
  auto basic = DecodePodGroup(Json(R"({"apiVersion":"scheduling.k8s.io/v1beta1","kind":"PodGroup",
    "metadata":{"name":"b","namespace":"ml",
                "annotations":{"gpusched.io/gang-topology-preferred":"rack"}},
    "spec":{"schedulingPolicy":{"basic":{}}},
    "status":{"conditions":[{"type":"PodGroupInitiallyScheduled","status":"False"}]}})"));
  ASSERT_TRUE(basic.ok()) << basic.status().ToString();
  EXPECT_FALSE(basic->gang);
  EXPECT_EQ(basic->topology_preferred, "rack");
  EXPECT_EQ(basic->phase, kNativePhaseUnschedulable);
}

// KEP-5729: a native PodGroup's spec.resourceClaims / status.resourceClaimStatuses, and the pod
// claims that are the PodGroup's (same name, same template or claim) — reserved for it, made for
// it — against those that stay the pod's.
TEST(PodGroupClaimsTest, AMatchingPodClaimIsThePodGroups) {
  auto g = DecodePodGroup(Json(R"({"apiVersion":"scheduling.k8s.io/v1beta1","kind":"PodGroup",
    "metadata":{"name":"train","namespace":"ml","uid":"g1"},
    "spec":{"schedulingPolicy":{"gang":{"minCount":2}},
            "resourceClaims":[{"name":"fabric","resourceClaimTemplateName":"imex"},
                              {"name":"data","resourceClaimName":"dataset"}]},
    "status":{"resourceClaimStatuses":[
      {"name":"fabric","resourceClaimName":"train-fabric-x"}]}})"));
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  ASSERT_NE(g->resource_claims, nullptr);
  ASSERT_EQ(g->resource_claims->claims.size(), 2U);
  EXPECT_EQ(g->resource_claims->ClaimName(0), "train-fabric-x");
  EXPECT_EQ(g->resource_claims->ClaimName(1), "dataset");

  Pod p = PodWith(R"({"name":"w-0","namespace":"ml","uid":"p1"})",
                  R"(,"schedulingGroup":{"podGroupName":"train"},
                     "resourceClaims":[{"name":"fabric","resourceClaimTemplateName":"imex"},
                                       {"name":"gpu","resourceClaimTemplateName":"imex"},
                                       {"name":"data","resourceClaimName":"other"}])");
  const ClaimConsumer group{"podgroups", "train", "g1", "scheduling.k8s.io"};
  const ClaimConsumer pod{"pods", "w-0", "p1", ""};
  EXPECT_EQ(ConsumerFor(p, 0, &*g), group);
  EXPECT_EQ(ConsumerFor(p, 1, &*g), pod);  // another name
  EXPECT_EQ(ConsumerFor(p, 2, &*g), pod);  // another claim
  EXPECT_EQ(ConsumerFor(p, 0, nullptr), pod);

  ResourceClaim made;
  made.meta.owner_references = {{"scheduling.k8s.io/v1beta1", "PodGroup", "train", "g1", true}};
  EXPECT_TRUE(IsClaimForPod(made, p));
  made.meta.owner_references[0].name = "eval";
  EXPECT_FALSE(IsClaimForPod(made, p));
  made.meta.owner_references = {{"v1", "Pod", "w-0", "p1", true}};
  EXPECT_TRUE(IsClaimForPod(made, p));

  ResourceClaim reserved;
  reserved.reserved_for = {group};
  EXPECT_TRUE(IsReservedForPod(reserved, p));  // by the PodGroup's name: pods know no uid
  reserved.reserved_for = {{"podgroups", "eval", "g2", "scheduling.k8s.io"}};
  EXPECT_FALSE(IsReservedForPod(reserved, p));
  reserved.reserved_for = {pod};
  EXPECT_TRUE(IsReservedForPod(reserved, p));
}

TEST(PodGroupDecodeTest, NativePodGroupErrorsNameTheField) {
  struct Case {
    const char* json;
    const char* want;
  } cases[] = {
      {R"({"apiVersion":"scheduling.k8s.io/v1beta1","kind":"PodGroup","metadata":{"name":"t","namespace":"ml"},"spec":{}})",
       "podgroup ml/t: spec.schedulingPolicy: required"},
      {R"({"apiVersion":"scheduling.k8s.io/v1beta1","kind":"PodGroup","metadata":{"name":"t"},"spec":{"schedulingPolicy":{"gang":{"minCount":0}}}})",
       "spec.schedulingPolicy.gang.minCount: value out of range"},
      {R"({"apiVersion":"scheduling.k8s.io/v1alpha3","kind":"PodGroup","metadata":{"name":"t"},"spec":{"schedulingPolicy":{"basic":{}},"schedulingConstraints":{"topology":[{}]}}})",
       "spec.schedulingConstraints.topology[0].key: required"},
      {R"({"apiVersion":"scheduling.k8s.io/v1","kind":"PodGroup","metadata":{"name":"t"}})",
       "apiVersion: invalid value \"scheduling.k8s.io/v1\""},
  };
  for (const Case& c : cases) {
    auto g = DecodePodGroup(Json(c.json));
    ASSERT_FALSE(g.ok()) << c.json;
    EXPECT_THAT(g.status().message(), HasSubstr(c.want));
  }
}

}  // namespace
}  // namespace gpusched::api
