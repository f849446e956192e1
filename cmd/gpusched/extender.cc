// SPDX-License-Identifier: Apache-2.0
// gpusched extender: serves kube-scheduler's HTTP extender API (filter, prioritize, preempt, bind)
// with the plugins of the config's first profile, over a cluster cache fed by pod and node
// informers.
//
//   gpusched extender [--config FILE] [--kubeconfig FILE] [--bind-address 127.0.0.1] [--port N]
//                     [--tls-cert-file F --tls-private-key-file F] [--threads N]
//                     [--managed-resource nvidia.com/gpu]... [-v N]
//
// Wiring:
//   HttpRestClient ──► pod informer ──┐
//                  ──► node informer ─┴─► InformerFeed ─► Extender (cache, Framework pool)
//   http::Server (N workers) ─► POST /filter /prioritize /preempt /bind ─┘
//                               └─ bind verb ─► KubeApiClient::BindPod
//   1 s ticker ─► Extender::Tick (expires assumptions never confirmed by the informer)
//
// Life cycle: load the config, start the informers and wait for them to sync, then listen.
// SIGTERM/SIGINT: stop listening, stop the informers, exit 0.
#include "src/extender/extender.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <csignal>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "cmd/gpusched/commands.h"
#include "cmd/gpusched/serving.h"
#include "cmd/gpusched/wiring.h"
#include "src/common/clock.h"
#include "src/common/random.h"
#include "src/config/config.h"
#include "src/framework/registry.h"
#include "src/http/server.h"
#include "src/kube/client/api_writer.h"
#include "src/kube/client/http_client.h"
#include "src/kube/informer/informer.h"
#include "src/metrics/component_metrics.h"
#include "src/metrics/scheduler_metrics.h"
#include "src/plugins/in_tree_registry.h"

namespace gpusched::cmd {
namespace {

volatile std::sig_atomic_t g_extender_signal = 0;

extern "C" void OnExtenderSignal(int sig) {
  if (g_extender_signal != 0) _exit(1);
  g_extender_signal = sig;
}

// Informer events into the extender's cache.
class InformerFeed final : public kube::ClusterEventHandler {
 public:
  explicit InformerFeed(extender::Extender& e) : e_(e) {}
  void OnNodeAdd(api::NodePtr node) override { e_.OnNodeAdd(std::move(node)); }
  void OnNodeUpdate(api::NodePtr, api::NodePtr node) override { e_.OnNodeUpdate(std::move(node)); }
  void OnNodeDelete(api::NodePtr node) override { e_.OnNodeDelete(node->meta.name); }
  void OnPodAdd(api::PodPtr pod) override {
    if (!pod->node_name.empty()) e_.OnPodAdd(std::move(pod));
  }
  void OnPodUpdate(api::PodPtr, api::PodPtr pod) override {
    if (!pod->node_name.empty()) e_.OnPodUpdate(std::move(pod));
  }
  void OnPodDelete(api::PodPtr pod) override { e_.OnPodDelete(*pod); }

 private:
  extender::Extender& e_;
};

class ExtenderCommand final : public Command {
 public:
  explicit ExtenderCommand(CLI::App& root)
      : app_(*root.add_subcommand("extender",
                                  "Serve kube-scheduler's HTTP extender API (filter, prioritize, "
                                  "preempt, bind) with gpusched's plugins")) {
    app_.add_option("--config", config_file_,
                    "KubeSchedulerConfiguration file; its first profile's plugins answer "
                    "(default: the default profile)");
    app_.add_option("--kubeconfig", kubeconfig_,
                    "kubeconfig file (default: KUBECONFIG, in-cluster, ~/.kube/config)");
    app_.add_option("--bind-address", bind_address_, "Address to listen on")->capture_default_str();
    app_.add_option("--port", port_, "Port to listen on (0: any free port, printed at start)")
        ->capture_default_str()
        ->check(CLI::Range(0, 65535));
    app_.add_option("--tls-cert-file", tls_cert_,
                    "PEM certificate; serve HTTPS with --tls-private-key-file");
    app_.add_option("--tls-private-key-file", tls_key_, "PEM private key");
    app_.add_option("--threads", threads_, "HTTP worker threads (= Framework instances)")
        ->capture_default_str()
        ->check(CLI::Range(1, 256));
    app_.add_option("--managed-resource", managed_,
                    "Resource whose requesters the extender evaluates; others pass at once "
                    "(repeatable)")
        ->capture_default_str();
    app_.add_option("--max-request-bytes", max_body_, "Largest request body; larger gets 413")
        ->capture_default_str();
    app_.add_option(
            "--assumed-pod-ttl-seconds", assumed_ttl_s_,
            "Drop a pod bound through the extender if the informer has not confirmed it by then")
        ->capture_default_str();
  }

