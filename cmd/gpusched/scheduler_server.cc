// SPDX-License-Identifier: Apache-2.0
#include "cmd/gpusched/scheduler_server.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <utility>

#include "src/config/duration.h"
#include "src/metrics/catalog.h"
#include "src/plugins/in_tree_registry.h"
#include "src/scheduler/decision_log.h"
#include "src/telemetry/gpu_utilization/utilization.h"
#include "src/telemetry/traffic/traffic_refresher.h"

namespace gpusched::cmd {
namespace {

// Threads of the binding-cycle executor. A binding cycle waits on an API round trip (the
// pods/binding POST; the event is queued), so the bind rate is threads / round-trip time: at
// 65 ms per request on a loaded API server 4 threads bound ~30 pods/s (bench/side_by_side),
// where kube-scheduler binds in one goroutine per pod. Enough threads to keep the client's qps
// busy at ~100 ms per request (Little's law), at least 4 and at most 32: more than the limiter
// lets through would only queue in it. qps <= 0 (no limiter): 32.
int BindingThreads(double qps) {
  if (!(qps > 0)) return 32;
  return static_cast<int>(std::clamp(std::ceil(qps / 10.0), 4.0, 32.0));  // clamped before the cast
}

// Threads writing the queued events: half the binding threads, at least 2, so that events keep
// up with binds on a busy API server (2 fixed threads fell 200 events behind a 5,000-pod backlog
// at 340 binds/s) while binds keep most of the connections. kube-scheduler writes each event in
// a goroutine of its own.
int EventThreads(double qps) { return std::max(2, BindingThreads(qps) / 2); }

std::string Hostname() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof(buf) - 1) != 0 || buf[0] == '\0') return "localhost";
  return buf;
}

// A random (version 4) UUID.
std::string NewUuid() {
  std::random_device rd;
  std::mt19937_64 gen(
      (static_cast<uint64_t>(rd()) << 32) ^ rd() ^
      static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()));
  uint64_t hi = gen();
  uint64_t lo = gen();
  hi = (hi & 0xFFFFFFFFFFFF0FFFull) | 0x0000000000004000ull;
  lo = (lo & 0x3FFFFFFFFFFFFFFFull) | 0x8000000000000000ull;
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%08x-%04x-%04x-%04x-%012llx", static_cast<unsigned>(hi >> 32),
                static_cast<unsigned>((hi >> 16) & 0xFFFF), static_cast<unsigned>(hi & 0xFFFF),
                static_cast<unsigned>(lo >> 48),
                static_cast<unsigned long long>(lo & 0xFFFFFFFFFFFFull));
  return buf;
}

// A flag value ApplyFlags already checked parses.
common::Duration CheckedDuration(const std::string& value) {
  return common::Duration(config::ParseGoDurationNanos(value).value_or(0));
}

std::chrono::milliseconds Millis(common::Duration d) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(d);
}

}  // namespace

SchedulerServer::SchedulerServer(const config::SchedulerConfig& cfg, SchedulerServerFlags flags,
                                 const volatile std::sig_atomic_t& signal)
    : cfg_(cfg),
      flags_(std::move(flags)),
      signal_(signal),
      delay_cache_(cfg.delay_cache_until_active && cfg.leader_election.leader_elect),
      main_random_(TimeSeed()),
      le_random_(TimeSeed() * 31 + 7),
      events_random_(TimeSeed() * 17 + 3),
      sched_random_(flags_.seed ? *flags_.seed : TimeSeed() ^ 0x5eedull),
      hostname_(Hostname()),
      leading_(!cfg.leader_election.leader_elect),
      leader_known_(!cfg.leader_election.leader_elect) {}

SchedulerServer::~SchedulerServer() { group_.Stop(); }

