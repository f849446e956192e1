// SPDX-License-Identifier: Apache-2.0
#include "src/kube/client/http_client.h"

#include <curl/curl.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <mutex>

#include "src/common/backoff.h"
#include "src/common/logging.h"
#include "src/common/strings.h"
#include "src/kube/client/encoding.h"
#include "src/kube/client/http1_response.h"
#include "src/kube/client/http_client_internal.h"
#include "src/kube/client/pem.h"

#ifndef GPUSCHED_VERSION
#define GPUSCHED_VERSION "dev"
#endif

namespace gpusched::kube::client {

using internal::Append;
using internal::CurlFailure;
using internal::SlistPtr;

namespace {

using common::Duration;

long ToMillis(Duration d) {
  return static_cast<long>(std::chrono::duration_cast<std::chrono::milliseconds>(d).count());
}

bool RetryableStatus(int status) {
  return status == 429 || status == 500 || status == 502 || status == 503 || status == 504;
}

// Transport failures worth another attempt: the server may answer next time.
bool RetryableCurlCode(CURLcode code) {
  static constexpr CURLcode kRetryable[] = {CURLE_COULDNT_RESOLVE_HOST,
                                            CURLE_COULDNT_RESOLVE_PROXY,
                                            CURLE_COULDNT_CONNECT,
                                            CURLE_OPERATION_TIMEDOUT,
                                            CURLE_SEND_ERROR,
                                            CURLE_RECV_ERROR,
                                            CURLE_GOT_NOTHING,
                                            CURLE_PARTIAL_FILE,
                                            CURLE_HTTP2,
                                            CURLE_HTTP2_STREAM,
                                            CURLE_SSL_CONNECT_ERROR,
                                            CURLE_AGAIN};
  return std::find(std::begin(kRetryable), std::end(kRetryable), code) != std::end(kRetryable);
}

bool ValidMethod(std::string_view m) {
  return m == "GET" || m == "POST" || m == "PUT" || m == "PATCH" || m == "DELETE" || m == "HEAD";
}

}  // namespace

namespace internal {

common::Status CurlFailure(const std::string& what, CURLcode rc, const char* errbuf, bool cancelled,
                           bool& transient) {
  transient = false;
  if (cancelled) return common::UnavailableError(what + ": cancelled (client shutting down)");
  std::string msg = what + ": " + (errbuf[0] != '\0' ? errbuf : curl_easy_strerror(rc));
  if (rc == CURLE_PEER_FAILED_VERIFICATION || rc == CURLE_SSL_CACERT_BADFILE) {
    msg += " (check certificate-authority and the server name)";
  }
  transient = RetryableCurlCode(rc);
  return common::UnavailableError(std::move(msg));
}

bool Append(SlistPtr& list, const std::string& line) {
  curl_slist* next = curl_slist_append(list.get(), line.c_str());
  if (next == nullptr) return false;
  list.release();
  list.reset(next);
  return true;
}

void StreamLines(Http1ResponseParser& parser, Transfer& t) {
  t.lines_delivered = false;
  t.partial.clear();
  t.body.clear();
  parser.set_body_sink([&t, &parser](std::string_view data) {
    t.status = parser.status();
    return t.OnData(data.data(), data.size()) == data.size();
  });
}

}  // namespace internal

// ---------------------------------------------------------------------------------------------
// Free functions

common::Status InitCurlOnce() {
  static std::once_flag once;
  static CURLcode init_code = CURLE_OK;
  std::call_once(once, [] { init_code = curl_global_init(CURL_GLOBAL_DEFAULT); });
  if (init_code != CURLE_OK) {
    return common::InternalError(std::string("curl_global_init: ") + curl_easy_strerror(init_code));
  }
  const curl_version_info_data* info = curl_version_info(CURLVERSION_NOW);
  if (info == nullptr || (info->features & CURL_VERSION_SSL) == 0) {
    return common::FailedPreconditionError("libcurl was built without TLS support");
  }
  if (info->version_num < 0x075500) {  // 7.85.0: CURLOPT_PROTOCOLS_STR (blobs: 7.77)
    return common::FailedPreconditionError(std::string("libcurl ") + info->version +
                                           " is too old: 7.85 or newer is needed");
  }
  return common::Status::Ok();
}

std::string DefaultUserAgent() { return std::string("gpusched/") + GPUSCHED_VERSION; }

// ---------------------------------------------------------------------------------------------
// libcurl's callbacks into the attempt's Transfer (http_client_internal.h).

namespace {

size_t WriteCallback(char* ptr, size_t size, size_t nmemb, void* userdata) {
  return static_cast<internal::Transfer*>(userdata)->OnData(ptr, size * nmemb);
}

size_t HeaderCallback(char* ptr, size_t size, size_t nmemb, void* userdata) {
  static_cast<internal::Transfer*>(userdata)->OnHeader(std::string_view(ptr, size * nmemb));
  return size * nmemb;
}

int XferInfoCallback(void* userdata, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* t = static_cast<internal::Transfer*>(userdata);
  return t->cancelled->load(std::memory_order_relaxed) ? 1 : 0;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// HttpRestClient

HttpRestClient::HttpRestClient(ClusterConfig config, HttpClientOptions options, HttpClientDeps deps)
    : config_(std::move(config)),
      options_(std::move(options)),
      clock_(deps.clock),
      wait_(deps.wait),
      credentials_(std::move(deps.credentials)),
      metrics_(deps.metrics),
      limiter_(options_.qps, options_.burst, deps.clock, deps.wait),
      random_(deps.random) {}

HttpRestClient::~HttpRestClient() {
  common::MutexLock lock(pool_mu_);
  for (void* h : idle_) curl_easy_cleanup(h);
  idle_.clear();
  for (RawConnection* c : idle_raw_) {
    curl_easy_cleanup(c->curl);
    delete c;
  }
  idle_raw_.clear();
}

common::StatusOr<std::unique_ptr<HttpRestClient>> HttpRestClient::Create(ClusterConfig config,
                                                                         HttpClientOptions options,
                                                                         HttpClientDeps deps) {
  GPUSCHED_RETURN_IF_ERROR(InitCurlOnce());
  if (!deps.wait) {
    return common::InvalidArgumentError(
        "HttpClientDeps.wait is required (rate limiting and backoff)");
  }
  if (options.max_attempts < 1) {
    return common::InvalidArgumentError("max_attempts: must be at least 1, got " +
                                        std::to_string(options.max_attempts));
  }
  if (!config.ca_pem.empty()) {
    GPUSCHED_RETURN_IF_ERROR(
        CheckPemCertificates(config.ca_pem, "certificate-authority").WithContext(config.source));
  }
  if (!config.client_cert_pem.empty() || !config.client_key_pem.empty()) {
    GPUSCHED_RETURN_IF_ERROR(CheckPemKeyPair(config.client_cert_pem, config.client_key_pem,
                                             "client-certificate", "client-key")
                                 .WithContext(config.source));
  }
  std::unique_ptr<HttpRestClient> client(
      new HttpRestClient(std::move(config), std::move(options), std::move(deps)));
  GPUSCHED_RETURN_IF_ERROR(client->Init());
  return client;
}

common::Status HttpRestClient::Init() {
  CURLU* url = curl_url();
  if (url == nullptr) return common::InternalError("curl_url: out of memory");
  std::unique_ptr<CURLU, decltype(&curl_url_cleanup)> url_guard(url, &curl_url_cleanup);
  if (curl_url_set(url, CURLUPART_URL, config_.server.c_str(), 0) != CURLUE_OK) {
    return common::InvalidArgumentError(
        config_.source + ": server: " + common::Quote(config_.server) + " is not a valid URL");
  }
  auto part = [&](CURLUPart which, unsigned flags) -> std::string {
    char* p = nullptr;
    if (curl_url_get(url, which, &p, flags) != CURLUE_OK || p == nullptr) return "";
    std::string s(p);
    curl_free(p);
    return s;
  };
  std::string scheme = part(CURLUPART_SCHEME, 0);
  std::string host = part(CURLUPART_HOST, 0);
  std::string port = part(CURLUPART_PORT, CURLU_DEFAULT_PORT);
  std::string path = part(CURLUPART_PATH, 0);
  if ((scheme != "https" && scheme != "http") || host.empty()) {
    return common::InvalidArgumentError(config_.source +
                                        ": server: " + common::Quote(config_.server) +
                                        " must be an http(s)://host[:port] URL");
  }
  if (!part(CURLUPART_QUERY, 0).empty() || !part(CURLUPART_USER, 0).empty()) {
    return common::InvalidArgumentError(config_.source +
                                        ": server: must not carry a query or user info");
  }
  while (!path.empty() && path.back() == '/') path.pop_back();
  std::string url_host = host;
  if (!config_.tls_server_name.empty()) {
    // Connect to the configured host but verify (and send SNI for) tls-server-name.
    url_host = config_.tls_server_name;
    connect_to_ = config_.tls_server_name + ":" + port + ":" + host + ":" + port;
  }
  base_url_ = scheme + "://" + url_host + ":" + port + path;
  host_header_ = url_host + ":" + port;
  path_prefix_ = path;
  lean_path_ = !options_.http2 && config_.proxy_url.empty();

  if (config_.insecure_skip_tls_verify) {
    spdlog::warn(
        "TLS VERIFICATION IS DISABLED for {} (insecure-skip-tls-verify): the API server's "
        "identity is not checked and credentials can be intercepted",
        config_.server);
  }
  if (scheme == "http" && credentials_ != nullptr) {
    spdlog::warn("credentials ({}) will be sent to {} over plain http", credentials_->Describe(),
                 config_.server);
  }
  if (common::V(1)) spdlog::info("API client: {}", Describe());
  return common::Status::Ok();
}

std::string HttpRestClient::Describe() const {
  std::string out = config_.Describe();
  out += ", qps " + std::to_string(options_.qps) + " burst " + std::to_string(options_.burst);
  if (credentials_ != nullptr) out += ", credentials: " + credentials_->Describe();
  return out;
}

void HttpRestClient::Cancel() {
  if (!cancelled_.exchange(true)) spdlog::info("API client cancelled: aborting requests in flight");
}

void* HttpRestClient::AcquireHandle() {
  {
    common::MutexLock lock(pool_mu_);
    if (!idle_.empty()) {
      void* h = idle_.back();
      idle_.pop_back();
      return h;
    }
  }
  return curl_easy_init();
}

void HttpRestClient::ReleaseHandle(void* handle) {
  if (handle == nullptr) return;
  // Reset drops every option (and with them the credentials); live connections stay cached.
  curl_easy_reset(handle);
  {
    common::MutexLock lock(pool_mu_);
    if (idle_.size() < options_.max_idle_handles) {
      idle_.push_back(handle);
      return;
    }
  }
  curl_easy_cleanup(handle);
}

common::Duration HttpRestClient::Backoff(int retry) {
  const Duration base =
      common::ExponentialBackoff(options_.initial_backoff, options_.max_backoff, retry);
  double u;
  {
    common::MutexLock lock(random_mu_);
    u = random_.NextDouble();
  }
  return std::chrono::duration_cast<Duration>(base * (0.5 + 0.5 * u));
}

common::Status HttpRestClient::CheckRequest(const Request& request) const {
  if (!ValidMethod(request.method)) {
    return common::InvalidArgumentError("unsupported HTTP method " + common::Quote(request.method));
  }
  if (request.path.empty() || request.path.front() != '/') {
    return common::InvalidArgumentError("request path " + common::Quote(request.path) +
                                        " must start with '/'");
  }
  for (char ch : request.path) {
    auto c = static_cast<unsigned char>(ch);
    if (c <= 0x20 || c >= 0x7f || c == '?' || c == '#') {
      return common::InvalidArgumentError(
          "request path " + common::Quote(request.path) +
          " has a character that needs escaping (use Request::query)");
    }
  }
  if (request.body.size() > options_.max_request_bytes) {
    return common::ResourceExhaustedError(request.method + " " + request.path +
                                          ": request body of " +
                                          std::to_string(request.body.size()) + " bytes exceeds " +
                                          std::to_string(options_.max_request_bytes));
  }
  return common::Status::Ok();
}

bool HttpRestClient::SetConnectionOptions(void* handle, const Credentials& creds,
                                          void* connect_to) const {
  CURL* curl = static_cast<CURL*>(handle);
  bool ok = true;
  auto set = [&](CURLoption opt, auto value) {
    if (curl_easy_setopt(curl, opt, value) != CURLE_OK) ok = false;
  };
  set(CURLOPT_NOSIGNAL, 1L);
  set(CURLOPT_PROTOCOLS_STR, "http,https");
  set(CURLOPT_HTTP_VERSION, options_.http2 ? static_cast<long>(CURL_HTTP_VERSION_2TLS)
                                           : static_cast<long>(CURL_HTTP_VERSION_1_1));
  set(CURLOPT_CONNECTTIMEOUT_MS, ToMillis(options_.connect_timeout));
  set(CURLOPT_TCP_KEEPALIVE, 1L);
  long keepalive_s = std::max<long>(1, ToMillis(options_.keepalive) / 1000);
  set(CURLOPT_TCP_KEEPIDLE, keepalive_s);
  set(CURLOPT_TCP_KEEPINTVL, keepalive_s);
  set(CURLOPT_PROXY, config_.proxy_url.c_str());  // "" = no proxy, whatever the environment says
  if (connect_to != nullptr) set(CURLOPT_CONNECT_TO, static_cast<curl_slist*>(connect_to));

  // TLS.
  if (config_.insecure_skip_tls_verify) {
    set(CURLOPT_SSL_VERIFYPEER, 0L);
    set(CURLOPT_SSL_VERIFYHOST, 0L);
  } else {
    set(CURLOPT_SSL_VERIFYPEER, 1L);
    set(CURLOPT_SSL_VERIFYHOST, 2L);
    if (!config_.ca_pem.empty()) {
      curl_blob ca{const_cast<char*>(config_.ca_pem.data()), config_.ca_pem.size(), CURL_BLOB_COPY};
      set(CURLOPT_CAINFO_BLOB, &ca);
      set(CURLOPT_CAPATH, static_cast<const char*>(nullptr));  // trust only the cluster CA
    }
  }
  if (!creds.client_cert_pem.empty()) {
    curl_blob cert{const_cast<char*>(creds.client_cert_pem.data()), creds.client_cert_pem.size(),
                   CURL_BLOB_COPY};
    curl_blob key{const_cast<char*>(creds.client_key_pem.data()), creds.client_key_pem.size(),
                  CURL_BLOB_COPY};
    set(CURLOPT_SSLCERT_BLOB, &cert);
    set(CURLOPT_SSLCERTTYPE, "PEM");
    set(CURLOPT_SSLKEY_BLOB, &key);
    set(CURLOPT_SSLKEYTYPE, "PEM");
  }
  return ok;
}

common::Status HttpRestClient::Perform(const Request& request, const std::string& what,
                                       const Credentials& creds, internal::Transfer& t) {
  CURL* curl = t.curl;
  char errbuf[CURL_ERROR_SIZE] = {0};
  std::string url = base_url_ + request.path + EncodeQuery(request.query);

  SlistPtr headers;
  SlistPtr connect_to;
  bool ok = Append(headers, "Accept: application/json, */*") && Append(headers, "Expect:");
  bool has_body = !request.body.empty() || request.method == "POST" || request.method == "PUT" ||
                  request.method == "PATCH";
  if (has_body) ok = ok && Append(headers, "Content-Type: " + request.content_type);
  if (!creds.bearer_token.empty())
    ok = ok && Append(headers, "Authorization: Bearer " + creds.bearer_token);
  if (!connect_to_.empty()) ok = ok && Append(connect_to, connect_to_);
  if (!ok) return common::InternalError("curl_slist_append: out of memory");

  auto set = [&](CURLoption opt, auto value) {
    CURLcode rc = curl_easy_setopt(curl, opt, value);
    if (rc != CURLE_OK) ok = false;
  };
  ok = SetConnectionOptions(curl, creds, connect_to.get());
  set(CURLOPT_ERRORBUFFER, errbuf);
  set(CURLOPT_URL, url.c_str());
  set(CURLOPT_FOLLOWLOCATION, 0L);
  set(CURLOPT_USERAGENT, options_.user_agent.c_str());
  set(CURLOPT_ACCEPT_ENCODING, "");  // every encoding libcurl can decode (gzip, ...)
  set(CURLOPT_TIMEOUT_MS, static_cast<long>(request.timeout.count()));
  set(CURLOPT_HTTPHEADER, headers.get());

  // Method and body.
  if (request.method == "GET") {
    set(CURLOPT_HTTPGET, 1L);
  } else if (request.method == "HEAD") {
    set(CURLOPT_NOBODY, 1L);
  } else {
    if (request.method != "POST") set(CURLOPT_CUSTOMREQUEST, request.method.c_str());
    if (has_body) {
      set(CURLOPT_POSTFIELDS, request.body.data());
      set(CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
    }
  }

  // Callbacks.
  set(CURLOPT_WRITEFUNCTION, &WriteCallback);
  set(CURLOPT_WRITEDATA, &t);
  set(CURLOPT_HEADERFUNCTION, &HeaderCallback);
  set(CURLOPT_HEADERDATA, &t);
  set(CURLOPT_NOPROGRESS, 0L);
  set(CURLOPT_XFERINFOFUNCTION, &XferInfoCallback);
  set(CURLOPT_XFERINFODATA, &t);
  if (t.on_line == nullptr) {
    set(CURLOPT_MAXFILESIZE_LARGE, static_cast<curl_off_t>(options_.max_response_bytes));
  }
  if (!ok)
    return common::InternalError(
        "curl_easy_setopt failed: the linked libcurl lacks a needed option");

  CURLcode rc = curl_easy_perform(curl);
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &t.status);
  curl_easy_getinfo(curl, CURLINFO_HTTP_VERSION, &t.http_version);
  // The error buffer points into this frame: detach it before returning.
  std::string curl_error = errbuf[0] != '\0' ? errbuf : curl_easy_strerror(rc);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, static_cast<char*>(nullptr));
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, static_cast<curl_slist*>(nullptr));
  curl_easy_setopt(curl, CURLOPT_CONNECT_TO, static_cast<curl_slist*>(nullptr));

