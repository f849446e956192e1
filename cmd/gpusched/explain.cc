// SPDX-License-Identifier: Apache-2.0
// gpusched explain: why a pod goes (or went, or cannot go) where it does. It runs one scheduling
// cycle for the pod with the production framework, records every node's Filter verdict and the
// per-plugin Score breakdown, and prints them with the final choice. Nothing is written anywhere.
//
//   gpusched explain POD [--kubeconfig FILE]                a live cluster (read-only: every kind
//                                                          the scheduler reads, listed once by
//                                                          its informers: cluster_list.h)
//   gpusched explain POD -f manifests.yaml ...             simulator input (the format of
//                                                          `gpusched simulate -f`): the manifests
//                                                          are replayed first, then the pod is
//                                                          explained on the resulting cluster
//   [--config FILE] [--scheduler-name NAME] [-o text|json] [--seed N]
//
// POD is NAME, NAMESPACE/NAME or TYPE/NAME of the pod's workload (explain::ParsePodRef:
// deployment/web, job/finetune, podgroup/llama, ...) in the namespace of -n; for a workload, its
// first pod not bound is explained (explain::ChooseTarget), and a note on stderr names it.
//
// A pod that is already bound is explained as if it were unbound: its own usage is removed from
// its node, so the scores say where it would go now; the output names the node it is bound to.
// The profile is --scheduler-name, else the pod's spec.schedulerName when it is a profile of the
// config, else the first profile (with a note). Every node is filtered and every feasible node is
// scored (percentageOfNodesToScore is ignored), so the view is complete.
//
// Exit codes: 0 explained (whether or not the pod fits), 1 bad input (pod or file not found,
// invalid config, API error, a plugin error during the cycle), 2 usage.
//
// This file is the CLI: flags, the cluster or manifests, the cycle, printing. The rows and the
// text and JSON forms are the explain model, src/explain/explain.h.
#include "src/explain/explain.h"

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdint>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "cmd/gpusched/cluster_list.h"
#include "cmd/gpusched/cluster_snapshot.h"
#include "cmd/gpusched/commands.h"
#include "cmd/gpusched/read_only_api.h"
#include "cmd/gpusched/wiring.h"
#include "src/api/gang.h"
#include "src/cache/network_store.h"
#include "src/common/clock.h"
#include "src/common/executor.h"
#include "src/common/interner.h"
#include "src/common/mutex.h"
#include "src/common/random.h"
#include "src/config/config.h"
#include "src/config/duration.h"
#include "src/explain/dra_claims.h"
#include "src/explain/pod_ref.h"
#include "src/framework/dra_view.h"
#include "src/framework/registry.h"
#include "src/kube/client/http_client.h"
#include "src/kube/client/kubeconfig.h"
#include "src/kube/informer/informer.h"
#include "src/plugins/in_tree_registry.h"
#include "src/scheduler/scheduler.h"
#include "src/sim/controllers.h"
#include "src/sim/replay.h"
#include "src/sim/report.h"
#include "src/sim/simulator.h"
#include "src/sim/workload.h"

namespace gpusched::cmd {
namespace {

// Notes on stderr for what the listing could not read: forbidden or unlisted collections, and a
// gang policy API or resource.k8s.io the cluster does not serve while the pod needs it.
void NoteMissing(const ClusterListing& listing, const api::Pod& target) {
  for (const std::string& note : listing.Notes()) std::cerr << "note: " << note << "\n";
  if (!target.gang.empty() && listing.Missing(GangPolicyResource(target.gang.api))) {
    std::cerr << "note: the gang policies (" << GangPolicyResource(target.gang.api)
              << ") could not be listed; the pod is explained without its gang\n";
  }
  if (target.resource_claims && listing.Missing("resourceclaims")) {
    std::cerr << "note: resourceclaims could not be listed; the pod's claims are not found\n";
  }
}

// Forwards informer deliveries to the scheduler and keeps the pods `ref` selects (the candidates
// of explain::ChooseTarget). Called from the informer threads.
class Collector final : public kube::ClusterEventHandler {
 public:
  Collector(kube::ClusterEventHandler& next, explain::PodRef ref)
      : next_(next), ref_(std::move(ref)) {}