common::Status SchedulerServer::Build() {
  // The serving flags first: a bad certificate file fails before anything connects.
  if (flags_.serving.secure_port != 0 || flags_.serving.port != 0) {
    GPUSCHED_ASSIGN_OR_RETURN(secure_, SecureServing::Create(flags_.serving, {}));
  }
  GPUSCHED_RETURN_IF_ERROR(BuildClients());
  GPUSCHED_RETURN_IF_ERROR(BuildScheduler());
  BuildInformers();
  GPUSCHED_RETURN_IF_ERROR(BuildServing());
  GPUSCHED_RETURN_IF_ERROR(BuildLeaderElection());
  AddRefreshers();
  AddSchedulingLoop();
  return common::Status::Ok();
}

// kube-scheduler gives the main, the events and the leader-election clients a token bucket each;
// so does gpusched: binds and conditions use the main one, events and the lease their own, so that
// neither queues behind a burst of binds.
common::Status SchedulerServer::BuildClients() {
  GPUSCHED_ASSIGN_OR_RETURN(Connection conn, Connect(cfg_.client_connection.kubeconfig));
  conn_ = std::move(conn);
  spdlog::info("gpusched scheduler: API server {}", conn_->cluster.Describe());
  const RestClientOptions opts{cfg_.client_connection.qps, cfg_.client_connection.burst,
                               &api_metrics_};
  GPUSCHED_ASSIGN_OR_RETURN(rest_, NewRestClient(*conn_, opts, clock_, main_random_, http_stop_));
  kube::client::KubeApiClientOptions api_opts;
  api_opts.reporting_instance = ("gpusched-" + hostname_).substr(0, 128);
  api_opts.wait = [this](common::Duration d) { http_stop_.Wait(d); };  // bind read-backs
  api_ = std::make_unique<kube::client::KubeApiClient>(*rest_, clock_, api_opts);
  // Events are written by background threads with a client of their own (AsyncEventClient), as
  // kube-scheduler's event broadcaster does, so that a binding thread's next bind waits neither
  // for the event of the last one nor for its tokens.
  GPUSCHED_ASSIGN_OR_RETURN(events_rest_,
                            NewRestClient(*conn_, opts, clock_, events_random_, http_stop_));
  events_api_ = std::make_unique<kube::client::KubeApiClient>(*events_rest_, clock_, api_opts);
  events_ = std::make_unique<kube::client::AsyncEventClient>(
      *api_, *events_api_, clock_,
      kube::client::AsyncEventOptions{.senders = EventThreads(cfg_.client_connection.qps)});
  if (cfg_.leader_election.leader_elect) {
    GPUSCHED_ASSIGN_OR_RETURN(le_rest_,
                              NewRestClient(*conn_, opts, clock_, le_random_, http_stop_));
  }
  return common::Status::Ok();
}

common::Status SchedulerServer::BuildScheduler() {
  if (common::Status s = plugins::RegisterInTreePlugins(registry_); !s.ok()) {
    return s.WithContext("registering plugins");
  }
  // Binding cycles: their concurrency, not scheduling, bounds the bind rate (BindingThreads).
  executor_ =
      std::make_unique<common::ThreadPoolExecutor>(BindingThreads(cfg_.client_connection.qps));
  sched_metrics_ = std::make_unique<metrics::SchedulerMetrics>(metrics_registry_);
  scheduler::SchedulerDeps deps{clock_, sched_random_, *events_, *executor_, registry_};
  deps.metrics = sched_metrics_.get();
  deps.node_group_labels = flags_.node_group_labels;
  deps.network = &network_store_;  // NetworkLocality's AppGroups, topologies, measured traffic
  GPUSCHED_ASSIGN_OR_RETURN(sched_, scheduler::Scheduler::Create(cfg_, std::move(deps)));
  sched_->SetDecisionObserver(scheduler::LogDecision);  // one line per decision at -v=2
  sched_->SetDecisionAnnotation(flags_.decision_annotation);
  std::string profiles;
  for (const auto& p : cfg_.profiles) profiles += (profiles.empty() ? "" : ",") + p.scheduler_name;
  spdlog::info(
      "gpusched scheduler: profiles [{}], qps {} burst {}, leader election {}, {} binding "
      "threads, {} event threads",
      profiles, cfg_.client_connection.qps, cfg_.client_connection.burst,
      cfg_.leader_election.leader_elect ? "on" : "off", BindingThreads(cfg_.client_connection.qps),
      EventThreads(cfg_.client_connection.qps));
  return common::Status::Ok();
}

