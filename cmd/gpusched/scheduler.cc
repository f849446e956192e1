// SPDX-License-Identifier: Apache-2.0
// gpusched scheduler: runs gpusched as an additional scheduler against a real API server. Pods
// whose spec.schedulerName names one of the config's profiles are placed by it; every other pod is
// left to its own scheduler (but counted in the GPU accounting once it is bound).
//
//   gpusched scheduler --config FILE [--kubeconfig FILE] [--leader-elect[=false]] [-v N]
//                      [--logging-format json] [--decision-annotation]
//                      [--gpu-utilization-prometheus-url URL [--gpu-utilization-refresh-interval
//                       15s] [--gpu-utilization-staleness 2m]]
//
// With --gpu-utilization-prometheus-url a thread refreshes each node's GPU utilization from DCGM
// exporter metrics in Prometheus (gpu_metrics::UtilizationRefresher -> Cache::SetGpuUtilization);
// the node annotation gpusched.io/gpu-utilization stays the fallback (docs/gpu-placement.md).
// With NetworkLocality enabled and --network-traffic-prometheus-url set, a thread refreshes the
// measured workload traffic matrix (service mesh bytes; network::prometheus::
// TrafficMatrixRefresher -> NetworkStore) every --network-traffic-refresh-interval
// (docs/network-locality.md).
//
// At -v 2 every decision is logged (scheduler::LogDecision, the Scheduler's decision observer);
// --decision-annotation writes gpusched.io/decision on each pod it binds (docs/explain.md).
//
// Wiring (the only place it happens):
//
//   HttpRestClient ──► pod informer ──┐                      ┌─► AsyncEventClient ─► KubeApiClient
//     (qps/burst)  ──► node informer ─┴─► Scheduler ─────────┤   (events: 2-16 threads) └─ HttpRestClient
//                                          ▲   ▲ 1 s ticker  └─ ThreadPoolExecutor(4-32): binding cycles
//   HttpRestClient ──► LeaderElector ──────┘   (Flush, CleanupExpiredAssumedPods)
//   (own token bucket, as kube-scheduler's leader-election client)
//
// Life cycle: load the config (flags override it, as kube-scheduler's), build the clients, start
// the informers and wait for them to sync, then schedule — at once, or when the lease is
// acquired with --leader-elect. Losing the lease stops scheduling at once and exits 1
// ("leaderelection lost"), as kube-scheduler does. SIGTERM/SIGINT: stop taking pods, let the
// binding cycles in flight finish (15 s at most), then their queued events (5 s at most), release
// the lease, exit 0. A second signal
// exits at once.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#include <spdlog/spdlog.h>

#include "cmd/gpusched/commands.h"
#include "cmd/gpusched/serving.h"
#include "cmd/gpusched/wiring.h"
#include "src/common/clock.h"
#include "src/common/executor.h"
#include "src/common/mutex.h"
#include "src/common/random.h"
#include "src/config/config.h"
#include "src/config/duration.h"
#include "src/framework/registry.h"
#include "src/gpu_metrics/utilization.h"
#include "src/kube/client/api_writer.h"
#include "src/kube/client/async_events.h"
#include "src/kube/client/http_client.h"
#include "src/kube/informer/informer.h"
#include "src/kube/leaderelection/leader_elector.h"
#include "src/metrics/catalog.h"
#include "src/metrics/component_metrics.h"
#include "src/metrics/scheduler_metrics.h"
#include "src/network/store.h"
#include "src/network/prometheus/traffic_refresher.h"
#include "src/network/watch/crd_watch.h"
#include "src/plugins/in_tree_registry.h"
#include "src/scheduler/decision_log.h"
#include "src/scheduler/metrics_callbacks.h"
#include "src/scheduler/scheduler.h"

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

// Set by the signal handler; read by the main loop.
volatile std::sig_atomic_t g_signal = 0;

extern "C" void OnShutdownSignal(int sig) {
  if (g_signal != 0) _exit(1);  // a second signal: do not wait for anything
  g_signal = sig;
}

std::string Hostname() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof(buf) - 1) != 0 || buf[0] == '\0') return "localhost";
  return buf;
}

