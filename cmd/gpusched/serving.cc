// SPDX-License-Identifier: Apache-2.0
#include "cmd/gpusched/serving.h"

#include <CLI/CLI.hpp>

#include "cmd/gpusched/build_info.h"
#include "src/metrics/catalog.h"
#include "src/metrics/exposition.h"

namespace gpusched::cmd {

namespace {

// The routes on `server`, counted into `requests` (path set closed: the routes below).
void RegisterRoutes(http::Server& server, metrics::CounterFamily* requests,
                    metrics::Registry& registry, const ReadyFn& ready,
                    const std::function<std::string()>& extra_metrics) {
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

}  // namespace

void Serving::AddRoutes(http::Server& server, metrics::Registry& registry, ReadyFn ready,
                        std::function<std::string()> extra_metrics) {
  // One registry per process, so the family is created once (a second AddRoutes on the same
  // registry is a programmer error).
  RegisterRoutes(server, &metrics::AddCounter(registry, metrics::names::kHttpRequests), registry,
                 ready, extra_metrics);
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
    const SecureServingFlags& flags, const SecureServing& secure, metrics::Registry& registry,
    ReadyFn ready, std::function<std::string()> extra_metrics) {
  std::unique_ptr<Serving> serving(new Serving());
  // One request counter family per registry, shared by both servers.
  metrics::CounterFamily* requests = &metrics::AddCounter(registry, metrics::names::kHttpRequests);
  for (const bool tls : {true, false}) {
    const int port = tls ? flags.secure_port : flags.port;
    if (port <= 0) continue;
    http::ServerOptions opts;
    opts.bind_address = flags.bind_address;
    opts.port = static_cast<uint16_t>(port);
    opts.threads = 2;
    opts.max_body_bytes = 64u << 10;  // GETs only: nothing legitimate has a body
    if (tls) opts.tls = secure.tls();
    GPUSCHED_ASSIGN_OR_RETURN(auto server, http::Server::Create(opts));
    if (tls) server->SetFilter(secure.filter());
    RegisterRoutes(*server, requests, registry, ready, extra_metrics);
    common::Status s = server->Start();
    if (!s.ok()) {
      return common::InvalidArgumentError(
          std::string("--bind-address/") + (tls ? "--secure-port " : "--port ") +
          HostPort(flags.bind_address, port) + ": " + std::string(s.message()));
    }
    (tls ? serving->secure_ : serving->plain_) = std::move(server);
  }
  return serving;
}

std::string Serving::Describe(const SecureServingFlags& flags, const SecureServing& secure) const {
  std::string out;
  if (secure_) {
    out = "https://" + HostPort(flags.bind_address, secure_->port()) + " (" + secure.description() +
          ")";
  }
  if (plain_) {
    out += std::string(out.empty() ? "" : " and ") + "http://" +
           HostPort(flags.bind_address, plain_->port()) + " (no authentication)";
  }
  return out.empty() ? "off (--secure-port=0)" : out;
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
  if (secure_) secure_->Stop();
  if (plain_) plain_->Stop();
}

}  // namespace gpusched::cmd