  void OnNodeAdd(api::NodePtr node) override { next_.OnNodeAdd(std::move(node)); }
  void OnNodeUpdate(api::NodePtr o, api::NodePtr n) override {
    next_.OnNodeUpdate(std::move(o), std::move(n));
  }
  void OnNodeDelete(api::NodePtr node) override { next_.OnNodeDelete(std::move(node)); }
  void OnStorageAdd(const kube::StorageObject& o) override { next_.OnStorageAdd(o); }
  void OnStorageUpdate(const kube::StorageObject& o, const kube::StorageObject& n) override {
    next_.OnStorageUpdate(o, n);
  }
  void OnStorageDelete(const kube::StorageObject& o) override { next_.OnStorageDelete(o); }
  void OnDraAdd(const kube::DraObject& o) override { next_.OnDraAdd(o); }
  void OnDraUpdate(const kube::DraObject& o, const kube::DraObject& n) override {
    next_.OnDraUpdate(o, n);
  }
  void OnDraDelete(const kube::DraObject& o) override { next_.OnDraDelete(o); }
  void OnNetworkUpsert(const kube::NetworkObject& o) override { next_.OnNetworkUpsert(o); }
  void OnNetworkDelete(const kube::NetworkObject& o) override { next_.OnNetworkDelete(o); }
  void OnPodGroupAdd(api::PodGroupPtr g) override { next_.OnPodGroupAdd(std::move(g)); }
  void OnPodGroupUpdate(api::PodGroupPtr o, api::PodGroupPtr g) override {
    next_.OnPodGroupUpdate(std::move(o), std::move(g));
  }
  void OnPodGroupDelete(api::PodGroupPtr g) override { next_.OnPodGroupDelete(std::move(g)); }
  void OnPdbAdd(api::PdbPtr pdb) override { next_.OnPdbAdd(std::move(pdb)); }
  void OnPdbUpdate(api::PdbPtr o, api::PdbPtr n) override {
    next_.OnPdbUpdate(std::move(o), std::move(n));
  }
  void OnPdbDelete(api::PdbPtr pdb) override { next_.OnPdbDelete(std::move(pdb)); }
  void OnPodAdd(api::PodPtr pod) override {
    Keep(pod);
    next_.OnPodAdd(std::move(pod));
  }
  void OnPodUpdate(api::PodPtr o, api::PodPtr n) override {
    Keep(n);
    next_.OnPodUpdate(std::move(o), std::move(n));
  }
  void OnPodDelete(api::PodPtr pod) override {
    {
      common::MutexLock l(mu_);
      selected_.erase(pod->meta.uid);
    }
    next_.OnPodDelete(std::move(pod));
  }
  // The selected pods, by uid.
  std::vector<api::PodPtr> selected() {
    common::MutexLock l(mu_);
    std::vector<api::PodPtr> out;
    for (const auto& [uid, pod] : selected_) out.push_back(pod);
    return out;
  }

