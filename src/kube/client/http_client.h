// SPDX-License-Identifier: Apache-2.0
// HttpRestClient: kube::RestClient over libcurl, for a real API server.
//
//   Do/Stream ──► RateLimiter (qps/burst, every attempt) ──► CredentialProvider::Get
//        ▲                                                          │
//        └── backoff / Retry-After ◄── 429, 500/502/503/504, ◄── libcurl (HTTP/1.1 keep-alive over
//            401 → OnUnauthorized, once                          TLS; HTTP/2 by option)
//
// Two transports under the same retry loop:
// - Reads (GET and HEAD through Do: gets and LISTs) go through libcurl's easy interface, which
//   asks for gzip and is the general HTTP client.
// - Writes (POST, PUT, PATCH, DELETE through Do) and watches (Stream) go over the lean path:
//   libcurl only opens the connection (TCP, TLS with the same verification, CONNECT_ONLY) and the
//   client writes the HTTP/1.1 request and reads the answer itself (Http1ResponseParser) on that
//   kept-alive connection: one send, one poll and one receive per request (per watch event for
//   a stream), where the easy interface spent about eight system calls and most of the client's
//   CPU on a binding or event POST. A request on a reused connection that fails before any answer
//   byte (the server closed it while idle) is sent once more on a fresh connection within the
//   same attempt. Used unless HTTP/2 is asked for or a proxy is configured.
//
// TLS: the cluster CA from memory (CURLOPT_CAINFO_BLOB; only that CA is trusted when given, else
// the system store), client certificate and key from memory (PEM). Verification is on unless the
// config says insecure-skip-tls-verify, which is logged as a warning at creation.
//
// Retries: up to max_attempts (default 5) on connection errors, 429 and 500/502/503/504, with
// exponential backoff and jitter, or the server's Retry-After (seconds) when it sends one. Every
// verb is retried, including POST. That is safe for what gpusched sends: a repeated pods/binding
// POST answers 409 Conflict, which KubeApiClient::BindPod resolves by reading the pod back; a
// repeated events POST at worst records one event twice; our PATCHes set absolute values.
//
// Streams (watches) retry only until the first line was delivered; after that a broken stream
// returns kUnavailable and the caller re-watches from its last resourceVersion.
//
// Limits: a response body above max_response_bytes (default 64 MiB, counted after gzip
// decoding) is kResourceExhausted; so is a request body above max_request_bytes or a single
// watch line above max_response_bytes.
//
// Security: tokens and keys are never logged (libcurl verbose mode is never enabled, headers are
// not logged); per-request logging at V(6) shows method, path, status and latency only. A token
// or content type with a line break is refused (kInvalidArgument) rather than sent.
// Environment proxies are ignored; kubeconfig proxy-url is honoured.
//
// Thread safety: Do and Stream may be called from any number of threads; each call uses its own
// curl easy handle (or lean-path connection) from a small pool, which keeps connections alive
// between calls. Cancel() may
// be called from any thread (a signal handler must not call it). The client must outlive every
// call in flight.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "src/common/clock.h"
#include "src/common/mutex.h"
#include "src/common/random.h"
#include "src/common/status.h"
#include "src/kube/client/auth.h"
#include "src/kube/client/encoding.h"  // EncodeQuery, EscapeQueryComponent
#include "src/kube/client/kubeconfig.h"
#include "src/kube/client/rate_limiter.h"
#include "src/kube/rest_client.h"
#include "src/metrics/component_metrics.h"

