// SPDX-License-Identifier: Apache-2.0
// gpusched deletion-cost: the pod-deletion-cost controller and the scale-down planner
// (src/addons/deletion_cost, issue #8).
//
//   gpusched deletion-cost plan deployment/web --replicas 4 [-n NS] [-o json]
//   gpusched deletion-cost plan rs/web-7d9f --replicas 4 -f manifests.yaml     (offline)
//   gpusched deletion-cost controller --config policy.yaml [--dry-run] [--secure-port 10262]
//
// Wiring (the only place it happens):
//
//   HttpRestClient ──► Reflector(pods) ──► Controller (store, work queue)
//   (qps/burst)   ──► LIST ReplicaSets/Deployments (opt-in annotations, each resync)
//                 ◄── PATCH pods (merge patch), events (KubeApiClient)
//   CurlHttpGetter ──► pod /metrics, Prometheus /api/v1/query
//   ThreadPoolExecutor(workers) runs the reconciles; a 1 s ticker drives resyncs and the queue.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <boost/json.hpp>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cmd/gpusched/commands.h"
#include "cmd/gpusched/serving.h"
#include "cmd/gpusched/wiring.h"
#include "src/addons/deletion_cost/controller.h"
#include "src/addons/deletion_cost/metrics_source.h"
#include "src/addons/deletion_cost/plan.h"
#include "src/addons/deletion_cost/policy.h"
#include "src/api/decode.h"
#include "src/common/clock.h"
#include "src/common/executor.h"
#include "src/common/mutex.h"
#include "src/common/random.h"
#include "src/common/strings.h"
#include "src/kube/client/api_writer.h"
#include "src/kube/client/http_client.h"
#include "src/kube/informer/reflector.h"

