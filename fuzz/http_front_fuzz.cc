// SPDX-License-Identifier: Apache-2.0
// Fuzzes the HTTP front every gpusched server runs: http::Server (Beast's parser, TLS through
// OpenSSL, timeouts) with kube::delegated_auth::RequestAuth as its filter (the Authorization
// header, 401/403), over real loopback sockets, as a client on the network would reach it.
//
// One plain and one TLS server (an in-memory self-signed pair) run for the whole process, two
// workers each, 200 ms I/O timeout, 4 KiB body limit. Input:
//   byte 0: bit 0 TLS; bits 1-3 piece size (1, 2, 3, 7, 16, 64, 512, all at once); bit 4 a slow
//           client (1 ms between the first 16 pieces); bit 5 keep the connection open after
//           sending (the server's timeout must end it); bit 6 add a 70 KiB header line after the
//           first line (over the 64 KiB header limit); bit 7 follow with a valid GET on the same
//           connection.
//   the rest: the bytes the client sends.
// Properties: no crash, leak or UB (sanitizers); every answer starts with "HTTP/1.1 " and a
// 3-digit status; after each input a fresh connection still gets 200 from /healthz within 5 s
// (no worker left stuck, for either server); 401/403 only with the Status body.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <thread>

#include "fuzz/fuzz_check.h"
#include "src/common/clock.h"
#include "src/http/server.h"
#include "src/http/tls.h"
#include "src/kube/delegated_auth/delegated_auth.h"

namespace {

using gpusched::http::Request;
using gpusched::http::Response;

// Token "good" is user "u", who may get /healthz and create /echo; nothing else authenticates.
class FakeApi final : public gpusched::kube::RestClient {
 public:
  gpusched::common::StatusOr<gpusched::kube::Response> Do(
      const gpusched::kube::Request& r) override {
    if (r.path.find("tokenreviews") != std::string::npos) {
      const bool good = r.body.find("\"token\":\"good\"") != std::string::npos;
      return gpusched::kube::Response{
          201, good ? R"({"status":{"authenticated":true,"user":{"username":"u"}}})"
                    : R"({"status":{"authenticated":false}})"};
    }
    const bool allowed = r.body.find("\"path\":\"/echo\"") != std::string::npos;
    return gpusched::kube::Response{
        201, allowed ? R"({"status":{"allowed":true}})" : R"({"status":{"allowed":false}})"};
  }
  gpusched::common::Status Stream(const gpusched::kube::Request&,
                                  const std::function<bool(std::string_view)>&) override {
    return gpusched::common::UnimplementedError("no watch");
  }
};

struct Front {
  gpusched::common::SystemClock clock;
  FakeApi api;
  gpusched::kube::delegated_auth::TokenReviewer tokens{api, clock, std::chrono::seconds(10)};
  gpusched::kube::delegated_auth::AccessReviewer access{api, clock, std::chrono::seconds(10),
                                                        std::chrono::seconds(10)};
  gpusched::kube::delegated_auth::RequestAuth auth{{}, &tokens, &access};
  gpusched::http::ServerPtr plain;
  gpusched::http::ServerPtr tls;
  SSL_CTX* client = nullptr;

  gpusched::http::ServerPtr Start(bool with_tls) {
    gpusched::http::ServerOptions o;
    o.threads = 2;
    o.max_body_bytes = 4096;
    o.io_timeout = std::chrono::milliseconds(200);
    if (with_tls) {
      auto pair = gpusched::http::GenerateSelfSignedCertificate("localhost", {"127.0.0.1"});
      FUZZ_CHECK(pair.ok(), "a self-signed pair");
      o.tls.enabled = true;
      o.tls.cert_pem = pair->cert_pem;
      o.tls.key_pem = pair->key_pem;
    }
    auto s = gpusched::http::Server::Create(o);
    FUZZ_CHECK(s.ok(), "the server is created");
    (*s)->SetFilter(auth.AsFilter());
    (*s)->Handle("GET", "/healthz", [](const Request&) {
      return Response{200, "text/plain", "ok\n", {}};
    });
    (*s)->Handle("POST", "/echo", [](const Request& r) {
      return Response{200, "text/plain", r.body, {}};
    });
    FUZZ_CHECK((*s)->Start().ok(), "the server starts");
    return std::move(s).value();
  }

