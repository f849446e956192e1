// SPDX-License-Identifier: Apache-2.0
// HttpRestClient's private parts shared by its two transports: http_client.cc (libcurl's easy
// interface) and http_client_raw.cc (the lean path, raw HTTP/1.1 over a connection libcurl
// opened). Not for other users.
#pragma once

#include <curl/curl.h>

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "src/common/clock.h"
#include "src/common/status.h"
#include "src/common/strings.h"
#include "src/kube/client/encoding.h"
#include "src/kube/client/http1_response.h"
#include "src/kube/client/http_client.h"

namespace gpusched::kube::client {
namespace internal {

using common::Duration;

struct SlistFree {
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};
using SlistPtr = std::unique_ptr<curl_slist, SlistFree>;

// Appends `line` to `list`; false on allocation failure.
bool Append(SlistPtr& list, const std::string& line);

// A libcurl failure of `what` ("POST /path"): kUnavailable naming the cause (or the shutdown that
// caused it), and whether another attempt may succeed.
common::Status CurlFailure(const std::string& what, CURLcode rc, const char* errbuf, bool cancelled,
                           bool& transient);

}  // namespace internal

namespace internal {

// The state of one attempt, shared with libcurl's callbacks (and the lean path's parser).
struct Transfer {
  CURL* curl = nullptr;
  const std::function<bool(std::string_view)>* on_line = nullptr;  // null: buffer the body
  size_t max_body = 0;
  const std::atomic<bool>* cancelled = nullptr;

  long status = 0;
  long http_version = 0;  // CURL_HTTP_VERSION_* of the answer
  std::string body;       // Do: the body; Stream: the body of a non-2xx answer
  std::string partial;    // Stream: the unterminated tail of the last chunk
  std::optional<Duration> retry_after;
  bool too_large = false;
  bool stopped = false;  // on_line returned false
  bool lines_delivered = false;
  bool transient = false;  // the transport error may clear on retry

  bool StreamingOk() {
    if (status == 0) curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    return status >= 200 && status < 300;
  }

  // Delivers one line (without '\n' and a trailing '\r'); false to abort.
  bool Deliver(std::string_view line) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) return true;
    lines_delivered = true;
    if (!(*on_line)(line)) {
      stopped = true;
      return false;
    }
    return true;
  }

  size_t OnData(const char* data, size_t size) {
    if (cancelled->load(std::memory_order_relaxed)) return 0;
    if (on_line == nullptr || !StreamingOk()) {
      if (body.size() + size > max_body) {
        too_large = true;
        return 0;
      }
      body.append(data, size);
      return size;
    }
    std::string_view chunk(data, size);
    while (!chunk.empty()) {
      size_t nl = chunk.find('\n');
      if (nl == std::string_view::npos) {
        if (partial.size() + chunk.size() > max_body) {
          too_large = true;
          return 0;
        }
        partial.append(chunk);
        break;
      }
      bool go_on;
      if (partial.empty()) {
        go_on = Deliver(chunk.substr(0, nl));
      } else {
        if (partial.size() + nl > max_body) {
          too_large = true;
          return 0;
        }
        partial.append(chunk.substr(0, nl));
        std::string line = std::move(partial);
        partial.clear();
        go_on = Deliver(line);
      }
      if (!go_on) return 0;
      chunk.remove_prefix(nl + 1);
    }
    return size;
  }

  void OnHeader(std::string_view line) {
    if (common::StartsWith(line, "HTTP/")) {  // a new response (after 100 Continue, say)
      retry_after.reset();
      return;
    }
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) return;
    if (common::EqualsIgnoreCase(common::Trim(line.substr(0, colon)), "retry-after")) {
      auto secs = ParseRetryAfterSeconds(line.substr(colon + 1));
      retry_after = secs ? std::optional<Duration>(std::chrono::seconds(*secs)) : std::nullopt;
    }
  }
};

// A watch over the lean path: body bytes go to `t` as they arrive (Transfer splits the lines and
// enforces the line limit; a non-2xx answer's body is buffered there too).
void StreamLines(Http1ResponseParser& parser, Transfer& t);

}  // namespace internal

// A CONNECT_ONLY curl handle and its socket.
struct HttpRestClient::RawConnection {
  CURL* curl = nullptr;
  curl_socket_t fd = CURL_SOCKET_BAD;
  std::string client_cert_pem;    // the identity the connection was opened with
  internal::SlistPtr connect_to;  // referenced by the handle
};

}  // namespace gpusched::kube::client
