// SPDX-License-Identifier: Apache-2.0
// Serving: the health and metrics endpoints every long-running subcommand exposes (scheduler,
// extender, deletion-cost controller), on an http::Server behind secure serving
// (secure_serving.h: HTTPS, delegated authentication and authorization):
//
//   GET /metrics   Prometheus text 0.0.4 of the process registry (plus extra text, if any)
//   GET /healthz   200 "ok" while the process serves (kube-scheduler's /healthz)
//   GET /livez     same as /healthz
//   GET /readyz    200 "ok" when ready() says so, else 503 with the reason
//                  (ready = informers synced and, with leader election, leadership known)
//
// Also registers gpusched_build_info{version,command}, gpusched_ready and
// gpusched_http_requests_total{path,code} in the registry.
//
// Start() serves them over HTTPS on --bind-address:--secure-port, every request through the
// SecureServing filter (401/403; /healthz, /readyz, /livez open), and, only when --port is set,
// over plain HTTP without authentication.
//
// Threading: handlers run on the server's workers; ready() and the registry's callbacks must be
// thread-safe. Stop() (or the destructor) before anything the callbacks read is destroyed.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>

#include "cmd/gpusched/secure_serving.h"
#include "src/common/clock.h"
#include "src/common/status.h"
#include "src/http/server.h"
#include "src/kube/api_client.h"
#include "src/metrics/registry.h"

namespace gpusched::cmd {

// Why the process is not ready; empty when ready.
using ReadyFn = std::function<std::string()>;

// Forwards informer events to `next` (gang policies, storage and DRA objects too) and remembers
// when the last node, pod and PodDisruptionBudget event arrived, for
// gpusched_informer_last_event_age_seconds{resource} (how stale the informers may be).
class EventRecencyHandler final : public kube::ClusterEventHandler {
 public:
  EventRecencyHandler(kube::ClusterEventHandler& next, const common::Clock& clock)
      : next_(next), clock_(clock), nodes_(Now()), pods_(Now()), pdbs_(Now()) {}
  void OnNodeAdd(api::NodePtr n) override { Touch(nodes_), next_.OnNodeAdd(std::move(n)); }
  void OnNodeUpdate(api::NodePtr o, api::NodePtr n) override {
    Touch(nodes_), next_.OnNodeUpdate(std::move(o), std::move(n));
  }
  void OnNodeDelete(api::NodePtr n) override { Touch(nodes_), next_.OnNodeDelete(std::move(n)); }
  void OnPodAdd(api::PodPtr p) override { Touch(pods_), next_.OnPodAdd(std::move(p)); }
  void OnPodUpdate(api::PodPtr o, api::PodPtr p) override {
    Touch(pods_), next_.OnPodUpdate(std::move(o), std::move(p));
  }
  void OnPodDelete(api::PodPtr p) override { Touch(pods_), next_.OnPodDelete(std::move(p)); }
  void OnPdbAdd(api::PdbPtr p) override { Touch(pdbs_), next_.OnPdbAdd(std::move(p)); }
  void OnPdbUpdate(api::PdbPtr o, api::PdbPtr p) override {
    Touch(pdbs_), next_.OnPdbUpdate(std::move(o), std::move(p));
  }
  void OnPdbDelete(api::PdbPtr p) override { Touch(pdbs_), next_.OnPdbDelete(std::move(p)); }
  void OnPodGroupAdd(api::PodGroupPtr g) override { next_.OnPodGroupAdd(std::move(g)); }
  void OnPodGroupUpdate(api::PodGroupPtr o, api::PodGroupPtr g) override {
    next_.OnPodGroupUpdate(std::move(o), std::move(g));
  }
  void OnPodGroupDelete(api::PodGroupPtr g) override { next_.OnPodGroupDelete(std::move(g)); }
  void OnStorageAdd(const kube::StorageObject& o) override { next_.OnStorageAdd(o); }
  void OnStorageUpdate(const kube::StorageObject& o, const kube::StorageObject& n) override {
    next_.OnStorageUpdate(o, n);
  }
  void OnStorageDelete(const kube::StorageObject& o) override { next_.OnStorageDelete(o); }
  void OnDraAdd(const kube::DraObject& o) override { next_.OnDraAdd(o); }
  void OnDraUpdate(const kube::DraObject& o, const kube::DraObject& n) override {
    next_.OnDraUpdate(o, n);
  }
  void OnDraDelete(const kube::DraObject& o) override { next_.OnDraDelete(o); }
  void OnNetworkUpsert(const kube::NetworkObject& o) override { next_.OnNetworkUpsert(o); }
  void OnNetworkDelete(const kube::NetworkObject& o) override { next_.OnNetworkDelete(o); }
  // Registers the gauge (one per registry).
  void RegisterMetrics(metrics::Registry& registry);

 private:
  int64_t Now() const { return clock_.Now().time_since_epoch().count(); }
  void Touch(std::atomic<int64_t>& t) { t.store(Now(), std::memory_order_relaxed); }
  kube::ClusterEventHandler& next_;
  const common::Clock& clock_;
  std::atomic<int64_t> nodes_;
  std::atomic<int64_t> pods_;
  std::atomic<int64_t> pdbs_;
};

class Serving {
 public:
  // Registers the routes on `server` (an existing server, e.g. the extender's) without owning it.
  static void AddRoutes(http::Server& server, metrics::Registry& registry, ReadyFn ready,
                        std::function<std::string()> extra_metrics = nullptr);
  // Starts the HTTPS server (flags.secure_port > 0) with `secure`'s TLS and filter, and the
  // plain-HTTP one (flags.port > 0), each with the routes above. `secure` must outlive the result.
  // Errors name the flags ("--bind-address/--secure-port 0.0.0.0:10259: ... in use").
  static common::StatusOr<std::unique_ptr<Serving>> Start(
      const SecureServingFlags& flags, const SecureServing& secure, metrics::Registry& registry,
      ReadyFn ready, std::function<std::string()> extra_metrics = nullptr);
  // The build_info and ready gauges (call once per registry).
  static void RegisterProcessMetrics(metrics::Registry& registry, std::string command,
                                     ReadyFn ready);

  ~Serving();
  // The bound ports; 0 when that server is off.
  uint16_t secure_port() const { return secure_ ? secure_->port() : 0; }
  uint16_t plain_port() const { return plain_ ? plain_->port() : 0; }
  // One line for the start-up log: "https://0.0.0.0:10259 (...)" and the plain port, if any.
  std::string Describe(const SecureServingFlags& flags, const SecureServing& secure) const;
  void Stop();

 private:
  Serving() = default;
  http::ServerPtr secure_;
  http::ServerPtr plain_;
};

}  // namespace gpusched::cmd
