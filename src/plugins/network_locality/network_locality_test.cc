// SPDX-License-Identifier: Apache-2.0
#include "src/plugins/network_locality/network_locality.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <memory>
#include <string>
#include <vector>

#include "src/api/network_crd.h"
#include "src/api/traffic_matrix.h"
#include "src/cache/network_store.h"
#include "src/framework/plugin.h"
#include "src/testing/builders.h"
#include "src/testing/fake_handle.h"
#include "src/testing/plugin_fixture.h"

namespace gpusched::plugins::network_locality {
namespace {

using testing::MakeNode;
using testing::MakePod;

// Nodes with their placed pods.
struct Placed {
  api::NodePtr node;
  std::vector<api::PodPtr> pods;
};

framework::Snapshot SnapshotOf(const std::vector<Placed>& nodes) {
  framework::Snapshot snapshot;
  for (size_t i = 0; i < nodes.size(); ++i) {
    framework::NodeInfo& info = snapshot.MutableSlotForCache(static_cast<framework::NodeIndex>(i));
    info.node = nodes[i].node;
    info.index = static_cast<framework::NodeIndex>(i);
    info.pods = nodes[i].pods;
    snapshot.IndexNameForCache(nodes[i].node->meta.name, info.index);
  }
  snapshot.SetNodeCountForCache(static_cast<int32_t>(nodes.size()), 1);
  return snapshot;
}

// The plugin over `store` as the handle's network view (null: the handle offers none).
std::unique_ptr<NetworkLocality> MustCreate(const cache::NetworkStore* store,
                                            std::string_view args_json = "") {
  testing::FakeHandle handle;
  handle.SetNetwork(store);
  boost::json::value args =
      args_json.empty() ? boost::json::value() : boost::json::parse(args_json);
  auto plugin = NetworkLocality::Create(args, handle);
  EXPECT_TRUE(plugin.ok()) << plugin.status().ToString();
  if (!plugin.ok()) return nullptr;
  return std::unique_ptr<NetworkLocality>(
      dynamic_cast<NetworkLocality*>(std::move(plugin).value().release()));
}

// Raw scores, then normalized scores, of every node for `pod`.
struct Scores {
  std::vector<int64_t> raw;
  std::vector<int64_t> normalized;
};
Scores ScoreAll(NetworkLocality& plugin, const api::Pod& pod, const framework::Snapshot& snap) {
  framework::CycleState state;
  framework::Status s = plugin.PreFilter(state, pod, snap);
  // Skip: the pod has no possible peer; Score then sees no state and scores every node 0.
  EXPECT_TRUE(s.ok() || s.IsSkip()) << s.ToString();
  Scores out;
  for (const framework::NodeInfo& n : snap.nodes())
    out.raw.push_back(testing::ScoreOf(plugin, state, pod, snap, n.index));
  out.normalized = out.raw;
  EXPECT_TRUE(plugin.NormalizeScore(state, pod, out.normalized).ok());
  return out;
}

// The scheduler-plugins NetworkOverhead test vector (docs/network-locality.md §2, "The upstream
// test vector").
constexpr std::string_view kBasicTopology = R"({
  "apiVersion": "networktopology.diktyo.x-k8s.io/v1alpha1", "kind": "NetworkTopology",
  "metadata": {"name": "nt-test", "namespace": "default"},
  "spec": {"configmapName": "netperf", "weights": [{"name": "UserDefined", "topologyList": [
    {"topologyKey": "topology.kubernetes.io/region", "originList": [
      {"origin": "us-west-1", "costList": [{"destination": "us-east-1", "networkCost": 20}]},
      {"origin": "us-east-1", "costList": [{"destination": "us-west-1", "networkCost": 20}]}]},
    {"topologyKey": "topology.kubernetes.io/zone", "originList": [
      {"origin": "Z1", "costList": [{"destination": "Z2", "networkCost": 5}]},
      {"origin": "Z2", "costList": [{"destination": "Z1", "networkCost": 5}]},
      {"origin": "Z3", "costList": [{"destination": "Z4", "networkCost": 10}]},
      {"origin": "Z4", "costList": [{"destination": "Z3", "networkCost": 10}]}]}]}]}})";

