// SPDX-License-Identifier: Apache-2.0
#include "src/kube/client/encoding.h"

#include <gtest/gtest.h>

namespace gpusched::kube::client {
namespace {

TEST(EncodingTest, Base64Decode) {
  struct Case {
    const char* name;
    const char* in;
    std::optional<std::string> want;
  };
  const Case cases[] = {
      {"empty input decodes to nothing", "", std::string()},
      {"padded input", "aGVsbG8=", std::string("hello")},
      {"unpadded input is accepted", "aGVsbG8", std::string("hello")},
      {"line breaks are ignored", "aGVs\nbG8h\r\n", std::string("hello!")},
      {"two padding characters", "YQ==", std::string("a")},
      {"a character outside the alphabet is rejected", "aGV*bG8=", std::nullopt},
      {"data after padding is rejected", "YQ==YQ==", std::nullopt},
      {"a lone trailing symbol is rejected", "aGVsb", std::nullopt},
      {"too much padding is rejected", "YQ===", std::nullopt},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(Base64Decode(c.in), c.want);
  }
}

TEST(EncodingTest, Base64RoundTripsEveryLength) {
  std::string s;
  for (int i = 0; i < 40; ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(Base64Decode(Base64Encode(s)), s);
    s.push_back(static_cast<char>(i * 37));
  }
  EXPECT_EQ(Base64Encode("hello"), "aGVsbG8=");
}

TEST(EncodingTest, Rfc3339) {
  struct Case {
    const char* name;
    const char* in;
    std::optional<int64_t> want_unix_nanos;
  };
  const Case cases[] = {
      {"UTC whole seconds", "2024-05-01T12:00:00Z", 1714564800'000'000'000},
      {"fraction and offset", "2024-05-01T14:00:00.5+02:00", 1714564800'500'000'000},
      {"negative offset", "2024-05-01T11:00:00-01:00", 1714564800'000'000'000},
      {"no zone is rejected", "2024-05-01T12:00:00", std::nullopt},
      {"February 30 is rejected", "2024-02-30T12:00:00Z", std::nullopt},
      {"trailing text is rejected", "2024-05-01T12:00:00Zjunk", std::nullopt},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto got = ParseRfc3339(c.in);
    if (!c.want_unix_nanos) {
      EXPECT_FALSE(got.has_value());
      continue;
    }
    ASSERT_TRUE(got.has_value());
    EXPECT_EQ(got->time_since_epoch().count(), *c.want_unix_nanos);
  }
}

TEST(EncodingTest, FormatsMetaTimeAndMicroTime) {
  common::TimePoint t(common::Duration(1714564800'123456789));
  EXPECT_EQ(FormatRfc3339(t), "2024-05-01T12:00:00Z");
  EXPECT_EQ(FormatRfc3339Micro(t), "2024-05-01T12:00:00.123456Z");
  EXPECT_EQ(FormatRfc3339(common::TimePoint(common::Duration(0))), "1970-01-01T00:00:00Z");
  EXPECT_EQ(ParseRfc3339(FormatRfc3339Micro(t))->time_since_epoch().count(), 1714564800'123456000);
}

}  // namespace
}  // namespace gpusched::kube::client