void SchedulerServer::BuildInformers() {
  recency_ =
      std::make_unique<EventRecencyHandler>(sched_->events(), clock_);  // informer lag for /metrics
  recency_->RegisterMetrics(metrics_registry_);
  pods_ = kube::informer::NewPodInformer(*rest_, *recency_, clock_);
  nodes_ = kube::informer::NewNodeInformer(*rest_, *recency_, clock_);
  pdbs_ = kube::informer::NewPdbInformer(*rest_, *recency_, clock_);  // preemption reads them
  for (kube::informer::GangPolicyApi api :
       {kube::informer::GangPolicyApi::kPodGroup, kube::informer::GangPolicyApi::kVolcano,
        kube::informer::GangPolicyApi::kWorkload}) {
    gang_informers_.push_back(kube::informer::NewPodGroupInformer(*rest_, *recency_, clock_, api));
  }
  // Native PodGroups in the version the API server serves (Kubernetes 1.36 v1alpha2, 1.37
  // v1beta1 or v1alpha3).
  kube::informer::InformerOptions native;
  native.reflector.path = kube::informer::NativePodGroupPath(*rest_);
  gang_informers_.push_back(kube::informer::NewPodGroupInformer(
      *rest_, *recency_, clock_, kube::informer::GangPolicyApi::kNative, std::move(native)));
  // The volume plugins' objects (PVs, PVCs, StorageClasses, CSINodes, CSIDrivers). Like the
  // gang informers they are not waited for: until one syncs, a pod with claims is unschedulable
  // ("not found") and is retried on the object's add event.
  using kube::informer::StorageKind;
  for (StorageKind kind :
       {StorageKind::kPersistentVolume, StorageKind::kPersistentVolumeClaim,
        StorageKind::kStorageClass, StorageKind::kCSINode, StorageKind::kCSIDriver}) {
    gang_informers_.push_back(kube::informer::NewStorageInformer(*rest_, *recency_, clock_, kind));
  }
  // The DynamicResources plugin's objects (DeviceClasses, ResourceSlices, ResourceClaims,
  // DeviceTaintRules of resource.k8s.io/v1). Not waited for either; on a cluster that does not
  // serve one (resource.k8s.io/v1 before Kubernetes 1.34, its DeviceTaintRules before 1.37) it
  // retries with backoff, logging the error once, and pods without claims are unaffected.
  using kube::informer::DraKind;
  for (DraKind kind : {DraKind::kDeviceClass, DraKind::kResourceSlice, DraKind::kResourceClaim,
                       DraKind::kDeviceTaintRule}) {
    gang_informers_.push_back(kube::informer::NewDraInformer(*rest_, *recency_, clock_, kind));
  }
  // NetworkLocality in any profile (it is a default plugin): watch the NetworkAware CRDs (a
  // missing CRD is a warning; annotations keep working).
  for (const auto& p : cfg_.profiles) {
    framework::runtime::Framework* fw = sched_->FrameworkFor(p.scheduler_name);
    if (fw == nullptr || crd_watch_ != nullptr) continue;
    const std::vector<std::string> names = fw->PluginNames(config::Point::kPreFilter);
    if (std::find(names.begin(), names.end(), "NetworkLocality") != names.end()) {
      crd_watch_ = std::make_unique<addons::network::watch::CrdWatch>(*rest_, *recency_, clock_);
    }
  }
  // Informer watches end when their client is cancelled (within about a second).
  group_.Add("informers", nullptr, [this] {
    pods_->Stop();
    nodes_->Stop();
    pdbs_->Stop();
    for (auto& g : gang_informers_) g->Stop();
    if (crd_watch_) crd_watch_->Stop();
    CancelClients();
    pods_->Join();
    nodes_->Join();
    pdbs_->Join();
    for (auto& g : gang_informers_) g->Join();
    crd_watch_.reset();  // joins its threads
    executor_->Drain();
  });
  if (crd_watch_ != nullptr) {
    group_.Add(
        "network CRD watch",
        [this] {
          crd_watch_->Probe();
          crd_watch_->Start();
          spdlog::info(
              "gpusched scheduler: NetworkLocality enabled: watching AppGroup and "
              "NetworkTopology objects");
        },
        nullptr);  // stopped with the informers (it shares their client)
  }
}

