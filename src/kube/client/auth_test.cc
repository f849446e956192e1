// SPDX-License-Identifier: Apache-2.0
#include "src/kube/client/auth.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "src/kube/client/encoding.h"
#include "src/kube/client/pem.h"
#include "src/kube/client/test_server.h"

namespace gpusched::kube::client {
namespace {

using common::StatusCode;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::TempDir;

const Environment kBaseEnv = {{"PATH", "/usr/local/bin:/usr/bin:/bin"}, {"HOME", "/nonexistent"}};

// ---------------------------------------------------------------------------------------------
// Token file

TEST(TokenFileProviderTest, RereadsARotatedTokenAtMostOncePerInterval) {
  TempDir dir;
  std::string path = dir.Write("token", "first\n");
  common::FakeClock clock;
  TokenFileCredentialProvider p(path, clock);

  struct Step {
    const char* name;
    std::string write;  // new file content, "" = unchanged
    common::Duration advance;
    std::string want_token;
  };
  const Step steps[] = {
      {"the first Get reads the file (newline trimmed)", "", {}, "first"},
      {"a rotation inside the interval is not seen yet", "second", std::chrono::seconds(30),
       "first"},
      {"after the interval the new token is read", "", std::chrono::seconds(30), "second"},
      {"an unchanged file keeps its token", "", std::chrono::minutes(5), "second"},
      {"a rotation to the same length is seen (inode changes)", "third!", std::chrono::seconds(61),
       "third!"},
  };
  for (const auto& s : steps) {
    SCOPED_TRACE(s.name);
    if (!s.write.empty()) dir.Write("token", s.write);
    clock.Advance(s.advance);
    auto got = p.Get();
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(got->bearer_token, s.want_token);
  }
}

TEST(TokenFileProviderTest, UnauthorizedForcesARereadAndReportsWhetherTheTokenChanged) {
  TempDir dir;
  std::string path = dir.Write("token", "old");
  common::FakeClock clock;
  TokenFileCredentialProvider p(path, clock);
  ASSERT_EQ(p.Get()->bearer_token, "old");
  EXPECT_FALSE(p.OnUnauthorized()) << "same token: a retry would not help";
  dir.Write("token", "new");
  EXPECT_TRUE(p.OnUnauthorized());
  EXPECT_EQ(p.Get()->bearer_token, "new");
}

TEST(TokenFileProviderTest, KeepsTheLastTokenWhenTheFileDisappearsAndFailsWithoutOne) {
  TempDir dir;
  std::string path = dir.Write("token", "tok");
  common::FakeClock clock;
  TokenFileCredentialProvider p(path, clock);
  ASSERT_EQ(p.Get()->bearer_token, "tok");
  std::remove(path.c_str());
  clock.Advance(std::chrono::minutes(2));
  auto got = p.Get();
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->bearer_token, "tok");

