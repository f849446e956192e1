// SPDX-License-Identifier: Apache-2.0
// http::Server: a small HTTP/1.1 server (Boost.Beast over Asio) for the extender verbs, /metrics
// and the health endpoints. It routes by exact method + path to synchronous handlers, after an
// optional filter (authentication and authorization) that may answer first.
//
//   Server::Create(options) ─> SetFilter(f) ─> Handle(method, path, handler)...
//                           ─> Start() ─> ... ─> Stop()
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
//  - TLS when options.tls.enabled (src/http/tls.h): the certificate files are re-read for new
//    connections when they change; client certificates are verified against the client CAs, and
//    a verified one's subject reaches the handler as Request::peer.
//  - The filter, when set, sees every parsed request before routing (so unknown paths too); a
//    response from it is sent instead of routing (401, 403).
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
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/common/status.h"
#include "src/http/tls.h"

namespace gpusched::http {

struct Request {
  std::string method;  // "GET", "POST", ...
  std::string path;    // the target without the query string
  std::string query;   // after '?', without it; empty if none
  std::string content_type;
  std::string authorization;            // the Authorization header; empty if none
  std::optional<PeerCertificate> peer;  // a client certificate that verified; none otherwise
  std::string body;
};

struct Response {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // extra headers
};

using Handler = std::function<Response(const Request&)>;
// Runs before routing: nullopt lets the request through, a response is sent instead.
using Filter = std::function<std::optional<Response>(const Request&)>;

struct ServerOptions {
  std::string bind_address = "127.0.0.1";        // IPv4 or IPv6 literal
  uint16_t port = 0;                             // 0: any free port
  int threads = 4;                               // worker threads, >= 1
  size_t max_body_bytes = 8u << 20;              // larger bodies get 413
  std::chrono::milliseconds io_timeout{30'000};  // per read/write/handshake
  TlsOptions tls;                                // plain HTTP unless tls.enabled
};

class Server {
 public:
  // Validates the options and loads the TLS material (errors name the file); binds nothing yet.
  static common::StatusOr<std::unique_ptr<Server>> Create(ServerOptions options);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Registers `handler` for exact `method` and `path`. REQUIRES: before Start().
  void Handle(std::string method, std::string path, Handler handler);
  // Sets the filter every request passes first. REQUIRES: before Start().
  void SetFilter(Filter filter);

  // Binds, listens and starts the workers. Errors: the address is invalid or in use.
  [[nodiscard]] common::Status Start();
  // The bound port (after Start()).
  uint16_t port() const;
  bool tls() const;
  // TLS: how often changed certificate files were loaded, and why the last failed reload failed
  // ("" after a good one). 0 and "" without TLS.
  int tls_reloads() const;
  std::string tls_reload_error() const;
  // Idempotent.
  void Stop();

 private:
  struct Impl;
  explicit Server(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

using ServerPtr = std::unique_ptr<Server>;

}  // namespace gpusched::http