namespace gpusched::kube::client {

// Initialises libcurl once per process (curl_global_init is not thread-safe: cmd/ calls this
// before starting threads; HttpRestClient::Create calls it too, harmlessly). Fails if the linked
// libcurl lacks TLS support or is older than 7.85 (in-memory certificates, CURLOPT_PROTOCOLS_STR).
common::Status InitCurlOnce();

// "gpusched/0.1.0".
std::string DefaultUserAgent();

class Http1ResponseParser;  // http1_response.h

namespace internal {
struct Transfer;  // one attempt's state, shared with libcurl callbacks (http_client.cc)
}  // namespace internal

struct HttpClientOptions {
  std::string user_agent = DefaultUserAgent();
  // clientConnection.qps / burst (kube-scheduler defaults). qps <= 0 disables the limiter.
  double qps = 50;
  int burst = 100;
  // Attempts per call, the first included. >= 1.
  int max_attempts = 5;
  // Backoff before retry n (n = 1, 2, ...): min(max_backoff, initial_backoff * 2^(n-1)), then a
  // uniform jitter in [50%, 100%] of that.
  common::Duration initial_backoff = std::chrono::milliseconds(200);
  common::Duration max_backoff = std::chrono::seconds(10);
  // A Retry-After above this is cut to it.
  common::Duration max_retry_after = std::chrono::seconds(30);
  size_t max_response_bytes = size_t{64} << 20;
  size_t max_request_bytes = size_t{16} << 20;
  common::Duration connect_timeout = std::chrono::seconds(10);
  // TCP keepalive idle time and interval: detects dead watch connections.
  common::Duration keepalive = std::chrono::seconds(30);
  // HTTP/2 (negotiated by ALPN) instead of HTTP/1.1. Off by default: every curl handle has its
  // own connection, so HTTP/2 multiplexes nothing here and its framing costs CPU: a POST took
  // 0.21-0.23 ms of client CPU over HTTP/2 and 0.15 ms over HTTP/1.1 keep-alive
  // (bench/api_bench.cc, BENCHMARKS.md).
  bool http2 = false;
  // Idle curl handles (and their connections) kept for reuse. At least the number of threads
  // that call Do at once (gpusched scheduler: up to 32 binding threads, plus informers), so that a
  // busy client does not open a new TLS connection per request.
  size_t max_idle_handles = 40;
};

// Collaborators. `wait` (required) blocks for rate limiting and backoff (cmd/: a sleep that
// returns early on shutdown). `credentials` null = anonymous. `random` drives backoff jitter
// (seeded in tests); the client serialises its use.
struct HttpClientDeps {
  const common::Clock& clock;
  common::Random& random;
  WaitFn wait;
  CredentialProviderPtr credentials;
  // Request counts, latencies and rate-limiter waits (null: none). Must outlive the client.
  metrics::ApiClientMetrics* metrics = nullptr;
};

class HttpRestClient final : public RestClient {
 public:
  // Validates the config (server URL; CA, client certificate and key parse and match) and builds
  // the client. Logs a warning when TLS verification is disabled or credentials would travel
  // over plain http.
  static common::StatusOr<std::unique_ptr<HttpRestClient>> Create(ClusterConfig config,
                                                                  HttpClientOptions options,
                                                                  HttpClientDeps deps);
  ~HttpRestClient() override;
  HttpRestClient(const HttpRestClient&) = delete;
  HttpRestClient& operator=(const HttpRestClient&) = delete;

  common::StatusOr<Response> Do(const Request& request) override;
  common::Status Stream(const Request& request,
                        const std::function<bool(std::string_view line)>& on_line) override;

  // Aborts every call in flight (within about a second: both transports check the flag at least
  // once per second) and makes every later call fail with kUnavailable. For shutdown; sticky.
  void Cancel();
  bool cancelled() const { return cancelled_.load(); }

  const ClusterConfig& config() const { return config_; }
  std::string Describe() const;

 private:
  HttpRestClient(ClusterConfig config, HttpClientOptions options, HttpClientDeps deps);

  struct RawConnection;  // a CONNECT_ONLY curl handle and its socket (http_client.cc)

