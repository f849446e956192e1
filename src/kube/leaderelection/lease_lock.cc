// SPDX-License-Identifier: Apache-2.0
#include "src/kube/leaderelection/lease_lock.h"

#include <boost/json.hpp>
#include <chrono>
#include <cstdio>
#include <utility>

#include "src/api/decode.h"
#include "src/common/strings.h"

namespace gpusched::kube::leaderelection {
namespace {

namespace json = boost::json;
using namespace std::chrono;  // NOLINT: calendar types in a .cc file

constexpr std::string_view kGroupPath = "/apis/coordination.k8s.io/v1/namespaces/";

std::optional<int64_t> Digits(std::string_view s, size_t pos, size_t n) {
  if (pos + n > s.size()) return std::nullopt;
  int64_t v = 0;
  for (size_t i = pos; i < pos + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return std::nullopt;
    v = v * 10 + (s[i] - '0');
  }
  return v;
}

}  // namespace

std::string FormatMicroTime(common::TimePoint t) {
  auto us = time_point_cast<microseconds>(t);
  auto days = floor<std::chrono::days>(us);
  year_month_day ymd{sys_days(days)};
  hh_mm_ss<microseconds> hms{us - days};
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%04d-%02u-%02uT%02d:%02d:%02d.%06lldZ",
                static_cast<int>(ymd.year()), static_cast<unsigned>(ymd.month()),
                static_cast<unsigned>(ymd.day()), static_cast<int>(hms.hours().count()),
                static_cast<int>(hms.minutes().count()), static_cast<int>(hms.seconds().count()),
                static_cast<long long>(hms.subseconds().count()));
  return buf;
}

std::optional<common::TimePoint> ParseMicroTime(std::string_view s) {
  // YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM)
  auto y = Digits(s, 0, 4), mo = Digits(s, 5, 2), d = Digits(s, 8, 2);
  auto h = Digits(s, 11, 2), mi = Digits(s, 14, 2), sec = Digits(s, 17, 2);
  if (!y || !mo || !d || !h || !mi || !sec || s.size() < 20 || s[4] != '-' || s[7] != '-' ||
      (s[10] != 'T' && s[10] != 't') || s[13] != ':' || s[16] != ':') {
    return std::nullopt;
  }
  year_month_day ymd{year(static_cast<int>(*y)), month(static_cast<unsigned>(*mo)),
                     day(static_cast<unsigned>(*d))};
  if (!ymd.ok() || *h > 23 || *mi > 59 || *sec > 60) return std::nullopt;
  size_t pos = 19;
  int64_t nanos = 0;
  if (pos < s.size() && s[pos] == '.') {
    ++pos;
    int digits = 0;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
      if (digits < 9) {
        nanos = nanos * 10 + (s[pos] - '0');
        ++digits;
      }
      ++pos;
    }
    if (digits == 0) return std::nullopt;
    for (int i = digits; i < 9; ++i) nanos *= 10;
  }
  int64_t offset_s = 0;
  if (pos < s.size() && (s[pos] == 'Z' || s[pos] == 'z')) {
    ++pos;
  } else if (pos < s.size() && (s[pos] == '+' || s[pos] == '-')) {
    auto oh = Digits(s, pos + 1, 2), om = Digits(s, pos + 4, 2);
    if (!oh || !om || pos + 3 >= s.size() || s[pos + 3] != ':') return std::nullopt;
    offset_s = (*oh * 3600 + *om * 60) * (s[pos] == '+' ? 1 : -1);
    pos += 6;
  } else {
    return std::nullopt;
  }
  if (pos != s.size()) return std::nullopt;
  auto base = sys_days(ymd) + hours(*h) + minutes(*mi) + seconds(*sec) - seconds(offset_s);
  return common::TimePoint(duration_cast<nanoseconds>(base.time_since_epoch()) +
                           nanoseconds(nanos));
}

LeaseLock::LeaseLock(RestClient& client, std::string lease_namespace, std::string lease_name,
                     std::chrono::milliseconds request_timeout)
    : client_(client),
      namespace_(std::move(lease_namespace)),
      name_(std::move(lease_name)),
      request_timeout_(request_timeout) {}

std::string LeaseLock::Describe() const { return namespace_ + "/" + name_; }

std::string LeaseLock::LeasePath() const {
  return std::string(kGroupPath) + namespace_ + "/leases/" + name_;
}

