// SPDX-License-Identifier: Apache-2.0
// SchedulerServer: `gpusched scheduler` once its flags are parsed — the components built from the
// config (Build) and run under one ordered RunGroup (Run) until a signal or the loss of the lease.
//
//   HttpRestClient ──► pod informer ──┐                      ┌─► AsyncEventClient ─► KubeApiClient
//     (qps/burst)  ──► node informer ─┼─► Scheduler ─────────┤   (events: 2-16 threads) └─
//                  ──► PDB informer ──┘
//     HttpRestClient
//                                          ▲                 └─ ThreadPoolExecutor(4-32): binding
//                                          cycles
//   HttpRestClient ──► LeaderElector ──────┘   (the Scheduler ticks itself: Flush, expiry)
//   (own token bucket, as kube-scheduler's leader-election client)
//
// Start order (RunGroup; stopped in reverse): informers (at once, or with --leader-elect and
// delayCacheUntilActive only when leading), NetworkTopology/AppGroup watch, GPU utilization and
// traffic refreshers, leader election, the scheduling loop. Losing the lease stops scheduling at
// once and exits 1 ("leaderelection lost"), as kube-scheduler does. SIGTERM/SIGINT: stop taking
// pods, let the binding cycles in flight finish (15 s at most), then their queued events (5 s at
// most), release the lease, exit 0.
//
// Threading: Build and Run are called once, from the main thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <csignal>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cmd/gpusched/commands.h"
#include "cmd/gpusched/run_group.h"
#include "cmd/gpusched/serving.h"
#include "cmd/gpusched/wiring.h"
#include "src/addons/network/watch/crd_watch.h"
#include "src/cache/network_store.h"
#include "src/common/clock.h"
#include "src/common/executor.h"
#include "src/common/mutex.h"
#include "src/common/random.h"
#include "src/config/config.h"
#include "src/framework/registry.h"
#include "src/kube/client/api_writer.h"
#include "src/kube/client/async_events.h"
#include "src/kube/client/http_client.h"
#include "src/kube/informer/informer.h"
#include "src/kube/leaderelection/leader_elector.h"
#include "src/metrics/component_metrics.h"
#include "src/metrics/scheduler_metrics.h"
#include "src/scheduler/scheduler.h"

namespace gpusched::cmd {

// The flags of `gpusched scheduler` that are not part of the KubeSchedulerConfiguration.
struct SchedulerServerFlags {
  SecureServingFlags serving;
  std::vector<std::string> node_group_labels;
  bool decision_annotation = false;
  std::string gpu_util_url;
  std::string gpu_util_interval;
  std::string gpu_util_staleness;
  std::string traffic_url;
  std::string traffic_query;
  std::string traffic_workload_label;
  std::string traffic_interval;
  std::string traffic_staleness;
  std::optional<uint64_t> seed;
};

class SchedulerServer {
 public:
  // `signal` is set by the process's signal handler (non-zero: shut down).
  SchedulerServer(const config::SchedulerConfig& cfg, SchedulerServerFlags flags,
                  const volatile std::sig_atomic_t& signal);
  ~SchedulerServer();

  // Builds every component; an error names what could not be built.
  common::Status Build();
  // Runs until a signal or the loss of the lease; returns the exit code.
  int Run();

 private:
  common::Status BuildClients();
  common::Status BuildScheduler();
  void BuildInformers();
  common::Status BuildServing();
  common::Status BuildLeaderElection();
  void AddRefreshers();
  void AddSchedulingLoop();

  bool StartInformersAndSync();
  void StartScheduling();
  // Blocks until a signal (false) or the loss of the lease (true).
  bool WaitForStop();
  void CancelClients();
  void DrainBindingCycles();
  void LogExit();

  const config::SchedulerConfig& cfg_;
  const SchedulerServerFlags flags_;
  const volatile std::sig_atomic_t& signal_;
  const bool delay_cache_;

  common::SystemClock clock_;
  metrics::Registry metrics_registry_;  // everything /metrics serves
  metrics::ApiClientMetrics api_metrics_{metrics_registry_};
  Stopper http_stop_;  // interrupts the HTTP clients' waits on a hard stop
  std::optional<Connection> conn_;
  common::Random main_random_;
  common::Random le_random_;
  common::Random events_random_;
  common::Random sched_random_;
  std::string hostname_;
  std::unique_ptr<kube::client::HttpRestClient> rest_;
  std::unique_ptr<kube::client::HttpRestClient> events_rest_;
  std::unique_ptr<kube::client::HttpRestClient> le_rest_;
  std::unique_ptr<kube::client::KubeApiClient> api_;
  std::unique_ptr<kube::client::KubeApiClient> events_api_;
  std::unique_ptr<kube::client::AsyncEventClient> events_;

  // AppGroups, NetworkTopologies and the measured traffic matrix for NetworkLocality.
  cache::NetworkStore network_store_;
  framework::Registry registry_;
  std::unique_ptr<common::ThreadPoolExecutor> executor_;  // binding cycles
  std::unique_ptr<metrics::SchedulerMetrics> sched_metrics_;
  std::unique_ptr<scheduler::Scheduler> sched_;
  std::unique_ptr<EventRecencyHandler> recency_;
  kube::informer::InformerPtr pods_;
  kube::informer::InformerPtr nodes_;
  kube::informer::InformerPtr pdbs_;  // PodDisruptionBudgets, for preemption
  // Gang policies: scheduler-plugins and Volcano PodGroups, Workloads. Not waited for: an API the
  // server does not serve never syncs.
  std::vector<kube::informer::InformerPtr> gang_informers_;
  std::unique_ptr<addons::network::watch::CrdWatch> crd_watch_;

  std::atomic<bool> leading_;
  std::atomic<bool> leader_known_;
  std::unique_ptr<SecureServing> secure_;  // outlives serving_, whose filter it is
  std::unique_ptr<Serving> serving_;
  CurlHttpGetter prometheus_http_{"gpusched-gpu-utilization", size_t{16} << 20};
  CurlHttpGetter traffic_http_{"gpusched-network-traffic", size_t{16} << 20};
  PeriodicThread util_thread_;
  PeriodicThread traffic_thread_;
  std::unique_ptr<kube::leaderelection::LeaderElector> elector_;
  std::thread elector_thread_;

  // Shared with the leader-election callbacks and the scheduling thread.
  common::Mutex mu_;
  std::condition_variable_any cv_;
  bool lost_leadership_ GPUSCHED_GUARDED_BY(mu_) = false;
  bool shutting_down_ GPUSCHED_GUARDED_BY(mu_) = false;
  std::thread sched_thread_ GPUSCHED_GUARDED_BY(mu_);
  bool informers_started_ = false;
  bool lost_ = false;  // set by Run before the group stops

  RunGroup group_;  // last: stopped (by Run, or its destructor) before the members above go
};

}  // namespace gpusched::cmd
