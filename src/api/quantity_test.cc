// SPDX-License-Identifier: Apache-2.0
#include "src/api/quantity.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace gpusched::api {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

TEST(QuantityTest, ParsesValidQuantitiesLikeKubernetes) {
  struct Case {
    std::string name;
    std::string text;
    int64_t value;
    int64_t milli;
  };
  const std::vector<Case> cases = {
      {"zero is zero", "0", 0, 0},
      {"negative zero is zero", "-0", 0, 0},
      {"a plain integer is whole units", "1", 1, 1000},
      {"leading zeros are ignored", "000123", 123, 123000},
      {"an explicit plus sign is accepted", "+1", 1, 1000},
      {"a negative integer stays negative", "-2", -2, -2000},
      {"milli suffix rounds Value up to one", "100m", 1, 100},
      {"a decimal fraction rounds Value up", "1.5", 2, 1500},
      {"a fraction without integer digits is accepted", ".5", 1, 500},
      {"a trailing dot is accepted as Kubernetes does", "1.", 1, 1000},
      {"fractional milli rounds MilliValue up", "1.5m", 1, 2},
      {"one thousandth is one milli", "0.001", 1, 1},
      {"micro rounds MilliValue up to one", "1u", 1, 1},
      {"nano rounds MilliValue up to one", "1n", 1, 1},
      {"a sub-nano fraction rounds up to one nano", "0.1n", 1, 1},
      {"negative milli rounds away from zero", "-100m", -1, -100},
      {"negative micro rounds away from zero", "-1u", -1, -1},
      {"kilo is 10^3", "1k", 1000, 1000000},
      {"mega is 10^6", "1M", 1000000, 1000000000},
      {"giga is 10^9", "1G", 1000000000, 1000000000000},
      {"tera is 10^12", "1T", 1000000000000, 1000000000000000},
      {"peta is 10^15", "1P", 1000000000000000, 1000000000000000000},
      {"exa is 10^18 and milli saturates", "1E", 1000000000000000000, kMax},
      {"kibi is 2^10", "1Ki", 1024, 1024000},
      {"mebi is 2^20", "100Mi", 104857600, 104857600000},
      {"gibi is 2^30", "40Gi", 42949672960, 42949672960000},
      {"half a gibi is exact", "0.5Gi", 536870912, 536870912000},
      {"one and a half gibi is exact", "1.5Gi", 1610612736, 1610612736000},
      {"tebi is 2^40", "1Ti", 1099511627776, 1099511627776000},
      {"pebi is 2^50", "1Pi", 1125899906842624, 1125899906842624000},
      {"exbi is 2^60", "1Ei", 1152921504606846976, kMax},
      {"a binary fraction below one rounds up", "0.001Ki", 2, 1024},
      {"a decimal exponent multiplies", "2e3", 2000, 2000000},
      {"an upper-case exponent multiplies", "2E3", 2000, 2000000},
      {"an exponent with a plus sign multiplies", "1e+3", 1000, 1000000},
      {"a negative exponent divides", "1e-3", 1, 1},
      {"an exponent applies to a fraction", "1.5e1", 15, 15000},
      {"a large negative exponent leaves one nano", "1e-1000", 1, 1},
      {"the largest exponent saturates", "1e1000", kMax, kMax},
      {"int64 max units is kept exactly", "9223372036854775807", kMax, kMax},
      {"values above int64 are capped at int64 max", "1e19", kMax, kMax},
      {"8Ei is capped at int64 max", "8Ei", kMax, kMax},
      {"large negative values are capped at -(2^63-1)", "-9223372036854775808", -kMax,
       std::numeric_limits<int64_t>::min()},
      {"many significant digits take the exact slow path", "1.23456789012345678901234567890123", 2,
       1235},
      {"a long binary fraction is exact", "1.0000000000000000000000000001Ki", 1025, 1024001},
      {"a long integer is capped", "123456789012345678901234567890123456789", kMax, kMax},
      {"a long binary integer is capped", "123456789012345678901234.5678Ki", kMax, kMax},
      {"leading fraction zeros keep the fast path", "0.000000000000000000000000000001", 1, 1},
      {"a long run of nanos is exact", "1000000000000000000000000n", 1000000000000000,
       1000000000000000000},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name + ": " + c.text);
    auto q = Quantity::Parse(c.text);
    ASSERT_TRUE(q.ok()) << q.status().ToString();
    EXPECT_EQ(q->Value(), c.value);
    EXPECT_EQ(q->MilliValue(), c.milli);
  }
}

