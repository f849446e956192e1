// SPDX-License-Identifier: Apache-2.0
// http::Server over TLS: the in-memory self-signed pair, client certificates (required, verified
// if given, from another CA), certificate reload without a restart, minimum version and cipher
// suites, and errors that name the file. Certificates come from the openssl command line tool
// (Debian's openssl package, installed with libssl-dev by scripts/bootstrap) in a temp directory.
#include "src/http/tls.h"

#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <unistd.h>

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "src/http/server.h"

namespace gpusched::http {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "gpusched-tls-XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data());
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }
  // Runs `script` in the directory; true on exit 0.
  bool Sh(const std::string& script) const {
    return std::system(("cd " + path_.string() + " && (" + script + ") >/dev/null 2>&1").c_str()) ==
           0;
  }

 private:
  fs::path path_;
};

// A CA (NAME-ca.pem/-ca.key) and a leaf signed by it (NAME.pem/.key) with `ext` (an openssl
// extension line: serverAuth or clientAuth).
bool MakeCaAndLeaf(const TempDir& d, const std::string& name, const std::string& subject,
                   const std::string& usage) {
  return d.Sh(
      "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "
      "/CN=" +
      name + "-ca -keyout " + name + "-ca.key -out " + name +
      "-ca.pem && "
      "openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj '" +
      subject + "' -keyout " + name + ".key -out " + name +
      ".csr && printf 'extendedKeyUsage=" + usage + "\\nsubjectAltName=IP:127.0.0.1\\n' > " + name +
      ".ext && openssl x509 -req -in " + name + ".csr -CA " + name + "-ca.pem -CAkey " + name +
      "-ca.key -CAcreateserial -days 2 " + "-extfile " + name + ".ext -out " + name + ".pem");
}

struct Reply {
  bool connected = false;  // handshake done
  int status = 0;
  std::string body;
  std::string server_cert_sha256;
};

struct ClientOptions {
  std::string cert, key;  // client certificate
  int max_version = 0;    // 0: any
};

Reply Get(uint16_t port, const std::string& path, const ClientOptions& o = {}) {
  Reply r;
  try {
    asio::io_context ioc;
    asio::ssl::context ctx(asio::ssl::context::tls_client);
    ctx.set_verify_mode(asio::ssl::verify_none);
    if (!o.cert.empty()) {
      ctx.use_certificate_chain_file(o.cert);
      ctx.use_private_key_file(o.key, asio::ssl::context::pem);
    }
    if (o.max_version != 0) SSL_CTX_set_max_proto_version(ctx.native_handle(), o.max_version);
    beast::ssl_stream<beast::tcp_stream> stream(ioc, ctx);
    beast::get_lowest_layer(stream).expires_after(std::chrono::seconds(10));
    beast::get_lowest_layer(stream).connect(
        asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
    stream.handshake(asio::ssl::stream_base::client);
    X509* cert = SSL_get1_peer_certificate(stream.native_handle());
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    X509_digest(cert, EVP_sha256(), md, &n);
    X509_free(cert);
    r.server_cert_sha256.assign(reinterpret_cast<char*>(md), n);
    beast::http::request<beast::http::empty_body> req{beast::http::verb::get, path, 11};
    req.set(beast::http::field::host, "127.0.0.1");
    beast::http::write(stream, req);
    r.connected = true;  // TLS 1.3 reports a rejected client certificate only on the first read
    beast::flat_buffer buf;
    beast::http::response<beast::http::string_body> res;
    beast::http::read(stream, buf, res);
    r.status = static_cast<int>(res.result_int());
    r.body = res.body();
  } catch (const std::exception&) {
    r.status = 0;
  }
  return r;
}

ServerPtr Serve(TlsOptions tls) {
  ServerOptions o;
  o.tls = std::move(tls);
  o.tls.enabled = true;
  auto s = Server::Create(o);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  if (!s.ok()) return nullptr;
  (*s)->Handle("GET", "/who", [](const Request& r) {
    std::string who = r.peer ? r.peer->common_name : "-";
    if (r.peer) {
      for (const auto& o : r.peer->organizations) who += "," + o;
    }
    return Response{200, "text/plain", who, {}};
  });
  EXPECT_TRUE((*s)->Start().ok());
  return std::move(s).value();
}

TEST(TlsTest, ServesAnInMemorySelfSignedPair) {
  auto pair = GenerateSelfSignedCertificate("localhost", {"127.0.0.1", "::1"});
  ASSERT_TRUE(pair.ok()) << pair.status().ToString();
  EXPECT_NE(pair->cert_pem.find("BEGIN CERTIFICATE"), std::string::npos);
  ServerPtr s = Serve(TlsOptions{.cert_pem = pair->cert_pem, .key_pem = pair->key_pem});
  ASSERT_TRUE(s);
  EXPECT_TRUE(s->tls());
  Reply r = Get(s->port(), "/who");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "-");  // no client certificate asked for
}

