// SPDX-License-Identifier: Apache-2.0
#include "src/kube/client/http_client.h"

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <condition_variable>
#include <map>
#include <thread>

#include "src/api/decode.h"
#include "src/kube/client/api_writer.h"
#include "src/kube/client/test_server.h"

namespace gpusched::kube::client {
namespace {

using common::Duration;
using common::StatusCode;
using std::chrono::milliseconds;
using std::chrono::seconds;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::Reply;
using testing::TestHttpServer;

HttpClientOptions TestOptions() {
  HttpClientOptions o;
  o.qps = 0;  // unlimited unless a test says otherwise
  o.connect_timeout = seconds(5);
  return o;
}

// A client with a FakeClock whose waits are recorded and advance the clock.
struct Harness {
  common::FakeClock clock;
  common::Random random{42};
  std::mutex mu;
  std::vector<Duration> waits;
  std::unique_ptr<HttpRestClient> client;

  explicit Harness(const std::string& url, HttpClientOptions opts = TestOptions(),
                   CredentialProviderPtr creds = nullptr, ClusterConfig config = {}) {
    config.server = url;
    if (config.source.empty()) config.source = "test";
    auto c = HttpRestClient::Create(std::move(config), std::move(opts),
                                    HttpClientDeps{clock, random,
                                                   [this](Duration d) {
                                                     std::lock_guard<std::mutex> lock(mu);
                                                     waits.push_back(d);
                                                     clock.Advance(d);
                                                   },
                                                   std::move(creds)});
    if (!c.ok()) {
      ADD_FAILURE() << c.status().ToString();
      return;
    }
    client = std::move(c).value();
  }
};

Request Get(std::string path) {
  Request r;
  r.path = std::move(path);
  return r;
}

// Reads go through libcurl's easy interface, writes over the lean path (http_client.h): the
// tests that hold for both run once per transport.
constexpr const char* kTransports[] = {"GET", "POST"};

Request Call(std::string_view method, std::string path) {
  Request r;
  r.method = std::string(method);
  r.path = std::move(path);
  if (method != "GET") r.body = R"({"kind":"Binding"})";
  return r;
}

// A port with nothing listening.
int ClosedPort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

Reply Status(int code, std::string body = "",
             std::vector<std::pair<std::string, std::string>> headers = {}) {
  Reply r;
  r.status = code;
  r.body = std::move(body);
  r.headers = std::move(headers);
  return r;
}

TEST(HttpRestClientTest, RetriesWithBackoffAndRetryAfter) {
  Reply drop;
  drop.drop = true;
  struct Case {
    const char* name;
    std::vector<Reply> replies;  // one per attempt; the last repeats
    int want_status;
    int want_requests;
    std::vector<Duration> want_waits;  // exact; empty with backoff_waits > 0 means "backoff range"
    int backoff_waits = 0;
  };
  const Case cases[] = {
      {"a 200 is returned at once", {Status(200, "ok")}, 200, 1, {}},
      {"500 then 200: one backoff", {Status(500), Status(200, "ok")}, 200, 2, {}, 1},
      {"502, 503, 504 are retried",
       {Status(502), Status(503), Status(504), Status(200)},
       200,
       4,
       {},
       3},
      {"429 honours Retry-After",
       {Status(429, "", {{"Retry-After", "3"}}), Status(200)},
       200,
       2,
       {seconds(3)}},
      {"a Retry-After above the cap is cut to it",
       {Status(429, "", {{"Retry-After", "3600"}}), Status(200)},
       200,
       2,
       {seconds(30)}},
      {"5xx with Retry-After uses it",
       {Status(503, "", {{"Retry-After", "1"}}), Status(200)},
       200,
       2,
       {seconds(1)}},
      {"after max attempts the last response is returned", {Status(503, "busy")}, 503, 5, {}, 4},
      {"404 is not retried", {Status(404)}, 404, 1, {}},
      {"409 is not retried", {Status(409)}, 409, 1, {}},
      {"501 is not retried", {Status(501)}, 501, 1, {}},
      {"a dropped connection is retried", {drop, Status(200)}, 200, 2, {}, 1},
  };
  for (const char* method : kTransports)
    for (const auto& c : cases) {
      SCOPED_TRACE(std::string(method) + ": " + c.name);
      std::atomic<size_t> n{0};
      TestHttpServer server([&](const testing::ReceivedRequest&) {
        size_t i = n.fetch_add(1);
        return c.replies[std::min(i, c.replies.size() - 1)];
      });
      Harness h(server.url());
      ASSERT_NE(h.client, nullptr);
      auto got = h.client->Do(Call(method, "/api/v1/pods"));
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      EXPECT_EQ(got->status, c.want_status);
      EXPECT_EQ(static_cast<int>(server.requests().size()), c.want_requests);
      if (c.backoff_waits == 0) {
        EXPECT_EQ(h.waits, c.want_waits);
      } else {
        ASSERT_EQ(static_cast<int>(h.waits.size()), c.backoff_waits);
        for (size_t i = 0; i < h.waits.size(); ++i) {
          Duration base = milliseconds(200) * (1 << i);  // initial 200 ms, doubling
          EXPECT_GE(h.waits[i], base / 2) << i;
          EXPECT_LE(h.waits[i], base) << i;
        }
      }
    }
}

// An eviction that a PodDisruptionBudget forbids is a 429 too: the caller turns the retry off.
TEST(HttpRestClientTest, A429IsTheAnswerWhenTheRequestSaysSo) {
  std::atomic<size_t> n{0};
  TestHttpServer server([&](const testing::ReceivedRequest&) {
    n.fetch_add(1);
    return Status(429, R"({"kind":"Status","reason":"TooManyRequests"})");
  });
  Harness h(server.url());
  ASSERT_NE(h.client, nullptr);
  Request req = Call("POST", "/api/v1/namespaces/ml/pods/p/eviction");
  req.retry_too_many_requests = false;
  auto got = h.client->Do(req);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->status, 429);
  EXPECT_EQ(server.requests().size(), 1u);
  EXPECT_TRUE(h.waits.empty());
}

TEST(HttpRestClientTest, ConnectionErrorsAreRetriedThenUnavailable) {
  for (const char* method : kTransports) {
    SCOPED_TRACE(method);
    Harness h("http://127.0.0.1:" + std::to_string(ClosedPort()));
    auto got = h.client->Do(Call(method, "/healthz"));
    ASSERT_FALSE(got.ok());
    EXPECT_EQ(got.status().code(), StatusCode::kUnavailable);
    EXPECT_THAT(std::string(got.status().message()),
                HasSubstr(std::string(method) + " /healthz: "));
    EXPECT_EQ(h.waits.size(), 4u) << "5 attempts, 4 backoffs";
  }
  // Backoff doubles and is capped at max_backoff.
  HttpClientOptions opts = TestOptions();
  opts.max_attempts = 8;
  opts.max_backoff = milliseconds(500);
  Harness capped("http://127.0.0.1:" + std::to_string(ClosedPort()), opts);
  ASSERT_FALSE(capped.client->Do(Get("/healthz")).ok());
  ASSERT_EQ(capped.waits.size(), 7u);
  for (Duration w : capped.waits) EXPECT_LE(w, milliseconds(500));
  EXPECT_GE(capped.waits.back(), milliseconds(250));
}

TEST(HttpRestClientTest, SendsMethodBodyHeadersAndEscapedQuery) {
  TestHttpServer server([](const testing::ReceivedRequest&) { return Status(200, "{}"); });
  Harness h(server.url(), TestOptions(),
            std::make_unique<StaticCredentialProvider>(Credentials{"tok-123", "", ""}));
  Request r;
  r.method = "PATCH";
  r.path = "/api/v1/namespaces/ns/pods/p/status";
  r.query = {{"labelSelector", "app=web,tier!=db"},
             {"fieldSelector", "spec.nodeName="},
             {"x y", "a/b?c&d#e~"}};
  r.body = R"({"status":{}})";
  r.content_type = "application/strategic-merge-patch+json";
  auto got = h.client->Do(r);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  auto reqs = server.requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].method, "PATCH");
  EXPECT_EQ(reqs[0].target,
            "/api/v1/namespaces/ns/pods/p/"
            "status?labelSelector=app%3Dweb%2Ctier%21%3Ddb&fieldSelector=spec."
            "nodeName%3D&x%20y=a%2Fb%3Fc%26d%23e~");
  EXPECT_EQ(reqs[0].body, r.body);
  EXPECT_EQ(reqs[0].headers["content-type"], "application/strategic-merge-patch+json");
  EXPECT_EQ(reqs[0].headers["authorization"], "Bearer tok-123");
  EXPECT_EQ(reqs[0].headers["user-agent"], "gpusched/0.1.0");
  EXPECT_THAT(reqs[0].headers["accept"], HasSubstr("application/json"));
  EXPECT_EQ(reqs[0].headers.count("expect"), 0u);

  // Other verbs.
  for (const char* method : {"GET", "POST", "PUT", "DELETE"}) {
    SCOPED_TRACE(method);
    Request q;
    q.method = method;
    q.path = "/x";
    if (std::string(method) != "GET" && std::string(method) != "DELETE") q.body = "{}";
    ASSERT_TRUE(h.client->Do(q).ok());
    EXPECT_EQ(server.requests().back().method, method);
    EXPECT_EQ(server.requests().back().body, q.body);
  }
  EXPECT_EQ(server.connections(), 2)
      << "one kept-alive connection per transport (easy interface for GET, lean path for writes)";
  for (const char* method : {"GET", "POST", "PUT", "DELETE", "PATCH"}) {
    ASSERT_TRUE(h.client->Do(Call(method, "/y")).ok());
  }
  EXPECT_EQ(server.connections(), 2) << "both kept their connection";
}