constexpr std::string_view kBasicAppGroup = R"({
  "apiVersion": "appgroup.diktyo.x-k8s.io/v1alpha1", "kind": "AppGroup",
  "metadata": {"name": "basic", "namespace": "default"},
  "spec": {"numMembers": 3, "topologySortingAlgorithm": "KahnSort", "workloads": [
    {"workload": {"kind": "Deployment", "name": "p1", "selector": "p1", "apiVersion": "apps/v1",
                  "namespace": "default"},
     "dependencies": [{"workload": {"kind": "Deployment", "name": "p2", "selector": "p2",
                       "apiVersion": "apps/v1", "namespace": "default"},
                       "minBandwidth": "100Mi", "maxNetworkCost": 15}]},
    {"workload": {"kind": "Deployment", "name": "p2", "selector": "p2", "apiVersion": "apps/v1",
                  "namespace": "default"},
     "dependencies": [{"workload": {"kind": "Deployment", "name": "p3", "selector": "p3",
                       "apiVersion": "apps/v1", "namespace": "default"},
                       "minBandwidth": "250Mi", "maxNetworkCost": 20}]},
    {"workload": {"kind": "Deployment", "name": "p3", "selector": "p3", "apiVersion": "apps/v1",
                  "namespace": "default"}}]},
  "status": {"topologyOrder": [
    {"workload": {"kind": "Deployment", "name": "p1", "selector": "p1", "apiVersion": "apps/v1",
                  "namespace": "default"}, "index": 1},
    {"workload": {"kind": "Deployment", "name": "p2", "selector": "p2", "apiVersion": "apps/v1",
                  "namespace": "default"}, "index": 2},
    {"workload": {"kind": "Deployment", "name": "p3", "selector": "p3", "apiVersion": "apps/v1",
                  "namespace": "default"}, "index": 3}]}})";

api::PodPtr GroupPod(std::string_view name, std::string_view workload) {
  return MakePod("default", name)
      .Label(api::kAppGroupLabel, "basic")
      .Label(api::kWorkloadLabel, workload)
      .Ptr();
}

api::NodePtr TopoNode(std::string_view name, std::string_view region, std::string_view zone) {
  return MakeNode(name).Cpu("8").Memory("16Gi").Label(api::kRegionLabel, region).Zone(zone).Ptr();
}

class UpstreamVectorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto nt = api::ParseNetworkTopology(kBasicTopology, "nt");
    ASSERT_TRUE(nt.ok()) << nt.status().ToString();
    auto ag = api::ParseAppGroup(kBasicAppGroup, "ag");
    ASSERT_TRUE(ag.ok()) << ag.status().ToString();
    store_.UpsertTopology(std::make_shared<const api::NetworkTopology>(*nt));
    store_.UpsertAppGroup(std::make_shared<const api::AppGroup>(*ag));
  }
  framework::Snapshot Snap() const {
    return SnapshotOf({
        {TopoNode("n-1", "us-west-1", "Z1"), {GroupPod("p3-0", "p3")}},
        {TopoNode("n-2", "us-west-1", "Z1"), {GroupPod("p1-0", "p1")}},
        {TopoNode("n-3", "us-west-1", "Z2"), {}},
        {TopoNode("n-4", "us-west-1", "Z2"), {}},
        {TopoNode("n-5", "us-east-1", "Z3"), {GroupPod("p2-0", "p2")}},
        {TopoNode("n-6", "us-east-1", "Z3"), {}},
        {TopoNode("n-7", "us-east-1", "Z4"), {}},
        {TopoNode("n-8", "us-east-1", "Z4"), {}},
    });
  }
  cache::NetworkStore store_;
};