  TokenFileCredentialProvider missing(dir.path() + "/none", clock);
  auto err = missing.Get();
  EXPECT_EQ(err.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(std::string(err.status().message()), HasSubstr("/none"));

  dir.Write("empty", "\n");
  TokenFileCredentialProvider empty(dir.path() + "/empty", clock);
  EXPECT_EQ(empty.Get().status().code(), StatusCode::kPermissionDenied);
}

// ---------------------------------------------------------------------------------------------
// ExecCredential parsing

TEST(ExecCredentialTest, Parse) {
  auto ca = testing::MakeTestCa("ca");
  auto leaf = testing::MakeTestLeaf(ca, "user", /*server=*/false);
  auto other = testing::MakeTestLeaf(ca, "other", /*server=*/false);
  auto json_str = [](std::string s) {
    std::string out;
    for (char c : s) {
      if (c == '\n') {
        out += "\\n";
      } else {
        out += c;
      }
    }
    return out;
  };
  const std::string v1 = "client.authentication.k8s.io/v1";
  struct Case {
    const char* name;
    std::string out;
    std::string api_version;
    StatusCode want_code;
    std::string want_token;
    bool want_expiry;
    std::string want_error;
  };
  const Case cases[] = {
      {"a v1 token with expiry",
       R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"k8s-aws-v1.abc","expirationTimestamp":"2030-01-01T00:00:00Z"}})",
       v1, StatusCode::kOk, "k8s-aws-v1.abc", true, ""},
      {"a v1beta1 token without expiry",
       R"({"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential","status":{"token":"t"}})",
       "client.authentication.k8s.io/v1beta1", StatusCode::kOk, "t", false, ""},
      {"a client certificate",
       R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"clientCertificateData":")" +
           json_str(leaf.cert_pem) + R"(","clientKeyData":")" + json_str(leaf.key_pem) + R"("}})",
       v1, StatusCode::kOk, "", false, ""},
      {"a certificate whose key does not match",
       R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"clientCertificateData":")" +
           json_str(leaf.cert_pem) + R"(","clientKeyData":")" + json_str(other.key_pem) + R"("}})",
       v1, StatusCode::kInvalidArgument, "", false, "does not match"},
      {"a certificate without a key",
       R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"clientCertificateData":"x"}})",
       v1, StatusCode::kInvalidArgument, "", false, "status.clientKeyData: required"},
      {"the apiVersion must match the kubeconfig's",
       R"({"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential","status":{"token":"secret-tok"}})",
       v1, StatusCode::kInvalidArgument, "", false, "apiVersion: want"},
      {"no status", R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential"})",
       v1, StatusCode::kInvalidArgument, "", false, "status: missing"},
      {"an empty status",
       R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{}})",
       v1, StatusCode::kInvalidArgument, "", false, "neither token"},
      {"a bad expirationTimestamp",
       R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"secret-tok","expirationTimestamp":"soon"}})",
       v1, StatusCode::kInvalidArgument, "", false, "expirationTimestamp: invalid time \"soon\""},
      {"a token that is not a string (never quoted)",
       R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":["secret-tok"]}})",
       v1, StatusCode::kInvalidArgument, "", false, "status.token: want a string"},
      {"not JSON", "secret-tok", v1, StatusCode::kInvalidArgument, "", false, "not JSON"},
      {"the wrong kind", R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"Pod"})", v1,
       StatusCode::kInvalidArgument, "", false, "kind"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto got = ParseExecCredential(c.out, c.api_version);
    ASSERT_EQ(got.status().code(), c.want_code) << got.status().ToString();
    if (!got.ok()) {
      EXPECT_THAT(std::string(got.status().message()), HasSubstr(c.want_error));
      EXPECT_THAT(std::string(got.status().message()), Not(HasSubstr("secret-tok")));
      continue;
    }
    EXPECT_EQ(got->credentials.bearer_token, c.want_token);
    EXPECT_EQ(got->expiration.has_value(), c.want_expiry);
  }
}

// ---------------------------------------------------------------------------------------------
// Exec plugin

// A plugin that counts its runs in DIR/count and prints token "tok-<n>" expiring at `expiry`.
std::string CountingPlugin(const TempDir& dir, const std::string& api_version,
                           const std::string& expiry) {
  return dir.Write("plugin.sh",
                   "#!/bin/sh\n"
                   "n=$(cat \"" +
                       dir.path() +
                       "/count\" 2>/dev/null || echo 0)\n"
                       "n=$((n+1))\n"
                       "echo $n > \"" +
                       dir.path() +
                       "/count\"\n"
                       "printf '%s' \"$KUBERNETES_EXEC_INFO\" > \"" +
                       dir.path() +
                       "/info\"\n"
                       "printf '{\"apiVersion\":\"" +
                       api_version +
                       "\",\"kind\":\"ExecCredential\",\"status\":{\"token\":\"tok-%s-%s-%s\"" +
                       (expiry.empty() ? "" : ",\"expirationTimestamp\":\"" + expiry + "\"") +
                       "}}' \"$n\" \"$1\" \"$REGION\"\n",
                   /*executable=*/true);
}