// A random (version 4) UUID.
std::string NewUuid() {
  std::random_device rd;
  std::mt19937_64 gen((static_cast<uint64_t>(rd()) << 32) ^ rd() ^
                      static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()));
  uint64_t hi = gen();
  uint64_t lo = gen();
  hi = (hi & 0xFFFFFFFFFFFF0FFFull) | 0x0000000000004000ull;
  lo = (lo & 0x3FFFFFFFFFFFFFFFull) | 0x8000000000000000ull;
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%08x-%04x-%04x-%04x-%012llx", static_cast<unsigned>(hi >> 32),
                static_cast<unsigned>((hi >> 16) & 0xFFFF), static_cast<unsigned>(hi & 0xFFFF),
                static_cast<unsigned>(lo >> 48), static_cast<unsigned long long>(lo & 0xFFFFFFFFFFFFull));
  return buf;
}

class SchedulerCommand final : public Command {
 public:
  explicit SchedulerCommand(CLI::App& root)
      : app_(*root.add_subcommand(
            "scheduler",
            "Run as a Kubernetes scheduler: place the pods whose spec.schedulerName names a "
            "profile of the config")) {
    app_.add_option("--config", config_file_,
                    "KubeSchedulerConfiguration file (default: one profile named gpu-scheduler "
                    "with the default plugins)");
    app_.add_option("--kubeconfig", kubeconfig_,
                    "kubeconfig file (overrides clientConnection.kubeconfig; default: KUBECONFIG, "
                    "in-cluster config, ~/.kube/config)");
    app_.add_flag("--leader-elect{true}", leader_elect_,
                  "Elect a leader before scheduling: --leader-elect, --leader-elect=false "
                  "(overrides leaderElection.leaderElect)");
    app_.add_option("--leader-elect-lease-duration", lease_duration_,
                    "How long followers wait after the last renew before taking over (e.g. 15s)");
    app_.add_option("--leader-elect-renew-deadline", renew_deadline_,
                    "How long the leader retries renewing before it gives up (e.g. 10s)");
    app_.add_option("--leader-elect-retry-period", retry_period_,
                    "Interval between acquire and renew attempts (e.g. 2s)");
    app_.add_option("--leader-elect-resource-name", resource_name_, "Name of the Lease");
    app_.add_option("--leader-elect-resource-namespace", resource_namespace_, "Namespace of the Lease");
    app_.add_option("--leader-elect-resource-lock", resource_lock_, "Lock kind; only \"leases\"");
    AddServingFlags(app_, serving_, 10251);  // --bind-address, --port: /metrics, /healthz, /readyz
    app_.add_option("--node-group-label", node_group_labels_,
                    "Node label(s) naming a node's group in gpusched_cluster_* metrics, tried in order")
        ->capture_default_str();
    app_.add_flag("--decision-annotation", decision_annotation_,
                  "Write a compact summary of each placement (node, score, runner-up, "
                  "feasible/total) as the pod annotation gpusched.io/decision when binding");
    app_.add_option("--gpu-utilization-prometheus-url", gpu_util_url_,
                    "Prometheus base URL (e.g. http://prometheus:9090) to read node GPU "
                    "utilization from DCGM exporter metrics (DCGM_FI_DEV_GPU_UTIL, "
                    "DCGM_FI_DEV_FB_USED/FREE); default: off, the node annotation "
                    "gpusched.io/gpu-utilization only");
    app_.add_option("--gpu-utilization-refresh-interval", gpu_util_interval_,
                    "How often to query Prometheus for GPU utilization")
        ->capture_default_str();
    app_.add_option("--gpu-utilization-staleness", gpu_util_staleness_,
                    "A node's reading older than this counts as unknown (neutral score)")
        ->capture_default_str();
    app_.add_option("--network-traffic-prometheus-url", traffic_url_,
                    "Prometheus base URL to read the workload traffic matrix from (service mesh "
                    "metrics) for NetworkLocality; default: off");
    app_.add_option("--network-traffic-query", traffic_query_,
                    "PromQL giving bytes/s per (source_workload, source_workload_namespace, "
                    "destination_workload, destination_workload_namespace); default: Istio's "
                    "TCP and HTTP byte counters")
        ->capture_default_str();
    app_.add_option("--network-traffic-workload-label", traffic_workload_label_,
                    "Pod label whose value names the pod's workload in the traffic matrix")
        ->capture_default_str();
    app_.add_option("--network-traffic-refresh-interval", traffic_interval_,
                    "How often to query Prometheus for the traffic matrix")
        ->capture_default_str();
    app_.add_option("--network-traffic-staleness", traffic_staleness_,
                    "Traffic matrix edges older than this are dropped")
        ->capture_default_str();
    app_.add_option("--seed", seed_,
                    "Seed of the tie-breaking random generator (default: from the clock). With "
                    "the same config, nodes (in name order) and pods (one at a time), "
                    "`gpusched simulate --seed` with the same value predicts the placements");
  }

