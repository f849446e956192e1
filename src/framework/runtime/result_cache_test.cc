// SPDX-License-Identifier: Apache-2.0
// Result reuse through Framework::SchedulePod: which nodes are evaluated again, and when reuse is
// refused. (The end-to-end check that placements are unchanged is src/sim/result_reuse_test.cc.)
#include "src/framework/runtime/result_cache.h"

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "src/framework/runtime/framework.h"
#include "src/testing/builders.h"
#include "src/testing/fake_handle.h"

namespace gpusched::framework::runtime {
namespace {

using gpusched::testing::MakePod;

// Counts Filter and Score calls. Rejects nodes labelled full=true (Unschedulable) and gone=true
// (UnschedulableAndUnresolvable); scores by the label "score". Node-local unless told otherwise;
// StateVersion is settable. PostFilter records what its context says of every slot.
class CountingPlugin final : public QueueSortPlugin,
                             public PreFilterPlugin,
                             public FilterPlugin,
                             public PostFilterPlugin,
                             public ScorePlugin,
                             public BindPlugin {
 public:
  std::string_view Name() const override { return "Counting"; }
  bool NodeLocal() const override { return node_local; }
  uint64_t StateVersion() const override { return version; }
  bool Less(const QueuedPodInfo&, const QueuedPodInfo&) const override { return false; }
  Status PreFilter(CycleState&, const api::Pod& pod, const Snapshot&) override {
    return pod.meta.Annotation("skip-filter") != nullptr ? Status::Skip() : Status::Success();
  }
  Status Filter(const CycleState&, const api::Pod&, const NodeInfo& n) const override {
    ++filter_calls;
    if (n.node->meta.labels.Has(common::Intern("gone")))
      return Status::Unresolvable("node is gone");
    if (n.node->meta.labels.Has(common::Intern("full")))
      return Status::Unschedulable("node is full");
    return Status::Success();
  }
  void ScoreNodes(const CycleState&, const api::Pod&, const Snapshot& snapshot,
                  std::span<const NodeIndex> nodes, std::span<int64_t> out) const override {
    ScoreEach(snapshot, nodes, out, [&](const NodeInfo& n) -> int64_t {
      ++score_calls;
      common::Atom v;
      if (!n.node->meta.labels.Get(common::Intern("score"), &v)) return 0;
      return static_cast<int64_t>(common::Str(v).size());
    });
  }
  Status Bind(CycleState&, const api::Pod&, std::string_view) override { return Status::Success(); }
  Status PostFilter(CycleState&, const api::Pod&, const Snapshot& snapshot,
                    const PostFilterContext& context, PostFilterResult&) override {
    codes.clear();
    for (size_t i = 0; i < snapshot.nodes().size(); ++i)
      codes.push_back(context.NodeCode(static_cast<NodeIndex>(i)));
    const auto p = context.PotentialNodes();
    potential.assign(p.begin(), p.end());
    return Status::Unschedulable("");
  }

  bool node_local = true;
  uint64_t version = 0;
  mutable int filter_calls = 0;
  mutable int score_calls = 0;
  std::vector<Code> codes;  // per slot, at the last PostFilter
  std::vector<NodeIndex> potential;
};

class ResultReuseTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(
        registry_
            .Register("Counting",
                      [this](const boost::json::value&, Handle&) -> common::StatusOr<PluginPtr> {
                        auto p = std::make_unique<CountingPlugin>();
                        plugin_ = p.get();
                        return PluginPtr(std::move(p));
                      })
            .ok());
    MakeFramework();
    for (int i = 0; i < 10; ++i) {
      SetNode(i, i == 3 ? "full" : "", std::string(static_cast<size_t>(i % 4 + 1), 'x'));
    }
  }
  // A fresh framework (and plugin, and result cache).
  void MakeFramework() {
    config::Profile p;
    p.path = "profiles[0]";
    for (auto point : {config::Point::kQueueSort, config::Point::kPreFilter, config::Point::kFilter,
                       config::Point::kPostFilter, config::Point::kScore, config::Point::kBind}) {
      p.plugins.at(point).disabled.push_back({"*", 0, ""});
      p.plugins.at(point).enabled.push_back({"Counting", 0, ""});
    }
    auto fw = Framework::Create(p, 100, registry_, handle_);
    ASSERT_TRUE(fw.ok()) << fw.status().ToString();
    fw_ = std::move(*fw);
  }
  // (Re)writes slot i with a new generation, as the cache does on every change.
  void SetNode(int i, const std::string& extra_label, const std::string& score) {
    auto n = std::make_shared<api::Node>();
    n->meta.name = "n" + std::to_string(i);
    if (!extra_label.empty()) n->meta.labels.Set(extra_label, "true");
    n->meta.labels.Set("score", score);
    NodeInfo& ni = snapshot_.MutableSlotForCache(i);
    ni.node = n;
    ni.index = i;
    ni.generation = ++generation_;
    snapshot_.SetGenerationForCache(i, generation_);
    snapshot_.IndexNameForCache(n->meta.name, i);
    snapshot_.SetNodeCountForCache(std::max(snapshot_.num_nodes(), i + 1), generation_);
  }
  ScheduleResult Schedule(const api::Pod& pod) {
    CycleState state;
    return fw_->SchedulePod(state, pod, snapshot_, random_);
  }
  void ResetCounts() {
    plugin_->filter_calls = 0;
    plugin_->score_calls = 0;
  }