TEST(ExecProviderTest, RunsOnceCachesUntilExpiryAndRerunsOn401) {
  TempDir dir;
  common::FakeClock clock(*ParseRfc3339("2030-01-01T00:00:00Z"));
  ExecConfig exec;
  exec.command = CountingPlugin(dir, "client.authentication.k8s.io/v1", "2030-01-01T00:10:00Z");
  exec.args = {"prod"};
  exec.env = {{"REGION", "eu-west-1"}};
  exec.api_version = "client.authentication.k8s.io/v1";
  ClusterConfig cluster;
  cluster.server = "https://k8s.example";
  ExecCredentialProvider p(exec, kBaseEnv, cluster, clock);

  struct Step {
    const char* name;
    common::Duration advance;
    bool unauthorized_first;
    std::string want_token;
    int want_runs;
  };
  const Step steps[] = {
      {"the first Get runs the plugin with args and env", {}, false, "tok-1-prod-eu-west-1", 1},
      {"a later Get before expiry uses the cache", std::chrono::minutes(9), false,
       "tok-1-prod-eu-west-1", 1},
      {"at expiry the plugin runs again", std::chrono::minutes(1), false, "tok-2-prod-eu-west-1",
       2},
      {"a 401 drops the cache", {}, true, "tok-3-prod-eu-west-1", 3},
  };
  for (const auto& s : steps) {
    SCOPED_TRACE(s.name);
    clock.Advance(s.advance);
    if (s.unauthorized_first) {
      EXPECT_TRUE(p.OnUnauthorized());
    }
    auto got = p.Get();
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(got->bearer_token, s.want_token);
    EXPECT_EQ(p.RunsForTest(), s.want_runs);
  }
  std::ifstream info(dir.path() + "/info");
  std::string exec_info((std::istreambuf_iterator<char>(info)), std::istreambuf_iterator<char>());
  EXPECT_EQ(
      exec_info,
      R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","spec":{"interactive":false}})");
}

TEST(ExecProviderTest, ClusterInfoIsPassedWhenAsked) {
  TempDir dir;
  common::FakeClock clock;
  ExecConfig exec;
  exec.command = CountingPlugin(dir, "client.authentication.k8s.io/v1beta1", "");
  exec.api_version = "client.authentication.k8s.io/v1beta1";
  exec.provide_cluster_info = true;
  ClusterConfig cluster;
  cluster.server = "https://k8s.example";
  cluster.ca_pem = "CA";
  ExecCredentialProvider p(exec, kBaseEnv, cluster, clock);
  EXPECT_EQ(
      p.ExecInfoForTest(),
      R"({"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential","spec":{"interactive":false,"cluster":{"server":"https://k8s.example","certificate-authority-data":"Q0E="}}})");
  auto got = p.Get();
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  clock.Advance(std::chrono::hours(1000));
  ASSERT_TRUE(p.Get().ok());
  EXPECT_EQ(p.RunsForTest(), 1) << "without expirationTimestamp the credential lasts until a 401";
}

TEST(ExecProviderTest, Failures) {
  TempDir dir;
  common::FakeClock clock;
  struct Case {
    const char* name;
    std::string script;  // body of a /bin/sh script; "" = use `command` as is
    std::string command;
    common::Duration timeout;
    StatusCode want_code;
    std::string want_error;
  };
  const Case cases[] = {
      {"a non-zero exit carries stderr", "echo 'SSO session expired' >&2; exit 3", "",
       std::chrono::seconds(10), StatusCode::kUnavailable,
       "exited with status 3: \"SSO session expired\""},
      {"garbage on stdout", "echo secret-tok", "", std::chrono::seconds(10),
       StatusCode::kInvalidArgument, "not JSON"},
      {"a plugin that hangs is killed at the timeout", "sleep 30", "",
       std::chrono::milliseconds(200), StatusCode::kDeadlineExceeded, "did not finish"},
      {"a command not on PATH shows the install hint", "", "no-such-plugin-xyz",
       std::chrono::seconds(10), StatusCode::kNotFound, "not found on PATH; install it"},
      {"a command found on the passed PATH", "", "true", std::chrono::seconds(10),
       StatusCode::kInvalidArgument, "not JSON"},
  };
  int n = 0;
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    ExecConfig exec;
    exec.command = c.command;
    if (!c.script.empty()) {
      exec.command =
          dir.Write("p" + std::to_string(n++) + ".sh", "#!/bin/sh\n" + c.script + "\n", true);
    }
    exec.api_version = "client.authentication.k8s.io/v1";
    exec.install_hint = "install it";
    ExecProviderOptions opts;
    opts.timeout = c.timeout;
    ExecCredentialProvider p(exec, kBaseEnv, ClusterConfig{}, clock, opts);
    auto got = p.Get();
    ASSERT_EQ(got.status().code(), c.want_code) << got.status().ToString();
    EXPECT_THAT(std::string(got.status().message()), HasSubstr(c.want_error));
    EXPECT_THAT(std::string(got.status().message()), Not(HasSubstr("secret-tok")));
  }
}

