// SPDX-License-Identifier: Apache-2.0
// Delegated authentication and authorization, as kube-scheduler's secure serving does them
// (k8s.io/apiserver's DelegatingAuthenticationOptions / DelegatingAuthorizationOptions): the API
// server decides who a bearer token belongs to (TokenReview) and whether that user may do what the
// request asks (SubjectAccessReview on a non-resource path), and both answers are cached.
//
//   http::Request ─► RequestAuth::Check
//                      1. authenticate: verified client certificate (CN = user, O = groups)
//                                       ─ else "Authorization: Bearer T" ─► TokenReviewer (cache)
//                                       ─ else anonymous (system:anonymous) or 401
//                      2. authorize:    always-allowed path, or group system:masters
//                                       ─ else a cert-only path: any verified certificate
//                                       ─ else SubjectAccessReviewer (cache): {verb, path} ─► 403
//                   ─► nullopt (serve the request) or the 401/403/500 answer
//
// Answers as upstream: 401 {"kind":"Status",...,"reason":"Unauthorized"} when a token does not
// authenticate (or, with anonymous off, when there are no credentials); 403 "forbidden: User
// \"u\" cannot get path \"/metrics\"" when the review denies; 500 when a review cannot be made.
//
// Caching (upstream's defaults: 10 s each): a token's review, authenticated or not, for
// token_ttl; an allowed decision for allowed_ttl, a denied one for denied_ttl. Errors are not
// cached. Each cache holds at most 4096 entries (expired ones are dropped first, then all).
//
// Threading: every class here is thread-safe (one mutex per cache; a review runs unlocked). The
// RestClient and Clock must outlive them.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "src/common/clock.h"
#include "src/common/mutex.h"
#include "src/common/status.h"
#include "src/http/server.h"
#include "src/kube/rest_client.h"

namespace gpusched::kube::delegated_auth {

// Who made a request (authentication.k8s.io UserInfo).
struct UserInfo {
  std::string name;
  std::string uid;
  std::vector<std::string> groups;
  std::map<std::string, std::vector<std::string>> extra;
};

inline constexpr std::string_view kAnonymousUser = "system:anonymous";
inline constexpr std::string_view kUnauthenticatedGroup = "system:unauthenticated";
inline constexpr std::string_view kAuthenticatedGroup = "system:authenticated";

// A TTL cache of string keys; at most kMaxEntries.
template <class V>
class TtlCache {
 public:
  static constexpr size_t kMaxEntries = 4096;
  explicit TtlCache(const common::Clock& clock) : clock_(clock) {}
  std::optional<V> Get(const std::string& key) {
    common::MutexLock l(mu_);
    auto it = map_.find(key);
    if (it == map_.end()) return std::nullopt;
    if (it->second.expires <= clock_.Now()) {
      map_.erase(it);
      return std::nullopt;
    }
    return it->second.value;
  }
  void Put(const std::string& key, V value, common::Duration ttl) {
    if (ttl <= common::Duration::zero()) return;
    common::MutexLock l(mu_);
    const common::TimePoint now = clock_.Now();
    if (map_.size() >= kMaxEntries) {
      std::erase_if(map_, [now](const auto& e) { return e.second.expires <= now; });
      if (map_.size() >= kMaxEntries) map_.clear();
    }
    map_[key] = Entry{std::move(value), now + ttl};
  }

 private:
  struct Entry {
    V value;
    common::TimePoint expires;
  };
  const common::Clock& clock_;
  common::Mutex mu_;
  std::unordered_map<std::string, Entry> map_ GPUSCHED_GUARDED_BY(mu_);
};

// TokenReview (authentication.k8s.io/v1) with a cache.
class TokenReviewer {
 public:
  TokenReviewer(RestClient& rest, const common::Clock& clock, common::Duration ttl)
      : rest_(rest), ttl_(ttl), cache_(clock) {}
  // The user `token` belongs to, or nullopt when the API server says it does not authenticate.
  // Errors (kUnavailable, the API's status): the review could not be made; the caller answers 401
  // as upstream does.
  common::StatusOr<std::optional<UserInfo>> Review(const std::string& token);
  int64_t reviews() const { return reviews_.load(); }  // requests sent (tests)

 private:
  RestClient& rest_;
  const common::Duration ttl_;
  TtlCache<std::optional<UserInfo>> cache_;
  std::atomic<int64_t> reviews_{0};
};

// SubjectAccessReview (authorization.k8s.io/v1) of a non-resource request, with a cache.
class AccessReviewer {
 public:
  AccessReviewer(RestClient& rest, const common::Clock& clock, common::Duration allowed_ttl,
                 common::Duration denied_ttl)
      : rest_(rest), allowed_ttl_(allowed_ttl), denied_ttl_(denied_ttl), cache_(clock) {}
  struct Decision {
    bool allowed = false;
    std::string reason;  // the API server's, if any
  };
  // Whether `user` may `verb` ("get", "create", ...) the non-resource `path`. Errors: the review
  // could not be made.
  common::StatusOr<Decision> Review(const UserInfo& user, std::string_view verb,
                                    std::string_view path);
  int64_t reviews() const { return reviews_.load(); }  // requests sent (tests)

 private:
  RestClient& rest_;
  const common::Duration allowed_ttl_;
  const common::Duration denied_ttl_;
  TtlCache<Decision> cache_;
  std::atomic<int64_t> reviews_{0};
};

struct RequestAuthOptions {
  // Paths served to anyone, authenticated or not (upstream: authorized for every user; an
  // entry ending in '*' is a prefix). kube-scheduler's default: /healthz, /readyz, /livez.
  std::vector<std::string> always_allow_paths = {"/healthz", "/readyz", "/livez"};
  // Groups whose members are allowed everything without a review.
  std::vector<std::string> always_allow_groups = {"system:masters"};
  // Paths that only a verified client certificate opens, without a review (the extender's verbs:
  // the client CA is the authorization).
  std::vector<std::string> certificate_paths;
  // Without credentials: true, the request is system:anonymous (group system:unauthenticated)
  // and authorized like any other (kube-scheduler's behaviour); false, 401.
  bool anonymous = false;
};

// The http::Filter: authentication, then authorization. `tokens` and `access` may be null (no
// kubeconfig to review with): a bearer token then gets 401, and a request that needs a review
// 403 ("no authorizer").
class RequestAuth {
 public:
  RequestAuth(RequestAuthOptions options, TokenReviewer* tokens, AccessReviewer* access)
      : options_(std::move(options)), tokens_(tokens), access_(access) {}
  // nullopt: serve the request; otherwise the answer to send.
  std::optional<http::Response> Check(const http::Request& request) const;
  http::Filter AsFilter() const {
    return [this](const http::Request& r) { return Check(r); };
  }

 private:
  bool PathMatches(const std::vector<std::string>& patterns, std::string_view path) const;
  std::optional<http::Response> Authorize(const UserInfo& user, const http::Request& request) const;
  const RequestAuthOptions options_;
  TokenReviewer* const tokens_;
  AccessReviewer* const access_;
};

// The verb of an HTTP method for a non-resource request (GET/HEAD get, POST create, PUT update,
// PATCH patch, DELETE delete; others lower-cased), as k8s.io/apiserver's RequestInfo.
std::string VerbOf(std::string_view method);

// The Status bodies upstream writes.
http::Response Unauthorized();
http::Response Forbidden(const UserInfo& user, std::string_view verb, std::string_view path,
                         std::string_view reason);

}  // namespace gpusched::kube::delegated_auth
