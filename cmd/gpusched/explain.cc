// SPDX-License-Identifier: Apache-2.0
// gpusched explain: why a pod goes (or went, or cannot go) where it does. It runs one scheduling
// cycle for the pod with the production framework, records every node's Filter verdict and the
// per-plugin Score breakdown, and prints them with the final choice. Nothing is written anywhere.
//
//   gpusched explain NAMESPACE/POD [--kubeconfig FILE]      a live cluster (read-only: list nodes
//                                                          and pods, as the scheduler's informers)
//   gpusched explain NAMESPACE/POD -f manifests.yaml ...   simulator input (the format of
//                                                          `gpusched simulate -f`): the manifests
//                                                          are replayed first, then the pod is
//                                                          explained on the resulting cluster
//   [--config FILE] [--scheduler-name NAME] [-o text|json] [--seed N]
//
// A pod that is already bound is explained as if it were unbound: its own usage is removed from
// its node, so the scores say where it would go now; the output names the node it is bound to.
// The profile is --scheduler-name, else the pod's spec.schedulerName when it is a profile of the
// config, else the first profile (with a note). Every node is filtered and every feasible node is
// scored (percentageOfNodesToScore is ignored), so the view is complete.
//
// Exit codes: 0 explained (whether or not the pod fits), 1 bad input (pod or file not found,
// invalid config, API error, a plugin error during the cycle), 2 usage.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdint>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <spdlog/spdlog.h>

#include <boost/json.hpp>

#include "cmd/gpusched/commands.h"
#include "cmd/gpusched/wiring.h"
#include "src/common/clock.h"
#include "src/common/executor.h"
#include "src/common/interner.h"
#include "src/common/mutex.h"
#include "src/common/random.h"
#include "src/config/config.h"
#include "src/framework/registry.h"
#include "src/kube/client/http_client.h"
#include "src/kube/client/kubeconfig.h"
#include "src/kube/informer/informer.h"
#include "src/plugins/in_tree_registry.h"
#include "src/scheduler/scheduler.h"
#include "src/sim/report.h"
#include "src/sim/simulator.h"
#include "src/sim/workload.h"

namespace gpusched::cmd {
namespace {

using framework::runtime::ScheduleResult;

// Explain writes nothing: a cycle that reached Bind would be a bug, so every write fails loudly.
class ReadOnlyApi final : public kube::ApiClient {
 public:
  common::Status BindPod(const api::Pod& pod, std::string_view,
                         const std::vector<std::pair<std::string, std::string>>&) override {
    return common::InternalError("explain is read-only: refusing to bind " + pod.Key());
  }
  common::Status SetPodUnschedulable(const api::Pod&, std::string_view, std::string_view) override {
    return common::Status::Ok();
  }
  common::Status CreateEvent(const kube::EventRecord&) override { return common::Status::Ok(); }
};

// Forwards informer deliveries to the scheduler, except the pod being explained (so that its own
// usage is not on its node), which it keeps. Called from the two informer threads.
class Collector final : public kube::ClusterEventHandler {
 public:
  Collector(kube::ClusterEventHandler& next, std::string ns, std::string name)
      : next_(next), ns_(std::move(ns)), name_(std::move(name)) {}

  void OnNodeAdd(api::NodePtr node) override { next_.OnNodeAdd(std::move(node)); }
  void OnNodeUpdate(api::NodePtr o, api::NodePtr n) override { next_.OnNodeUpdate(std::move(o), std::move(n)); }
  void OnNodeDelete(api::NodePtr node) override { next_.OnNodeDelete(std::move(node)); }
  void OnPodAdd(api::PodPtr pod) override {
    if (Keep(pod)) return;
    next_.OnPodAdd(std::move(pod));
  }
  void OnPodUpdate(api::PodPtr o, api::PodPtr n) override {
    if (Keep(n)) return;
    next_.OnPodUpdate(std::move(o), std::move(n));
  }
  void OnPodDelete(api::PodPtr pod) override {
    if (pod->meta.namespace_ == ns_ && pod->meta.name == name_) {
      common::MutexLock l(mu_);
      target_ = nullptr;
      return;
    }
    next_.OnPodDelete(std::move(pod));
  }
  api::PodPtr target() {
    common::MutexLock l(mu_);
    return target_;
  }

