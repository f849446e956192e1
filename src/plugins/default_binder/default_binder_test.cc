// SPDX-License-Identifier: Apache-2.0
#include "src/plugins/default_binder/default_binder.h"

#include <gtest/gtest.h>

#include <boost/json/value.hpp>
#include <string>
#include <vector>

#include "src/plugins/names.h"
#include "src/testing/builders.h"
#include "src/testing/fake_handle.h"

namespace gpusched::plugins::default_binder {
namespace {

using testing::MakePod;

TEST(DefaultBinderTest, Bind) {
  struct Case {
    std::string name;
    common::Status bind_result;
    framework::Code code;
    std::string_view reason;
  };
  const std::vector<Case> cases = {
      {"a successful bind is Success", common::Status::Ok(), framework::Code::kSuccess, ""},
      {"a failed bind is an Error carrying the API message",
       common::AbortedError("pod ns/p is already assigned to node \"n0\""), framework::Code::kError,
       "pod ns/p is already assigned to node \"n0\""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    testing::FakeHandle handle;
    handle.SetBindResult(c.bind_result);
    auto plugin = DefaultBinder::Create(boost::json::value(), handle);
    ASSERT_TRUE(plugin.ok()) << plugin.status().ToString();
    auto* binder = dynamic_cast<framework::BindPlugin*>(plugin->get());
    ASSERT_NE(binder, nullptr);
    EXPECT_EQ(binder->Name(), names::kDefaultBinder);

    framework::CycleState state;
    state.allocation().gpu.devices = {2, 3};
    state.allocation().gpu.milli = 1000;
    state.allocation().annotations.emplace_back("gpusched.io/gpu-devices", "2,3");
    api::Pod pod = MakePod("ns", "p").Obj();
    framework::Status s = binder->Bind(state, pod, "n1");
    EXPECT_EQ(s.code(), c.code);
    EXPECT_EQ(s.reason(), c.reason);

    std::vector<testing::FakeHandle::BindCall> binds = handle.binds();
    ASSERT_EQ(binds.size(), 1u);
    EXPECT_EQ(binds[0].pod, "ns/p");
    EXPECT_EQ(binds[0].node, "n1");
    EXPECT_EQ(binds[0].allocation.gpu, state.allocation().gpu);
    EXPECT_EQ(binds[0].allocation.annotations, state.allocation().annotations);
  }
}

}  // namespace
}  // namespace gpusched::plugins::default_binder