TEST(HttpRestClientTest, RejectsBadRequestsBeforeSending) {
  TestHttpServer server([](const testing::ReceivedRequest&) { return Status(200); });
  HttpClientOptions opts = TestOptions();
  opts.max_request_bytes = 10;
  Harness h(server.url(), opts);
  struct Case {
    const char* name;
    Request request;
    StatusCode want;
  };
  Request space = Get("/api/v1/namespaces/a b/pods");
  Request query = Get("/api/v1/pods?watch=1");
  Request relative = Get("api/v1/pods");
  Request verb = Get("/x");
  verb.method = "TRACE";
  Request big = Get("/x");
  big.method = "POST";
  big.body = std::string(11, 'x');
  const Case cases[] = {
      {"a space in the path", space, StatusCode::kInvalidArgument},
      {"a query in the path", query, StatusCode::kInvalidArgument},
      {"a relative path", relative, StatusCode::kInvalidArgument},
      {"an unknown verb", verb, StatusCode::kInvalidArgument},
      {"a body above the limit", big, StatusCode::kResourceExhausted},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(h.client->Do(c.request).status().code(), c.want);
  }
  EXPECT_TRUE(server.requests().empty());
}

TEST(HttpRestClientTest, OversizedResponsesAreRejected) {
  Reply with_length = Status(200, std::string(5000, 'x'));
  Reply streamed;
  streamed.chunks = {std::string(3000, 'x'), std::string(3000, 'x')};
  struct Case {
    const char* name;
    Reply reply;
  };
  const Case cases[] = {
      {"a Content-Length above the limit", with_length},
      {"a body without Content-Length that grows past the limit", streamed},
  };
  for (const char* method : kTransports)
    for (const auto& c : cases) {
      SCOPED_TRACE(std::string(method) + ": " + c.name);
      TestHttpServer server([&](const testing::ReceivedRequest&) { return c.reply; });
      HttpClientOptions opts = TestOptions();
      opts.max_response_bytes = 4096;
      Harness h(server.url(), opts);
      auto got = h.client->Do(Call(method, "/api/v1/pods"));
      EXPECT_EQ(got.status().code(), StatusCode::kResourceExhausted) << got.status().ToString();
      EXPECT_EQ(server.requests().size(), 1u) << "not retried";
    }
}

