// SPDX-License-Identifier: Apache-2.0
#include "src/plugins/node_name/node_name.h"

#include <gtest/gtest.h>

#include <boost/json/value.hpp>
#include <string>
#include <vector>

#include "src/plugins/names.h"
#include "src/testing/builders.h"
#include "src/testing/fake_handle.h"

namespace gpusched::plugins::node_name {
namespace {

using testing::MakeNode;
using testing::MakePod;

TEST(NodeNameTest, Filter) {
  testing::FakeHandle handle;
  auto plugin = NodeName::Create(boost::json::value(), handle);
  ASSERT_TRUE(plugin.ok()) << plugin.status().ToString();
  auto* filter = dynamic_cast<framework::FilterPlugin*>(plugin->get());
  ASSERT_NE(filter, nullptr);
  EXPECT_EQ(filter->Name(), names::kNodeName);

  framework::NodeInfo node;
  node.node = MakeNode("n1").Ptr();
  node.index = 0;

  struct Case {
    std::string name;
    api::Pod pod;
    framework::Code code;
    std::string_view reason;
  };
  const std::vector<Case> cases = {
      {"a pod without nodeName fits any node", MakePod("ns", "p").Obj(), framework::Code::kSuccess,
       ""},
      {"a pod naming this node fits", MakePod("ns", "p").NodeName("n1").Obj(),
       framework::Code::kSuccess, ""},
      {"a pod naming another node is rejected as unresolvable",
       MakePod("ns", "p").NodeName("n2").Obj(), framework::Code::kUnschedulableAndUnresolvable,
       "node(s) didn't match the requested node name"},
  };
  framework::CycleState state;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    framework::Status s = filter->Filter(state, c.pod, node);
    EXPECT_EQ(s.code(), c.code);
    EXPECT_EQ(s.reason(), c.reason);
  }
}

TEST(NodeNameTest, RejectsUnknownArgs) {
  testing::FakeHandle handle;
  auto plugin = NodeName::Create(boost::json::object{{"x", 1}}, handle);
  ASSERT_FALSE(plugin.ok());
  EXPECT_EQ(plugin.status().message(), "x: unknown field");
}

}  // namespace
}  // namespace gpusched::plugins::node_name