TEST(QuantityTest, RejectsMalformedQuantitiesWithTheReason) {
  struct Case {
    std::string name;
    std::string text;
    std::string error;
  };
  const std::vector<Case> cases = {
      {"an empty string is rejected", "", "invalid quantity \"\": empty string"},
      {"a lone dot has no digits", ".", "invalid quantity \".\": no digits"},
      {"a suffix alone has no digits", "Gi", "invalid quantity \"Gi\": no digits"},
      {"a lone plus has no digits", "+", "no digits"},
      {"a lone minus has no digits", "-", "no digits"},
      {"a double sign has no digits", "--1", "invalid quantity \"--1\": no digits"},
      {"a leading space has no digits", " 1", "no digits"},
      {"two decimal points are rejected", "1.2.3",
       "invalid quantity \"1.2.3\": unknown suffix \".3\""},
      {"two adjacent decimal points are rejected", "1..0", "unknown suffix \".0\""},
      {"a space before the suffix is rejected", "1 Gi", "unknown suffix \" Gi\""},
      {"a trailing space is rejected", "1 ", "unknown suffix \" \""},
      {"a lower-case binary suffix is rejected", "1gi", "unknown suffix \"gi\""},
      {"an upper-case K alone is rejected", "1K", "unknown suffix \"K\""},
      {"a lone i is rejected", "1i", "unknown suffix \"i\""},
      {"milli-binary is rejected", "1mi", "unknown suffix \"mi\""},
      {"a suffix with trailing letters is rejected", "1Kib", "unknown suffix \"Kib\""},
      {"a doubled binary suffix is rejected", "1Mii", "unknown suffix \"Mii\""},
      {"an exponent without digits is rejected", "1e", "unknown suffix \"e\""},
      {"an exponent sign without digits is rejected", "1e+", "unknown suffix \"e+\""},
      {"an exponent with two signs is rejected", "1e+-3", "unknown suffix \"e+-3\""},
      {"a fractional exponent is rejected", "1e3.5", "unknown suffix \"e3.5\""},
      {"a doubled exponent marker is rejected", "1ee3", "unknown suffix \"ee3\""},
      {"hexadecimal is rejected", "0x10", "unknown suffix \"x10\""},
      {"letters are rejected", "abc", "no digits"},
      {"a huge exponent is rejected", "1e1000000000",
       "invalid quantity \"1e1000000000\": exponent out of range"},
      {"an exponent just past the limit is rejected", "1e1001", "exponent out of range"},
      {"a negative exponent past the limit is rejected", "-1e-1001", "exponent out of range"},
      {"non-ASCII digits are rejected", "\xef\xbc\x91", "no digits"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name + ": " + c.text);
    auto q = Quantity::Parse(c.text);
    ASSERT_FALSE(q.ok());
    EXPECT_EQ(q.status().code(), common::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(q.status().message()), HasSubstr(c.error));
  }
}

TEST(QuantityTest, FromMilliAndFromValueRoundLikeParsedValues) {
  struct Case {
    std::string name;
    Quantity q;
    int64_t value;
    int64_t milli;
    std::string text;
  };
  const std::vector<Case> cases = {
      {"1500 milli is 2 units rounded up", Quantity::FromMilli(1500), 2, 1500, "1500m"},
      {"negative milli rounds away from zero", Quantity::FromMilli(-1), -1, -1, "-1m"},
      {"whole milli print as units", Quantity::FromMilli(2000), 2, 2000, "2"},
      {"a value is exact", Quantity::FromValue(40), 40, 40000, "40"},
      {"int64 max milli saturates", Quantity::FromValue(kMax), kMax, kMax, "9223372036854775807"},
      {"int64 min milli saturates", Quantity::FromValue(std::numeric_limits<int64_t>::min()),
       std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::min(),
       "-9223372036854775808"},
      {"the default quantity is zero", Quantity(), 0, 0, "0"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(c.q.Value(), c.value);
    EXPECT_EQ(c.q.MilliValue(), c.milli);
    EXPECT_EQ(c.q.ToString(), c.text);
  }
}

TEST(QuantityTest, ToStringPicksTheLargestExactUnit) {
  struct Case {
    std::string name;
    std::string text;
    std::string want;
  };
  const std::vector<Case> cases = {
      {"whole units print as an integer", "40Gi", "42949672960"},
      {"a fraction prints in milli", "1.5", "1500m"},
      {"milli stays milli", "100m", "100m"},
      {"micro stays micro", "1u", "1u"},
      {"nano stays nano", "1n", "1n"},
      {"negative milli keeps its sign", "-100m", "-100m"},
      {"zero prints as 0", "0", "0"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto q = Quantity::Parse(c.text);
    ASSERT_TRUE(q.ok());
    EXPECT_EQ(q->ToString(), c.want);
    EXPECT_EQ(q->IsZero(), c.text == "0");
  }
}

}  // namespace
}  // namespace gpusched::api
