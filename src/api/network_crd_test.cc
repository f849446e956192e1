// SPDX-License-Identifier: Apache-2.0
#include "src/api/network_crd.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace gpusched::api {
namespace {

TEST(CrdTest, DecodeErrorsNameTheObjectFieldAndValue) {
  struct Case {
    std::string name;
    bool app_group;
    std::string json;
    std::string want;
  };
  const std::vector<Case> cases = {
      {"maxNetworkCost out of range", true,
       R"({"metadata":{"name":"g","namespace":"ns"},"spec":{"workloads":[
          {"workload":{"selector":"a"},"dependencies":[{"workload":{"selector":"b"},"maxNetworkCost":20000}]},
          {"workload":{"selector":"b"}}]}})",
       "AppGroup ns/g: spec.workloads[0].dependencies[0].maxNetworkCost: must be in 0..10000, got "
       "20000"},
      {"unknown sorting algorithm", true,
       R"({"metadata":{"name":"g"},"spec":{"topologySortingAlgorithm":"Bogo"}})",
       "spec.topologySortingAlgorithm: must be one of"},
      {"dependency on an unknown workload", true,
       R"({"metadata":{"name":"g"},"spec":{"workloads":[{"workload":{"selector":"a"},
          "dependencies":[{"workload":{"selector":"zz"}}]}]}})",
       "names no workload of the AppGroup: \"zz\""},
      {"bad minBandwidth", true,
       R"({"metadata":{"name":"g"},"spec":{"workloads":[{"workload":{"selector":"a"},
          "dependencies":[{"workload":{"selector":"a"},"minBandwidth":"fast"}]}]}})",
       "spec.workloads[0].dependencies[0].minBandwidth: invalid quantity \"fast\""},
      {"numMembers beyond int64 (found by network_fuzz)", true,
       R"({"metadata":{"name":"g"},"spec":{"numMembers":1e300}})",
       "spec.numMembers: must be an integer, got 1"},
      {"numMembers zero", true, R"({"metadata":{"name":"g"},"spec":{"numMembers":0}})",
       "spec.numMembers: must be >= 1, got 0"},
      {"missing spec", true, R"({"metadata":{"name":"g"}})", "spec: required"},
      {"bad topology key", false,
       R"({"metadata":{"name":"nt"},"spec":{"weights":[{"name":"UserDefined","topologyList":[
          {"topologyKey":"rack","originList":[]}]}]}})",
       "NetworkTopology nt: spec.weights[0].topologyList[0].topologyKey: must be"},
      {"negative cost", false,
       R"({"metadata":{"name":"nt"},"spec":{"weights":[{"name":"UserDefined","topologyList":[
          {"topologyKey":"topology.kubernetes.io/zone","originList":[{"origin":"a","costList":[
          {"destination":"b","networkCost":-1}]}]}]}]}})",
       "originList[0].costList[0].networkCost: must be >= 0, got -1"},
      {"cost as a string", false,
       R"({"metadata":{"name":"nt"},"spec":{"weights":[{"name":"UserDefined","topologyList":[
          {"topologyKey":"topology.kubernetes.io/zone","originList":[{"origin":"a","costList":[
          {"destination":"b","networkCost":"x"}]}]}]}]}})",
       "networkCost: must be an integer, got \"x\""},
      {"not an object", false, "[1]", "must be a JSON object"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    common::Status s = c.app_group ? ParseAppGroup(c.json, "test").status()
                                   : ParseNetworkTopology(c.json, "test").status();
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.message().find(c.want), std::string_view::npos) << s.message();
  }
}

TEST(CrdTest, DecodesOrderAndCosts) {
  auto ag = ParseAppGroup(R"({"metadata":{"name":"g","namespace":"ns"},"spec":{"numMembers":2,
      "topologySortingAlgorithm":"ReverseKahn","workloads":[{"workload":{"selector":"a"},
      "dependencies":[{"workload":{"selector":"b"},"minBandwidth":"1Mi","maxNetworkCost":30}]},
      {"workload":{"selector":"b"}}]},"status":{"topologyOrder":[{"workload":{"selector":"b"},
      "index":1},{"workload":{"selector":"a"},"index":2}]}})",
                          "t");
  ASSERT_TRUE(ag.ok()) << ag.status().ToString();
  EXPECT_EQ(ag->algorithm, SortAlgorithm::kReverseKahn);
  EXPECT_EQ(ag->OrderIndex("a"), 2);
  EXPECT_EQ(ag->OrderIndex("b"), 1);
  EXPECT_EQ(ag->OrderIndex("c"), -1);
  EXPECT_EQ(ag->FindWorkload("a")->dependencies[0].min_bandwidth_bytes_per_second, 1048576);
  auto nt =
      ParseNetworkTopology(R"({"metadata":{"name":"nt"},"spec":{"weights":[{"name":"UserDefined",
      "topologyList":[{"topologyKey":"topology.kubernetes.io/zone","originList":[{"origin":"z2",
      "costList":[{"destination":"z1","networkCost":7}]},{"origin":"z1","costList":[
      {"destination":"z2","networkCost":5}]}]}]}]}})",
                           "t");
  ASSERT_TRUE(nt.ok()) << nt.status().ToString();
  const TopologyCosts* zc = nt->FindWeights("UserDefined")->Find(kZoneLabel);
  ASSERT_NE(zc, nullptr);
  EXPECT_EQ(zc->Find("z1", "z2"), 5);
  EXPECT_EQ(zc->Find("z2", "z1"), 7);
  EXPECT_FALSE(zc->Find("z1", "z3").has_value());
}

}  // namespace
}  // namespace gpusched::api
