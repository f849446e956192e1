// SPDX-License-Identifier: Apache-2.0
#include "cmd/gpusched/secure_serving.h"

#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>

#include "src/config/duration.h"
#include "src/http/tls.h"
#include "src/kube/client/kubeconfig.h"

namespace gpusched::cmd {
namespace {

common::StatusOr<common::Duration> Ttl(const char* flag, const std::string& value) {
  auto ns = config::ParseGoDurationNanos(value);
  if (!ns || *ns < 0) {
    return common::InvalidArgumentError(std::string(flag) + ": want a duration like 10s, got \"" +
                                        value + "\"");
  }
  return common::Duration(*ns);
}

// A review client for `kubeconfig` (flag `flag`), or in-cluster when empty; null (and a warning)
// when empty outside a cluster, as kube-scheduler (RemoteKubeConfigFileOptional).
common::StatusOr<std::unique_ptr<kube::client::HttpRestClient>> ReviewClient(
    const char* flag, const std::string& kubeconfig, const common::Clock& clock,
    common::Random& random, Stopper& stopper) {
  Connection conn;
  conn.env = CaptureEnvironment();
  if (kubeconfig.empty()) {
    auto in_cluster = kube::client::LoadInClusterConfig(conn.env);
    if (!in_cluster.ok()) {
      if (in_cluster.status().code() != common::StatusCode::kNotFound) {
        return common::InvalidArgumentError(
            std::string(flag) + " (in-cluster): " + std::string(in_cluster.status().message()));
      }
      return std::unique_ptr<kube::client::HttpRestClient>();
    }
    conn.cluster = std::move(in_cluster).value();
  } else {
    auto loaded = kube::client::LoadKubeconfig(kubeconfig);
    if (!loaded.ok()) {
      return common::InvalidArgumentError(std::string(flag) + ": " +
                                          std::string(loaded.status().message()));
    }
    conn.cluster = std::move(loaded).value();
  }
  GPUSCHED_RETURN_IF_ERROR(kube::client::InitCurlOnce());
  auto rest = NewRestClient(conn, RestClientOptions{}, clock, random, stopper);
  if (!rest.ok()) {
    return common::InvalidArgumentError(std::string(flag) + ": " +
                                        std::string(rest.status().message()));
  }
  return std::move(rest).value();
}

// The TLS options from the flags; the files are checked here so that errors name the flag.
// Client certificates are verified when given (Go's VerifyClientCertIfGiven, as kube-scheduler):
// the kubelet's HTTPS probes and Prometheus present none; the filter decides what needs one.
common::StatusOr<http::TlsOptions> TlsFromFlags(const SecureServingFlags& f) {
  http::TlsOptions tls;
  tls.enabled = true;
  if (f.tls_cert_file.empty() != f.tls_key_file.empty()) {
    return common::InvalidArgumentError(
        "--tls-cert-file and --tls-private-key-file go together (neither: a self-signed pair "
        "generated in memory)");
  }
  for (const auto& [flag, path] :
       {std::pair<const char*, const std::string&>{"--tls-cert-file", f.tls_cert_file},
        {"--tls-private-key-file", f.tls_key_file},
        {"--client-ca-file", f.client_ca_file}}) {
    if (path.empty()) continue;
    if (auto text = ReadTextFile(path); !text.ok()) {
      return common::InvalidArgumentError(std::string(flag) + ": " +
                                          std::string(text.status().message()));
    }
  }
  tls.cert_file = f.tls_cert_file;
  tls.key_file = f.tls_key_file;
  if (tls.cert_file.empty()) {
    // As kube-scheduler without --tls-cert-file: a self-signed pair, in memory only.
    GPUSCHED_ASSIGN_OR_RETURN(http::CertKeyPem pair,
                              http::GenerateSelfSignedCertificate("localhost", {"127.0.0.1"}));
    tls.cert_pem = std::move(pair.cert_pem);
    tls.key_pem = std::move(pair.key_pem);
  }
  tls.client_ca_file = f.client_ca_file;
  if (!f.client_ca_file.empty()) {
    tls.client_auth = http::ClientAuth::kVerifyIfGiven;
  }
  tls.min_version = f.tls_min_version;
  tls.cipher_suites = f.tls_cipher_suites;
  if (auto list = http::OpenSslCipherList(f.tls_cipher_suites); !list.ok()) {
    return common::InvalidArgumentError("--tls-cipher-suites: " +
                                        std::string(list.status().message()));
  }
  // Loads everything once, so a bad file or version fails at start-up, not at the first client.
  if (auto probe = http::TlsContextSource::Create(tls); !probe.ok()) {
    std::string msg(probe.status().message());
    if (msg.starts_with("TLS minimum version")) msg = "--tls-min-version: " + msg;
    return common::InvalidArgumentError(msg);
  }
  return tls;
}

}  // namespace

void AddSecureServingFlags(CLI::App& app, SecureServingFlags& f, const SecureServingFlagSet& set) {
  f.secure_port = set.default_secure_port;
  f.bind_address = set.default_bind_address;
  app.add_option("--bind-address", f.bind_address,
                 "The IP address on which to listen for --secure-port (and --port)")
      ->capture_default_str();
  app.add_option("--secure-port", f.secure_port,
                 "The port on which to serve HTTPS with authentication and authorization. If 0, "
                 "don't serve HTTPS at all.")
      ->capture_default_str()
      ->check(CLI::Range(0, 65535));
  app.add_option("--tls-cert-file", f.tls_cert_file,
                 "File containing the default x509 certificate for HTTPS (CA cert, if any, "
                 "concatenated after server cert); re-read when it changes. If neither it nor "
                 "--tls-private-key-file is given, a self-signed pair is generated in memory.");
  app.add_option("--tls-private-key-file", f.tls_key_file,
                 "File containing the default x509 private key matching --tls-cert-file.");
  app.add_option("--tls-min-version", f.tls_min_version,
                 "Minimum TLS version supported. Possible values: VersionTLS10, VersionTLS11, "
                 "VersionTLS12, VersionTLS13 (default VersionTLS12)");
  app.add_option("--tls-cipher-suites", f.tls_cipher_suites,
                 "Comma-separated list of cipher suites for the server (IANA names, as Go's). If "
                 "omitted, the default OpenSSL cipher suites will be used.")
      ->delimiter(',');
  app.add_option("--client-ca-file", f.client_ca_file,
                 "If set, any request presenting a client certificate signed by one of the "
                 "authorities in the client-ca-file is authenticated with an identity "
                 "corresponding to the CommonName of the client certificate.");
  app.add_option("--authentication-kubeconfig", f.authentication_kubeconfig,
                 "kubeconfig file pointing at the 'core' kubernetes server with enough rights to "
                 "create tokenreviews.authentication.k8s.io (default: in-cluster; outside a "
                 "cluster, bearer tokens are not accepted).");
  app.add_option("--authorization-kubeconfig", f.authorization_kubeconfig,
                 "kubeconfig file pointing at the 'core' kubernetes server with enough rights to "
                 "create subjectaccessreviews.authorization.k8s.io (default: in-cluster; outside "
                 "a cluster, only --authorization-always-allow-paths and system:masters).");
  app.add_option("--authorization-always-allow-paths", f.always_allow_paths,
                 "A list of HTTP paths to skip during authorization, i.e. these are authorized "
                 "without contacting the 'core' kubernetes server.")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--authentication-token-webhook-cache-ttl", f.token_cache_ttl,
                 "The duration to cache responses from the webhook token authenticator.")
      ->capture_default_str();
  app.add_option("--authorization-webhook-cache-authorized-ttl", f.authorized_cache_ttl,
                 "The duration to cache 'authorized' responses from the webhook authorizer.")
      ->capture_default_str();
  app.add_option("--authorization-webhook-cache-unauthorized-ttl", f.unauthorized_cache_ttl,
                 "The duration to cache 'unauthorized' responses from the webhook authorizer.")
      ->capture_default_str();
  app.add_flag("--anonymous-auth", f.anonymous_auth,
               "Treat requests without credentials as system:anonymous and authorize them (as "
               "kube-scheduler does); default: answer them 401, except the always-allowed paths.");
  if (set.plain_http) {
    app.add_option("--port", f.port,
                   "Plain-HTTP port serving the same endpoints WITHOUT authentication or "
                   "authorization (for a trusted network only). 0: off.")
        ->capture_default_str()
        ->check(CLI::Range(0, 65535));
  }
}

