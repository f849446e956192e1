// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "src/network/annotation.h"
#include "src/network/crd.h"
#include "src/network/store.h"
#include "src/network/traffic.h"
#include "src/testing/builders.h"

namespace gpusched::network {
namespace {

TEST(TrafficAnnotationTest, ParsesAndRejectsWithTheEntryAndValue) {
  struct Case {
    std::string name;
    std::string value;
    size_t entries;    // when valid
    std::string want;  // error substring; empty = valid
  };
  const std::vector<Case> cases = {
      {"one entry", "app=cart => 20", 1, ""},
      {"two entries with set selector and trailing separator",
       "app=cart => 20; app in (redis,db),tier=cache => 5.5;", 2, ""},
      {"missing arrow", "app=cart 20", 0, "entry 0 \"app=cart 20\": want"},
      {"empty selector", " => 3", 0, "empty selector"},
      {"weight not a number", "app=db => lots", 0, "weight \"lots\" is not a number"},
      {"zero weight", "app=db => 0", 0, "must be in (0, 100000]"},
      {"huge weight", "app=db => 1e9", 0, "must be in (0, 100000]"},
      {"bad selector", "app==>x => 1", 0, "invalid selector"},
      {"duplicate selector", "app=db => 1; app=db => 2", 0,
       "entry 1 \"app=db => 2\": selector listed twice"},
      {"nothing", " ; ", 0, "no entries"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto peers = ParseTrafficAnnotation(c.value);
    if (c.want.empty()) {
      ASSERT_TRUE(peers.ok()) << peers.status().ToString();
      EXPECT_EQ(peers->size(), c.entries);
    } else {
      ASSERT_FALSE(peers.ok());
      EXPECT_NE(peers.status().message().find(c.want), std::string_view::npos)
          << peers.status().message();
      EXPECT_NE(peers.status().message().find("gpusched.io/traffic"), std::string_view::npos);
    }
  }
  auto two = ParseTrafficAnnotation("app=cart => 20; app in (redis,db),tier=cache => 5.5");
  ASSERT_TRUE(two.ok());
  EXPECT_DOUBLE_EQ((*two)[1].mbps, 5.5);
  EXPECT_EQ((*two)[1].selector_text, "app in (redis,db),tier=cache");
}

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

  NetworkStore store;
  store.UpsertAppGroup(*ag);
  store.UpsertTopology(*nt);
  auto cat = store.Current();
  EXPECT_NE(cat->FindAppGroup("ns", "g"), nullptr);
  EXPECT_NE(cat->FindTopology("ns", "nt"), nullptr);  // cluster-scoped fallback
  store.DeleteAppGroup("ns", "g");
  EXPECT_EQ(store.Current()->FindAppGroup("ns", "g"), nullptr);
  EXPECT_NE(cat->FindAppGroup("ns", "g"), nullptr);  // an old catalog stays valid
}

TEST(TrafficAccountingTest, SameZoneAndZoneBlindRouting) {
  using testing::MakePod;
  api::Pod client = MakePod("s", "c")
                        .Label("app", "c")
                        .Annotation("gpusched.io/traffic", "app=s => 10; app=missing => 4")
                        .Obj();
  api::Pod s1 = MakePod("s", "s1").Label("app", "s").Obj();
  api::Pod s2 = MakePod("s", "s2").Label("app", "s").Obj();
  api::Pod bad = MakePod("s", "bad").Annotation("gpusched.io/traffic", "nope").Obj();
  std::vector<PlacedPod> placed = {
      {&client, "n1", "a"}, {&s1, "n2", "b"}, {&s2, "n3", "c"}, {&bad, "n1", "a"}};
  TrafficSummary t = AccountTraffic(placed);
  EXPECT_DOUBLE_EQ(t.total_mbps, 10);
  EXPECT_DOUBLE_EQ(t.cross_zone_mbps, 10);
  EXPECT_DOUBLE_EQ(t.cross_zone_mbps_zone_blind, 10);
  EXPECT_DOUBLE_EQ(t.unmatched_mbps, 4);
  ASSERT_EQ(t.errors.size(), 1u);
  placed[1].zone = "a";
  t = AccountTraffic(placed);
  EXPECT_DOUBLE_EQ(t.cross_zone_mbps, 0);
  EXPECT_DOUBLE_EQ(t.cross_zone_mbps_zone_blind, 5);
  // 1 MB/s = 86.4 GB/day; x 30 x $0.02 = $51.84/month.
  EXPECT_DOUBLE_EQ(TrafficSummary::GBPerDay(1), 86.4);
  EXPECT_NEAR(TrafficSummary::DollarsPerMonth(1, kAwsCrossZoneDollarsPerGB), 51.84, 1e-9);
}

}  // namespace
}  // namespace gpusched::network
