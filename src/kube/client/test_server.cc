// SPDX-License-Identifier: Apache-2.0
#include "src/kube/client/test_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/asio/buffer.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace gpusched::kube::client::testing {
namespace {

namespace bhttp = boost::beast::http;
using RequestParser = bhttp::request_parser<bhttp::string_body>;

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// The answer's head (and body), as Beast writes it.
std::string Serialize(const Reply& reply, bool streamed) {
  bhttp::response<bhttp::string_body> res(static_cast<bhttp::status>(reply.status), 11);
  for (const auto& [k, v] : reply.headers) res.insert(k, v);
  std::ostringstream out;
  if (streamed) {  // the chunks follow, delimited by the close
    res.set(bhttp::field::connection, "close");
    out << res.base();
  } else {
    res.body() = reply.body;
    res.prepare_payload();
    out << res;
  }
  return std::move(out).str();
}

// Test setup failures are programmer errors in a test binary: fail loudly.
void Require(bool ok, const char* what) {
  if (!ok) {
    ERR_print_errors_fp(stderr);
    std::fprintf(stderr, "test server: %s failed\n", what);
    std::abort();
  }
}

}  // namespace

struct TestHttpServer::Conn {
  int fd = -1;
  SSL* ssl = nullptr;
  const std::atomic<bool>* stop = nullptr;

  ~Conn() {
    if (ssl != nullptr) {
      SSL_shutdown(ssl);
      SSL_free(ssl);
    }
    if (fd >= 0) ::close(fd);
  }

  // Waits for input while the server runs. >0 bytes, 0 on EOF or stop, <0 on error.
  ssize_t Read(char* buf, size_t n) {
    for (;;) {
      if (ssl == nullptr || SSL_pending(ssl) == 0) {
        pollfd p{fd, POLLIN, 0};
        int r = ::poll(&p, 1, 20);
        if (stop->load()) return 0;
        if (r == 0) continue;
        if (r < 0) return -1;
      }
      if (ssl != nullptr) {
        int got = SSL_read(ssl, buf, static_cast<int>(n));
        if (got <= 0) return SSL_get_error(ssl, got) == SSL_ERROR_ZERO_RETURN ? 0 : -1;
        return got;
      }
      return ::recv(fd, buf, n, 0);
    }
  }

  // Reads one request into `parser`, `buf` holding what arrived beyond it (keep-alive). False
  // when the client hung up, the server stops, or the request is malformed.
  bool ReadRequest(RequestParser& parser, std::string& buf) {
    char tmp[16384];
    for (;;) {
      if (!buf.empty()) {
        boost::beast::error_code ec;
        buf.erase(0, parser.put(boost::asio::buffer(buf), ec));
        if (parser.is_done()) return true;
        if (ec && ec != bhttp::error::need_more) return false;
        if (!ec && !buf.empty()) continue;
      }
      ssize_t n = Read(tmp, sizeof tmp);
      if (n <= 0) return false;
      buf.append(tmp, static_cast<size_t>(n));
    }
  }

  bool Write(std::string_view s) {
    while (!s.empty()) {
      ssize_t w = ssl != nullptr ? SSL_write(ssl, s.data(), static_cast<int>(s.size()))
                                 : ::send(fd, s.data(), s.size(), MSG_NOSIGNAL);
      if (w <= 0) return false;
      s.remove_prefix(static_cast<size_t>(w));
    }
    return true;
  }
};

