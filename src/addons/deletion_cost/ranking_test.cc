// SPDX-License-Identifier: Apache-2.0
// The worked examples of docs/replicaset-scale-down.md §6 and §7, copied as vectors.
#include "src/addons/deletion_cost/ranking.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "src/api/decode.h"

namespace gpusched::addons::deletion_cost {
namespace {

using std::chrono::hours;
using std::chrono::seconds;

const common::TimePoint kNow = common::TimePoint(seconds(1'700'000'000));

// Fluent PodFacts builder: Running, not ready, on no node, cost absent, unless told.
class P {
 public:
  explicit P(std::string name) {
    f_.namespace_ = "default";
    f_.name = name;
    f_.uid = name;
    f_.phase = "Running";
    f_.created = kNow - hours(1);
  }
  P& Node(std::string n) {
    f_.node_name = std::move(n);
    return *this;
  }
  P& Phase(std::string p) {
    f_.phase = std::move(p);
    return *this;
  }
  P& Uid(std::string u) {
    f_.uid = std::move(u);
    return *this;
  }
  // Ready since `age` ago.
  P& ReadyFor(common::Duration age) {
    f_.ready = true;
    f_.ready_time = kNow - age;
    return *this;
  }
  P& ReadyAt(common::TimePoint t) {
    f_.ready = true;
    f_.ready_time = t;
    return *this;
  }
  P& ReadyZeroTime() {
    f_.ready = true;
    f_.ready_time.reset();
    return *this;
  }
  P& CreatedAgo(common::Duration age) {
    f_.created = kNow - age;
    return *this;
  }
  P& Cost(std::string v) {
    f_.cost_annotation = std::move(v);
    return *this;
  }
  P& Restarts(int32_t n) {
    f_.max_restarts = n;
    return *this;
  }
  P& SidecarRestarts(int32_t n) {
    f_.max_sidecar_restarts = n;
    return *this;
  }
  P& Deleting() {
    f_.deleting = true;
    return *this;
  }
  operator PodFacts() const { return f_; }  // NOLINT: builder

 private:
  PodFacts f_;
};

std::vector<std::string> Names(std::span<const RankedPod> pods) {
  std::vector<std::string> out;
  for (const auto& p : pods) out.push_back(p.facts.name);
  return out;
}

// Checks that `got` is `groups` in sequence, each group in any order (ties are sets).
void ExpectOrder(const std::vector<std::string>& got,
                 const std::vector<std::set<std::string>>& groups) {
  size_t pos = 0;
  for (const auto& g : groups) {
    ASSERT_LE(pos + g.size(), got.size()) << "order too short";
    std::set<std::string> seen(got.begin() + static_cast<std::ptrdiff_t>(pos),
                               got.begin() + static_cast<std::ptrdiff_t>(pos + g.size()));
    EXPECT_EQ(seen, g) << "at position " << pos;
    pos += g.size();
  }
  EXPECT_EQ(pos, got.size());
}

TEST(ParseDeletionCostTest, FollowsUpstreamParser) {
  struct Case {
    std::string value;
    bool ok;
    int32_t want;
  };
  const std::vector<Case> cases = {
      {"0", true, 0},
      {"5", true, 5},
      {"-1", true, -1},
      {"2147483647", true, 2147483647},
      {"-2147483648", true, -2147483647 - 1},
      {"-007", true, -7},
      {"-0", true, 0},
      {"2147483648", false, 0},
      {"-2147483649", false, 0},
      {"+10", false, 0},
      {"008", false, 0},
      {"00", false, 0},
      {"0x10", false, 0},
      {"", false, 0},
      {" 5", false, 0},
      {"5 ", false, 0},
      {"1e3", false, 0},
      {"1.5", false, 0},
      {"-", false, 0},
      {"abc", false, 0},
      {"99999999999999999999999", false, 0},
      {"--5", false, 0},
      {"-+5", false, 0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE("value \"" + c.value + "\"");
    auto got = ParseDeletionCost(c.value);
    EXPECT_EQ(got.ok(), c.ok);
    if (got.ok()) {
      EXPECT_EQ(*got, c.want);
    } else {
      EXPECT_NE(got.status().message().find("must be a 32bit integer"), std::string_view::npos);
    }
    // The comparator's view: invalid counts as 0, and the error is kept for reporting.
    DeletionCost dc = DeletionCostFromAnnotation(&c.value);
    EXPECT_TRUE(dc.present);
    EXPECT_EQ(dc.value, c.want);
    EXPECT_EQ(dc.error.empty(), c.ok);
  }
  DeletionCost missing = DeletionCostFromAnnotation(nullptr);
  EXPECT_FALSE(missing.present);
  EXPECT_EQ(missing.value, 0);
}

TEST(TimeBucketTest, MatchesReferenceTable) {
  EXPECT_EQ(TimeBucket(kNow - seconds(100), kNow), 36);
  EXPECT_EQ(TimeBucket(kNow - seconds(70), kNow), 36);
  EXPECT_EQ(TimeBucket(kNow - seconds(40), kNow), 35);
  EXPECT_EQ(TimeBucket(kNow - seconds(10), kNow), 33);
  EXPECT_EQ(TimeBucket(kNow - seconds(1000), kNow), 39);
  EXPECT_EQ(TimeBucket(kNow - seconds(300), kNow), 38);
  EXPECT_EQ(TimeBucket(kNow - seconds(20), kNow), 34);
  EXPECT_EQ(TimeBucket(kNow, kNow), -1);
  EXPECT_EQ(TimeBucket(kNow + seconds(1), kNow), -1);
  // Bucket k holds [2^k, 2^(k+1)) ns.
  EXPECT_EQ(TimeBucket(kNow - std::chrono::nanoseconds(int64_t{1} << 33), kNow), 33);
  EXPECT_EQ(TimeBucket(kNow - std::chrono::nanoseconds((int64_t{1} << 34) - 1), kNow), 33);
}

struct OrderCase {
  std::string name;
  std::vector<PodFacts> owned;
  std::vector<PodFacts> extra_related;  // old-ReplicaSet pods of the same Deployment
  bool has_owner = true;
  RankingOptions options;
  std::vector<std::set<std::string>> order;  // full deletion order; sets are ties
};

void RunOrderCases(const std::vector<OrderCase>& cases) {
  for (const OrderCase& c : cases) {
    SCOPED_TRACE(c.name);
    std::vector<PodFacts> related = c.owned;
    related.insert(related.end(), c.extra_related.begin(), c.extra_related.end());
    std::vector<RankedPod> ranked = RankPods(c.owned, related, c.has_owner);
    std::vector<size_t> order = OrderForDeletion(ranked, kNow, c.options);
    std::vector<std::string> names;
    for (size_t k : order) names.push_back(ranked[k].facts.name);
    ExpectOrder(names, c.order);
  }
}

TEST(RankingTest, WorkedExamplesOrder) {
  const std::vector<OrderCase> cases = {
      {"A: unassigned first, then phase ordinals, then readiness",
       {P("a").Node("").Phase("Pending"), P("b").Node("n1").Phase("Pending"),
        P("c").Node("n1").Phase("Running"),
        P("d").Node("n2").Phase("Running").ReadyFor(seconds(60)),
        P("e").Node("n2").Phase("Unknown")},
       {},
       true,
       {},
       {{"a"}, {"b"}, {"e"}, {"c"}, {"d"}}},
      {"B: readiness and phase beat cost",
       {P("u").Node("n1").Cost("1000"), P("r").Node("n2").ReadyFor(seconds(60)).Cost("-1000"),
        P("s").Node("n3").Phase("Pending").Cost("1000")},
       {},
       true,
       {},
       {{"s"}, {"u"}, {"r"}}},
      {"C: cost order, invalid and missing both count as 0",
       {P("p1").Node("n1").ReadyAt(kNow - seconds(60)).Cost("5"),
        P("p2").Node("n2").ReadyAt(kNow - seconds(60)).Cost("-1"),
        P("p3").Node("n3").ReadyAt(kNow - seconds(60)),
        P("p4").Node("n4").ReadyAt(kNow - seconds(60)).Cost("-2147483648"),
        P("p5").Node("n5").ReadyAt(kNow - seconds(60)).Cost("100"),
        P("p6").Node("n6").ReadyAt(kNow - seconds(60)).Cost("abc")},
       {},
       true,
       {},
       {{"p4"}, {"p2"}, {"p3", "p6"}, {"p1"}, {"p5"}}},
      {"D: the doubled-up rank spans the old and new ReplicaSets",
       {P("A1").Uid("u1").Node("n1").ReadyFor(seconds(40)),
        P("A2").Uid("u2").Node("n1").ReadyFor(seconds(41)),
        P("A3").Uid("u3").Node("n2").ReadyFor(seconds(42)),
        P("A4").Uid("u4").Node("n3").ReadyFor(seconds(43)),
        P("A5").Uid("u5").Node("n4").ReadyFor(seconds(44)),
        P("A6").Uid("u6").Node("n4").ReadyFor(seconds(45))},
       {P("O1").Uid("o1").Node("n1").ReadyFor(hours(2)),
        P("O2").Uid("o2").Node("n2").ReadyFor(hours(2))},
       true,
       {},
       {{"A1"}, {"A2"}, {"A3"}, {"A5"}, {"A6"}, {"A4"}}},
      {"D without a controller owner: every rank is 0, pure UID order in one bucket",
       {P("A1").Uid("u1").Node("n1").ReadyFor(seconds(40)),
        P("A2").Uid("u2").Node("n1").ReadyFor(seconds(41)),
        P("A3").Uid("u3").Node("n2").ReadyFor(seconds(42)),
        P("A4").Uid("u4").Node("n3").ReadyFor(seconds(43)),
        P("A5").Uid("u5").Node("n4").ReadyFor(seconds(44)),
        P("A6").Uid("u6").Node("n4").ReadyFor(seconds(45))},
       {P("O1").Uid("o1").Node("n1").ReadyFor(hours(2))},
       false,
       {},
       {{"A1"}, {"A2"}, {"A3"}, {"A4"}, {"A5"}, {"A6"}}},
      {"E: logarithmic ready buckets, the UID beats age inside a bucket",
       {P("w").Uid("a1").Node("n1").ReadyFor(seconds(100)),
        P("x").Uid("a9").Node("n2").ReadyFor(seconds(70)),
        P("y").Uid("b0").Node("n3").ReadyFor(seconds(40)),
        P("z").Uid("c0").Node("n4").ReadyFor(seconds(10))},
       {},
       true,
       {},
       {{"z"}, {"y"}, {"w"}, {"x"}}},
      {"E with the legacy (non-logarithmic) rule: plain newest first",
       {P("w").Uid("a1").Node("n1").ReadyFor(seconds(100)),
        P("x").Uid("a9").Node("n2").ReadyFor(seconds(70)),
        P("y").Uid("b0").Node("n3").ReadyFor(seconds(40)),
        P("z").Uid("c0").Node("n4").ReadyFor(seconds(10))},
       {},
       true,
       RankingOptions{.logarithmic_scale_down = false},
       {{"z"}, {"y"}, {"x"}, {"w"}}},
      {"Cost ignored when the PodDeletionCost gate is off",
       {P("lo").Uid("b").Node("n1").ReadyAt(kNow - seconds(60)).Cost("-5"),
        P("hi").Uid("a").Node("n2").ReadyAt(kNow - seconds(60)).CreatedAgo(seconds(10))},
       {},
       true,
       RankingOptions{.pod_deletion_cost = false},
       {{"hi"}, {"lo"}}},
      {"J: mixed, full order",
       {P("P1").Uid("11").Node("n1").ReadyFor(seconds(300)),
        P("P2").Uid("12").Node("n1").ReadyFor(seconds(20)),
        P("P3").Uid("13").Node("n1").ReadyFor(seconds(20)).Cost("50"), P("P4").Uid("21").Node("n2"),
        P("P5").Uid("22").Node("n2").ReadyFor(seconds(3000)).Cost("-10"),
        P("P6").Uid("31").Node("n3").ReadyFor(seconds(20)),
        P("P7").Uid("41").Node("").Phase("Pending")},
       {},
       true,
       {},
       {{"P7"}, {"P4"}, {"P5"}, {"P2"}, {"P1"}, {"P6"}, {"P3"}}},
  };
  RunOrderCases(cases);
}

TEST(RankingTest, PairwiseVectorsForRulesSixToEight) {
  const common::TimePoint t = kNow - seconds(120);
  struct Case {
    std::string name;
    PodFacts p;
    PodFacts q;
    RankingOptions options;
    bool p_first;
    Rule rule;
  };
  const std::vector<Case> cases = {
      {"F1: not ready pods skip rule 6; more restarts first",
       P("p").Node("n1").Restarts(7),
       P("q").Node("n2").Restarts(2),
       {},
       true,
       Rule::kRestarts},
      {"F2: equal ready times fall through to restarts",
       P("p").Node("n1").ReadyAt(t).Restarts(7),
       P("q").Node("n2").ReadyAt(t).Restarts(2),
       {},
       true,
       Rule::kRestarts},
      {"F3: different ready times in one bucket decide by UID, restarts never looked at",
       P("p").Uid("z").Node("n1").ReadyFor(seconds(40)).Restarts(7),
       P("q").Uid("a").Node("n2").ReadyFor(seconds(50)).Restarts(2),
       {},
       false,
       Rule::kReadyTime},
      {"G: equal app restarts, the sidecar restarts decide",
       P("p").Node("n1").Restarts(3).SidecarRestarts(5),
       P("q").Node("n2").Restarts(3).SidecarRestarts(1),
       {},
       true,
       Rule::kRestarts},
      {"G on an older release: sidecars are not compared, rule 8 decides (newer first)",
       P("p").Uid("a").Node("n1").Restarts(3).SidecarRestarts(5).CreatedAgo(seconds(10)),
       P("q").Uid("b").Node("n2").Restarts(3).SidecarRestarts(1).CreatedAgo(seconds(1000)),
       RankingOptions{.sidecar_restarts = false}, true, Rule::kCreation},
      {"H1: creation buckets, the younger bucket first",
       P("p").Uid("z").Node("n1").Phase("Pending").CreatedAgo(seconds(10)),
       P("q").Uid("a").Node("n2").Phase("Pending").CreatedAgo(seconds(1000)),
       {},
       true,
       Rule::kCreation},
      {"H2: same creation bucket, UID decides (older pod first here)",
       P("p").Uid("b").Node("n1").Phase("Pending").CreatedAgo(seconds(100)),
       P("q").Uid("a").Node("n2").Phase("Pending").CreatedAgo(seconds(120)),
       {},
       false,
       Rule::kCreation},
      {"I: a Ready condition without lastTransitionTime counts as newest",
       P("p").Node("n1").ReadyZeroTime(),
       P("q").Node("n2").ReadyFor(hours(1)),
       {},
       true,
       Rule::kReadyTime},
      {"Identical pods are a true tie",
       P("p").Node("n1").ReadyAt(t),
       P("q").Node("n2").ReadyAt(t),
       {},
       false,
       Rule::kTie},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::vector<PodFacts> owned = {c.p, c.q};
    std::vector<RankedPod> r = RankPods(owned, owned, true);
    Verdict pq = Compare(r[0], r[1], kNow, c.options);
    Verdict qp = Compare(r[1], r[0], kNow, c.options);
    EXPECT_EQ(pq.less, c.p_first) << pq.detail;
    EXPECT_EQ(pq.rule, c.rule) << pq.detail;
    EXPECT_EQ(qp.rule, c.rule) << qp.detail;
    if (c.rule != Rule::kTie) {
      EXPECT_NE(pq.less, qp.less);
    }
  }
}

TEST(PlanScaleDownTest, VictimsAndShortcuts) {
  struct Case {
    std::string name;
    ScaleDownInput input;
    std::set<std::string> victims;
    bool ranked;
    int32_t deletions;
    bool burst_capped = false;
    size_t inactive = 0;
  };
  std::vector<PodFacts> d_owned = {P("A1").Uid("u1").Node("n1").ReadyFor(seconds(40)),
                                   P("A2").Uid("u2").Node("n1").ReadyFor(seconds(41)),
                                   P("A3").Uid("u3").Node("n2").ReadyFor(seconds(42)),
                                   P("A4").Uid("u4").Node("n3").ReadyFor(seconds(43)),
                                   P("A5").Uid("u5").Node("n4").ReadyFor(seconds(44)),
                                   P("A6").Uid("u6").Node("n4").ReadyFor(seconds(45))};
  std::vector<PodFacts> d_related = d_owned;
  d_related.push_back(P("O1").Uid("o1").Node("n1").ReadyFor(hours(2)));
  d_related.push_back(P("O2").Uid("o2").Node("n2").ReadyFor(hours(2)));
  // A terminating related pod does not count toward a rank.
  d_related.push_back(P("O3").Uid("o3").Node("n3").ReadyFor(hours(2)).Deleting());
  d_related.push_back(P("O4").Uid("o4").Node("n3").ReadyFor(hours(2)).Phase("Succeeded"));

  std::vector<PodFacts> j_owned = {P("P1").Uid("11").Node("n1").ReadyFor(seconds(300)),
                                   P("P2").Uid("12").Node("n1").ReadyFor(seconds(20)),
                                   P("P3").Uid("13").Node("n1").ReadyFor(seconds(20)).Cost("50"),
                                   P("P4").Uid("21").Node("n2"),
                                   P("P5").Uid("22").Node("n2").ReadyFor(seconds(3000)).Cost("-10"),
                                   P("P6").Uid("31").Node("n3").ReadyFor(seconds(20)),
                                   P("P7").Uid("41").Node("").Phase("Pending")};

  std::vector<PodFacts> with_inactive = {P("live1").Node("n1").ReadyFor(seconds(60)),
                                         P("live2").Node("n1"), P("gone").Node("n1").Deleting(),
                                         P("done").Node("n1").Phase("Succeeded"),
                                         P("failed").Node("n1").Phase("Failed")};
  std::vector<PodFacts> many;
  for (int k = 0; k < 1000; ++k) {
    many.push_back(
        P("m" + std::to_string(k)).Node("n" + std::to_string(k % 7)).ReadyFor(seconds(60 + k)));
  }
  const std::vector<Case> cases = {
      {"D: 6 -> 4 deletes both pods on the crowded node (ranks are not recomputed)",
       {d_owned, d_related, true, 4, kNow},
       {"A1", "A2"},
       true,
       2},
      {"J: mixed, diff 3", {j_owned, j_owned, true, 4, kNow}, {"P7", "P4", "P5"}, true, 3},
      {"inactive pods are neither counted nor chosen",
       {with_inactive, with_inactive, true, 1, kNow},
       {"live2"},
       true,
       1,
       false,
       3},
      {"deleting every pod needs no ranking",
       {j_owned, j_owned, true, 0, kNow},
       {"P1", "P2", "P3", "P4", "P5", "P6", "P7"},
       false,
       7},
      {"scale-up or no change deletes nothing", {j_owned, j_owned, true, 9, kNow}, {}, false, 0},
      {"at most 500 deletions per sync", {many, many, true, 100, kNow}, {}, true, 500, true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ScaleDownPlan plan = PlanScaleDown(c.input);
    EXPECT_EQ(plan.ranked, c.ranked);
    EXPECT_EQ(plan.deletions, c.deletions);
    EXPECT_EQ(plan.burst_capped, c.burst_capped);
    EXPECT_EQ(plan.inactive, c.inactive);
    std::vector<std::string> v = Names(plan.victims());
    if (!c.victims.empty() || c.deletions == 0) {
      EXPECT_EQ(std::set<std::string>(v.begin(), v.end()), c.victims);
    }
    EXPECT_EQ(v.size(), static_cast<size_t>(c.deletions));
    if (plan.ranked) {
      EXPECT_EQ(plan.adjacent.size(), plan.pods.size() - 1);
      EXPECT_EQ(plan.versus_survivor.size(), static_cast<size_t>(plan.deletions));
      for (const Verdict& vs : plan.versus_survivor) {
        EXPECT_TRUE(vs.less || vs.rule == Rule::kTie) << vs.detail;
      }
    }
  }
}

TEST(PlanScaleDownTest, ExplainsTheDecidingRulePerVictim) {
  std::vector<PodFacts> j_owned = {P("P1").Uid("11").Node("n1").ReadyFor(seconds(300)),
                                   P("P2").Uid("12").Node("n1").ReadyFor(seconds(20)),
                                   P("P3").Uid("13").Node("n1").ReadyFor(seconds(20)).Cost("50"),
                                   P("P4").Uid("21").Node("n2"),
                                   P("P5").Uid("22").Node("n2").ReadyFor(seconds(3000)).Cost("-10"),
                                   P("P6").Uid("31").Node("n3").ReadyFor(seconds(20)),
                                   P("P7").Uid("41").Node("").Phase("Pending")};
  ScaleDownPlan plan = PlanScaleDown({j_owned, j_owned, true, 4, kNow});
  ASSERT_EQ(plan.deletions, 3);
  // First survivor: P2 (ready, cost 0, rank 3).
  EXPECT_EQ(plan.pods[3].facts.name, "P2");
  EXPECT_EQ(plan.versus_survivor[0].rule, Rule::kUnassigned);  // P7
  EXPECT_EQ(plan.versus_survivor[1].rule, Rule::kReady);       // P4 not ready
  EXPECT_EQ(plan.versus_survivor[2].rule, Rule::kCost);        // P5 -10 vs 0
  EXPECT_TRUE(plan.tied_survivors.empty());
}

TEST(PlanScaleDownTest, ReportsTiesAtTheCutoff) {
  const common::TimePoint t = kNow - seconds(60);
  std::vector<PodFacts> owned = {P("p1").Node("n1").ReadyAt(t).Cost("5"),
                                 P("p2").Node("n2").ReadyAt(t).Cost("-1"),
                                 P("p3").Node("n3").ReadyAt(t),
                                 P("p4").Node("n4").ReadyAt(t).Cost("-2147483648"),
                                 P("p5").Node("n5").ReadyAt(t).Cost("100"),
                                 P("p6").Node("n6").ReadyAt(t).Cost("abc")};
  ScaleDownPlan plan = PlanScaleDown({owned, owned, true, 3, kNow});
  ASSERT_EQ(plan.deletions, 3);
  std::vector<std::string> v = Names(plan.victims());
  EXPECT_EQ(v[0], "p4");
  EXPECT_EQ(v[1], "p2");
  EXPECT_TRUE(v[2] == "p3" || v[2] == "p6");
  ASSERT_EQ(plan.tied_survivors.size(), 1u);
  const std::string other = plan.pods[plan.tied_survivors[0]].facts.name;
  EXPECT_TRUE(other == "p3" || other == "p6");
  EXPECT_NE(other, v[2]);
  ASSERT_EQ(plan.tied_victims.size(), 1u);
  EXPECT_EQ(plan.tied_victims[0], 2u);
  // The invalid annotation is kept for reporting.
  for (const auto& p : plan.pods) {
    if (p.facts.name == "p6") {
      EXPECT_FALSE(p.cost.error.empty());
    }
  }
}

TEST(OrderForDeletionTest, ToleratesTheIntransitiveComparator) {
  // docs/replicaset-scale-down.md §5: A(ready t1, uid a), B(ready t1, uid c, 5 restarts),
  // C(ready t2, uid b), one bucket: B<A, C<B, A<C. Selection must still return a permutation
  // (std::sort would be UB).
  const common::TimePoint t1 = kNow - seconds(40);
  const common::TimePoint t2 = kNow - seconds(50);
  std::vector<PodFacts> owned = {P("A").Uid("a").Node("n1").ReadyAt(t1),
                                 P("B").Uid("c").Node("n2").ReadyAt(t1).Restarts(5),
                                 P("C").Uid("b").Node("n3").ReadyAt(t2)};
  std::vector<RankedPod> r = RankPods(owned, owned, true);
  EXPECT_TRUE(Compare(r[1], r[0], kNow).less);
  EXPECT_TRUE(Compare(r[2], r[1], kNow).less);
  EXPECT_TRUE(Compare(r[0], r[2], kNow).less);
  std::vector<size_t> order = OrderForDeletion(r, kNow);
  std::vector<size_t> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, (std::vector<size_t>{0, 1, 2}));
}

TEST(DecodePodFactsTest, ReadsEverythingTheComparatorNeeds) {
  const char* text = R"({
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "web-1", "namespace": "prod", "uid": "u-1",
      "creationTimestamp": "2024-05-01T12:00:00Z",
      "labels": {"app": "web"},
      "annotations": {"controller.kubernetes.io/pod-deletion-cost": "-7"},
      "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-abc",
                           "uid": "rs-1", "controller": true}]},
    "spec": {"nodeName": "n1",
      "containers": [{"name": "app"}, {"name": "log"}],
      "initContainers": [{"name": "setup"}, {"name": "proxy", "restartPolicy": "Always"}]},
    "status": {"phase": "Weird", "podIP": "10.0.0.7",
      "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2024-05-01T12:00:05Z"},
                     {"type": "Ready", "status": "False"}],
      "containerStatuses": [{"name": "app", "restartCount": 2}, {"name": "log", "restartCount": 9}],
      "initContainerStatuses": [{"name": "setup", "restartCount": 50},
                                {"name": "proxy", "restartCount": 4}]}})";
  auto json = api::ParseJson(text, "test");
  ASSERT_TRUE(json.ok()) << json.status().ToString();
  auto f = DecodePodFacts(*json);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(f->Key(), "prod/web-1");
  EXPECT_EQ(f->node_name, "n1");
  EXPECT_EQ(f->phase, "Weird");  // an unknown phase has ordinal 0, like Pending
  EXPECT_TRUE(f->ready);
  ASSERT_TRUE(f->ready_time.has_value());
  EXPECT_EQ(f->max_restarts, 9);
  EXPECT_EQ(f->max_sidecar_restarts, 4);  // "setup" is not a sidecar
  EXPECT_EQ(f->cost_annotation.value_or(""), "-7");
  EXPECT_EQ(f->pod_ip, "10.0.0.7");
  ASSERT_NE(f->ControllerRef(), nullptr);
  EXPECT_EQ(f->ControllerRef()->uid, "rs-1");
  EXPECT_TRUE(f->Active());

  std::vector<PodFacts> pods = {*f, P("pending").Phase("Pending").Node("n2")};
  std::vector<RankedPod> r = RankPods(pods, pods, true);
  Verdict v = Compare(r[0], r[1], kNow);
  EXPECT_EQ(v.rule, Rule::kReady);
  EXPECT_FALSE(v.less);
}

}  // namespace
}  // namespace gpusched::addons::deletion_cost