TEST(TlsTest, ClientCertificates) {
  TempDir d;
  ASSERT_TRUE(MakeCaAndLeaf(d, "server", "/CN=127.0.0.1", "serverAuth"));
  ASSERT_TRUE(
      MakeCaAndLeaf(d, "client", "/O=system:masters/O=ops/CN=kube-scheduler", "clientAuth"));
  ASSERT_TRUE(MakeCaAndLeaf(d, "other", "/CN=intruder", "clientAuth"));
  const ClientOptions good{d / "client.pem", d / "client.key"};
  const ClientOptions other{d / "other.pem", d / "other.key"};
  struct Case {
    std::string name;
    ClientAuth mode;
    ClientOptions client;
    int want_status;  // 0: no answer (handshake refused)
    std::string want_body;
  };
  const std::vector<Case> cases = {
      {"required: a certificate from the CA is served, its CN and O reach the handler",
       ClientAuth::kRequire, good, 200, "kube-scheduler,system:masters,ops"},
      {"required: no certificate gets no answer", ClientAuth::kRequire, {}, 0, ""},
      {"required: a certificate from another CA gets no answer", ClientAuth::kRequire, other, 0,
       ""},
      {"verify if given: no certificate is served without a peer",
       ClientAuth::kVerifyIfGiven,
       {},
       200,
       "-"},
      {"verify if given: a certificate from the CA is the peer", ClientAuth::kVerifyIfGiven, good,
       200, "kube-scheduler,system:masters,ops"},
      {"verify if given: a certificate from another CA gets no answer", ClientAuth::kVerifyIfGiven,
       other, 0, ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ServerPtr s = Serve(TlsOptions{.cert_file = d / "server.pem",
                                   .key_file = d / "server.key",
                                   .client_ca_file = d / "client-ca.pem",
                                   .client_auth = c.mode});
    ASSERT_TRUE(s);
    Reply r = Get(s->port(), "/who", c.client);
    EXPECT_EQ(r.status, c.want_status);
    EXPECT_EQ(r.body, c.want_body);
  }
}

TEST(TlsTest, ReloadsChangedCertificateFilesForNewConnections) {
  TempDir d;
  ASSERT_TRUE(MakeCaAndLeaf(d, "a", "/CN=127.0.0.1", "serverAuth"));
  ASSERT_TRUE(MakeCaAndLeaf(d, "b", "/CN=127.0.0.1", "serverAuth"));
  ASSERT_TRUE(d.Sh("cp a.pem tls.crt && cp a.key tls.key"));
  ServerPtr s = Serve(TlsOptions{.cert_file = d / "tls.crt", .key_file = d / "tls.key"});
  ASSERT_TRUE(s);
  Reply first = Get(s->port(), "/who");
  ASSERT_EQ(first.status, 200);
  EXPECT_EQ(Get(s->port(), "/who").server_cert_sha256, first.server_cert_sha256);
  EXPECT_EQ(s->tls_reloads(), 0);
  // Rotated as a Secret volume does it: new files renamed into place.
  ASSERT_TRUE(
      d.Sh("cp b.pem tls.crt.new && cp b.key tls.key.new && mv tls.key.new tls.key && "
           "mv tls.crt.new tls.crt"));
  Reply second = Get(s->port(), "/who");
  ASSERT_EQ(second.status, 200);
  EXPECT_NE(second.server_cert_sha256, first.server_cert_sha256);
  EXPECT_EQ(s->tls_reloads(), 1);
  // A broken pair keeps the last good one, and says why.
  ASSERT_TRUE(d.Sh("echo garbage > tls.crt"));
  Reply third = Get(s->port(), "/who");
  EXPECT_EQ(third.status, 200);
  EXPECT_EQ(third.server_cert_sha256, second.server_cert_sha256);
  EXPECT_NE(s->tls_reload_error().find(d / "tls.crt"), std::string::npos) << s->tls_reload_error();
}

TEST(TlsTest, MinimumVersionAndCipherSuites) {
  auto pair = GenerateSelfSignedCertificate("localhost", {"127.0.0.1"});
  ASSERT_TRUE(pair.ok());
  TlsOptions v13{.cert_pem = pair->cert_pem, .key_pem = pair->key_pem};
  v13.min_version = "VersionTLS13";
  ServerPtr s = Serve(v13);
  ASSERT_TRUE(s);
  EXPECT_EQ(Get(s->port(), "/who", ClientOptions{.max_version = TLS1_2_VERSION}).status, 0);
  EXPECT_EQ(Get(s->port(), "/who").status, 200);

  auto list = OpenSslCipherList({"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
                                 "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305", "TLS_AES_128_GCM_SHA256"});
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  EXPECT_EQ(*list, "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-CHACHA20-POLY1305");
  auto bad = OpenSslCipherList({"TLS_NOT_A_SUITE"});
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("TLS_NOT_A_SUITE"), std::string::npos);
  TlsOptions one_suite{.cert_pem = pair->cert_pem, .key_pem = pair->key_pem};
  one_suite.cipher_suites = {"TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"};
  ServerPtr s12 = Serve(one_suite);
  ASSERT_TRUE(s12);
  EXPECT_EQ(Get(s12->port(), "/who", ClientOptions{.max_version = TLS1_2_VERSION}).status, 200);
}

