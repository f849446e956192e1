// SPDX-License-Identifier: Apache-2.0
#include "src/common/status.h"

#include <gtest/gtest.h>

namespace gpusched::common {
namespace {

StatusOr<int> Half(int x) {
  if (x % 2 != 0) return InvalidArgumentError("odd: " + std::to_string(x));
  return x / 2;
}

Status UseHalf(int x, int* out) {
  GPUSCHED_ASSIGN_OR_RETURN(*out, Half(x));
  return Status::Ok();
}

TEST(StatusTest, OkIsDefaultAndCarriesNoMessage) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kOk);
  EXPECT_EQ(s.ToString(), "OK");
}

TEST(StatusTest, ErrorKeepsCodeMessageAndContext) {
  Status s = InvalidArgumentError("bad quantity \"1.2.3\"");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.ToString(), "InvalidArgument: bad quantity \"1.2.3\"");
  Status c = s.WithContext("pods.yaml");
  EXPECT_EQ(c.message(), "pods.yaml: bad quantity \"1.2.3\"");
  Status copy = c;  // NOLINT(performance-unnecessary-copy-initialization): tests the copy
  EXPECT_EQ(copy, c);
}

TEST(StatusTest, StatusOrAndMacros) {
  int out = 0;
  EXPECT_TRUE(UseHalf(4, &out).ok());
  EXPECT_EQ(out, 2);
  Status s = UseHalf(3, &out);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "odd: 3");
  StatusOr<int> bad(Status::Ok());
  EXPECT_FALSE(bad.ok()) << "a StatusOr built from OK must not pretend to hold a value";
}

}  // namespace
}  // namespace gpusched::common
