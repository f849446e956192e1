// SPDX-License-Identifier: Apache-2.0
// Where the API server is and how to authenticate to it: kubeconfig files, in-cluster service
// account config, and the client-go precedence between them.
//
//   ResolveConfig(--kubeconfig, env)
//     1. the explicit path (the --kubeconfig flag or clientConnection.kubeconfig), if non-empty;
//     2. KUBECONFIG: the first file of its colon-separated list that exists (files are not merged);
//     3. in-cluster: KUBERNETES_SERVICE_HOST/PORT set and the service account token readable;
//     4. $HOME/.kube/config.
//
// Relative file paths inside a kubeconfig (certificate-authority, client-certificate, client-key,
// tokenFile, an exec command containing '/') resolve against the kubeconfig's directory, as in
// client-go. File contents (CA, certificates, keys) are read once here; a tokenFile is only
// recorded, the credential provider (auth.h) re-reads it as it rotates.
//
// Errors name the file and the field, e.g.
//   kubeconfig /home/u/.kube/config: users[0] ("admin").user.client-key: reading "k.pem": ...
// The environment is passed in; nothing here calls getenv. Pure functions, thread-safe.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/common/status.h"

namespace gpusched::kube::client {

// The process environment, as captured by cmd/ (name -> value).
using Environment = std::map<std::string, std::string, std::less<>>;

inline constexpr std::string_view kServiceAccountDir =
    "/var/run/secrets/kubernetes.io/serviceaccount";

// users[].user.exec: a credential plugin (client.authentication.k8s.io ExecCredential).
struct ExecConfig {
  std::string command;  // absolute, on PATH, or resolved against the kubeconfig dir
  std::vector<std::string> args;
  std::vector<std::pair<std::string, std::string>> env;  // added to the inherited environment
  std::string api_version;  // client.authentication.k8s.io/v1 or /v1beta1
  bool provide_cluster_info = false;
  std::string install_hint;  // shown when the command cannot be run
};

// Everything needed to reach one API server. Holds secrets (token, client key): never log a
// ClusterConfig; log Describe() instead.
struct ClusterConfig {
  std::string server;  // "https://10.0.0.1:443", no trailing '/'; may carry a path prefix
  std::string ca_pem;  // empty: the system trust store
  bool insecure_skip_tls_verify = false;  // explicit opt-out; the client logs it loudly
  std::string tls_server_name;            // overrides the name checked in the server certificate
  std::string proxy_url;                  // clusters[].cluster.proxy-url; empty: no proxy
  std::string client_cert_pem;
  std::string client_key_pem;  // secret
  std::string token;           // secret; static bearer token
  std::string token_file;      // re-read as it rotates (wins over token when both set)
  std::optional<ExecConfig> exec;
  std::string namespace_;  // the context's namespace, or the service account's; "" if unset
  std::string context;     // the context used ("" for in-cluster)
  std::string source;      // "kubeconfig /path" or "in-cluster"

  // "in-cluster https://10.0.0.1:443 (token file)", for logs: no secret values.
  std::string Describe() const;
};

// Parses kubeconfig text. `source` names it in errors ("kubeconfig /path"); `base_dir` resolves
// relative paths; `context` overrides current-context when non-empty.
common::StatusOr<ClusterConfig> ParseKubeconfig(std::string_view text, std::string_view source,
                                                std::string_view base_dir,
                                                std::string_view context = "");
// Reads and parses the kubeconfig file at `path`.
common::StatusOr<ClusterConfig> LoadKubeconfig(const std::string& path,
                                               std::string_view context = "");

// In-cluster config: https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT (IPv6 bracketed),
// CA from `sa_dir`/ca.crt, token_file `sa_dir`/token, namespace from `sa_dir`/namespace.
// kNotFound when the service variables are unset (not running in a pod).
common::StatusOr<ClusterConfig> LoadInClusterConfig(const Environment& env,
                                                    std::string_view sa_dir = kServiceAccountDir);

struct ResolveOptions {
  std::string context;  // --context; "" = current-context
  std::string service_account_dir = std::string(kServiceAccountDir);
};

// Applies the precedence above. Errors from the chosen source are returned as is (a broken
// explicit kubeconfig is an error, not a reason to fall through); kNotFound when no source exists.
common::StatusOr<ClusterConfig> ResolveConfig(std::string_view explicit_path,
                                              const Environment& env,
                                              const ResolveOptions& options = {});

}  // namespace gpusched::kube::client