  CLI::App& app() override { return app_; }

  int Run() override {
    auto config = LoadConfig();
    if (!config.ok()) {
      std::cerr << "error: " << config.status().message() << "\n";
      return kExitBadInput;
    }
    if (common::Status s = ApplyFlags(*config); !s.ok()) {
      std::cerr << "error: " << s.message() << "\nRun with --help for more information.\n";
      return kExitUsage;
    }
    if (common::Status s = config::Validate(*config); !s.ok()) {
      std::cerr << "error: " << (config_file_.empty() ? "flags" : config_file_) << ": " << s.message()
                << "\n";
      return kExitBadInput;
    }
    return Serve(*config);
  }

 private:
  // The config file, or the defaults.
  common::StatusOr<config::SchedulerConfig> LoadConfig() const {
    if (config_file_.empty()) return config::DefaultSchedulerConfig();
    return LoadSchedulerConfig(config_file_);
  }

  // The flags on top of the config, as kube-scheduler applies them.
  common::Status ApplyFlags(config::SchedulerConfig& c) const {
    if (!kubeconfig_.empty()) c.client_connection.kubeconfig = kubeconfig_;
    if (!leader_elect_.empty()) {
      if (leader_elect_ == "true" || leader_elect_ == "1") {
        c.leader_election.leader_elect = true;
      } else if (leader_elect_ == "false" || leader_elect_ == "0") {
        c.leader_election.leader_elect = false;
      } else {
        return common::InvalidArgumentError("--leader-elect: want true or false, got " + leader_elect_);
      }
    }
    struct DurationFlag {
      const char* flag;
      const std::string& value;
      int64_t& ms;
    } durations[] = {{"--leader-elect-lease-duration", lease_duration_, c.leader_election.lease_duration_ms},
                     {"--leader-elect-renew-deadline", renew_deadline_, c.leader_election.renew_deadline_ms},
                     {"--leader-elect-retry-period", retry_period_, c.leader_election.retry_period_ms}};
    for (auto& d : durations) {
      if (d.value.empty()) continue;
      auto ns = config::ParseGoDurationNanos(d.value);
      if (!ns || *ns <= 0) {
        return common::InvalidArgumentError(std::string(d.flag) + ": want a positive duration like 15s, got " +
                                            d.value);
      }
      d.ms = *ns / 1'000'000;
    }
    if (!resource_name_.empty()) c.leader_election.resource_name = resource_name_;
    if (!resource_namespace_.empty()) c.leader_election.resource_namespace = resource_namespace_;
    if (!resource_lock_.empty()) c.leader_election.resource_lock = resource_lock_;
    for (const auto& [flag, value] : {std::pair<const char*, const std::string&>{
                                          "--gpu-utilization-refresh-interval", gpu_util_interval_},
                                      std::pair<const char*, const std::string&>{
                                          "--gpu-utilization-staleness", gpu_util_staleness_}}) {
      auto ns = config::ParseGoDurationNanos(value);
      if (!ns || *ns <= 0) {
        return common::InvalidArgumentError(std::string(flag) +
                                            ": want a positive duration like 15s, got " + value);
      }
    }
    for (const auto& [flag, value] : {std::pair<const char*, const std::string&>{
                                          "--network-traffic-refresh-interval", traffic_interval_},
                                      std::pair<const char*, const std::string&>{
                                          "--network-traffic-staleness", traffic_staleness_}}) {
      auto ns = config::ParseGoDurationNanos(value);
      if (!ns || *ns <= 0) {
        return common::InvalidArgumentError(std::string(flag) +
                                            ": want a positive duration like 30s, got " + value);
      }
    }
    if (!traffic_url_.empty() && traffic_url_.rfind("http://", 0) != 0 &&
        traffic_url_.rfind("https://", 0) != 0) {
      return common::InvalidArgumentError(
          "--network-traffic-prometheus-url: want an http(s) URL, got " + traffic_url_);
    }
    if (traffic_query_.empty()) {
      return common::InvalidArgumentError("--network-traffic-query: must not be empty");
    }
    if (traffic_workload_label_.empty()) {
      return common::InvalidArgumentError("--network-traffic-workload-label: must not be empty");
    }
    if (!gpu_util_url_.empty() && gpu_util_url_.rfind("http://", 0) != 0 &&
        gpu_util_url_.rfind("https://", 0) != 0) {
      return common::InvalidArgumentError(
          "--gpu-utilization-prometheus-url: want an http(s) URL, got " + gpu_util_url_);
    }
    return common::Status::Ok();
  }