TestHttpServer::TestHttpServer(Handler handler, std::optional<ServerTls> tls)
    : handler_(std::move(handler)), tls_(std::move(tls)) {
  // SSL_write to a client that hung up would raise SIGPIPE (plain sends use MSG_NOSIGNAL).
  ::signal(SIGPIPE, SIG_IGN);
  if (tls_) {
    SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
    Require(ctx != nullptr, "SSL_CTX_new");
    BIO* cb = BIO_new_mem_buf(tls_->cert_pem.data(), static_cast<int>(tls_->cert_pem.size()));
    X509* cert = PEM_read_bio_X509(cb, nullptr, nullptr, nullptr);
    BIO_free(cb);
    BIO* kb = BIO_new_mem_buf(tls_->key_pem.data(), static_cast<int>(tls_->key_pem.size()));
    EVP_PKEY* key = PEM_read_bio_PrivateKey(kb, nullptr, nullptr, nullptr);
    BIO_free(kb);
    Require(cert != nullptr && key != nullptr, "reading the server certificate");
    Require(SSL_CTX_use_certificate(ctx, cert) == 1 && SSL_CTX_use_PrivateKey(ctx, key) == 1,
            "SSL_CTX_use_certificate");
    X509_free(cert);
    EVP_PKEY_free(key);
    if (!tls_->client_ca_pem.empty()) {
      BIO* ab =
          BIO_new_mem_buf(tls_->client_ca_pem.data(), static_cast<int>(tls_->client_ca_pem.size()));
      X509* ca = PEM_read_bio_X509(ab, nullptr, nullptr, nullptr);
      BIO_free(ab);
      Require(ca != nullptr, "reading the client CA");
      X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx), ca);
      X509_free(ca);
      SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
    }
    ssl_ctx_ = ctx;
  }
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  Require(listen_fd_ >= 0, "socket");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  Require(::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0, "bind");
  Require(::listen(listen_fd_, 64) == 0, "listen");
  socklen_t len = sizeof addr;
  Require(::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0, "getsockname");
  port_ = ntohs(addr.sin_port);
  accept_thread_ = std::thread([this] { AcceptLoop(); });
}

TestHttpServer::~TestHttpServer() {
  stop_.store(true);
  accept_thread_.join();
  std::vector<std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(mu_);
    threads.swap(conn_threads_);
  }
  for (auto& t : threads) t.join();
  ::close(listen_fd_);
  if (ssl_ctx_ != nullptr) SSL_CTX_free(static_cast<SSL_CTX*>(ssl_ctx_));
}

std::string TestHttpServer::url() const {
  return std::string(tls_ ? "https" : "http") + "://127.0.0.1:" + std::to_string(port_);
}

std::vector<ReceivedRequest> TestHttpServer::requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_;
}

void TestHttpServer::AcceptLoop() {
  while (!stop_.load()) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, 20) <= 0) continue;
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    connections_.fetch_add(1);
    std::lock_guard<std::mutex> lock(mu_);
    conn_threads_.emplace_back([this, fd] { Serve(fd); });
  }
}

void TestHttpServer::Serve(int fd) {
  Conn c;
  c.fd = fd;
  c.stop = &stop_;
  std::string client_cn;
  if (ssl_ctx_ != nullptr) {
    c.ssl = SSL_new(static_cast<SSL_CTX*>(ssl_ctx_));
    SSL_set_fd(c.ssl, fd);
    if (SSL_accept(c.ssl) != 1) {
      ERR_clear_error();
      return;
    }
    if (X509* peer = SSL_get1_peer_certificate(c.ssl)) {
      char cn[256] = {0};
      X509_NAME_get_text_by_NID(X509_get_subject_name(peer), NID_commonName, cn, sizeof cn);
      client_cn = cn;
      X509_free(peer);
    }
  }
  std::string buf;  // input not yet parsed
  for (;;) {
    RequestParser parser;
    parser.header_limit(1u << 20);
    parser.body_limit(std::uint64_t{1} << 30);
    parser.eager(true);
    if (!c.ReadRequest(parser, buf)) return;
    const auto& msg = parser.get();
    ReceivedRequest req;
    req.client_cert_cn = client_cn;
    req.method = std::string(msg.method_string());
    req.target = std::string(msg.target());
    for (const auto& f : msg) req.headers[Lower(f.name_string())] = std::string(f.value());
    req.body = msg.body();
    {
      std::lock_guard<std::mutex> lock(mu_);
      requests_.push_back(req);
    }
    Reply reply = handler_(req);
    if (reply.drop) return;
    if (!reply.raw.empty()) {
      if (!c.Write(reply.raw) || reply.close_after) return;
      continue;
    }
    if (reply.chunks.empty()) {
      if (!c.Write(Serialize(reply, false)) || reply.close_after) return;
      continue;  // keep-alive
    }
    if (!c.Write(Serialize(reply, true))) return;
    for (const auto& chunk : reply.chunks) {
      if (!c.Write(chunk)) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));  // test-only: separate reads
    }
    if (reply.hold_open) {
      char tmp[4096];
      while (c.Read(tmp, sizeof tmp) > 0) {
      }
    }
    return;
  }
}

// ---------------------------------------------------------------------------------------------
// Certificates

