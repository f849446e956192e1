// SPDX-License-Identifier: Apache-2.0
#include "src/plugins/pod_topology_spread/pod_topology_spread.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "src/common/random.h"
#include "src/plugins/names.h"
#include "src/testing/builders.h"
#include "src/testing/plugin_fixture.h"

GPUSCHED_TESTING_COUNT_ALLOCATIONS();

namespace gpusched::plugins::pod_topology_spread {
namespace {

using framework::Code;
using testing::MakeNode;
using testing::MakePod;
using testing::SnapshotOf;
using When = api::TopologySpreadConstraint::WhenUnsatisfiable;
using Policy = api::TopologySpreadConstraint::NodeInclusionPolicy;

constexpr std::string_view kZone = "topology.kubernetes.io/zone";
constexpr std::string_view kHost = "kubernetes.io/hostname";

std::unique_ptr<PodTopologySpread> MustCreate(std::string_view args_json = "{}") {
  return testing::MustCreate<PodTopologySpread>(args_json);
}

// `n` pods labelled app=web in namespace "ns" on `node`.
void AddPods(std::vector<api::PodPtr>& pods, std::string_view node, int n,
             std::string_view app = "web", std::string_view ns = "ns") {
  for (int i = 0; i < n; ++i) {
    const std::string name =
        std::string(node) + "-" + std::string(app) + "-" + std::to_string(pods.size());
    pods.push_back(MakePod(ns, name).Label("app", app).NodeName(node).Ptr());
  }
}

api::PodPtr Placed(std::string_view name, std::string_view node, std::string_view app) {
  return MakePod("ns", name).Label("app", app).NodeName(node).Ptr();
}

api::NodePtr ZoneNode(std::string_view name, std::string_view zone) {
  return MakeNode(name).Zone(zone).Ptr();
}

// Node names that pass Filter, or "skip" when PreFilter skipped.
std::string Feasible(PodTopologySpread& plugin, const api::Pod& pod,
                     const framework::Snapshot& snapshot, std::string* reasons = nullptr) {
  framework::CycleState state;
  framework::Status pre = plugin.PreFilter(state, pod, snapshot);
  if (pre.IsSkip()) return "skip";
  EXPECT_TRUE(pre.ok()) << pre.ToString();
  std::string out;
  for (const framework::NodeInfo& n : snapshot.nodes()) {
    framework::Status s = plugin.Filter(state, pod, n);
    if (s.ok()) {
      if (!out.empty()) out += ",";
      out += n.name();
    } else if (reasons != nullptr) {
      *reasons += std::string(n.name()) + ":" + std::string(s.reason()) + ";";
    }
  }
  return out;
}

TEST(PodTopologySpreadTest, Filter) {
  struct Case {
    std::string name;
    api::Pod pod;
    std::vector<api::NodePtr> nodes;
    std::vector<api::PodPtr> pods;
    std::string want;  // feasible nodes, or "skip"
  };
  auto spread = [](int skew, std::string_view key) {
    return MakePod("ns", "p")
        .Label("app", "web")
        .SpreadConstraint(skew, key, When::kDoNotSchedule, "app", "web");
  };
  const std::vector<api::NodePtr> three_zones = {ZoneNode("a1", "a"), ZoneNode("b1", "b"),
                                                 ZoneNode("c1", "c")};
  std::vector<Case> cases;
  cases.push_back({"a pod without constraints (and no controller) skips the plugin",
                   MakePod("ns", "p").Label("app", "web").Obj(),
                   three_zones,
                   {},
                   "skip"});
  cases.push_back({"a pod with only ScheduleAnyway constraints skips Filter",
                   MakePod("ns", "p")
                       .Label("app", "web")
                       .SpreadConstraint(1, kZone, When::kScheduleAnyway, "app", "web")
                       .Obj(),
                   three_zones,
                   {},
                   "skip"});
  cases.push_back({"with no matching pods every zone fits",
                   spread(1, kZone).Obj(),
                   three_zones,
                   {},
                   "a1,b1,c1"});
  {
    std::vector<api::PodPtr> pods;
    AddPods(pods, "a1", 2);
    AddPods(pods, "b1", 1);
    cases.push_back({"two zones 2/1: only the emptier zone keeps skew within 1",
                     spread(1, kZone).Obj(),
                     {ZoneNode("a1", "a"), ZoneNode("b1", "b")},
                     pods,
                     "b1"});
  }
  {
    std::vector<api::PodPtr> pods;
    AddPods(pods, "a1", 1);
    AddPods(pods, "b1", 1);
    cases.push_back({"three zones 1/1/0 with maxSkew 1: only zone c fits", spread(1, kZone).Obj(),
                     three_zones, pods, "c1"});
    cases.push_back({"three zones 1/1/0 with maxSkew 2: every zone fits", spread(2, kZone).Obj(),
                     three_zones, pods, "a1,b1,c1"});
  }
  {
    std::vector<api::PodPtr> pods;
    AddPods(pods, "a1", 1);
    AddPods(pods, "b1", 1);
    api::Pod pod = spread(1, kZone).Obj();
    pod.topology_spread_constraints[0].min_domains = 3;
    cases.push_back({"minDomains 3 over two zones 1/1: the global minimum counts as 0",
                     pod,
                     {ZoneNode("a1", "a"), ZoneNode("b1", "b")},
                     pods,
                     ""});
    api::Pod pod2 = spread(1, kZone).Obj();
    pod2.topology_spread_constraints[0].min_domains = 2;
    cases.push_back({"minDomains 2 over two zones 1/1: the real minimum applies",
                     pod2,
                     {ZoneNode("a1", "a"), ZoneNode("b1", "b")},
                     pods,
                     "a1,b1"});
  }
  {
    std::vector<api::PodPtr> pods;
    AddPods(pods, "a1", 1);
    cases.push_back({"hostname spread: the node that already has a replica is rejected",
                     spread(1, kHost).Obj(),
                     {ZoneNode("a1", "a"), ZoneNode("a2", "a")},
                     pods,
                     "a2"});
  }
  cases.push_back({"a node without the topology key is rejected",
                   spread(1, kZone).Obj(),
                   {ZoneNode("a1", "a"), MakeNode("bare").Ptr()},
                   {},
                   "a1"});
  {
    std::vector<api::PodPtr> pods;
    AddPods(pods, "a1", 3, "web", "other-ns");
    AddPods(pods, "a1", 3, "db");
    pods.push_back(MakePod("ns", "dying")
                       .Label("app", "web")
                       .NodeName("a1")
                       .DeletionTimestamp(common::TimePoint{})
                       .Ptr());
    pods.push_back(MakePod("ns", "done")
                       .Label("app", "web")
                       .NodeName("a1")
                       .Phase(api::PodPhase::kSucceeded)
                       .Ptr());
    cases.push_back({"pods of other namespaces, other labels, terminating or finished don't count",
                     spread(1, kZone).Obj(),
                     {ZoneNode("a1", "a"), ZoneNode("b1", "b")},
                     pods,
                     "a1,b1"});
  }
  {
    std::vector<api::PodPtr> pods;
    AddPods(pods, "a1", 1);
    api::Pod pod = MakePod("ns", "p")
                       .Label("app", "other")
                       .SpreadConstraint(1, kZone, When::kDoNotSchedule, "app", "web")
                       .Obj();
    cases.push_back({"a pod that doesn't match its own selector adds no self match",
                     pod,
                     {ZoneNode("a1", "a"), ZoneNode("b1", "b")},
                     pods,
                     "a1,b1"});
  }
  {
    // Zone c has no replica but the pod's nodeSelector excludes it: with nodeAffinityPolicy Honor
    // the minimum comes from zones a and b (1 each), so all of them fit; with Ignore, zone c's 0
    // is the minimum and a, b are rejected.
    std::vector<api::NodePtr> nodes = {MakeNode("a1").Zone("a").Label("pool", "x").Ptr(),
                                       MakeNode("b1").Zone("b").Label("pool", "x").Ptr(),
                                       MakeNode("c1").Zone("c").Label("pool", "y").Ptr()};
    std::vector<api::PodPtr> pods;
    AddPods(pods, "a1", 1);
    AddPods(pods, "b1", 1);
    api::Pod honor = spread(1, kZone).NodeSelector("pool", "x").Obj();
    cases.push_back({"nodeAffinityPolicy Honor counts only nodes matching the nodeSelector", honor,
                     nodes, pods, "a1,b1,c1"});
    api::Pod ignore = honor;
    ignore.topology_spread_constraints[0].node_affinity_policy = Policy::kIgnore;
    cases.push_back({"nodeAffinityPolicy Ignore counts every node", ignore, nodes, pods, "c1"});
  }
  {
    std::vector<api::NodePtr> nodes = {
        ZoneNode("a1", "a"), ZoneNode("b1", "b"),
        MakeNode("c1").Zone("c").Taint("dedicated", "x", api::TaintEffect::kNoSchedule).Ptr()};
    std::vector<api::PodPtr> pods;
    AddPods(pods, "a1", 1);
    AddPods(pods, "b1", 1);
    api::Pod honor = spread(1, kZone).Obj();
    honor.topology_spread_constraints[0].node_taints_policy = Policy::kHonor;
    cases.push_back(
        {"nodeTaintsPolicy Honor leaves out the tainted zone", honor, nodes, pods, "a1,b1,c1"});
    cases.push_back({"nodeTaintsPolicy Ignore (default) counts the tainted zone",
                     spread(1, kZone).Obj(), nodes, pods, "c1"});
  }
  {
    std::vector<api::PodPtr> pods;
    AddPods(pods, "a1", 1);
    AddPods(pods, "b1", 2);
    api::Pod pod =
        spread(1, kZone).SpreadConstraint(1, kHost, When::kDoNotSchedule, "app", "web").Obj();
    cases.push_back({"zone and hostname constraints must both hold",
                     pod,
                     {ZoneNode("a1", "a"), ZoneNode("a2", "a"), ZoneNode("b1", "b"),
                      ZoneNode("c1", "c"), ZoneNode("c2", "c")},
                     pods,
                     "c1,c2"});
  }
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto plugin = MustCreate();
    const framework::Snapshot snapshot = SnapshotOf(c.nodes, c.pods);
    EXPECT_EQ(Feasible(*plugin, c.pod, snapshot), c.want);
  }
}

TEST(PodTopologySpreadTest, FilterReasonsAndCodes) {
  auto plugin = MustCreate();
  std::vector<api::PodPtr> pods;
  AddPods(pods, "a1", 2);
  const framework::Snapshot snapshot =
      SnapshotOf({ZoneNode("a1", "a"), ZoneNode("b1", "b"), MakeNode("bare").Ptr()}, pods);
  api::Pod pod = MakePod("ns", "p")
                     .Label("app", "web")
                     .SpreadConstraint(1, kZone, When::kDoNotSchedule, "app", "web")
                     .Obj();
  framework::CycleState state;
  ASSERT_TRUE(plugin->PreFilter(state, pod, snapshot).ok());
  framework::Status skew = plugin->Filter(state, pod, snapshot.at(0));
  EXPECT_EQ(skew.code(), Code::kUnschedulable);
  EXPECT_EQ(skew.reason(), kReasonConstraintsNotMatch);
  framework::Status label = plugin->Filter(state, pod, snapshot.at(2));
  EXPECT_EQ(label.code(), Code::kUnschedulableAndUnresolvable);
  EXPECT_EQ(label.reason(), kReasonNodeLabelNotMatch);
  EXPECT_TRUE(plugin->Filter(state, pod, snapshot.at(1)).ok());

  g_counting = true;
  g_allocations = 0;
  for (int i = 0; i < 3; ++i) (void)plugin->Filter(state, pod, snapshot.at(i));
  g_counting = false;
  EXPECT_EQ(g_allocations, 0) << "Filter must not allocate";
}

// Normalized scores of every node (all feasible), or {} when PreScore skipped.
std::vector<int64_t> Scores(PodTopologySpread& plugin, const api::Pod& pod,
                            const framework::Snapshot& snapshot) {
  return testing::NormalizedScores(plugin, pod, snapshot, g_counting, g_allocations);
}

TEST(PodTopologySpreadTest, Score) {
  struct Case {
    std::string name;
    std::string args;
    api::Pod pod;
    std::vector<api::NodePtr> nodes;
    std::vector<api::PodPtr> pods;
    std::vector<int64_t> want;  // {} = PreScore skipped
  };
  const std::vector<api::NodePtr> three_zones = {ZoneNode("a1", "a"), ZoneNode("b1", "b"),
                                                 ZoneNode("c1", "c")};
  std::vector<Case> cases;
  {
    // weight log(3 + 2) = 1.609: raw a = round(3 * 1.609) = 5, b = 2, c = 0; normalized
    // 100 * (max + min - s) / max.
    std::vector<api::PodPtr> pods;
    AddPods(pods, "a1", 3);
    AddPods(pods, "b1", 1);
    cases.push_back({"ScheduleAnyway zone spread prefers the zone with fewer matching pods",
                     "{}",
                     MakePod("ns", "p")
                         .Label("app", "web")
                         .SpreadConstraint(1, kZone, When::kScheduleAnyway, "app", "web")
                         .Obj(),
                     three_zones,
                     pods,
                     {0, 60, 100}});
  }
  {
    std::vector<api::PodPtr> pods;
    AddPods(pods, "a1", 1);
    cases.push_back({"a node without the topology key is ignored and scores 0",
                     "{}",
                     MakePod("ns", "p")
                         .Label("app", "web")
                         .SpreadConstraint(1, kZone, When::kScheduleAnyway, "app", "web")
                         .Obj(),
                     {ZoneNode("a1", "a"), ZoneNode("b1", "b"), MakeNode("bare").Ptr()},
                     pods,
                     {0, 100, 0}});
  }
  cases.push_back({"equal domains all score 100",
                   "{}",
                   MakePod("ns", "p")
                       .Label("app", "web")
                       .SpreadConstraint(2, kZone, When::kScheduleAnyway, "app", "web")
                       .Obj(),
                   three_zones,
                   {},
                   {100, 100, 100}});
  cases.push_back({"a pod without constraints and without a controller skips Score",
                   "{}",
                   MakePod("ns", "p").Label("app", "web").Obj(),
                   three_zones,
                   {},
                   {}});
  {
    // System defaults (zone maxSkew 5, hostname maxSkew 3) select the pods of the same
    // ReplicaSet. Zone weight log(2 + 2), hostname weight log(3 + 2):
    // a1 = 2*1.386 + 4 + 2*1.609 + 2 = 11.99 -> 12; a2 = 2.77 + 4 + 0 + 2 -> 9; b1 = 0+4+0+2 = 6.
    std::vector<api::PodPtr> pods;
    for (int i = 0; i < 2; ++i) {
      pods.push_back(MakePod("ns", "rs-" + std::to_string(i))
                         .OwnerReference("ReplicaSet", "rs")
                         .NodeName("a1")
                         .Ptr());
    }
    pods.push_back(
        MakePod("ns", "other").OwnerReference("ReplicaSet", "other").NodeName("b1").Ptr());
    cases.push_back({"system default constraints spread a ReplicaSet's pods",
                     "{}",
                     MakePod("ns", "p").OwnerReference("ReplicaSet", "rs").Obj(),
                     {ZoneNode("a1", "a"), ZoneNode("a2", "a"), ZoneNode("b1", "b")},
                     pods,
                     {50, 75, 100}});
    cases.push_back({"system default constraints do not apply to a Job's pods",
                     "{}",
                     MakePod("ns", "p").OwnerReference("Job", "rs").Obj(),
                     {ZoneNode("a1", "a"), ZoneNode("a2", "a"), ZoneNode("b1", "b")},
                     pods,
                     {}});
    cases.push_back({"defaultingType List with no constraints disables the defaults",
                     R"({"defaultingType":"List"})",
                     MakePod("ns", "p").OwnerReference("ReplicaSet", "rs").Obj(),
                     {ZoneNode("a1", "a"), ZoneNode("a2", "a"), ZoneNode("b1", "b")},
                     pods,
                     {}});
    // hostname only, maxSkew 1, weight log(3 + 2): a1 = round(2 * 1.609) = 3, others 0.
    cases.push_back({"defaultingType List uses the listed constraints",
                     R"({"defaultingType":"List","defaultConstraints":[
                        {"maxSkew":1,"topologyKey":"kubernetes.io/hostname",
                         "whenUnsatisfiable":"ScheduleAnyway"}]})",
                     MakePod("ns", "p").OwnerReference("ReplicaSet", "rs").Obj(),
                     {ZoneNode("a1", "a"), ZoneNode("a2", "a"), ZoneNode("b1", "b")},
                     pods,
                     {0, 100, 100}});
  }
  {
    // System defaults don't require every label: a node without a zone still gets hostname
    // spreading (and is not ignored).
    std::vector<api::PodPtr> pods;
    pods.push_back(MakePod("ns", "rs-0").OwnerReference("ReplicaSet", "rs").NodeName("bare").Ptr());
    // bare: host 1*log(4) + 2 = 3.39 -> 3 (no zone term); a1: zone 0 + 4 + host 0 + 2 = 6
    // (a1's zone is the only registered one); min 3, max 6: bare 100, a1 = 100*(9-6)/6 = 50.
    cases.push_back({"system defaults keep scoring nodes without a zone label",
                     "{}",
                     MakePod("ns", "p").OwnerReference("ReplicaSet", "rs").Obj(),
                     {MakeNode("bare").Ptr(), ZoneNode("a1", "a")},
                     pods,
                     {100, 50}});
  }
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto plugin = MustCreate(c.args);
    ASSERT_NE(plugin, nullptr);
    const framework::Snapshot snapshot = SnapshotOf(c.nodes, c.pods);
    EXPECT_EQ(Scores(*plugin, c.pod, snapshot), c.want);
  }
}