TEST(HttpRestClientTest, ReauthenticatesOnceOn401) {
  class Rotating final : public CredentialProvider {
   public:
    common::StatusOr<Credentials> Get() override { return Credentials{token, "", ""}; }
    bool OnUnauthorized() override {
      ++unauthorized;
      token = "new";
      return true;
    }
    std::string Describe() const override { return "rotating"; }
    std::string token = "old";
    int unauthorized = 0;
  };
  for (const char* method : kTransports) {
    SCOPED_TRACE(method);
    TestHttpServer server([](const testing::ReceivedRequest& r) {
      return r.headers.at("authorization") == "Bearer new" ? Status(200) : Status(401);
    });
    auto creds = std::make_unique<Rotating>();
    Rotating* raw = creds.get();
    Harness h(server.url(), TestOptions(), std::move(creds));
    auto got = h.client->Do(Call(method, "/api"));
    ASSERT_TRUE(got.ok());
    EXPECT_EQ(got->status, 200);
    EXPECT_EQ(raw->unauthorized, 1);
    EXPECT_TRUE(h.waits.empty()) << "a refreshed credential is tried at once";

    // A provider that cannot refresh: the 401 is returned after one attempt.
    TestHttpServer deny([](const testing::ReceivedRequest&) { return Status(401); });
    Harness h2(deny.url(), TestOptions(),
               std::make_unique<StaticCredentialProvider>(Credentials{"t", "", ""}));
    EXPECT_EQ(h2.client->Do(Call(method, "/api"))->status, 401);
    EXPECT_EQ(deny.requests().size(), 1u);
  }
}

