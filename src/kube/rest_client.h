// SPDX-License-Identifier: Apache-2.0
// RestClient: the transport CONTRACT to a Kubernetes API server — one request/response, or one
// streamed watch. The implementation (src/kube/client) does TLS, authentication, the client-side
// QPS/burst limit and retries; callers (informers, the API writer, leader election) only build
// paths and decode bodies. Tests substitute a fake.
//
// Thread safety: implementations are thread-safe; Stream blocks the calling thread.
#pragma once

#include <boost/json/fwd.hpp>
#include <chrono>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/common/status.h"

namespace gpusched::kube {

struct Request {
  std::string method = "GET";  // GET, POST, PUT, PATCH, DELETE
  std::string path;            // "/api/v1/namespaces/default/pods/p/binding"
  std::vector<std::pair<std::string, std::string>> query;  // escaped by the client
  std::string body;
  // For PATCH: "application/merge-patch+json", "application/strategic-merge-patch+json",
  // "application/json-patch+json"; otherwise "application/json".
  std::string content_type = "application/json";
  std::chrono::milliseconds timeout{30000};  // whole request; 0 = none (watches)
  // false: a 429 is the answer, not throttling to wait out (an eviction that a
  // PodDisruptionBudget forbids is 429 too).
  bool retry_too_many_requests = true;
};

struct Response {
  int status = 0;  // HTTP status; any status is returned, transport errors are a Status
  std::string body;
  bool ok() const { return status >= 200 && status < 300; }
};

class RestClient {
 public:
  virtual ~RestClient() = default;
  // Sends `request`, waiting for the rate limiter first. Retries with exponential backoff on
  // connection errors, 429 (honouring Retry-After) and 5xx, up to the client's retry budget;
  // then returns the last response (or kUnavailable for a transport error).
  virtual common::StatusOr<Response> Do(const Request& request) = 0;
  // Streams a watch: calls `on_line` with each newline-delimited JSON event until the server
  // closes the stream (OK), `on_line` returns false (OK), or a transport error (kUnavailable).
  // A non-2xx answer is returned as an error whose message holds the status code and body.
  virtual common::Status Stream(const Request& request,
                                const std::function<bool(std::string_view line)>& on_line) = 0;
};

// Maps a non-2xx response to a Status: 404 kNotFound, 409 kAborted (conflict), 410 kOutOfRange
// ("Gone": resourceVersion too old), 403 kPermissionDenied, 401 kPermissionDenied,
// 429 kResourceExhausted, 422/400 kInvalidArgument, 5xx kUnavailable. The message names the
// method, path, code and the API's Status message.
common::Status StatusFromResponse(const Request& request, const Response& response);

// Every item of a LIST at `path` (e.g. "/apis/apps/v1/deployments"), 500 per page, following
// metadata.continue. Errors: a page's StatusFromResponse, a transport error, or kInvalidArgument
// naming the path when a page is not a JSON object.
common::StatusOr<std::vector<boost::json::value>> ListAll(RestClient& rest,
                                                          const std::string& path);

// Discovery: the first of `candidates` (group versions such as "scheduling.k8s.io/v1beta1", in
// order of preference, all of `group`) that GET /apis/<group> lists as served. kNotFound when
// the group or none of them is served; other errors as ListAll's.
common::StatusOr<std::string> ServedGroupVersion(RestClient& rest, std::string_view group,
                                                 std::span<const std::string_view> candidates);

}  // namespace gpusched::kube
