// SPDX-License-Identifier: Apache-2.0
// TLS for http::Server: the serving options as kube-scheduler's secure serving takes them
// (certificate and key files re-read when they change, a self-signed pair generated in memory when
// none is given, minimum version and cipher suites by Go's names, client certificates verified
// against a CA bundle), and the identity a verified client certificate carries.
//
//   TlsOptions ─► TlsContextSource::Create (validates, loads) ─► Current() per accepted connection
//                                                                 (re-reads changed files first)
//
// OpenSSL (through Boost.Asio's ssl::context) does the work; this file only maps the options.
//
// Threading: TlsContextSource is thread-safe; Current() may be called from any worker.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "src/common/mutex.h"
#include "src/common/status.h"

namespace boost::asio::ssl {
class context;
}

namespace gpusched::http {

// Whether the server asks for a client certificate and what it does with one.
enum class ClientAuth {
  kNone,           // never asks
  kVerifyIfGiven,  // asks; one that does not chain to the client CAs fails the handshake, none is
                   // fine (Go's tls.VerifyClientCertIfGiven, kube-scheduler's --client-ca-file)
  kRequire,        // asks; none, or one that does not verify, fails the handshake
};

struct TlsOptions {
  bool enabled = false;
  // PEM files, re-read (and swapped in for new connections) when either changes; a pair that does
  // not load keeps the previous one. Both or neither.
  std::string cert_file;
  std::string key_file;
  // An in-memory PEM pair, used when the files are empty (GenerateSelfSignedCertificate).
  std::string cert_pem;
  std::string key_pem;
  // PEM bundle of the CAs client certificates must chain to; re-read when it changes. Needed by
  // kVerifyIfGiven and kRequire.
  std::string client_ca_file;
  ClientAuth client_auth = ClientAuth::kNone;
  // "VersionTLS10", "VersionTLS11", "VersionTLS12" or "VersionTLS13" (Go's names, as
  // --tls-min-version takes them); empty: VersionTLS12.
  std::string min_version;
  // IANA cipher suite names as Go spells them (TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, ...), for
  // TLS 1.2 and below; empty: OpenSSL's defaults. TLS 1.3 suites are accepted and, as in Go, not
  // configurable (all of them stay on).
  std::vector<std::string> cipher_suites;
};

// The identity of a client certificate that verified against the client CAs: Kubernetes' x509
// authenticator reads the user from the subject's CN and the groups from its O entries.
struct PeerCertificate {
  std::string common_name;
  std::vector<std::string> organizations;
};

struct CertKeyPem {
  std::string cert_pem;
  std::string key_pem;
};

// A self-signed serving certificate and its key (ECDSA P-256, one year), as kube-scheduler makes
// when no --tls-cert-file is given: CN "<host>@<unix seconds>", SANs `host` (DNS) and
// `ip_addresses`. Errors: kInvalidArgument for an IP that does not parse, kInternal from OpenSSL.
common::StatusOr<CertKeyPem> GenerateSelfSignedCertificate(
    const std::string& host, const std::vector<std::string>& ip_addresses);

// The OpenSSL cipher list for Go cipher suite names (TLS 1.3 names are skipped); "" for none.
// kInvalidArgument names the first unknown suite.
common::StatusOr<std::string> OpenSslCipherList(const std::vector<std::string>& go_names);

// Holds the current server context and rebuilds it when the files behind it change.
class TlsContextSource {
 public:
  // Validates `options` and builds the first context. Errors name the option and file:
  // "TLS certificate /x.pem: cannot read the file: No such file or directory".
  static common::StatusOr<std::unique_ptr<TlsContextSource>> Create(TlsOptions options);
  ~TlsContextSource();

  // The context for a new connection. When a file's size, mtime or inode changed since the last
  // load, it is re-read first; a reload that fails keeps the previous context (and is retried
  // only after the files change again); last_reload_error() says why.
  std::shared_ptr<boost::asio::ssl::context> Current();
  // The error of the last reload that failed, empty after one that worked.
  std::string last_reload_error();
  // How many times the context was rebuilt after Create (tests, logs).
  int reloads();

 private:
  explicit TlsContextSource(TlsOptions options) : options_(std::move(options)) {}
  std::string Signature() const;

  const TlsOptions options_;
  common::Mutex mu_;
  std::shared_ptr<boost::asio::ssl::context> current_ GPUSCHED_GUARDED_BY(mu_);
  std::string signature_ GPUSCHED_GUARDED_BY(mu_);  // of the files last tried
  std::string last_error_ GPUSCHED_GUARDED_BY(mu_);
  int reloads_ GPUSCHED_GUARDED_BY(mu_) = 0;
};

}  // namespace gpusched::http