  Registry registry_;
  gpusched::testing::FakeHandle handle_;
  Snapshot snapshot_;
  common::Random random_{1};
  std::unique_ptr<Framework> fw_;
  CountingPlugin* plugin_ = nullptr;
  uint64_t generation_ = 0;
};

TEST_F(ResultReuseTest, EquivalentPodReevaluatesOnlyChangedNodes) {
  const api::Pod a = MakePod("ns", "a").Cpu("1").Obj();
  const api::Pod b = MakePod("ns", "b").Cpu("1").Label("index", "1").Obj();  // same key
  ScheduleResult r1 = Schedule(a);
  ASSERT_TRUE(r1.status.ok());
  EXPECT_EQ(plugin_->filter_calls, 10);
  EXPECT_EQ(plugin_->score_calls, 9);
  EXPECT_EQ(r1.diagnosis.reason_counts.size(), 1u);

  SetNode(5, "", "xxxxxxxxxx");  // changed: now the best node
  SetNode(3, "", "x");           // no longer full
  ResetCounts();
  ScheduleResult r2 = Schedule(b);
  ASSERT_TRUE(r2.status.ok());
  EXPECT_EQ(plugin_->filter_calls, 2) << "only the two changed nodes are filtered again";
  EXPECT_EQ(plugin_->score_calls, 2) << "only the two changed nodes are scored again";
  EXPECT_EQ(r2.counts.feasible, 10);
  EXPECT_EQ(snapshot_.at(r2.node).name(), "n5") << "the changed node's new score counts";

  SetNode(7, "full", "x");  // now rejects
  ResetCounts();
  ScheduleResult r3 = Schedule(b);
  EXPECT_EQ(plugin_->filter_calls, 1);
  EXPECT_EQ(plugin_->score_calls, 0);
  EXPECT_EQ(r3.counts.feasible, 9);
  ASSERT_EQ(r3.diagnosis.reason_counts.size(), 1u);
  EXPECT_EQ(r3.diagnosis.reason_counts[0].first, "node is full");
  EXPECT_EQ(r3.diagnosis.reason_counts[0].second, 1);
  EXPECT_EQ(r3.diagnosis.unschedulable_plugins, std::vector<std::string>{"Counting"});
}

TEST_F(ResultReuseTest, ReuseIsRefusedWhenItWouldNotBeExact) {
  const api::Pod a = MakePod("ns", "a").Cpu("1").Obj();
  struct Case {
    std::string name;
    std::function<void()> between;  // runs between the two cycles
    api::Pod second;
    int want_filter_calls;
  };
  const std::vector<Case> cases = {
      {"an equivalent pod reuses all ten verdicts", [] {}, MakePod("ns", "b").Cpu("1").Obj(), 0},
      {"a pod with another request is another class", [] {}, MakePod("ns", "b").Cpu("2").Obj(), 10},
      {"a plugin state version change invalidates", [this] { plugin_->version++; },
       MakePod("ns", "b").Cpu("1").Obj(), 10},
      {"a plugin that is not node-local disables reuse", [this] { plugin_->node_local = false; },
       MakePod("ns", "b").Cpu("1").Obj(), 10},
      {"reuse turned off evaluates everything", [this] { fw_->SetResultReuse(false); },
       MakePod("ns", "b").Cpu("1").Obj(), 10},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    MakeFramework();
    ASSERT_TRUE(Schedule(a).status.ok());
    c.between();
    ResetCounts();
    EXPECT_TRUE(Schedule(c.second).status.ok());
    EXPECT_EQ(plugin_->filter_calls, c.want_filter_calls);
  }
}

TEST_F(ResultReuseTest, SkippedFilterIsPartOfTheSignature) {
  // Same key (annotations outside gpusched.io/ are not in it) but PreFilter skips Filter for the
  // second pod: the stored verdicts, which include Filter's rejection of n3, must not be used.
  const api::Pod a = MakePod("ns", "a").Cpu("1").Obj();
  const api::Pod b = MakePod("ns", "b").Cpu("1").Annotation("skip-filter", "yes").Obj();
  ASSERT_TRUE(Schedule(a).status.ok());
  ScheduleResult r = Schedule(b);
  EXPECT_EQ(r.counts.feasible, 10) << "with Filter skipped every node is feasible";
  ScheduleResult again = Schedule(a);
  EXPECT_EQ(again.counts.feasible, 9);
}