// /metrics, /healthz, /livez, /readyz. Stopped (by its destructor) before anything its callbacks
// read is gone: the server is declared after the scheduler, the informers and the leader state.
common::Status SchedulerServer::BuildServing() {
  const std::string lease =
      cfg_.leader_election.leader_elect
          ? cfg_.leader_election.resource_namespace + "/" + cfg_.leader_election.resource_name
          : "";
  metrics::AddCallback(metrics_registry_, metrics::names::kLeader,
                       [this, lease](std::vector<metrics::Sample>& out) {
                         out.push_back({{lease}, leading_.load() ? 1.0 : 0.0});
                       });
  metrics::AddCallback(metrics_registry_, metrics::names::kInformerSynced,
                       [this](std::vector<metrics::Sample>& out) {
                         out.push_back({{"nodes"}, nodes_->HasSynced() ? 1.0 : 0.0});
                         out.push_back({{"pods"}, pods_->HasSynced() ? 1.0 : 0.0});
                         out.push_back({{"poddisruptionbudgets"}, pdbs_->HasSynced() ? 1.0 : 0.0});
                       });
  ReadyFn ready = [this]() -> std::string {
    if (!nodes_->HasSynced() || !pods_->HasSynced() || !pdbs_->HasSynced()) {
      return "informers not synced";
    }
    if (!leader_known_.load()) return "leadership not known yet";
    return "";
  };
  Serving::RegisterProcessMetrics(metrics_registry_, "scheduler", ready);
  if (!secure_) return common::Status::Ok();
  GPUSCHED_ASSIGN_OR_RETURN(serving_,
                            Serving::Start(flags_.serving, *secure_, metrics_registry_, ready));
  spdlog::info("gpusched scheduler: serving /metrics, /healthz, /livez, /readyz on {}",
               serving_->Describe(flags_.serving, *secure_));
  return common::Status::Ok();
}

common::Status SchedulerServer::BuildLeaderElection() {
  if (!cfg_.leader_election.leader_elect) return common::Status::Ok();
  kube::leaderelection::LeaderElectionConfig lc;
  lc.lease_namespace = cfg_.leader_election.resource_namespace;
  lc.lease_name = cfg_.leader_election.resource_name;
  lc.identity = hostname_ + "_" + NewUuid();
  lc.lease_duration = std::chrono::milliseconds(cfg_.leader_election.lease_duration_ms);
  lc.renew_deadline = std::chrono::milliseconds(cfg_.leader_election.renew_deadline_ms);
  lc.retry_period = std::chrono::milliseconds(cfg_.leader_election.retry_period_ms);
  lc.release_on_cancel = true;
  lc.seed = TimeSeed();
  kube::leaderelection::LeaderCallbacks cb;
  cb.on_started_leading = [this] {
    leading_.store(true);
    leader_known_.store(true);
    StartScheduling();
  };
  cb.on_stopped_leading = [this] {
    leading_.store(false);
    common::MutexLock l(mu_);
    if (!shutting_down_) lost_leadership_ = true;
    cv_.notify_all();
  };
  cb.on_new_leader = [this](std::string_view id) {
    leader_known_.store(true);
    spdlog::info("gpusched scheduler: new leader {}", id);
  };
  GPUSCHED_ASSIGN_OR_RETURN(elector_,
                            kube::leaderelection::LeaderElector::Create(*le_rest_, clock_, lc, cb));
  spdlog::info("gpusched scheduler: leader election on lease {}/{} as {}", lc.lease_namespace,
               lc.lease_name, lc.identity);
  return common::Status::Ok();
}