TEST(HttpRestClientTest, RateLimitsEveryAttempt) {
  std::atomic<int> n{0};
  TestHttpServer server(
      [&](const testing::ReceivedRequest&) { return Status(n.fetch_add(1) == 0 ? 500 : 200); });
  HttpClientOptions opts = TestOptions();
  opts.qps = 2;
  opts.burst = 1;
  opts.initial_backoff = Duration(0);
  Harness h(server.url(), opts);
  ASSERT_EQ(h.client->Do(Get("/a"))->status, 200);  // attempt 1 (burst), retry waits 0.5 s
  ASSERT_EQ(h.client->Do(Get("/b"))->status, 200);  // waits 0.5 s
  EXPECT_THAT(h.waits, ElementsAre(milliseconds(500), milliseconds(500)));
}

TEST(HttpRestClientTest, StreamsLines) {
  struct Case {
    const char* name;
    std::vector<std::string> chunks;
    std::vector<std::string> want;
  };
  const Case cases[] = {
      {"lines split across writes are joined",
       {"{\"a\":1}\n{\"b\"", ":2}\r\n", "\n{\"c\":3}\n"},
       {"{\"a\":1}", "{\"b\":2}", "{\"c\":3}"}},
      {"an unterminated last line is delivered", {"x\ny"}, {"x", "y"}},
      {"many lines in one write", {"1\n2\n3\n4\n"}, {"1", "2", "3", "4"}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    TestHttpServer server([&](const testing::ReceivedRequest&) {
      Reply r;
      r.chunks = c.chunks;
      return r;
    });
    Harness h(server.url());
    std::vector<std::string> lines;
    Request req = Get("/api/v1/pods");
    req.query = {{"watch", "true"}};
    req.timeout = milliseconds(0);
    common::Status s = h.client->Stream(req, [&](std::string_view l) {
      lines.emplace_back(l);
      return true;
    });
    EXPECT_TRUE(s.ok()) << s.ToString();
    EXPECT_EQ(lines, c.want);
  }
}

TEST(HttpRestClientTest, StreamStopsWhenTheCallbackSaysSo) {
  TestHttpServer server([](const testing::ReceivedRequest&) {
    Reply r;
    r.chunks = {"1\n2\n", "3\n"};
    r.hold_open = true;
    return r;
  });
  Harness h(server.url());
  std::vector<std::string> lines;
  common::Status s = h.client->Stream(Get("/w"), [&](std::string_view l) {
    lines.emplace_back(l);
    return lines.size() < 2;
  });
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_THAT(lines, ElementsAre("1", "2"));
}

TEST(HttpRestClientTest, CancelAbortsAStreamInFlightAndLaterCalls) {
  TestHttpServer server([](const testing::ReceivedRequest&) {
    Reply r;
    r.chunks = {"first\n"};
    r.hold_open = true;
    return r;
  });
  Harness h(server.url());
  std::mutex mu;
  std::condition_variable cv;
  bool got_line = false;
  common::Status result;
  std::thread t([&] {
    Request req = Get("/w");
    req.timeout = milliseconds(0);
    result = h.client->Stream(req, [&](std::string_view) {
      std::lock_guard<std::mutex> lock(mu);
      got_line = true;
      cv.notify_all();
      return true;
    });
  });
  {
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, seconds(10), [&] { return got_line; }));
  }
  h.client->Cancel();
  t.join();  // returns within about a second (libcurl's progress callback period)
  EXPECT_EQ(result.code(), StatusCode::kUnavailable);
  EXPECT_THAT(std::string(result.message()), HasSubstr("cancelled"));
  EXPECT_EQ(h.client->Do(Get("/x")).status().code(), StatusCode::kUnavailable);
}

