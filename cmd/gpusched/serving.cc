// SPDX-License-Identifier: Apache-2.0
#include "cmd/gpusched/serving.h"

#include <CLI/CLI.hpp>

#include "cmd/gpusched/build_info.h"
#include "src/metrics/catalog.h"
#include "src/metrics/exposition.h"

namespace gpusched::cmd {

void AddServingFlags(CLI::App& app, ServingFlags& flags, int default_port) {
  flags.port = default_port;
  app.add_option("--bind-address", flags.bind_address,
                 "Address serving /metrics, /healthz, /livez and /readyz (plain HTTP)")
      ->capture_default_str();
  app.add_option("--port", flags.port,
                 "Port serving /metrics, /healthz, /livez and /readyz (0: any free port, -1: off)")
      ->capture_default_str()
      ->check(CLI::Range(-1, 65535));
}

void Serving::AddRoutes(http::Server& server, metrics::Registry& registry, ReadyFn ready,
                        std::function<std::string()> extra_metrics) {
  // One registry per process, so the family is created once (a second AddRoutes on the same
  // registry is a programmer error). The path set is closed: the routes below.
  metrics::CounterFamily* requests = &metrics::AddCounter(registry, metrics::names::kHttpRequests);
  auto count = [requests](const char* path, int code) {
    requests->With({path, std::to_string(code)})->Inc();
  };
  server.Handle("GET", "/metrics", [&registry, extra_metrics, count](const http::Request&) {
    std::string body = metrics::WriteText(registry);
    if (extra_metrics) body += extra_metrics();
    count("/metrics", 200);
    return http::Response{200, std::string(metrics::kContentType), std::move(body), {}};
  });
  for (const char* path : {"/healthz", "/livez"}) {
    server.Handle("GET", path, [path, count](const http::Request&) {
      count(path, 200);
      return http::Response{200, "text/plain; charset=utf-8", "ok\n", {}};
    });
  }
  server.Handle("GET", "/readyz", [ready, count](const http::Request&) {
    std::string why = ready ? ready() : std::string();
    if (!why.empty()) {
      count("/readyz", 503);
      return http::Response{503, "text/plain; charset=utf-8", "not ready: " + why + "\n", {}};
    }
    count("/readyz", 200);
    return http::Response{200, "text/plain; charset=utf-8", "ok\n", {}};
  });
}

void Serving::RegisterProcessMetrics(metrics::Registry& registry, std::string command,
                                     ReadyFn ready) {
  metrics::AddGauge(registry, metrics::names::kBuildInfo)
      .With({std::string(GetBuildInfo().git_version), std::move(command)})
      ->Set(1);
  metrics::AddCallback(registry, metrics::names::kReady,
                       [ready](std::vector<metrics::Sample>& out) {
                         out.push_back({{}, ready && !ready().empty() ? 0.0 : 1.0});
                       });
}

common::StatusOr<std::unique_ptr<Serving>> Serving::Start(
    const ServingFlags& flags, metrics::Registry& registry, ReadyFn ready,
    std::function<std::string()> extra_metrics) {
  http::ServerOptions opts;
  opts.bind_address = flags.bind_address;
  opts.port = static_cast<uint16_t>(flags.port);
  opts.threads = 2;
  opts.max_body_bytes = 64u << 10;  // GETs only: nothing legitimate has a body
  GPUSCHED_ASSIGN_OR_RETURN(auto server, http::Server::Create(opts));
  AddRoutes(*server, registry, std::move(ready), std::move(extra_metrics));
  common::Status s = server->Start();
  if (!s.ok()) {
    return common::InvalidArgumentError("--bind-address/--port " + flags.bind_address + ":" +
                                        std::to_string(flags.port) + ": " +
                                        std::string(s.message()));
  }
  return std::unique_ptr<Serving>(new Serving(std::move(server)));
}

void EventRecencyHandler::RegisterMetrics(metrics::Registry& registry) {
  metrics::AddCallback(registry, metrics::names::kInformerLastEventAge,
                       [this](std::vector<metrics::Sample>& out) {
                         const int64_t now = Now();
                         auto age = [now](const std::atomic<int64_t>& t) {
                           return std::chrono::duration<double>(
                                      common::Duration(now - t.load(std::memory_order_relaxed)))
                               .count();
                         };
                         out.push_back({{"nodes"}, age(nodes_)});
                         out.push_back({{"pods"}, age(pods_)});
                         out.push_back({{"poddisruptionbudgets"}, age(pdbs_)});
                       });
}

Serving::~Serving() { Stop(); }

void Serving::Stop() {
  if (server_) server_->Stop();
}

}  // namespace gpusched::cmd