TEST(PodTopologySpreadTest, ArgsAreValidatedWithFieldPaths) {
  struct Case {
    std::string name;
    std::string args;
    std::string error;  // "" = valid
  };
  const std::vector<Case> cases = {
      {"empty args are the System defaults", "{}", ""},
      {"kind and apiVersion are accepted",
       R"({"kind":"PodTopologySpreadArgs","apiVersion":"kubescheduler.config.k8s.io/v1"})", ""},
      {"System with defaultConstraints is rejected",
       R"({"defaultConstraints":[{"maxSkew":1,"topologyKey":"zone",
           "whenUnsatisfiable":"ScheduleAnyway"}]})",
       "defaultConstraints: must be empty when defaultingType is System"},
      {"an unknown defaultingType is rejected", R"({"defaultingType":"Sometimes"})",
       "defaultingType: must be System or List, got \"Sometimes\""},
      {"maxSkew must be positive",
       R"({"defaultingType":"List","defaultConstraints":[{"maxSkew":0,"topologyKey":"z",
           "whenUnsatisfiable":"DoNotSchedule"}]})",
       "defaultConstraints[0].maxSkew: must be in 1..2147483647, got 0"},
      {"topologyKey is required",
       R"({"defaultingType":"List","defaultConstraints":[{"maxSkew":1,
           "whenUnsatisfiable":"DoNotSchedule"}]})",
       "defaultConstraints[0].topologyKey: required"},
      {"whenUnsatisfiable must be known",
       R"({"defaultingType":"List","defaultConstraints":[{"maxSkew":1,"topologyKey":"z",
           "whenUnsatisfiable":"Maybe"}]})",
       "defaultConstraints[0].whenUnsatisfiable: must be DoNotSchedule or ScheduleAnyway, got "
       "\"Maybe\""},
      {"a default constraint must not have a selector",
       R"({"defaultingType":"List","defaultConstraints":[{"maxSkew":1,"topologyKey":"z",
           "whenUnsatisfiable":"DoNotSchedule","labelSelector":{}}]})",
       "defaultConstraints[0].labelSelector: constraint must not define a selector"},
      {"duplicate pairs are rejected",
       R"({"defaultingType":"List","defaultConstraints":[
           {"maxSkew":1,"topologyKey":"z","whenUnsatisfiable":"DoNotSchedule"},
           {"maxSkew":2,"topologyKey":"z","whenUnsatisfiable":"DoNotSchedule"}]})",
       "defaultConstraints[1]: duplicate (topologyKey, whenUnsatisfiable) pair (z)"},
      {"unknown fields are rejected", R"({"defaultConstraint":[]})",
       "defaultConstraint: unknown field"},
      {"args must be an object", R"([1])", "must be"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto parsed = ParseArgs(boost::json::parse(c.args));
    if (c.error.empty()) {
      EXPECT_TRUE(parsed.ok()) << parsed.status().ToString();
    } else {
      ASSERT_FALSE(parsed.ok());
      EXPECT_NE(parsed.status().ToString().find(c.error), std::string::npos)
          << parsed.status().ToString();
    }
  }
}

