// SPDX-License-Identifier: Apache-2.0
// Framework::queueing_hints: which plugins of a profile register which events.
#include <gtest/gtest.h>

#include "src/framework/runtime/framework.h"
#include "src/testing/fake_handle.h"

namespace gpusched::framework::runtime {
namespace {

// Sorts, filters (twice: PreFilter and Filter) and binds; registers node adds only.
class Hinted final : public QueueSortPlugin,
                     public PreFilterPlugin,
                     public FilterPlugin,
                     public BindPlugin,
                     public EnqueueExtensions {
 public:
  std::string_view Name() const override { return "Hinted"; }
  bool Less(const QueuedPodInfo&, const QueuedPodInfo&) const override { return false; }
  Status PreFilter(CycleState&, const api::Pod&, const Snapshot&) override { return {}; }
  Status Filter(const CycleState&, const api::Pod&, const NodeInfo&) const override { return {}; }
  Status Bind(CycleState&, const api::Pod&, std::string_view) override { return {}; }
  std::vector<ClusterEventWithHint> EventsToRegister() const override {
    return {{ClusterEvent{EventResource::kNode, kAdd}, nullptr}};
  }
};

// A Filter without EnqueueExtensions.
class Plain final : public FilterPlugin {
 public:
  std::string_view Name() const override { return "Plain"; }
  Status Filter(const CycleState&, const api::Pod&, const NodeInfo&) const override { return {}; }
};

TEST(QueueingHintsTest, EachRejectingPluginOnceAndPlainOnesOnEveryEvent) {
  Registry registry;
  ASSERT_TRUE(registry
                  .Register("Hinted",
                            [](const boost::json::value&, Handle&) -> common::StatusOr<PluginPtr> {
                              return PluginPtr(std::make_unique<Hinted>());
                            })
                  .ok());
  ASSERT_TRUE(registry
                  .Register("Plain",
                            [](const boost::json::value&, Handle&) -> common::StatusOr<PluginPtr> {
                              return PluginPtr(std::make_unique<Plain>());
                            })
                  .ok());
  config::Profile p;
  p.path = "profiles[0]";
  for (auto point : {config::Point::kQueueSort, config::Point::kPreFilter, config::Point::kFilter,
                     config::Point::kBind}) {
    p.plugins.at(point).disabled.push_back({"*", 0, ""});
    p.plugins.at(point).enabled.push_back({"Hinted", 0, ""});
  }
  p.plugins.at(config::Point::kFilter).enabled.push_back({"Plain", 0, ""});
  testing::FakeHandle handle;
  auto fw = Framework::Create(p, 100, registry, handle);
  ASSERT_TRUE(fw.ok()) << fw.status().ToString();
  const ProfileHints& hints = (*fw)->queueing_hints();
  ASSERT_EQ(hints.size(), 2U);
  EXPECT_EQ(hints[0].plugin, "Hinted");
  ASSERT_EQ(hints[0].events.size(), 1U);
  EXPECT_EQ(hints[0].events[0].event.resource, EventResource::kNode);
  EXPECT_EQ(hints[0].events[0].event.actions, static_cast<uint32_t>(kAdd));
  EXPECT_EQ(hints[1].plugin, "Plain");
  ASSERT_EQ(hints[1].events.size(), 1U);
  EXPECT_EQ(hints[1].events[0].event.resource, EventResource::kWildCard);
  EXPECT_FALSE(hints[1].events[0].hint);
}

TEST(QueueingHintsTest, EventLabelsAreUpstreams) {
  EXPECT_EQ(EventLabel({EventResource::kNode, kAdd}), "NodeAdd");
  EXPECT_EQ(EventLabel({EventResource::kAssignedPod, kDelete}), "AssignedPodDelete");
  EXPECT_EQ(EventLabel({EventResource::kNode, kUpdateNodeLabel}), "NodeUpdateNodeLabel");
  EXPECT_EQ(EventLabel({EventResource::kNode, kUpdateNodeLabel | kUpdateNodeTaint}), "NodeUpdate");
}

}  // namespace
}  // namespace gpusched::framework::runtime
