// SPDX-License-Identifier: Apache-2.0
#include "src/api/names.h"

#include <gtest/gtest.h>

#include <string>

namespace gpusched::api {
namespace {

TEST(NamesTest, Dns1123Subdomain) {
  struct Case {
    std::string in;
    bool want;
  };
  const Case cases[] = {{"a", true},     {"node-1.example", true},
                        {"0", true},     {"", false},
                        {"-a", false},   {"a-", false},
                        {"A", false},    {"a/b", false},
                        {"a_b", false},  {"Bad_Name", false},
                        {"a b", false},  {"..", false},
                        {"a..b", false}, {"a.-b", false},
                        {".a", false},   {"a.", false}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.in);
    EXPECT_EQ(IsDns1123Subdomain(c.in), c.want);
    EXPECT_EQ(Dns1123SubdomainError(c.in).empty(), c.want);
  }
  EXPECT_TRUE(IsDns1123Subdomain(std::string(253, 'a')));
  EXPECT_FALSE(IsDns1123Subdomain(std::string(254, 'a')));
  EXPECT_EQ(Dns1123SubdomainError(std::string(254, 'a')), "must be no more than 253 characters");
  EXPECT_NE(Dns1123SubdomainError("Bad_Name").find("a lowercase RFC 1123 subdomain must consist"),
            std::string::npos);
}

TEST(NamesTest, Dns1123Label) {
  EXPECT_TRUE(IsDns1123Label("ml-team"));
  EXPECT_TRUE(IsDns1123Label(std::string(63, 'a')));
  EXPECT_FALSE(IsDns1123Label(std::string(64, 'a')));
  EXPECT_EQ(Dns1123LabelError(std::string(64, 'a')), "must be no more than 63 characters");
  EXPECT_FALSE(IsDns1123Label("a.b"));
  EXPECT_FALSE(IsDns1123Label("Team"));
  EXPECT_FALSE(IsDns1123Label(""));
  EXPECT_NE(Dns1123LabelError("a.b").find("a lowercase RFC 1123 label must consist"),
            std::string::npos);
}

}  // namespace
}  // namespace gpusched::api