  int Serve(const config::SchedulerConfig& cfg) {
    // Signals first, before any thread exists.
    InstallShutdownHandler(OnShutdownSignal);

    common::SystemClock clock;
    metrics::Registry metrics_registry;  // everything /metrics serves
    metrics::ApiClientMetrics api_metrics(metrics_registry);
    Stopper http_stop;  // interrupts the HTTP clients' waits on a hard stop
    auto conn = Connect(cfg.client_connection.kubeconfig);
    if (!conn.ok()) {
      std::cerr << "error: " << conn.status().message() << "\n";
      return kExitBadInput;
    }
    spdlog::info("gpusched scheduler: API server {}", conn->cluster.Describe());

    // kube-scheduler gives the main, the events and the leader-election clients a token bucket
    // each; so does gpusched: binds and conditions use the main one, events and the lease their
    // own, so that neither queues behind a burst of binds.
    common::Random main_random(TimeSeed());
    common::Random le_random(TimeSeed() * 31 + 7);
    const RestClientOptions client_opts{cfg.client_connection.qps, cfg.client_connection.burst, &api_metrics};
    auto make_client = [&](common::Random& random) {
      return NewRestClient(*conn, client_opts, clock, random, http_stop);
    };
    auto rest = make_client(main_random);
    if (!rest.ok()) {
      std::cerr << "error: " << rest.status().message() << "\n";
      return kExitBadInput;
    }
    const std::string hostname = Hostname();
    kube::client::KubeApiClientOptions api_opts;
    api_opts.reporting_instance = ("gpusched-" + hostname).substr(0, 128);
    api_opts.wait = [&http_stop](common::Duration d) { http_stop.Wait(d); };  // bind read-backs
    kube::client::KubeApiClient api(**rest, clock, api_opts);
    // Events are written by background threads with a client of their own (AsyncEventClient),
    // as kube-scheduler's event broadcaster does, so that a binding thread's next bind waits
    // neither for the event of the last one nor for its tokens.
    common::Random events_random(TimeSeed() * 17 + 3);
    auto events_rest = make_client(events_random);
    if (!events_rest.ok()) {
      std::cerr << "error: " << events_rest.status().message() << "\n";
      return kExitBadInput;
    }
    kube::client::KubeApiClient events_api(**events_rest, clock, api_opts);
    kube::client::AsyncEventClient events(api, events_api,
                                          {.senders = EventThreads(cfg.client_connection.qps)});

    // AppGroup/NetworkTopology objects for NetworkLocality (kept current by CrdWatch below).
    network::NetworkStore network_store;
    framework::Registry registry;
    if (common::Status s = plugins::RegisterInTreePlugins(registry, {&network_store}); !s.ok()) {
      std::cerr << "error: registering plugins: " << s.ToString() << "\n";
      return kExitBadInput;
    }
    common::Random sched_random(seed_ ? *seed_ : TimeSeed() ^ 0x5eedull);
    // Binding cycles: their concurrency, not scheduling, bounds the bind rate (BindingThreads).
    common::ThreadPoolExecutor executor(BindingThreads(cfg.client_connection.qps));
    metrics::SchedulerMetrics sched_metrics(metrics_registry);
    scheduler::SchedulerDeps sched_deps{clock, sched_random, events, executor, registry};
    sched_deps.metrics = &sched_metrics;
    auto sched = scheduler::Scheduler::Create(cfg, sched_deps);
    if (!sched.ok()) {
      std::cerr << "error: " << sched.status().message() << "\n";
      return kExitBadInput;
    }
    scheduler::Scheduler& s = **sched;
    s.SetDecisionObserver(scheduler::LogDecision);  // one line per decision at -v=2
    s.SetDecisionAnnotation(decision_annotation_);
    std::string profiles;
    for (const auto& p : cfg.profiles) profiles += (profiles.empty() ? "" : ",") + p.scheduler_name;
    spdlog::info("gpusched scheduler: profiles [{}], qps {} burst {}, leader election {}, {} binding "
                 "threads, {} event threads", profiles, cfg.client_connection.qps,
                 cfg.client_connection.burst, cfg.leader_election.leader_elect ? "on" : "off",
                 BindingThreads(cfg.client_connection.qps), EventThreads(cfg.client_connection.qps));

    EventRecencyHandler recency(s, clock);  // informer lag for /metrics
    recency.RegisterMetrics(metrics_registry);
    auto pods = kube::informer::NewPodInformer(**rest, recency, clock);
    auto nodes = kube::informer::NewNodeInformer(**rest, recency, clock);
    // NetworkLocality in any profile (it is a default plugin): watch the NetworkAware CRDs (a
    // missing CRD is a warning; annotations keep working).
    std::unique_ptr<network::CrdWatch> crd_watch;
    for (const auto& p : cfg.profiles) {
      framework::runtime::Framework* fw = s.FrameworkFor(p.scheduler_name);
      if (fw == nullptr || crd_watch != nullptr) continue;
      const std::vector<std::string> names = fw->PluginNames(config::Point::kPreFilter);
      if (std::find(names.begin(), names.end(), "NetworkLocality") != names.end()) {
        crd_watch = std::make_unique<network::CrdWatch>(**rest, network_store, clock);
      }
    }
    if (crd_watch != nullptr) {
      crd_watch->Probe();
      crd_watch->Start();
      spdlog::info("gpusched scheduler: NetworkLocality enabled: watching AppGroup and "
                   "NetworkTopology objects");
    }

    // /metrics, /healthz, /livez, /readyz (stopped before anything its callbacks read is gone:
    // it is declared after the scheduler, the informers and the leader state).
    std::atomic<bool> leading{!cfg.leader_election.leader_elect};
    std::atomic<bool> leader_known{!cfg.leader_election.leader_elect};
    const std::string lease = cfg.leader_election.leader_elect
                                  ? cfg.leader_election.resource_namespace + "/" + cfg.leader_election.resource_name
                                  : "";
    scheduler::RegisterClusterGpuCallbacks(metrics_registry, s.cache(), node_group_labels_);
    metrics::AddCallback(metrics_registry, metrics::names::kLeader, [&](std::vector<metrics::Sample>& out) {
      out.push_back({{lease}, leading.load() ? 1.0 : 0.0});
    });
    metrics::AddCallback(metrics_registry, metrics::names::kInformerSynced, [&](std::vector<metrics::Sample>& out) {
      out.push_back({{"nodes"}, nodes->HasSynced() ? 1.0 : 0.0});
      out.push_back({{"pods"}, pods->HasSynced() ? 1.0 : 0.0});
    });
    ReadyFn ready = [&]() -> std::string {
      if (!nodes->HasSynced() || !pods->HasSynced()) return "informers not synced";
      if (!leader_known.load()) return "leadership not known yet";
      return "";
    };
    Serving::RegisterProcessMetrics(metrics_registry, "scheduler", ready);
    std::unique_ptr<Serving> serving;
    if (serving_.port >= 0) {
      auto sv = Serving::Start(serving_, metrics_registry, ready);
      if (!sv.ok()) {
        std::cerr << "error: " << sv.status().message() << "\n";
        return kExitBadInput;
      }
      serving = std::move(sv).value();
      spdlog::info("gpusched scheduler: serving /metrics, /healthz, /livez, /readyz on http://{}:{}",
                   serving_.bind_address, serving->port());
    }

    // Shared state of the threads below.
    common::Mutex mu;
    std::condition_variable_any cv;
    bool lost_leadership = false;  // guarded by mu
    bool shutting_down = false;    // guarded by mu
    std::thread sched_thread;      // guarded by mu
    bool informers_started = false;

    auto start_informers_and_sync = [&]() -> bool {
      if (!informers_started) {
        informers_started = true;
        nodes->Start();
        pods->Start();
      }
      auto t0 = std::chrono::steady_clock::now();
      while (!(nodes->HasSynced() && pods->HasSynced())) {
        if (g_signal != 0) return false;
        {
          common::MutexLock l(mu);
          if (shutting_down) return false;
        }
        nodes->WaitForSync(std::chrono::milliseconds(100));
        pods->WaitForSync(std::chrono::milliseconds(100));
        if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(10)) {
          spdlog::info("gpusched scheduler: waiting for the informers to sync (nodes {}, pods {})",
                       nodes->HasSynced(), pods->HasSynced());
          t0 = std::chrono::steady_clock::now();
        }
      }
      spdlog::info("gpusched scheduler: informers synced: {} nodes, {} pods", nodes->Size(), pods->Size());
      return true;
    };
    const bool delay_cache = cfg.delay_cache_until_active && cfg.leader_election.leader_elect;
    auto start_scheduling = [&]() {
      common::MutexLock l(mu);
      if (shutting_down || sched_thread.joinable()) return;
      sched_thread = std::thread([&] {
        if (delay_cache && !start_informers_and_sync()) return;
        spdlog::info("gpusched scheduler: scheduling");
        s.Run();
      });
    };

