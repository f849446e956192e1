// SPDX-License-Identifier: Apache-2.0
// Secure serving, as kube-scheduler's (k8s.io/apiserver's SecureServingOptions, delegated
// authentication and authorization): the flags every long-running subcommand shares (scheduler,
// deletion-cost controller, extender), and what they build.
//
//   SecureServingFlags ─► SecureServing::Create
//       ├─ tls():    http::TlsOptions (the files re-read on change, or a self-signed pair made in
//       │            memory; --tls-min-version, --tls-cipher-suites; --client-ca-file)
//       └─ filter(): kube::delegated_auth::RequestAuth over TokenReview/SubjectAccessReview
//                    clients from --authentication-kubeconfig/--authorization-kubeconfig (default:
//                    in-cluster; outside a cluster without them, bearer tokens get 401)
//
// Threading: Create() at start-up; filter() runs on the HTTP workers (thread-safe). Destroy
// after the servers that use it have stopped.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "cmd/gpusched/wiring.h"
#include "src/common/clock.h"
#include "src/common/random.h"
#include "src/common/status.h"
#include "src/http/server.h"
#include "src/kube/client/http_client.h"
#include "src/kube/delegated_auth/delegated_auth.h"

namespace CLI {
class App;
}

namespace gpusched::cmd {

struct SecureServingFlags {
  std::string bind_address = "0.0.0.0";
  int secure_port = 10259;  // 0: no HTTPS
  std::string tls_cert_file;
  std::string tls_key_file;
  std::string tls_min_version;
  std::vector<std::string> tls_cipher_suites;
  std::string client_ca_file;
  std::string authentication_kubeconfig;
  std::string authorization_kubeconfig;
  std::vector<std::string> always_allow_paths = {"/healthz", "/readyz", "/livez"};
  std::string token_cache_ttl = "10s";
  std::string authorized_cache_ttl = "10s";
  std::string unauthorized_cache_ttl = "10s";
  bool anonymous_auth = false;
  int port = 0;  // plain HTTP without authentication or authorization; 0: off
};

// What a subcommand's flag set holds beyond the common ones.
struct SecureServingFlagSet {
  int default_secure_port = 10259;
  std::string default_bind_address = "0.0.0.0";
  bool plain_http = true;  // add --port (plain HTTP, off by default)
};

// Adds kube-scheduler's secure serving, authentication and authorization flags to `app`.
void AddSecureServingFlags(CLI::App& app, SecureServingFlags& flags,
                           const SecureServingFlagSet& set);

class SecureServing {
 public:
  struct Options {
    // Paths a verified client certificate opens without a review (the extender's verbs).
    std::vector<std::string> certificate_paths;
  };
  // Validates the flags (errors name the flag: "--tls-cert-file /x: cannot read the file") and
  // connects the review clients. Nothing listens yet.
  static common::StatusOr<std::unique_ptr<SecureServing>> Create(const SecureServingFlags& flags,
                                                                 Options options);
  ~SecureServing();

  const http::TlsOptions& tls() const { return tls_; }
  http::Filter filter() const { return auth_->AsFilter(); }
  // One line for the start-up log: how requests are authenticated.
  const std::string& description() const { return description_; }

 private:
  SecureServing() = default;
  common::Status ConnectReviewers(const SecureServingFlags& flags);

  http::TlsOptions tls_;
  std::string description_;
  common::SystemClock clock_;
  common::Random random_{TimeSeed()};
  Stopper stopper_;
  std::unique_ptr<kube::client::HttpRestClient> authn_rest_;
  std::unique_ptr<kube::client::HttpRestClient> authz_rest_;
  std::unique_ptr<kube::delegated_auth::TokenReviewer> tokens_;
  std::unique_ptr<kube::delegated_auth::AccessReviewer> access_;
  std::unique_ptr<kube::delegated_auth::RequestAuth> auth_;
};

// --bind-address and --secure-port (or --port) as "host:port" for messages.
std::string HostPort(const std::string& host, int port);

}  // namespace gpusched::cmd
