// SPDX-License-Identifier: Apache-2.0
#include "src/kube/delegated_auth/delegated_auth.h"

#include <algorithm>
#include <boost/json.hpp>
#include <cctype>

#include "src/api/fields.h"

namespace gpusched::kube::delegated_auth {
namespace {

namespace json = boost::json;

using api::FieldPath;

// status.user of a TokenReview: the user the API server's authenticators found.
UserInfo DecodeUser(api::JsonReader& r, const json::object& user, const FieldPath& path) {
  UserInfo u;
  u.name = r.StringOr(user, "username", path);
  u.uid = r.StringOr(user, "uid", path);
  r.ForEachString(user, "groups", path,
                  [&](std::string_view g, const FieldPath&) { u.groups.emplace_back(g); });
  if (const json::object* extra = r.Object(user, "extra", path)) {
    const FieldPath ep = path.Key("extra");
    for (const auto& kv : *extra) {
      std::vector<std::string>& values = u.extra[std::string(kv.key())];
      r.ForEachString(*extra, kv.key(), ep,
                      [&](std::string_view v, const FieldPath&) { values.emplace_back(v); });
    }
  }
  return u;
}

// An answer that does not read as its kind: the review could not be made.
common::Status BadAnswer(std::string_view kind, const api::JsonReader& r) {
  return common::UnavailableError(std::string(kind) + " answer: " + r.errors().Join());
}

// The response body of a review as a JSON object, or the Status the request came to.
common::StatusOr<json::object> Post(RestClient& rest, const std::string& path, json::object body) {
  Request req;
  req.method = "POST";
  req.path = path;
  req.body = json::serialize(body);
  req.timeout = std::chrono::seconds(10);  // upstream's ClientTimeout / TokenRequestTimeout
  GPUSCHED_ASSIGN_OR_RETURN(Response resp, rest.Do(req));
  if (!resp.ok()) return StatusFromResponse(req, resp);
  boost::system::error_code ec;
  json::value v = json::parse(resp.body, ec);
  if (ec || !v.is_object()) {
    return common::UnavailableError("POST " + path + ": the answer is not a JSON object");
  }
  return std::move(v.as_object());
}

std::string StatusBody(int code, std::string_view reason, std::string_view message, bool details) {
  json::object o{{"kind", "Status"},    {"apiVersion", "v1"}, {"metadata", json::object()},
                 {"status", "Failure"}, {"message", message}, {"reason", reason}};
  if (details) o["details"] = json::object();
  o["code"] = code;
  return json::serialize(o) + "\n";
}

}  // namespace

common::StatusOr<std::optional<UserInfo>> TokenReviewer::Review(const std::string& token) {
  if (auto hit = cache_.Get(token)) return *hit;
  ++reviews_;
  json::object body{{"apiVersion", "authentication.k8s.io/v1"},
                    {"kind", "TokenReview"},
                    {"spec", json::object{{"token", token}}}};
  GPUSCHED_ASSIGN_OR_RETURN(json::object answer,
                            Post(rest_, "/apis/authentication.k8s.io/v1/tokenreviews", body));
  std::optional<UserInfo> user;
  api::JsonReader r(api::PlainDialect());
  const FieldPath root;
  if (const json::object* status = r.Object(answer, "status", root)) {
    const FieldPath sp = root.Key("status");
    const bool authenticated = r.Bool(*status, "authenticated", sp).value_or(false);
    const json::object* u = r.Object(*status, "user", sp);
    if (authenticated && u != nullptr) user = DecodeUser(r, *u, sp.Key("user"));
  }
  if (!r.ok()) return BadAnswer("TokenReview", r);
  cache_.Put(token, user, ttl_);
  return user;
}

common::StatusOr<AccessReviewer::Decision> AccessReviewer::Review(const UserInfo& user,
                                                                  std::string_view verb,
                                                                  std::string_view path) {
  json::object spec{{"nonResourceAttributes", json::object{{"path", path}, {"verb", verb}}},
                    {"user", user.name}};
  json::array groups;
  for (const auto& g : user.groups) groups.emplace_back(g);
  spec["groups"] = std::move(groups);
  if (!user.uid.empty()) spec["uid"] = user.uid;
  if (!user.extra.empty()) {
    json::object extra;
    for (const auto& [k, vs] : user.extra) {
      json::array a;
      for (const auto& v : vs) a.emplace_back(v);
      extra[k] = std::move(a);
    }
    spec["extra"] = std::move(extra);
  }
  json::object body{
      {"apiVersion", "authorization.k8s.io/v1"}, {"kind", "SubjectAccessReview"}, {"spec", spec}};
  // The spec says everything the decision depends on: it is the cache key.
  const std::string key = json::serialize(spec);
  if (auto hit = cache_.Get(key)) return *hit;
  ++reviews_;
  GPUSCHED_ASSIGN_OR_RETURN(
      json::object answer,
      Post(rest_, "/apis/authorization.k8s.io/v1/subjectaccessreviews", std::move(body)));
  Decision d;
  api::JsonReader r(api::PlainDialect());
  const FieldPath root;
  std::string_view evaluation_error;
  if (const json::object* status = r.Object(answer, "status", root)) {
    const FieldPath sp = root.Key("status");
    d.allowed = r.Bool(*status, "allowed", sp).value_or(false);
    d.reason = r.StringOr(*status, "reason", sp);
    evaluation_error = r.StringOr(*status, "evaluationError", sp);
  }
  if (!r.ok()) return BadAnswer("SubjectAccessReview", r);
  if (!d.allowed && !evaluation_error.empty()) {
    // Upstream treats a denial with an evaluation error as an error, not cached.
    return common::UnavailableError("SubjectAccessReview: " + std::string(evaluation_error));
  }
  cache_.Put(key, d, d.allowed ? allowed_ttl_ : denied_ttl_);
  return d;
}

std::string VerbOf(std::string_view method) {
  if (method == "GET" || method == "HEAD") return "get";
  if (method == "POST") return "create";
  if (method == "PUT") return "update";
  if (method == "PATCH") return "patch";
  if (method == "DELETE") return "delete";
  std::string v(method);
  std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return std::tolower(c); });
  return v;
}

