// SPDX-License-Identifier: Apache-2.0
// gpusched scheduler: runs gpusched as an additional scheduler against a real API server. Pods
// whose spec.schedulerName names one of the config's profiles are placed by it; every other pod is
// left to its own scheduler (but counted in the GPU accounting once it is bound).
//
//   gpusched scheduler --config FILE [--kubeconfig FILE] [--leader-elect[=false]] [-v N]
//                      [--logging-format json] [--decision-annotation]
//                      [--bind-address 0.0.0.0] [--secure-port 10259] [--tls-cert-file F
//                       --tls-private-key-file F] [--client-ca-file F]
//                      [--authentication-kubeconfig F] [--authorization-kubeconfig F] [--port N]
//                      [--gpu-utilization-prometheus-url URL [--gpu-utilization-refresh-interval
//                       15s] [--gpu-utilization-staleness 2m]]
//
// With --gpu-utilization-prometheus-url a thread refreshes each node's GPU utilization from DCGM
// exporter metrics in Prometheus (telemetry::gpu_utilization::UtilizationRefresher ->
// Cache::SetGpuUtilization); the node annotation gpusched.io/gpu-utilization stays the fallback
// (docs/gpu-placement.md). With NetworkLocality enabled and --network-traffic-prometheus-url set, a
// thread refreshes the measured workload traffic matrix (service mesh bytes; telemetry::traffic::
// TrafficMatrixRefresher -> NetworkStore) every --network-traffic-refresh-interval
// (docs/network-locality.md).
//
// At -v 2 every decision is logged (scheduler::LogDecision, the Scheduler's decision observer);
// --decision-annotation writes gpusched.io/decision on each pod it binds (docs/explain.md).
//
// This file parses the flags and loads the config (flags override it, as kube-scheduler's);
// SchedulerServer (scheduler_server.h) builds the components, runs them and shuts them down.
// A second SIGTERM/SIGINT exits at once.
#include "src/scheduler/scheduler.h"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cmd/gpusched/commands.h"
#include "cmd/gpusched/read_only_api.h"
#include "cmd/gpusched/scheduler_server.h"
#include "cmd/gpusched/secure_serving.h"
#include "cmd/gpusched/serving.h"
#include "cmd/gpusched/wiring.h"
#include "src/api/traffic_matrix.h"
#include "src/cache/network_store.h"
#include "src/common/clock.h"
#include "src/common/executor.h"
#include "src/common/random.h"
#include "src/config/config.h"
#include "src/config/duration.h"
#include "src/framework/registry.h"
#include "src/plugins/in_tree_registry.h"
#include "src/telemetry/traffic/traffic_refresher.h"

namespace gpusched::cmd {
namespace {

// Set by the signal handler; read by the main loop.
volatile std::sig_atomic_t g_signal = 0;

extern "C" void OnShutdownSignal(int sig) {
  if (g_signal != 0) _exit(1);  // a second signal: do not wait for anything
  g_signal = sig;
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
    app_.add_option("--leader-elect-resource-namespace", resource_namespace_,
                    "Namespace of the Lease");
    app_.add_option("--leader-elect-resource-lock", resource_lock_, "Lock kind; only \"leases\"");
    // --bind-address, --secure-port (10259, as kube-scheduler), TLS, delegated authn/authz.
    AddSecureServingFlags(app_, serving_, SecureServingFlagSet{});
    app_.add_option(
            "--node-group-label", node_group_labels_,
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
      std::cerr << "error: " << (config_file_.empty() ? "flags" : config_file_) << ": "
                << s.message() << "\n";
      return kExitBadInput;
    }
    if (common::Status s = CheckProfiles(*config); !s.ok()) {
      std::cerr << "error: " << s.message() << "\n";
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
        return common::InvalidArgumentError("--leader-elect: want true or false, got " +
                                            leader_elect_);
      }
    }
    struct DurationFlag {
      const char* flag;
      const std::string& value;
      int64_t& ms;
    } durations[] = {
        {"--leader-elect-lease-duration", lease_duration_, c.leader_election.lease_duration_ms},
        {"--leader-elect-renew-deadline", renew_deadline_, c.leader_election.renew_deadline_ms},
        {"--leader-elect-retry-period", retry_period_, c.leader_election.retry_period_ms}};
    for (auto& d : durations) {
      if (d.value.empty()) continue;
      auto ns = config::ParseGoDurationNanos(d.value);
      if (!ns || *ns <= 0) {
        return common::InvalidArgumentError(std::string(d.flag) +
                                            ": want a positive duration like 15s, got " + d.value);
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

  // Builds the profiles' frameworks once on a client that writes nothing, so that an invalid
  // plugin arg is reported before anything connects (kube-scheduler validates its configuration,
  // the plugins' args included, before it creates its clients).
  static common::Status CheckProfiles(const config::SchedulerConfig& cfg) {
    framework::Registry registry;
    GPUSCHED_RETURN_IF_ERROR(plugins::RegisterInTreePlugins(registry));
    common::SystemClock clock;
    common::Random random(0);
    ReadOnlyApi api;
    common::InlineExecutor executor;
    return scheduler::Scheduler::Create(
               cfg, scheduler::SchedulerDeps{clock, random, api, executor, registry})
        .status();
  }

  int Serve(const config::SchedulerConfig& cfg) {
    InstallShutdownHandler(OnShutdownSignal);  // before any thread exists
    SchedulerServer server(cfg, ServerFlags(), g_signal);
    if (common::Status s = server.Build(); !s.ok()) {
      std::cerr << "error: " << s.message() << "\n";
      return kExitBadInput;
    }
    return server.Run();
  }

  SchedulerServerFlags ServerFlags() const {
    SchedulerServerFlags f;
    f.serving = serving_;
    f.node_group_labels = node_group_labels_;
    f.decision_annotation = decision_annotation_;
    f.gpu_util_url = gpu_util_url_;
    f.gpu_util_interval = gpu_util_interval_;
    f.gpu_util_staleness = gpu_util_staleness_;
    f.traffic_url = traffic_url_;
    f.traffic_query = traffic_query_;
    f.traffic_workload_label = traffic_workload_label_;
    f.traffic_interval = traffic_interval_;
    f.traffic_staleness = traffic_staleness_;
    f.seed = seed_;
    return f;
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
  SecureServingFlags serving_;
  std::vector<std::string> node_group_labels_ = {
      "eks.amazonaws.com/nodegroup", "cloud.google.com/gke-nodepool", "gpusched.io/node-group"};
  bool decision_annotation_ = false;
  std::string gpu_util_url_;
  std::string gpu_util_interval_ = "15s";
  std::string gpu_util_staleness_ = "2m";
  std::string traffic_url_;
  std::string traffic_query_ = std::string(telemetry::traffic::kIstioQuery);
  std::string traffic_workload_label_ = std::string(api::kDefaultWorkloadLabel);
  std::string traffic_interval_ = "30s";
  std::string traffic_staleness_ = "5m";
  std::optional<uint64_t> seed_;
};

}  // namespace

std::unique_ptr<Command> NewSchedulerCommand(CLI::App& root) {
  return std::make_unique<SchedulerCommand>(root);
}

}  // namespace gpusched::cmd