namespace gpusched::cmd {
namespace {

namespace dc = addons::deletion_cost;
namespace json = boost::json;

volatile std::sig_atomic_t g_dc_signal = 0;

extern "C" void OnDeletionCostSignal(int sig) {
  if (g_dc_signal != 0) _exit(1);
  g_dc_signal = sig;
}

// "--now": RFC 3339 UTC ("2024-05-01T12:00:00Z", fraction allowed) or Unix seconds.
common::StatusOr<common::TimePoint> ParseNow(const std::string& s) {
  if (auto secs = common::ParseDouble(s)) {
    // Beyond ±9.2e9 s the nanosecond count overflows int64 (and converting it would be UB).
    if (!std::isfinite(*secs) || std::fabs(*secs) >= 9.0e9) {
      return common::InvalidArgumentError("--now: Unix seconds out of range: " + common::Quote(s));
    }
    return common::TimePoint(std::chrono::nanoseconds(static_cast<int64_t>(*secs * 1e9)));
  }
  std::tm tm{};
  const char* end = strptime(s.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (end == nullptr)
    return common::InvalidArgumentError("--now: invalid time " + common::Quote(s));
  int64_t nanos = 0;
  if (*end == '.') {
    ++end;
    int64_t scale = 100'000'000;
    while (*end >= '0' && *end <= '9') {
      nanos += (*end - '0') * scale;
      scale /= 10;
      ++end;
    }
  }
  if (std::string_view(end) != "Z") {
    return common::InvalidArgumentError("--now: want UTC (…Z) or Unix seconds, got " +
                                        common::Quote(s));
  }
  return common::TimePoint(std::chrono::seconds(timegm(&tm)) + std::chrono::nanoseconds(nanos));
}

struct ClientSet {
  kube::client::ClusterConfig config;
  std::unique_ptr<kube::client::HttpRestClient> rest;
};

common::StatusOr<ClientSet> MakeClient(const std::string& kubeconfig, const std::string& context,
                                       const common::Clock& clock, common::Random& random,
                                       Stopper& stopper, double qps, int burst) {
  GPUSCHED_ASSIGN_OR_RETURN(Connection conn, Connect(kubeconfig, context));
  GPUSCHED_ASSIGN_OR_RETURN(auto rest, NewRestClient(conn, RestClientOptions{qps, burst, nullptr},
                                                     clock, random, stopper));
  return ClientSet{std::move(conn.cluster), std::move(rest)};
}

// Every item of a (paginated) LIST, as a `<Kind>List` document for ClassifyObjects.
common::StatusOr<json::value> ListAll(kube::RestClient& rest, const std::string& path,
                                      const std::string& list_kind) {
  GPUSCHED_ASSIGN_OR_RETURN(std::vector<json::value> items, kube::ListAll(rest, path));
  return json::value(json::object{{"kind", list_kind},
                                  {"items", json::array(std::make_move_iterator(items.begin()),
                                                        std::make_move_iterator(items.end()))}});
}

// --- plan -------------------------------------------------------------------------------------

class PlanCommand {
 public:
  explicit PlanCommand(CLI::App& parent)
      : app_(*parent.add_subcommand(
            "plan",
            "Print which pods the ReplicaSet controller deletes when a Deployment or ReplicaSet "
            "is scaled to --replicas, and the ranking rule that decided each")) {
    app_.add_option("target", target_, "deployment/NAME (deploy/NAME) or replicaset/NAME (rs/NAME)")
        ->required();
    app_.add_option("--replicas", replicas_, "The new replica count")
        ->required()
        ->check(CLI::NonNegativeNumber);
    app_.add_option("-n,--namespace", namespace_,
                    "Namespace (default: the kubeconfig context's, else default)");
    app_.add_option("--kubeconfig", kubeconfig_,
                    "kubeconfig file (default: KUBECONFIG, in-cluster, ~/.kube/config)");
    app_.add_option("--context", context_, "kubeconfig context");
    app_.add_option("-f,--filename", files_,
                    "Plan offline from manifests (Deployments, ReplicaSets, Pods; multi-document "
                    "YAML/JSON, List kinds; repeatable) instead of the live cluster");
    app_.add_option("--now", now_,
                    "Rank as of this time (RFC 3339 UTC or Unix seconds; default: now)");
    app_.add_option("-o,--output", output_, "Output format")
        ->check(CLI::IsMember({"text", "json"}))
        ->capture_default_str();
    app_.add_flag("--legacy-scale-down", legacy_,
                  "Compare times without logarithmic buckets (LogarithmicScaleDown off, < v1.22)");
    app_.add_flag("--ignore-deletion-cost", no_cost_, "Rank as with the PodDeletionCost gate off");
    app_.add_flag("--no-sidecar-restarts", no_sidecars_,
                  "Do not compare sidecar restarts (releases before ~v1.31)");
  }

  CLI::App& app() { return app_; }

  int Run() {
    dc::PlanRequest req;
    const size_t slash = target_.find('/');
    if (slash == std::string::npos) {
      std::cerr << "error: target " << common::Quote(target_)
                << ": want deployment/NAME or replicaset/NAME\n";
      return kExitUsage;
    }
    const std::string kind = common::ToLower(target_.substr(0, slash));
    req.name = target_.substr(slash + 1);
    if (kind == "deployment" || kind == "deployments" || kind == "deploy") {
      req.kind = "Deployment";
    } else if (kind == "replicaset" || kind == "replicasets" || kind == "rs") {
      req.kind = "ReplicaSet";
    } else {
      std::cerr << "error: target kind " << common::Quote(kind)
                << ": want deployment or replicaset\n";
      return kExitUsage;
    }
    req.replicas = replicas_;
    req.options.logarithmic_scale_down = !legacy_;
    req.options.pod_deletion_cost = !no_cost_;
    req.options.sidecar_restarts = !no_sidecars_;
    common::SystemClock clock;
    req.now = clock.Now();
    if (!now_.empty()) {
      auto t = ParseNow(now_);
      if (!t.ok()) {
        std::cerr << "error: " << t.status().message() << "\n";
        return kExitUsage;
      }
      req.now = *t;
    }

    std::vector<json::value> docs;
    if (!files_.empty()) {
      req.namespace_ = namespace_.empty() ? "default" : namespace_;
      for (const std::string& f : files_) {
        auto text = ReadTextFile(f);
        if (!text.ok()) {
          std::cerr << "error: " << text.status().message() << "\n";
          return kExitBadInput;
        }
        auto parsed = api::ParseYamlDocuments(*text, f);
        if (!parsed.ok()) {
          std::cerr << "error: " << parsed.status().message() << "\n";
          return kExitBadInput;
        }
        for (auto& d : *parsed) docs.push_back(std::move(d));
      }
    } else {
      Stopper stopper;
      common::Random random(TimeSeed());
      auto client = MakeClient(kubeconfig_, context_, clock, random, stopper, 50, 100);
      if (!client.ok()) {
        std::cerr << "error: " << client.status().message() << "\n";
        return kExitBadInput;
      }
      req.namespace_ = !namespace_.empty()                  ? namespace_
                       : !client->config.namespace_.empty() ? client->config.namespace_
                                                            : "default";
      const std::string ns = req.namespace_;
      const std::vector<std::pair<std::string, std::string>> lists = {
          {"/apis/apps/v1/namespaces/" + ns + "/deployments", "DeploymentList"},
          {"/apis/apps/v1/namespaces/" + ns + "/replicasets", "ReplicaSetList"},
          {"/api/v1/namespaces/" + ns + "/pods", "PodList"}};
      for (const auto& [path, kind_name] : lists) {
        auto list = ListAll(*client->rest, path, kind_name);
        if (!list.ok()) {
          std::cerr << "error: " << list.status().message() << "\n";
          return kExitBadInput;
        }
        docs.push_back(std::move(list).value());
      }
    }
    const dc::ClusterObjects objects = dc::ClassifyObjects(docs, req.namespace_);
    auto result = dc::MakePlan(objects, req);
    if (!result.ok()) {
      std::cerr << "error: " << result.status().message() << "\n";
      return kExitBadInput;
    }
    if (output_ == "json") {
      std::cout << json::serialize(dc::PlanToJson(*result)) << "\n";
    } else {
      std::cout << dc::FormatPlanText(*result);
    }
    return kExitOk;
  }

 private:
  CLI::App& app_;
  std::string target_;
  int32_t replicas_ = 0;
  std::string namespace_;
  std::string kubeconfig_;
  std::string context_;
  std::vector<std::string> files_;
  std::string now_;
  std::string output_ = "text";
  bool legacy_ = false;
  bool no_cost_ = false;
  bool no_sidecars_ = false;
};

// --- controller -------------------------------------------------------------------------------

// Forwards the reflector's deliveries to the controller and remembers the first full list
// (/readyz: the pod informer synced).
class SyncedSink final : public kube::informer::ReflectorSink {
 public:
  explicit SyncedSink(kube::informer::ReflectorSink& next) : next_(next) {}
  void Replace(std::vector<boost::json::value> items, std::string_view resource_version) override {
    next_.Replace(std::move(items), resource_version);
    synced_.store(true);
  }
  void Apply(kube::informer::EventType type, const boost::json::value& object) override {
    next_.Apply(type, object);
  }
  bool synced() const { return synced_.load(); }

 private:
  kube::informer::ReflectorSink& next_;
  std::atomic<bool> synced_{false};
};

class ControllerCommand {
 public:
  explicit ControllerCommand(CLI::App& parent)
      : app_(*parent.add_subcommand(
            "controller",
            "Keep controller.kubernetes.io/pod-deletion-cost of opted-in pods up to date from a "
            "DeletionCostPolicy")) {
    app_.add_option("--config", config_file_, "DeletionCostPolicy file (YAML)")->required();
    app_.add_option("--kubeconfig", kubeconfig_,
                    "kubeconfig file (default: KUBECONFIG, in-cluster, ~/.kube/config)");
    app_.add_option("--context", context_, "kubeconfig context");
    app_.add_flag("--dry-run", dry_run_,
                  "Compute and log costs, never patch (overrides controller.dryRun)");
    // /metrics, /healthz, /livez, /readyz over HTTPS on 0.0.0.0:10262 (kube-scheduler's flags).
    AddSecureServingFlags(app_, serving_, SecureServingFlagSet{.default_secure_port = 10262});
  }

  CLI::App& app() { return app_; }

  int Run() {
    auto text = ReadTextFile(config_file_);
    if (!text.ok()) {
      std::cerr << "error: " << text.status().message() << "\n";
      return kExitBadInput;
    }
    auto cfg = dc::ParsePolicyConfig(*text, config_file_);
    if (!cfg.ok()) {
      std::cerr << "error: " << cfg.status().message() << "\n";
      return kExitBadInput;
    }
    if (dry_run_) cfg->controller.dry_run = true;

    InstallShutdownHandler(OnDeletionCostSignal);

    common::SystemClock clock;
    Stopper stopper;
    common::Random random(TimeSeed());
    auto client = MakeClient(kubeconfig_, context_, clock, random, stopper, cfg->controller.qps,
                             cfg->controller.burst);
    if (!client.ok()) {
      std::cerr << "error: " << client.status().message() << "\n";
      return kExitBadInput;
    }
    kube::client::KubeApiClientOptions api_opts;
    api_opts.default_reporting_controller = std::string(dc::kControllerName);
    kube::client::KubeApiClient events(*client->rest, clock, api_opts);
    CurlHttpGetter http("gpusched-deletion-cost", dc::kMaxExpositionBytes);
    const int workers = cfg->controller.workers;
    const bool dry = cfg->controller.dry_run;
    const size_t n_policies = cfg->policies.size();
    common::ThreadPoolExecutor executor(workers);
    dc::Controller controller({clock, *client->rest, &events, http, executor},
                              std::move(cfg).value());

    // /metrics (the controller's registry, then the process's), /healthz, /livez, /readyz.
    SyncedSink sink(controller);
    metrics::Registry process_metrics;
    ReadyFn ready = [&sink]() -> std::string {
      return sink.synced() ? "" : "pod informer not synced";
    };
    Serving::RegisterProcessMetrics(process_metrics, "deletion-cost-controller", ready);
    std::unique_ptr<SecureServing> secure;
    std::unique_ptr<Serving> server;
    if (serving_.secure_port != 0 || serving_.port != 0) {
      auto made = SecureServing::Create(serving_, {});
      auto started = made.ok() ? Serving::Start(serving_, **made, process_metrics, ready,
                                                [&controller] { return controller.MetricsText(); })
                               : common::StatusOr<std::unique_ptr<Serving>>(made.status());
      if (!started.ok()) {
        std::cerr << "error: " << started.status().message() << "\n";
        return kExitBadInput;
      }
      secure = std::move(made).value();
      server = std::move(started).value();
      spdlog::info("deletion-cost controller: serving /metrics, /healthz, /livez, /readyz on {}",
                   server->Describe(serving_, *secure));
    }
    kube::informer::ReflectorOptions ro;
    ro.name = "pods";
    ro.path = controller.PodsPath();
    ro.field_selector = "status.phase!=Succeeded,status.phase!=Failed";
    ro.seed = TimeSeed();
    kube::informer::Reflector reflector(*client->rest, sink, clock, ro);
    std::thread reflector_thread([&reflector] { reflector.Run(); });
    spdlog::info("deletion-cost controller: API server {}, {} polic{}, {} workers{}",
                 client->config.Describe(), n_policies, n_policies == 1 ? "y" : "ies", workers,
                 dry ? ", dry-run" : "");
    while (g_dc_signal == 0) {
      controller.Tick();
      stopper.Wait(std::chrono::milliseconds(200));
    }
    spdlog::info("deletion-cost controller: signal {}, stopping", static_cast<int>(g_dc_signal));
    reflector.Stop();
    client->rest->Cancel();
    stopper.Stop();
    reflector_thread.join();
    executor.Drain();
    if (server) server->Stop();
    return kExitOk;
  }

 private:
  CLI::App& app_;
  std::string config_file_;
  std::string kubeconfig_;
  std::string context_;
  bool dry_run_ = false;
  SecureServingFlags serving_;
};

class DeletionCostCommand final : public Command {
 public:
  explicit DeletionCostCommand(CLI::App& root)
      : app_(*root.add_subcommand(
            "deletion-cost",
            "Pod deletion cost: the controller that maintains "
            "controller.kubernetes.io/pod-deletion-cost, and the scale-down planner")),
        plan_(app_),
        controller_(app_) {
    app_.require_subcommand(1);
  }

  CLI::App& app() override { return app_; }

  int Run() override {
    if (plan_.app().parsed()) return plan_.Run();
    if (controller_.app().parsed()) return controller_.Run();
    std::cerr << "error: want a subcommand: plan or controller\n";
    return kExitUsage;
  }

 private:
  CLI::App& app_;
  PlanCommand plan_;
  ControllerCommand controller_;
};

}  // namespace

std::unique_ptr<Command> NewDeletionCostCommand(CLI::App& root) {
  return std::make_unique<DeletionCostCommand>(root);
}

}  // namespace gpusched::cmd
