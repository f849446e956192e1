// SPDX-License-Identifier: Apache-2.0
// The general evaluator (program.h); CEL's own semantics are also covered by the conformance
// test (tests/cel_conformance), these cases pin what DRA depends on and what the suite lacks.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "src/cel/program.h"
#include "src/cel/semver.h"

namespace gpusched::cel {
namespace {

std::string Eval(std::string_view expr) {
  auto p = CompileExpression(expr, {});
  if (!p.ok()) return "compile error: " + std::string(p.status().message());
  return DebugString((*p)->Evaluate({}, kSelectorMaxCost));
}

TEST(CelTest, Expressions) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"1 + 2 * 3", "7"},
      {"9223372036854775807 + 1", "error: integer overflow"},
      {"-9223372036854775808 - 1", "error: integer overflow"},
      {"1 / 0", "error: division by zero"},
      {"1 % 0", "error: modulus by zero"},
      {"18446744073709551615u + 1u", "error: unsigned integer overflow"},
      {"1 == 1.0 && 1u == 1 && 2.5 > 2", "true"},
      {"1 / 0 == 1 && false", "false"},
      {"false && 1 / 0 == 1", "false"},
      {"true || 1 / 0 == 1", "true"},
      {"1 / 0 == 1 || true", "true"},
      {"1 / 0 == 1 || false", "error: division by zero"},
      {"true ? 1 : 1 / 0", "1"},
      {"2 in [1, 2, 3] && 'a' in {'a': 1} && !(4 in [1, 2])", "true"},
      {"{'a': 1}.b", "error: no such key: b"},
      {"has({'a': 1}.a) && !has({'a': 1}.b)", "true"},
      {"[1, 2, 3].exists_one(x, x > 2)", "true"},
      {"[1, 2, 3].map(x, x * 2).filter(x, x > 2)", "[4, 6]"},
      {"[0, 1, 2].all(x, 1 / x > 1)", "false"},
      {"[0, 1].all(x, 1 / x > 0)", "error: division by zero"},
      {"[1, 0].exists(x, 1 / x > 1)", "error: division by zero"},
      {"'héllo'.size() == 5 && 'héllo'.charAt(1) == 'é'", "true"},
      {"' a b '.trim().split(' ')", "[\"a\", \"b\"]"},
      {"'a,b,c'.split(',', 2)", "[\"a\", \"b,c\"]"},
      {"['a', 'b'].join('-')", "\"a-b\""},
      {"'abc'.substring(1) + 'ABC'.lowerAscii()", "\"bcabc\""},
      {"'aXbX'.replace('X', 'y', 1)", "\"aybX\""},
      {"'n1 n22'.findAll('[0-9]+')", "[\"1\", \"22\"]"},
      {"'abc'.find('z')", "\"\""},
      {"quantity('1.5') .isInteger() || quantity('2k').asInteger() == 2000", "true"},
      {"quantity('100m').add(quantity('900m')).compareTo(quantity('1')) == 0", "true"},
      {"quantity('1').sub(2).sign()", "-1"},
      {"quantity('1.5').asInteger()", "error: cannot convert value to integer"},
      {"quantity('1.5').asApproximateFloat()", "1.5"},
      {"quantity('5Gi') == quantity('5368709120')", "true"},
      {"isQuantity('1Gi') && !isQuantity('1 Gi')", "true"},
      {"quantity('bogus')", "error: invalid quantity \"bogus\": "},
      {"semver('1.2.3-rc.1').isLessThan(semver('1.2.3'))", "true"},
      {"semver('1.2.3-alpha').compareTo(semver('1.2.3-alpha.1'))", "-1"},
      {"semver('1.2.3-2').compareTo(semver('1.2.3-10'))", "-1"},
      {"semver('1.2.3-b').compareTo(semver('1.2.3-10'))", "1"},
      {"semver('1.2.3+build') == semver('1.2.3')", "true"},
      {"semver('v1.2', true).minor() == 2 && isSemver('01.2.3', true) && !isSemver('01.2.3')", "true"},
      {"semver('1.02.3')", "error: Minor number must not contain leading zeroes \"02\""},
      {"[3, 1, 2].sum() == 6 && [3, 1, 2].min() == 1 && [3, 1, 2].max() == 3 && [1, 2].isSorted()", "true"},
      {"[].min()", "error: min called on empty list"},
      {"sets.contains([1, 2, 3], [2, 3]) && sets.intersects([1], [1, 5]) && sets.equivalent([1, 1], [1])", "true"},
      {"strings.quote('a\"b')", "\"\\\"a\\\\\\\"b\\\"\""},
      {"cel.bind(x, 2, x * x)", "4"},
      {"type(1) == int && type('a') == string", "true"},
      {"string(1.0) + string(1e21) + string(0.000001)", "\"11e+211e-06\""},
      {"'abc'.matches('^a.c$') && matches('abc', 'b')", "true"},
      {"'abc'.matches('(')", "error: invalid regular expression: missing ): ("},
  };
  for (const auto& [expr, want] : cases) {
    SCOPED_TRACE(expr);
    std::string got = Eval(expr);
    if (want.rfind("error: ", 0) == 0) {
      EXPECT_THAT(got, ::testing::StartsWith(want));
    } else {
      EXPECT_EQ(got, want);
    }
  }
}

