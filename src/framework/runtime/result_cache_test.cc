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

// Counts Filter and Score calls. Rejects nodes labelled full=true; scores by the label "score".
// Node-local unless told otherwise; StateVersion is settable.
class CountingPlugin final : public QueueSortPlugin,
                             public PreFilterPlugin,
                             public FilterPlugin,
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
    if (n.node->meta.labels.Has(common::Intern("full")))
      return Status::Unschedulable("node is full");
    return Status::Success();
  }
  int64_t Score(const CycleState&, const api::Pod&, const NodeInfo& n) const override {
    ++score_calls;
    common::Atom v;
    if (!n.node->meta.labels.Get(common::Intern("score"), &v)) return 0;
    return static_cast<int64_t>(common::Str(v).size());
  }
  Status Bind(CycleState&, const api::Pod&, std::string_view) override { return Status::Success(); }

  bool node_local = true;
  uint64_t version = 0;
  mutable int filter_calls = 0;
  mutable int score_calls = 0;
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
                       config::Point::kScore, config::Point::kBind}) {
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
  EXPECT_EQ(r2.feasible_nodes, 10);
  EXPECT_EQ(snapshot_.at(r2.node).name(), "n5") << "the changed node's new score counts";

  SetNode(7, "full", "x");  // now rejects
  ResetCounts();
  ScheduleResult r3 = Schedule(b);
  EXPECT_EQ(plugin_->filter_calls, 1);
  EXPECT_EQ(plugin_->score_calls, 0);
  EXPECT_EQ(r3.feasible_nodes, 9);
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
  EXPECT_EQ(r.feasible_nodes, 10) << "with Filter skipped every node is feasible";
  ScheduleResult again = Schedule(a);
  EXPECT_EQ(again.feasible_nodes, 9);
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

TEST(ResultCacheTest, LeastRecentlyUsedClassIsEvicted) {
  ResultCache cache(2);
  Snapshot snapshot;
  NodeInfo& ni = snapshot.MutableSlotForCache(0);
  ni.node = std::make_shared<api::Node>();
  ni.generation = 5;
  snapshot.SetNodeCountForCache(1, 5);
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

}  // namespace
}  // namespace gpusched::framework::runtime
