// SPDX-License-Identifier: Apache-2.0
// Test-only: a tiny HTTP/1.1 server on 127.0.0.1, port 0, optionally over TLS, for exercising
// HttpRestClient end to end without an API server; plus an in-process certificate authority.
// One thread accepts, one thread per connection serves (keep-alive included). Requests are
// parsed, and ordinary answers written, by Boost.Beast; a malformed request closes the
// connection. The handler runs on connection threads and must be thread-safe.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace gpusched::kube::client::testing {

struct ReceivedRequest {
  std::string method;
  std::string target;                          // path and raw query, as sent
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
  std::string client_cert_cn;  // TLS: the CN of the client certificate, "" if none
};

struct Reply {
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  // Streaming: when non-empty, sent one write per chunk with no Content-Length and the
  // connection closed after the last (unless hold_open).
  std::vector<std::string> chunks;
  // After the chunks, keep the connection open until the client closes it or the server stops.
  bool hold_open = false;
  // Close the connection without answering (a connection error for the client).
  bool drop = false;
  // When non-empty, sent verbatim as the whole answer (status, headers and body are ignored).
  std::string raw;
  // Close the connection after answering without announcing it, as a server whose idle
  // timeout ends a kept-alive connection does.
  bool close_after = false;
};

using Handler = std::function<Reply(const ReceivedRequest&)>;

struct ServerTls {
  std::string cert_pem;  // server certificate (chain)
  std::string key_pem;
  std::string client_ca_pem;  // when non-empty, a client certificate signed by it is required
};

class TestHttpServer {
 public:
  explicit TestHttpServer(Handler handler, std::optional<ServerTls> tls = std::nullopt);
  ~TestHttpServer();
  TestHttpServer(const TestHttpServer&) = delete;
  TestHttpServer& operator=(const TestHttpServer&) = delete;

  int port() const { return port_; }
  // "http://127.0.0.1:PORT" (or https).
  std::string url() const;
  std::vector<ReceivedRequest> requests() const;
  int connections() const { return connections_.load(); }

 private:
  struct Conn;
  void AcceptLoop();
  void Serve(int fd);

  Handler handler_;
  std::optional<ServerTls> tls_;
  void* ssl_ctx_ = nullptr;  // SSL_CTX*
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> connections_{0};
  std::thread accept_thread_;
  mutable std::mutex mu_;
  std::vector<std::thread> conn_threads_;
  std::vector<ReceivedRequest> requests_;
};

// A PEM certificate with its private key.
struct CertKey {
  std::string cert_pem;
  std::string key_pem;
};

// Makes a self-signed CA ("CN=<cn>", EC P-256, valid for a day).
CertKey MakeTestCa(const std::string& cn);
// Makes a leaf signed by `ca`: a server certificate for 127.0.0.1/localhost, or a client one.
CertKey MakeTestLeaf(const CertKey& ca, const std::string& cn, bool server);

// A temporary directory removed (recursively) on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }
  // Writes `content` to path()/name (atomically: write a temp file, rename) and returns the path.
  std::string Write(const std::string& name, const std::string& content,
                    bool executable = false) const;

 private:
  std::string path_;
};

}  // namespace gpusched::kube::client::testing