TEST(HttpRestClientTest, StreamErrors) {
  struct Case {
    const char* name;
    Reply reply;
    StatusCode want;
    std::string want_message;
  };
  Reply long_line;
  long_line.chunks = {std::string(3000, 'x'), std::string(3000, 'x')};
  const Case cases[] = {
      {"410 Gone is OutOfRange with the API message",
       Status(410, R"j({"kind":"Status","message":"too old resource version: 1 (5)","code":410})j"),
       StatusCode::kOutOfRange, "GET /w: 410 Gone: too old resource version: 1 (5)"},
      {"403 is PermissionDenied", Status(403, R"({"kind":"Status","message":"forbidden"})"),
       StatusCode::kPermissionDenied, "GET /w: 403 Forbidden: forbidden"},
      {"a single line above the limit", long_line, StatusCode::kResourceExhausted,
       "larger than 4096"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    TestHttpServer server([&](const testing::ReceivedRequest&) { return c.reply; });
    HttpClientOptions opts = TestOptions();
    opts.max_response_bytes = 4096;
    Harness h(server.url(), opts);
    int lines = 0;
    common::Status s = h.client->Stream(Get("/w"), [&](std::string_view) {
      ++lines;
      return true;
    });
    EXPECT_EQ(s.code(), c.want) << s.ToString();
    EXPECT_THAT(std::string(s.message()), HasSubstr(c.want_message));
    EXPECT_EQ(lines, 0);
  }
}

TEST(HttpRestClientTest, StreamRetriesOnlyBeforeTheFirstLine) {
  std::atomic<int> n{0};
  TestHttpServer server([&](const testing::ReceivedRequest&) {
    int i = n.fetch_add(1);
    if (i == 0) return Status(503);
    Reply r;
    r.chunks = {"a\n"};
    return r;
  });
  Harness h(server.url());
  std::vector<std::string> lines;
  common::Status s = h.client->Stream(Get("/w"), [&](std::string_view l) {
    lines.emplace_back(l);
    return true;
  });
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_THAT(lines, ElementsAre("a"));
  EXPECT_EQ(n.load(), 2);
}

// ---------------------------------------------------------------------------------------------
// TLS

TEST(HttpRestClientTest, Tls) {
  auto ca = testing::MakeTestCa("cluster-ca");
  auto server_cert = testing::MakeTestLeaf(ca, "kube-apiserver", /*server=*/true);
  auto client_cert = testing::MakeTestLeaf(ca, "system:kube-scheduler", /*server=*/false);
  auto other_ca = testing::MakeTestCa("other-ca");
  auto stranger = testing::MakeTestLeaf(other_ca, "stranger", false);

  testing::TestHttpServer server(
      [](const testing::ReceivedRequest& r) { return Status(200, r.client_cert_cn); },
      testing::ServerTls{server_cert.cert_pem + ca.cert_pem, server_cert.key_pem, ca.cert_pem});
  struct Case {
    const char* name;
    ClusterConfig config;
    std::string url;
    StatusCode want_code;
    std::string want_body;  // the client certificate CN the server saw
    int want_attempts = 1;
  };
  ClusterConfig good;
  good.ca_pem = ca.cert_pem;
  good.client_cert_pem = client_cert.cert_pem;
  good.client_key_pem = client_cert.key_pem;
  ClusterConfig wrong_ca = good;
  wrong_ca.ca_pem = other_ca.cert_pem;
  ClusterConfig insecure = good;
  insecure.ca_pem.clear();
  insecure.insecure_skip_tls_verify = true;
  ClusterConfig no_client_cert = good;
  no_client_cert.client_cert_pem.clear();
  no_client_cert.client_key_pem.clear();
  ClusterConfig untrusted_client = good;
  untrusted_client.client_cert_pem = stranger.cert_pem;
  untrusted_client.client_key_pem = stranger.key_pem;
  ClusterConfig server_name = good;
  server_name.tls_server_name = "kubernetes.test";
  ClusterConfig bad_server_name = good;
  bad_server_name.tls_server_name = "evil.test";
  const std::string url = server.url();
  const std::string localhost_url = "https://localhost:" + std::to_string(server.port());
  const Case cases[] = {
      {"the cluster CA verifies the server and the client certificate is sent", good, url,
       StatusCode::kOk, "system:kube-scheduler"},
      {"the host name is checked too (localhost is in the SAN)", good, localhost_url,
       StatusCode::kOk, "system:kube-scheduler"},
      {"a server signed by another CA is refused and not retried", wrong_ca, url,
       StatusCode::kUnavailable, ""},
      {"insecure-skip-tls-verify connects without a CA", insecure, url, StatusCode::kOk,
       "system:kube-scheduler"},
      {"tls-server-name is verified instead of the URL host", server_name, url, StatusCode::kOk,
       "system:kube-scheduler"},
      {"a tls-server-name not in the certificate is refused", bad_server_name, url,
       StatusCode::kUnavailable, ""},
      {"without a client certificate the handshake fails", no_client_cert, url,
       StatusCode::kUnavailable, "", 5},
      {"a client certificate from another CA fails", untrusted_client, url,
       StatusCode::kUnavailable, "", 5},
  };
  for (const char* method : kTransports)
    for (const auto& c : cases) {
      SCOPED_TRACE(std::string(method) + ": " + c.name);
      Harness h(c.url, TestOptions(),
                std::make_unique<StaticCredentialProvider>(
                    Credentials{"", c.config.client_cert_pem, c.config.client_key_pem}),
                c.config);
      ASSERT_NE(h.client, nullptr);
      auto got = h.client->Do(Call(method, "/version"));
      if (c.want_code != StatusCode::kOk) {
        EXPECT_EQ(got.status().code(), c.want_code) << got.status().ToString();
        EXPECT_EQ(static_cast<int>(h.waits.size()), c.want_attempts - 1) << got.status().ToString();
        continue;
      }
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      EXPECT_EQ(got->body, c.want_body);
    }
}

TEST(HttpRestClientTest, CreateValidatesTheConfig) {
  auto ca = testing::MakeTestCa("ca");
  auto a = testing::MakeTestLeaf(ca, "a", false);
  auto b = testing::MakeTestLeaf(ca, "b", false);
  struct Case {
    const char* name;
    ClusterConfig config;
    std::string want;  // substring of the error
  };
  ClusterConfig mismatched;
  mismatched.server = "https://h";
  mismatched.client_cert_pem = a.cert_pem;
  mismatched.client_key_pem = b.key_pem;
  ClusterConfig bad_ca;
  bad_ca.server = "https://h";
  bad_ca.ca_pem = "-----BEGIN CERTIFICATE-----\nQ0E=\n-----END CERTIFICATE-----\n";
  ClusterConfig bad_url;
  bad_url.server = "ftp://h";
  ClusterConfig query;
  query.server = "https://h/?x=1";
  const Case cases[] = {
      {"a key that does not match the certificate", mismatched, "client-key: does not match"},
      {"a CA that is not a certificate", bad_ca, "certificate-authority: not a PEM certificate"},
      {"a non-http URL", bad_url, "must be an http(s)://host[:port] URL"},
      {"a URL with a query", query, "must not carry a query"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    common::FakeClock clock;
    common::Random random;
    ClusterConfig cfg = c.config;
    cfg.source = "kubeconfig k";
    auto got = HttpRestClient::Create(cfg, TestOptions(),
                                      HttpClientDeps{clock, random, [](Duration) {}, nullptr});
    ASSERT_FALSE(got.ok());
    EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(got.status().message()), HasSubstr(c.want));
  }
}

TEST(HttpRestClientTest, ConcurrentCallsShareTheHandlePool) {
  std::atomic<int> n{0};
  TestHttpServer server([&](const testing::ReceivedRequest& r) {
    return Status(n.fetch_add(1) % 7 == 3 ? 503 : 200, r.target);
  });
  HttpClientOptions opts = TestOptions();
  opts.max_idle_handles = 2;
  Harness h(server.url(), opts);
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) {
        std::string path = "/t" + std::to_string(t) + "/" + std::to_string(i);
        auto got = h.client->Do(Call(kTransports[(t + i) % 2], path));
        if (got.ok() && got->status == 200 && got->body == path) ok.fetch_add(1);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 120) << "every call ends in 200 after its retries";
}

