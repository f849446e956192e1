// SPDX-License-Identifier: Apache-2.0
#include "src/kube/client/kubeconfig.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>

#include "src/kube/client/encoding.h"
#include "src/kube/client/test_server.h"

namespace gpusched::kube::client {
namespace {

using common::StatusCode;
using ::testing::HasSubstr;
using testing::TempDir;

const std::string kCaPem = "-----BEGIN CERTIFICATE-----\nQ0E=\n-----END CERTIFICATE-----\n";
const std::string kCertPem = "-----BEGIN CERTIFICATE-----\nQ0VSVA==\n-----END CERTIFICATE-----\n";
const std::string kKeyPem = "-----BEGIN PRIVATE KEY-----\nS0VZ\n-----END PRIVATE KEY-----\n";

// Two clusters, two users, two contexts; current-context "prod".
std::string BaseKubeconfig(const std::string& user_prod) {
  return R"(apiVersion: v1
kind: Config
current-context: prod
clusters:
- name: prod-cluster
  cluster:
    server: https://10.0.0.1:6443/
    certificate-authority-data: )" +
         Base64Encode(kCaPem) + R"(
- name: dev-cluster
  cluster:
    server: https://dev.example:443
    certificate-authority: certs/ca.pem
    tls-server-name: kubernetes.default
contexts:
- name: prod
  context: {cluster: prod-cluster, user: prod-user, namespace: team-a}
- name: dev
  context: {cluster: dev-cluster, user: dev-user}
users:
- name: prod-user
  user:
)" + user_prod +
         R"(
- name: dev-user
  user:
    client-certificate: certs/client.pem
    client-key: certs/client-key.pem
)";
}