TEST(PodTopologySpreadTest, DefaultConstraintsFromListApplyToFilter) {
  auto plugin = MustCreate(R"({"defaultingType":"List","defaultConstraints":[
      {"maxSkew":1,"topologyKey":"topology.kubernetes.io/zone",
       "whenUnsatisfiable":"DoNotSchedule"}]})");
  ASSERT_NE(plugin, nullptr);
  std::vector<api::PodPtr> pods;
  pods.push_back(MakePod("ns", "rs-0").OwnerReference("ReplicaSet", "rs").NodeName("a1").Ptr());
  const framework::Snapshot snapshot = SnapshotOf({ZoneNode("a1", "a"), ZoneNode("b1", "b")}, pods);
  EXPECT_EQ(
      Feasible(*plugin, MakePod("ns", "p").OwnerReference("ReplicaSet", "rs").Obj(), snapshot),
      "b1");
  EXPECT_EQ(Feasible(*plugin, MakePod("ns", "p").OwnerReference("ReplicaSet", "x").Obj(), snapshot),
            "a1,b1");
  EXPECT_EQ(Feasible(*plugin, MakePod("ns", "p").Obj(), snapshot), "skip");
}

TEST(PodTopologySpreadTest, DomainMemoFollowsTheSnapshotAcrossCycles) {
  // A cache-kept snapshot (node_set_version != 0): domains are memoised across pods, counts are
  // not; a new node with a new zone bumps the version and is picked up.
  auto plugin = MustCreate();
  framework::Snapshot snapshot = SnapshotOf({ZoneNode("a1", "a"), ZoneNode("b1", "b")}, {});
  snapshot.BumpNodeSetVersionForCache();
  api::Pod pod = MakePod("ns", "p")
                     .Label("app", "web")
                     .SpreadConstraint(1, kZone, When::kDoNotSchedule, "app", "web")
                     .Obj();
  EXPECT_EQ(Feasible(*plugin, pod, snapshot), "a1,b1");
  snapshot.MutableSlotForCache(0).pods.push_back(Placed("w0", "a1", "web"));
  EXPECT_EQ(Feasible(*plugin, pod, snapshot), "b1");
  snapshot.MutableSlotForCache(1).pods.push_back(Placed("w1", "b1", "web"));
  framework::NodeInfo& c1 = snapshot.MutableSlotForCache(2);
  c1.node = ZoneNode("c1", "c");
  c1.index = 2;
  snapshot.SetNodeCountForCache(3, 2);
  snapshot.BumpNodeSetVersionForCache();
  EXPECT_EQ(Feasible(*plugin, pod, snapshot), "c1");
}

