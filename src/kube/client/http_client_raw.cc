// SPDX-License-Identifier: Apache-2.0
// HttpRestClient's lean path: raw HTTP/1.1 over a connection libcurl opened (CONNECT_ONLY).
#include <curl/curl.h>
#include <poll.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <string>

#include "src/kube/client/http_client.h"
#include "src/kube/client/http_client_internal.h"

namespace gpusched::kube::client {

using internal::Append;
using internal::CurlFailure;
using internal::StreamLines;

common::StatusOr<HttpRestClient::RawConnection*> HttpRestClient::ConnectRaw(
    const Credentials& creds, const std::string& what, bool& transient) {
  auto c = std::make_unique<RawConnection>();
  c->curl = curl_easy_init();
  if (c->curl == nullptr) return common::InternalError("curl_easy_init failed");
  std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> guard(c->curl, &curl_easy_cleanup);
  if (!connect_to_.empty() && !Append(c->connect_to, connect_to_)) {
    return common::InternalError("curl_slist_append: out of memory");
  }
  char errbuf[CURL_ERROR_SIZE] = {0};
  std::string url = base_url_ + "/";
  bool ok = SetConnectionOptions(c->curl, creds, c->connect_to.get());
  ok = ok && curl_easy_setopt(c->curl, CURLOPT_URL, url.c_str()) == CURLE_OK;
  ok = ok && curl_easy_setopt(c->curl, CURLOPT_CONNECT_ONLY, 1L) == CURLE_OK;
  ok = ok && curl_easy_setopt(c->curl, CURLOPT_ERRORBUFFER, errbuf) == CURLE_OK;
  if (!ok) {
    return common::InternalError(
        "curl_easy_setopt failed: the linked libcurl lacks a needed option");
  }
  CURLcode rc = curl_easy_perform(c->curl);
  curl_easy_setopt(c->curl, CURLOPT_ERRORBUFFER, static_cast<char*>(nullptr));
  if (rc != CURLE_OK) return CurlFailure(what, rc, errbuf, cancelled_.load(), transient);
  if (curl_easy_getinfo(c->curl, CURLINFO_ACTIVESOCKET, &c->fd) != CURLE_OK ||
      c->fd == CURL_SOCKET_BAD) {
    return common::InternalError(what + ": libcurl gave no socket for the connection");
  }
  c->client_cert_pem = creds.client_cert_pem;
  guard.release();
  return c.release();
}

HttpRestClient::RawConnection* HttpRestClient::AcquireRaw(const Credentials& creds) {
  RawConnection* stale = nullptr;
  RawConnection* found = nullptr;
  {
    common::MutexLock lock(pool_mu_);
    if (!idle_raw_.empty()) {
      found = idle_raw_.back();
      idle_raw_.pop_back();
      if (found->client_cert_pem != creds.client_cert_pem) std::swap(stale, found);
    }
  }
  if (stale != nullptr) ReleaseRaw(stale, false);  // opened with another client certificate
  return found;
}

void HttpRestClient::ReleaseRaw(RawConnection* c, bool reusable) {
  if (reusable) {
    common::MutexLock lock(pool_mu_);
    if (idle_raw_.size() < options_.max_idle_handles) {
      idle_raw_.push_back(c);
      return;
    }
  }
  curl_easy_cleanup(c->curl);
  delete c;
}

common::Status HttpRestClient::WaitSocket(const RawConnection& c, short events,
                                          const RawDeadline& deadline,
                                          const std::string& what) const {
  for (;;) {
    if (cancelled_.load())
      return common::UnavailableError(what + ": cancelled (client shutting down)");
    // Wake at least once a second to notice Cancel().
    long wait_ms = 1000;
    if (deadline.set) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline.at - std::chrono::steady_clock::now());
      if (left.count() <= 0) return common::DeadlineExceededError(what + ": timed out");
      wait_ms = std::min<long>(wait_ms, static_cast<long>(left.count()));
    }
    pollfd p{static_cast<int>(c.fd), events, 0};
    int n = poll(&p, 1, static_cast<int>(wait_ms));
    if (n > 0) return common::Status::Ok();  // ready, or an error/hang-up the next call reports
    if (n < 0 && errno != EINTR) {
      return common::UnavailableError(what + ": poll: " + std::strerror(errno));
    }
  }
}

std::string HttpRestClient::RawRequestBytes(const Request& request,
                                            const Credentials& creds) const {
  std::string message;
  message.reserve(384 + request.body.size());
  message.append(request.method).append(" ").append(path_prefix_).append(request.path);
  message.append(EncodeQuery(request.query)).append(" HTTP/1.1\r\nHost: ").append(host_header_);
  message.append("\r\nUser-Agent: ").append(options_.user_agent);
  message.append("\r\nAccept: application/json, */*\r\n");
  if (!request.body.empty() || request.method == "POST" || request.method == "PUT" ||
      request.method == "PATCH") {
    message.append("Content-Type: ").append(request.content_type);
    message.append("\r\nContent-Length: ").append(std::to_string(request.body.size()));
    message.append("\r\n");
  }
  if (!creds.bearer_token.empty()) {
    message.append("Authorization: Bearer ").append(creds.bearer_token).append("\r\n");
  }
  message.append("\r\n").append(request.body);
  return message;
}