TEST(HttpRestClientTest, HeaderValuesWithLineBreaksAreRefused) {
  TestHttpServer server([](const testing::ReceivedRequest&) { return Status(200); });
  Harness h(
      server.url(), TestOptions(),
      std::make_unique<StaticCredentialProvider>(Credentials{"s3cr3t\r\nX-Injected: 1", "", ""}));
  for (const char* method : kTransports) {
    SCOPED_TRACE(method);
    auto got = h.client->Do(Call(method, "/b"));
    ASSERT_FALSE(got.ok());
    EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(got.status().message()), HasSubstr("line break"));
    EXPECT_THAT(std::string(got.status().message()), ::testing::Not(HasSubstr("s3cr3t")))
        << "the token is not echoed";
  }
  EXPECT_TRUE(server.requests().empty());
}

TEST(HttpRestClientTest, WritesReopenAConnectionTheServerClosedWhileIdle) {
  std::atomic<int> n{0};
  TestHttpServer server([&](const testing::ReceivedRequest&) {
    n.fetch_add(1);
    Reply r = Status(201, "{}");
    r.close_after = true;  // every connection ends after one answer, unannounced
    return r;
  });
  Harness h(server.url());
  for (int i = 0; i < 3; ++i) {
    auto got = h.client->Do(Call("POST", "/b"));
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(got->status, 201);
  }
  EXPECT_EQ(n.load(), 3) << "each write reached the server once";
  EXPECT_EQ(server.connections(), 3);
  EXPECT_TRUE(h.waits.empty()) << "a stale kept-alive connection costs no attempt and no backoff";
}

