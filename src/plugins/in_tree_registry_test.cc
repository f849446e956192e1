// SPDX-License-Identifier: Apache-2.0
#include "src/plugins/in_tree_registry.h"

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <string>
#include <vector>

#include "src/plugins/names.h"
#include "src/testing/fake_handle.h"

namespace gpusched::plugins {
namespace {

TEST(InTreeRegistryTest, RegistersEveryPluginOnce) {
  framework::Registry registry;
  ASSERT_TRUE(RegisterInTreePlugins(registry).ok());
  const std::vector<std::string> want = {
      "Consolidation",     "DefaultBinder",
      "DefaultPreemption", "DynamicResources",
      "GangScheduling",    "GpuFit",
      "GpuFragmentation",  "ImageLocality",
      "InterPodAffinity",  "NetworkLocality",
      "NodeAffinity",      "NodeName",
      "NodePorts",         "NodeResourcesBalancedAllocation",
      "NodeResourcesFit",  "NodeUnschedulable",
      "NodeVolumeLimits",  "PodTopologySpread",
      "PrioritySort",      "TaintToleration",
      "VolumeBinding",     "VolumeRestrictions",
      "VolumeZone",
  };
  EXPECT_EQ(registry.Names(), want);
  EXPECT_EQ(registry.Canonical(names::kGpuTopologyPluginAlias), names::kGpuFit);
  EXPECT_EQ(registry.Find(names::kGpuTopologyPluginAlias), registry.Find(names::kGpuFit));

  common::Status again = RegisterInTreePlugins(registry);
  EXPECT_EQ(again.code(), common::StatusCode::kAlreadyExists);
}

TEST(InTreeRegistryTest, EveryFactoryBuildsWithDefaultArgs) {
  framework::Registry registry;
  ASSERT_TRUE(RegisterInTreePlugins(registry).ok());
  testing::FakeHandle handle;
  for (const std::string& name : registry.Names()) {
    SCOPED_TRACE(name);
    const framework::PluginFactory* factory = registry.Find(name);
    ASSERT_NE(factory, nullptr);
    for (const boost::json::value& args :
         {boost::json::value(), boost::json::value(boost::json::object())}) {
      auto plugin = (*factory)(args, handle);
      ASSERT_TRUE(plugin.ok()) << plugin.status().ToString();
      EXPECT_EQ((*plugin)->Name(), name);
    }
    EXPECT_FALSE((*factory)(boost::json::parse(R"({"noSuchField": 1})"), handle).ok());
  }
}

TEST(InTreeRegistryTest, PluginsImplementTheirPoints) {
  framework::Registry registry;
  ASSERT_TRUE(RegisterInTreePlugins(registry).ok());
  testing::FakeHandle handle;
  auto make = [&](std::string_view name) {
    return (*registry.Find(name))(boost::json::value(), handle).value();
  };
  EXPECT_NE(dynamic_cast<framework::QueueSortPlugin*>(make(names::kPrioritySort).get()), nullptr);
  EXPECT_NE(dynamic_cast<framework::FilterPlugin*>(make(names::kNodeUnschedulable).get()), nullptr);
  EXPECT_NE(dynamic_cast<framework::FilterPlugin*>(make(names::kNodeName).get()), nullptr);
  EXPECT_NE(dynamic_cast<framework::FilterPlugin*>(make(names::kNodePorts).get()), nullptr);
  EXPECT_NE(dynamic_cast<framework::EnqueueExtensions*>(make(names::kNodePorts).get()), nullptr);
  EXPECT_NE(
      dynamic_cast<framework::ScorePlugin*>(make(names::kNodeResourcesBalancedAllocation).get()),
      nullptr);
  EXPECT_NE(dynamic_cast<framework::ScorePlugin*>(make(names::kImageLocality).get()), nullptr);
  EXPECT_NE(dynamic_cast<framework::ScorePlugin*>(make(names::kNodeResourcesFit).get()), nullptr);
  EXPECT_NE(dynamic_cast<framework::ScorePlugin*>(make(names::kTaintToleration).get()), nullptr);
  EXPECT_NE(dynamic_cast<framework::ScorePlugin*>(make(names::kNodeAffinity).get()), nullptr);
  EXPECT_NE(dynamic_cast<framework::ReservePlugin*>(make(names::kGpuFit).get()), nullptr);
  EXPECT_NE(dynamic_cast<framework::ReservePlugin*>(make(names::kGpuFragmentation).get()), nullptr);
  EXPECT_NE(dynamic_cast<framework::ReservePlugin*>(make(names::kGpuTopologyPluginAlias).get()),
            nullptr);
  EXPECT_NE(dynamic_cast<framework::BindPlugin*>(make(names::kDefaultBinder).get()), nullptr);
  EXPECT_NE(dynamic_cast<framework::FilterPlugin*>(make(names::kPodTopologySpread).get()), nullptr);
  EXPECT_NE(dynamic_cast<framework::ScorePlugin*>(make(names::kPodTopologySpread).get()), nullptr);
  EXPECT_NE(dynamic_cast<framework::FilterPlugin*>(make(names::kInterPodAffinity).get()), nullptr);
  EXPECT_NE(dynamic_cast<framework::ScorePlugin*>(make(names::kInterPodAffinity).get()), nullptr);
}

}  // namespace
}  // namespace gpusched::plugins
