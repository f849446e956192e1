// SPDX-License-Identifier: Apache-2.0
// StatusFromResponse lives in the kube contract target; it is tested here beside its main user.
#include "src/kube/rest_client.h"

#include <gtest/gtest.h>

namespace gpusched::kube {
namespace {

using common::StatusCode;

TEST(StatusFromResponseTest, MapsHttpCodesAndNamesTheRequest) {
  struct Case {
    const char* name;
    int status;
    std::string body;
    StatusCode want_code;
    std::string want_message;
  };
  const std::string conflict =
      R"({"kind":"Status","apiVersion":"v1","status":"Failure","message":"pod p is already assigned to node \"n1\"","reason":"Conflict","code":409})";
  const Case cases[] = {
      {"2xx is OK", 201, "{}", StatusCode::kOk, ""},
      {"404 is NotFound", 404, R"({"kind":"Status","message":"pods \"p\" not found"})",
       StatusCode::kNotFound,
       "POST /api/v1/namespaces/ns/pods/p/binding: 404 Not Found: pods \"p\" not found"},
      {"409 is Aborted with the API message", 409, conflict, StatusCode::kAborted,
       "POST /api/v1/namespaces/ns/pods/p/binding: 409 Conflict: pod p is already assigned to node "
       "\"n1\""},
      {"410 Gone is OutOfRange", 410, R"({"kind":"Status","reason":"Expired"})",
       StatusCode::kOutOfRange, "POST /api/v1/namespaces/ns/pods/p/binding: 410 Gone: Expired"},
      {"401 is PermissionDenied", 401, "", StatusCode::kPermissionDenied,
       "POST /api/v1/namespaces/ns/pods/p/binding: 401 Unauthorized"},
      {"403 is PermissionDenied", 403, "{}", StatusCode::kPermissionDenied,
       "POST /api/v1/namespaces/ns/pods/p/binding: 403 Forbidden: \"{}\""},
      {"429 is ResourceExhausted", 429, "", StatusCode::kResourceExhausted,
       "POST /api/v1/namespaces/ns/pods/p/binding: 429 Too Many Requests"},
      {"422 is InvalidArgument", 422, "", StatusCode::kInvalidArgument,
       "POST /api/v1/namespaces/ns/pods/p/binding: 422 Unprocessable Entity"},
      {"400 is InvalidArgument", 400, "", StatusCode::kInvalidArgument,
       "POST /api/v1/namespaces/ns/pods/p/binding: 400 Bad Request"},
      {"503 with an HTML body is Unavailable and quotes the body", 503, "<html>\nbusy</html>",
       StatusCode::kUnavailable,
       "POST /api/v1/namespaces/ns/pods/p/binding: 503 Service Unavailable: "
       "\"<html>\\x0abusy</html>\""},
      {"an unknown 5xx is Unavailable", 599, "", StatusCode::kUnavailable,
       "POST /api/v1/namespaces/ns/pods/p/binding: 599"},
      {"a redirect is FailedPrecondition", 302, "", StatusCode::kFailedPrecondition,
       "POST /api/v1/namespaces/ns/pods/p/binding: 302"},
  };
  Request req;
  req.method = "POST";
  req.path = "/api/v1/namespaces/ns/pods/p/binding";
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    common::Status s = StatusFromResponse(req, Response{c.status, c.body});
    EXPECT_EQ(s.code(), c.want_code);
    EXPECT_EQ(s.message(), c.want_message);
  }
}

}  // namespace
}  // namespace gpusched::kube