  common::Status Init();
  // Connection-level options shared by both transports (TLS, timeouts, proxy, keepalive).
  bool SetConnectionOptions(void* curl, const Credentials& creds, void* connect_to) const;
  // One attempt. A transport failure is the returned Status; any HTTP answer is in `t`.
  // `what`: "METHOD /path", for messages.
  common::Status Perform(const Request& request, const std::string& what, const Credentials& creds,
                         internal::Transfer& t);
  // One attempt over the lean path (writes and watches): the steps below, on a kept-alive
  // connection or a fresh one.
  common::Status PerformRaw(const Request& request, const std::string& what,
                            const Credentials& creds, internal::Transfer& t);
  struct RawDeadline {
    std::chrono::steady_clock::time_point at;
    bool set = false;  // false: no deadline
  };
  // The request as HTTP/1.1 bytes.
  std::string RawRequestBytes(const Request& request, const Credentials& creds) const;
  common::Status SendRaw(const RawConnection& c, std::string_view message,
                         const RawDeadline& deadline, const std::string& what) const;
  // Feeds what arrives to `parser` until it is no longer kNeedMore; an error is a transport one.
  common::Status ReceiveRaw(const RawConnection& c, Http1ResponseParser& parser,
                            const RawDeadline& deadline, const std::string& what) const;
  // Releases `c` (kept only after a complete keep-alive answer) and turns the parse and `io`
  // (the send's and receive's status) into the attempt's result, the answer into `t`. nullopt:
  // `c` was a kept-alive connection the server had closed; the caller tries a fresh one.
  std::optional<common::Status> FinishRaw(RawConnection* c, Http1ResponseParser& parser,
                                          const common::Status& io, bool reused,
                                          const std::string& what, internal::Transfer& t);
  // Opens a connection (TCP, TLS); `transient` says whether a failure may clear on retry.
  common::StatusOr<RawConnection*> ConnectRaw(const Credentials& creds, const std::string& what,
                                              bool& transient);
  RawConnection* AcquireRaw(const Credentials& creds);
  void ReleaseRaw(RawConnection* c, bool reusable);
  // Waits until the socket is ready for `events` (poll), the deadline passes or Cancel().
  common::Status WaitSocket(const RawConnection& c, short events, const RawDeadline& deadline,
                            const std::string& what) const;
  // One attempt of Execute over either transport (Perform or PerformRaw), counted in the
  // metrics; `attempt` (1, 2, ...) is for the log.
  common::Status Attempt(const Request& request, const std::string& what, const Credentials& creds,
                         int attempt, internal::Transfer& t);
  // The credentials for one attempt; an error if a header value in them or in `request` holds a
  // line break.
  common::StatusOr<Credentials> AttemptCredentials(const Request& request, const std::string& what);
  // Waits for the rate limiter, timing the wait in the metrics.
  void AwaitRateLimiter();
  // Shared retry loop of Do and Stream.
  common::StatusOr<Response> Execute(const Request& request,
                                     const std::function<bool(std::string_view)>* on_line);
  common::Duration Backoff(int retry);
  common::Status CheckRequest(const Request& request) const;
  void* AcquireHandle();
  void ReleaseHandle(void* handle);

  const ClusterConfig config_;
  const HttpClientOptions options_;
  const common::Clock& clock_;
  const WaitFn wait_;
  const CredentialProviderPtr credentials_;
  metrics::ApiClientMetrics* const metrics_;
  RateLimiter limiter_;
  std::string base_url_;     // scheme://host:port/prefix, the host replaced by tls_server_name
  std::string connect_to_;   // CURLOPT_CONNECT_TO entry when tls_server_name is set
  std::string host_header_;  // lean path: "host:port" (tls_server_name when set)
  std::string path_prefix_;  // lean path: the server URL's path, without a trailing '/'
  bool lean_path_ = false;   // writes and watches take the lean path
  std::atomic<bool> cancelled_{false};

  common::Mutex random_mu_;
  common::Random& random_ GPUSCHED_GUARDED_BY(random_mu_);
  common::Mutex pool_mu_;
  std::vector<void*> idle_ GPUSCHED_GUARDED_BY(pool_mu_);  // CURL* handles
  std::vector<RawConnection*> idle_raw_ GPUSCHED_GUARDED_BY(pool_mu_);
};

}  // namespace gpusched::kube::client
