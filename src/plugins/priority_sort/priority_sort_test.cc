// SPDX-License-Identifier: Apache-2.0
#include "src/plugins/priority_sort/priority_sort.h"

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <chrono>
#include <string>
#include <vector>

#include "src/plugins/names.h"
#include "src/testing/builders.h"
#include "src/testing/fake_handle.h"

namespace gpusched::plugins::priority_sort {
namespace {

using testing::MakePod;

framework::QueuedPodInfo Queued(int32_t priority, int64_t seconds) {
  framework::QueuedPodInfo q;
  q.pod = MakePod("ns", "p").Priority(priority).Ptr();
  q.timestamp = common::TimePoint(std::chrono::seconds(seconds));
  return q;
}

TEST(PrioritySortTest, Less) {
  testing::FakeHandle handle;
  auto plugin = PrioritySort::Create(boost::json::value(), handle);
  ASSERT_TRUE(plugin.ok()) << plugin.status().ToString();
  auto* sort = dynamic_cast<framework::QueueSortPlugin*>(plugin->get());
  ASSERT_NE(sort, nullptr);
  EXPECT_EQ(sort->Name(), names::kPrioritySort);

  struct Case {
    std::string name;
    framework::QueuedPodInfo a, b;
    bool want;
  };
  const std::vector<Case> cases = {
      {"higher priority goes first", Queued(10, 200), Queued(5, 100), true},
      {"lower priority goes last even if older", Queued(5, 100), Queued(10, 200), false},
      {"equal priority: earlier timestamp goes first", Queued(7, 100), Queued(7, 200), true},
      {"equal priority: later timestamp goes last", Queued(7, 200), Queued(7, 100), false},
      {"identical pods are not less than each other", Queued(7, 100), Queued(7, 100), false},
      {"negative priorities order too", Queued(-1, 100), Queued(-5, 50), true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(sort->Less(c.a, c.b), c.want);
  }
}

TEST(PrioritySortTest, RejectsUnknownArgs) {
  testing::FakeHandle handle;
  auto plugin = PrioritySort::Create(boost::json::parse(R"({"foo": 1})"), handle);
  ASSERT_FALSE(plugin.ok());
  EXPECT_EQ(plugin.status().code(), common::StatusCode::kInvalidArgument);
  EXPECT_EQ(plugin.status().message(), "foo: unknown field");
  EXPECT_TRUE(
      PrioritySort::Create(boost::json::parse(R"({"kind": "PrioritySortArgs"})"), handle).ok());
}

}  // namespace
}  // namespace gpusched::plugins::priority_sort