    std::unique_ptr<kube::client::HttpRestClient> le_rest;
    std::unique_ptr<kube::leaderelection::LeaderElector> elector;
    if (cfg.leader_election.leader_elect) {
      auto lr = make_client(le_random);
      if (!lr.ok()) {
        std::cerr << "error: " << lr.status().message() << "\n";
        return kExitBadInput;
      }
      le_rest = std::move(lr).value();
      kube::leaderelection::LeaderElectionConfig lc;
      lc.lease_namespace = cfg.leader_election.resource_namespace;
      lc.lease_name = cfg.leader_election.resource_name;
      lc.identity = hostname + "_" + NewUuid();
      lc.lease_duration = std::chrono::milliseconds(cfg.leader_election.lease_duration_ms);
      lc.renew_deadline = std::chrono::milliseconds(cfg.leader_election.renew_deadline_ms);
      lc.retry_period = std::chrono::milliseconds(cfg.leader_election.retry_period_ms);
      lc.release_on_cancel = true;
      lc.seed = TimeSeed();
      kube::leaderelection::LeaderCallbacks cb;
      cb.on_started_leading = [&] {
        leading.store(true);
        leader_known.store(true);
        start_scheduling();
      };
      cb.on_stopped_leading = [&] {
        leading.store(false);
        common::MutexLock l(mu);
        if (!shutting_down) lost_leadership = true;
        cv.notify_all();
      };
      cb.on_new_leader = [&](std::string_view id) {
        leader_known.store(true);
        spdlog::info("gpusched scheduler: new leader {}", id);
      };
      auto le = kube::leaderelection::LeaderElector::Create(*le_rest, clock, lc, cb);
      if (!le.ok()) {
        std::cerr << "error: " << le.status().message() << "\n";
        return kExitBadInput;
      }
      elector = std::move(le).value();
      spdlog::info("gpusched scheduler: leader election on lease {}/{} as {}", lc.lease_namespace,
                   lc.lease_name, lc.identity);
    }

