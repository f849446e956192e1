// SPDX-License-Identifier: Apache-2.0
#include "src/sim/traffic_accounting.h"

#include <gtest/gtest.h>

#include <vector>

#include "src/testing/builders.h"

namespace gpusched::sim {
namespace {

TEST(TrafficAccountingTest, SameZoneAndZoneBlindRouting) {
  using testing::MakePod;
  api::Pod client = MakePod("s", "c")
                        .Label("app", "c")
                        .Annotation("gpusched.io/traffic", "app=s => 10; app=missing => 4")
                        .Obj();
  api::Pod s1 = MakePod("s", "s1").Label("app", "s").Obj();
  api::Pod s2 = MakePod("s", "s2").Label("app", "s").Obj();
  api::Pod bad = MakePod("s", "bad").Annotation("gpusched.io/traffic", "nope").Obj();
  std::vector<PlacedPod> placed = {
      {&client, "n1", "a"}, {&s1, "n2", "b"}, {&s2, "n3", "c"}, {&bad, "n1", "a"}};
  TrafficSummary t = AccountTraffic(placed);
  EXPECT_DOUBLE_EQ(t.total_mbps, 10);
  EXPECT_DOUBLE_EQ(t.cross_zone_mbps, 10);
  EXPECT_DOUBLE_EQ(t.cross_zone_mbps_zone_blind, 10);
  EXPECT_DOUBLE_EQ(t.unmatched_mbps, 4);
  ASSERT_EQ(t.errors.size(), 1u);
  placed[1].zone = "a";
  t = AccountTraffic(placed);
  EXPECT_DOUBLE_EQ(t.cross_zone_mbps, 0);
  EXPECT_DOUBLE_EQ(t.cross_zone_mbps_zone_blind, 5);
  // 1 MB/s = 86.4 GB/day; x 30 x $0.02 = $51.84/month.
  EXPECT_DOUBLE_EQ(TrafficSummary::GBPerDay(1), 86.4);
  EXPECT_NEAR(TrafficSummary::DollarsPerMonth(1, kAwsCrossZoneDollarsPerGB), 51.84, 1e-9);
}

}  // namespace
}  // namespace gpusched::sim