TEST_F(ResultReuseTest, UnknownGenerationsAreNeverReused) {
  // A hand-filled snapshot (generation 0 on the nodes) never reuses.
  for (int i = 0; i < 10; ++i) snapshot_.SetGenerationForCache(i, 0);
  const api::Pod a = MakePod("ns", "a").Cpu("1").Obj();
  ASSERT_TRUE(Schedule(a).status.ok());
  ResetCounts();
  ASSERT_TRUE(Schedule(a).status.ok());
  EXPECT_EQ(plugin_->filter_calls, 10);
  EXPECT_EQ(plugin_->score_calls, 9);
}

// A cache-kept snapshot of `n` nodes, each at generation 5.
void FillSnapshot(Snapshot& snapshot, int n) {
  for (int i = 0; i < n; ++i) {
    NodeInfo& ni = snapshot.MutableSlotForCache(i);
    ni.node = std::make_shared<api::Node>();
    ni.generation = 5;
    snapshot.SetGenerationForCache(i, 5);
  }
  snapshot.SetNodeCountForCache(n, 5);
}

TEST_F(ResultReuseTest, PotentialNodesAreTheValidNodesWhoseCodeIsUnschedulable) {
  // PotentialNodes reads stored verdicts from flat arrays; NodeCode answers one slot. Over random
  // clusters and changes, with reuse on and off, both must agree with what each node is.
  common::Random rng(7);
  constexpr int kSlots = 24;
  for (bool reuse : {true, false}) {
    MakeFramework();
    fw_->SetResultReuse(reuse);
    for (int round = 0; round < 300; ++round) {
      const int changes = round == 0 ? kSlots : static_cast<int>(rng.Uniform(4));
      for (int c = 0; c < changes; ++c) {
        const int i = round == 0 ? c : static_cast<int>(rng.Uniform(kSlots));
        const uint64_t kind = rng.Uniform(10);
        if (kind == 0 && i > 0) {  // an empty slot (node deleted); slot 0 always holds a node
          NodeInfo& ni = snapshot_.MutableSlotForCache(i);
          ni = NodeInfo{};
          ni.index = i;
          ni.generation = ++generation_;
          snapshot_.SetGenerationForCache(i, generation_);
        } else {
          SetNode(i, kind < 3 ? "gone" : "full", "x");  // every node rejects: PostFilter runs
        }
      }
      int valid = 0;
      for (const NodeInfo& ni : snapshot_.nodes()) valid += ni.valid() ? 1 : 0;
      snapshot_.SetNodeCountForCache(valid, generation_);
      const api::Pod pod = MakePod("ns", "p" + std::to_string(rng.Uniform(3))).Cpu("1").Obj();
      ASSERT_FALSE(Schedule(pod).status.ok());
      std::vector<NodeIndex> want;
      for (const NodeInfo& ni : snapshot_.nodes()) {
        if (!ni.valid()) {
          EXPECT_EQ(plugin_->codes[static_cast<size_t>(ni.index)],
                    Code::kUnschedulableAndUnresolvable);
          continue;
        }
        const bool gone = ni.node->meta.labels.Has(common::Intern("gone"));
        EXPECT_EQ(plugin_->codes[static_cast<size_t>(ni.index)],
                  gone ? Code::kUnschedulableAndUnresolvable : Code::kUnschedulable);
        if (!gone) want.push_back(ni.index);
      }
      ASSERT_EQ(plugin_->potential, want) << "round " << round << " reuse " << reuse;
    }
  }
}

TEST(ResultCacheTest, LeastRecentlyUsedClassIsEvicted) {
  ResultCache cache(2);  // two recent classes
  Snapshot snapshot;
  FillSnapshot(snapshot, 1);
  const std::vector<uint64_t> sig;
  cache.Acquire("a", 1, snapshot, sig).StoreVerdict(0, 5, Status::Unschedulable("r"));
  cache.Acquire("b", 2, snapshot, sig).StoreVerdict(0, 5, Status::Success());
  EXPECT_TRUE(cache.Acquire("a", 1, snapshot, sig).HasVerdict(0, 5));  // a is now the newest
  cache.Acquire("c", 3, snapshot, sig);                                // evicts b
  EXPECT_EQ(cache.num_classes(), 2u);
  EXPECT_FALSE(cache.Acquire("b", 2, snapshot, sig).HasVerdict(0, 5));
  ResultCache::Class& a = cache.Acquire("a", 1, snapshot, sig);
  // Acquiring b evicted a (then the least recently used), so a starts empty again.
  EXPECT_FALSE(a.HasVerdict(0, 5));
  // A hash collision with a different key is another class.
  cache.Acquire("x", 9, snapshot, sig).StoreVerdict(0, 5, Status::Success());
  EXPECT_FALSE(cache.Acquire("y", 9, snapshot, sig).HasVerdict(0, 5));
}