common::StatusOr<std::unique_ptr<SecureServing>> SecureServing::Create(
    const SecureServingFlags& flags, Options options) {
  std::unique_ptr<SecureServing> s(new SecureServing());
  GPUSCHED_ASSIGN_OR_RETURN(s->tls_, TlsFromFlags(flags));
  GPUSCHED_RETURN_IF_ERROR(s->ConnectReviewers(flags));
  kube::delegated_auth::RequestAuthOptions ro;
  ro.always_allow_paths = flags.always_allow_paths;
  ro.certificate_paths = std::move(options.certificate_paths);
  ro.anonymous = flags.anonymous_auth;
  s->auth_ =
      std::make_unique<kube::delegated_auth::RequestAuth>(ro, s->tokens_.get(), s->access_.get());
  s->description_ =
      std::string("certificate ") +
      (flags.tls_cert_file.empty() ? "self-signed (in memory)" : flags.tls_cert_file) +
      ", client certificates " + (flags.client_ca_file.empty() ? "off" : flags.client_ca_file) +
      ", tokens " + (s->tokens_ ? "TokenReview" : "not accepted") + ", authorization " +
      (s->access_ ? "SubjectAccessReview" : "always-allow paths and system:masters only") +
      ", anonymous " + (flags.anonymous_auth ? "on" : "off");
  return s;
}

