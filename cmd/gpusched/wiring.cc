// SPDX-License-Identifier: Apache-2.0
#include "cmd/gpusched/wiring.h"

#include <curl/curl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string_view>
#include <utility>
#include <vector>

#include "src/framework/runtime/plugin_names.h"
#include "src/kube/client/auth.h"
#include "src/plugins/in_tree_registry.h"

extern char** environ;

namespace gpusched::cmd {

kube::client::Environment CaptureEnvironment() {
  kube::client::Environment env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string_view kv(*e);
    size_t eq = kv.find('=');
    if (eq == std::string_view::npos) continue;
    env.emplace(std::string(kv.substr(0, eq)), std::string(kv.substr(eq + 1)));
  }
  return env;
}

void InstallShutdownHandler(void (*handler)(int)) {
  struct sigaction sa {};
  sa.sa_handler = handler;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
}

uint64_t TimeSeed() {
  return static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count()) ^
         (static_cast<uint64_t>(getpid()) << 32);
}

void Stopper::Stop() {
  {
    common::MutexLock l(mu_);
    stopped_ = true;
  }
  cv_.notify_all();
}

bool Stopper::stopped() {
  common::MutexLock l(mu_);
  return stopped_;
}

bool Stopper::Wait(common::Duration d) {
  common::MutexLock l(mu_);
  return l.WaitFor(cv_, d, [this]() GPUSCHED_REQUIRES(mu_) { return stopped_; });
}

common::StatusOr<Connection> Connect(const std::string& kubeconfig, const std::string& context) {
  Connection conn;
  conn.env = CaptureEnvironment();
  kube::client::ResolveOptions ro;
  ro.context = context;
  GPUSCHED_ASSIGN_OR_RETURN(conn.cluster, kube::client::ResolveConfig(kubeconfig, conn.env, ro));
  GPUSCHED_RETURN_IF_ERROR(kube::client::InitCurlOnce());
  return conn;
}

common::StatusOr<std::unique_ptr<kube::client::HttpRestClient>> NewRestClient(
    const Connection& conn, const RestClientOptions& options, const common::Clock& clock,
    common::Random& random, Stopper& stopper) {
  kube::client::HttpClientOptions opts;
  opts.qps = options.qps;
  opts.burst = options.burst;
  kube::client::HttpClientDeps deps{
      clock, random, [&stopper](common::Duration d) { stopper.Wait(d); },
      kube::client::MakeCredentialProvider(conn.cluster, conn.env, clock)};
  deps.metrics = options.metrics;
  return kube::client::HttpRestClient::Create(conn.cluster, opts, std::move(deps));
}

common::StatusOr<telemetry::prometheus::HttpResult> CurlHttpGetter::Get(const std::string& url,
                                                                        common::Duration timeout) {
  CURL* h = curl_easy_init();
  if (h == nullptr) return common::UnavailableError("curl_easy_init failed");
  struct Sink {
    std::string body;
    size_t max = 0;
    bool overflow = false;
  } sink;
  sink.max = max_body_;
  const auto write = +[](char* data, size_t size, size_t n, void* user) -> size_t {
    auto* s = static_cast<Sink*>(user);
    if (s->body.size() + size * n > s->max) {
      s->overflow = true;
      return 0;
    }
    s->body.append(data, size * n);
    return size * n;
  };
  const long ms =
      static_cast<long>(std::chrono::duration_cast<std::chrono::milliseconds>(timeout).count());
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, ms);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, ms);
  curl_easy_setopt(h, CURLOPT_NOPROXY, "*");
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");
  curl_easy_setopt(h, CURLOPT_USERAGENT, user_agent_.c_str());
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, write);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &sink);
  const CURLcode rc = curl_easy_perform(h);
  long status = 0;
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
  char* ct = nullptr;
  curl_easy_getinfo(h, CURLINFO_CONTENT_TYPE, &ct);
  telemetry::prometheus::HttpResult r;
  r.status = static_cast<int>(status);
  if (ct != nullptr) r.content_type = ct;
  curl_easy_cleanup(h);
  if (sink.overflow) {
    return common::ResourceExhaustedError("GET " + url + ": body over " +
                                          std::to_string(max_body_) + " bytes");
  }
  if (rc == CURLE_OPERATION_TIMEDOUT)
    return common::DeadlineExceededError("GET " + url + ": timed out");
  if (rc != CURLE_OK) return common::UnavailableError("GET " + url + ": " + curl_easy_strerror(rc));
  r.body = std::move(sink.body);
  return r;
}

common::StatusOr<std::string> ReadTextFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return common::NotFoundError(path + ": cannot read the file");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

common::StatusOr<config::SchedulerConfig> LoadSchedulerConfig(const std::string& path) {
  std::ifstream in(path);
  if (!in) return common::NotFoundError(path + ": cannot read the config file");
  std::stringstream ss;
  ss << in.rdbuf();
  std::vector<std::string> warnings;
  GPUSCHED_ASSIGN_OR_RETURN(config::SchedulerConfig c,
                            config::ParseSchedulerConfig(ss.str(), path, &warnings));
  for (const auto& w : warnings) spdlog::warn("{}: {}", path, w);
  // Plugin names are the registry's, not the parser's: checked here, before any scheduler is
  // built, so that a typo is the first error (its message names the file: Profile::source).
  for (const config::Profile& profile : c.profiles) {
    GPUSCHED_RETURN_IF_ERROR(
        framework::runtime::CheckPluginNames(profile, plugins::InTreeRegistry()));
  }
  return c;
}

}  // namespace gpusched::cmd