common::Status HttpRestClient::SendRaw(const RawConnection& c, std::string_view message,
                                       const RawDeadline& deadline, const std::string& what) const {
  while (!message.empty()) {
    size_t sent = 0;
    CURLcode rc = curl_easy_send(c.curl, message.data(), message.size(), &sent);
    if (rc == CURLE_OK) {
      message.remove_prefix(sent);
    } else if (rc == CURLE_AGAIN) {
      GPUSCHED_RETURN_IF_ERROR(WaitSocket(c, POLLOUT, deadline, what));
    } else {
      return common::UnavailableError(what + ": send: " + curl_easy_strerror(rc));
    }
  }
  return common::Status::Ok();
}

common::Status HttpRestClient::ReceiveRaw(const RawConnection& c, Http1ResponseParser& parser,
                                          const RawDeadline& deadline,
                                          const std::string& what) const {
  char buf[16384];
  // Wait first: a read right after the send would find nothing yet.
  bool readable = false;
  while (parser.state() == Http1ResponseParser::State::kNeedMore) {
    if (!readable) {
      GPUSCHED_RETURN_IF_ERROR(WaitSocket(c, POLLIN, deadline, what));
      readable = true;
      continue;
    }
    size_t n = 0;
    CURLcode rc = curl_easy_recv(c.curl, buf, sizeof(buf), &n);
    if (rc == CURLE_AGAIN) {
      readable = false;
    } else if (rc != CURLE_OK) {
      return common::UnavailableError(what + ": receive: " + curl_easy_strerror(rc));
    } else if (n == 0) {
      parser.Finish();
    } else {
      parser.Feed(std::string_view(buf, n));
    }
  }
  return common::Status::Ok();
}

std::optional<common::Status> HttpRestClient::FinishRaw(RawConnection* c,
                                                        Http1ResponseParser& parser,
                                                        const common::Status& io, bool reused,
                                                        const std::string& what,
                                                        internal::Transfer& t) {
  using State = Http1ResponseParser::State;
  const std::string limit = std::to_string(options_.max_response_bytes) + " bytes";
  ReleaseRaw(c, parser.state() == State::kDone && parser.keep_alive());
  // A kept-alive connection the server closed before answering is tried once more, on a fresh
  // connection, without using up an attempt.
  const bool stale = reused && !parser.started();
  switch (parser.state()) {
    case State::kDone:
      t.status = parser.status();
      if (t.on_line == nullptr) t.body = std::move(parser.mutable_body());
      if (parser.retry_after_seconds())
        t.retry_after = std::chrono::seconds(*parser.retry_after_seconds());
      return common::Status::Ok();
    case State::kStopped:  // the watch's sink said stop
      if (t.too_large)
        return common::ResourceExhaustedError(what + ": a line larger than " + limit);
      if (!t.stopped) return common::UnavailableError(what + ": cancelled (client shutting down)");
      return common::Status::Ok();
    case State::kTooLarge:
      return common::ResourceExhaustedError(what + ": response larger than " + limit);
    case State::kError:
      if (!parser.truncated())
        return common::UnavailableError(what + ": malformed answer: " + parser.error());
      if (stale) return std::nullopt;
      t.transient = true;  // as libcurl's "empty reply" and "partial file" are
      return common::UnavailableError(what + ": " + parser.error());
    case State::kNeedMore:
      if (io.code() == common::StatusCode::kDeadlineExceeded || cancelled_.load()) {
        t.transient = !cancelled_.load();
        return common::UnavailableError(std::string(io.message()));
      }
      if (stale) return std::nullopt;
      t.transient = true;
      return io;
  }
  return io;
}

common::Status HttpRestClient::PerformRaw(const Request& request, const std::string& what,
                                          const Credentials& creds, internal::Transfer& t) {
  const std::string message = RawRequestBytes(request, creds);
  // Transport deadlines run on the steady clock, as libcurl's do (the injected clock is for
  // backoff and rate limiting).
  const RawDeadline deadline{std::chrono::steady_clock::now() + request.timeout,
                             request.timeout.count() > 0};
  t.http_version = CURL_HTTP_VERSION_1_1;
  for (int pass = 0;; ++pass) {
    RawConnection* c = pass == 0 ? AcquireRaw(creds) : nullptr;
    const bool reused = c != nullptr;
    if (c == nullptr) {
      GPUSCHED_ASSIGN_OR_RETURN(c, ConnectRaw(creds, what, t.transient));
    }
    Http1ResponseParser parser(options_.max_response_bytes, request.method == "HEAD");
    if (t.on_line != nullptr) StreamLines(parser, t);
    common::Status io = SendRaw(*c, message, deadline, what);
    if (io.ok()) io = ReceiveRaw(*c, parser, deadline, what);
    if (std::optional<common::Status> done = FinishRaw(c, parser, io, reused, what, t)) {
      return *std::move(done);
    }
  }
}

}  // namespace gpusched::kube::client
