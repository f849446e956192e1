// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include "src/cel/program.h"

namespace gpusched::cel {
namespace {

std::string Eval(std::string_view expr) {
  auto p = CompileExpression(expr, {});
  if (!p.ok()) return "compile error: " + std::string(p.status().message());
  return DebugString((*p)->Evaluate({}, kSelectorMaxCost));
}

TEST(CelTest, Smoke) {
  EXPECT_EQ(Eval("1 + 2"), "3");
}

}  // namespace
}  // namespace gpusched::cel