TEST(HttpRestClientTest, WritesReadChunkedAnswersAndRefuseMalformedOnes) {
  std::mutex mu;
  std::string answer;
  TestHttpServer server([&](const testing::ReceivedRequest&) {
    std::lock_guard<std::mutex> lock(mu);
    Reply r;
    r.raw = answer;
    return r;
  });
  Harness h(server.url());
  auto answer_with = [&](std::string wire) {
    std::lock_guard<std::mutex> lock(mu);
    answer = std::move(wire);
  };
  answer_with(
      "HTTP/1.1 201 Created\r\nTransfer-Encoding: "
      "chunked\r\n\r\n3\r\n{\"a\r\n4\r\n\":1}\r\n0\r\n\r\n");
  auto got = h.client->Do(Call("POST", "/c"));
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->status, 201);
  EXPECT_EQ(got->body, R"({"a":1})");

  answer_with("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokEXTRA");
  got = h.client->Do(Call("POST", "/c"));
  ASSERT_FALSE(got.ok());
  EXPECT_THAT(std::string(got.status().message()),
              HasSubstr("POST /c: malformed answer: unexpected bytes after the response"));
  answer_with("SSH-2.0-OpenSSH_9.2\r\n\r\n");
  got = h.client->Do(Call("POST", "/c"));
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(std::string(got.status().message()), HasSubstr("malformed status line"));
  EXPECT_EQ(server.requests().size(), 3u) << "a malformed answer is not retried";
}

// A server that holds every request until `release` is set (or 10 s pass).
struct SlowServer {
  std::atomic<bool> release{false};
  TestHttpServer server{[this](const testing::ReceivedRequest&) {
    for (int i = 0; i < 1000 && !release.load(); ++i) std::this_thread::sleep_for(milliseconds(10));
    return Status(200);
  }};
  ~SlowServer() { release = true; }
  bool WaitForRequest() {
    for (int i = 0; i < 1000 && server.requests().empty(); ++i) {
      std::this_thread::sleep_for(milliseconds(10));
    }
    return !server.requests().empty();
  }
};

TEST(HttpRestClientTest, WritesTimeOutAndCancelAbortsThem) {
  {
    SlowServer slow;
    HttpClientOptions opts = TestOptions();
    opts.max_attempts = 1;
    Harness h(slow.server.url(), opts);
    Request r = Call("POST", "/slow");
    r.timeout = milliseconds(200);
    auto got = h.client->Do(r);
    ASSERT_FALSE(got.ok());
    EXPECT_EQ(got.status().code(), StatusCode::kUnavailable);
    EXPECT_THAT(std::string(got.status().message()), HasSubstr("POST /slow: timed out"));
  }
  SlowServer slow;
  Harness h(slow.server.url());
  common::Status result;
  std::thread t([&] { result = h.client->Do(Call("POST", "/slow")).status(); });
  ASSERT_TRUE(slow.WaitForRequest());
  h.client->Cancel();
  t.join();  // within about a second (the poll period)
  EXPECT_EQ(result.code(), StatusCode::kUnavailable);
  EXPECT_THAT(std::string(result.message()), HasSubstr("cancelled"));
  EXPECT_EQ(slow.server.requests().size(), 1u) << "a cancelled write is not retried";
}

TEST(HttpRestClientTest, WritesUseTheCurrentClientCertificate) {
  auto ca = testing::MakeTestCa("cluster-ca");
  auto server_cert = testing::MakeTestLeaf(ca, "kube-apiserver", /*server=*/true);
  auto first = testing::MakeTestLeaf(ca, "first", false);
  auto second = testing::MakeTestLeaf(ca, "second", false);
  testing::TestHttpServer server(
      [](const testing::ReceivedRequest& r) { return Status(200, r.client_cert_cn); },
      testing::ServerTls{server_cert.cert_pem + ca.cert_pem, server_cert.key_pem, ca.cert_pem});
  class Switching final : public CredentialProvider {
   public:
    common::StatusOr<Credentials> Get() override {
      std::lock_guard<std::mutex> lock(mu);
      return current;
    }
    bool OnUnauthorized() override { return false; }
    std::string Describe() const override { return "switching"; }
    std::mutex mu;
    Credentials current;
  };
  auto creds = std::make_unique<Switching>();
  Switching* sw = creds.get();
  sw->current = Credentials{"", first.cert_pem, first.key_pem};
  ClusterConfig config;
  config.ca_pem = ca.cert_pem;
  Harness h(server.url(), TestOptions(), std::move(creds), config);
  EXPECT_EQ(h.client->Do(Call("POST", "/a"))->body, "first");
  EXPECT_EQ(h.client->Do(Call("POST", "/a"))->body, "first");
  EXPECT_EQ(server.connections(), 1);
  {
    std::lock_guard<std::mutex> lock(sw->mu);
    sw->current = Credentials{"", second.cert_pem, second.key_pem};
  }
  EXPECT_EQ(h.client->Do(Call("POST", "/a"))->body, "second")
      << "a connection opened with the old certificate is not reused";
  EXPECT_EQ(server.connections(), 2);
}

