// SPDX-License-Identifier: Apache-2.0
#include "src/api/traffic_annotation.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace gpusched::api {
namespace {

TEST(TrafficAnnotationTest, ParsesAndRejectsWithTheEntryAndValue) {
  struct Case {
    std::string name;
    std::string value;
    size_t entries;    // when valid
    std::string want;  // error substring; empty = valid
  };
  const std::vector<Case> cases = {
      {"one entry", "app=cart => 20", 1, ""},
      {"two entries with set selector and trailing separator",
       "app=cart => 20; app in (redis,db),tier=cache => 5.5;", 2, ""},
      {"missing arrow", "app=cart 20", 0, "entry 0 \"app=cart 20\": want"},
      {"empty selector", " => 3", 0, "empty selector"},
      {"weight not a number", "app=db => lots", 0, "weight \"lots\" is not a number"},
      {"zero weight", "app=db => 0", 0, "must be in (0, 100000]"},
      {"huge weight", "app=db => 1e9", 0, "must be in (0, 100000]"},
      {"bad selector", "app==>x => 1", 0, "invalid selector"},
      {"duplicate selector", "app=db => 1; app=db => 2", 0,
       "entry 1 \"app=db => 2\": selector listed twice"},
      {"nothing", " ; ", 0, "no entries"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto peers = ParseTrafficAnnotation(c.value);
    if (c.want.empty()) {
      ASSERT_TRUE(peers.ok()) << peers.status().ToString();
      EXPECT_EQ(peers->size(), c.entries);
    } else {
      ASSERT_FALSE(peers.ok());
      EXPECT_NE(peers.status().message().find(c.want), std::string_view::npos)
          << peers.status().message();
      EXPECT_NE(peers.status().message().find("gpusched.io/traffic"), std::string_view::npos);
    }
  }
  auto two = ParseTrafficAnnotation("app=cart => 20; app in (redis,db),tier=cache => 5.5");
  ASSERT_TRUE(two.ok());
  EXPECT_DOUBLE_EQ((*two)[1].mbps, 5.5);
  EXPECT_EQ((*two)[1].selector_text, "app in (redis,db),tier=cache");
}

}  // namespace
}  // namespace gpusched::api
