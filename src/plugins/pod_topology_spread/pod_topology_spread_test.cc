// SPDX-License-Identifier: Apache-2.0
#include "src/plugins/pod_topology_spread/pod_topology_spread.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <memory>
#include <string>
#include <vector>

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
    for (size_t i = 0; i < 3; ++i) EXPECT_EQ(out[i], plugin->Score(state, rs, snapshot.at(all[i])));
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

TEST(PodTopologySpreadTest, NameIsRegisteredName) {
  auto plugin = MustCreate();
  EXPECT_EQ(plugin->Name(), names::kPodTopologySpread);
}

}  // namespace
}  // namespace gpusched::plugins::pod_topology_spread