  Front() {
    // The client's SSL_write on a connection the server closed must fail, not kill the process
    // (gpusched itself ignores SIGPIPE: cmd/gpusched InstallShutdownHandler).
    std::signal(SIGPIPE, SIG_IGN);
    plain = Start(false);
    tls = Start(true);
    client = SSL_CTX_new(TLS_client_method());
  }
};

Front& TheFront() {
  static Front* front = new Front();  // lives until exit; its workers are joined by no one
  return *front;
}

// One client connection: plain or TLS over a blocking socket with 2 s timeouts.
class Conn {
 public:
  Conn(uint16_t port, SSL_CTX* tls) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    timeval tv{2, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    ok_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
    if (ok_ && tls != nullptr) {
      ssl_ = SSL_new(tls);
      SSL_set_fd(ssl_, fd_);
      ok_ = SSL_connect(ssl_) == 1;
    }
  }
  ~Conn() {
    if (ssl_ != nullptr) SSL_free(ssl_);
    ::close(fd_);
  }
  bool ok() const { return ok_; }
  bool Send(std::string_view data) {
    if (!ok_) return false;
    if (ssl_ != nullptr) return SSL_write(ssl_, data.data(), static_cast<int>(data.size())) > 0;
    return ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(data.size());
  }
  void EndWrites() {
    if (ssl_ != nullptr) {
      SSL_shutdown(ssl_);  // close_notify
    } else {
      ::shutdown(fd_, SHUT_WR);
    }
  }
  // Reads until the server closes, an error or a timeout; at most 1 MiB.
  std::string ReadAll() {
    std::string out;
    char buf[16384];
    while (ok_ && out.size() < (1u << 20)) {
      int n = ssl_ != nullptr ? SSL_read(ssl_, buf, sizeof(buf))
                              : static_cast<int>(::recv(fd_, buf, sizeof(buf), 0));
      if (n <= 0) break;
      out.append(buf, static_cast<size_t>(n));
    }
    return out;
  }

 private:
  int fd_ = -1;
  SSL* ssl_ = nullptr;
  bool ok_ = false;
};

void CheckAnswers(std::string_view got) {
  if (got.empty()) return;  // dropped: bad TLS, or a timeout before any complete request
  FUZZ_CHECK(got.starts_with("HTTP/1.1 ") && got.size() >= 12, "an answer is HTTP/1.1");
  for (size_t i = 9; i < 12; ++i) FUZZ_CHECK(got[i] >= '0' && got[i] <= '9', "a 3-digit status");
  if (got.starts_with("HTTP/1.1 401") || got.starts_with("HTTP/1.1 403")) {
    FUZZ_CHECK(got.find("\"kind\":\"Status\"") != std::string_view::npos, "401/403 is a Status");
  }
}

void CheckHealthy(uint16_t port, SSL_CTX* tls) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  for (;;) {
    Conn c(port, tls);
    if (c.Send("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")) {
      if (c.ReadAll().starts_with("HTTP/1.1 200")) return;
    }
    FUZZ_CHECK(std::chrono::steady_clock::now() < deadline,
               "a fresh connection gets 200 from /healthz within 5 s (no worker stuck)");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  Front& front = TheFront();
  const uint8_t mode = data[0];
  const bool tls = (mode & 1) != 0;
  static constexpr size_t kPieces[] = {1, 2, 3, 7, 16, 64, 512, size_t{1} << 30};
  const size_t piece = kPieces[(mode >> 1) & 7];
  const bool slow = (mode & 16) != 0;
  const bool hold_open = (mode & 32) != 0;
  const bool huge_header = (mode & 64) != 0;
  const bool then_valid = (mode & 128) != 0;
  std::string wire(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (huge_header) {
    size_t eol = wire.find("\r\n");
    wire.insert(eol == std::string::npos ? wire.size() : eol + 2,
                "X-Pad: " + std::string(70u << 10, 'a') + "\r\n");
  }
  if (then_valid) wire += "GET /healthz HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer good\r\n\r\n";

  const uint16_t port = tls ? front.tls->port() : front.plain->port();
  SSL_CTX* client = tls ? front.client : nullptr;
  {
    Conn c(port, client);
    for (size_t i = 0, n = 0; i < wire.size(); i += piece, ++n) {
      if (!c.Send(std::string_view(wire).substr(i, piece))) break;
      if (slow && n < 16) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (!hold_open) c.EndWrites();
    CheckAnswers(c.ReadAll());
  }
  CheckHealthy(port, client);
  return 0;
}