    if (!delay_cache && !start_informers_and_sync()) {
      spdlog::info("gpusched scheduler: interrupted before the informers synced; exiting");
      (*rest)->Cancel();
      (*events_rest)->Cancel();
      http_stop.Stop();
      return kExitOk;
    }

    // The 1 s ticker the Scheduler asks for.
    Stopper ticker_stop;
    std::thread ticker([&] {
      while (!ticker_stop.Wait(std::chrono::seconds(1))) {
        s.scheduling_queue().Flush();
        s.cache().CleanupExpiredAssumedPods();
      }
    });

    // GPU utilization from Prometheus (optional): never blocks a scheduling cycle; errors are
    // logged when they change, readings go unknown after the staleness limit.
    Stopper util_stop;
    std::thread util_thread;
    CurlHttpGetter prometheus_http("gpusched-gpu-utilization", size_t{16} << 20);
    if (!gpu_util_url_.empty()) {
      gpu_metrics::Options o;
      o.prometheus_url = gpu_util_url_;
      o.staleness = common::Duration(*config::ParseGoDurationNanos(gpu_util_staleness_));
      const common::Duration interval(*config::ParseGoDurationNanos(gpu_util_interval_));
      util_thread = std::thread([&, o, interval] {
        gpu_metrics::UtilizationRefresher refresher(
            o, prometheus_http, clock,
            [&](std::string_view node, double u) { s.cache().SetGpuUtilization(node, u); });
        std::string last_error;
        do {
          common::Status st = refresher.RunOnce();
          std::string err = st.ok() ? "" : std::string(st.message());
          if (err != last_error) {
            if (err.empty()) {
              spdlog::info("gpusched scheduler: GPU utilization from {} restored", o.prometheus_url);
            } else {
              spdlog::warn("gpusched scheduler: {}", err);
            }
            last_error = std::move(err);
          }
        } while (!util_stop.Wait(std::chrono::duration_cast<std::chrono::milliseconds>(interval)));
      });
      spdlog::info("gpusched scheduler: GPU utilization from Prometheus {} every {}", gpu_util_url_,
                   gpu_util_interval_);
    }