TEST(CelTest, CompileErrors) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"1 +", "ERROR: <input>:1:4: Syntax error: mismatched input '<EOF>'\n | 1 +\n | ...^"},
      {"a.b(", "ERROR: <input>:1:5: Syntax error: mismatched input '<EOF>'"},
      {"'abc", "unterminated string literal"},
      {"x", "undeclared reference to 'x' (in container '')"},
      {"size(1, 2)", "found no matching overload for 'size' applied to '(int, int)'"},
      {"1 + 'a'", "found no matching overload for '_+_' applied to '(int, string)'"},
      {"has(a)", "invalid argument to has() macro"},
      {"[1].all(1, true)", "argument must be a simple name"},
      {"if", "reserved identifier: if"},
      {"9223372036854775808", "invalid int literal"},
      {std::string(260, '[') + std::string(260, ']'), "recursion"},
  };
  for (const auto& [expr, want] : cases) {
    SCOPED_TRACE(expr.substr(0, 60));
    auto p = CompileExpression(expr, {});
    ASSERT_FALSE(p.ok());
    EXPECT_THAT(std::string(p.status().message()), ::testing::HasSubstr(want));
  }
}

TEST(CelTest, LongChainsAreNotTooDeep) {
  EXPECT_EQ(Eval(std::string(301, '-') + "1"), "-1");
  // && and || chains are n-ary (cel-go balances them), so 500 terms compile.
  std::string expr = "true";
  for (int i = 0; i < 500; ++i) expr += " && true";
  EXPECT_EQ(Eval(expr), "true");
}

TEST(CelTest, Variables) {
  auto p = CompileExpression("x + y", {.variables = {"x", "y"}});
  ASSERT_TRUE(p.ok());
  Value vars[] = {Value::Int(40), Value::Int(2)};
  EXPECT_EQ(DebugString((*p)->Evaluate(vars, kSelectorMaxCost)), "42");
}

TEST(CelTest, RuntimeCostLimit) {
  auto p = CompileExpression("[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(a, x.all(b, x.all(c, true)))",
                             {.variables = {"x"}});
  ASSERT_TRUE(p.ok());
  auto list = std::make_shared<VectorList>();
  for (int i = 0; i < 1000; ++i) list->elems().push_back(Value::Int(i));
  Value vars[] = {Value::List(list)};
  uint64_t cost = 0;
  EXPECT_EQ(DebugString((*p)->Evaluate(vars, kSelectorMaxCost, &cost)),
            "error: operation cancelled: actual cost limit exceeded");
  EXPECT_GT(cost, kSelectorMaxCost);
  EXPECT_EQ(DebugString((*p)->Evaluate(vars, kNoCostLimit)), "true");
}

TEST(SemverTest, Parse) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"1.2.3", ""},
      {"1.2.3-rc.1+build.5", ""},
      {"", "Version string empty"},
      {"1.2", "No Major.Minor.Patch elements found"},
      {"a.2.3", "Invalid character(s) found in major number \"a\""},
      {"1.2.3-", "Prerelease is empty"},
      {"1.2.3-01", "Numeric PreRelease version must not contain leading zeroes \"01\""},
      {"1.2.3+", "Build meta data is empty"},
      {"1.2.99999999999999999999", "strconv.ParseUint: parsing \"99999999999999999999\": value out of range"},
  };
  for (const auto& [text, want] : cases) {
    SCOPED_TRACE(text);
    std::string why;
    bool ok = ParseSemver(text, &why).has_value();
    EXPECT_EQ(ok, want.empty());
    EXPECT_EQ(why, want);
  }
}

}  // namespace
}  // namespace gpusched::cel