 private:
  void Keep(const api::PodPtr& pod) {
    if (!explain::Selects(ref_, *pod)) return;
    common::MutexLock l(mu_);
    selected_[pod->meta.uid] = pod;
  }
  kube::ClusterEventHandler& next_;
  const explain::PodRef ref_;
  common::Mutex mu_;
  std::map<std::string, api::PodPtr> selected_ GPUSCHED_GUARDED_BY(mu_);
};

// The pod to explain among `pods`: explain::ChooseTarget, with a note on stderr naming the pod
// chosen when `ref` names a workload. NotFound names `where`.
common::StatusOr<api::PodPtr> TargetOf(const explain::PodRef& ref,
                                       const std::vector<api::PodPtr>& pods,
                                       const std::string& where) {
  size_t selected = 0;
  api::PodPtr target = explain::ChooseTarget(ref, pods, &selected);
  if (target == nullptr) {
    return common::NotFoundError((ref.kind == explain::PodRef::Kind::kPod
                                      ? ref.ToString() + " not found in "
                                      : "no pod of " + ref.ToString() + " found in ") +
                                 where);
  }
  if (ref.kind != explain::PodRef::Kind::kPod) {
    std::cerr << "note: " << ref.ToString() << ": explaining pod " << target->Key() << " ("
              << selected << (selected == 1 ? " pod" : " pods") << "; the first "
              << (target->node_name.empty() ? "not bound" : "by name, all bound") << ")\n";
  }
  return target;
}

class ExplainCommand final : public Command {
 public:
  explicit ExplainCommand(CLI::App& root)
      : app_(*root.add_subcommand(
            "explain",
            "Explain a pod's placement: every node's Filter verdict and Score breakdown, and the "
            "final choice")) {
    app_.add_option("pod", pod_arg_,
                    "The pod: NAME, NAMESPACE/NAME, or TYPE/NAME of its workload (deployment, "
                    "replicaset, statefulset, daemonset, job, podgroup; kubectl's short names "
                    "too), whose first pod not bound is explained")
        ->required();
    app_.add_option("-n,--namespace", namespace_, "The namespace of the pod (default: default)");
    app_.add_option("--at", at_text_,
                    "With -f: replay the manifests (as `gpusched simulate --replay`) until this "
                    "time after the start (a duration such as 90m) and explain the pod as the "
                    "cluster was then");
    in_.AddTo(app_,
              "Simulator input instead of a live cluster: YAML/JSON manifests of Nodes and Pods "
              "(repeatable; a file, a directory or - for standard input), replayed with "
              "`gpusched simulate`'s plain protocol first");
    app_.add_option("--config", config_file_,
                    "KubeSchedulerConfiguration file (default: the default profile)");
    app_.add_option("--scheduler-name", scheduler_name_,
                    "Profile to explain with (default: the pod's spec.schedulerName if it is a "
                    "profile, else the first profile)");
  }

  CLI::App& app() override { return app_; }

  int Run() override {
    if (std::string conflict = in_.Conflict(); !conflict.empty()) {
      std::cerr << "error: " << conflict << "\nRun with --help for more information.\n";
      return kExitUsage;
    }
    if (!at_text_.empty()) {
      const std::optional<int64_t> at = config::ParseGoDurationNanos(at_text_);
      if (!at || *at < 0 || in_.files.empty()) {
        std::cerr << "error: --at: "
                  << (in_.files.empty() ? "needs -f (a replay of manifests)"
                                        : "invalid value \"" + at_text_ +
                                              "\" (want a duration such as "
                                              "\"90m\")")
                  << "\n";
        return kExitUsage;
      }
      at_ = common::Duration(*at);
    }
    common::StatusOr<explain::PodRef> ref = explain::ParsePodRef(pod_arg_, namespace_);
    if (!ref.ok()) {
      std::cerr << "error: " << ref.status().message() << "\n";
      return kExitUsage;
    }
    auto config = LoadConfig();
    if (!config.ok()) return BadInput(config.status());
    if (common::Status s = config::Validate(*config); !s.ok()) {
      return BadInput(common::InvalidArgumentError(
          (config_file_.empty() ? std::string("default config") : config_file_) + ": " +
          std::string(s.message())));
    }
    if (!scheduler_name_.empty()) {
      bool found = false;
      std::string names;
      for (const auto& p : config->profiles) {
        found = found || p.scheduler_name == scheduler_name_;
        names += (names.empty() ? "" : ", ") + p.scheduler_name;
      }
      if (!found) {
        return BadInput(common::InvalidArgumentError(
            "--scheduler-name: \"" + scheduler_name_ +
            "\" is not a profile of the config (profiles: " + names + ")"));
      }
    }
    if (common::Status s = plugins::RegisterInTreePlugins(registry_); !s.ok()) return BadInput(s);
    return in_.files.empty() ? ExplainLive(*config, *ref) : ExplainManifests(*config, *ref);
  }