TEST(KubeconfigTest, ParsesContextsCredentialsAndErrors) {
  TempDir dir;
  std::filesystem::create_directories(dir.path() + "/certs");
  dir.Write("certs/ca.pem", kCaPem);
  dir.Write("certs/client.pem", kCertPem);
  dir.Write("certs/client-key.pem", kKeyPem);
  const std::string src = "kubeconfig " + dir.path() + "/config";

  struct Case {
    const char* name;
    std::string yaml;
    std::string context;
    StatusCode want_code = StatusCode::kOk;
    std::string want_error;  // substring
    std::function<void(const ClusterConfig&)> check;
  };
  const std::string token_user = "    token: s3cr3t";
  const std::vector<Case> cases = {
      {"current-context picks cluster, user and namespace; -data is base64-decoded",
       BaseKubeconfig(token_user), "", StatusCode::kOk, "",
       [&](const ClusterConfig& c) {
         EXPECT_EQ(c.server, "https://10.0.0.1:6443");
         EXPECT_EQ(c.ca_pem, kCaPem);
         EXPECT_EQ(c.token, "s3cr3t");
         EXPECT_EQ(c.namespace_, "team-a");
         EXPECT_EQ(c.context, "prod");
         EXPECT_FALSE(c.exec.has_value());
         EXPECT_THAT(c.Describe(), ::testing::Not(HasSubstr("s3cr3t")));
       }},
      {"an explicit context overrides current-context; files resolve against the kubeconfig dir",
       BaseKubeconfig(token_user), "dev", StatusCode::kOk, "",
       [&](const ClusterConfig& c) {
         EXPECT_EQ(c.server, "https://dev.example:443");
         EXPECT_EQ(c.ca_pem, kCaPem);
         EXPECT_EQ(c.client_cert_pem, kCertPem);
         EXPECT_EQ(c.client_key_pem, kKeyPem);
         EXPECT_EQ(c.tls_server_name, "kubernetes.default");
         EXPECT_EQ(c.namespace_, "");
       }},
      {"client certificate and key as -data",
       BaseKubeconfig("    client-certificate-data: " + Base64Encode(kCertPem) +
                      "\n    client-key-data: " + Base64Encode(kKeyPem)),
       "", StatusCode::kOk, "",
       [&](const ClusterConfig& c) {
         EXPECT_EQ(c.client_cert_pem, kCertPem);
         EXPECT_EQ(c.client_key_pem, kKeyPem);
       }},
      {"a relative tokenFile is made absolute", BaseKubeconfig("    tokenFile: tok"), "",
       StatusCode::kOk, "",
       [&](const ClusterConfig& c) { EXPECT_EQ(c.token_file, dir.path() + "/tok"); }},
      {"exec plugin with args, env and apiVersion", BaseKubeconfig(R"(    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      command: aws
      args: [eks, get-token, --cluster-name, prod]
      env:
      - {name: AWS_PROFILE, value: prod}
      provideClusterInfo: true
      interactiveMode: Never)"),
       "", StatusCode::kOk, "",
       [&](const ClusterConfig& c) {
         ASSERT_TRUE(c.exec.has_value());
         EXPECT_EQ(c.exec->command, "aws");
         EXPECT_EQ(c.exec->args,
                   (std::vector<std::string>{"eks", "get-token", "--cluster-name", "prod"}));
         ASSERT_EQ(c.exec->env.size(), 1u);
         EXPECT_EQ(c.exec->env[0].first, "AWS_PROFILE");
         EXPECT_EQ(c.exec->api_version, "client.authentication.k8s.io/v1beta1");
         EXPECT_TRUE(c.exec->provide_cluster_info);
       }},
      {"an exec command with a slash is relative to the kubeconfig",
       BaseKubeconfig(
           "    exec: {apiVersion: client.authentication.k8s.io/v1, command: ./bin/auth}"),
       "", StatusCode::kOk, "",
       [&](const ClusterConfig& c) { EXPECT_EQ(c.exec->command, dir.path() + "/./bin/auth"); }},
      {"a context without a user is anonymous",
       "current-context: c\nclusters: [{name: k, cluster: {server: 'http://127.0.0.1:8080'}}]\n"
       "contexts: [{name: c, context: {cluster: k}}]\n",
       "", StatusCode::kOk, "",
       [&](const ClusterConfig& c) {
         EXPECT_EQ(c.server, "http://127.0.0.1:8080");
         EXPECT_TRUE(c.token.empty());
       }},
      {"insecure-skip-tls-verify is read",
       "current-context: c\nclusters: [{name: k, cluster: {server: 'https://h', "
       "insecure-skip-tls-verify: true}}]\n"
       "contexts: [{name: c, context: {cluster: k}}]\n",
       "", StatusCode::kOk, "",
       [&](const ClusterConfig& c) {
         EXPECT_TRUE(c.insecure_skip_tls_verify);
         EXPECT_THAT(c.Describe(), HasSubstr("TLS verification DISABLED"));
       }},

      // Errors name the file and the field.
      {"missing current-context", "clusters: []\n", "", StatusCode::kInvalidArgument,
       src + ": current-context: not set"},
      {"current-context names no context", BaseKubeconfig(token_user), "staging",
       StatusCode::kInvalidArgument, src + ": --context: no contexts entry named \"staging\""},
      {"a context names a missing cluster",
       "current-context: c\ncontexts: [{name: c, context: {cluster: nope, user: u}}]\n", "",
       StatusCode::kInvalidArgument,
       src + ": contexts[0] (\"c\").context.cluster: no clusters entry named \"nope\""},
      {"a cluster without server",
       "current-context: c\nclusters: [{name: k, cluster: {}}]\ncontexts: [{name: c, context: "
       "{cluster: k}}]\n",
       "", StatusCode::kInvalidArgument, src + ": clusters[0] (\"k\").cluster.server: required"},
      {"a server that is not a URL",
       "current-context: c\nclusters: [{name: k, cluster: {server: 'h:1'}}]\n"
       "contexts: [{name: c, context: {cluster: k}}]\n",
       "", StatusCode::kInvalidArgument,
       "clusters[0] (\"k\").cluster.server: \"h:1\" is not an http"},
      {"bad base64 names the -data field",
       "current-context: c\nclusters: [{name: k, cluster: {server: 'https://h', "
       "certificate-authority-data: '%%%'}}]\n"
       "contexts: [{name: c, context: {cluster: k}}]\n",
       "", StatusCode::kInvalidArgument,
       src + ": clusters[0] (\"k\").cluster.certificate-authority-data: invalid base64"},
      {"a missing CA file names the field and the file",
       "current-context: c\nclusters: [{name: k, cluster: {server: 'https://h', "
       "certificate-authority: no.pem}}]\n"
       "contexts: [{name: c, context: {cluster: k}}]\n",
       "", StatusCode::kNotFound,
       src + ": clusters[0] (\"k\").cluster.certificate-authority: reading \"" + dir.path() +
           "/no.pem\""},
      {"CA data that is not PEM",
       "current-context: c\nclusters: [{name: k, cluster: {server: 'https://h', "
       "certificate-authority-data: " +
           Base64Encode("garbage") + "}}]\ncontexts: [{name: c, context: {cluster: k}}]\n",
       "", StatusCode::kInvalidArgument, "certificate-authority: not PEM data"},
      {"insecure and a CA together are rejected",
       "current-context: c\nclusters: [{name: k, cluster: {server: 'https://h', "
       "insecure-skip-tls-verify: true, "
       "certificate-authority-data: " +
           Base64Encode(kCaPem) + "}}]\ncontexts: [{name: c, context: {cluster: k}}]\n",
       "", StatusCode::kInvalidArgument, "insecure-skip-tls-verify: cannot be combined"},
      {"a client certificate without its key",
       BaseKubeconfig("    client-certificate-data: " + Base64Encode(kCertPem)), "",
       StatusCode::kInvalidArgument,
       src + ": users[0] (\"prod-user\").user.client-key: required when client-certificate is set"},
      {"exec without apiVersion", BaseKubeconfig("    exec: {command: aws}"), "",
       StatusCode::kInvalidArgument, "users[0] (\"prod-user\").user.exec.apiVersion: required"},
      {"exec with an unknown apiVersion",
       BaseKubeconfig(
           "    exec: {command: aws, apiVersion: client.authentication.k8s.io/v1alpha1}"),
       "", StatusCode::kInvalidArgument,
       "exec.apiVersion: unsupported \"client.authentication.k8s.io/v1alpha1\""},
      {"exec without command",
       BaseKubeconfig("    exec: {apiVersion: client.authentication.k8s.io/v1}"), "",
       StatusCode::kInvalidArgument, "users[0] (\"prod-user\").user.exec.command: required"},
      {"exec args must be strings",
       BaseKubeconfig(
           "    exec: {apiVersion: client.authentication.k8s.io/v1, command: x, args: [[1]]}"),
       "", StatusCode::kInvalidArgument, "user.exec.args[0]: must be a string"},
      {"exec and token together are rejected",
       BaseKubeconfig(
           "    token: t\n    exec: {apiVersion: client.authentication.k8s.io/v1, command: x}"),
       "", StatusCode::kInvalidArgument, "user.exec: cannot be combined with token"},
      {"interactive plugins are refused",
       BaseKubeconfig("    exec: {apiVersion: client.authentication.k8s.io/v1, command: x, "
                      "interactiveMode: Always}"),
       "", StatusCode::kInvalidArgument, "exec.interactiveMode"},
      {"auth-provider is unimplemented", BaseKubeconfig("    auth-provider: {name: gcp}"), "",
       StatusCode::kUnimplemented, "user.auth-provider: auth providers were removed"},
      {"a field of the wrong type", BaseKubeconfig("    token: [a, b]"), "",
       StatusCode::kInvalidArgument, "users[0] (\"prod-user\").user.token: must be a string"},
      {"malformed YAML names the file", "clusters: [\n  - {", "", StatusCode::kInvalidArgument,
       src},
      {"an empty file", "", "", StatusCode::kInvalidArgument,
       src + ": (document): empty kubeconfig"},
      {"a top-level list", "- a\n- b\n", "", StatusCode::kInvalidArgument,
       "(document): must be a mapping"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    std::string path = dir.Write("config", c.yaml);
    auto got = LoadKubeconfig(path, c.context);
    if (c.want_code != StatusCode::kOk) {
      ASSERT_FALSE(got.ok());
      EXPECT_EQ(got.status().code(), c.want_code) << got.status().ToString();
      EXPECT_THAT(std::string(got.status().message()), HasSubstr(c.want_error));
      EXPECT_THAT(std::string(got.status().message()), ::testing::Not(HasSubstr("s3cr3t")));
      continue;
    }
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(got->source, src);
    c.check(*got);
  }
}

TEST(KubeconfigTest, MissingFileIsNotFoundAndNamesIt) {
  auto got = LoadKubeconfig("/nonexistent/kubeconfig");
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(std::string(got.status().message()), HasSubstr("/nonexistent/kubeconfig"));
}

TEST(KubeconfigTest, InClusterConfig) {
  TempDir sa;
  sa.Write("token", "tok\n");
  sa.Write("ca.crt", kCaPem);
  sa.Write("namespace", "kube-system\n");
  struct Case {
    const char* name;
    Environment env;
    std::string sa_dir;
    StatusCode want_code;
    std::string want_server;
  };
  const Case cases[] = {
      {"IPv4 service host",
       {{"KUBERNETES_SERVICE_HOST", "10.96.0.1"}, {"KUBERNETES_SERVICE_PORT", "443"}},
       sa.path(),
       StatusCode::kOk,
       "https://10.96.0.1:443"},
      {"IPv6 service host is bracketed",
       {{"KUBERNETES_SERVICE_HOST", "fd00::1"}, {"KUBERNETES_SERVICE_PORT", "443"}},
       sa.path(),
       StatusCode::kOk,
       "https://[fd00::1]:443"},
      {"not in a pod", {}, sa.path(), StatusCode::kNotFound, ""},
      {"no token mounted",
       {{"KUBERNETES_SERVICE_HOST", "10.96.0.1"}, {"KUBERNETES_SERVICE_PORT", "443"}},
       sa.path() + "/missing",
       StatusCode::kNotFound,
       ""},
      {"a bad port",
       {{"KUBERNETES_SERVICE_HOST", "10.96.0.1"}, {"KUBERNETES_SERVICE_PORT", "https"}},
       sa.path(),
       StatusCode::kInvalidArgument,
       ""},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto got = LoadInClusterConfig(c.env, c.sa_dir);
    ASSERT_EQ(got.status().code(), c.want_code) << got.status().ToString();
    if (!got.ok()) continue;
    EXPECT_EQ(got->server, c.want_server);
    EXPECT_EQ(got->ca_pem, kCaPem);
    EXPECT_EQ(got->token_file, sa.path() + "/token");
    EXPECT_TRUE(got->token.empty()) << "the token is read by the provider, as it rotates";
    EXPECT_EQ(got->namespace_, "kube-system");
    EXPECT_EQ(got->source, "in-cluster");
  }
}

TEST(KubeconfigTest, ResolvePrecedence) {
  TempDir dir;
  auto kubeconfig = [](const std::string& server) {
    return "current-context: c\nclusters: [{name: k, cluster: {server: '" + server +
           "'}}]\ncontexts: [{name: c, context: {cluster: k}}]\n";
  };
  std::string flag = dir.Write("flag.yaml", kubeconfig("https://flag"));
  std::string env1 = dir.Write("env1.yaml", kubeconfig("https://env1"));
  std::string env2 = dir.Write("env2.yaml", kubeconfig("https://env2"));
  std::filesystem::create_directories(dir.path() + "/home/.kube");
  dir.Write("home/.kube/config", kubeconfig("https://home"));
  TempDir sa;
  sa.Write("token", "t");
  sa.Write("ca.crt", kCaPem);
  const Environment in_pod = {{"KUBERNETES_SERVICE_HOST", "10.96.0.1"},
                              {"KUBERNETES_SERVICE_PORT", "443"}};

  struct Case {
    const char* name;
    std::string explicit_path;
    Environment env;
    StatusCode want_code;
    std::string want_server;
  };
  auto with = [](Environment e, std::string k, std::string v) {
    e[k] = v;
    return e;
  };
  const std::string home = dir.path() + "/home";
  const Case cases[] = {
      {"the flag wins over everything", flag, with(with(in_pod, "KUBECONFIG", env1), "HOME", home),
       StatusCode::kOk, "https://flag"},
      {"a flag naming a missing file is an error, not a fall-through", dir.path() + "/nope",
       with(in_pod, "KUBECONFIG", env1), StatusCode::kNotFound, ""},
      {"KUBECONFIG: the first file that exists", "",
       with(with(in_pod, "KUBECONFIG", dir.path() + "/missing:" + env2 + ":" + env1), "HOME", home),
       StatusCode::kOk, "https://env2"},
      {"in-cluster when KUBECONFIG names nothing that exists", "",
       with(with(in_pod, "KUBECONFIG", dir.path() + "/missing"), "HOME", home), StatusCode::kOk,
       "https://10.96.0.1:443"},
      {"~/.kube/config last", "", {{"HOME", home}}, StatusCode::kOk, "https://home"},
      {"nothing at all", "", {{"HOME", dir.path() + "/nohome"}}, StatusCode::kNotFound, ""},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    ResolveOptions opts;
    opts.service_account_dir = sa.path();
    auto got = ResolveConfig(c.explicit_path, c.env, opts);
    ASSERT_EQ(got.status().code(), c.want_code) << got.status().ToString();
    if (got.ok()) {
      EXPECT_EQ(got->server, c.want_server);
    }
  }
}

}  // namespace
}  // namespace gpusched::kube::client