// GPU utilization (DCGM metrics in Prometheus) and the measured traffic matrix for
// NetworkLocality, both optional: never block a scheduling cycle; errors are logged when they
// change; readings go stale after their limit.
void SchedulerServer::AddRefreshers() {
  if (!flags_.gpu_util_url.empty()) {
    telemetry::gpu_utilization::Options o;
    o.prometheus_url = flags_.gpu_util_url;
    o.staleness = CheckedDuration(flags_.gpu_util_staleness);
    auto refresher = std::make_shared<telemetry::gpu_utilization::UtilizationRefresher>(
        o, prometheus_http_, clock_,
        [this](std::string_view node, double u) { sched_->SetGpuUtilization(node, u); });
    auto last_error = std::make_shared<std::string>();
    group_.Add(
        "GPU utilization refresher",
        [this, refresher, last_error, url = o.prometheus_url] {
          util_thread_.Start(
              [refresher, last_error, url] {
                common::Status st = refresher->RunOnce();
                std::string err = st.ok() ? "" : std::string(st.message());
                if (err == *last_error) return;
                if (err.empty()) {
                  spdlog::info("gpusched scheduler: GPU utilization from {} restored", url);
                } else {
                  spdlog::warn("gpusched scheduler: {}", err);
                }
                *last_error = std::move(err);
              },
              Millis(CheckedDuration(flags_.gpu_util_interval)));
          spdlog::info("gpusched scheduler: GPU utilization from Prometheus {} every {}", url,
                       flags_.gpu_util_interval);
        },
        [this] { util_thread_.Stop(); });
  }
  if (!flags_.traffic_url.empty() && crd_watch_ == nullptr) {
    spdlog::warn(
        "gpusched scheduler: --network-traffic-prometheus-url ignored: no profile "
        "enables NetworkLocality");
  } else if (!flags_.traffic_url.empty()) {
    telemetry::traffic::Options o;
    o.prometheus_url = flags_.traffic_url;
    o.query = flags_.traffic_query;
    o.workload_label = flags_.traffic_workload_label;
    o.staleness = CheckedDuration(flags_.traffic_staleness);
    auto refresher = std::make_shared<telemetry::traffic::TrafficMatrixRefresher>(
        o, traffic_http_, clock_, network_store_);
    group_.Add(
        "traffic matrix refresher",
        [this, refresher] {
          // Errors are logged by the refresher when they change; the last good matrix stays.
          traffic_thread_.Start([refresher] { refresher->RunOnce().IgnoreError(); },
                                Millis(CheckedDuration(flags_.traffic_interval)));
          spdlog::info(
              "gpusched scheduler: NetworkLocality traffic matrix from Prometheus {} every {}",
              flags_.traffic_url, flags_.traffic_interval);
        },
        [this] { traffic_thread_.Stop(); });
  }
}

void SchedulerServer::AddSchedulingLoop() {
  if (elector_) {
    // Run() releases the lease if we hold it; stopped after the scheduling loop has drained.
    group_.Add(
        "leader election", [this] { elector_thread_ = std::thread([this] { elector_->Run(); }); },
        [this] {
          elector_->Stop();
          elector_thread_.join();
        });
  }
  group_.Add(
      "scheduling loop",
      [this] {
        if (!elector_) StartScheduling();  // else when the lease is acquired
      },
      [this] {
        sched_->Stop();  // no new pod is popped
        std::thread t;
        {
          common::MutexLock l(mu_);
          t = std::move(sched_thread_);
        }
        if (t.joinable()) t.join();  // the scheduling cycle in progress finishes
        if (!lost_) DrainBindingCycles();
      });
}