common::Status SecureServing::ConnectReviewers(const SecureServingFlags& flags) {
  GPUSCHED_ASSIGN_OR_RETURN(common::Duration token_ttl,
                            Ttl("--authentication-token-webhook-cache-ttl", flags.token_cache_ttl));
  GPUSCHED_ASSIGN_OR_RETURN(
      common::Duration allowed_ttl,
      Ttl("--authorization-webhook-cache-authorized-ttl", flags.authorized_cache_ttl));
  GPUSCHED_ASSIGN_OR_RETURN(
      common::Duration denied_ttl,
      Ttl("--authorization-webhook-cache-unauthorized-ttl", flags.unauthorized_cache_ttl));
  GPUSCHED_ASSIGN_OR_RETURN(
      authn_rest_, ReviewClient("--authentication-kubeconfig", flags.authentication_kubeconfig,
                                clock_, random_, stopper_));
  GPUSCHED_ASSIGN_OR_RETURN(
      authz_rest_, ReviewClient("--authorization-kubeconfig", flags.authorization_kubeconfig,
                                clock_, random_, stopper_));
  if (authn_rest_) {
    tokens_ =
        std::make_unique<kube::delegated_auth::TokenReviewer>(*authn_rest_, clock_, token_ttl);
  } else {
    spdlog::warn(
        "secure serving: no --authentication-kubeconfig and not running in a cluster: bearer "
        "tokens cannot be reviewed and get 401");
  }
  if (authz_rest_) {
    access_ = std::make_unique<kube::delegated_auth::AccessReviewer>(*authz_rest_, clock_,
                                                                     allowed_ttl, denied_ttl);
  } else {
    spdlog::warn(
        "secure serving: no --authorization-kubeconfig and not running in a cluster: only "
        "--authorization-always-allow-paths and system:masters are authorized");
  }
  return common::Status::Ok();
}

SecureServing::~SecureServing() {
  stopper_.Stop();
  if (authn_rest_) authn_rest_->Cancel();
  if (authz_rest_) authz_rest_->Cancel();
}

std::string HostPort(const std::string& host, int port) {
  return (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" +
         std::to_string(port);
}

}  // namespace gpusched::cmd
