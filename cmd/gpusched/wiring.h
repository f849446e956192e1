// SPDX-License-Identifier: Apache-2.0
// Wiring shared by the subcommands that talk to a live cluster or to HTTP endpoints (scheduler,
// extender, explain, deletion-cost):
//
//   CaptureEnvironment ─► Connect(--kubeconfig, --context): ResolveConfig (flag, KUBECONFIG,
//                         in-cluster, ~/.kube/config) and InitCurlOnce
//   Connection ─► NewRestClient(qps, burst, metrics): an HttpRestClient with the cluster's
//                 credentials whose backoff and rate-limiter waits a Stopper interrupts
//   CurlHttpGetter: telemetry::prometheus::HttpGetter over libcurl (pod /metrics, Prometheus)
//   ReadTextFile, LoadSchedulerConfig: input files (a KubeSchedulerConfiguration's warnings logged)
//
// Threading: Stopper and CurlHttpGetter are thread-safe; the rest runs at start-up.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "src/common/clock.h"
#include "src/common/mutex.h"
#include "src/common/random.h"
#include "src/common/status.h"
#include "src/config/config.h"
#include "src/kube/client/http_client.h"
#include "src/kube/client/kubeconfig.h"
#include "src/metrics/component_metrics.h"
#include "src/telemetry/prometheus/query.h"

namespace gpusched::cmd {

// The process environment (for ResolveConfig and exec credential plugins).
kube::client::Environment CaptureEnvironment();

// `handler` for SIGTERM and SIGINT; SIGPIPE ignored (a closed socket is an error, not a death).
// Call before any thread exists.
void InstallShutdownHandler(void (*handler)(int));

// A seed that differs between processes and runs (wall clock ^ pid).
uint64_t TimeSeed();

// A flag that interrupts waits: the HTTP clients' backoff and rate-limiter waits, tickers.
class Stopper {
 public:
  void Stop();
  bool stopped();
  // Waits `d` or until Stop(); true when stopped.
  bool Wait(common::Duration d);

 private:
  common::Mutex mu_;
  std::condition_variable_any cv_;
  bool stopped_ GPUSCHED_GUARDED_BY(mu_) = false;
};

// Where the API server is and the environment its credentials may need.
struct Connection {
  kube::client::Environment env;
  kube::client::ClusterConfig cluster;
};

// Resolves the cluster config (`kubeconfig`: the explicit path, "" for the precedence of
// ResolveConfig; `context`: "" for the current context) and initializes libcurl.
common::StatusOr<Connection> Connect(const std::string& kubeconfig,
                                     const std::string& context = "");

struct RestClientOptions {
  double qps = 50;
  int burst = 100;
  metrics::ApiClientMetrics* metrics = nullptr;  // must outlive the client; null: none
};

// An HttpRestClient for `conn`. `clock`, `random` and `stopper` must outlive it; Stop() ends its
// waits early (cancel the client as well to end requests in flight).
common::StatusOr<std::unique_ptr<kube::client::HttpRestClient>> NewRestClient(
    const Connection& conn, const RestClientOptions& options, const common::Clock& clock,
    common::Random& random, Stopper& stopper);

// telemetry::prometheus::HttpGetter over libcurl: one easy handle per call, no proxies, no
// redirects, http(s) only, compressed answers accepted, the (decoded) body capped at `max_body`
// bytes (kResourceExhausted). Timeouts are kDeadlineExceeded, other transport errors kUnavailable.
class CurlHttpGetter final : public telemetry::prometheus::HttpGetter {
 public:
  CurlHttpGetter(std::string user_agent, size_t max_body)
      : user_agent_(std::move(user_agent)), max_body_(max_body) {}
  common::StatusOr<telemetry::prometheus::HttpResult> Get(const std::string& url,
                                                          common::Duration timeout) override;

 private:
  const std::string user_agent_;
  const size_t max_body_;
};

// The whole file at `path` (kNotFound "<path>: cannot read the file").
common::StatusOr<std::string> ReadTextFile(const std::string& path);

// Reads and parses a KubeSchedulerConfiguration file (kNotFound "<path>: cannot read the config
// file"); its warnings are logged.
common::StatusOr<config::SchedulerConfig> LoadSchedulerConfig(const std::string& path);

}  // namespace gpusched::cmd
