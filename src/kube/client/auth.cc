// SPDX-License-Identifier: Apache-2.0
#include "src/kube/client/auth.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <spdlog/spdlog.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <cerrno>
#include <cstring>

#include "src/api/decode.h"
#include "src/api/fields.h"
#include "src/common/logging.h"
#include "src/common/strings.h"
#include "src/kube/client/encoding.h"
#include "src/kube/client/pem.h"

namespace gpusched::kube::client {
namespace {

namespace json = boost::json;

// ---------------------------------------------------------------------------------------------
// Process helpers

class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  Fd(Fd&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      Close();
      fd_ = o.fd_;
      o.fd_ = -1;
    }
    return *this;
  }
  ~Fd() { Close(); }
  int get() const { return fd_; }
  void Close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

common::Status MakePipe(Fd* read_end, Fd* write_end) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    return common::UnavailableError(std::string("pipe: ") + std::strerror(errno));
  }
  *read_end = Fd(fds[0]);
  *write_end = Fd(fds[1]);
  return common::Status::Ok();
}

bool IsExecutable(const std::string& path) {
  return ::access(path.c_str(), X_OK) == 0 && FileExists(path);
}

// argv[0] as execve needs it: unchanged if it has a '/', else the first PATH entry holding an
// executable of that name (PATH from `env`, not from this process).
common::StatusOr<std::string> FindExecutable(const std::string& name, const Environment& env) {
  if (name.find('/') != std::string::npos) {
    if (!IsExecutable(name))
      return common::NotFoundError(common::Quote(name) + " is not an executable file");
    return name;
  }
  auto it = env.find("PATH");
  std::string_view path =
      it != env.end() ? std::string_view(it->second) : "/usr/local/bin:/usr/bin:/bin";
  for (std::string_view dir : common::Split(path, ':')) {
    std::string candidate = JoinPath(dir.empty() ? "." : dir, name);
    if (IsExecutable(candidate)) return candidate;
  }
  return common::NotFoundError(common::Quote(name) + " not found on PATH");
}

std::string Tail(std::string_view s, size_t n) {
  s = common::Trim(s);
  if (s.size() > n) s = s.substr(s.size() - n);
  return std::string(s);
}

// The timeout of RunProcess is counted in poll(2) slices of this many milliseconds.
constexpr int kSliceMs = 50;

// Starts `exe` with `argv` and exactly `env`: stdin /dev/null, stdout and stderr the pipes'
// write ends, default signal dispositions, no blocked signals, in a process group of its own (so
// a timeout kills the plugin's children too). The caller closes its copies of the write ends.
common::StatusOr<pid_t> Spawn(const std::string& exe, const std::vector<std::string>& argv,
                              const Environment& env, const Fd& out_w, const Fd& err_w) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_w.get(), 1);
  posix_spawn_file_actions_adddup2(&actions, err_w.get(), 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);

  std::vector<std::string> env_strings;
  env_strings.reserve(env.size());
  for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = argv;
  std::vector<char*> argp;
  for (auto& s : args) argp.push_back(s.data());
  argp.push_back(nullptr);

  pid_t pid = -1;
  int rc = ::posix_spawn(&pid, exe.c_str(), &actions, &attr, argp.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    return common::UnavailableError("starting " + common::Quote(exe) + ": " + std::strerror(rc));
  }
  return pid;
}

// How DrainOutput stopped.
enum class Drain : uint8_t { kClosed, kTimedOut, kTooLarge };