std::string LeaseLock::Body(const LeaderElectionRecord& r, bool with_resource_version) const {
  json::object meta{{"name", name_}, {"namespace", namespace_}};
  if (with_resource_version) meta["resourceVersion"] = resource_version_;
  json::object spec;
  spec["holderIdentity"] = r.holder_identity;
  spec["leaseDurationSeconds"] = r.lease_duration_seconds;
  if (r.acquire_time) spec["acquireTime"] = FormatMicroTime(*r.acquire_time);
  if (r.renew_time) spec["renewTime"] = FormatMicroTime(*r.renew_time);
  spec["leaseTransitions"] = r.lease_transitions;
  json::object lease{{"apiVersion", "coordination.k8s.io/v1"},
                     {"kind", "Lease"},
                     {"metadata", std::move(meta)},
                     {"spec", std::move(spec)}};
  return json::serialize(lease);
}

// Records the resourceVersion of a lease the server returned.
common::Status LeaseLock::Remember(const Request& req, const common::StatusOr<Response>& resp) {
  if (!resp.ok()) return resp.status();
  GPUSCHED_RETURN_IF_ERROR(StatusFromResponse(req, *resp));
  auto parsed = api::ParseJson(resp->body, "lease " + Describe());
  if (!parsed.ok()) return parsed.status();
  const json::object* o = parsed->if_object();
  const json::value* meta = o ? o->if_contains("metadata") : nullptr;
  const json::value* rv =
      meta && meta->is_object() ? meta->as_object().if_contains("resourceVersion") : nullptr;
  if (rv == nullptr || !rv->is_string()) {
    return common::InvalidArgumentError("lease " + Describe() +
                                        ": response has no resourceVersion");
  }
  resource_version_ = std::string(rv->as_string());
  return common::Status::Ok();
}

common::StatusOr<LeaderElectionRecord> LeaseLock::Get() {
  Request req;
  req.method = "GET";
  req.path = LeasePath();
  req.timeout = request_timeout_;
  auto resp = client_.Do(req);
  if (!resp.ok()) return resp.status();
  GPUSCHED_RETURN_IF_ERROR(StatusFromResponse(req, *resp));
  auto parsed = api::ParseJson(resp->body, "lease " + Describe());
  if (!parsed.ok()) return parsed.status();
  GPUSCHED_RETURN_IF_ERROR(Remember(req, resp));
  LeaderElectionRecord rec;
  const json::object& o = parsed->as_object();  // Remember() checked it is an object
  const json::value* spec_v = o.if_contains("spec");
  if (spec_v == nullptr || !spec_v->is_object()) return rec;  // an empty lease: free
  const json::object& spec = spec_v->as_object();
  auto str = [&](std::string_view key) -> std::string_view {
    const json::value* v = spec.if_contains(key);
    return v != nullptr && v->is_string() ? std::string_view(v->as_string()) : std::string_view();
  };
  auto num = [&](std::string_view key) -> int64_t {
    const json::value* v = spec.if_contains(key);
    if (v == nullptr) return 0;
    if (v->is_int64()) return v->as_int64();
    if (v->is_uint64()) return static_cast<int64_t>(v->as_uint64());
    return 0;
  };
  rec.holder_identity = std::string(str("holderIdentity"));
  rec.lease_duration_seconds = num("leaseDurationSeconds");
  rec.lease_transitions = static_cast<int32_t>(num("leaseTransitions"));
  // A malformed time reads as absent: the lease is then judged by when we saw it change.
  if (!str("acquireTime").empty()) rec.acquire_time = ParseMicroTime(str("acquireTime"));
  if (!str("renewTime").empty()) rec.renew_time = ParseMicroTime(str("renewTime"));
  return rec;
}

common::Status LeaseLock::Create(const LeaderElectionRecord& record) {
  Request req;
  req.method = "POST";
  req.path = std::string(kGroupPath) + namespace_ + "/leases";
  req.body = Body(record, false);
  req.timeout = request_timeout_;
  return Remember(req, client_.Do(req));
}

common::Status LeaseLock::Update(const LeaderElectionRecord& record) {
  if (resource_version_.empty()) {
    return common::FailedPreconditionError("lease " + Describe() + ": update before get");
  }
  Request req;
  req.method = "PUT";
  req.path = LeasePath();
  req.body = Body(record, true);
  req.timeout = request_timeout_;
  return Remember(req, client_.Do(req));
}

}  // namespace gpusched::kube::leaderelection