 private:
  static int BadInput(const common::Status& s) {
    std::cerr << "error: " << s.message() << "\n";
    return kExitBadInput;
  }

  common::StatusOr<config::SchedulerConfig> LoadConfig() const {
    if (config_file_.empty()) {
      return in_.files.empty() ? config::DefaultSchedulerConfig() : sim::SimulationDefaultConfig();
    }
    return LoadSchedulerConfig(config_file_);
  }

  // Runs the cycle for `target` (bound or not: a bound pod's own usage is removed from its node
  // first) on `sched` and prints the result.
  int ExplainPod(scheduler::Scheduler& sched, const config::SchedulerConfig& cfg,
                 const api::PodPtr& pod_ptr, std::string source) {
    if (!pod_ptr->node_name.empty()) sched.events().OnPodDelete(pod_ptr);
    const api::Pod& target = *pod_ptr;
    std::string_view own = common::Str(target.scheduler_name);
    explain::ProfileChoice choice =
        explain::ChooseProfile(scheduler_name_, own, sched.FrameworkFor(own) != nullptr,
                               cfg.profiles.front().scheduler_name);
    api::Pod pod = target;
    pod.node_name.clear();
    pod.scheduler_name = common::Intern(choice.profile);
    auto result = sched.Explain(pod);
    if (!result.ok()) return BadInput(result.status());
    explain::Explanation ex = explain::Build(
        explain::Subject{target.Key(), std::move(choice.profile), std::move(choice.note),
                         target.node_name, std::move(source)},
        *result, sched.snapshot());
    if (std::optional<scheduler::Scheduler::GangExplanation> g = sched.ExplainGang(pod)) {
      ex.gang = explain::GangRow{g->gang,
                                 g->min_member,
                                 g->members,
                                 g->fits,
                                 g->awaiting_victims,
                                 std::move(g->message),
                                 std::move(g->nodes)};
    }
    // DRA claims: each request's devices on the chosen (else bound, else best feasible) node and
    // on the node DynamicResources rejected that came closest; with no node to place on, that
    // one alone.
    if (framework::DraView* dra = sched.dra(); dra != nullptr && pod.resource_claims != nullptr) {
      std::optional<explain::DraRow> rejected =
          explain::ExplainBestRejected(*dra, pod, sched.snapshot(), ex);
      const framework::NodeInfo* node = sched.snapshot().Get(explain::DraNodeOf(ex));
      if (node != nullptr) {
        ex.dra = explain::ExplainClaims(*dra, pod, *node->node);
        ex.dra_rejected = std::move(rejected);
      } else if (rejected) {
        ex.dra = std::move(rejected);
      } else if (!ex.nodes.empty()) {
        const framework::NodeInfo* first = sched.snapshot().Get(ex.nodes.front().name);
        if (first != nullptr) ex.dra = explain::ExplainClaims(*dra, pod, *first->node);
      }
      explain::ExplainLookahead(*dra, pod, sched.snapshot(), ex);
    }
    if (in_.output == "json") {
      std::cout << sim::FormatJson(explain::ToJson(ex));
    } else {
      std::cout << explain::FormatText(ex);
    }
    if (ex.outcome == explain::Outcome::kError) {
      std::cerr << "error: the scheduling cycle failed: " << ex.message << "\n";
      return kExitBadInput;
    }
    return kExitOk;
  }

  int ExplainLive(const config::SchedulerConfig& cfg, const explain::PodRef& ref) {
    ReadOnlyApi api;
    common::SystemClock clock;
    common::Random random(in_.seed);
    common::InlineExecutor executor;
    cache::NetworkStore network;  // the listed AppGroups and NetworkTopologies
    scheduler::SchedulerDeps deps{clock, random, api, executor, registry_};
    deps.network = &network;
    auto sched = scheduler::Scheduler::Create(cfg, std::move(deps));
    if (!sched.ok()) return BadInput(sched.status());
    Collector collector((*sched)->events(), ref);
    auto listing = ListCluster(in_.kubeconfig, cfg, in_.sync_timeout_s, collector);
    if (!listing.ok()) return BadInput(listing.status());
    auto target =
        TargetOf(ref, collector.selected(), listing->description + " (or it has terminated)");
    if (!target.ok()) return BadInput(target.status());
    NoteMissing(*listing, **target);
    return ExplainPod(**sched, cfg, *target, listing->description);
  }