// Reads the child's stdout and stderr into `result` until both are closed (or poll fails), the
// idle time waited (*waited, in poll slices) reaches `timeout`, or one of them would exceed
// `max_output`.
Drain DrainOutput(Fd& out_r, Fd& err_r, common::Duration timeout, size_t max_output,
                  ProcessResult& result, common::Duration* waited) {
  while (out_r.get() >= 0 || err_r.get() >= 0) {
    pollfd fds[2];
    nfds_t n = 0;
    if (out_r.get() >= 0) fds[n++] = pollfd{out_r.get(), POLLIN, 0};
    if (err_r.get() >= 0) fds[n++] = pollfd{err_r.get(), POLLIN, 0};
    int ready = ::poll(fds, n, kSliceMs);
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) break;
    if (ready == 0) {
      *waited += std::chrono::milliseconds(kSliceMs);
      if (*waited >= timeout) return Drain::kTimedOut;
      continue;
    }
    for (nfds_t i = 0; i < n; ++i) {
      if (fds[i].revents == 0) continue;
      bool is_out = fds[i].fd == out_r.get();
      char buf[8192];
      ssize_t got = ::read(fds[i].fd, buf, sizeof buf);
      if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (got <= 0) {
        (is_out ? out_r : err_r).Close();
        continue;
      }
      std::string& sink = is_out ? result.stdout_text : result.stderr_text;
      if (sink.size() + static_cast<size_t>(got) > max_output) return Drain::kTooLarge;
      sink.append(buf, static_cast<size_t>(got));
    }
  }
  return Drain::kClosed;
}

// Waits for `pid` to exit (*wstatus), polling in slices counted in *waited. When *waited reaches
// `timeout` first, kills its process group and returns false.
bool WaitForExit(pid_t pid, common::Duration timeout, common::Duration* waited, int* wstatus) {
  for (;;) {
    pid_t w = ::waitpid(pid, wstatus, WNOHANG);
    if (w == pid) return true;
    if (w < 0 && errno != EINTR) return true;
    if (*waited >= timeout) {
      ::kill(-pid, SIGKILL);
      return false;
    }
    ::poll(nullptr, 0, kSliceMs);
    *waited += std::chrono::milliseconds(kSliceMs);
  }
}

// ---------------------------------------------------------------------------------------------
// ExecCredential

std::string BuildExecInfo(const ExecConfig& exec, const ClusterConfig& cluster) {
  json::object spec;
  spec["interactive"] = false;
  if (exec.provide_cluster_info) {
    json::object c;
    c["server"] = cluster.server;
    if (!cluster.tls_server_name.empty()) c["tls-server-name"] = cluster.tls_server_name;
    if (cluster.insecure_skip_tls_verify) c["insecure-skip-tls-verify"] = true;
    if (!cluster.ca_pem.empty()) c["certificate-authority-data"] = Base64Encode(cluster.ca_pem);
    if (!cluster.proxy_url.empty()) c["proxy-url"] = cluster.proxy_url;
    spec["cluster"] = std::move(c);
  }
  json::object info;
  info["apiVersion"] = exec.api_version;
  info["kind"] = "ExecCredential";
  info["spec"] = std::move(spec);
  return json::serialize(info);
}