TEST(RunProcessTest, PassesExactlyTheGivenEnvironment) {
  auto got = RunProcess({"/bin/sh", "-c", "echo \"$A|$B|${HOME-unset}\""},
                        {{"A", "1"}, {"B", "two words"}}, std::chrono::seconds(10));
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->exit_code, 0);
  EXPECT_EQ(got->stdout_text, "1|two words|unset\n");
}

TEST(RunProcessTest, OutputAboveTheLimitIsRefused) {
  auto got = RunProcess({"/bin/sh", "-c", "yes | head -c 100000"}, kBaseEnv,
                        std::chrono::seconds(10), 1000);
  EXPECT_EQ(got.status().code(), StatusCode::kResourceExhausted);
}

// ---------------------------------------------------------------------------------------------
// Provider selection and PEM checks

TEST(MakeCredentialProviderTest, PicksBySource) {
  common::FakeClock clock;
  struct Case {
    const char* name;
    ClusterConfig config;
    std::string want_describe;
  };
  ClusterConfig token;
  token.token = "t";
  ClusterConfig file;
  file.token_file = "/x/token";
  file.token = "ignored";
  ClusterConfig exec;
  exec.exec = ExecConfig{"aws", {}, {}, "client.authentication.k8s.io/v1", false, ""};
  ClusterConfig cert;
  cert.client_cert_pem = "C";
  cert.client_key_pem = "K";
  const Case cases[] = {
      {"a static token", token, "static bearer token"},
      {"tokenFile wins over token", file, "token file \"/x/token\""},
      {"exec", exec, "exec plugin \"aws\" (client.authentication.k8s.io/v1)"},
      {"a client certificate alone", cert, "client certificate"},
      {"nothing is anonymous", ClusterConfig{}, "anonymous"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto p = MakeCredentialProvider(c.config, kBaseEnv, clock);
    EXPECT_EQ(p->Describe(), c.want_describe);
  }
}

TEST(PemTest, ChecksCertificatesAndKeyPairs) {
  auto ca = testing::MakeTestCa("ca");
  auto a = testing::MakeTestLeaf(ca, "a", false);
  auto b = testing::MakeTestLeaf(ca, "b", false);
  EXPECT_TRUE(CheckPemCertificates(ca.cert_pem + a.cert_pem, "ca").ok());
  EXPECT_EQ(CheckPemCertificates("hello", "ca").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(
      CheckPemCertificates("-----BEGIN CERTIFICATE-----\nQ0E=\n-----END CERTIFICATE-----\n", "ca")
          .code(),
      StatusCode::kInvalidArgument);
  EXPECT_TRUE(CheckPemKeyPair(a.cert_pem, a.key_pem, "cert", "key").ok());
  common::Status mismatch = CheckPemKeyPair(a.cert_pem, b.key_pem, "cert", "key");
  EXPECT_EQ(mismatch.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(mismatch.message(), "key: does not match the public key in cert");
  EXPECT_THAT(std::string(CheckPemKeyPair(a.cert_pem, "junk", "cert", "key").message()),
              HasSubstr("key: not an unencrypted PEM private key"));
}

}  // namespace
}  // namespace gpusched::kube::client