  if (rc == CURLE_OK) return common::Status::Ok();
  if (t.stopped) return common::Status::Ok();  // on_line asked to stop
  if (t.too_large || rc == CURLE_FILESIZE_EXCEEDED) {
    return common::ResourceExhaustedError(what + ": response larger than " +
                                          std::to_string(options_.max_response_bytes) + " bytes");
  }
  return CurlFailure(what, rc, curl_error.c_str(), cancelled_.load(), t.transient);
}

void HttpRestClient::AwaitRateLimiter() {
  if (metrics_ == nullptr || options_.qps <= 0) {
    limiter_.Accept();
    return;
  }
  common::TimePoint waited_from = clock_.Now();
  limiter_.Accept();
  metrics_->ObserveRateLimiterWait(
      std::chrono::duration<double>(clock_.Now() - waited_from).count());
}

common::StatusOr<Credentials> HttpRestClient::AttemptCredentials(const Request& request,
                                                                 const std::string& what) {
  Credentials creds;
  if (credentials_ != nullptr) {
    auto got = credentials_->Get();
    if (!got.ok()) return got.status().WithContext(what + ": credentials");
    creds = std::move(got).value();
  }
  // Header values go onto the wire as they are: a line break in one would end the header.
  for (std::string_view v :
       {std::string_view(creds.bearer_token), std::string_view(request.content_type)}) {
    if (v.find_first_of("\r\n") != std::string_view::npos) {
      return common::InvalidArgumentError(
          what + ": a credential token or content type contains a line break");
    }
  }
  return creds;
}

common::Status HttpRestClient::Attempt(const Request& request, const std::string& what,
                                       const Credentials& creds, int attempt,
                                       internal::Transfer& t) {
  const bool watch = t.on_line != nullptr;
  common::TimePoint start = clock_.Now();
  common::Status s;
  if (lean_path_ && (watch || (request.method != "GET" && request.method != "HEAD"))) {
    s = PerformRaw(request, what, creds, t);
  } else {
    t.curl = static_cast<CURL*>(AcquireHandle());
    if (t.curl == nullptr) return common::InternalError("curl_easy_init failed");
    s = Perform(request, what, creds, t);
    ReleaseHandle(t.curl);
    t.curl = nullptr;
  }
  const Duration took = clock_.Now() - start;
  if (metrics_ != nullptr) {
    // A watch's duration is its lifetime, not a latency: counted, not timed.
    metrics_->ObserveRequest(watch ? "WATCH" : request.method,
                             s.ok() ? static_cast<int>(t.status) : 0,
                             watch ? -1.0 : std::chrono::duration<double>(took).count());
  }
  if (common::V(6)) {
    spdlog::info("{} {} {} in {} ms (attempt {}, {})", request.method, request.path,
                 s.ok() ? std::to_string(t.status) : std::string("failed"),
                 std::chrono::duration_cast<std::chrono::milliseconds>(took).count(), attempt,
                 t.http_version == CURL_HTTP_VERSION_2_0 ? "HTTP/2" : "HTTP/1.1");
  }
  return s;
}

common::StatusOr<Response> HttpRestClient::Execute(
    const Request& request, const std::function<bool(std::string_view)>* on_line) {
  GPUSCHED_RETURN_IF_ERROR(CheckRequest(request));
  const std::string what = request.method + " " + request.path;
  bool reauthenticated = false;
  common::Status last_error;
  for (int attempt = 1; attempt <= options_.max_attempts; ++attempt) {
    if (cancelled_.load())
      return common::UnavailableError(what + ": cancelled (client shutting down)");
    AwaitRateLimiter();
    if (cancelled_.load())
      return common::UnavailableError(what + ": cancelled (client shutting down)");
    internal::Transfer t;
    t.on_line = on_line;
    t.max_body = options_.max_response_bytes;
    t.cancelled = &cancelled_;
    common::Status s;
    {
      GPUSCHED_ASSIGN_OR_RETURN(Credentials creds, AttemptCredentials(request, what));
      s = Attempt(request, what, creds, attempt, t);
    }  // the credentials live no longer than the attempt

    bool retryable_error = false;
    std::optional<Duration> delay;
    if (!s.ok()) {
      // Transport error. Streams that already delivered lines are not replayed.
      if (!t.transient || t.lines_delivered) return s;
      retryable_error = true;
      last_error = s;
    } else if (t.stopped || (on_line != nullptr && t.status >= 200 && t.status < 300)) {
      // Stream ended (server closed, or the caller stopped): deliver an unterminated last line.
      if (!t.stopped && !t.partial.empty()) {
        std::string line = std::move(t.partial);
        t.Deliver(line);
      }
      return Response{static_cast<int>(t.status), std::string()};
    } else if (t.status == 401 && credentials_ != nullptr && !reauthenticated &&
               credentials_->OnUnauthorized()) {
      reauthenticated = true;
      if (common::V(2))
        spdlog::info("{}: 401 Unauthorized, retrying with refreshed credentials", what);
      --attempt;  // a refreshed credential does not use up the retry budget
      continue;
    } else if (RetryableStatus(static_cast<int>(t.status)) &&
               (t.status != 429 || request.retry_too_many_requests)) {
      retryable_error = true;
      last_error = common::Status();
      if (t.retry_after) delay = std::min(*t.retry_after, options_.max_retry_after);
      if (attempt == options_.max_attempts) {
        return Response{static_cast<int>(t.status), std::move(t.body)};
      }
    } else {
      return Response{static_cast<int>(t.status), std::move(t.body)};
    }

    if (retryable_error && attempt < options_.max_attempts) {
      Duration d = delay ? *delay : Backoff(attempt);
      if (common::V(2)) {
        spdlog::info("{}: {}; retrying in {} ms (attempt {}/{})", what,
                     last_error.ok() ? std::to_string(t.status) : last_error.ToString(),
                     std::chrono::duration_cast<std::chrono::milliseconds>(d).count(), attempt + 1,
                     options_.max_attempts);
      }
      if (d > Duration(0) && wait_) wait_(d);
    }
  }
  return last_error.ok() ? common::UnavailableError(what + ": no attempt made") : last_error;
}

common::StatusOr<Response> HttpRestClient::Do(const Request& request) {
  return Execute(request, nullptr);
}

common::Status HttpRestClient::Stream(const Request& request,
                                      const std::function<bool(std::string_view line)>& on_line) {
  auto r = Execute(request, &on_line);
  if (!r.ok()) return r.status();
  if (!r->ok()) return StatusFromResponse(request, *r);
  return common::Status::Ok();
}

}  // namespace gpusched::kube::client
