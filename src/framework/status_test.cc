// SPDX-License-Identifier: Apache-2.0
#include "src/framework/status.h"

#include <gtest/gtest.h>

namespace gpusched::framework {
namespace {

TEST(FrameworkStatusTest, CodesAndReasons) {
  Status ok;
  EXPECT_TRUE(ok.ok());
  Status s = Status::Unschedulable("Insufficient nvidia.com/gpu");
  s.WithPlugin("GpuFit");
  EXPECT_TRUE(s.IsRejected());
  EXPECT_EQ(s.ToString(), "Unschedulable (GpuFit): Insufficient nvidia.com/gpu");
  EXPECT_EQ(Status::Unresolvable("x").code(), Code::kUnschedulableAndUnresolvable);
}

TEST(FrameworkStatusTest, ErrorOwnsItsMessageAcrossCopiesAndMoves) {
  Status e = Status::Error(std::string("boom ") + std::to_string(42));
  Status copy = e;
  Status moved = std::move(e);
  EXPECT_EQ(copy.reason(), "boom 42");
  EXPECT_EQ(moved.reason(), "boom 42");
  EXPECT_TRUE(moved.IsError());
}

}  // namespace
}  // namespace gpusched::framework