http::Response Unauthorized() {
  return http::Response{
      401, "application/json", StatusBody(401, "Unauthorized", "Unauthorized", false), {}};
}

http::Response Forbidden(const UserInfo& user, std::string_view verb, std::string_view path,
                         std::string_view reason) {
  std::string msg = "forbidden: User " + json::serialize(json::value(user.name)) + " cannot " +
                    std::string(verb) + " path " + json::serialize(json::value(path));
  if (!reason.empty()) msg += ": " + std::string(reason);
  return http::Response{403, "application/json", StatusBody(403, "Forbidden", msg, true), {}};
}

bool RequestAuth::PathMatches(const std::vector<std::string>& patterns,
                              std::string_view path) const {
  for (const std::string& p : patterns) {
    if (!p.empty() && p.back() == '*') {
      if (path.starts_with(std::string_view(p).substr(0, p.size() - 1))) return true;
    } else if (p == path) {
      return true;
    }
  }
  return false;
}

std::optional<http::Response> RequestAuth::Check(const http::Request& request) const {
  UserInfo user;
  if (request.peer) {
    // Kubernetes' x509 authenticator: CN is the user, each O a group.
    user.name = request.peer->common_name;
    user.groups = request.peer->organizations;
    user.groups.emplace_back(kAuthenticatedGroup);
  } else if (std::string_view a = request.authorization; !a.empty()) {
    // "Bearer <token>", the scheme case-insensitive as upstream; anything else is no token.
    constexpr std::string_view kBearer = "bearer ";
    std::string scheme(a.substr(0, std::min(a.size(), kBearer.size())));
    std::transform(scheme.begin(), scheme.end(), scheme.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    std::string token = scheme == kBearer ? std::string(a.substr(kBearer.size())) : "";
    while (!token.empty() && token.front() == ' ') token.erase(token.begin());
    if (token.empty() || tokens_ == nullptr) return Unauthorized();
    auto reviewed = tokens_->Review(token);
    if (!reviewed.ok() || !reviewed->has_value()) return Unauthorized();
    user = std::move(**reviewed);
  } else if (PathMatches(options_.always_allow_paths, request.path)) {
    return std::nullopt;  // health endpoints: open to the kubelet's probes
  } else if (options_.anonymous) {
    user.name = std::string(kAnonymousUser);
    user.groups = {std::string(kUnauthenticatedGroup)};
  } else {
    return Unauthorized();
  }
  return Authorize(user, request);
}

std::optional<http::Response> RequestAuth::Authorize(const UserInfo& user,
                                                     const http::Request& request) const {
  const std::string verb = VerbOf(request.method);
  if (PathMatches(options_.always_allow_paths, request.path)) return std::nullopt;
  for (const std::string& g : user.groups) {
    if (std::find(options_.always_allow_groups.begin(), options_.always_allow_groups.end(), g) !=
        options_.always_allow_groups.end()) {
      return std::nullopt;
    }
  }
  if (PathMatches(options_.certificate_paths, request.path)) {
    if (request.peer) return std::nullopt;
    return Forbidden(user, verb, request.path, "this path needs a client certificate");
  }
  if (access_ == nullptr) return Forbidden(user, verb, request.path, "no authorizer configured");
  auto decision = access_->Review(user, verb, request.path);
  if (!decision.ok()) {
    return http::Response{500,
                          "text/plain; charset=utf-8",
                          "Internal Server Error: \"" + request.path +
                              "\": " + std::string(decision.status().message()) + "\n",
                          {}};
  }
  if (!decision->allowed) return Forbidden(user, verb, request.path, decision->reason);
  return std::nullopt;
}

}  // namespace gpusched::kube::delegated_auth
