// SPDX-License-Identifier: Apache-2.0
#include "cmd/gpusched/cluster_snapshot.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "cmd/gpusched/cluster_list.h"
#include "src/common/mutex.h"
#include "src/common/overloaded.h"
#include "src/sim/controllers.h"

namespace gpusched::cmd {
namespace {

using common::Overloaded;

std::string KeyOf(const api::PodDisruptionBudget& pdb) {
  return pdb.meta.namespace_ + "/" + pdb.meta.name;
}

// "<alternative>:<namespace>/<name>" of a storage or DRA object: unique per kind.
template <class Variant>
std::string KeyOf(const Variant& v) {
  std::string name =
      std::visit(Overloaded{[](const api::DeviceClassPtr& c) { return c->name; },
                            [](const api::ResourceSlicePtr& s) { return s->name; },
                            [](const api::DeviceTaintRulePtr& r) { return r->name; },
                            [](const auto& o) { return o->meta.namespace_ + "/" + o->meta.name; }},
                 v);
  return std::to_string(v.index()) + ":" + name;
}

// Keeps the latest version of every object the informers deliver. Called from the informer
// threads.
class Store final : public kube::ClusterEventHandler {
 public:
  void OnNodeAdd(api::NodePtr n) override {
    Locked([&](Objects& o) { o.nodes[n->meta.name] = n; });
  }
  void OnNodeUpdate(api::NodePtr, api::NodePtr n) override { OnNodeAdd(std::move(n)); }
  void OnNodeDelete(api::NodePtr n) override {
    Locked([&](Objects& o) { o.nodes.erase(n->meta.name); });
  }
  void OnPodAdd(api::PodPtr p) override {
    Locked([&](Objects& o) { o.pods[p->meta.uid] = p; });
  }
  void OnPodUpdate(api::PodPtr, api::PodPtr p) override { OnPodAdd(std::move(p)); }
  void OnPodDelete(api::PodPtr p) override {
    Locked([&](Objects& o) { o.pods.erase(p->meta.uid); });
  }
  void OnPdbAdd(api::PdbPtr p) override {
    Locked([&](Objects& o) { o.pdbs[KeyOf(*p)] = p; });
  }
  void OnPdbUpdate(api::PdbPtr, api::PdbPtr p) override { OnPdbAdd(std::move(p)); }
  void OnPdbDelete(api::PdbPtr p) override {
    Locked([&](Objects& o) { o.pdbs.erase(KeyOf(*p)); });
  }
  void OnPodGroupAdd(api::PodGroupPtr g) override {
    Locked([&](Objects& o) { o.groups[g->Key()] = g; });
  }
  void OnPodGroupUpdate(api::PodGroupPtr, api::PodGroupPtr g) override {
    OnPodGroupAdd(std::move(g));
  }
  void OnPodGroupDelete(api::PodGroupPtr g) override {
    Locked([&](Objects& o) { o.groups.erase(g->Key()); });
  }
  void OnStorageAdd(const kube::StorageObject& s) override {
    Locked([&](Objects& o) { o.storage[KeyOf(s)] = s; });
  }
  void OnStorageUpdate(const kube::StorageObject&, const kube::StorageObject& s) override {
    OnStorageAdd(s);
  }
  void OnStorageDelete(const kube::StorageObject& s) override {
    Locked([&](Objects& o) { o.storage.erase(KeyOf(s)); });
  }
  void OnDraAdd(const kube::DraObject& d) override {
    Locked([&](Objects& o) { o.dra[KeyOf(d)] = d; });
  }
  void OnDraUpdate(const kube::DraObject&, const kube::DraObject& d) override { OnDraAdd(d); }
  void OnDraDelete(const kube::DraObject& d) override {
    Locked([&](Objects& o) { o.dra.erase(KeyOf(d)); });
  }
  void OnNetworkUpsert(const kube::NetworkObject& n) override {
    Locked([&](Objects& o) { o.network[NetworkKey(n)] = n; });
  }
  void OnNetworkDelete(const kube::NetworkObject& n) override {
    Locked([&](Objects& o) { o.network.erase(NetworkKey(n)); });
  }

  // Nodes by name; bound, live pods by creation time then key, and the count of the others;
  // the other kinds by key.
  void Fill(ClusterSnapshot& out) {
    common::MutexLock l(mu_);
    sim::Workload& w = out.workload;
    for (const auto& [name, node] : objects_.nodes) w.nodes.push_back(node);
    for (const auto& [uid, pod] : objects_.pods) {
      if (pod->Terminal() || pod->meta.deletion_timestamp) continue;
      if (pod->node_name.empty()) {
        ++out.pending_pods;
        continue;
      }
      w.pods.push_back(pod);
    }
    std::sort(w.pods.begin(), w.pods.end(), [](const api::PodPtr& a, const api::PodPtr& b) {
      if (a->meta.creation_timestamp != b->meta.creation_timestamp) {
        return a->meta.creation_timestamp < b->meta.creation_timestamp;
      }
      return a->Key() < b->Key();
    });
    for (const auto& [key, pdb] : objects_.pdbs) w.pdbs.push_back(pdb);
    for (const auto& [key, group] : objects_.groups) w.pod_groups.push_back(group);
    for (const auto& [key, obj] : objects_.storage) w.storage.push_back(obj);
    for (const auto& [key, obj] : objects_.dra) {
      std::visit([&w](const auto& ptr) { w.dra.emplace_back(ptr); }, obj);
    }
    for (const auto& [key, obj] : objects_.network) w.network.push_back(obj);
  }

