// SPDX-License-Identifier: Apache-2.0
#include "src/kube/delegated_auth/delegated_auth.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace gpusched::kube::delegated_auth {
namespace {

namespace json = boost::json;

// An API server that knows tokens and which (user, verb, path) triples RBAC allows.
class FakeApiServer final : public RestClient {
 public:
  std::map<std::string, std::string> users;  // token -> username
  std::set<std::string> allowed;             // "user verb path"
  bool fail = false;
  bool malformed = false;          // answers whose status has fields of the wrong type
  std::vector<std::string> paths;  // requests received

  common::StatusOr<Response> Do(const Request& r) override {
    paths.push_back(r.path);
    if (fail) return common::UnavailableError("connection refused");
    json::object in = json::parse(r.body).as_object();
    const json::object& spec = in.at("spec").as_object();
    if (r.path == "/apis/authentication.k8s.io/v1/tokenreviews") {
      auto it = users.find(std::string(spec.at("token").as_string()));
      json::object status{{"authenticated", it != users.end()}};
      if (it != users.end()) {
        status["user"] = json::object{{"username", it->second},
                                      {"uid", "uid-" + it->second},
                                      {"groups", json::array{"system:serviceaccounts"}}};
      }
      if (malformed) status["user"] = json::object{{"username", "u"}, {"groups", "admins"}};
      in["status"] = status;
    } else {
      const json::object& attrs = spec.at("nonResourceAttributes").as_object();
      std::string key = std::string(spec.at("user").as_string()) + " " +
                        std::string(attrs.at("verb").as_string()) + " " +
                        std::string(attrs.at("path").as_string());
      in["status"] = json::object{{"allowed", allowed.count(key) > 0}};
      if (malformed) in["status"].as_object()["allowed"] = "yes";
    }
    return Response{201, json::serialize(in)};
  }
  common::Status Stream(const Request&, const std::function<bool(std::string_view)>&) override {
    return common::UnimplementedError("no watch");
  }
};

http::Request Get(std::string path, std::string authorization = "",
                  std::optional<http::PeerCertificate> peer = std::nullopt) {
  http::Request r;
  r.method = "GET";
  r.path = std::move(path);
  r.authorization = std::move(authorization);
  r.peer = std::move(peer);
  return r;
}

TEST(RequestAuthTest, AnswersAsKubeSchedulerSecureServing) {
  struct Case {
    std::string name;
    http::Request request;
    bool anonymous = false;
    int want;  // 0: served
    std::string want_in_body;
  };
  const http::PeerCertificate admin{"admin", {"system:masters"}};
  const http::PeerCertificate scheduler{"system:kube-scheduler", {}};
  const std::vector<Case> cases = {
      {"no credentials on /metrics is 401 with anonymous off", Get("/metrics"), false, 401,
       "\"reason\":\"Unauthorized\""},
      {"no credentials on /metrics is a review of system:anonymous with anonymous on",
       Get("/metrics"), true, 403,
       "User \\\"system:anonymous\\\" cannot get path \\\"/metrics\\\""},
      {"no credentials on /healthz is served", Get("/healthz"), false, 0, ""},
      {"no credentials on /readyz is served", Get("/readyz"), false, 0, ""},
      {"an unknown token is 401 even on /healthz", Get("/healthz", "Bearer nope"), false, 401, ""},
      {"a Basic header is no token: 401", Get("/metrics", "Basic YTpi"), false, 401, ""},
      {"a token whose user may not get /metrics is 403", Get("/metrics", "Bearer reader-not"),
       false, 403, "cannot get path \\\"/metrics\\\""},
      {"a token whose user may get /metrics is served", Get("/metrics", "Bearer reader"), false, 0,
       ""},
      {"the scheme is case-insensitive", Get("/metrics", "bearer reader"), false, 0, ""},
      {"a verified certificate in system:masters is served without a review",
       Get("/metrics", "", admin), false, 0, ""},
      {"a verified certificate outside it is reviewed (denied)", Get("/metrics", "", scheduler),
       false, 403, "system:kube-scheduler"},
      {"a certificate path is open to any verified certificate", Get("/bind", "", scheduler), false,
       0, ""},
      {"a certificate path is closed to a token, even an allowed one",
       Get("/bind", "Bearer reader"), false, 403, "needs a client certificate"},
      {"a certificate path without credentials is 401", Get("/bind"), false, 401, ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    common::FakeClock clock;
    FakeApiServer api;
    api.users = {{"reader", "system:serviceaccount:mon:prom"},
                 {"reader-not", "system:serviceaccount:mon:other"}};
    api.allowed = {"system:serviceaccount:mon:prom get /metrics"};
    TokenReviewer tokens(api, clock, std::chrono::seconds(10));
    AccessReviewer access(api, clock, std::chrono::seconds(10), std::chrono::seconds(10));
    RequestAuthOptions o;
    o.anonymous = c.anonymous;
    o.certificate_paths = {"/bind"};
    RequestAuth auth(o, &tokens, &access);
    std::optional<http::Response> got = auth.Check(c.request);
    if (c.want == 0) {
      EXPECT_FALSE(got.has_value()) << got->status << " " << got->body;
      continue;
    }
    ASSERT_TRUE(got.has_value());
    EXPECT_EQ(got->status, c.want) << got->body;
    EXPECT_NE(got->body.find(c.want_in_body), std::string::npos) << got->body;
    EXPECT_EQ(got->content_type, "application/json");
  }
}

TEST(RequestAuthTest, ReviewsAreCachedForTheirTtlAndErrorsAreNot) {
  common::FakeClock clock;
  FakeApiServer api;
  api.users = {{"t", "u"}};
  api.allowed = {"u get /metrics"};
  TokenReviewer tokens(api, clock, std::chrono::seconds(10));
  AccessReviewer access(api, clock, std::chrono::seconds(10), std::chrono::seconds(10));
  RequestAuth auth(RequestAuthOptions{}, &tokens, &access);
  for (int i = 0; i < 5; ++i) EXPECT_FALSE(auth.Check(Get("/metrics", "Bearer t")));
  EXPECT_EQ(tokens.reviews(), 1);
  EXPECT_EQ(access.reviews(), 1);
  clock.Advance(std::chrono::seconds(11));
  EXPECT_FALSE(auth.Check(Get("/metrics", "Bearer t")));
  EXPECT_EQ(tokens.reviews(), 2);
  EXPECT_EQ(access.reviews(), 2);
  // A denial is cached too: RBAC granted now is seen after the TTL.
  EXPECT_EQ(auth.Check(Get("/other", "Bearer t"))->status, 403);
  api.allowed.insert("u get /other");
  EXPECT_EQ(auth.Check(Get("/other", "Bearer t"))->status, 403);
  clock.Advance(std::chrono::seconds(11));
  EXPECT_FALSE(auth.Check(Get("/other", "Bearer t")));
  // The API server down: a new token is 401, a review that cannot be made is 500, not cached.
  api.fail = true;
  EXPECT_EQ(auth.Check(Get("/metrics", "Bearer new"))->status, 401);
  clock.Advance(std::chrono::seconds(11));
  api.users["x"] = "u";
  EXPECT_EQ(auth.Check(Get("/metrics", "Bearer x"))->status, 401);
  api.fail = false;
  EXPECT_FALSE(auth.Check(Get("/metrics", "Bearer x")));
}

TEST(ReviewerTest, AnAnswerOfTheWrongShapeIsAnErrorNamingTheField) {
  common::FakeClock clock;
  FakeApiServer api;
  api.users = {{"t", "u"}};
  api.malformed = true;
  TokenReviewer tokens(api, clock, std::chrono::seconds(10));
  auto user = tokens.Review("t");
  ASSERT_FALSE(user.ok());
  EXPECT_EQ(user.status().code(), common::StatusCode::kUnavailable);
  EXPECT_NE(user.status().message().find("TokenReview answer: status.user.groups: "),
            std::string::npos)
      << user.status().message();
  AccessReviewer access(api, clock, std::chrono::seconds(10), std::chrono::seconds(10));
  auto decision = access.Review(UserInfo{.name = "u"}, "get", "/metrics");
  ASSERT_FALSE(decision.ok());
  EXPECT_NE(decision.status().message().find("SubjectAccessReview answer: status.allowed: "),
            std::string::npos)
      << decision.status().message();
  // Neither is cached: a good answer is read at the next review.
  api.malformed = false;
  EXPECT_TRUE(tokens.Review("t").ok());
  EXPECT_TRUE(access.Review(UserInfo{.name = "u"}, "get", "/metrics").ok());
}

TEST(RequestAuthTest, WithoutReviewersTokensAre401AndReviewsForbidden) {
  RequestAuth auth(RequestAuthOptions{}, nullptr, nullptr);
  EXPECT_EQ(auth.Check(Get("/metrics", "Bearer t"))->status, 401);
  EXPECT_EQ(auth.Check(Get("/metrics", "", http::PeerCertificate{"u", {}}))->status, 403);
  EXPECT_FALSE(auth.Check(Get("/livez")));
}

TEST(RequestAuthTest, AlwaysAllowPathsTakeAPrefixWithAStar) {
  RequestAuthOptions o;
  o.always_allow_paths = {"/healthz*", "/x"};
  RequestAuth auth(o, nullptr, nullptr);
  EXPECT_FALSE(auth.Check(Get("/healthz/ping")));
  EXPECT_FALSE(auth.Check(Get("/x")));
  EXPECT_EQ(auth.Check(Get("/x/y"))->status, 401);
  EXPECT_EQ(auth.Check(Get("/readyz"))->status, 401);
}

TEST(VerbOfTest, MapsMethodsAsRequestInfo) {
  EXPECT_EQ(VerbOf("GET"), "get");
  EXPECT_EQ(VerbOf("HEAD"), "get");
  EXPECT_EQ(VerbOf("POST"), "create");
  EXPECT_EQ(VerbOf("PUT"), "update");
  EXPECT_EQ(VerbOf("PATCH"), "patch");
  EXPECT_EQ(VerbOf("DELETE"), "delete");
  EXPECT_EQ(VerbOf("OPTIONS"), "options");
}

}  // namespace
}  // namespace gpusched::kube::delegated_auth