TEST(TlsTest, ErrorsNameTheFile) {
  TempDir d;
  ASSERT_TRUE(d.Sh("echo not-pem > bad.pem"));
  struct Case {
    std::string name;
    TlsOptions tls;
    std::string want;
  };
  const std::vector<Case> cases = {
      {"a missing certificate file", TlsOptions{.cert_file = d / "nope.pem", .key_file = d / "k"},
       "TLS certificate " + d / "nope.pem" + ": cannot read the file"},
      {"a file that is not PEM", TlsOptions{.cert_file = d / "bad.pem", .key_file = d / "bad.pem"},
       "TLS certificate " + d / "bad.pem" + ": not a PEM certificate"},
      {"a certificate without its key", TlsOptions{.cert_file = d / "bad.pem"}, "both"},
      {"a missing client CA",
       TlsOptions{.cert_pem = "x",
                  .key_pem = "y",
                  .client_ca_file = d / "ca.pem",
                  .client_auth = ClientAuth::kRequire},
       "client CA " + d / "ca.pem" + ": cannot read the file"},
      {"client certificates without a CA",
       TlsOptions{.cert_pem = "x", .key_pem = "y", .client_auth = ClientAuth::kRequire},
       "client CA file"},
      {"an unknown minimum version",
       TlsOptions{.cert_pem = "x", .key_pem = "y", .min_version = "1.2"}, "VersionTLS12"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ServerOptions o;
    o.tls = c.tls;
    o.tls.enabled = true;
    auto s = Server::Create(o);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.status().message().find(c.want), std::string::npos) << s.status().message();
  }
}

}  // namespace
}  // namespace gpusched::http