TEST(PodTopologySpreadTest, MatchCountMemoFollowsNodeGenerations) {
  // A cache-kept snapshot with per-node generations: matching-pod counts are memoised per
  // selector and node, and a node whose generation moved is recounted (the cache bumps it on
  // every pod change). Filter (zone counts) and Score (hostname counts) both follow.
  auto plugin = MustCreate();
  framework::Snapshot snapshot =
      SnapshotOf({ZoneNode("a1", "a"), ZoneNode("b1", "b"), ZoneNode("b2", "b")}, {});
  snapshot.BumpNodeSetVersionForCache();
  uint64_t gen = 1;
  for (framework::NodeIndex i = 0; i < 3; ++i) snapshot.SetGenerationForCache(i, ++gen);
  snapshot.SetNodeCountForCache(3, gen);
  auto place = [&](framework::NodeIndex i, const api::PodPtr& p) {
    snapshot.MutableSlotForCache(i).pods.push_back(p);
    snapshot.SetGenerationForCache(i, ++gen);
    snapshot.SetNodeCountForCache(3, gen);
  };
  const api::Pod web = MakePod("ns", "p")
                           .Label("app", "web")
                           .SpreadConstraint(1, kZone, When::kDoNotSchedule, "app", "web")
                           .Obj();
  EXPECT_EQ(Feasible(*plugin, web, snapshot), "a1,b1,b2");
  place(0, Placed("w0", "a1", "web"));
  EXPECT_EQ(Feasible(*plugin, web, snapshot), "b1,b2");
  place(1, Placed("w1", "b1", "web"));
  EXPECT_EQ(Feasible(*plugin, web, snapshot), "a1,b1,b2");
  place(2, Placed("w2", "b2", "web"));
  EXPECT_EQ(Feasible(*plugin, web, snapshot), "a1");

  // Hostname spread of a ReplicaSet's pods (System defaults, ScheduleAnyway): raw scores from
  // ScoreNodes equal Score's and move with the counts.
  const api::Pod rs = MakePod("ns", "q").OwnerReference("ReplicaSet", "rs").Obj();
  auto raw_scores = [&] {
    framework::CycleState state;
    const std::vector<framework::NodeIndex> all = {0, 1, 2};
    EXPECT_TRUE(plugin->PreScore(state, rs, snapshot, all).ok());
    std::vector<int64_t> out(3);
    plugin->ScoreNodes(state, rs, snapshot, all, out);
    for (size_t i = 0; i < 3; ++i)
      EXPECT_EQ(out[i], testing::ScoreOf(*plugin, state, rs, snapshot, all[i]));
    return out;
  };
  const std::vector<int64_t> before = raw_scores();
  EXPECT_EQ(before[1], before[2]);
  place(1, MakePod("ns", "r0").OwnerReference("ReplicaSet", "rs").NodeName("b1").Ptr());
  const std::vector<int64_t> after = raw_scores();
  EXPECT_GT(after[1], after[2]) << "b1 now holds one of the ReplicaSet's pods";
  EXPECT_GT(after[2], before[2]) << "zone b's count grew for b2 too";
  EXPECT_EQ(after[0], before[0]);
}