 private:
  bool Keep(const api::PodPtr& pod) {
    if (pod->meta.namespace_ != ns_ || pod->meta.name != name_) return false;
    common::MutexLock l(mu_);
    target_ = pod;
    return true;
  }
  kube::ClusterEventHandler& next_;
  const std::string ns_;
  const std::string name_;
  common::Mutex mu_;
  api::PodPtr target_ GPUSCHED_GUARDED_BY(mu_);
};

// One node's line of the explanation.
struct NodeRow {
  std::string name;
  bool feasible = false;
  std::string code;    // the Filter status code name of a rejected node
  std::string plugin;  // the rejecting plugin
  std::string reason;
  const framework::runtime::ScoreBreakdown* scores = nullptr;  // feasible nodes
  bool chosen = false;
  bool bound = false;  // the pod is bound to this node now
};

struct Explanation {
  std::string pod;
  std::string profile;
  std::string profile_note;  // why this profile, when not the pod's own
  std::string bound_node;    // empty when the pod is not bound
  std::string source;        // "cluster <server>" or the manifest files
  ScheduleResult result;
  std::vector<NodeRow> nodes;  // feasible by total (best first), then rejected by name
  std::string chosen;
  std::string status;   // "schedulable", "unschedulable", "unresolvable", "error"
  std::string message;  // kube-scheduler's FitError message or the error
};

// Builds the rows from the cycle's result. Rejected nodes come from the verdicts (or the
// PreFilter status, which applies to every node), feasible ones from the score breakdowns.
void BuildRows(Explanation& ex, const framework::Snapshot& snapshot) {
  const ScheduleResult& r = ex.result;
  std::vector<int> row_of(snapshot.nodes().size(), -1);
  for (const auto& ni : snapshot.nodes()) {
    if (!ni.valid()) continue;
    NodeRow row;
    row.name = std::string(ni.name());
    row.bound = !ex.bound_node.empty() && row.name == ex.bound_node;
    row_of[static_cast<size_t>(ni.index)] = static_cast<int>(ex.nodes.size());
    if (!r.diagnosis.pre_filter_status.ok()) {
      row.code = std::string(framework::CodeName(r.diagnosis.pre_filter_status.code()));
      row.plugin = std::string(r.diagnosis.pre_filter_status.plugin());
      row.reason = std::string(r.diagnosis.pre_filter_status.reason());
      if (row.plugin.empty()) row.plugin = "PreFilter";
    }
    ex.nodes.push_back(std::move(row));
  }
  for (const auto& v : r.diagnosis.verdicts) {
    int k = row_of[static_cast<size_t>(v.node)];
    if (k < 0) continue;
    NodeRow& row = ex.nodes[static_cast<size_t>(k)];
    row.code = std::string(framework::CodeName(v.status.code()));
    row.plugin = std::string(v.status.plugin());
    row.reason = std::string(v.status.reason());
  }
  for (const auto& b : r.scores) {
    int k = row_of[static_cast<size_t>(b.node)];
    if (k < 0) continue;
    NodeRow& row = ex.nodes[static_cast<size_t>(k)];
    row.feasible = true;
    row.scores = &b;
    row.chosen = b.node == r.node;
  }
  if (r.node != framework::kNoNode) {
    int k = row_of[static_cast<size_t>(r.node)];
    if (k >= 0) {
      ex.nodes[static_cast<size_t>(k)].feasible = true;
      ex.nodes[static_cast<size_t>(k)].chosen = true;
      ex.chosen = ex.nodes[static_cast<size_t>(k)].name;
    }
  }
  std::stable_sort(ex.nodes.begin(), ex.nodes.end(), [](const NodeRow& a, const NodeRow& b) {
    if (a.feasible != b.feasible) return a.feasible;
    if (a.feasible) {
      int64_t ta = a.scores ? a.scores->total : 0, tb = b.scores ? b.scores->total : 0;
      if (ta != tb) return ta > tb;
      if (a.chosen != b.chosen) return a.chosen;
    }
    return a.name < b.name;
  });
  if (r.status.ok()) {
    ex.status = "schedulable";
  } else if (r.status.IsError()) {
    ex.status = "error";
    ex.message = r.status.ToString();
  } else {
    ex.status = r.status.code() == framework::Code::kUnschedulableAndUnresolvable ? "unresolvable"
                                                                                 : "unschedulable";
    ex.message = r.diagnosis.Message();
  }
}

// An aligned table: columns listed in `right` are right-aligned (numbers).
std::string Table(const std::vector<std::vector<std::string>>& rows, const std::vector<bool>& right) {
  std::vector<size_t> width;
  for (const auto& r : rows) {
    if (width.size() < r.size()) width.resize(r.size(), 0);
    for (size_t c = 0; c < r.size(); ++c) width[c] = std::max(width[c], r[c].size());
  }
  std::string out;
  for (const auto& r : rows) {
    std::string line;
    for (size_t c = 0; c < r.size(); ++c) {
      bool is_last = c + 1 == r.size();
      size_t pad = width[c] - r[c].size();
      bool ra = c < right.size() && right[c];
      if (ra) line.append(pad, ' ');
      line += r[c];
      if (!ra && !is_last) line.append(pad, ' ');
      if (!is_last) line += "  ";
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

std::string FormatText(const Explanation& ex) {
  std::ostringstream o;
  o << "Pod " << ex.pod << " (profile " << ex.profile << ", " << ex.result.diagnosis.num_nodes
    << " nodes, " << ex.source << ")\n";
  if (!ex.profile_note.empty()) o << "Note: " << ex.profile_note << "\n";
  if (!ex.bound_node.empty()) {
    o << "Bound to " << ex.bound_node
      << "; explained as if unbound (its own usage removed from " << ex.bound_node << ")\n";
  }
  o << "\nFILTER\n";
  std::vector<std::vector<std::string>> rows{{"NODE", "VERDICT", "PLUGIN", "REASON"}};
  for (const auto& n : ex.nodes) {
    std::string name = n.name + (n.bound ? " (bound)" : "");
    if (n.feasible) {
      rows.push_back({name, "Feasible", "", ""});
    } else if (!n.code.empty()) {
      rows.push_back({name, n.code, n.plugin, n.reason});
    } else {
      rows.push_back({name, "NotEvaluated", "", ""});
    }
  }
  o << Table(rows, {});
  bool any_scores = std::any_of(ex.nodes.begin(), ex.nodes.end(),
                                [](const NodeRow& n) { return n.scores != nullptr; });
  if (any_scores) {
    o << "\nSCORE (feasible nodes, highest total first; weighted = normalized x weight)\n";
    std::vector<std::vector<std::string>> s{{"NODE", "PLUGIN", "RAW", "NORMALIZED", "WEIGHT", "WEIGHTED"}};
    for (const auto& n : ex.nodes) {
      if (n.scores == nullptr) continue;
      bool first = true;
      for (const auto& ps : n.scores->by_plugin) {
        s.push_back({first ? n.name : "", std::string(ps.plugin), std::to_string(ps.raw),
                     std::to_string(ps.normalized), std::to_string(ps.weight), std::to_string(ps.weighted)});
        first = false;
      }
      s.push_back({first ? n.name : "", "TOTAL" + std::string(n.chosen ? " (chosen)" : ""), "", "",
                   "", std::to_string(n.scores->total)});
    }
    o << Table(s, {false, false, true, true, true, true});
  }
  o << "\n";
  if (ex.status == "schedulable") {
    o << "Result: " << ex.chosen;
    const NodeRow* runner = nullptr;
    for (const auto& n : ex.nodes) {
      if (n.chosen && n.scores) o << " (total " << n.scores->total << ")";
      if (!n.chosen && n.feasible && n.scores && runner == nullptr) runner = &n;
    }
    if (runner != nullptr) o << "; runner-up " << runner->name << " (total " << runner->scores->total << ")";
    o << "; " << ex.result.feasible_nodes << "/" << ex.result.diagnosis.num_nodes << " nodes feasible\n";
    if (!ex.bound_node.empty()) {
      o << (ex.bound_node == ex.chosen ? "The pod's node " + ex.bound_node + " is still the best choice.\n"
                                       : "The pod is on " + ex.bound_node + "; with the cluster as it is now " +
                                             ex.chosen + " would be chosen.\n");
    }
  } else {
    o << "Result: " << ex.status << ": " << ex.message << "\n";
  }
  return o.str();
}

boost::json::object ToJson(const Explanation& ex) {
  boost::json::object o;
  o["pod"] = ex.pod;
  o["profile"] = ex.profile;
  if (!ex.profile_note.empty()) o["profileNote"] = ex.profile_note;
  o["source"] = ex.source;
  o["boundNode"] = ex.bound_node.empty() ? boost::json::value(nullptr) : boost::json::value(ex.bound_node);
  o["status"] = ex.status;
  if (!ex.message.empty()) o["message"] = ex.message;
  o["chosenNode"] = ex.chosen.empty() ? boost::json::value(nullptr) : boost::json::value(ex.chosen);
  o["totalNodes"] = ex.result.diagnosis.num_nodes;
  o["evaluatedNodes"] = ex.result.evaluated_nodes;
  o["feasibleNodes"] = ex.result.feasible_nodes;
  boost::json::array nodes;
  for (const auto& n : ex.nodes) {
    boost::json::object j;
    j["name"] = n.name;
    j["feasible"] = n.feasible;
    j["chosen"] = n.chosen;
    j["bound"] = n.bound;
    if (!n.feasible) {
      boost::json::object f;
      f["code"] = n.code.empty() ? "NotEvaluated" : n.code;
      f["plugin"] = n.plugin;
      f["reason"] = n.reason;
      j["filter"] = std::move(f);
    }
    if (n.scores != nullptr) {
      boost::json::array s;
      for (const auto& ps : n.scores->by_plugin) {
        s.push_back(boost::json::object{{"plugin", std::string(ps.plugin)},
                                        {"raw", ps.raw},
                                        {"normalized", ps.normalized},
                                        {"weight", ps.weight},
                                        {"weighted", ps.weighted}});
      }
      j["scores"] = std::move(s);
      j["total"] = n.scores->total;
    }
    nodes.push_back(std::move(j));
  }
  o["nodes"] = std::move(nodes);
  return o;
}

class ExplainCommand final : public Command {
 public:
  explicit ExplainCommand(CLI::App& root)
      : app_(*root.add_subcommand(
            "explain",
            "Explain a pod's placement: every node's Filter verdict and Score breakdown, and the "
            "final choice")) {
    app_.add_option("pod", pod_arg_, "The pod, as NAMESPACE/NAME (or NAME in namespace default)")
        ->required();
    app_.add_option("--kubeconfig", kubeconfig_,
                    "kubeconfig of the live cluster (default: KUBECONFIG, in-cluster config, "
                    "~/.kube/config)");
    app_.add_option("-f,--filename", files_,
                    "Simulator input instead of a live cluster: YAML/JSON manifests of Nodes and "
                    "Pods (repeatable), replayed with `gpusched simulate`'s plain protocol first")
        ->allow_extra_args(false);
    app_.add_option("--config", config_file_,
                    "KubeSchedulerConfiguration file (default: the default profile)");
    app_.add_option("--scheduler-name", scheduler_name_,
                    "Profile to explain with (default: the pod's spec.schedulerName if it is a "
                    "profile, else the first profile)");
    app_.add_option("-o,--output", output_, "Output format")
        ->check(CLI::IsMember({"text", "json"}))
        ->capture_default_str();
    app_.add_option("--seed", seed_, "Seed of the tie-breaking random stream")->capture_default_str();
    app_.add_option("--sync-timeout", sync_timeout_s_,
                    "Live cluster: seconds to wait for the node and pod lists")
        ->check(CLI::Range(1, 3600))
        ->capture_default_str();
  }

  CLI::App& app() override { return app_; }

  int Run() override {
    if (!kubeconfig_.empty() && !files_.empty()) {
      std::cerr << "error: --kubeconfig and -f/--filename are exclusive\n"
                   "Run with --help for more information.\n";
      return kExitUsage;
    }
    auto slash = pod_arg_.find('/');
    std::string ns = slash == std::string::npos ? "default" : pod_arg_.substr(0, slash);
    std::string name = slash == std::string::npos ? pod_arg_ : pod_arg_.substr(slash + 1);
    if (ns.empty() || name.empty() || name.find('/') != std::string::npos) {
      std::cerr << "error: pod: want NAMESPACE/NAME, got \"" << pod_arg_ << "\"\n";
      return kExitUsage;
    }
    auto config = LoadConfig();
    if (!config.ok()) return BadInput(config.status());
    if (common::Status s = config::Validate(*config); !s.ok()) {
      return BadInput(common::InvalidArgumentError(
          (config_file_.empty() ? std::string("default config") : config_file_) + ": " + std::string(s.message())));
    }
    if (!scheduler_name_.empty()) {
      bool found = false;
      std::string names;
      for (const auto& p : config->profiles) {
        found = found || p.scheduler_name == scheduler_name_;
        names += (names.empty() ? "" : ", ") + p.scheduler_name;
      }
      if (!found) {
        return BadInput(common::InvalidArgumentError("--scheduler-name: \"" + scheduler_name_ +
                                                     "\" is not a profile of the config (profiles: " +
                                                     names + ")"));
      }
    }
    if (common::Status s = plugins::RegisterInTreePlugins(registry_); !s.ok()) return BadInput(s);
    return files_.empty() ? ExplainLive(*config, ns, name) : ExplainManifests(*config, ns, name);
  }

 private:
  static int BadInput(const common::Status& s) {
    std::cerr << "error: " << s.message() << "\n";
    return kExitBadInput;
  }

  common::StatusOr<config::SchedulerConfig> LoadConfig() const {
    if (config_file_.empty()) {
      return files_.empty() ? config::DefaultSchedulerConfig() : sim::SimulationDefaultConfig();
    }
    return LoadSchedulerConfig(config_file_);
  }

  // Runs the cycle for `target` (bound or not) on `sched` and prints the result.
  int ExplainPod(scheduler::Scheduler& sched, const config::SchedulerConfig& cfg,
                 const api::Pod& target, std::string source) {
    Explanation ex;
    ex.pod = target.Key();
    ex.source = std::move(source);
    ex.bound_node = target.node_name;
    std::string_view own = common::Str(target.scheduler_name);
    if (!scheduler_name_.empty()) {
      ex.profile = scheduler_name_;
    } else if (sched.FrameworkFor(own) != nullptr) {
      ex.profile = std::string(own);
    } else {
      ex.profile = cfg.profiles.front().scheduler_name;
      ex.profile_note = "spec.schedulerName \"" + std::string(own) +
                        "\" is not a profile of the config; explained with profile \"" + ex.profile + "\"";
    }
    api::Pod pod = target;
    pod.node_name.clear();
    pod.scheduler_name = common::Intern(ex.profile);
    auto result = sched.Explain(pod);
    if (!result.ok()) return BadInput(result.status());
    ex.result = std::move(result).value();
    BuildRows(ex, sched.snapshot());
    if (output_ == "json") {
      std::cout << sim::FormatJson(ToJson(ex));
    } else {
      std::cout << FormatText(ex);
    }
    if (ex.status == "error") {
      std::cerr << "error: the scheduling cycle failed: " << ex.message << "\n";
      return kExitBadInput;
    }
    return kExitOk;
  }

  int ExplainLive(const config::SchedulerConfig& cfg, const std::string& ns, const std::string& name) {
    common::SystemClock clock;
    auto conn = Connect(kubeconfig_.empty() ? cfg.client_connection.kubeconfig : kubeconfig_);
    if (!conn.ok()) return BadInput(conn.status());
    const kube::client::ClusterConfig& cluster = conn->cluster;
    common::Random http_random(seed_ ^ 0x9e3779b97f4a7c15ull);
    Stopper http_stop;
    auto rest = NewRestClient(
        *conn, RestClientOptions{cfg.client_connection.qps, cfg.client_connection.burst, nullptr},
        clock, http_random, http_stop);
    if (!rest.ok()) return BadInput(rest.status());

    ReadOnlyApi api;
    common::Random random(seed_);
    common::InlineExecutor executor;
    auto sched = scheduler::Scheduler::Create(
        cfg, scheduler::SchedulerDeps{clock, random, api, executor, registry_});
    if (!sched.ok()) return BadInput(sched.status());
    Collector collector(**sched, ns, name);
    auto nodes = kube::informer::NewNodeInformer(**rest, collector, clock);
    auto pods = kube::informer::NewPodInformer(**rest, collector, clock);
    nodes->Start();
    pods->Start();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(sync_timeout_s_);
    bool synced = false;
    while (std::chrono::steady_clock::now() < deadline) {
      if (nodes->WaitForSync(std::chrono::milliseconds(100)) &&
          pods->WaitForSync(std::chrono::milliseconds(100))) {
        synced = true;
        break;
      }
    }
    nodes->Stop();
    pods->Stop();
    (*rest)->Cancel();
    http_stop.Stop();
    nodes->Join();
    pods->Join();
    if (!synced) {
      return BadInput(common::UnavailableError(
          "listing nodes and pods from " + cluster.Describe() + " did not finish within " +
          std::to_string(sync_timeout_s_) + "s (see --sync-timeout)"));
    }
    api::PodPtr target = collector.target();
    if (target == nullptr) {
      return BadInput(common::NotFoundError("pod " + ns + "/" + name + " not found in the cluster " +
                                            "(or it has terminated)"));
    }
    return ExplainPod(**sched, cfg, *target, "cluster " + cluster.Describe());
  }

  int ExplainManifests(const config::SchedulerConfig& cfg, const std::string& ns, const std::string& name) {
    sim::Workload w;
    std::string source;
    for (const auto& f : files_) {
      auto text = sim::ReadFile(f);
      if (!text.ok()) return BadInput(text.status());
      if (common::Status s = sim::AppendManifests(*text, f, w); !s.ok()) return BadInput(s);
      source += (source.empty() ? "" : ", ") + f;
    }
    if (w.nodes.empty()) {
      return BadInput(common::InvalidArgumentError(source + ": no Node objects (explain needs a cluster)"));
    }
    for (const auto& warning : w.warnings) spdlog::warn("{}", warning);
    common::SystemClock wall;
    sim::SimOptions opts;
    opts.seed = seed_;
    auto sim = sim::Simulator::Create(cfg, sim::Simulator::Deps{registry_, wall}, opts);
    if (!sim.ok()) return BadInput(sim.status());
    if (common::Status s = (*sim)->Run(w); !s.ok()) return BadInput(s);
    const sim::PodOutcome* outcome = nullptr;
    for (const auto& o : (*sim)->outcomes()) {
      if (o.pod->meta.namespace_ == ns && o.pod->meta.name == name) outcome = &o;
    }
    if (outcome == nullptr) {
      return BadInput(common::NotFoundError("pod " + ns + "/" + name + " not found in " + source));
    }
    scheduler::Scheduler& sched = (*sim)->scheduler();
    api::PodPtr current = (*sim)->cluster().GetPod(outcome->pod->meta.uid);
    if (current == nullptr) current = outcome->pod;
    if (!current->node_name.empty()) sched.OnPodDelete(current);  // remove its own usage
    return ExplainPod(sched, cfg, *current, "simulated from " + source);
  }

  CLI::App& app_;
  std::string pod_arg_;
  std::string kubeconfig_;
  std::vector<std::string> files_;
  std::string config_file_;
  std::string scheduler_name_;
  std::string output_ = "text";
  uint64_t seed_ = 42;
  int sync_timeout_s_ = 30;
  framework::Registry registry_;
};

}  // namespace

std::unique_ptr<Command> NewExplainCommand(CLI::App& root) {
  return std::make_unique<ExplainCommand>(root);
}

}  // namespace gpusched::cmd