TEST_F(UpstreamVectorTest, ScoresAndOrderingMatchTheDocumentedVector) {
  struct Case {
    std::string name;
    std::string workload;
    std::vector<int64_t> raw;
    std::vector<int64_t> normalized;
  };
  const std::vector<Case> cases = {
      {"p1 depends on p2 placed on n-5",
       "p1",
       {20, 20, 20, 20, 0, 1, 10, 10},
       {0, 0, 0, 0, 100, 95, 50, 50}},
      {"p2 depends on p3 placed on n-1",
       "p2",
       {0, 1, 5, 5, 20, 20, 20, 20},
       {100, 95, 75, 75, 0, 0, 0, 0}},
      {"p3 has no dependencies, so every node scores 0",
       "p3",
       {0, 0, 0, 0, 0, 0, 0, 0},
       {0, 0, 0, 0, 0, 0, 0, 0}},
  };
  auto plugin = MustCreate(&store_, R"({"networkTopologyName": "nt-test"})");
  ASSERT_NE(plugin, nullptr);
  framework::Snapshot snap = Snap();
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    api::PodPtr pod = GroupPod(c.workload + "-new", c.workload);
    Scores s = ScoreAll(*plugin, *pod, snap);
    EXPECT_EQ(s.raw, c.raw);
    EXPECT_EQ(s.normalized, c.normalized);
  }
}

TEST_F(UpstreamVectorTest, FilterRejectsNodesWithMoreViolatedThanSatisfiedDependencies) {
  // p1 -> p2 with maxNetworkCost 15: the west nodes (region cost 20) violate it; Z3 is the same
  // zone (satisfied), Z4 costs 10 <= 15 (satisfied).
  auto plugin = MustCreate(&store_, R"({"networkTopologyName": "nt-test"})");
  framework::Snapshot snap = Snap();
  api::PodPtr pod = GroupPod("p1-new", "p1");
  framework::CycleState state;
  ASSERT_TRUE(plugin->PreFilter(state, *pod, snap).ok());
  std::vector<bool> fits;
  for (const framework::NodeInfo& n : snap.nodes())
    fits.push_back(plugin->Filter(state, *pod, n).ok());
  EXPECT_EQ(fits, (std::vector<bool>{false, false, false, false, true, true, true, true}));
  framework::Status rejected = plugin->Filter(state, *pod, snap.at(0));
  EXPECT_EQ(rejected.code(), framework::Code::kUnschedulable);
}

TEST_F(UpstreamVectorTest, QueueSortPlacesDependenciesInTopologyOrder) {
  auto plugin = MustCreate(&store_);
  auto info = [](api::PodPtr p, int64_t t) {
    framework::QueuedPodInfo q;
    q.pod = std::move(p);
    q.timestamp = common::TimePoint(std::chrono::seconds(t));
    return q;
  };
  // p3 arrived last but comes after p1 and p2 only by topology order: p1 (1) < p2 (2) < p3 (3).
  auto p1 = info(GroupPod("a", "p1"), 3);
  auto p2 = info(GroupPod("b", "p2"), 2);
  auto p3 = info(GroupPod("c", "p3"), 1);
  EXPECT_TRUE(plugin->Less(p1, p2));
  EXPECT_TRUE(plugin->Less(p2, p3));
  EXPECT_FALSE(plugin->Less(p3, p1));
  // Same workload: strict order by queue time (never both directions).
  auto p1b = info(GroupPod("d", "p1"), 4);
  EXPECT_TRUE(plugin->Less(p1, p1b));
  EXPECT_FALSE(plugin->Less(p1b, p1));
  // Outside any AppGroup: priority first.
  auto hi = info(MakePod("default", "hi").Priority(10).Ptr(), 9);
  auto lo = info(MakePod("default", "lo").Ptr(), 1);
  EXPECT_TRUE(plugin->Less(hi, lo));
}

api::NodePtr ZoneNode(std::string_view name, std::string_view zone) {
  return MakeNode(name)
      .Cpu("8")
      .Memory("16Gi")
      .Label(api::kRegionLabel, "us-east-1")
      .Zone(zone)
      .Ptr();
}

