// SPDX-License-Identifier: Apache-2.0
// http::Server: a small HTTP/1.1 server (Boost.Beast over Asio) for the extender, and later for
// /metrics and /healthz. It routes by exact method + path to synchronous handlers.
//
//   Server::Create(options) ─> Handle(method, path, handler)... ─> Start() ─> ... ─> Stop()
//
// Behaviour:
//  - A fixed number of worker threads (options.threads) run every connection; a handler runs on
//    the worker that read its request, so at most `threads` handlers run at once. Handlers must
//    be thread-safe and should be quick (they block a worker).
//  - Keep-alive connections are served request after request (Go's http client reuses them).
//  - A request body over options.max_body_bytes gets 413 and the connection is closed; a header
//    block over 64 KiB or unparsable HTTP gets 400. A connection idle or slow for longer than
//    options.io_timeout is closed.
//  - Unknown path: 404. Known path, other method: 405 with an Allow header.
//  - A handler that throws gets 500 (the exception does not leave the server).
//  - TLS when both options.tls_cert_file and options.tls_key_file are set (PEM files).
//  - Port 0 picks a free port; port() tells which.
//  - Stop(): closes the listener and every open connection, then joins the workers. A handler in
//    progress finishes first; its response is dropped if the connection is already closed.
//
// Threading: Handle() only before Start(). Start(), Stop() and the destructor from one owner
// thread. port() is safe after Start().
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/common/status.h"

namespace gpusched::http {

struct Request {
  std::string method;  // "GET", "POST", ...
  std::string path;    // the target without the query string
  std::string query;   // after '?', without it; empty if none
  std::string content_type;
  std::string body;
};

struct Response {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // extra headers
};

using Handler = std::function<Response(const Request&)>;

struct ServerOptions {
  std::string bind_address = "127.0.0.1";        // IPv4 or IPv6 literal
  uint16_t port = 0;                             // 0: any free port
  int threads = 4;                               // worker threads, >= 1
  size_t max_body_bytes = 8u << 20;              // larger bodies get 413
  std::chrono::milliseconds io_timeout{30'000};  // per read/write/handshake
  std::string tls_cert_file;                     // PEM; TLS only when both files are set
  std::string tls_key_file;
};

class Server {
 public:
  // Validates the options and loads the TLS files; binds nothing yet.
  static common::StatusOr<std::unique_ptr<Server>> Create(ServerOptions options);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Registers `handler` for exact `method` and `path`. REQUIRES: before Start().
  void Handle(std::string method, std::string path, Handler handler);

  // Binds, listens and starts the workers. Errors: the address is invalid or in use.
  [[nodiscard]] common::Status Start();
  // The bound port (after Start()).
  uint16_t port() const;
  bool tls() const;
  // Idempotent.
  void Stop();

 private:
  struct Impl;
  explicit Server(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

using ServerPtr = std::unique_ptr<Server>;

}  // namespace gpusched::http