// One ScheduleAnyway constraint as the oracle reads it.
struct OracleConstraint {
  std::string key;
  int32_t max_skew = 1;
  bool honor_affinity = true;
  bool honor_taints = false;
};

std::string LabelOf(const api::Node& n, std::string_view key) {
  common::Atom v;
  return n.meta.labels.Get(common::Intern(key), &v) ? std::string(common::Str(v)) : "";
}

bool HasLabel(const api::Node& n, std::string_view key) {
  common::Atom v;
  return n.meta.labels.Get(common::Intern(key), &v);
}

// Raw PreScore+Score values of `feasible`, read from upstream's scoring (podtopologyspread
// scoring.go) by brute force: nodes missing a key are ignored when `require_all` (-1 here); a
// non-hostname constraint counts, over every node with all keys (when `require_all`) that its
// inclusion policies admit and whose domain holds a counted feasible node, the pods `selected`;
// hostname counts the node's own; weight log(domains + 2), a missing value one more domain.
std::vector<int64_t> OracleRawScores(const std::vector<api::NodePtr>& nodes,
                                     const std::vector<api::PodPtr>& pods,
                                     const std::vector<OracleConstraint>& cs, bool require_all,
                                     const std::vector<size_t>& feasible,
                                     const std::function<bool(const api::Pod&)>& selected,
                                     const std::function<bool(const api::Node&)>& affinity,
                                     const std::function<bool(const api::Node&)>& tolerated) {
  auto has_all = [&](const api::Node& n) {
    for (const OracleConstraint& c : cs) {
      if (!HasLabel(n, c.key)) return false;
    }
    return true;
  };
  auto matching_on = [&](const api::Node& n) {
    int64_t k = 0;
    for (const api::PodPtr& p : pods) {
      if (p->node_name == n.meta.name && p->meta.namespace_ == "ns" && selected(*p)) ++k;
    }
    return k;
  };
  std::vector<size_t> counted;
  for (size_t i : feasible) {
    if (!require_all || has_all(*nodes[i])) counted.push_back(i);
  }
  std::vector<double> weight(cs.size());
  std::vector<std::map<std::string, int64_t>> counts(cs.size());
  for (size_t k = 0; k < cs.size(); ++k) {
    const bool hostname = cs[k].key == kHost;
    std::map<std::string, int> domains;
    for (size_t i : counted) domains[LabelOf(*nodes[i], cs[k].key)] = 1;
    weight[k] = std::log(static_cast<double>(hostname ? counted.size() : domains.size()) + 2.0);
    if (hostname) continue;
    for (const api::NodePtr& n : nodes) {
      if (require_all && !has_all(*n)) continue;
      if (!HasLabel(*n, cs[k].key) || domains.count(LabelOf(*n, cs[k].key)) == 0) continue;
      if (cs[k].honor_affinity && !affinity(*n)) continue;
      if (cs[k].honor_taints && !tolerated(*n)) continue;
      counts[k][LabelOf(*n, cs[k].key)] += matching_on(*n);
    }
  }
  std::vector<int64_t> out;
  for (size_t i : feasible) {
    const api::Node& n = *nodes[i];
    if (require_all && !has_all(n)) {
      out.push_back(-1);
      continue;
    }
    double score = 0;
    for (size_t k = 0; k < cs.size(); ++k) {
      if (!HasLabel(n, cs[k].key)) continue;
      const int64_t count = cs[k].key == kHost ? matching_on(n) : counts[k][LabelOf(n, cs[k].key)];
      score += static_cast<double>(count) * weight[k] + static_cast<double>(cs[k].max_skew - 1);
    }
    out.push_back(std::llround(score));
  }
  return out;
}