TEST(AnnotationModeTest, PrefersTheNodeAndZoneOfDeclaredPeers) {
  api::PodPtr cart = MakePod("shop", "cart-0").Label("app", "cart").Ptr();
  api::PodPtr db = MakePod("shop", "db-0").Label("app", "db").Ptr();
  framework::Snapshot snap = SnapshotOf({
      {ZoneNode("a1", "us-east-1a"), {cart}},
      {ZoneNode("a2", "us-east-1a"), {}},
      {ZoneNode("b1", "us-east-1b"), {db}},
      {ZoneNode("c1", "us-east-1c"), {}},
  });
  auto plugin = MustCreate(nullptr);
  // 1 MB/s cross-zone = 2592 GB/month x $0.02 = $51.84/month = 51840 milli-dollars.
  api::PodPtr front = MakePod("shop", "front-0")
                          .Label("app", "front")
                          .Annotation("gpusched.io/traffic", "app=cart => 3; app=db => 1")
                          .Ptr();
  Scores s = ScoreAll(*plugin, *front, snap);
  EXPECT_EQ(s.raw, (std::vector<int64_t>{51840, 51840, 155520, 207360}));
  EXPECT_EQ(s.normalized, (std::vector<int64_t>{100, 100, 34, 0}));

  // Reverse: a pod that declares nothing is drawn to the placed pods that declared it.
  api::PodPtr caller = MakePod("shop", "caller-0")
                           .Label("app", "caller")
                           .Annotation("gpusched.io/traffic", "app=db => 2")
                           .Ptr();
  framework::Snapshot snap2 = SnapshotOf({
      {ZoneNode("a1", "us-east-1a"), {caller}},
      {ZoneNode("b1", "us-east-1b"), {}},
  });
  Scores r = ScoreAll(*plugin, *db, snap2);
  EXPECT_EQ(r.raw, (std::vector<int64_t>{0, 103680}));

  // Other namespaces never count.
  api::PodPtr other = MakePod("other", "front-0")
                          .Label("app", "front")
                          .Annotation("gpusched.io/traffic", "app=cart => 3")
                          .Ptr();
  Scores o = ScoreAll(*plugin, *other, snap);
  EXPECT_EQ(o.raw, (std::vector<int64_t>{0, 0, 0, 0}));
}

// In the default profile most pods declare nothing: they are skipped (no Filter, no Score), until
// a pod with the annotation was scheduled in their namespace (its declaration may select them).
TEST(AnnotationModeTest, PodsThatCannotHavePeersAreSkipped) {
  api::PodPtr caller = MakePod("shop", "caller-0")
                           .Label("app", "caller")
                           .Annotation("gpusched.io/traffic", "app=db => 2")
                           .Ptr();
  api::PodPtr db = MakePod("shop", "db-0").Label("app", "db").Ptr();
  api::PodPtr batch = MakePod("batch", "job-0").Label("app", "job").Ptr();
  framework::Snapshot snap =
      SnapshotOf({{ZoneNode("a1", "us-east-1a"), {caller}}, {ZoneNode("b1", "us-east-1b"), {}}});
  auto plugin = MustCreate(nullptr);
  framework::CycleState s1;
  EXPECT_TRUE(plugin->PreFilter(s1, *db, snap).IsSkip()) << "no annotated pod seen in shop yet";
  framework::CycleState s2;
  EXPECT_TRUE(plugin->PreScore(s2, *db, snap, {}).IsSkip());
  framework::CycleState s3;
  EXPECT_TRUE(plugin->PreFilter(s3, *caller, snap).ok());
  framework::CycleState s4;
  EXPECT_TRUE(plugin->PreFilter(s4, *db, snap).ok()) << "shop has an annotated pod now";
  framework::CycleState s5;
  EXPECT_TRUE(plugin->PreFilter(s5, *batch, snap).IsSkip()) << "other namespaces stay skipped";
  // An AppGroup label always counts.
  api::PodPtr grouped = MakePod("batch", "job-1").Label("appgroup.diktyo.x-k8s.io", "g").Ptr();
  framework::CycleState s6;
  EXPECT_TRUE(plugin->PreFilter(s6, *grouped, snap).ok());
}

