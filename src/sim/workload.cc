// SPDX-License-Identifier: Apache-2.0
// Manifests are parsed into documents first (a syntax error is the only error that stops a
// file), then each document is checked (checks.h), routed (workload objects wait for
// ExpandControllers) or decoded on its own: one bad object is a Rejection, not the end of the
// run.
#include "src/sim/workload.h"

#include <algorithm>
#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <type_traits>
#include <utility>
#include <variant>

#include "src/api/decode.h"
#include "src/api/decode_dra.h"
#include "src/api/decode_storage.h"
#include "src/api/gang_object.h"
#include "src/api/manifest.h"
#include "src/api/network_crd.h"
#include "src/sim/checks.h"
#include "src/sim/controllers.h"

namespace gpusched::sim {

namespace {

namespace json = boost::json;

// What a document says it is, read before decoding (so a rejection can name it).
struct DocumentId {
  std::string api_version;
  std::string kind;
  std::string name;  // namespace/name for namespaced kinds
};

DocumentId IdOf(const json::value& doc) {
  DocumentId id;
  id.api_version = api::PeekString(doc, "apiVersion");
  id.kind = api::PeekString(doc, "kind");
  id.name = api::MetaString(doc, "name");
  const std::string_view ns = api::MetaString(doc, "namespace");
  const bool cluster_scoped = id.kind == "Node" || id.kind == "PriorityClass" ||
                              id.kind == "Namespace" || id.kind == "DeviceClass" ||
                              id.kind == "ResourceSlice" || id.kind.ends_with("List");
  if (!cluster_scoped && !id.name.empty()) {
    id.name = (ns.empty() ? std::string("default") : std::string(ns)) + "/" + id.name;
  }
  return id;
}

// The decoder's "pod default/a: spec...: why" without the subject the Rejection names anyway.
std::string WithoutSubject(std::string message) {
  for (std::string_view subject :
       {"pod ", "node ", "poddisruptionbudget ", "priorityclass ", "deviceclass ", "resourceslice ",
        "resourceclaim ", "resourceclaimtemplate "}) {
    if (!message.starts_with(subject)) continue;
    if (size_t colon = message.find(": "); colon != std::string::npos) {
      return message.substr(colon + 2);
    }
  }
  return message;
}

std::string Where(std::string_view source, size_t document, const DocumentId& id) {
  std::string out = std::string(source) + ": document " + std::to_string(document);
  if (!id.kind.empty()) out += ": " + id.kind + (id.name.empty() ? "" : " " + id.name);
  return out;
}

void Skipped(Workload& workload, std::string_view source, std::string_view kind,
             std::string_view name) {
  workload.warnings.push_back(
      std::string(source) + ": skipped " + std::string(kind) + " \"" + std::string(name) +
      "\": the simulator reads Nodes, Pods, PriorityClasses, "
      "PodDisruptionBudgets, PodGroups, Workloads (scheduling.k8s.io/v1alpha1), "
      "PersistentVolumes, PersistentVolumeClaims, StorageClasses, "
      "CSINodes, CSIDrivers, DeviceClasses, ResourceSlices, "
      "ResourceClaims, ResourceClaimTemplates (resource.k8s.io/v1), "
      "AppGroups, NetworkTopologies (diktyo.x-k8s.io/v1alpha1), "
      "Deployments, ReplicaSets, StatefulSets, Jobs and DaemonSets only");
}

bool IsGangPolicy(const api::OtherObject& o) {
  return (o.kind == "PodGroup" &&
          (o.api_version == api::kPodGroupApiVersion || o.api_version == api::kVolcanoApiVersion ||
           api::IsNativePodGroupApiVersion(o.api_version))) ||
         (o.kind == "Workload" && o.api_version == api::kWorkloadApiVersion);
}

// A PodGroup or Workload: its gang policies, or the object rejected with the decoder's error.
void AddGangPolicy(const api::OtherObject& o, std::string_view source, size_t document,
                   Workload& workload) {
  common::StatusOr<api::GangPolicyObject> policy = api::DecodeGangPolicyObject(o.json);
  if (!policy.ok()) {
    workload.rejected.push_back(Rejection{std::string(source), document, o.kind, o.name,
                                          WithoutSubject(std::string(policy.status().message()))});
    return;
  }
  for (api::PodGroupPtr& g : policy->groups) workload.pod_groups.push_back(std::move(g));
}

// A storage object (PV, PVC, StorageClass, CSINode, CSIDriver): decoded, or rejected with the
// decoder's error. False when `o` is no storage object.
bool AddStorage(const api::OtherObject& o, std::string_view source, size_t document,
                Workload& workload) {
  auto add = [&](auto decoded) {
    if (!decoded.ok()) {
      workload.rejected.push_back(
          Rejection{std::string(source), document, o.kind, o.name,
                    WithoutSubject(std::string(decoded.status().message()))});
      return;
    }
    using T = std::decay_t<decltype(*decoded)>;
    workload.storage.emplace_back(std::make_shared<const T>(std::move(decoded).value()));
  };
  if (o.api_version == "v1" && o.kind == "PersistentVolume") {
    add(api::DecodePersistentVolume(o.json));
  } else if (o.api_version == "v1" && o.kind == "PersistentVolumeClaim") {
    add(api::DecodePersistentVolumeClaim(o.json));
  } else if (o.api_version == "storage.k8s.io/v1" && o.kind == "StorageClass") {
    add(api::DecodeStorageClass(o.json));
  } else if (o.api_version == "storage.k8s.io/v1" && o.kind == "CSINode") {
    add(api::DecodeCSINode(o.json));
  } else if (o.api_version == "storage.k8s.io/v1" && o.kind == "CSIDriver") {
    add(api::DecodeCSIDriver(o.json));
  } else {
    return false;
  }
  return true;
}

// A DRA object (resource.k8s.io/v1 DeviceClass, ResourceSlice, ResourceClaim,
// ResourceClaimTemplate): decoded, or rejected with the decoder's error. False when `o` is none.
bool AddDra(const api::OtherObject& o, std::string_view source, size_t document,
            Workload& workload) {
  auto add = [&](auto decoded) {
    if (!decoded.ok()) {
      workload.rejected.push_back(
          Rejection{std::string(source), document, o.kind, IdOf(o.json).name,
                    WithoutSubject(std::string(decoded.status().message()))});
      return;
    }
    using T = std::decay_t<decltype(*decoded)>;
    workload.dra.emplace_back(std::make_shared<const T>(std::move(decoded).value()));
  };
  if (o.api_version != "resource.k8s.io/v1") return false;
  if (o.kind == "DeviceClass") {
    add(api::DecodeDeviceClass(o.json));
  } else if (o.kind == "ResourceSlice") {
    add(api::DecodeResourceSlice(o.json));
  } else if (o.kind == "DeviceTaintRule") {
    add(api::DecodeDeviceTaintRule(o.json));
  } else if (o.kind == "ResourceClaim") {
    add(api::DecodeResourceClaim(o.json));
  } else if (o.kind == "ResourceClaimTemplate") {
    add(api::DecodeResourceClaimTemplate(o.json));
  } else {
    return false;
  }
  return true;
}

// A NetworkAware object (AppGroup, NetworkTopology) for NetworkLocality: decoded, in the
// namespace "default" when it names none (as kubectl creates it), or rejected with the decoder's
// error. False when `o` is none.
bool AddNetwork(const api::OtherObject& o, std::string_view source, size_t document,
                Workload& workload) {
  auto add = [&](auto decoded) {
    if (!decoded.ok()) {
      workload.rejected.push_back(Rejection{std::string(source), document, o.kind,
                                            IdOf(o.json).name,
                                            std::string(decoded.status().message())});
      return;
    }
    if (decoded->namespace_.empty()) decoded->namespace_ = "default";
    using T = std::decay_t<decltype(*decoded)>;
    workload.network.emplace_back(std::make_shared<const T>(std::move(decoded).value()));
  };
  if (o.api_version == api::kAppGroupApiVersion && o.kind == "AppGroup") {
    add(api::DecodeAppGroup(o.json));
  } else if (o.api_version == api::kNetworkTopologyApiVersion && o.kind == "NetworkTopology") {
    add(api::DecodeNetworkTopology(o.json));
  } else {
    return false;
  }
  return true;
}

}  // namespace

// As pkg/kubelet/kubelet_node_status.go's initialNode: a hand-written Node would otherwise fail
// hostname selectors and spreading that every real node passes.
void DefaultKubeletLabels(api::Node& node) {
  static const std::pair<std::string_view, std::string_view> kPlatform[] = {
      {"kubernetes.io/os", "linux"},
      {"kubernetes.io/arch", "amd64"},
      {"beta.kubernetes.io/os", "linux"},
      {"beta.kubernetes.io/arch", "amd64"}};
  api::Labels& labels = node.meta.labels;
  const common::Atom hostname = common::Intern("kubernetes.io/hostname");
  if (!labels.Has(hostname)) labels.Set(hostname, common::Intern(node.meta.name));
  for (const auto& [key, value] : kPlatform) {
    const common::Atom k = common::Intern(key);
    if (!labels.Has(k)) labels.Set(k, common::Intern(value));
  }
}

namespace {

void Route(api::Object& obj, std::string_view source, size_t document, Workload& workload) {
  std::visit(
      [&](auto& o) {
        using T = std::decay_t<decltype(o)>;
        if constexpr (std::is_same_v<T, api::Pod>) {
          workload.pods.push_back(std::make_shared<const api::Pod>(std::move(o)));
        } else if constexpr (std::is_same_v<T, api::Node>) {
          DefaultKubeletLabels(o);
          workload.nodes.push_back(std::make_shared<const api::Node>(std::move(o)));
        } else if constexpr (std::is_same_v<T, api::PodDisruptionBudget>) {
          workload.pdbs.push_back(std::make_shared<const api::PodDisruptionBudget>(std::move(o)));
        } else if constexpr (std::is_same_v<T, api::PriorityClass>) {
          workload.priority_classes.push_back(std::move(o));
        } else if (IsGangPolicy(o)) {
          AddGangPolicy(o, source, document, workload);
        } else if (AddStorage(o, source, document, workload)) {
          // a storage object
        } else if (AddDra(o, source, document, workload)) {
          // a DRA object
        } else if (AddNetwork(o, source, document, workload)) {
          // an AppGroup or NetworkTopology
        } else if (IsControllerKind(o.api_version, o.kind)) {  // an item of a List
          DocumentId id = IdOf(o.json);
          workload.controllers.push_back(ControllerObject{std::string(source), document,
                                                          workload.pods.size(), o.api_version,
                                                          o.kind, id.name, std::move(o.json)});
        } else if (o.kind == "Workload" && api::IsNativePodGroupApiVersion(o.api_version)) {
          // 1.36+: the PodGroups made from its templates (by the Job controller, for a Job) carry
          // every policy the scheduler reads.
          workload.warnings.push_back(std::string(source) + ": skipped Workload \"" + o.name +
                                      "\" (" + o.api_version +
                                      "): the scheduler reads the PodGroups made from its "
                                      "podGroupTemplates; give those, or the Job");
        } else {
          Skipped(workload, source, o.kind, o.name);
        }
      },
      obj);
}

void AppendDocument(json::value& doc, std::string_view source, size_t document,
                    Workload& workload) {
  const DocumentId id = IdOf(doc);
  DocumentFindings findings = CheckDocument(doc);
  for (const std::string& w : findings.warnings) {
    workload.warnings.push_back(Where(source, document, id) + ": " + w);
  }
  if (!findings.errors.empty()) {
    std::string error;
    for (const std::string& e : findings.errors) error += (error.empty() ? "" : "; ") + e;
    workload.rejected.push_back(Rejection{std::string(source), document, id.kind, id.name, error});
    return;
  }
  if (IsControllerKind(id.api_version, id.kind)) {
    workload.controllers.push_back(ControllerObject{std::string(source), document,
                                                    workload.pods.size(), id.api_version, id.kind,
                                                    id.name, std::move(doc)});
    return;
  }
  common::StatusOr<std::vector<api::Object>> objects = api::DecodeManifestDocument(doc);
  if (!objects.ok()) {
    workload.rejected.push_back(Rejection{std::string(source), document, id.kind, id.name,
                                          WithoutSubject(std::string(objects.status().message()))});
    return;
  }
  for (api::Object& obj : *objects) Route(obj, source, document, workload);
}

}  // namespace

std::string Rejection::ToString() const {
  std::string out = source;
  if (document > 0) out += ": document " + std::to_string(document);
  if (!kind.empty()) out += ": " + kind + (name.empty() ? "" : " " + name);
  return out + ": " + error;
}

common::Status AppendManifests(std::string_view text, std::string_view source, Workload& workload) {
  std::vector<common::StatusOr<json::value>> docs = api::ParseManifestDocumentsEach(text, source);
  const bool any = std::any_of(docs.begin(), docs.end(), [](const auto& d) { return d.ok(); });
  if (!any && !docs.empty()) return docs.front().status();  // nothing in it is YAML or JSON
  for (size_t i = 0; i < docs.size(); ++i) {
    if (docs[i].ok()) {
      AppendDocument(*docs[i], source, i + 1, workload);
      continue;
    }
    // "<source>: YAML error at line 7, ...": the rejection names the source itself.
    std::string why(docs[i].status().message());
    if (why.starts_with(std::string(source) + ": ")) why.erase(0, source.size() + 2);
    workload.rejected.push_back(Rejection{std::string(source), i + 1, "", "", std::move(why)});
  }
  return common::Status::Ok();
}

std::vector<std::string> NodeGpuWarnings(const Workload& workload) {
  std::vector<std::string> out;
  for (const api::NodePtr& n : workload.nodes) {
    if (!n->gpu_error.empty()) out.push_back("node " + n->meta.name + ": " + n->gpu_error);
  }
  return out;
}

namespace {

bool IsManifestFile(const std::filesystem::path& p) {
  const std::string ext = p.extension().string();
  return ext == ".yaml" || ext == ".yml" || ext == ".json";
}

// The manifest files of directory `dir` in name order, depth first with `recursive`; whether it
// has subdirectories goes to `has_subdirs`.
common::Status ListManifestFiles(const std::filesystem::path& dir, bool recursive,
                                 std::vector<std::string>& out, bool& has_subdirs) {
  std::error_code ec;
  std::vector<std::filesystem::path> entries;
  for (auto it = std::filesystem::directory_iterator(dir, ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    entries.push_back(it->path());
  }
  if (ec) return common::InvalidArgumentError(dir.string() + ": " + ec.message());
  std::sort(entries.begin(), entries.end());
  for (const std::filesystem::path& p : entries) {
    if (std::filesystem::is_directory(p, ec)) {
      has_subdirs = true;
      if (recursive) GPUSCHED_RETURN_IF_ERROR(ListManifestFiles(p, true, out, has_subdirs));
    } else if (IsManifestFile(p)) {
      out.push_back(p.string());
    }
  }
  return common::Status::Ok();
}

}  // namespace

common::StatusOr<std::vector<InputFile>> ReadInputs(std::span<const std::string> paths,
                                                    bool recursive) {
  std::vector<InputFile> out;
  bool stdin_read = false;
  for (const std::string& path : paths) {
    if (path == "-") {
      if (stdin_read) return common::InvalidArgumentError("-f -: standard input named twice");
      stdin_read = true;
      std::ostringstream ss;
      ss << std::cin.rdbuf();
      out.push_back({"-", ss.str()});
      continue;
    }
    std::error_code ec;
    if (!std::filesystem::is_directory(path, ec)) {
      GPUSCHED_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
      out.push_back({path, std::move(text)});
      continue;
    }
    std::vector<std::string> files;
    bool has_subdirs = false;
    GPUSCHED_RETURN_IF_ERROR(ListManifestFiles(path, recursive, files, has_subdirs));
    if (files.empty()) {
      return common::InvalidArgumentError(
          path + ": no .yaml, .yml or .json files in the directory" +
          (has_subdirs && !recursive ? " (-R reads its subdirectories too)" : ""));
    }
    for (const std::string& f : files) {
      GPUSCHED_ASSIGN_OR_RETURN(std::string text, ReadFile(f));
      out.push_back({f, std::move(text)});
    }
  }
  return out;
}

common::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return common::NotFoundError(path + ": cannot open file");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return common::InvalidArgumentError(path + ": read error");
  return ss.str();
}

}  // namespace gpusched::sim
