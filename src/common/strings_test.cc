// SPDX-License-Identifier: Apache-2.0
#include "src/common/strings.h"

#include <gtest/gtest.h>

namespace gpusched::common {
namespace {

TEST(StringsTest, ParseInt64IsStrict) {
  struct Case {
    const char* name;
    const char* in;
    std::optional<int64_t> want;
  };
  const Case cases[] = {
      {"plain number", "42", 42},
      {"surrounding spaces are trimmed", " 7 ", 7},
      {"negative", "-3", -3},
      {"explicit plus sign", "+5", 5},
      {"trailing garbage is rejected", "12x", std::nullopt},
      {"empty is rejected", "", std::nullopt},
      {"overflow is rejected", "99999999999999999999", std::nullopt},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(ParseInt64(c.in), c.want);
  }
}

TEST(StringsTest, ParseDoubleRejectsNonFinite) {
  EXPECT_EQ(ParseDouble("0.25"), 0.25);
  EXPECT_EQ(ParseDouble("nan"), std::nullopt);
  EXPECT_EQ(ParseDouble("inf"), std::nullopt);
  EXPECT_EQ(ParseDouble("1e3"), 1000.0);
}

TEST(StringsTest, EqualsIgnoreCaseIsAsciiOnly) {
  EXPECT_TRUE(EqualsIgnoreCase("Content-Length", "content-length"));
  EXPECT_TRUE(EqualsIgnoreCase("", ""));
  EXPECT_FALSE(EqualsIgnoreCase("content-length", "content-lengths"));
  EXPECT_FALSE(EqualsIgnoreCase("retry-after", "retry_after"));
  EXPECT_FALSE(EqualsIgnoreCase("\xc3\x84", "\xc3\xa4")) << "no folding beyond ASCII";
}

TEST(StringsTest, SplitKeepsEmptyFieldsAndQuoteEscapes) {
  auto parts = Split("a||b", '|');
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[1], "");
  EXPECT_EQ(Quote("a\"b\n"), "\"a\\\"b\\x0a\"");
}

TEST(GeneratedNameTest, CutsTheBaseAndAddsFiveCharactersOfTheAlphabet) {
  EXPECT_EQ(Fnv1a64(""), 14695981039346656037ULL);
  EXPECT_EQ(Fnv1a64("a"), 0xaf63dc4c8601ec8cULL);
  const std::string name = GeneratedName("train-extended-resources-", Fnv1a64("uid"));
  ASSERT_EQ(name.size(), std::string("train-extended-resources-").size() + 5);
  EXPECT_TRUE(name.starts_with("train-extended-resources-"));
  EXPECT_EQ(name.find_first_not_of(kGeneratedNameAlphabet, 25), std::string::npos);
  EXPECT_EQ(GeneratedName("x", 0), "xbbbbb");  // the first letter, five times
  const std::string long_base(70, 'p');
  EXPECT_EQ(GeneratedName(long_base, 1).size(), 63u);
  EXPECT_EQ(GeneratedName(long_base, 1).substr(0, 58), long_base.substr(0, 58));
}

}  // namespace
}  // namespace gpusched::common
