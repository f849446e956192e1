// SPDX-License-Identifier: Apache-2.0
#include "src/http/server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace gpusched::http {
namespace {

// Sends `raw` to 127.0.0.1:port, optionally half-closes, and returns everything read until the
// server closes the connection (or `max_wait` passes).
std::string RoundTrip(uint16_t port, const std::string& raw, bool half_close = true) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return "connect failed";
  }
  timeval tv{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  size_t sent = 0;
  while (sent < raw.size()) {
    ssize_t n = ::send(fd, raw.data() + sent, raw.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;
    sent += static_cast<size_t>(n);
  }
  if (half_close) ::shutdown(fd, SHUT_WR);
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

std::string Post(const std::string& path, const std::string& body, bool close = true) {
  return "POST " + path +
         " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " +
         std::to_string(body.size()) + (close ? "\r\nConnection: close" : "") + "\r\n\r\n" + body;
}

class ServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerOptions o;
    o.threads = 4;
    o.max_body_bytes = 1024;
    o.io_timeout = std::chrono::milliseconds(2000);
    auto s = Server::Create(o);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    server_ = std::move(s).value();
    server_->Handle("POST", "/echo", [this](const Request& r) {
      calls_.fetch_add(1);
      return Response{200, "application/json", r.body, {}};
    });
    server_->Handle("GET", "/throw",
                    [](const Request&) -> Response { throw std::runtime_error("boom"); });
    ASSERT_TRUE(server_->Start().ok());
    ASSERT_NE(server_->port(), 0);
  }
  ServerPtr server_;
  std::atomic<int> calls_{0};
};

TEST_F(ServerTest, StatusForEachKindOfRequest) {
  struct Case {
    std::string name;
    std::string raw;
    std::string want_status_line;
    std::string want_body_part;
  };
  std::vector<Case> cases = {
      {"a known route answers with its handler's body", Post("/echo", "{\"a\":1}"), "HTTP/1.1 200",
       "{\"a\":1}"},
      {"an unknown path is 404", Post("/nope", "{}"), "HTTP/1.1 404", "not found"},
      {"a known path with another method is 405",
       "GET /echo HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", "HTTP/1.1 405", ""},
      {"a body over the limit is 413 before it is read",
       "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n", "HTTP/1.1 413", "exceeds"},
      {"a body over the limit that is sent whole is still 413",
       Post("/echo", std::string(5000, 'x')), "HTTP/1.1 413", ""},
      {"garbage instead of a request line is 400", "this is not http\r\n\r\n", "HTTP/1.1 400",
       "bad request"},
      {"a body cut short by the client is 400",
       "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"a\":", "HTTP/1.1 400",
       "bad request"},
      {"a throwing handler is 500 and the server survives",
       "GET /throw HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", "HTTP/1.1 500", "boom"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    std::string got = RoundTrip(server_->port(), c.raw);
    EXPECT_EQ(got.substr(0, c.want_status_line.size()), c.want_status_line) << got;
    EXPECT_NE(got.find(c.want_body_part), std::string::npos) << got;
  }
  // Still serving.
  EXPECT_NE(RoundTrip(server_->port(), Post("/echo", "ok")).find("200"), std::string::npos);
}

TEST_F(ServerTest, KeepAliveServesSeveralRequestsOnOneConnection) {
  std::string got =
      RoundTrip(server_->port(), Post("/echo", "one", false) + Post("/echo", "two", true));
  EXPECT_NE(got.find("one"), std::string::npos) << got;
  EXPECT_NE(got.find("two"), std::string::npos) << got;
  EXPECT_EQ(calls_.load(), 2);
}

TEST_F(ServerTest, ConcurrentClients) {
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 25; ++i) {
        std::string body = "t" + std::to_string(t) + "i" + std::to_string(i);
        std::string got = RoundTrip(server_->port(), Post("/echo", body));
        if (got.rfind("HTTP/1.1 200", 0) == 0 && got.find(body) != std::string::npos)
          ok.fetch_add(1);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 200);
}

TEST_F(ServerTest, StopIsIdempotentAndRefusesNewConnections) {
  server_->Stop();
  server_->Stop();
  EXPECT_EQ(RoundTrip(server_->port(), Post("/echo", "x")).find("200"), std::string::npos);
}

TEST(ServerCreateTest, RejectsBadOptions) {
  struct Case {
    std::string name;
    ServerOptions options;
  };
  ServerOptions no_threads;
  no_threads.threads = 0;
  ServerOptions cert_only;
  cert_only.tls.enabled = true;
  cert_only.tls.cert_file = "/nonexistent/cert.pem";
  ServerOptions missing_files;
  missing_files.tls.enabled = true;
  missing_files.tls.cert_file = "/nonexistent/cert.pem";
  missing_files.tls.key_file = "/nonexistent/key.pem";
  std::vector<Case> cases = {{"zero threads", no_threads},
                             {"a certificate without a key", cert_only},
                             {"TLS files that do not exist", missing_files}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_FALSE(Server::Create(c.options).ok());
  }
}

// Runs `cmd` through the shell and returns its stdout.
std::string Shell(const std::string& cmd) {
  std::string out;
  FILE* f = ::popen(cmd.c_str(), "r");
  if (f == nullptr) return out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) out.append(buf, n);
  ::pclose(f);
  return out;
}

TEST(ServerTlsTest, ServesHttpsWithACertificatePair) {
  if (Shell("command -v openssl >/dev/null && command -v curl >/dev/null && echo yes").empty()) {
    GTEST_SKIP() << "needs the openssl and curl command-line tools";
  }
  char dir_template[] = "/tmp/http_tls_test.XXXXXX";
  const char* dir = ::mkdtemp(dir_template);
  ASSERT_NE(dir, nullptr);
  const std::string cert = std::string(dir) + "/tls.crt";
  const std::string key = std::string(dir) + "/tls.key";
  Shell("openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 -keyout " + key +
        " -out " + cert + " 2>/dev/null");
  ServerOptions o;
  o.tls.enabled = true;
  o.tls.cert_file = cert;
  o.tls.key_file = key;
  auto s = Server::Create(o);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  (*s)->Handle("POST", "/echo", [](const Request& r) {
    return Response{200, "text/plain", r.body, {}};
  });
  ASSERT_TRUE((*s)->Start().ok());
  EXPECT_TRUE((*s)->tls());
  const std::string url = "https://127.0.0.1:" + std::to_string((*s)->port()) + "/echo";
  EXPECT_EQ(Shell("curl -sk --max-time 10 -d over-tls " + url), "over-tls");
  // Plain HTTP to the TLS port gets no HTTP answer, and the server keeps serving.
  EXPECT_EQ(RoundTrip((*s)->port(), Post("/echo", "x")).find("200"), std::string::npos);
  EXPECT_EQ(Shell("curl -sk --max-time 10 -d again " + url), "again");
  (*s)->Stop();
  Shell("rm -rf " + std::string(dir));
}

TEST(ServerCreateTest, BadBindAddressFailsStart) {
  ServerOptions o;
  o.bind_address = "not-an-ip";
  auto s = Server::Create(o);
  ASSERT_TRUE(s.ok());
  EXPECT_FALSE((*s)->Start().ok());
}

}  // namespace
}  // namespace gpusched::http