    // Measured traffic matrix for NetworkLocality (optional): same pattern; errors keep the last
    // good matrix until it is stale (network/prometheus/traffic_refresher.h).
    Stopper traffic_stop;
    std::thread traffic_thread;
    CurlHttpGetter traffic_http("gpusched-network-traffic", size_t{16} << 20);
    if (!traffic_url_.empty() && crd_watch == nullptr) {
      spdlog::warn("gpusched scheduler: --network-traffic-prometheus-url ignored: no profile "
                   "enables NetworkLocality");
    } else if (!traffic_url_.empty()) {
      network::prometheus::Options o;
      o.prometheus_url = traffic_url_;
      o.query = traffic_query_;
      o.workload_label = traffic_workload_label_;
      o.staleness = common::Duration(*config::ParseGoDurationNanos(traffic_staleness_));
      const common::Duration interval(*config::ParseGoDurationNanos(traffic_interval_));
      traffic_thread = std::thread([&, o, interval] {
        network::prometheus::TrafficMatrixRefresher refresher(o, traffic_http, clock,
                                                              network_store);
        do {
          refresher.RunOnce().IgnoreError();  // logged by the refresher when it changes
        } while (!traffic_stop.Wait(std::chrono::duration_cast<std::chrono::milliseconds>(interval)));
      });
      spdlog::info("gpusched scheduler: NetworkLocality traffic matrix from Prometheus {} every {}",
                   traffic_url_, traffic_interval_);
    }

    std::thread elector_thread;
    if (elector) {
      elector_thread = std::thread([&] { elector->Run(); });
    } else {
      start_scheduling();
    }

    // Wait for a signal or the loss of the lease.
    bool lost = false;
    while (true) {
      std::unique_lock<std::mutex> l(mu.native());
      cv.wait_for(l, std::chrono::milliseconds(100));
      if (lost_leadership) {
        lost = true;
        shutting_down = true;
        break;
      }
      if (g_signal != 0) {
        shutting_down = true;
        break;
      }
    }

