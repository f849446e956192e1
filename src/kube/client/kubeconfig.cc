// SPDX-License-Identifier: Apache-2.0
#include "src/kube/client/kubeconfig.h"

#include <boost/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "src/api/decode.h"
#include "src/api/fields.h"
#include "src/common/strings.h"
#include "src/kube/client/encoding.h"
#include "src/kube/client/file_util.h"

namespace gpusched::kube::client {
namespace {

namespace json = boost::json;

std::string KubeconfigTypeError(api::JsonType want, const json::value&) {
  switch (want) {
    case api::JsonType::kObject: return "must be a mapping";
    case api::JsonType::kArray: return "must be a list";
    case api::JsonType::kBool: return "must be true or false";
    default: return "must be a string";
  }
}

constexpr api::Dialect kKubeconfigDialect{api::PathStyle::kDotted, &KubeconfigTypeError, nullptr,
                                          nullptr};

// Field access through api::JsonReader, stopping at the first error: errors name the kubeconfig
// and the field path.
class Reader {
 public:
  explicit Reader(std::string_view source) : source_(source) {}

  common::Status Error(std::string_view field, std::string_view what) const {
    return common::InvalidArgumentError(source_ + ": " + std::string(field) + ": " +
                                        std::string(what));
  }
  common::Status Wrap(std::string_view field, const common::Status& s) const {
    return common::Status(s.code(),
                          source_ + ": " + std::string(field) + ": " + std::string(s.message()));
  }

  // The string at o[key], "" when absent or null.
  common::StatusOr<std::string> String(const json::object& o, std::string_view key,
                                       std::string_view path) const {
    api::JsonReader r(kKubeconfigDialect);
    const std::optional<std::string_view> s = r.String(o, key, api::FieldPath::Text(path));
    if (!r.ok()) return Failed(r);
    return std::string(s.value_or(""));
  }
  // A bool, also written as the string "true" or "false"; false when absent or null.
  common::StatusOr<bool> Bool(const json::object& o, std::string_view key,
                              std::string_view path) const {
    if (const json::value* v = o.if_contains(key); v != nullptr && v->is_string()) {
      if (v->as_string() == "true" || v->as_string() == "false") return v->as_string() == "true";
    }
    api::JsonReader r(kKubeconfigDialect);
    const std::optional<bool> b = r.Bool(o, key, api::FieldPath::Text(path));
    if (!r.ok()) return Failed(r);
    return b.value_or(false);
  }
  // The strings of the list o[key]; none when absent or null.
  common::StatusOr<std::vector<std::string>> Strings(const json::object& o, std::string_view key,
                                                     std::string_view path) const {
    api::JsonReader r(kKubeconfigDialect);
    std::vector<std::string> out;
    r.ForEachString(o, key, api::FieldPath::Text(path),
                    [&](std::string_view s, const api::FieldPath&) { out.emplace_back(s); });
    if (!r.ok()) return Failed(r);
    return out;
  }
  // o[key] as an object; an empty object when absent or null.
  common::StatusOr<const json::object*> Object(const json::object& o, std::string_view key,
                                               std::string_view path) const {
    static const json::object kEmpty;
    api::JsonReader r(kKubeconfigDialect);
    const json::object* v = r.Object(o, key, api::FieldPath::Text(path));
    if (!r.ok()) return Failed(r);
    return v != nullptr ? v : &kEmpty;
  }
  // o[key] as an array; an empty array when absent or null.
  common::StatusOr<const json::array*> Array(const json::object& o, std::string_view key,
                                             std::string_view path) const {
    static const json::array kEmpty;
    api::JsonReader r(kKubeconfigDialect);
    const json::array* v = r.Array(o, key, api::FieldPath::Text(path));
    if (!r.ok()) return Failed(r);
    return v != nullptr ? v : &kEmpty;
  }

  static std::string Join(std::string_view path, std::string_view key) {
    if (path.empty()) return std::string(key);
    return std::string(path) + "." + std::string(key);
  }

  const std::string& source() const { return source_; }