// PreScore and ScoreNodes agree with the oracle above over random clusters (nodes missing zone
// or rack labels, tainted, labelled for a nodeSelector), placed pods of two namespaces, apps and
// ReplicaSets, and feasible subsets; the pod spreads by its own 1-3 constraints (random keys,
// maxSkew and inclusion policies: every key required) or, owned by a ReplicaSet, by the system
// defaults (zone 5, hostname 3, a missing zone one more domain). Trials:
// GPUSCHED_SPREAD_CASES (default 2000).
TEST(PodTopologySpreadTest, RawScoresMatchABruteForceOracle) {
  const char* env = std::getenv("GPUSCHED_SPREAD_CASES");
  const int trials = env != nullptr ? std::atoi(env) : 2000;
  common::Random rng(11);
  const char* zones[] = {"a", "b", "c"};
  const char* racks[] = {"r1", "r2"};
  int own = 0, defaults = 0;
  for (int trial = 0; trial < trials; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    const auto num_nodes = static_cast<size_t>(1 + rng.Uniform(10));
    std::vector<api::NodePtr> nodes;
    for (size_t i = 0; i < num_nodes; ++i) {
      auto b = MakeNode("n" + std::to_string(i));
      if (rng.Uniform(5) != 0) b.Zone(zones[rng.Uniform(3)]);
      if (rng.Uniform(3) != 0) b.Label("rack", racks[rng.Uniform(2)]);
      if (rng.Uniform(3) == 0) b.Label("disk", "ssd");
      if (rng.Uniform(4) == 0) b.Taint("dedicated", "x", api::TaintEffect::kNoSchedule);
      nodes.push_back(b.Ptr());
    }
    std::vector<api::PodPtr> pods;
    for (size_t i = 0; i < num_nodes; ++i) {
      for (uint64_t j = rng.Uniform(4); j > 0; --j) {
        auto p = MakePod(rng.Uniform(5) == 0 ? "other" : "ns",
                         "p" + std::to_string(i) + "-" + std::to_string(j))
                     .Label("app", rng.Uniform(3) == 0 ? "db" : "web")
                     .NodeName("n" + std::to_string(i));
        if (rng.Uniform(2) == 0) p.OwnerReference("ReplicaSet", rng.Uniform(2) ? "rs" : "other");
        pods.push_back(p.Ptr());
      }
    }
    const bool by_defaults = rng.Uniform(3) == 0;
    auto pb = MakePod("ns", "new").Label("app", "web");
    if (rng.Uniform(3) == 0) pb.NodeSelector("disk", "ssd");
    if (rng.Uniform(2) == 0) pb.TolerationExists("dedicated");
    std::vector<OracleConstraint> cs;
    if (by_defaults) {
      pb.OwnerReference("ReplicaSet", "rs");
      cs = {{std::string(kZone), 5, true, false}, {std::string(kHost), 3, true, false}};
    } else {
      std::vector<std::string_view> keys = {kZone, "rack", kHost};
      for (size_t k = keys.size(); k > 1; --k) std::swap(keys[k - 1], keys[rng.Uniform(k)]);
      keys.resize(1 + rng.Uniform(3));
      for (std::string_view key : keys) {
        cs.push_back({std::string(key), static_cast<int32_t>(1 + rng.Uniform(3)),
                      rng.Uniform(2) == 0, rng.Uniform(2) == 0});
        pb.SpreadConstraint(cs.back().max_skew, key, When::kScheduleAnyway, "app", "web");
      }
    }
    api::Pod pod = pb.Obj();
    for (size_t k = 0; k < pod.topology_spread_constraints.size(); ++k) {
      pod.topology_spread_constraints[k].node_affinity_policy =
          cs[k].honor_affinity ? Policy::kHonor : Policy::kIgnore;
      pod.topology_spread_constraints[k].node_taints_policy =
          cs[k].honor_taints ? Policy::kHonor : Policy::kIgnore;
    }
    std::vector<size_t> feasible;
    for (size_t i = 0; i < num_nodes; ++i) {
      if (rng.Uniform(4) != 0) feasible.push_back(i);
    }
    if (feasible.empty()) feasible.push_back(rng.Uniform(num_nodes));
    const framework::Snapshot snapshot = SnapshotOf(nodes, pods);
    std::vector<framework::NodeIndex> slots;
    for (size_t i : feasible) slots.push_back(static_cast<framework::NodeIndex>(i));
    auto plugin = MustCreate();
    framework::CycleState state;
    ASSERT_TRUE(plugin->PreScore(state, pod, snapshot, slots).ok());
    std::vector<int64_t> got(slots.size());
    plugin->ScoreNodes(state, pod, snapshot, slots, got);
    auto selected = [&](const api::Pod& p) {
      common::Atom app;
      if (!by_defaults) {
        return p.meta.labels.Get(common::Intern("app"), &app) && common::Str(app) == "web";
      }
      for (const api::OwnerReference& r : p.meta.owner_references) {
        if (r.controller) return r.kind == "ReplicaSet" && r.name == "rs";
      }
      return false;
    };
    auto affinity = [&](const api::Node& n) {
      return !pod.node_selector.items().empty() ? LabelOf(n, "disk") == "ssd" : true;
    };
    auto tolerated = [&](const api::Node& n) {
      return n.taints.empty() || !pod.tolerations.empty();
    };
    EXPECT_EQ(got, OracleRawScores(nodes, pods, cs, !by_defaults, feasible, selected, affinity,
                                   tolerated));
    (by_defaults ? defaults : own) += 1;
  }
  EXPECT_GT(own, trials / 2);
  EXPECT_GT(defaults, trials / 5);
}

TEST(PodTopologySpreadTest, NameIsRegisteredName) {
  auto plugin = MustCreate();
  EXPECT_EQ(plugin->Name(), names::kPodTopologySpread);
}

}  // namespace
}  // namespace gpusched::plugins::pod_topology_spread