  CLI::App& app() override { return app_; }

  int Run() override {
    if (tls_cert_.empty() != tls_key_.empty()) {
      std::cerr << "error: --tls-cert-file and --tls-private-key-file go together\n";
      return kExitUsage;
    }
    config::SchedulerConfig cfg = config::DefaultSchedulerConfig();
    if (!config_file_.empty()) {
      auto c = LoadSchedulerConfig(config_file_);
      if (!c.ok()) {
        std::cerr << "error: " << c.status().message() << "\n";
        return kExitBadInput;
      }
      cfg = std::move(c).value();
    }
    if (!kubeconfig_.empty()) cfg.client_connection.kubeconfig = kubeconfig_;
    if (common::Status s = config::Validate(cfg); !s.ok()) {
      std::cerr << "error: " << (config_file_.empty() ? "defaults" : config_file_) << ": "
                << s.message() << "\n";
      return kExitBadInput;
    }
    return Serve(cfg);
  }

 private:
  int Serve(const config::SchedulerConfig& cfg) {
    InstallShutdownHandler(OnExtenderSignal);

    common::SystemClock clock;
    Stopper http_stop;  // interrupts the HTTP client's waits on shutdown
    auto conn = Connect(cfg.client_connection.kubeconfig);
    if (!conn.ok()) {
      std::cerr << "error: " << conn.status().message() << "\n";
      return kExitBadInput;
    }
    common::Random random(TimeSeed());
    auto rest = NewRestClient(
        *conn, RestClientOptions{cfg.client_connection.qps, cfg.client_connection.burst, nullptr},
        clock, random, http_stop);
    if (!rest.ok()) {
      std::cerr << "error: " << rest.status().message() << "\n";
      return kExitBadInput;
    }
    kube::client::KubeApiClientOptions api_opts;
    api_opts.default_reporting_controller = "gpusched-extender";
    api_opts.wait = [&http_stop](common::Duration d) { http_stop.Wait(d); };
    kube::client::KubeApiClient api(**rest, clock, api_opts);

    framework::Registry registry;
    if (common::Status s = plugins::RegisterInTreePlugins(registry); !s.ok()) {
      std::cerr << "error: registering plugins: " << s.ToString() << "\n";
      return kExitBadInput;
    }
    extender::ExtenderOptions eopts;
    eopts.workers = threads_;
    eopts.managed_resources = managed_;
    eopts.assumed_ttl = std::chrono::seconds(assumed_ttl_s_);
    auto ext = extender::Extender::Create(
        cfg.profiles.front(), cfg.percentage_of_nodes_to_score, eopts,
        extender::ExtenderDeps{
            clock, registry,
            [&api](const api::Pod& pod, std::string_view node, const framework::Allocation& a) {
              return api.BindPod(pod, node, a.annotations);
            }});
    if (!ext.ok()) {
      std::cerr << "error: " << ext.status().message() << "\n";
      return kExitBadInput;
    }
    InformerFeed feed(**ext);
    auto pods = kube::informer::NewPodInformer(**rest, feed, clock);
    auto nodes = kube::informer::NewNodeInformer(**rest, feed, clock);
    nodes->Start();
    pods->Start();
    while (!(nodes->HasSynced() && pods->HasSynced()) && g_extender_signal == 0) {
      nodes->WaitForSync(std::chrono::milliseconds(100));
      pods->WaitForSync(std::chrono::milliseconds(100));
    }
    int rc = kExitOk;
    metrics::Registry metrics_registry;
    metrics::ExtenderMetrics extender_metrics(metrics_registry);
    if (g_extender_signal == 0) {
      spdlog::info("gpusched extender: informers synced: {} nodes, {} pods", nodes->Size(),
                   pods->Size());
      http::ServerOptions sopts;
      sopts.bind_address = bind_address_;
      sopts.port = static_cast<uint16_t>(port_);
      sopts.threads = threads_;
      sopts.max_body_bytes = max_body_;
      sopts.tls_cert_file = tls_cert_;
      sopts.tls_key_file = tls_key_;
      auto server = http::Server::Create(sopts);
      common::Status started = server.ok() ? common::Status::Ok() : server.status();
      if (started.ok()) {
        (*ext)->RegisterRoutes(**server);
        // The verbs again, timed (gpusched_extender_request_*); same handlers underneath.
        using Verb = http::Response (extender::Extender::*)(std::string_view);
        const std::pair<const char*, Verb> verbs[] = {
            {"filter", &extender::Extender::Filter},
            {"prioritize", &extender::Extender::Prioritize},
            {"preempt", &extender::Extender::Preempt},
            {"bind", &extender::Extender::Bind}};
        for (const auto& [verb, fn] : verbs) {
          (*server)->Handle(
              "POST", std::string("/") + verb,
              [&ext, &extender_metrics, verb = verb, fn = fn](const http::Request& r) {
                metrics::Stopwatch sw;
                http::Response resp = ((**ext).*fn)(r.body);
                extender_metrics.ObserveRequest(verb, resp.status, sw.Seconds());
                return resp;
              });
        }
        // /metrics, /healthz, /livez, /readyz (ready: the informers synced before listening).
        Serving::RegisterProcessMetrics(metrics_registry, "extender", nullptr);
        Serving::AddRoutes(**server, metrics_registry, nullptr);
        started = (*server)->Start();
      }
      if (!started.ok()) {
        std::cerr << "error: " << started.message() << "\n";
        rc = kExitBadInput;
      } else {
        spdlog::info("gpusched extender: serving {}://{}:{} (profile {}, managed resources [{}])",
                     (*server)->tls() ? "https" : "http", bind_address_, (*server)->port(),
                     cfg.profiles.front().scheduler_name, fmt::join(managed_, ","));
        while (g_extender_signal == 0) {
          std::this_thread::sleep_for(std::chrono::seconds(1));
          int expired = (*ext)->Tick();
          if (expired > 0)
            spdlog::warn("gpusched extender: expired {} unconfirmed assumed pod(s)", expired);
        }
        spdlog::info("gpusched extender: received signal {}; shutting down",
                     static_cast<int>(g_extender_signal));
        (*server)->Stop();
      }
    }
    http_stop.Stop();
    pods->Stop();
    nodes->Stop();
    (*rest)->Cancel();
    pods->Join();
    nodes->Join();
    spdlog::default_logger()->flush();
    return rc;
  }

  CLI::App& app_;
  std::string config_file_;
  std::string kubeconfig_;
  std::string bind_address_ = "127.0.0.1";
  int port_ = 8888;
  std::string tls_cert_;
  std::string tls_key_;
  int threads_ = 8;
  std::vector<std::string> managed_ = {"nvidia.com/gpu"};
  size_t max_body_ = 8u << 20;
  int64_t assumed_ttl_s_ = 60;
};

}  // namespace

std::unique_ptr<Command> NewExtenderCommand(CLI::App& root) {
  return std::make_unique<ExtenderCommand>(root);
}

}  // namespace gpusched::cmd
