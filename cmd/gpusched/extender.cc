// SPDX-License-Identifier: Apache-2.0
// gpusched extender: serves kube-scheduler's HTTP extender API (filter, prioritize, preempt, bind)
// with the plugins of the config's first profile, over a cluster cache fed by node, pod and
// PodDisruptionBudget informers through the extender's EventHandler (the scheduler's).
//
//   gpusched extender [--config FILE] [--kubeconfig FILE] [--bind-address 127.0.0.1]
//                     [--secure-port 8888] [--tls-cert-file F --tls-private-key-file F]
//                     --client-ca-file F [--verbs filter,prioritize,preempt,bind]
//                     [--anonymous-auth] [--threads N] [--managed-resource nvidia.com/gpu]...
//                     [-v N]
//
// Authentication (secure_serving.h): HTTPS only. The verbs answer only clients with a certificate
// signed by --client-ca-file (kube-scheduler's extender tlsConfig); bind and preempt act with this
// process's service account, so with either in --verbs there is no way around it (no CA: refuse to
// start). --anonymous-auth opens filter and prioritize to any client, and only when they are
// the only verbs. /metrics: delegated authentication and authorization as the scheduler's.
//
// Wiring:
//   HttpRestClient ──► node, pod, PDB informers ─► Extender::events() ─► cache, PDB store
//                                                  (Extender: Framework pool)
//   http::Server (HTTPS, N workers) ─► SecureServing filter (client certificate)
//     ─► POST /filter /prioritize /preempt /bind ─┘
//          └─ bind verb ─► KubeApiClient::BindPod
//   1 s ticker ─► Extender::Tick (expires assumptions never confirmed by the informer)
//
// Life cycle: load the config, start the informers and wait for them to sync, then listen.
// SIGTERM/SIGINT: stop listening, stop the informers, exit 0.
#include "src/extender/extender.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "cmd/gpusched/commands.h"
#include "cmd/gpusched/secure_serving.h"
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
    // --bind-address, --secure-port (the verbs, /metrics and the health endpoints; HTTPS only),
    // TLS, --client-ca-file, delegated authn/authz for /metrics, --anonymous-auth.
    AddSecureServingFlags(
        app_, serving_,
        SecureServingFlagSet{
            .default_secure_port = 8888, .default_bind_address = "127.0.0.1", .plain_http = false});
    app_.add_option("--verbs", verbs_,
                    "Extender verbs to serve (filter, prioritize, preempt, bind); bind and "
                    "preempt need --client-ca-file")
        ->delimiter(',')
        ->capture_default_str();
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
    if (common::Status s = CheckVerbs(); !s.ok()) {
      std::cerr << "error: " << s.message() << "\n";
      return kExitUsage;
    }
    if (common::Status s = CreateSecureServing(); !s.ok()) {
      std::cerr << "error: " << s.message() << "\n";
      return kExitBadInput;
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
    LogUntrackedKinds(**ext);
    // The kinds the extender reads (extender.h), into its EventHandler as in the scheduler.
    kube::ClusterEventHandler& events = (*ext)->events();
    std::vector<kube::informer::InformerPtr> informers;
    informers.push_back(kube::informer::NewNodeInformer(**rest, events, clock));
    informers.push_back(kube::informer::NewPodInformer(**rest, events, clock));
    informers.push_back(kube::informer::NewPdbInformer(**rest, events, clock));
    const kube::informer::Informer& nodes = *informers[0];
    const kube::informer::Informer& pods = *informers[1];
    for (auto& i : informers) i->Start();
    bool synced = false;
    while (!synced && g_extender_signal == 0) {
      synced = std::all_of(informers.begin(), informers.end(), [](const auto& i) {
        return i->WaitForSync(std::chrono::milliseconds(100));
      });
    }
    int rc = kExitOk;
    metrics::Registry metrics_registry;
    metrics::ExtenderMetrics extender_metrics(metrics_registry);
    if (g_extender_signal == 0) {
      spdlog::info("gpusched extender: informers synced: {} nodes, {} pods", nodes.Size(),
                   pods.Size());
      auto server = StartServer(**ext, extender_metrics, metrics_registry);
      common::Status started = server.ok() ? common::Status::Ok() : server.status();
      if (!started.ok()) {
        std::cerr << "error: " << started.message() << "\n";
        rc = kExitBadInput;
      } else {
        spdlog::info(
            "gpusched extender: serving https://{} (verbs [{}], profile {}, managed resources "
            "[{}]; {})",
            HostPort(serving_.bind_address, (*server)->port()), fmt::join(verbs_, ","),
            cfg.profiles.front().scheduler_name, fmt::join(managed_, ","), secure_->description());
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
    for (auto& i : informers) i->Stop();
    (*rest)->Cancel();
    for (auto& i : informers) i->Join();
    spdlog::default_logger()->flush();
    return rc;
  }

  // The profile's plugins that read kinds the extender leaves to kube-scheduler (extender.h): said
  // once at start, so that a pod they would have checked is not a surprise.
  static void LogUntrackedKinds(const extender::Extender& ext) {
    const std::vector<std::string> kinds = ext.UntrackedKinds();
    if (kinds.empty()) return;
    spdlog::warn(
        "gpusched extender: the profile's plugins read {}, which the extender does not watch: "
        "kube-scheduler's own plugins gang those pods, bind their volumes and allocate their "
        "claims; here gang and volume checks pass every pod and a pod with resource claims is "
        "rejected (run gpusched as the scheduler for such pods)",
        fmt::join(kinds, ", "));
  }

  // Which verbs, and who may call them (see the file comment).
  common::Status CheckVerbs() const {
    bool acts = false;  // bind or preempt: writes with this process's service account
    for (const std::string& v : verbs_) {
      if (v != "filter" && v != "prioritize" && v != "preempt" && v != "bind") {
        return common::InvalidArgumentError("--verbs: unknown verb \"" + v +
                                            "\" (want filter, prioritize, preempt, bind)");
      }
      acts = acts || v == "bind" || v == "preempt";
    }
    if (acts && serving_.anonymous_auth) {
      return common::InvalidArgumentError(
          "--anonymous-auth: not with bind or preempt in --verbs (they act with this process's "
          "service account)");
    }
    if (acts && serving_.client_ca_file.empty()) {
      return common::InvalidArgumentError(
          "--verbs includes bind or preempt, which act with this process's service account: "
          "give --client-ca-file, the CA of the client certificate in kube-scheduler's extender "
          "tlsConfig (or serve --verbs=filter,prioritize only)");
    }
    if (serving_.client_ca_file.empty() && !serving_.anonymous_auth) {
      return common::InvalidArgumentError(
          "no --client-ca-file: give one, or open filter and prioritize to every client with "
          "--anonymous-auth");
    }
    return common::Status::Ok();
  }

  // TLS (the files checked now, before the informers sync) and the verbs' authentication: a
  // verified client certificate, or nothing with --anonymous-auth.
  common::Status CreateSecureServing() {
    SecureServing::Options so;
    for (const std::string& v : verbs_) so.certificate_paths.push_back("/" + v);
    SecureServingFlags flags = serving_;
    if (flags.anonymous_auth) {
      // Only filter and prioritize (CheckVerbs): open to every client.
      for (const std::string& p : so.certificate_paths) flags.always_allow_paths.push_back(p);
    }
    GPUSCHED_ASSIGN_OR_RETURN(secure_, SecureServing::Create(flags, std::move(so)));
    return common::Status::Ok();
  }

  // The HTTPS server: the verbs (timed, gpusched_extender_request_*) behind the SecureServing
  // filter, /metrics and the health endpoints. Started.
  common::StatusOr<http::ServerPtr> StartServer(extender::Extender& ext,
                                                metrics::ExtenderMetrics& extender_metrics,
                                                metrics::Registry& metrics_registry) {
    http::ServerOptions sopts;
    sopts.bind_address = serving_.bind_address;
    sopts.port = static_cast<uint16_t>(serving_.secure_port);
    sopts.threads = threads_;
    sopts.max_body_bytes = max_body_;
    sopts.tls = secure_->tls();
    GPUSCHED_ASSIGN_OR_RETURN(http::ServerPtr server, http::Server::Create(sopts));
    server->SetFilter(secure_->filter());
    using Verb = http::Response (extender::Extender::*)(std::string_view);
    const std::pair<const char*, Verb> all[] = {{"filter", &extender::Extender::Filter},
                                                {"prioritize", &extender::Extender::Prioritize},
                                                {"preempt", &extender::Extender::Preempt},
                                                {"bind", &extender::Extender::Bind}};
    for (const auto& [verb, fn] : all) {
      if (std::find(verbs_.begin(), verbs_.end(), verb) == verbs_.end()) continue;
      server->Handle("POST", std::string("/") + verb,
                     [&ext, &extender_metrics, verb = verb, fn = fn](const http::Request& r) {
                       metrics::Stopwatch sw;
                       http::Response resp = (ext.*fn)(r.body);
                       extender_metrics.ObserveRequest(verb, resp.status, sw.Seconds());
                       return resp;
                     });
    }
    // /metrics, /healthz, /livez, /readyz (ready: the informers synced before listening).
    Serving::RegisterProcessMetrics(metrics_registry, "extender", nullptr);
    Serving::AddRoutes(*server, metrics_registry, nullptr);
    common::Status s = server->Start();
    if (!s.ok()) {
      return common::InvalidArgumentError("--bind-address/--secure-port " +
                                          HostPort(serving_.bind_address, serving_.secure_port) +
                                          ": " + std::string(s.message()));
    }
    return server;
  }

  CLI::App& app_;
  std::string config_file_;
  std::string kubeconfig_;
  SecureServingFlags serving_;
  std::vector<std::string> verbs_ = {"filter", "prioritize", "preempt", "bind"};
  std::unique_ptr<SecureServing> secure_;  // outlives the server (its filter)
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
