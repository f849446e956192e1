// SPDX-License-Identifier: Apache-2.0
// Test-only: a scripted kube::RestClient for reflector and informer tests. LIST answers and
// watch streams are queued by the test; every request is recorded. Thread-safe.
#pragma once

#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/common/mutex.h"
#include "src/kube/rest_client.h"

namespace gpusched::kube::informer::testing {

// One scripted watch: its lines, then how the stream ends.
struct ScriptedStream {
  std::vector<std::string> lines;
  common::Status end;  // OK: the server closed the stream
};

class FakeRestClient final : public RestClient {
 public:
  // Queues the answer to the next Do().
  void PushResponse(int status, std::string body) {
    common::MutexLock l(mu_);
    responses_.push_back(Response{status, std::move(body)});
  }
  void PushDoError(common::Status st) {
    common::MutexLock l(mu_);
    do_errors_.push_back(std::move(st));
  }
  // Queues the next watch stream.
  void PushStream(ScriptedStream s) {
    common::MutexLock l(mu_);
    streams_.push_back(std::move(s));
  }
  // Called before a Do() with nothing queued (default: 503).
  void SetDefault(std::function<common::StatusOr<Response>(const Request&)> fn) {
    common::MutexLock l(mu_);
    default_ = std::move(fn);
  }

  common::StatusOr<Response> Do(const Request& request) override {
    std::function<common::StatusOr<Response>(const Request&)> fallback;
    {
      common::MutexLock l(mu_);
      requests_.push_back(request);
      if (!do_errors_.empty()) {
        common::Status st = std::move(do_errors_.front());
        do_errors_.pop_front();
        return st;
      }
      if (!responses_.empty()) {
        Response r = std::move(responses_.front());
        responses_.pop_front();
        return r;
      }
      fallback = default_;
    }
    if (fallback) return fallback(request);
    return Response{503, R"({"kind":"Status","message":"nothing scripted"})"};
  }

  common::Status Stream(const Request& request,
                        const std::function<bool(std::string_view line)>& on_line) override {
    ScriptedStream s;
    {
      common::MutexLock l(mu_);
      requests_.push_back(request);
      if (streams_.empty()) return common::UnavailableError("no stream scripted");
      s = std::move(streams_.front());
      streams_.pop_front();
    }
    for (const std::string& line : s.lines) {
      if (!on_line(line)) return common::Status::Ok();
    }
    return s.end;
  }

  std::vector<Request> requests() const {
    common::MutexLock l(mu_);
    return requests_;
  }
  // The value of query parameter `key` of request `i`, or nullopt.
  std::optional<std::string> Query(size_t i, std::string_view key) const {
    common::MutexLock l(mu_);
    if (i >= requests_.size()) return std::nullopt;
    for (const auto& [k, v] : requests_[i].query) {
      if (k == key) return v;
    }
    return std::nullopt;
  }

 private:
  mutable common::Mutex mu_;
  std::deque<Response> responses_ GPUSCHED_GUARDED_BY(mu_);
  std::deque<common::Status> do_errors_ GPUSCHED_GUARDED_BY(mu_);
  std::deque<ScriptedStream> streams_ GPUSCHED_GUARDED_BY(mu_);
  std::function<common::StatusOr<Response>(const Request&)> default_ GPUSCHED_GUARDED_BY(mu_);
  std::vector<Request> requests_ GPUSCHED_GUARDED_BY(mu_);
};

}  // namespace gpusched::kube::informer::testing
