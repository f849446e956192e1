// SPDX-License-Identifier: Apache-2.0
#include "src/api/traffic_matrix.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpusched::api {
namespace {

TEST(TrafficMatrixTest, PeersSumBothDirectionsAndRepeatedPairs) {
  TrafficMatrix m("app", {{"shop", "web", "shop", "cart", 2},
                          {"shop", "cart", "shop", "web", 1},
                          {"shop", "web", "shop", "cart", 0.5},
                          {"shop", "web", "other", "auth", 3},
                          {"shop", "cart", "shop", "cart", 7},
                          {"shop", "web", "shop", "db", -1},
                          {"shop", "web", "shop", "db", std::numeric_limits<double>::quiet_NaN()}});
  EXPECT_EQ(common::Str(m.workload_label()), "app");
  auto peers = [&](std::string_view ns, std::string_view w) {
    std::vector<std::pair<std::string, double>> out;
    for (const auto& p : m.PeersOf(ns, w)) {
      out.emplace_back(p.ns + "/" + std::string(common::Str(p.workload)), p.mbps);
    }
    return out;
  };
  using V = std::vector<std::pair<std::string, double>>;
  EXPECT_EQ(peers("shop", "web"), (V{{"other/auth", 3}, {"shop/cart", 3.5}}));
  EXPECT_EQ(peers("shop", "cart"), (V{{"shop/cart", 7}, {"shop/web", 3.5}}));
  EXPECT_EQ(peers("other", "auth"), (V{{"shop/web", 3}}));
  EXPECT_TRUE(peers("shop", "db").empty()) << "negative and NaN edges are ignored";
  EXPECT_TRUE(peers("nowhere", "web").empty());
  EXPECT_EQ(m.edges().size(), 4u);
}

}  // namespace
}  // namespace gpusched::api