TEST(MeasuredTrafficTest, TheTrafficMatrixDrawsAPodToTheWorkloadsItTalksTo) {
  api::PodPtr web = MakePod("shop", "web-0").Label("app", "web").Ptr();
  api::PodPtr db = MakePod("shop", "db-0").Label("app", "db").Ptr();
  api::PodPtr auth = MakePod("pay", "auth-0").Label("app", "auth").Ptr();
  api::PodPtr cart0 = MakePod("shop", "cart-0").Label("app", "cart").Ptr();
  framework::Snapshot snap = SnapshotOf({
      {ZoneNode("a1", "us-east-1a"), {web}},
      {ZoneNode("b1", "us-east-1b"), {db}},
      {ZoneNode("b2", "us-east-1b"), {}},
      {ZoneNode("c1", "us-east-1c"), {auth}},
  });
  framework::Snapshot with_sibling = SnapshotOf({
      {ZoneNode("a1", "us-east-1a"), {web}},
      {ZoneNode("b1", "us-east-1b"), {db}},
      {ZoneNode("b2", "us-east-1b"), {}},
      {ZoneNode("c1", "us-east-1c"), {auth, cart0}},
  });
  api::PodPtr cart = MakePod("shop", "cart-1").Label("app", "cart").Ptr();
  using Edges = std::vector<api::WorkloadEdge>;
  const Edges talks = {{"shop", "cart", "shop", "db", 2}, {"shop", "web", "shop", "cart", 1}};
  struct Case {
    std::string name;
    std::string workload_label;
    Edges edges;  // empty: no matrix
    const framework::Snapshot* snap;
    std::vector<int64_t> want_raw;  // milli-dollars/month; 1 MB/s cross-zone = 51840
  };
  const std::vector<Case> cases = {
      {"without a matrix every node scores the same", "app", {}, &snap, {0, 0, 0, 0}},
      {"cart talks to db (2 MB/s) and web (1 MB/s, the other direction counts too)",
       "app",
       talks,
       &snap,
       {103680, 51840, 51840, 155520}},
      {"a placed sibling replica halves this pod's share",
       "app",
       talks,
       &with_sibling,
       {51840, 25920, 25920, 77760}},
      {"peers in other namespaces count",
       "app",
       {{"pay", "auth", "shop", "cart", 1}},
       &snap,
       {51840, 51840, 51840, 0}},
      {"pods are matched by the configured workload label",
       "app.kubernetes.io/name",
       talks,
       &snap,
       {0, 0, 0, 0}},
      {"workloads the matrix does not name are unaffected",
       "app",
       {{"shop", "web", "shop", "db", 5}},
       &snap,
       {0, 0, 0, 0}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    cache::NetworkStore store;
    if (!c.edges.empty()) {
      store.SetTrafficMatrix(std::make_shared<const api::TrafficMatrix>(c.workload_label, c.edges));
    }
    auto plugin = MustCreate(&store);
    ASSERT_NE(plugin, nullptr);
    Scores s = ScoreAll(*plugin, *cart, *c.snap);
    EXPECT_EQ(s.raw, c.want_raw);
  }
}

TEST(AnnotationModeTest, PricesAndCostLimitComeFromArgs) {
  api::PodPtr db = MakePod("shop", "db-0").Label("app", "db").Ptr();
  framework::Snapshot snap = SnapshotOf({
      {ZoneNode("a1", "us-east-1a"), {db}},
      {ZoneNode("a2", "us-east-1a"), {}},
      {ZoneNode("b1", "us-east-1b"), {}},
  });
  auto plugin = MustCreate(nullptr, R"({"prices": {"sameZoneDollarsPerGB": 0.001,
      "crossZoneDollarsPerGB": 0.02}, "maxCostDollarsPerMonth": 10})");
  api::PodPtr app = MakePod("shop", "app-0")
                        .Label("app", "app")
                        .Annotation("gpusched.io/traffic", "app=db => 1")
                        .Ptr();
  framework::CycleState state;
  ASSERT_TRUE(plugin->PreFilter(state, *app, snap).ok());
  EXPECT_EQ(testing::ScoreOf(*plugin, state, *app, snap, 0), 0);
  EXPECT_EQ(testing::ScoreOf(*plugin, state, *app, snap, 1), 2592);
  EXPECT_EQ(testing::ScoreOf(*plugin, state, *app, snap, 2), 51840);
  EXPECT_TRUE(plugin->Filter(state, *app, snap.at(1)).ok());
  EXPECT_EQ(plugin->Filter(state, *app, snap.at(2)).code(), framework::Code::kUnschedulable);
}

