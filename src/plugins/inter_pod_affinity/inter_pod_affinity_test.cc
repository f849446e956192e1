// SPDX-License-Identifier: Apache-2.0
#include "src/plugins/inter_pod_affinity/inter_pod_affinity.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <memory>
#include <string>
#include <vector>

#include "src/plugins/names.h"
#include "src/testing/builders.h"
#include "src/testing/plugin_fixture.h"

GPUSCHED_TESTING_COUNT_ALLOCATIONS();

namespace gpusched::plugins::inter_pod_affinity {
namespace {

using framework::Code;
using testing::MakeNode;
using testing::MakePod;
using testing::SnapshotOf;

constexpr std::string_view kZone = "topology.kubernetes.io/zone";
constexpr std::string_view kHost = "kubernetes.io/hostname";

std::unique_ptr<InterPodAffinity> MustCreate(std::string_view args_json = "{}") {
  return testing::MustCreate<InterPodAffinity>(args_json);
}

api::PodPtr Placed(std::string_view name, std::string_view node, std::string_view app,
                   std::string_view ns = "ns") {
  return MakePod(ns, name).Label("app", app).NodeName(node).Ptr();
}

// Three zones: a1, a2 in a; b1 in b; c1 in c.
std::vector<api::NodePtr> Nodes() {
  return {MakeNode("a1").Zone("a").Ptr(), MakeNode("a2").Zone("a").Ptr(),
          MakeNode("b1").Zone("b").Ptr(), MakeNode("c1").Zone("c").Ptr()};
}

// "node:code" for every node ("ok" for success), or "skip".
std::string Verdicts(InterPodAffinity& plugin, const api::Pod& pod,
                     const framework::Snapshot& snapshot) {
  framework::CycleState state;
  framework::Status pre = plugin.PreFilter(state, pod, snapshot);
  if (pre.IsSkip()) return "skip";
  EXPECT_TRUE(pre.ok()) << pre.ToString();
  std::string out;
  std::vector<framework::Status> statuses;
  statuses.reserve(snapshot.nodes().size());
  g_counting = true;
  g_allocations = 0;
  for (const framework::NodeInfo& n : snapshot.nodes()) {
    statuses.push_back(plugin.Filter(state, pod, n));
  }
  g_counting = false;
  EXPECT_EQ(g_allocations, 0) << "Filter must not allocate";
  for (size_t i = 0; i < statuses.size(); ++i) {
    if (!out.empty()) out += " ";
    out += std::string(snapshot.nodes()[i].name()) + ":";
    const framework::Status& s = statuses[i];
    if (s.ok()) {
      out += "ok";
    } else if (s.reason() == kReasonAffinityRulesNotMatch) {
      EXPECT_EQ(s.code(), Code::kUnschedulableAndUnresolvable);
      out += "affinity";
    } else if (s.reason() == kReasonAntiAffinityRulesNotMatch) {
      EXPECT_EQ(s.code(), Code::kUnschedulable);
      out += "anti";
    } else if (s.reason() == kReasonExistingAntiAffinityRulesNotMatch) {
      EXPECT_EQ(s.code(), Code::kUnschedulable);
      out += "existing";
    } else {
      out += s.ToString();
    }
  }
  return out;
}

TEST(InterPodAffinityTest, Filter) {
  struct Case {
    std::string name;
    api::Pod pod;
    std::vector<api::PodPtr> pods;
    std::string want;
  };
  std::vector<api::NodePtr> nodes = Nodes();
  api::PodPtr anti_web_on_a1 = MakePod("ns", "guard")
                                   .Label("app", "guard")
                                   .NodeName("a1")
                                   .PodAntiAffinity(kHost, "app", "web")
                                   .Ptr();
  const std::vector<Case> cases = {
      {"no terms and no existing anti-affinity skips the plugin",
       MakePod("ns", "p").Label("app", "web").Obj(),
       {Placed("w", "a1", "web")},
       "skip"},
      {"required anti-affinity on hostname keeps replicas off a node with one",
       MakePod("ns", "p").Label("app", "web").PodAntiAffinity(kHost, "app", "web").Obj(),
       {Placed("w", "a1", "web")},
       "a1:anti a2:ok b1:ok c1:ok"},
      {"required anti-affinity on zone rejects the whole zone",
       MakePod("ns", "p").Label("app", "web").PodAntiAffinity(kZone, "app", "web").Obj(),
       {Placed("w", "a1", "web")},
       "a1:anti a2:anti b1:ok c1:ok"},
      {"required affinity on zone needs a matching pod in the zone",
       MakePod("ns", "p").Label("app", "web").PodAffinity(kZone, "app", "db").Obj(),
       {Placed("d", "a2", "db"), Placed("w", "b1", "web")},
       "a1:ok a2:ok b1:affinity c1:affinity"},
      {"the first pod of a self-affine group may go anywhere",
       MakePod("ns", "p").Label("app", "web").PodAffinity(kZone, "app", "web").Obj(),
       {},
       "a1:ok a2:ok b1:ok c1:ok"},
      {"required affinity with no matching pod and no self match fits nowhere",
       MakePod("ns", "p").Label("app", "web").PodAffinity(kZone, "app", "db").Obj(),
       {},
       "a1:affinity a2:affinity b1:affinity c1:affinity"},
      {"the symmetric check: an existing pod's anti-affinity repels the incoming pod",
       MakePod("ns", "p").Label("app", "web").Obj(),
       {anti_web_on_a1},
       "a1:existing a2:ok b1:ok c1:ok"},
      {"an existing pod's anti-affinity doesn't repel pods it doesn't select",
       MakePod("ns", "p").Label("app", "api").Obj(),
       {anti_web_on_a1},
       "a1:ok a2:ok b1:ok c1:ok"},
      {"an existing pod's anti-affinity applies only in its own namespace by default",
       MakePod("other", "p").Label("app", "web").Obj(),
       {anti_web_on_a1},
       "a1:ok a2:ok b1:ok c1:ok"},
      {"pods of other namespaces don't count for the pod's terms",
       MakePod("ns", "p").Label("app", "web").PodAntiAffinity(kHost, "app", "web").Obj(),
       {Placed("w", "a1", "web", "other")},
       "a1:ok a2:ok b1:ok c1:ok"},
      {"finished pods don't count",
       MakePod("ns", "p").Label("app", "web").PodAntiAffinity(kHost, "app", "web").Obj(),
       {MakePod("ns", "done")
            .Label("app", "web")
            .NodeName("a1")
            .Phase(api::PodPhase::kSucceeded)
            .Ptr()},
       "a1:ok a2:ok b1:ok c1:ok"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto plugin = MustCreate();
    const framework::Snapshot snapshot = SnapshotOf(nodes, c.pods);
    EXPECT_EQ(Verdicts(*plugin, c.pod, snapshot), c.want);
  }
}

TEST(InterPodAffinityTest, FilterNamespacesAndMissingLabels) {
  std::vector<api::NodePtr> nodes = {MakeNode("a1").Zone("a").Ptr(), MakeNode("bare").Ptr()};
  std::vector<api::PodPtr> pods = {Placed("w", "a1", "web", "other")};
  auto plugin = MustCreate();
  const framework::Snapshot snapshot = SnapshotOf(nodes, pods);

  api::Pod listed = MakePod("ns", "p").PodAntiAffinity(kHost, "app", "web").Obj();
  listed.affinity.pod_anti_affinity.required[0].namespaces = {"other"};
  EXPECT_EQ(Verdicts(*plugin, listed, snapshot), "a1:anti bare:ok");

  api::Pod all = MakePod("ns", "p").PodAntiAffinity(kHost, "app", "web").Obj();
  all.affinity.pod_anti_affinity.required[0].namespace_selector.emplace();
  EXPECT_EQ(Verdicts(*plugin, all, snapshot), "a1:anti bare:ok");

  // A node without the affinity term's topology key never satisfies required affinity.
  api::Pod affine = MakePod("ns", "p").Label("app", "web").PodAffinity(kZone, "app", "web").Obj();
  EXPECT_EQ(Verdicts(*plugin, affine, snapshot), "a1:ok bare:affinity");
}

// Normalized scores of every node (all feasible), or {} when PreScore skipped.
std::vector<int64_t> Scores(InterPodAffinity& plugin, const api::Pod& pod,
                            const framework::Snapshot& snapshot) {
  return testing::NormalizedScores(plugin, pod, snapshot, g_counting, g_allocations);
}

TEST(InterPodAffinityTest, Score) {
  struct Case {
    std::string name;
    std::string args;
    api::Pod pod;
    std::vector<api::PodPtr> pods;
    std::vector<int64_t> want;  // a1, a2, b1, c1; {} = skipped
  };
  const std::vector<Case> cases = {
      {"no preferred terms and no existing affinity skips Score",
       "{}",
       MakePod("ns", "p").Label("app", "web").Obj(),
       {Placed("w", "a1", "web")},
       {}},
      {"the seed's data-processor: preferred anti-affinity on hostname avoids busy nodes",
       "{}",
       MakePod("ns", "dp-3")
           .Label("app", "data-processor")
           .PreferredPodAntiAffinity(100, kHost, "app", "data-processor")
           .Obj(),
       {Placed("dp-1", "a1", "data-processor"), Placed("dp-2", "b1", "data-processor")},
       {0, 100, 0, 100}},
      {"preferred affinity on zone favours the zone of the matching pods",
       "{}",
       MakePod("ns", "p").Label("app", "web").PreferredPodAffinity(50, kZone, "app", "cache").Obj(),
       {Placed("c", "a2", "cache")},
       {100, 100, 0, 0}},
      {"affinity and anti-affinity weights add up per domain",
       "{}",
       MakePod("ns", "p")
           .Label("app", "web")
           .PreferredPodAffinity(80, kZone, "app", "cache")
           .PreferredPodAntiAffinity(20, kHost, "app", "web")
           .Obj(),
       // a1: +80 -20 = 60; a2: +80; b1: -20; c1: 0 -> min -20, max 80.
       {Placed("c", "a2", "cache"), Placed("w", "a1", "web"), Placed("w2", "b1", "web")},
       {80, 100, 0, 20}},
      {"an existing pod's required affinity to the pod attracts it (hardPodAffinityWeight)",
       "{}",
       MakePod("ns", "p").Label("app", "web").Obj(),
       {MakePod("ns", "x").Label("app", "x").NodeName("b1").PodAffinity(kZone, "app", "web").Ptr()},
       {0, 0, 100, 0}},
      {"hardPodAffinityWeight 0 turns that off",
       R"({"hardPodAffinityWeight":0})",
       MakePod("ns", "p").Label("app", "web").Obj(),
       {MakePod("ns", "x").Label("app", "x").NodeName("b1").PodAffinity(kZone, "app", "web").Ptr()},
       {0, 0, 0, 0}},
      {"an existing pod's preferred anti-affinity repels the pod",
       "{}",
       MakePod("ns", "p").Label("app", "web").Obj(),
       {MakePod("ns", "x")
            .Label("app", "x")
            .NodeName("a1")
            .PreferredPodAntiAffinity(10, kHost, "app", "web")
            .Ptr()},
       {0, 100, 100, 100}},
      {"ignorePreferredTermsOfExistingPods skips existing pods' preferred terms",
       R"({"ignorePreferredTermsOfExistingPods":true})",
       MakePod("ns", "p").Label("app", "web").Obj(),
       {MakePod("ns", "x")
            .Label("app", "x")
            .NodeName("a1")
            .PreferredPodAntiAffinity(10, kHost, "app", "web")
            .Ptr()},
       {}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto plugin = MustCreate(c.args);
    ASSERT_NE(plugin, nullptr);
    const framework::Snapshot snapshot = SnapshotOf(Nodes(), c.pods);
    EXPECT_EQ(Scores(*plugin, c.pod, snapshot), c.want);
  }
}

TEST(InterPodAffinityTest, ArgsAreValidatedWithFieldPaths) {
  struct Case {
    std::string name;
    std::string args;
    std::string error;  // "" = valid
  };
  const std::vector<Case> cases = {
      {"empty args are the defaults", "{}", ""},
      {"both fields set", R"({"hardPodAffinityWeight":100,
          "ignorePreferredTermsOfExistingPods":true,"kind":"InterPodAffinityArgs"})",
       ""},
      {"hardPodAffinityWeight above 100", R"({"hardPodAffinityWeight":101})",
       "hardPodAffinityWeight: must be in 0..100, got 101"},
      {"hardPodAffinityWeight negative", R"({"hardPodAffinityWeight":-1})",
       "hardPodAffinityWeight: must be in 0..100, got -1"},
      {"ignorePreferredTermsOfExistingPods must be a boolean",
       R"({"ignorePreferredTermsOfExistingPods":"yes"})",
       "ignorePreferredTermsOfExistingPods: must be a boolean"},
      {"unknown fields are rejected", R"({"hardPodAffinityWieght":1})",
       "hardPodAffinityWieght: unknown field"},
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
  auto parsed = ParseArgs(boost::json::parse(R"({"hardPodAffinityWeight":7})"));
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->hard_pod_affinity_weight, 7);
  EXPECT_FALSE(parsed->ignore_preferred_terms_of_existing_pods);
}

TEST(InterPodAffinityTest, CacheKeptSnapshotCountsDecideTheSkip) {
  // On a cache-kept snapshot (node_set_version != 0) the skip for a pod without terms comes from
  // the snapshot's counts; the per-slot memo follows NodeInfo::generation.
  auto plugin = MustCreate();
  framework::Snapshot snapshot = SnapshotOf(Nodes(), {});
  snapshot.BumpNodeSetVersionForCache();
  for (int i = 0; i < 4; ++i) snapshot.MutableSlotForCache(i).generation = 1;
  const api::Pod web = MakePod("ns", "p").Label("app", "web").Obj();
  EXPECT_EQ(Verdicts(*plugin, web, snapshot), "skip");
  EXPECT_EQ(Scores(*plugin, web, snapshot), std::vector<int64_t>{});

  const api::PodPtr guard = MakePod("ns", "guard")
                                .Label("app", "guard")
                                .NodeName("b1")
                                .PodAntiAffinity(kHost, "app", "web")
                                .Ptr();
  framework::NodeInfo& b1 = snapshot.MutableSlotForCache(2);
  snapshot.CountPodsForCache(b1.pods, -1);
  b1.pods.push_back(guard);
  b1.generation = 2;
  snapshot.CountPodsForCache(b1.pods, +1);
  EXPECT_EQ(snapshot.pods_with_required_anti_affinity(), 1);
  EXPECT_EQ(Verdicts(*plugin, web, snapshot), "a1:ok a2:ok b1:existing c1:ok");
  // The guard has required anti-affinity only: nothing to score for the incoming pod.
  EXPECT_EQ(Scores(*plugin, web, snapshot), (std::vector<int64_t>{0, 0, 0, 0}));
}

TEST(InterPodAffinityTest, NameIsRegisteredName) {
  auto plugin = MustCreate();
  EXPECT_EQ(plugin->Name(), names::kInterPodAffinity);
}

}  // namespace
}  // namespace gpusched::plugins::inter_pod_affinity
