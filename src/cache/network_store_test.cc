// SPDX-License-Identifier: Apache-2.0
#include "src/cache/network_store.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "src/api/network_crd.h"
#include "src/api/traffic_matrix.h"

namespace gpusched::cache {
namespace {

api::AppGroupPtr MustParseAppGroup(std::string_view json) {
  auto ag = api::ParseAppGroup(json, "test");
  EXPECT_TRUE(ag.ok()) << ag.status().ToString();
  return std::make_shared<const api::AppGroup>(ag.ok() ? *ag : api::AppGroup{});
}

api::NetworkTopologyPtr MustParseTopology(std::string_view json) {
  auto nt = api::ParseNetworkTopology(json, "test");
  EXPECT_TRUE(nt.ok()) << nt.status().ToString();
  return std::make_shared<const api::NetworkTopology>(nt.ok() ? *nt : api::NetworkTopology{});
}

TEST(NetworkStoreTest, PublishesNewCatalogsAndKeepsOldOnesValid) {
  NetworkStore store;
  store.UpsertAppGroup(
      MustParseAppGroup(R"({"metadata":{"name":"g","namespace":"ns"},"spec":{"workloads":[]}})"));
  store.UpsertTopology(MustParseTopology(R"({"metadata":{"name":"nt"},"spec":{"weights":[]}})"));
  std::shared_ptr<const framework::NetworkCatalog> cat = store.Current();
  EXPECT_NE(cat->FindAppGroup("ns", "g"), nullptr);
  EXPECT_NE(cat->FindTopology("ns", "nt"), nullptr);  // cluster-scoped fallback
  EXPECT_EQ(cat->FindTopology("ns", "other"), nullptr);
  EXPECT_EQ(cat->traffic_matrix(), nullptr);
  const uint64_t version = store.CurrentSnapshot()->version;

  store.DeleteAppGroup("ns", "g");
  EXPECT_EQ(store.Current()->FindAppGroup("ns", "g"), nullptr);
  EXPECT_NE(cat->FindAppGroup("ns", "g"), nullptr);  // an old catalog stays valid
  EXPECT_GT(store.CurrentSnapshot()->version, version);

  store.SetTrafficMatrix(std::make_shared<const api::TrafficMatrix>(
      "app", std::vector<api::WorkloadEdge>{{"a", "x", "b", "y", 2.0}}));
  ASSERT_NE(store.Current()->traffic_matrix(), nullptr);
  EXPECT_EQ(store.Current()->traffic_matrix()->PeersOf("a", "x").size(), 1u);
  EXPECT_EQ(cat->traffic_matrix(), nullptr);
  store.SetTrafficMatrix(nullptr);
  EXPECT_EQ(store.Current()->traffic_matrix(), nullptr);
}

// The plugin sees the store only as the framework's NetworkView.
TEST(NetworkStoreTest, IsTheFrameworksNetworkView) {
  NetworkStore store;
  const framework::NetworkView& view = store;
  store.UpsertAppGroup(
      MustParseAppGroup(R"({"metadata":{"name":"g","namespace":"ns"},"spec":{"workloads":[]}})"));
  EXPECT_NE(view.Current()->FindAppGroup("ns", "g"), nullptr);
  EXPECT_EQ(view.Current().get(), store.CurrentSnapshot().get());
}

}  // namespace
}  // namespace gpusched::cache
