// SPDX-License-Identifier: Apache-2.0
// LeaseLock: a coordination.k8s.io/v1 Lease used as the leader-election lock, as client-go's
// resourcelock.LeaseLock. The lease's spec is the LeaderElectionRecord; writes carry the
// resourceVersion last read, so two candidates cannot both win a race (the loser gets 409).
//
//   Get()     GET  /apis/coordination.k8s.io/v1/namespaces/{ns}/leases/{name}
//   Create()  POST /apis/coordination.k8s.io/v1/namespaces/{ns}/leases
//   Update()  PUT  /apis/coordination.k8s.io/v1/namespaces/{ns}/leases/{name}
//             (metadata.resourceVersion = the one from the last Get/Create/Update)
//
// Thread safety: not thread-safe; owned by one LeaderElector.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "src/common/clock.h"
#include "src/common/status.h"
#include "src/kube/rest_client.h"

namespace gpusched::kube::leaderelection {

// The lease spec (client-go's LeaderElectionRecord). Times are MicroTime on the wire.
struct LeaderElectionRecord {
  std::string holder_identity;  // "" = nobody holds the lease
  int64_t lease_duration_seconds = 0;
  std::optional<common::TimePoint> acquire_time;
  std::optional<common::TimePoint> renew_time;
  int32_t lease_transitions = 0;
  friend bool operator==(const LeaderElectionRecord&, const LeaderElectionRecord&) = default;
};

class LeaseLock {
 public:
  // `client` is borrowed and must outlive the lock. `request_timeout` bounds each request.
  LeaseLock(RestClient& client, std::string lease_namespace, std::string lease_name,
            std::chrono::milliseconds request_timeout = std::chrono::milliseconds(10000));

  // The current record. kNotFound when the lease does not exist; other errors as the client's.
  common::StatusOr<LeaderElectionRecord> Get();
  // Creates the lease with `record`. kAlreadyExists/kAborted when someone else created it first.
  common::Status Create(const LeaderElectionRecord& record);
  // Replaces the lease's spec, guarded by the last resourceVersion read. kAborted (409) when the
  // lease changed since. REQUIRES: a successful Get() or Create() before.
  common::Status Update(const LeaderElectionRecord& record);

  // "kube-system/gpu-scheduler", for logs.
  std::string Describe() const;

 private:
  std::string LeasePath() const;
  std::string Body(const LeaderElectionRecord& record, bool with_resource_version) const;
  // The record of the lease the server answered with; its resourceVersion is kept for Update.
  common::StatusOr<LeaderElectionRecord> Remember(const Request& req,
                                                  const common::StatusOr<Response>& resp);

  RestClient& client_;
  const std::string namespace_;
  const std::string name_;
  const std::chrono::milliseconds request_timeout_;
  std::string resource_version_;  // of the last lease read or written
};

// MicroTime as the API writes it: "2024-05-01T12:00:00.123456Z" (UTC, microseconds).
std::string FormatMicroTime(common::TimePoint t);
// (Read back with api::ParseRfc3339.)

}  // namespace gpusched::kube::leaderelection