Environment BuildExecEnv(const ExecConfig& exec, Environment base, const std::string& exec_info) {
  for (const auto& [k, v] : exec.env) base[k] = v;
  base["KUBERNETES_EXEC_INFO"] = exec_info;
  return base;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// RunProcess

common::StatusOr<ProcessResult> RunProcess(const std::vector<std::string>& argv,
                                           const Environment& env, common::Duration timeout,
                                           size_t max_output) {
  if (argv.empty()) return common::InvalidArgumentError("RunProcess: empty argv");
  GPUSCHED_ASSIGN_OR_RETURN(std::string exe, FindExecutable(argv[0], env));

  Fd out_r, out_w, err_r, err_w;
  GPUSCHED_RETURN_IF_ERROR(MakePipe(&out_r, &out_w));
  GPUSCHED_RETURN_IF_ERROR(MakePipe(&err_r, &err_w));
  common::StatusOr<pid_t> spawned = Spawn(exe, argv, env, out_w, err_w);
  out_w.Close();
  err_w.Close();
  if (!spawned.ok()) return spawned.status();
  const pid_t pid = *spawned;

  ProcessResult result;
  common::Duration waited{0};
  const Drain drain = DrainOutput(out_r, err_r, timeout, max_output, result, &waited);
  bool timed_out = drain == Drain::kTimedOut;
  const bool too_large = drain == Drain::kTooLarge;
  int wstatus = 0;
  if (timed_out || too_large) {
    ::kill(-pid, SIGKILL);
  } else {
    // Output is closed; wait for the exit within what is left of the timeout.
    timed_out = !WaitForExit(pid, timeout, &waited, &wstatus);
    if (!timed_out) {
      if (WIFEXITED(wstatus)) result.exit_code = WEXITSTATUS(wstatus);
      if (WIFSIGNALED(wstatus)) {
        return common::UnavailableError(
            common::Quote(exe) + " killed by signal " + std::to_string(WTERMSIG(wstatus)) +
            "; stderr: " + common::Quote(Tail(result.stderr_text, 512)));
      }
    }
  }
  if (timed_out || too_large) {
    while (::waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
    }
    if (timed_out) {
      return common::DeadlineExceededError(
          common::Quote(exe) + " did not finish within " +
          std::to_string(std::chrono::duration_cast<std::chrono::seconds>(timeout).count()) + "s");
    }
    return common::ResourceExhaustedError(common::Quote(exe) + " wrote more than " +
                                          std::to_string(max_output) + " bytes");
  }
  return result;
}

// ---------------------------------------------------------------------------------------------
// Static

std::string StaticCredentialProvider::Describe() const {
  std::string out;
  if (!credentials_.bearer_token.empty()) out = "static bearer token";
  if (!credentials_.client_cert_pem.empty())
    out += out.empty() ? "client certificate" : " + client certificate";
  return out.empty() ? "anonymous" : out;
}

// ---------------------------------------------------------------------------------------------
// Token file

TokenFileCredentialProvider::TokenFileCredentialProvider(std::string path,
                                                         const common::Clock& clock,
                                                         common::Duration check_interval,
                                                         Credentials tls)
    : path_(std::move(path)),
      clock_(clock),
      check_interval_(check_interval),
      tls_(std::move(tls)) {}

common::Status TokenFileCredentialProvider::ReloadLocked(bool force) {
  common::TimePoint now = clock_.Now();
  if (!force && last_check_ && now - *last_check_ < check_interval_) return common::Status::Ok();
  last_check_ = now;
  auto stamp = StatFile(path_);
  if (stamp.ok() && stamp_ && *stamp == *stamp_ && !token_.empty()) return common::Status::Ok();
  auto text = ReadFileToString(path_, 1u << 20);
  if (!stamp.ok() || !text.ok()) {
    common::Status s = !stamp.ok() ? stamp.status() : text.status();
    s = s.WithContext("token file");
    if (token_.empty()) return s;
    spdlog::warn("keeping the previous bearer token: {}", s.ToString());
    return common::Status::Ok();
  }
  std::string token(common::Trim(*text));
  if (token.empty()) {
    common::Status s =
        common::PermissionDeniedError("token file " + common::Quote(path_) + " is empty");
    if (token_.empty()) return s;
    spdlog::warn("keeping the previous bearer token: {}", s.ToString());
    return common::Status::Ok();
  }
  if (!token_.empty() && token != token_) spdlog::info("bearer token reloaded from {}", path_);
  token_ = std::move(token);
  stamp_ = *stamp;
  return common::Status::Ok();
}

common::StatusOr<Credentials> TokenFileCredentialProvider::Get() {
  common::MutexLock lock(mu_);
  GPUSCHED_RETURN_IF_ERROR(ReloadLocked(/*force=*/false));
  Credentials c = tls_;
  c.bearer_token = token_;
  return c;
}

bool TokenFileCredentialProvider::OnUnauthorized() {
  common::MutexLock lock(mu_);
  std::string before = token_;
  stamp_.reset();                              // re-read even if the stamp looks the same
  ReloadLocked(/*force=*/true).IgnoreError();  // a failure is reported by the next Get()
  return token_ != before;
}

std::string TokenFileCredentialProvider::Describe() const {
  std::string out = "token file " + common::Quote(path_);
  if (!tls_.client_cert_pem.empty()) out += " + client certificate";
  return out;
}

// ---------------------------------------------------------------------------------------------
// Exec plugin

namespace {

// The wording of an exec plugin's output: a wrong type is named, the value never quoted (the
// output holds credentials).
std::string ExecTypeError(api::JsonType want, const json::value& /*got*/) {
  return "want " + std::string(api::WantedTypeName(want));
}

const api::Dialect& ExecOutputDialect() {
  static const api::Dialect d{.path_style = api::PathStyle::kDotted, .type_error = &ExecTypeError};
  return d;
}

common::Status ExecOutputError(const api::JsonReader& r) {
  return common::InvalidArgumentError("exec plugin output: " + r.errors().Join());
}

}  // namespace

common::StatusOr<ExecCredential> ParseExecCredential(std::string_view stdout_text,
                                                     std::string_view api_version) {
  auto parsed = api::ParseJson(stdout_text, "exec plugin output");
  if (!parsed.ok()) {
    // The parse error quotes no input, but be sure: report only the position.
    return common::InvalidArgumentError("exec plugin output is not JSON");
  }
  api::JsonReader r(ExecOutputDialect());
  const api::FieldPath root;
  const json::object* o = r.AsObject(*parsed, root);
  if (o == nullptr) return common::InvalidArgumentError("exec plugin output: not a JSON object");
  const std::string_view kind = r.StringOr(*o, "kind", root);
  if (r.ok() && kind != "ExecCredential") {
    r.Error(root.Key("kind"), "want \"ExecCredential\", got " + common::Quote(kind));
  }
  const std::string_view got_version = r.StringOr(*o, "apiVersion", root);
  if (r.ok() && got_version != api_version) {
    r.Error(root.Key("apiVersion"),
            "want " + common::Quote(api_version) + ", got " + common::Quote(got_version));
  }
  const json::object* st = r.Object(*o, "status", root);
  if (r.ok() && st == nullptr) r.Error(root.Key("status"), "missing");
  if (!r.ok()) return ExecOutputError(r);
  const api::FieldPath sp = root.Key("status");
  ExecCredential cred;
  cred.credentials.bearer_token = r.StringOr(*st, "token", sp);
  cred.credentials.client_cert_pem = r.StringOr(*st, "clientCertificateData", sp);
  cred.credentials.client_key_pem = r.StringOr(*st, "clientKeyData", sp);
  const std::string_view expiration = r.StringOr(*st, "expirationTimestamp", sp);
  if (!r.ok()) return ExecOutputError(r);
  bool has_cert = !cred.credentials.client_cert_pem.empty();
  bool has_key = !cred.credentials.client_key_pem.empty();
  if (has_cert != has_key) {
    return common::InvalidArgumentError(std::string("exec plugin output: status.") +
                                        (has_cert ? "clientKeyData" : "clientCertificateData") +
                                        ": required when the other is set");
  }
  if (!has_cert && cred.credentials.bearer_token.empty()) {
    return common::InvalidArgumentError(
        "exec plugin output: status: neither token nor clientCertificateData/clientKeyData");
  }
  if (has_cert) {
    GPUSCHED_RETURN_IF_ERROR(CheckPemKeyPair(cred.credentials.client_cert_pem,
                                             cred.credentials.client_key_pem,
                                             "exec plugin output: status.clientCertificateData",
                                             "exec plugin output: status.clientKeyData"));
  }
  if (!expiration.empty()) {
    cred.expiration = ParseRfc3339(expiration);
    if (!cred.expiration) {
      return common::InvalidArgumentError(
          "exec plugin output: status.expirationTimestamp: invalid time " +
          common::Quote(expiration));
    }
  }
  return cred;
}

ExecCredentialProvider::ExecCredentialProvider(ExecConfig exec, Environment base_env,
                                               const ClusterConfig& cluster,
                                               const common::Clock& clock,
                                               ExecProviderOptions options, Credentials tls)
    : exec_(std::move(exec)),
      env_(BuildExecEnv(exec_, std::move(base_env), BuildExecInfo(exec_, cluster))),
      exec_info_(BuildExecInfo(exec_, cluster)),
      clock_(clock),
      options_(options),
      tls_(std::move(tls)) {}

common::StatusOr<ExecCredential> ExecCredentialProvider::Run() const {
  std::vector<std::string> argv;
  argv.push_back(exec_.command);
  argv.insert(argv.end(), exec_.args.begin(), exec_.args.end());
  auto result = RunProcess(argv, env_, options_.timeout);
  std::string what = "exec plugin " + common::Quote(exec_.command);
  if (!result.ok()) {
    common::Status s = result.status().WithContext(what);
    if (s.code() == common::StatusCode::kNotFound && !exec_.install_hint.empty()) {
      return common::NotFoundError(std::string(s.message()) + "; " + exec_.install_hint);
    }
    return s;
  }
  if (result->exit_code != 0) {
    // stderr of a failing plugin explains the failure (expired SSO session, missing profile);
    // a failing plugin has no token to leak.
    return common::UnavailableError(what + " exited with status " +
                                    std::to_string(result->exit_code) + ": " +
                                    common::Quote(Tail(result->stderr_text, 512)));
  }
  auto cred = ParseExecCredential(result->stdout_text, exec_.api_version);
  if (!cred.ok()) return cred.status().WithContext(what);
  return cred;
}

common::StatusOr<Credentials> ExecCredentialProvider::Get() {
  common::MutexLock lock(mu_);
  common::TimePoint now = clock_.Now();
  if (cached_ && (!cached_->expiration || now + options_.expiry_margin < *cached_->expiration)) {
    return cached_->credentials;
  }
  ++runs_;
  auto cred = Run();
  if (!cred.ok()) return cred.status();
  if (cred->credentials.client_cert_pem.empty()) {
    cred->credentials.client_cert_pem = tls_.client_cert_pem;
    cred->credentials.client_key_pem = tls_.client_key_pem;
  }
  if (common::V(2)) {
    spdlog::info(
        "exec plugin {} returned credentials{}", common::Quote(exec_.command),
        cred->expiration ? " expiring at " + FormatRfc3339(*cred->expiration) : std::string());
  }
  cached_ = std::move(cred).value();
  return cached_->credentials;
}

bool ExecCredentialProvider::OnUnauthorized() {
  common::MutexLock lock(mu_);
  cached_.reset();
  return true;
}

std::string ExecCredentialProvider::Describe() const {
  return "exec plugin " + common::Quote(exec_.command) + " (" + exec_.api_version + ")";
}

int ExecCredentialProvider::RunsForTest() const {
  common::MutexLock lock(mu_);
  return runs_;
}

// ---------------------------------------------------------------------------------------------

CredentialProviderPtr MakeCredentialProvider(const ClusterConfig& config,
                                             const Environment& base_env,
                                             const common::Clock& clock) {
  Credentials tls;
  tls.client_cert_pem = config.client_cert_pem;
  tls.client_key_pem = config.client_key_pem;
  if (config.exec) {
    return std::make_unique<ExecCredentialProvider>(*config.exec, base_env, config, clock,
                                                    ExecProviderOptions{}, std::move(tls));
  }
  if (!config.token_file.empty()) {
    return std::make_unique<TokenFileCredentialProvider>(config.token_file, clock,
                                                         std::chrono::minutes(1), std::move(tls));
  }
  tls.bearer_token = config.token;
  return std::make_unique<StaticCredentialProvider>(std::move(tls));
}

}  // namespace gpusched::kube::client
