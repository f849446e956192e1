// SPDX-License-Identifier: Apache-2.0
// gpusched-api-bench: the API client's cost per request against a real API server.
//
//   gpusched-api-bench --kubeconfig FILE [--requests N] [--threads T] [--kind event|get] [--http2]
//
// T threads send N requests in all through one KubeApiClient over one HttpRestClient (qps and
// burst 5,000, as the side-by-side benchmark), the way the scheduler's binding threads do:
// `event` creates events.k8s.io/v1 Events (the Scheduled event of every pod), `get` reads
// /api/v1/namespaces/default. Prints requests/s and the CPU seconds of this process per 1,000
// requests (getrusage: user + system, all threads), the figure that matters for the scheduler's
// CPU per pod. Start a cluster with `scripts/test-cluster up` and pass its kubeconfig.
#include <sys/resource.h>

#include <atomic>
#include <boost/json/value.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "src/common/clock.h"
#include "src/common/random.h"
#include "src/kube/client/api_writer.h"
#include "src/kube/client/auth.h"
#include "src/kube/client/http_client.h"
#include "src/kube/client/kubeconfig.h"

namespace {

using namespace gpusched;

double CpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto s = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
  return s(u.ru_utime) + s(u.ru_stime);
}

int Usage(const char* why) {
  std::fprintf(stderr,
               "gpusched-api-bench: %s\nusage: gpusched-api-bench --kubeconfig FILE "
               "[--requests N] [--threads T] [--kind event|get] [--http2]\n",
               why);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string kubeconfig;
  std::string kind = "event";
  int requests = 5000;
  int threads = 32;
  bool http2 = false;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a == "--http2") {
      http2 = true;
      continue;
    }
    if (i + 1 >= argc) return Usage("missing value");
    const char* v = argv[++i];
    if (a == "--kubeconfig") {
      kubeconfig = v;
    } else if (a == "--requests") {
      requests = std::atoi(v);
    } else if (a == "--threads") {
      threads = std::atoi(v);
    } else if (a == "--kind") {
      kind = v;
    } else {
      return Usage("unknown flag");
    }
  }
  if (kubeconfig.empty() || requests <= 0 || threads <= 0 || (kind != "event" && kind != "get"))
    return Usage("bad arguments");

  kube::client::Environment env;
  auto cluster = kube::client::ResolveConfig(kubeconfig, env);
  if (!cluster.ok()) return Usage(cluster.status().ToString().c_str());
  if (auto s = kube::client::InitCurlOnce(); !s.ok()) return Usage(s.ToString().c_str());
  common::SystemClock clock;
  common::Random random(1);
  kube::client::HttpClientOptions opts;
  opts.qps = 5000;
  opts.burst = 5000;
  opts.http2 = http2;
  kube::client::HttpClientDeps deps{clock, random,
                                    [](common::Duration d) { std::this_thread::sleep_for(d); },
                                    kube::client::MakeCredentialProvider(*cluster, env, clock)};
  auto rest = kube::client::HttpRestClient::Create(*cluster, opts, std::move(deps));
  if (!rest.ok()) return Usage(rest.status().ToString().c_str());
  kube::client::KubeApiClient api(**rest, clock);

  std::atomic<int> next{0};
  std::atomic<int> failed{0};
  auto one = [&](int i) {
    if (kind == "get") {
      return api.GetJson("/api/v1/namespaces/default").ok();
    }
    kube::EventRecord e;
    e.namespace_ = "default";
    e.pod_name = "api-bench-" + std::to_string(i);
    e.pod_uid = "00000000-0000-0000-0000-" + std::to_string(100000000000 + i);
    e.type = "Normal";
    e.reason = "Scheduled";
    e.action = "Binding";
    e.note = "Successfully assigned default/" + e.pod_name + " to node-1";
    e.reporting_controller = "gpusched-api-bench";
    return api.CreateEvent(e).ok();
  };
  // Warm-up: one request per thread opens the connections.
  for (int i = 0; i < threads; ++i) one(-1 - i);

  const double cpu0 = CpuSeconds();
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      for (int i = next++; i < requests; i = next++) {
        if (!one(i)) ++failed;
      }
    });
  }
  for (auto& t : pool) t.join();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double cpu = CpuSeconds() - cpu0;
  std::printf(
      "kind=%s http=%s requests=%d threads=%d failed=%d wall_s=%.2f requests_per_s=%.0f "
      "cpu_s=%.3f cpu_s_per_1000=%.4f\n",
      kind.c_str(), http2 ? "2" : "1.1", requests, threads, failed.load(), wall, requests / wall,
      cpu, cpu * 1000 / requests);
  return failed.load() == 0 ? 0 : 1;
}