bool SchedulerServer::StartInformersAndSync() {
  if (!informers_started_) {
    informers_started_ = true;
    nodes_->Start();
    pods_->Start();
    pdbs_->Start();
    for (auto& g : gang_informers_) g->Start();
  }
  auto t0 = std::chrono::steady_clock::now();
  while (!(nodes_->HasSynced() && pods_->HasSynced() && pdbs_->HasSynced())) {
    if (signal_ != 0) return false;
    {
      common::MutexLock l(mu_);
      if (shutting_down_) return false;
    }
    nodes_->WaitForSync(std::chrono::milliseconds(100));
    pods_->WaitForSync(std::chrono::milliseconds(100));
    pdbs_->WaitForSync(std::chrono::milliseconds(100));
    if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(10)) {
      spdlog::info(
          "gpusched scheduler: waiting for the informers to sync (nodes {}, pods {}, "
          "poddisruptionbudgets {})",
          nodes_->HasSynced(), pods_->HasSynced(), pdbs_->HasSynced());
      t0 = std::chrono::steady_clock::now();
    }
  }
  spdlog::info("gpusched scheduler: informers synced: {} nodes, {} pods, {} poddisruptionbudgets",
               nodes_->Size(), pods_->Size(), pdbs_->Size());
  return true;
}

void SchedulerServer::StartScheduling() {
  common::MutexLock l(mu_);
  if (shutting_down_ || sched_thread_.joinable()) return;
  sched_thread_ = std::thread([this] {
    if (delay_cache_ && !StartInformersAndSync()) return;
    spdlog::info("gpusched scheduler: scheduling");
    sched_->Run();
  });
}

int SchedulerServer::Run() {
  if (!delay_cache_ && !StartInformersAndSync()) {
    spdlog::info("gpusched scheduler: interrupted before the informers synced; exiting");
    CancelClients();
    return kExitOk;
  }
  group_.Start();
  lost_ = WaitForStop();
  if (lost_) {
    // Someone else may lead as soon as our lease runs out: stop at once, abandon what is in
    // flight (the new leader rebuilds everything from the API), exit 1 as kube-scheduler does.
    spdlog::error("gpusched scheduler: leaderelection lost; exiting");
    sched_->Stop();
    CancelClients();
  } else {
    spdlog::info("gpusched scheduler: received signal {}; shutting down",
                 static_cast<int>(signal_));
  }
  group_.Stop();
  LogExit();
  return lost_ ? 1 : kExitOk;
}

bool SchedulerServer::WaitForStop() {
  while (true) {
    std::unique_lock<std::mutex> l(mu_.native());
    cv_.wait_for(l, std::chrono::milliseconds(100));
    bool lost = [this]() GPUSCHED_NO_THREAD_SAFETY_ANALYSIS { return lost_leadership_; }();
    if (lost || signal_ != 0) {
      [this]() GPUSCHED_NO_THREAD_SAFETY_ANALYSIS { shutting_down_ = true; }();
      return lost;
    }
  }
}

void SchedulerServer::CancelClients() {
  if (rest_) rest_->Cancel();
  if (events_rest_) events_rest_->Cancel();
  http_stop_.Stop();
}

// Lets the binding cycles in flight finish, but not for ever (an unreachable API server); then
// their events: 5 s for the queue, and a send still stuck a second later is cancelled.
void SchedulerServer::DrainBindingCycles() {
  Stopper drained;
  std::thread watchdog([&] {
    if (!drained.Wait(std::chrono::seconds(15))) {
      spdlog::warn("gpusched scheduler: binds still in flight after 15s; cancelling them");
      CancelClients();
    }
  });
  executor_->Drain();
  drained.Stop();
  watchdog.join();
  spdlog::info("gpusched scheduler: binding cycles finished");
  Stopper events_sent;
  std::thread events_watchdog([&] {
    if (!events_sent.Wait(std::chrono::seconds(6))) events_rest_->Cancel();
  });
  if (events_->Shutdown(std::chrono::seconds(5)) == 0)
    spdlog::info("gpusched scheduler: events sent");
  events_sent.Stop();
  events_watchdog.join();
}

void SchedulerServer::LogExit() {
  const auto& st = sched_->stats();
  spdlog::info("gpusched scheduler: exiting ({} scheduled, {} unschedulable attempts, {} errors)",
               st.scheduled.load(), st.unschedulable.load(), st.errors.load());
  spdlog::default_logger()->flush();
}

}  // namespace gpusched::cmd