TEST(AnnotationModeTest, PreScoreComputesCostsWhenPreFilterDidNotRun) {
  api::PodPtr db = MakePod("shop", "db-0").Label("app", "db").Ptr();
  framework::Snapshot snap =
      SnapshotOf({{ZoneNode("a1", "us-east-1a"), {db}}, {ZoneNode("b1", "us-east-1b"), {}}});
  auto plugin = MustCreate(nullptr);
  api::PodPtr app = MakePod("shop", "app-0").Annotation("gpusched.io/traffic", "app=db => 1").Ptr();
  framework::CycleState state;
  std::vector<framework::NodeIndex> feasible = {0, 1};
  ASSERT_TRUE(plugin->PreScore(state, *app, snap, feasible).ok());
  EXPECT_EQ(testing::ScoreOf(*plugin, state, *app, snap, 0), 0);
  EXPECT_EQ(testing::ScoreOf(*plugin, state, *app, snap, 1), 51840);
}

TEST(AnnotationModeTest, MalformedAnnotationMakesOnlyThatPodUnresolvable) {
  framework::Snapshot snap = SnapshotOf({{ZoneNode("a1", "us-east-1a"), {}}});
  auto plugin = MustCreate(nullptr);
  api::PodPtr bad =
      MakePod("shop", "bad").Annotation("gpusched.io/traffic", "app=db => lots").Ptr();
  framework::CycleState state;
  framework::Status s = plugin->PreFilter(state, *bad, snap);
  EXPECT_EQ(s.code(), framework::Code::kUnschedulableAndUnresolvable);
  EXPECT_NE(s.reason().find("gpusched.io/traffic"), std::string_view::npos) << s.reason();
  EXPECT_NE(s.reason().find("lots"), std::string_view::npos) << s.reason();
  api::PodPtr good = MakePod("shop", "good").Ptr();
  framework::CycleState state2;
  EXPECT_TRUE(plugin->PreFilter(state2, *good, snap).ok());
}

TEST(ArgsTest, EveryBadFieldIsNamed) {
  struct Case {
    std::string name;
    std::string args;
    std::string want;  // substring of the error; empty = valid
  };
  const std::vector<Case> cases = {
      {"no args is valid", "{}", ""},
      {"all fields valid",
       R"({"namespaces":["a"],"weightsName":"NetperfCosts","networkTopologyName":"nt",
           "prices":{"crossZoneDollarsPerGB":0.01},"maxCostDollarsPerMonth":5})",
       ""},
      {"negative price", R"({"prices":{"crossZoneDollarsPerGB":-1}})",
       "prices.crossZoneDollarsPerGB: must be in 0..1000000, got -1"},
      {"unknown price field", R"({"prices":{"interPlanet":1}})",
       "prices.interPlanet: unknown field"},
      {"empty namespace list", R"({"namespaces":[]})", "namespaces: must list at least one"},
      {"non-string namespace", R"({"namespaces":[3]})", "namespaces[0]"},
      {"string cost limit", R"({"maxCostDollarsPerMonth":"ten"})", "maxCostDollarsPerMonth"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto args = ParseArgs(boost::json::parse(c.args));
    if (c.want.empty()) {
      EXPECT_TRUE(args.ok()) << args.status().ToString();
    } else {
      ASSERT_FALSE(args.ok());
      EXPECT_NE(args.status().message().find(c.want), std::string_view::npos)
          << args.status().message();
    }
  }
}

}  // namespace
}  // namespace gpusched::plugins::network_locality
