// SPDX-License-Identifier: Apache-2.0
#include "src/kube/leaderelection/lease_lock.h"

#include <boost/json.hpp>
#include <chrono>
#include <cstdio>
#include <limits>
#include <utility>

#include "src/api/decode.h"
#include "src/api/fields.h"
#include "src/common/strings.h"

namespace gpusched::kube::leaderelection {
namespace {

namespace json = boost::json;
using namespace std::chrono;  // NOLINT: calendar types in a .cc file

constexpr std::string_view kGroupPath = "/apis/coordination.k8s.io/v1/namespaces/";

// What a lease answer holds: its resourceVersion and the election record of its spec.
struct LeaseAnswer {
  std::string resource_version;
  LeaderElectionRecord record;
};

common::StatusOr<LeaseAnswer> DecodeLease(std::string_view body, const std::string& subject) {
  GPUSCHED_ASSIGN_OR_RETURN(json::value v, api::ParseJson(body, subject));
  api::JsonReader r(api::PlainDialect());
  const api::FieldPath root;
  LeaseAnswer a;
  const json::object* o = r.AsObject(v, root);
  if (const json::object* meta = o != nullptr ? r.Object(*o, "metadata", root) : nullptr) {
    const api::FieldPath mp = root.Key("metadata");
    a.resource_version = r.StringOr(*meta, "resourceVersion", mp);
  }
  // No spec: an empty lease, free.
  if (const json::object* spec = o != nullptr ? r.Object(*o, "spec", root) : nullptr) {
    const api::FieldPath sp = root.Key("spec");
    constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();
    LeaderElectionRecord& rec = a.record;
    rec.holder_identity = r.StringOr(*spec, "holderIdentity", sp);
    rec.lease_duration_seconds = r.Int(*spec, "leaseDurationSeconds", sp, 0, kInt32Max).value_or(0);
    rec.lease_transitions =
        static_cast<int32_t>(r.Int(*spec, "leaseTransitions", sp, 0, kInt32Max).value_or(0));
    // A malformed time reads as absent: the lease is then judged by when we saw it change.
    if (std::string_view t = r.StringOr(*spec, "acquireTime", sp); !t.empty()) {
      rec.acquire_time = api::ParseRfc3339(t);
    }
    if (std::string_view t = r.StringOr(*spec, "renewTime", sp); !t.empty()) {
      rec.renew_time = api::ParseRfc3339(t);
    }
  }
  if (!r.ok()) return common::InvalidArgumentError(subject + ": " + r.errors().Join());
  return a;
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

common::StatusOr<LeaderElectionRecord> LeaseLock::Remember(const Request& req,
                                                           const common::StatusOr<Response>& resp) {
  if (!resp.ok()) return resp.status();
  GPUSCHED_RETURN_IF_ERROR(StatusFromResponse(req, *resp));
  const std::string subject = "lease " + Describe();
  GPUSCHED_ASSIGN_OR_RETURN(LeaseAnswer answer, DecodeLease(resp->body, subject));
  if (answer.resource_version.empty()) {
    return common::InvalidArgumentError(subject + ": response has no resourceVersion");
  }
  resource_version_ = std::move(answer.resource_version);
  return answer.record;
}

common::StatusOr<LeaderElectionRecord> LeaseLock::Get() {
  Request req;
  req.method = "GET";
  req.path = LeasePath();
  req.timeout = request_timeout_;
  return Remember(req, client_.Do(req));
}

common::Status LeaseLock::Create(const LeaderElectionRecord& record) {
  Request req;
  req.method = "POST";
  req.path = std::string(kGroupPath) + namespace_ + "/leases";
  req.body = Body(record, false);
  req.timeout = request_timeout_;
  return Remember(req, client_.Do(req)).status();
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
  return Remember(req, client_.Do(req)).status();
}

}  // namespace gpusched::kube::leaderelection