TEST(HttpRestClientTest, CreateRequiresAWaitFunction) {
  common::FakeClock clock;
  common::Random random;
  ClusterConfig cfg;
  cfg.server = "http://127.0.0.1:1";
  auto got =
      HttpRestClient::Create(cfg, TestOptions(), HttpClientDeps{clock, random, nullptr, nullptr});
  EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument);
}

TEST(HttpRestClientTest, ServerPathPrefixIsKept) {
  TestHttpServer server([](const testing::ReceivedRequest&) { return Status(200); });
  Harness h(server.url() + "/k8s/clusters/c-1/");
  ASSERT_TRUE(h.client->Do(Get("/api/v1/nodes")).ok());
  EXPECT_EQ(server.requests().at(0).target, "/k8s/clusters/c-1/api/v1/nodes");
}

TEST(EncodeQueryTest, EscapesEverythingButUnreserved) {
  EXPECT_EQ(EncodeQuery({}), "");
  EXPECT_EQ(EncodeQuery({{"a", "1"}, {"b", ""}}), "?a=1&b=");
  EXPECT_EQ(EscapeQueryComponent("AZaz09-._~ +=&%/\xc3\xa9"), "AZaz09-._~%20%2B%3D%26%25%2F%C3%A9");
}

// ---------------------------------------------------------------------------------------------
// The writer over HTTP, end to end.

TEST(KubeApiClientOverHttpTest, BindsAPod) {
  TestHttpServer server([](const testing::ReceivedRequest&) {
    return Status(201, R"({"kind":"Status","apiVersion":"v1","status":"Success","code":201})");
  });
  Harness h(server.url());
  KubeApiClient api(*h.client, h.clock);
  api::Pod pod;
  pod.meta.name = "train-0";
  pod.meta.namespace_ = "ml";
  pod.meta.uid = "u-1";
  common::Status s = api.BindPod(pod, "gpu-node-7", {{"gpusched.io/gpus", "0,1"}});
  ASSERT_TRUE(s.ok()) << s.ToString();
  auto reqs = server.requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].method, "POST");
  EXPECT_EQ(reqs[0].target, "/api/v1/namespaces/ml/pods/train-0/binding");
  EXPECT_EQ(reqs[0].headers["content-type"], "application/json");
  auto body = api::ParseJson(reqs[0].body, "body");
  ASSERT_TRUE(body.ok());
  EXPECT_EQ(*body, boost::json::parse(R"({"apiVersion":"v1","kind":"Binding",
      "metadata":{"name":"train-0","namespace":"ml","uid":"u-1","annotations":{"gpusched.io/gpus":"0,1"}},
      "target":{"apiVersion":"v1","kind":"Node","name":"gpu-node-7"}})"));
}

}  // namespace
}  // namespace gpusched::kube::client

namespace gpusched::kube::client {
namespace {

// Request counts by verb and code, latencies and rate-limiter waits reach the metrics registry.
TEST(HttpRestClientMetricsTest, CountsEveryAttemptByVerbAndCode) {
  int calls = 0;
  TestHttpServer server([&](const testing::ReceivedRequest&) {
    return ++calls == 1 ? Status(503) : Status(200, "{}");
  });
  metrics::Registry registry;
  metrics::ApiClientMetrics m(registry);
  common::FakeClock clock;
  common::Random random{1};
  HttpClientOptions opts = TestOptions();
  opts.qps = 1000;
  opts.burst = 10;
  HttpClientDeps deps{clock, random, [&clock](Duration d) { clock.Advance(d); }, nullptr};
  deps.metrics = &m;
  ClusterConfig config;
  config.server = server.url();
  config.source = "test";
  auto c = HttpRestClient::Create(std::move(config), opts, std::move(deps));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  auto r = (*c)->Do(Get("/api/v1/nodes"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  std::map<std::string, double> counts;
  uint64_t timed = 0, waited = 0;
  for (const auto& f : registry.Gather()) {
    for (const auto& s : f.series) {
      if (f.name == "gpusched_api_client_requests_total")
        counts[s.label_values[0] + " " + s.label_values[1]] = s.value;
      if (f.name == "gpusched_api_client_request_duration_seconds") timed += s.histogram.count;
      if (f.name == "gpusched_api_client_rate_limiter_wait_seconds") waited += s.histogram.count;
    }
  }
  EXPECT_EQ(counts, (std::map<std::string, double>{{"GET 200", 1}, {"GET 503", 1}}));
  EXPECT_EQ(timed, 2u);
  EXPECT_EQ(waited, 2u);  // the limiter is consulted once per attempt
}

}  // namespace
}  // namespace gpusched::kube::client