 private:
  struct Objects {
    std::map<std::string, api::NodePtr> nodes;
    std::map<std::string, api::PodPtr> pods;
    std::map<std::string, api::PdbPtr> pdbs;
    std::map<std::string, api::PodGroupPtr> groups;
    std::map<std::string, kube::StorageObject> storage;
    std::map<std::string, kube::DraObject> dra;
    std::map<std::string, kube::NetworkObject> network;
  };
  // "AppGroup ns/name" or "NetworkTopology ns/name".
  static std::string NetworkKey(const kube::NetworkObject& n) {
    if (const auto* ag = std::get_if<api::AppGroupPtr>(&n)) {
      return "AppGroup " + (*ag)->namespace_ + "/" + (*ag)->name;
    }
    const api::NetworkTopologyPtr& nt = std::get<api::NetworkTopologyPtr>(n);
    return "NetworkTopology " + nt->namespace_ + "/" + nt->name;
  }
  template <class F>
  void Locked(F f) {
    common::MutexLock l(mu_);
    f(objects_);
  }

  common::Mutex mu_;
  Objects objects_ GPUSCHED_GUARDED_BY(mu_);
};

}  // namespace

void ReadOnlyInputFlags::AddTo(CLI::App& app, const std::string& files_help) {
  app.add_option("--kubeconfig", kubeconfig,
                 "kubeconfig of the live cluster (default: KUBECONFIG, in-cluster config, "
                 "~/.kube/config)");
  app.add_option("-f,--filename", files, files_help)->allow_extra_args(false);
  app.add_flag("-R,--recursive", recursive,
               "Read the directories -f names recursively, as kubectl -R");
  app.add_option("-o,--output", output, "Output format")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  app.add_option("--seed", seed, "Seed of the tie-breaking random stream")->capture_default_str();
  app.add_option("--sync-timeout", sync_timeout_s,
                 "Live cluster: seconds to wait for the cluster's lists")
      ->check(CLI::Range(1, 3600))
      ->capture_default_str();
}

std::string ReadOnlyInputFlags::Conflict() const {
  return !kubeconfig.empty() && !files.empty() ? "--kubeconfig and -f/--filename are exclusive"
                                               : "";
}

common::Status AppendInputFiles(const std::vector<std::string>& files, bool recursive,
                                sim::Workload& w, std::string& source) {
  GPUSCHED_ASSIGN_OR_RETURN(std::vector<sim::InputFile> inputs, sim::ReadInputs(files, recursive));
  for (const sim::InputFile& in : inputs) {
    // A file that is not YAML at all is one rejection; the other files are still read.
    if (common::Status s = sim::AppendManifests(in.text, in.name, w); !s.ok()) {
      std::string why(s.message());
      if (why.starts_with(in.name + ": ")) why.erase(0, in.name.size() + 2);
      w.rejected.push_back(sim::Rejection{in.name, 0, "", "", std::move(why)});
    }
  }
  for (const auto& f : files) source += (source.empty() ? "" : ", ") + f;
  sim::ExpandControllers(w);
  if (!w.nodes.empty()) return common::Status::Ok();
  // Say why when it is a rejected object's fault (a YAML error, a Node that does not decode).
  std::string why = source + ": no Node objects (a simulation needs a cluster)";
  if (!w.rejected.empty()) {
    why += "; rejected: " + w.rejected.front().ToString();
    if (w.rejected.size() > 1) why += " (+" + std::to_string(w.rejected.size() - 1) + " more)";
  }
  return common::InvalidArgumentError(why);
}

common::StatusOr<ClusterSnapshot> SnapshotCluster(const std::string& kubeconfig,
                                                  const config::SchedulerConfig& config,
                                                  int sync_timeout_s) {
  Store store;
  AdmissionObjects admission;
  GPUSCHED_ASSIGN_OR_RETURN(ClusterListing listing,
                            ListCluster(kubeconfig, config, sync_timeout_s, store, &admission));
  ClusterSnapshot out;
  out.description = listing.description;
  store.Fill(out);
  out.workload.priority_classes = std::move(admission.priority_classes);
  for (api::ResourceClaimTemplatePtr& t : admission.claim_templates) {
    out.workload.dra.emplace_back(std::move(t));
  }
  out.workload.warnings = listing.Notes();
  if (out.pending_pods > 0) {
    out.workload.warnings.push_back(std::to_string(out.pending_pods) +
                                    " pod(s) of the cluster not yet bound are left out");
  }
  return out;
}

}  // namespace gpusched::cmd