  int ExplainManifests(const config::SchedulerConfig& cfg, const explain::PodRef& ref) {
    sim::Workload w;
    std::string source;
    auto inputs = sim::ReadInputs(in_.files, in_.recursive);
    if (!inputs.ok()) return BadInput(inputs.status());
    for (const sim::InputFile& in : *inputs) {
      if (common::Status s = sim::AppendManifests(in.text, in.name, w); !s.ok()) return BadInput(s);
    }
    for (const auto& f : in_.files) source += (source.empty() ? "" : ", ") + f;
    sim::ExpandControllers(w);
    // explain answers about one cluster state: any invalid object stops it (simulate reports
    // and skips them instead).
    if (!w.rejected.empty()) {
      return BadInput(common::InvalidArgumentError(w.rejected.front().ToString()));
    }
    if (w.nodes.empty()) {
      return BadInput(
          common::InvalidArgumentError(source + ": no Node objects (explain needs a cluster)"));
    }
    for (const auto& warning : w.warnings) std::cerr << "warning: " << warning << "\n";
    for (const auto& warning : sim::NodeGpuWarnings(w)) std::cerr << "warning: " << warning << "\n";
    LogOnlyErrorsUnlessVerbose();
    auto sim = SimulateManifests(cfg, w);
    if (!sim.ok()) return BadInput(sim.status());
    // The pods as they are now (bound where they were placed); at --at, those in the cluster.
    std::vector<api::PodPtr> pods;
    for (const auto& o : (*sim)->outcomes()) {
      api::PodPtr current = (*sim)->cluster().GetPod(o.pod->meta.uid);
      if (current != nullptr || !at_) pods.push_back(current != nullptr ? current : o.pod);
    }
    const std::string where =
        at_ ? source + " at " + at_text_ + " (a pod not arrived yet or gone by then is not there)"
            : source;
    if (at_) source += ", replayed until " + at_text_;
    auto current = TargetOf(ref, pods, where);
    if (!current.ok()) return BadInput(current.status());
    return ExplainPod((**sim).scheduler(), cfg, *current, "simulated from " + source);
  }

  // The manifests simulated with the plain protocol, or replayed until --at.
  common::StatusOr<std::unique_ptr<sim::Simulator>> SimulateManifests(
      const config::SchedulerConfig& cfg, const sim::Workload& w) {
    sim::SimOptions opts;
    opts.seed = in_.seed;
    if (at_) opts.arrival_interval = common::Duration(0);  // the replay sets the clock
    GPUSCHED_ASSIGN_OR_RETURN(std::unique_ptr<sim::Simulator> sim,
                              sim::Simulator::Create(cfg, {registry_, wall_}, opts));
    if (at_) {
      sim::ReplayOptions replay;
      replay.until = *at_;
      GPUSCHED_RETURN_IF_ERROR(sim::RunReplay(*sim, w, replay).status());
    } else {
      GPUSCHED_RETURN_IF_ERROR(sim->Run(w));
    }
    return sim;
  }

  CLI::App& app_;
  common::SystemClock wall_;
  std::string at_text_;
  std::optional<common::Duration> at_;  // --at, parsed
  std::string pod_arg_;
  std::string namespace_;
  ReadOnlyInputFlags in_;
  std::string config_file_;
  std::string scheduler_name_;
  framework::Registry registry_;
};

}  // namespace

std::unique_ptr<Command> NewExplainCommand(CLI::App& root) {
  return std::make_unique<ExplainCommand>(root);
}

}  // namespace gpusched::cmd