    int rc = kExitOk;
    if (lost) {
      // Someone else may lead as soon as our lease runs out: stop at once, abandon what is in
      // flight (the new leader rebuilds everything from the API), exit 1 as kube-scheduler does.
      spdlog::error("gpusched scheduler: leaderelection lost; exiting");
      s.Stop();
      (*rest)->Cancel();
      (*events_rest)->Cancel();
      http_stop.Stop();
      rc = 1;
    } else {
      spdlog::info("gpusched scheduler: received signal {}; shutting down", static_cast<int>(g_signal));
      s.Stop();  // no new pod is popped
    }
    {
      std::thread t;
      {
        common::MutexLock l(mu);
        t = std::move(sched_thread);
      }
      if (t.joinable()) t.join();  // the scheduling cycle in progress finishes
    }
    if (!lost) {
      // Let the binding cycles in flight finish, but not for ever (an unreachable API server).
      Stopper drained;
      std::thread watchdog([&] {
        if (!drained.Wait(std::chrono::seconds(15))) {
          spdlog::warn("gpusched scheduler: binds still in flight after 15s; cancelling them");
          (*rest)->Cancel();
          (*events_rest)->Cancel();
          http_stop.Stop();
        }
      });
      executor.Drain();
      drained.Stop();
      watchdog.join();
      spdlog::info("gpusched scheduler: binding cycles finished");
      // Then their events: 5 s for the queue, and a send still stuck a second later is cancelled.
      Stopper events_sent;
      std::thread events_watchdog([&] {
        if (!events_sent.Wait(std::chrono::seconds(6))) (*events_rest)->Cancel();
      });
      if (events.Shutdown(std::chrono::seconds(5)) == 0) spdlog::info("gpusched scheduler: events sent");
      events_sent.Stop();
      events_watchdog.join();
    }
    ticker_stop.Stop();
    ticker.join();
    util_stop.Stop();
    if (util_thread.joinable()) util_thread.join();
    traffic_stop.Stop();
    if (traffic_thread.joinable()) traffic_thread.join();
    if (elector) {
      elector->Stop();  // Run() releases the lease if we hold it
      elector_thread.join();
    }
    // Informer watches end when their client is cancelled (within about a second).
    pods->Stop();
    nodes->Stop();
    if (crd_watch) crd_watch->Stop();
    (*rest)->Cancel();
    (*events_rest)->Cancel();
    http_stop.Stop();
    pods->Join();
    nodes->Join();
    crd_watch.reset();  // joins its threads
    executor.Drain();
    const auto& st = s.stats();
    spdlog::info("gpusched scheduler: exiting ({} scheduled, {} unschedulable attempts, {} errors)",
                 st.scheduled.load(), st.unschedulable.load(), st.errors.load());
    spdlog::default_logger()->flush();
    return rc;
  }

  CLI::App& app_;
  std::string config_file_;
  std::string kubeconfig_;
  std::string leader_elect_;
  std::string lease_duration_;
  std::string renew_deadline_;
  std::string retry_period_;
  std::string resource_name_;
  std::string resource_namespace_;
  std::string resource_lock_;
  ServingFlags serving_;
  std::vector<std::string> node_group_labels_ = {"eks.amazonaws.com/nodegroup",
                                                 "cloud.google.com/gke-nodepool",
                                                 "gpusched.io/node-group"};
  bool decision_annotation_ = false;
  std::string gpu_util_url_;
  std::string gpu_util_interval_ = "15s";
  std::string gpu_util_staleness_ = "2m";
  std::string traffic_url_;
  std::string traffic_query_ = std::string(network::prometheus::kIstioQuery);
  std::string traffic_workload_label_ = std::string(network::kDefaultWorkloadLabel);
  std::string traffic_interval_ = "30s";
  std::string traffic_staleness_ = "5m";
  std::optional<uint64_t> seed_;
};

}  // namespace

std::unique_ptr<Command> NewSchedulerCommand(CLI::App& root) {
  return std::make_unique<SchedulerCommand>(root);
}

}  // namespace gpusched::cmd