namespace {

std::string ToPem(X509* cert) {
  BIO* b = BIO_new(BIO_s_mem());
  PEM_write_bio_X509(b, cert);
  char* data = nullptr;
  long n = BIO_get_mem_data(b, &data);
  std::string out(data, static_cast<size_t>(n));
  BIO_free(b);
  return out;
}

std::string ToPem(EVP_PKEY* key) {
  BIO* b = BIO_new(BIO_s_mem());
  PEM_write_bio_PrivateKey(b, key, nullptr, nullptr, 0, nullptr, nullptr);
  char* data = nullptr;
  long n = BIO_get_mem_data(b, &data);
  std::string out(data, static_cast<size_t>(n));
  BIO_free(b);
  return out;
}

void AddExt(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  Require(ext != nullptr, "X509V3_EXT_conf_nid");
  X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
}

X509* NewCert(EVP_PKEY* key, const std::string& cn, long serial) {
  X509* cert = X509_new();
  X509_set_version(cert, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert), serial);
  X509_gmtime_adj(X509_getm_notBefore(cert), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert), 86400);
  X509_set_pubkey(cert, key);
  X509_NAME* name = X509_get_subject_name(cert);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  return cert;
}

}  // namespace

CertKey MakeTestCa(const std::string& cn) {
  EVP_PKEY* key = EVP_EC_gen("P-256");
  Require(key != nullptr, "EVP_EC_gen");
  X509* cert = NewCert(key, cn, 1);
  X509_set_issuer_name(cert, X509_get_subject_name(cert));
  AddExt(cert, cert, NID_basic_constraints, "critical,CA:TRUE");
  AddExt(cert, cert, NID_key_usage, "critical,keyCertSign,cRLSign");
  AddExt(cert, cert, NID_subject_key_identifier, "hash");
  Require(X509_sign(cert, key, EVP_sha256()) > 0, "X509_sign");
  CertKey out{ToPem(cert), ToPem(key)};
  X509_free(cert);
  EVP_PKEY_free(key);
  return out;
}

CertKey MakeTestLeaf(const CertKey& ca, const std::string& cn, bool server) {
  BIO* cb = BIO_new_mem_buf(ca.cert_pem.data(), static_cast<int>(ca.cert_pem.size()));
  X509* ca_cert = PEM_read_bio_X509(cb, nullptr, nullptr, nullptr);
  BIO_free(cb);
  BIO* kb = BIO_new_mem_buf(ca.key_pem.data(), static_cast<int>(ca.key_pem.size()));
  EVP_PKEY* ca_key = PEM_read_bio_PrivateKey(kb, nullptr, nullptr, nullptr);
  BIO_free(kb);
  Require(ca_cert != nullptr && ca_key != nullptr, "reading the test CA");
  static std::atomic<long> serial{100};
  EVP_PKEY* key = EVP_EC_gen("P-256");
  X509* cert = NewCert(key, cn, serial.fetch_add(1));
  X509_set_issuer_name(cert, X509_get_subject_name(ca_cert));
  AddExt(cert, ca_cert, NID_basic_constraints, "critical,CA:FALSE");
  AddExt(cert, ca_cert, NID_key_usage, "critical,digitalSignature,keyEncipherment");
  AddExt(cert, ca_cert, NID_ext_key_usage, server ? "serverAuth" : "clientAuth");
  AddExt(cert, ca_cert, NID_authority_key_identifier, "keyid:always");
  if (server)
    AddExt(cert, ca_cert, NID_subject_alt_name, "IP:127.0.0.1,DNS:localhost,DNS:kubernetes.test");
  Require(X509_sign(cert, ca_key, EVP_sha256()) > 0, "X509_sign");
  CertKey out{ToPem(cert), ToPem(key)};
  X509_free(cert);
  EVP_PKEY_free(key);
  X509_free(ca_cert);
  EVP_PKEY_free(ca_key);
  return out;
}

// ---------------------------------------------------------------------------------------------
// TempDir

TempDir::TempDir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "kube_client_test.XXXXXX").string();
  char* p = ::mkdtemp(tmpl.data());
  Require(p != nullptr, "mkdtemp");
  path_ = p;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string TempDir::Write(const std::string& name, const std::string& content,
                           bool executable) const {
  std::string path = path_ + "/" + name;
  std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f << content;
  }
  if (executable) ::chmod(tmp.c_str(), 0755);
  Require(std::rename(tmp.c_str(), path.c_str()) == 0, "rename");
  return path;
}

}  // namespace gpusched::kube::client::testing