TEST(ResultCacheTest, ClassesOfWaitingPodsAreKeptByBytes) {
  constexpr size_t kNodes = 4;
  ASSERT_EQ(ResultCache::ClassBytes(kNodes), kNodes * 10);
  // One recent class; waiting classes while their verdicts take at most 3 classes' bytes - 1.
  ResultCache cache(1, 3 * ResultCache::ClassBytes(kNodes) - 1);
  Snapshot snapshot;
  FillSnapshot(snapshot, kNodes);
  const std::vector<uint64_t> sig;
  auto wait = [&](const std::string& key, uint64_t hash) {
    ResultCache::Class& c = cache.Acquire(key, hash, snapshot, sig);
    c.StoreVerdict(0, 5, Status::Unschedulable("r"));
    cache.MarkWaiting(c);
  };
  wait("a", 1);
  wait("b", 2);
  EXPECT_EQ(cache.waiting_bytes(), 2 * ResultCache::ClassBytes(kNodes));
  cache.Acquire("r1", 11, snapshot, sig).StoreVerdict(0, 5, Status::Success());
  cache.Acquire("r2", 12, snapshot, sig);  // takes r1's place in the recent segment
  EXPECT_FALSE(cache.Acquire("r1", 11, snapshot, sig).HasVerdict(0, 5));
  EXPECT_TRUE(cache.Acquire("a", 1, snapshot, sig).HasVerdict(0, 5));  // recent ones never evict
  wait("c", 3);                                                        // evicts b, not a
  EXPECT_EQ(cache.num_waiting_classes(), 2u);
  EXPECT_FALSE(cache.Acquire("b", 2, snapshot, sig).HasVerdict(0, 5));
  EXPECT_TRUE(cache.Acquire("a", 1, snapshot, sig).HasVerdict(0, 5));
  // Nodes added: the class in use grows even past the budget; the other waiting ones go.
  FillSnapshot(snapshot, 3 * kNodes);
  ResultCache::Class& a = cache.Acquire("a", 1, snapshot, sig);
  EXPECT_EQ(cache.num_waiting_classes(), 1u);
  EXPECT_EQ(cache.waiting_bytes(), ResultCache::ClassBytes(3 * kNodes));
  EXPECT_TRUE(a.HasVerdict(0, 5));
  EXPECT_FALSE(a.HasVerdict(3 * kNodes - 1, 5));
}

TEST(ResultCacheTest, ScoreColumnsGoToTheClassesScoredMostRecently) {
  // Waiting pods of thousands of classes keep their verdicts; only the last kMaxScoredClasses
  // classes scored keep score columns, taken from the least recently scored one.
  constexpr size_t kNodes = 3;
  constexpr size_t kMax = ResultCache::kMaxScoredClasses;
  ResultCache cache(2 * kMax);
  Snapshot snapshot;
  FillSnapshot(snapshot, kNodes);
  const std::vector<uint64_t> sig;
  auto score = [&](size_t k) {
    const std::string key = "class-" + std::to_string(k);
    ResultCache::Class& c = cache.Acquire(key, k, snapshot, sig);
    c.StoreVerdict(0, 5, Status::Success());
    cache.PrepareScores(c, sig, 2);
    EXPECT_FALSE(c.HasScores(0, 5)) << key;
    c.SetScore(0, 1, static_cast<int64_t>(k));
    c.MarkScored(0, 5);
  };
  auto scored = [&](size_t k) {
    ResultCache::Class& c = cache.Acquire("class-" + std::to_string(k), k, snapshot, sig);
    cache.PrepareScores(c, sig, 2);
    return c.HasScores(0, 5) && c.Score(0, 1) == static_cast<int64_t>(k);
  };
  for (size_t k = 0; k < kMax; ++k) score(k);
  EXPECT_EQ(cache.num_scored_classes(), kMax);
  EXPECT_TRUE(scored(0));  // class 0 is now the most recently scored; 1 the least
  score(kMax);             // takes class 1's columns
  EXPECT_EQ(cache.num_scored_classes(), kMax);
  EXPECT_TRUE(scored(0));
  EXPECT_TRUE(scored(kMax));
  EXPECT_FALSE(scored(1));  // its verdicts stay; its scores are gone (and it took class 2's)
  EXPECT_TRUE(cache.Acquire("class-1", 1, snapshot, sig).HasVerdict(0, 5));
  EXPECT_EQ(cache.num_classes(), kMax + 1);
}

}  // namespace
}  // namespace gpusched::framework::runtime
