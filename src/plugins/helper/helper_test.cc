// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "src/api/dra.h"
#include "src/plugins/helper/args.h"
#include "src/plugins/helper/normalize.h"
#include "src/plugins/helper/queueing_hints.h"
#include "src/plugins/helper/resources.h"
#include "src/plugins/helper/shape.h"

namespace gpusched::plugins::helper {
namespace {

TEST(DefaultNormalizeScoreTest, Table) {
  struct Case {
    std::string name;
    bool reverse;
    std::vector<int64_t> in;
    std::vector<int64_t> want;
  };
  const std::vector<Case> cases = {
      {"scales so the largest score becomes 100", false, {1, 2, 4}, {25, 50, 100}},
      {"reverse makes the smallest count best", true, {1, 2, 4}, {75, 50, 0}},
      {"all zero stays zero", false, {0, 0}, {0, 0}},
      {"all zero reversed becomes 100 everywhere", true, {0, 0}, {100, 100}},
      {"integer division rounds down", false, {1, 3}, {33, 100}},
      {"empty buffer is fine", false, {}, {}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::vector<int64_t> s = c.in;
    DefaultNormalizeScore(100, c.reverse, s);
    EXPECT_EQ(s, c.want);
  }
}

TEST(MinMaxNormalizeScoreTest, Table) {
  struct Case {
    std::string name;
    std::vector<int64_t> in;
    std::vector<int64_t> want;
  };
  const std::vector<Case> cases = {
      {"maps min to 0 and max to 100", {10, 20, 40}, {0, 33, 100}},
      {"handles negative raw scores", {-50, 0, 50}, {0, 50, 100}},
      {"all equal scores become 0", {7, 7, 7}, {0, 0, 0}},
      {"a single node scores 0", {42}, {0}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::vector<int64_t> s = c.in;
    MinMaxNormalizeScore(s);
    EXPECT_EQ(s, c.want);
  }
}

TEST(FloorDivTest, RoundsTowardNegativeInfinity) {
  EXPECT_EQ(FloorDiv(7, 2), 3);
  EXPECT_EQ(FloorDiv(-7, 2), -4);
  EXPECT_EQ(FloorDiv(-8, 2), -4);
  EXPECT_EQ(FloorDiv(0, 5), 0);
}

TEST(BrokenLinearTest, Table) {
  const std::vector<FunctionShapePoint> shape = {{10, 0}, {50, 80}, {100, 100}};
  struct Case {
    std::string name;
    int64_t p;
    int64_t want;
  };
  const std::vector<Case> cases = {
      {"below the first point is the first score", 0, 0},
      {"at a point is its score", 50, 80},
      {"between points interpolates with integer division", 30, 40},
      {"between the last two points", 75, 90},
      {"above the last point is the last score", 120, 100},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(BrokenLinear(shape, c.p), c.want);
  }
}

TEST(ResourceNameTest, Table) {
  struct Case {
    std::string name;
    std::string resource;
    bool extended;
  };
  const std::vector<Case> cases = {
      {"cpu is native", "cpu", false},
      {"hugepages is native", "hugepages-2Mi", false},
      {"kubernetes.io prefixed names are native", "kubernetes.io/foo", false},
      {"nvidia.com/gpu is extended", "nvidia.com/gpu", true},
      {"requests. prefix is not extended", "requests.nvidia.com/gpu", false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(IsExtendedResourceName(c.resource), c.extended);
  }
  EXPECT_EQ(ResourceGroup("nvidia.com/gpu"), "nvidia.com");
}

TEST(ExtendedResourceClassEventTest, QueuesPodsAskingForWhatTheClassBacks) {
  const framework::ClusterEventWithHint e = ExtendedResourceClassEvent();
  EXPECT_EQ(e.event.resource, framework::EventResource::kDeviceClass);
  api::Pod gpu_pod;
  gpu_pod.requests.Set(common::Intern("nvidia.com/gpu"), 2);
  api::Pod implicit_pod;
  implicit_pod.requests.Set(common::Intern("deviceclass.resource.kubernetes.io/gpu.example.com"),
                            1);
  api::DeviceClass backs;
  backs.name = "gpu.example.com";
  backs.extended_resource_name = "nvidia.com/gpu";
  api::DeviceClass other;
  other.name = "nic.example.com";
  auto hint = [&](const api::Pod& pod, const api::DeviceClass& c) {
    framework::EventObjects o{};
    o.new_obj = &c;
    return e.hint(pod, e.event, o);
  };
  EXPECT_EQ(hint(gpu_pod, backs), framework::QueueingHint::kQueue);
  EXPECT_EQ(hint(gpu_pod, other), framework::QueueingHint::kSkip);
  EXPECT_EQ(hint(implicit_pod, backs), framework::QueueingHint::kQueue);
  EXPECT_EQ(hint(implicit_pod, other), framework::QueueingHint::kSkip);
}

TEST(ArgsTest, ReadersReportEveryErrorWithItsPathAndEveryUnreadMemberAsUnknown) {
  const boost::json::value v = boost::json::parse(
      R"({"a": "x", "b": 3.5, "c": 7, "kind": "FooArgs", "d": {"e": [], "ee": 1}, "zzz": 1,
          "w": 0, "big": 18446744073709551615, "wieght": 1})");
  std::optional<int64_t> c;
  const common::Status s = ReadArgs(v, [&](api::ObjectFields& f) {
    EXPECT_FALSE(f.Int("a").has_value());
    EXPECT_FALSE(f.Int("b").has_value());
    c = f.Int("c");
    EXPECT_FALSE(f.Int("missing").has_value());
    EXPECT_FALSE(f.Int("w", 1, 100).has_value());
    EXPECT_FALSE(f.Int("big", 0, 100).has_value());
    EXPECT_FALSE(f.Int("weight", 1, 100).has_value());
    const boost::json::object* d = f.Object("d");
    ASSERT_NE(d, nullptr);
    const api::FieldPath dp = f.path().Key("d");
    api::ObjectFields df(f.reader(), *d, dp);
    EXPECT_EQ(df.String("e"), std::nullopt);
  });
  EXPECT_EQ(c, 7);
  EXPECT_EQ(s.code(), common::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "a: must be an integer; b: must be an integer; w: must be in 1..100, got 0; "
            "big: must be in 0..100, got 18446744073709551615; d.e: must be a string; "
            "d.ee: unknown field (did you mean \"e\"?); zzz: unknown field; "
            "wieght: unknown field (did you mean \"weight\"?)");
}

TEST(ArgsTest, NullAndEmptyArgsMeanDefaults) {
  int reads = 0;
  auto read = [&](api::ObjectFields& f) {
    ++reads;
    EXPECT_EQ(f.Int("x"), std::nullopt);
  };
  EXPECT_TRUE(ReadArgs(boost::json::value(), read).ok());
  EXPECT_TRUE(ReadArgs(boost::json::object(), read).ok());
  EXPECT_EQ(reads, 2);
  EXPECT_TRUE(ReadNoArgs(boost::json::parse(R"({"apiVersion": "v1", "kind": "X"})")).ok());
  EXPECT_EQ(ReadArgs(boost::json::value(3), read).message(), "args: must be an object");
  EXPECT_EQ(ReadNoArgs(boost::json::parse(R"({"x": 1})")).message(), "x: unknown field");
}

TEST(ArgsTest, IntegralFloatsAreIntegers) {
  const common::Status s = ReadArgs(boost::json::parse(R"({"x": 4.0})"),
                                    [](api::ObjectFields& f) { EXPECT_EQ(f.Int("x"), 4); });
  EXPECT_TRUE(s.ok()) << s.message();
}

}  // namespace
}  // namespace gpusched::plugins::helper
