// SPDX-License-Identifier: Apache-2.0
// Credential providers: where the bearer token and the client certificate of each request come
// from. HttpRestClient calls Get() before every attempt and OnUnauthorized() after a 401.
//
//   StaticCredentialProvider     a token and/or client certificate fixed at startup
//   TokenFileCredentialProvider  a token file that rotates (projected service account tokens,
//                                kubeconfig tokenFile): re-stat at most once per check interval
//                                (default 1 min) and re-read when its identity changed
//   ExecCredentialProvider       a client.authentication.k8s.io ExecCredential plugin
//                                (`aws eks get-token`, `gke-gcloud-auth-plugin`, kubelogin):
//                                run on first use, cached until expirationTimestamp, re-run on 401
//
// MakeCredentialProvider picks one from a ClusterConfig; a kubeconfig's client certificate is
// combined with a token source when both are present.
//
// Thread safety: every provider is thread-safe. Get() may block (file I/O; the exec provider
// runs a process, serialising callers while it does). Token and key values are never logged and
// never appear in a Status message.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "src/common/clock.h"
#include "src/common/mutex.h"
#include "src/common/status.h"
#include "src/kube/client/file_util.h"
#include "src/kube/client/kubeconfig.h"

namespace gpusched::kube::client {

// What one request authenticates with. Holds secrets: never log it.
struct Credentials {
  std::string bearer_token;     // "" = no Authorization header
  std::string client_cert_pem;  // "" = no client certificate
  std::string client_key_pem;
};

class CredentialProvider {
 public:
  virtual ~CredentialProvider() = default;
  // The credentials for the next request. An error fails the request without sending it
  // (kUnauthenticated-like problems are kPermissionDenied; a broken plugin kUnavailable).
  virtual common::StatusOr<Credentials> Get() = 0;
  // The server answered 401 to a request sent with the credentials of the last Get(). Drops
  // cached credentials. Returns true if the next Get() may return different credentials, so one
  // retry is worthwhile; false if nothing can change (a static token).
  virtual bool OnUnauthorized() = 0;
  // "token file \"/var/run/...\"": for logs, no secret.
  virtual std::string Describe() const = 0;
};
using CredentialProviderPtr = std::unique_ptr<CredentialProvider>;

class StaticCredentialProvider final : public CredentialProvider {
 public:
  explicit StaticCredentialProvider(Credentials credentials)
      : credentials_(std::move(credentials)) {}
  common::StatusOr<Credentials> Get() override { return credentials_; }
  bool OnUnauthorized() override { return false; }
  std::string Describe() const override;

 private:
  const Credentials credentials_;
};

class TokenFileCredentialProvider final : public CredentialProvider {
 public:
  // `tls` supplies the client certificate (if any) sent alongside the token.
  // REQUIRES: check_interval >= 0.
  TokenFileCredentialProvider(std::string path, const common::Clock& clock,
                              common::Duration check_interval = std::chrono::minutes(1),
                              Credentials tls = {});
  // Re-stats the file if the last check is at least check_interval old and re-reads it if it
  // changed. If a re-read fails after a token was read once, the last token is kept (the kubelet
  // swaps the file atomically, so a failure is transient) and the failure is logged.
  common::StatusOr<Credentials> Get() override;
  // Forces a re-read now; true if the token differs from the one last handed out.
  bool OnUnauthorized() override;
  std::string Describe() const override;

 private:
  common::Status ReloadLocked(bool force) GPUSCHED_REQUIRES(mu_);

  const std::string path_;
  const common::Clock& clock_;
  const common::Duration check_interval_;
  const Credentials tls_;
  common::Mutex mu_;
  std::string token_ GPUSCHED_GUARDED_BY(mu_);
  std::optional<FileStamp> stamp_ GPUSCHED_GUARDED_BY(mu_);
  std::optional<common::TimePoint> last_check_ GPUSCHED_GUARDED_BY(mu_);
};

// The result of one plugin run (exposed for tests).
struct ExecCredential {
  Credentials credentials;
  std::optional<common::TimePoint> expiration;  // none: valid until a 401
};

// Parses a plugin's stdout. `api_version` is the one the kubeconfig asked for; the output must
// match it. Errors never quote the token.
common::StatusOr<ExecCredential> ParseExecCredential(std::string_view stdout_text,
                                                     std::string_view api_version);

// Runs a child process: `argv[0]` (absolute, or searched on PATH from `env`), environment `env`
// exactly, stdin /dev/null. Returns stdout; a non-zero exit, a signal, output above `max_output`
// or running past `timeout` is an error that carries the tail of stderr. Blocks; thread-safe.
// The timeout is measured by poll(2) slices, not by reading a clock.
struct ProcessResult {
  int exit_code = -1;
  std::string stdout_text;
  std::string stderr_text;
};
common::StatusOr<ProcessResult> RunProcess(const std::vector<std::string>& argv,
                                           const Environment& env, common::Duration timeout,
                                           size_t max_output = 1u << 20);

struct ExecProviderOptions {
  common::Duration timeout = std::chrono::seconds(60);  // per plugin run
  // Credentials are treated as expired this long before expirationTimestamp.
  common::Duration expiry_margin = std::chrono::seconds(0);
};

class ExecCredentialProvider final : public CredentialProvider {
 public:
  // `base_env` is the process environment captured by cmd/ (the plugin inherits it, plus
  // exec.env); `cluster` fills KUBERNETES_EXEC_INFO's spec.cluster when provideClusterInfo;
  // `tls` is the kubeconfig's own client certificate, used when the plugin returns only a token.
  ExecCredentialProvider(ExecConfig exec, Environment base_env, const ClusterConfig& cluster,
                         const common::Clock& clock, ExecProviderOptions options = {},
                         Credentials tls = {});
  common::StatusOr<Credentials> Get() override;
  bool OnUnauthorized() override;
  std::string Describe() const override;

  // The KUBERNETES_EXEC_INFO value (exposed for tests).
  std::string ExecInfoForTest() const { return exec_info_; }
  int RunsForTest() const;

 private:
  common::StatusOr<ExecCredential> Run() const;

  const ExecConfig exec_;
  const Environment env_;  // base_env + exec.env + KUBERNETES_EXEC_INFO
  const std::string exec_info_;
  const common::Clock& clock_;
  const ExecProviderOptions options_;
  const Credentials tls_;
  mutable common::Mutex mu_;
  std::optional<ExecCredential> cached_ GPUSCHED_GUARDED_BY(mu_);
  int runs_ GPUSCHED_GUARDED_BY(mu_) = 0;
};

// The provider a ClusterConfig asks for: exec, else token file, else static (token and/or
// client certificate). `base_env` matters only for exec plugins.
CredentialProviderPtr MakeCredentialProvider(const ClusterConfig& config,
                                             const Environment& base_env,
                                             const common::Clock& clock);

}  // namespace gpusched::kube::client
