// SPDX-License-Identifier: Apache-2.0
#include "src/api/fields.h"

#include <gtest/gtest.h>

namespace gpusched::api {
namespace {

namespace json = boost::json;

json::object Doc(std::string_view text) { return json::parse(text).as_object(); }

TEST(FieldReaderTest, ReadsTypedMembersAndTreatsAbsentAndNullAlike) {
  FieldReader r;
  const json::object o = Doc(R"({"s":"x","b":true,"n":1.5,"i":7,"f":2.0,"q":"500m","qn":2,
                                 "o":{},"a":[1],"null":null})");
  EXPECT_EQ(r.String(o, "s", "spec"), "x");
  EXPECT_EQ(r.Bool(o, "b", "spec"), true);
  EXPECT_EQ(r.Number(o, "n", "spec"), 1.5);
  EXPECT_EQ(r.Int(o, "i", "spec"), 7);
  EXPECT_EQ(r.Int(o, "f", "spec"), 2);
  EXPECT_EQ(r.QuantityMilli(o, "q", "spec"), 500);
  EXPECT_EQ(r.QuantityMilli(o, "qn", "spec"), 2000);
  EXPECT_NE(r.Object(o, "o", "spec"), nullptr);
  EXPECT_NE(r.Array(o, "a", "spec"), nullptr);
  for (std::string_view key : {"null", "absent"}) {
    EXPECT_EQ(r.String(o, key, "spec"), std::nullopt);
    EXPECT_EQ(r.Int(o, key, "spec"), std::nullopt);
    EXPECT_EQ(r.Object(o, key, "spec"), nullptr);
  }
  EXPECT_TRUE(r.errors().empty());
}

TEST(FieldReaderTest, RecordsEveryErrorWithItsPathAndGoesOn) {
  FieldReader r;
  const json::object o = Doc(R"({"s":1,"b":"yes","n":"ten","i":1.5,"big":1e300,"r":11,
                                 "q":"lots","o":[],"a":{},"extra":0})");
  EXPECT_EQ(r.String(o, "s", "spec"), std::nullopt);
  EXPECT_EQ(r.Bool(o, "b", "spec"), std::nullopt);
  EXPECT_EQ(r.Number(o, "n", "spec"), std::nullopt);
  EXPECT_EQ(r.Int(o, "i", "spec"), std::nullopt);
  EXPECT_EQ(r.Int(o, "big", "spec"), std::nullopt);  // no undefined conversion
  EXPECT_EQ(r.Int(o, "r", "spec", 0, 10), std::nullopt);
  EXPECT_EQ(r.QuantityMilli(o, "q", "spec"), std::nullopt);
  EXPECT_EQ(r.Object(o, "o", ""), nullptr);
  EXPECT_EQ(r.Array(o, "a", "spec"), nullptr);
  r.Known(o, "spec", {"s", "b", "n", "i", "big", "r", "q", "o", "a"});
  const std::vector<std::string> want = {
      "spec.s: want a string, got 1",
      "spec.b: want true or false, got \"yes\"",
      "spec.n: want a number, got \"ten\"",
      "spec.i: want an integer, got 1.5E0",
      "spec.big: want an integer, got 1E300",
      "spec.r: must be in [0, 10], got 11",
      "spec.q: invalid quantity \"lots\"",
      "o: want an object, got []",
      "spec.a: want a list, got {}",
      "spec.extra: unknown field",
  };
  ASSERT_EQ(r.errors().size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(r.errors()[i].substr(0, want[i].size()), want[i]) << r.errors()[i];
  }
}

}  // namespace
}  // namespace gpusched::api