 private:
  common::Status Failed(const api::JsonReader& r) const {
    return common::InvalidArgumentError(source_ + ": " + r.errors().list().front());
  }

  std::string source_;
};

// A named entry of clusters/contexts/users: returns the inner object (`inner_key`) and its path.
struct Named {
  const json::object* inner = nullptr;
  std::string path;  // "users[0] (\"admin\").user"
};

common::StatusOr<Named> FindNamed(const Reader& r, const json::object& root, std::string_view list,
                                  std::string_view inner_key, std::string_view name,
                                  std::string_view referenced_by) {
  GPUSCHED_ASSIGN_OR_RETURN(const json::array* items, r.Array(root, list, ""));
  for (size_t i = 0; i < items->size(); ++i) {
    std::string path = std::string(list) + "[" + std::to_string(i) + "]";
    const json::value& item = (*items)[i];
    if (!item.is_object()) return r.Error(path, "must be a mapping");
    GPUSCHED_ASSIGN_OR_RETURN(std::string item_name, r.String(item.as_object(), "name", path));
    if (item_name != name) continue;
    path += " (" + common::Quote(item_name) + ")";
    const json::value* inner = item.as_object().if_contains(inner_key);
    if (inner == nullptr || !inner->is_object()) {
      return r.Error(Reader::Join(path, inner_key), "missing or not a mapping");
    }
    return Named{&inner->as_object(), Reader::Join(path, inner_key)};
  }
  return r.Error(referenced_by, "no " + std::string(list) + " entry named " + common::Quote(name));
}

// Reads `<key>-data` (base64) or `<key>` (a file); `<key>-data` wins, as in client-go.
common::StatusOr<std::string> DataOrFile(const Reader& r, const json::object& o,
                                         std::string_view key, std::string_view path,
                                         std::string_view base_dir) {
  std::string data_key = std::string(key) + "-data";
  GPUSCHED_ASSIGN_OR_RETURN(std::string data, r.String(o, data_key, path));
  if (!data.empty()) {
    std::optional<std::string> decoded = Base64Decode(data);
    if (!decoded) return r.Error(Reader::Join(path, data_key), "invalid base64");
    return std::move(*decoded);
  }
  GPUSCHED_ASSIGN_OR_RETURN(std::string file, r.String(o, key, path));
  if (file.empty()) return std::string();
  auto content = ReadFileToString(JoinPath(base_dir, file));
  if (!content.ok()) return r.Wrap(Reader::Join(path, key), content.status());
  return std::move(content).value();
}

common::Status CheckLooksLikePem(const Reader& r, std::string_view pem, std::string_view field) {
  if (!pem.empty() && pem.find("-----BEGIN ") == std::string_view::npos) {
    return r.Error(field, "not PEM data (no -----BEGIN line)");
  }
  return common::Status::Ok();
}

common::Status ParseExec(const Reader& r, const json::object& o, std::string_view path,
                         std::string_view base_dir, ExecConfig* exec) {
  GPUSCHED_ASSIGN_OR_RETURN(exec->command, r.String(o, "command", path));
  if (exec->command.empty()) return r.Error(Reader::Join(path, "command"), "required");
  // client-go: a relative command with a path separator is relative to the kubeconfig.
  if (exec->command.find('/') != std::string::npos)
    exec->command = JoinPath(base_dir, exec->command);
  GPUSCHED_ASSIGN_OR_RETURN(exec->api_version, r.String(o, "apiVersion", path));
  if (exec->api_version != "client.authentication.k8s.io/v1" &&
      exec->api_version != "client.authentication.k8s.io/v1beta1") {
    return r.Error(Reader::Join(path, "apiVersion"),
                   exec->api_version.empty()
                       ? "required (client.authentication.k8s.io/v1 or v1beta1)"
                       : "unsupported " + common::Quote(exec->api_version) +
                             " (want client.authentication.k8s.io/v1 or v1beta1)");
  }
  GPUSCHED_ASSIGN_OR_RETURN(exec->args, r.Strings(o, "args", path));
  GPUSCHED_ASSIGN_OR_RETURN(const json::array* env, r.Array(o, "env", path));
  for (size_t i = 0; i < env->size(); ++i) {
    std::string epath = Reader::Join(path, "env[" + std::to_string(i) + "]");
    if (!(*env)[i].is_object()) return r.Error(epath, "must be a mapping with name and value");
    GPUSCHED_ASSIGN_OR_RETURN(std::string name, r.String((*env)[i].as_object(), "name", epath));
    GPUSCHED_ASSIGN_OR_RETURN(std::string value, r.String((*env)[i].as_object(), "value", epath));
    if (name.empty()) return r.Error(Reader::Join(epath, "name"), "required");
    exec->env.emplace_back(std::move(name), std::move(value));
  }
  GPUSCHED_ASSIGN_OR_RETURN(exec->provide_cluster_info, r.Bool(o, "provideClusterInfo", path));
  GPUSCHED_ASSIGN_OR_RETURN(exec->install_hint, r.String(o, "installHint", path));
  GPUSCHED_ASSIGN_OR_RETURN(std::string mode, r.String(o, "interactiveMode", path));
  if (mode == "Always") {
    return r.Error(Reader::Join(path, "interactiveMode"),
                   "\"Always\" needs a terminal; gpusched runs plugins non-interactively");
  }
  return common::Status::Ok();
}

}  // namespace

std::string ClusterConfig::Describe() const {
  std::string out = source;
  if (!context.empty()) out += " (context " + common::Quote(context) + ")";
  out += " " + server + ", auth:";
  bool any = false;
  auto add = [&](std::string_view what) {
    out += any ? " + " : " ";
    out += what;
    any = true;
  };
  if (!client_cert_pem.empty()) add("client certificate");
  if (exec) {
    add("exec plugin " + common::Quote(exec->command));
  } else if (!token_file.empty()) {
    add("token file " + common::Quote(token_file));
  } else if (!token.empty()) {
    add("bearer token");
  }
  if (!any) add("none");
  if (insecure_skip_tls_verify) out += ", TLS verification DISABLED";
  return out;
}

common::StatusOr<ClusterConfig> ParseKubeconfig(std::string_view text, std::string_view source,
                                                std::string_view base_dir,
                                                std::string_view context) {
  Reader r(source);
  auto docs = api::ParseYamlDocuments(text, source);
  if (!docs.ok()) return docs.status();
  if (docs->empty()) return r.Error("(document)", "empty kubeconfig");
  if (docs->size() > 1) return r.Error("(document)", "more than one YAML document");
  const json::value& doc = (*docs)[0];
  if (!doc.is_object()) return r.Error("(document)", "must be a mapping");
  const json::object& root = doc.as_object();

  ClusterConfig cfg;
  cfg.source = std::string(source);
  std::string context_field = "--context";
  if (context.empty()) {
    GPUSCHED_ASSIGN_OR_RETURN(cfg.context, r.String(root, "current-context", ""));
    context_field = "current-context";
    if (cfg.context.empty()) return r.Error("current-context", "not set and no context was given");
  } else {
    cfg.context = std::string(context);
  }

  GPUSCHED_ASSIGN_OR_RETURN(Named ctx,
                            FindNamed(r, root, "contexts", "context", cfg.context, context_field));
  GPUSCHED_ASSIGN_OR_RETURN(std::string cluster_name, r.String(*ctx.inner, "cluster", ctx.path));
  if (cluster_name.empty()) return r.Error(Reader::Join(ctx.path, "cluster"), "required");
  GPUSCHED_ASSIGN_OR_RETURN(std::string user_name, r.String(*ctx.inner, "user", ctx.path));
  GPUSCHED_ASSIGN_OR_RETURN(cfg.namespace_, r.String(*ctx.inner, "namespace", ctx.path));

  // Cluster.
  GPUSCHED_ASSIGN_OR_RETURN(Named cl, FindNamed(r, root, "clusters", "cluster", cluster_name,
                                                Reader::Join(ctx.path, "cluster")));
  GPUSCHED_ASSIGN_OR_RETURN(cfg.server, r.String(*cl.inner, "server", cl.path));
  if (cfg.server.empty()) return r.Error(Reader::Join(cl.path, "server"), "required");
  if (!common::StartsWith(cfg.server, "https://") && !common::StartsWith(cfg.server, "http://")) {
    return r.Error(Reader::Join(cl.path, "server"),
                   common::Quote(cfg.server) + " is not an http:// or https:// URL");
  }
  while (cfg.server.size() > 8 && cfg.server.back() == '/') cfg.server.pop_back();
  GPUSCHED_ASSIGN_OR_RETURN(cfg.ca_pem,
                            DataOrFile(r, *cl.inner, "certificate-authority", cl.path, base_dir));
  GPUSCHED_RETURN_IF_ERROR(
      CheckLooksLikePem(r, cfg.ca_pem, Reader::Join(cl.path, "certificate-authority")));
  GPUSCHED_ASSIGN_OR_RETURN(cfg.insecure_skip_tls_verify,
                            r.Bool(*cl.inner, "insecure-skip-tls-verify", cl.path));
  GPUSCHED_ASSIGN_OR_RETURN(cfg.tls_server_name, r.String(*cl.inner, "tls-server-name", cl.path));
  GPUSCHED_ASSIGN_OR_RETURN(cfg.proxy_url, r.String(*cl.inner, "proxy-url", cl.path));
  if (cfg.insecure_skip_tls_verify && !cfg.ca_pem.empty()) {
    // client-go rejects this combination too: it is almost always a mistake.
    return r.Error(Reader::Join(cl.path, "insecure-skip-tls-verify"),
                   "cannot be combined with certificate-authority(-data)");
  }

  // User (a context without a user is anonymous).
  if (!user_name.empty()) {
    GPUSCHED_ASSIGN_OR_RETURN(
        Named u, FindNamed(r, root, "users", "user", user_name, Reader::Join(ctx.path, "user")));
    GPUSCHED_ASSIGN_OR_RETURN(cfg.client_cert_pem,
                              DataOrFile(r, *u.inner, "client-certificate", u.path, base_dir));
    GPUSCHED_ASSIGN_OR_RETURN(cfg.client_key_pem,
                              DataOrFile(r, *u.inner, "client-key", u.path, base_dir));
    GPUSCHED_RETURN_IF_ERROR(
        CheckLooksLikePem(r, cfg.client_cert_pem, Reader::Join(u.path, "client-certificate")));
    GPUSCHED_RETURN_IF_ERROR(
        CheckLooksLikePem(r, cfg.client_key_pem, Reader::Join(u.path, "client-key")));
    if (cfg.client_cert_pem.empty() != cfg.client_key_pem.empty()) {
      return r.Error(
          Reader::Join(u.path, cfg.client_cert_pem.empty() ? "client-certificate" : "client-key"),
          "required when " +
              std::string(cfg.client_cert_pem.empty() ? "client-key" : "client-certificate") +
              " is set");
    }
    GPUSCHED_ASSIGN_OR_RETURN(cfg.token, r.String(*u.inner, "token", u.path));
    GPUSCHED_ASSIGN_OR_RETURN(std::string token_file, r.String(*u.inner, "tokenFile", u.path));
    if (!token_file.empty()) cfg.token_file = JoinPath(base_dir, token_file);
    GPUSCHED_ASSIGN_OR_RETURN(const json::object* exec, r.Object(*u.inner, "exec", u.path));
    if (!exec->empty()) {
      cfg.exec.emplace();
      GPUSCHED_RETURN_IF_ERROR(
          ParseExec(r, *exec, Reader::Join(u.path, "exec"), base_dir, &*cfg.exec));
    }
    if (u.inner->contains("auth-provider")) {
      return common::UnimplementedError(
          r.source() + ": " + Reader::Join(u.path, "auth-provider") +
          ": auth providers were removed from Kubernetes clients; use an exec plugin");
    }
    if (u.inner->contains("username") || u.inner->contains("password")) {
      return common::UnimplementedError(r.source() + ": " + Reader::Join(u.path, "username") +
                                        ": basic authentication is not supported");
    }
    int methods = (cfg.exec ? 1 : 0) + (!cfg.token.empty() || !cfg.token_file.empty() ? 1 : 0);
    if (methods > 1) {
      return r.Error(Reader::Join(u.path, "exec"), "cannot be combined with token or tokenFile");
    }
  }
  return cfg;
}

common::StatusOr<ClusterConfig> LoadKubeconfig(const std::string& path, std::string_view context) {
  std::string source = "kubeconfig " + path;
  auto text = ReadFileToString(path);
  if (!text.ok()) return text.status().WithContext(source);
  return ParseKubeconfig(*text, source, DirName(path), context);
}

common::StatusOr<ClusterConfig> LoadInClusterConfig(const Environment& env,
                                                    std::string_view sa_dir) {
  auto host_it = env.find("KUBERNETES_SERVICE_HOST");
  auto port_it = env.find("KUBERNETES_SERVICE_PORT");
  if (host_it == env.end() || port_it == env.end() || host_it->second.empty() ||
      port_it->second.empty()) {
    return common::NotFoundError(
        "in-cluster config: KUBERNETES_SERVICE_HOST and "
        "KUBERNETES_SERVICE_PORT are not set (not running in a pod)");
  }
  const std::string& host = host_it->second;
  const std::string& port = port_it->second;
  auto port_num = common::ParseInt64(port);
  if (!port_num || *port_num <= 0 || *port_num > 65535) {
    return common::InvalidArgumentError(
        "in-cluster config: KUBERNETES_SERVICE_PORT: invalid port " + common::Quote(port));
  }
  ClusterConfig cfg;
  cfg.source = "in-cluster";
  bool ipv6 = host.find(':') != std::string::npos && host.front() != '[';
  cfg.server = "https://" + (ipv6 ? "[" + host + "]" : host) + ":" + std::to_string(*port_num);
  std::string dir(sa_dir);
  cfg.token_file = JoinPath(dir, "token");
  if (!FileExists(cfg.token_file)) {
    return common::NotFoundError("in-cluster config: no service account token at " +
                                 common::Quote(cfg.token_file));
  }
  auto ca = ReadFileToString(JoinPath(dir, "ca.crt"));
  if (!ca.ok()) return ca.status().WithContext("in-cluster config: ca.crt");
  cfg.ca_pem = std::move(ca).value();
  auto ns = ReadFileToString(JoinPath(dir, "namespace"));
  if (ns.ok()) cfg.namespace_ = std::string(common::Trim(*ns));
  return cfg;
}

common::StatusOr<ClusterConfig> ResolveConfig(std::string_view explicit_path,
                                              const Environment& env,
                                              const ResolveOptions& options) {
  if (!explicit_path.empty()) return LoadKubeconfig(std::string(explicit_path), options.context);
  std::string tried;
  if (auto it = env.find("KUBECONFIG"); it != env.end() && !it->second.empty()) {
    for (std::string_view p : common::Split(it->second, ':')) {
      if (p.empty()) continue;
      std::string path(p);
      if (FileExists(path)) return LoadKubeconfig(path, options.context);
    }
    tried += "no file of KUBECONFIG=" + common::Quote(it->second) + " exists; ";
  }
  auto in_cluster = LoadInClusterConfig(env, options.service_account_dir);
  if (in_cluster.ok() || in_cluster.status().code() != common::StatusCode::kNotFound) {
    return in_cluster;
  }
  tried += std::string(in_cluster.status().message()) + "; ";
  if (auto it = env.find("HOME"); it != env.end() && !it->second.empty()) {
    std::string path = JoinPath(it->second, ".kube/config");
    if (FileExists(path)) return LoadKubeconfig(path, options.context);
    tried += "no " + path;
  } else {
    tried += "HOME is not set";
  }
  return common::NotFoundError("no Kubernetes client configuration: " + tried +
                               " (pass --kubeconfig)");
}

}  // namespace gpusched::kube::client
