// SPDX-License-Identifier: Apache-2.0
#include "src/plugins/node_unschedulable/node_unschedulable.h"

#include <gtest/gtest.h>

#include <boost/json/value.hpp>
#include <string>
#include <vector>

#include "src/plugins/names.h"
#include "src/testing/builders.h"
#include "src/testing/fake_handle.h"

namespace gpusched::plugins::node_unschedulable {
namespace {

using testing::MakeNode;
using testing::MakePod;

TEST(NodeUnschedulableTest, Filter) {
  testing::FakeHandle handle;
  auto plugin = NodeUnschedulable::Create(boost::json::value(), handle);
  ASSERT_TRUE(plugin.ok()) << plugin.status().ToString();
  auto* filter = dynamic_cast<framework::FilterPlugin*>(plugin->get());
  ASSERT_NE(filter, nullptr);
  EXPECT_EQ(filter->Name(), names::kNodeUnschedulable);

  struct Case {
    std::string name;
    api::Pod pod;
    api::NodePtr node;
    framework::Code code;
    std::string_view reason;
  };
  const std::vector<Case> cases = {
      {"a schedulable node accepts any pod", MakePod("ns", "p").Obj(), MakeNode("n").Ptr(),
       framework::Code::kSuccess, ""},
      {"a cordoned node rejects a pod without tolerations", MakePod("ns", "p").Obj(),
       MakeNode("n").Unschedulable().Ptr(), framework::Code::kUnschedulableAndUnresolvable,
       "node(s) were unschedulable"},
      {"a cordoned node accepts a pod tolerating the unschedulable taint (Exists, NoSchedule)",
       MakePod("ns", "p")
           .TolerationExists("node.kubernetes.io/unschedulable", api::TaintEffect::kNoSchedule)
           .Obj(),
       MakeNode("n").Unschedulable().Ptr(), framework::Code::kSuccess, ""},
      {"a cordoned node accepts a pod tolerating everything (empty key, Exists)",
       MakePod("ns", "p").TolerationExists("").Obj(), MakeNode("n").Unschedulable().Ptr(),
       framework::Code::kSuccess, ""},
      {"a toleration for another effect does not help",
       MakePod("ns", "p")
           .TolerationExists("node.kubernetes.io/unschedulable", api::TaintEffect::kNoExecute)
           .Obj(),
       MakeNode("n").Unschedulable().Ptr(), framework::Code::kUnschedulableAndUnresolvable,
       "node(s) were unschedulable"},
      {"a toleration for another key does not help",
       MakePod("ns", "p").TolerationExists("other").Obj(), MakeNode("n").Unschedulable().Ptr(),
       framework::Code::kUnschedulableAndUnresolvable, "node(s) were unschedulable"},
  };
  framework::CycleState state;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    framework::NodeInfo info;
    info.node = c.node;
    info.index = 0;
    framework::Status s = filter->Filter(state, c.pod, info);
    EXPECT_EQ(s.code(), c.code);
    EXPECT_EQ(s.reason(), c.reason);
  }
}

TEST(NodeUnschedulableTest, RejectsNonObjectArgs) {
  testing::FakeHandle handle;
  auto plugin = NodeUnschedulable::Create(boost::json::value(5), handle);
  ASSERT_FALSE(plugin.ok());
  EXPECT_EQ(plugin.status().message(), "args: must be an object");
}

}  // namespace
}  // namespace gpusched::plugins::node_unschedulable
