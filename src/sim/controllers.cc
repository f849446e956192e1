// SPDX-License-Identifier: Apache-2.0
// Each controller builds pod JSON from its template (metadata and spec as written, plus the
// labels, annotations and owner reference the controller adds) and decodes it with api::DecodePod,
// so a pod from a template is read exactly as the same pod written out would be.
#include "src/sim/controllers.h"

#include <algorithm>
#include <boost/json.hpp>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "src/api/decode.h"
#include "src/api/fields.h"
#include "src/common/strings.h"

namespace gpusched::sim {
namespace {

namespace json = boost::json;
using common::InvalidArgumentError;

constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();

// The 5 "random" characters of a generated name, derived from `seed`.
std::string Suffix(std::string_view seed) {
  return common::GeneratedName("", common::Fnv1a64(seed));
}

// The template hash (pod-template-hash, controller-revision-hash): as the controllers'
// SafeEncodeString of a 32-bit FNV hash, over the template's JSON text.
std::string TemplateHash(const json::value& tmpl) {
  const std::string digits = std::to_string(common::Fnv1a64(json::serialize(tmpl)) & 0xffffffffu);
  std::string out;
  for (char c : digits) {
    out += common::kGeneratedNameAlphabet[static_cast<unsigned char>(c) %
                                          common::kGeneratedNameAlphabet.size()];
  }
  return out;
}

// What every controller reads from its object.
struct Owner {
  std::string api_version;
  std::string kind;
  std::string namespace_;
  std::string name;
  std::string uid;
  const json::object* spec = nullptr;
  const json::object* tmpl = nullptr;           // spec.template
  api::JsonReader reader{api::PlainDialect()};  // errors with their paths

  std::string Key() const { return namespace_ + "/" + name; }
};

// Where the controllers read (an Owner's errors name these paths).
constexpr api::FieldPath kRootPath;
constexpr api::FieldPath kSpecPath = api::FieldPath::Text("spec");
constexpr api::FieldPath kMetadataPath = api::FieldPath::Text("metadata");

const json::object* ObjectAt(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v == nullptr ? nullptr : v->if_object();
}

common::Status Errors(const Owner& o) { return o.reader.errors().ToStatus(); }

// The labels of spec.template.metadata.labels must satisfy spec.selector.matchLabels (apps/v1
// validation); matchExpressions are not checked.
void CheckSelector(Owner& o) {
  const json::object* selector = o.reader.Object(*o.spec, "selector", kSpecPath);
  if (selector == nullptr) {
    o.reader.errors().Add("spec.selector", "Required value");
    return;
  }
  const json::object* match =
      o.reader.Object(*selector, "matchLabels", api::FieldPath::Text("spec.selector"));
  if (match == nullptr) return;
  const json::object* meta = ObjectAt(*o.tmpl, "metadata");
  const json::object* labels = meta != nullptr ? ObjectAt(*meta, "labels") : nullptr;
  for (const auto& kv : *match) {
    const json::value* have = labels != nullptr ? labels->if_contains(kv.key()) : nullptr;
    if (have == nullptr || *have != kv.value()) {
      o.reader.errors().Add("spec.template.metadata.labels",
                            "Invalid value: `selector` does not match template `labels` (" +
                                std::string(kv.key()) + "=" + api::DescribeValue(kv.value()) +
                                " missing)");
      return;
    }
  }
}

common::StatusOr<Owner> ReadOwner(const ControllerObject& obj) {
  Owner o;
  o.api_version = obj.api_version;
  o.kind = obj.kind;
  const json::object* root = obj.json.if_object();
  if (root == nullptr) return InvalidArgumentError("expected an object");
  const json::object* meta = o.reader.Object(*root, "metadata", kRootPath);
  if (meta != nullptr) {
    o.name = o.reader.String(*meta, "name", kMetadataPath).value_or("");
    o.namespace_ = o.reader.String(*meta, "namespace", kMetadataPath).value_or("");
    o.uid = o.reader.String(*meta, "uid", kMetadataPath).value_or("");
  }
  if (o.name.empty()) o.reader.errors().Add("metadata.name", "Required value");
  if (o.namespace_.empty()) o.namespace_ = "default";
  std::string lower = o.kind;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (o.uid.empty()) o.uid = "sim:" + lower + "/" + o.Key();
  o.spec = o.reader.Object(*root, "spec", kRootPath);
  if (o.spec == nullptr) {
    o.reader.errors().Add("spec", "Required value");
    GPUSCHED_RETURN_IF_ERROR(Errors(o));
  }
  o.tmpl = o.reader.Object(*o.spec, "template", kSpecPath);
  if (o.tmpl == nullptr) o.reader.errors().Add("spec.template", "Required value");
  GPUSCHED_RETURN_IF_ERROR(Errors(o));
  if (o.kind != "Job") CheckSelector(o);
  GPUSCHED_RETURN_IF_ERROR(Errors(o));
  return o;
}

// What one pod adds to the template: name, labels, annotations, spec changes.
struct PodPatch {
  std::string name;
  std::string owner_api_version;
  std::string owner_kind;
  std::string owner_name;
  std::string owner_uid;
  std::vector<std::pair<std::string, std::string>> labels;
  std::vector<std::pair<std::string, std::string>> annotations;
  std::string hostname;
  std::string node;  // DaemonSet: the node its required node affinity names
  bool daemon = false;
  std::string scheduling_group;  // Job with a gang: spec.schedulingGroup.podGroupName
};

json::object& MemberObject(json::object& o, std::string_view key) {
  json::value& v = o[key];
  if (!v.is_object()) v = json::object();
  return v.get_object();
}

// The tolerations the DaemonSet controller adds to every pod (AddOrUpdateDaemonPodTolerations).
void AddDaemonTolerations(json::object& spec) {
  json::value& v = spec["tolerations"];
  if (!v.is_array()) v = json::array();
  json::array& a = v.get_array();
  auto add = [&](std::string_view key, std::string_view effect) {
    a.push_back(json::object{{"key", key}, {"operator", "Exists"}, {"effect", effect}});
  };
  add("node.kubernetes.io/not-ready", "NoExecute");
  add("node.kubernetes.io/unreachable", "NoExecute");
  add("node.kubernetes.io/disk-pressure", "NoSchedule");
  add("node.kubernetes.io/memory-pressure", "NoSchedule");
  add("node.kubernetes.io/pid-pressure", "NoSchedule");
  add("node.kubernetes.io/unschedulable", "NoSchedule");
  if (const json::value* hn = spec.if_contains("hostNetwork");
      hn != nullptr && hn->is_bool() && hn->get_bool()) {
    add("node.kubernetes.io/network-unavailable", "NoSchedule");
  }
}

// The template's pod with `patch` applied, decoded. Errors name the template's fields.
common::StatusOr<api::PodPtr> MakePod(const Owner& o, const PodPatch& patch) {
  json::object pod;
  pod["apiVersion"] = "v1";
  pod["kind"] = "Pod";
  json::object meta;
  if (const json::object* m = ObjectAt(*o.tmpl, "metadata")) meta = *m;
  meta.erase("generateName");
  meta["name"] = patch.name;
  meta["namespace"] = o.namespace_;
  json::object& labels = MemberObject(meta, "labels");
  for (const auto& [k, v] : patch.labels) labels[k] = v;
  if (!patch.annotations.empty()) {
    json::object& annotations = MemberObject(meta, "annotations");
    for (const auto& [k, v] : patch.annotations) annotations[k] = v;
  }
  meta["ownerReferences"] = json::array{json::object{{"apiVersion", patch.owner_api_version},
                                                     {"kind", patch.owner_kind},
                                                     {"name", patch.owner_name},
                                                     {"uid", patch.owner_uid},
                                                     {"controller", true},
                                                     {"blockOwnerDeletion", true}}};
  pod["metadata"] = std::move(meta);
  json::object spec;
  if (const json::object* s = ObjectAt(*o.tmpl, "spec")) spec = *s;
  if (!patch.hostname.empty()) spec["hostname"] = patch.hostname;
  if (!patch.scheduling_group.empty()) {
    spec["schedulingGroup"] = json::object{{"podGroupName", patch.scheduling_group}};
  }
  if (patch.daemon) {
    json::object& affinity = MemberObject(spec, "affinity");
    json::object& node_affinity = MemberObject(affinity, "nodeAffinity");
    json::object field{{"key", "metadata.name"},
                       {"operator", "In"},
                       {"values", json::array{json::value(patch.node)}}};
    node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = json::object{
        {"nodeSelectorTerms", json::array{json::object{{"matchFields", json::array{field}}}}}};
    AddDaemonTolerations(spec);
  }
  pod["spec"] = std::move(spec);
  common::StatusOr<api::Pod> decoded = api::DecodePod(pod);
  if (!decoded.ok()) {
    // "pod ns/name: spec.containers[0]...: why" -> "spec.template.spec.containers[0]...: why".
    std::string msg(decoded.status().message());
    const std::string subject = "pod " + o.namespace_ + "/" + patch.name + ": ";
    if (common::StartsWith(msg, subject)) msg = "spec.template." + msg.substr(subject.size());
    return InvalidArgumentError(msg);
  }
  return api::PodPtr(std::make_shared<const api::Pod>(std::move(*decoded)));
}

PodPatch OwnedBy(const Owner& o) {
  PodPatch p;
  p.owner_api_version = o.api_version;
  p.owner_kind = o.kind;
  p.owner_name = o.name;
  p.owner_uid = o.uid;
  return p;
}

// A pod count of the spec (replicas, parallelism): 0..2^31-1 as the API server takes it, and at
// most kMaxPodsPerObject, the simulator's own bound (a typo such as 3000000 would otherwise make
// millions of pods and run the process out of memory).
constexpr int64_t kMaxPodsPerObject = 100'000;
int64_t Count(Owner& o, std::string_view field, int64_t fallback) {
  const int64_t n = o.reader.Int(*o.spec, field, kSpecPath, 0, kInt32Max).value_or(fallback);
  if (n <= kMaxPodsPerObject) return n;
  o.reader.errors().Add("spec." + std::string(field),
                        std::to_string(n) + " pods exceed the simulator's limit of " +
                            std::to_string(kMaxPodsPerObject) + " per object");
  return 0;
}

// ReplicaSet pods: <rs>-<5>; a Deployment's ReplicaSet is <deployment>-<hash>.
common::StatusOr<std::vector<api::PodPtr>> ExpandReplicaSet(Owner& o) {
  const int64_t replicas = Count(o, "replicas", 1);
  GPUSCHED_RETURN_IF_ERROR(Errors(o));
  PodPatch patch = OwnedBy(o);
  if (o.kind == "Deployment") {
    const std::string hash = TemplateHash(json::value(*o.tmpl));
    patch.owner_kind = "ReplicaSet";
    patch.owner_name = o.name + "-" + hash;
    patch.owner_uid = "sim:replicaset/" + o.namespace_ + "/" + patch.owner_name;
    patch.labels.emplace_back("pod-template-hash", hash);
  }
  std::vector<api::PodPtr> pods;
  for (int64_t i = 0; i < replicas; ++i) {
    patch.name = patch.owner_name + "-" + Suffix(patch.owner_uid + "#" + std::to_string(i));
    GPUSCHED_ASSIGN_OR_RETURN(api::PodPtr pod, MakePod(o, patch));
    pods.push_back(std::move(pod));
  }
  return pods;
}

common::StatusOr<std::vector<api::PodPtr>> ExpandStatefulSet(Owner& o) {
  const int64_t replicas = Count(o, "replicas", 1);
  int64_t start = 0;
  if (const json::object* ordinals = o.reader.Object(*o.spec, "ordinals", kSpecPath)) {
    start = o.reader.Int(*ordinals, "start", api::FieldPath::Text("spec.ordinals"), 0, kInt32Max)
                .value_or(0);
  }
  GPUSCHED_RETURN_IF_ERROR(Errors(o));
  std::vector<api::PodPtr> pods;
  const std::string revision = o.name + "-" + TemplateHash(json::value(*o.tmpl));
  for (int64_t i = start; i < start + replicas; ++i) {
    PodPatch patch = OwnedBy(o);
    patch.name = o.name + "-" + std::to_string(i);
    patch.hostname = patch.name;
    patch.labels = {{"statefulset.kubernetes.io/pod-name", patch.name},
                    {"apps.kubernetes.io/pod-index", std::to_string(i)},
                    {"controller-revision-hash", revision}};
    GPUSCHED_ASSIGN_OR_RETURN(api::PodPtr pod, MakePod(o, patch));
    pods.push_back(std::move(pod));
  }
  return pods;
}

// The native PodGroup 1.37's Job controller creates for a Job whose spec.scheduling asks for a
// gang (WorkloadWithJob): minCount from schedulingPolicy.gang (default the parallelism), a
// required topology from schedulingConstraints. None for a basic policy, no spec.scheduling, or
// a template that names its own schedulingGroup.
std::optional<api::PodGroup> JobGang(Owner& o, int64_t parallelism) {
  const json::object* scheduling = ObjectAt(*o.spec, "scheduling");
  const json::object* policy =
      scheduling != nullptr ? ObjectAt(*scheduling, "schedulingPolicy") : nullptr;
  const json::object* gang = policy != nullptr ? ObjectAt(*policy, "gang") : nullptr;
  const json::object* tspec = ObjectAt(*o.tmpl, "spec");
  if (gang == nullptr || (tspec != nullptr && tspec->contains("schedulingGroup"))) {
    return std::nullopt;
  }
  api::PodGroup g;
  g.api = api::GangApi::kNative;
  g.api_version = std::string(api::kNativePodGroupApiVersions[0]);
  g.namespace_ = o.namespace_;
  g.name = o.name + "-" + Suffix(o.uid + "#podgroup");
  g.uid = o.uid + "-podgroup";
  g.min_member = static_cast<int32_t>(
      o.reader
          .Int(*gang, "minCount", api::FieldPath::Text("spec.scheduling.schedulingPolicy.gang"), 1,
               kInt32Max)
          .value_or(std::max<int64_t>(1, parallelism)));
  const json::object* constraints = ObjectAt(*scheduling, "schedulingConstraints");
  const json::value* topology =
      constraints != nullptr ? constraints->if_contains("topology") : nullptr;
  if (topology != nullptr && topology->is_array() && !topology->get_array().empty()) {
    const json::object* first = topology->get_array().front().if_object();
    const json::value* key = first != nullptr ? first->if_contains("key") : nullptr;
    if (key != nullptr && key->is_string()) g.topology_required = std::string(key->get_string());
  }
  return g;
}

common::StatusOr<Expansion> ExpandJob(Owner& o) {
  const int64_t parallelism = Count(o, "parallelism", 1);
  const std::optional<int64_t> completions =
      o.reader.Int(*o.spec, "completions", kSpecPath, 0, kInt32Max);
  const std::string mode =
      std::string(o.reader.String(*o.spec, "completionMode", kSpecPath).value_or("NonIndexed"));
  const bool suspended = o.reader.Bool(*o.spec, "suspend", kSpecPath).value_or(false);
  if (mode != "NonIndexed" && mode != "Indexed") {
    o.reader.errors().Add("spec.completionMode",
                          "Unsupported value: " + common::Quote(mode) +
                              ": supported values: \"NonIndexed\", \"Indexed\"");
  }
  if (mode == "Indexed" && !completions) {
    o.reader.errors().Add("spec.completions", "Required value: when completion mode is Indexed");
  }
  const json::object* tspec = ObjectAt(*o.tmpl, "spec");
  const json::value* policy = tspec != nullptr ? tspec->if_contains("restartPolicy") : nullptr;
  if (policy == nullptr || !policy->is_string() ||
      (policy->get_string() != "Never" && policy->get_string() != "OnFailure")) {
    o.reader.errors().Add(
        "spec.template.spec.restartPolicy",
        std::string(policy == nullptr ? "Required value"
                                      : "Unsupported value: " + api::DescribeValue(*policy)) +
            ": supported values: \"OnFailure\", \"Never\"");
  }
  std::optional<api::PodGroup> gang = JobGang(o, parallelism);
  GPUSCHED_RETURN_IF_ERROR(Errors(o));
  const int64_t active = suspended ? 0 : std::min(parallelism, completions.value_or(parallelism));
  Expansion out;
  if (gang) out.pod_groups.push_back(std::make_shared<const api::PodGroup>(*gang));
  for (int64_t i = 0; i < active; ++i) {
    PodPatch patch = OwnedBy(o);
    if (gang) patch.scheduling_group = gang->name;
    const std::string seed = o.uid + "#" + std::to_string(i);
    patch.labels = {{"batch.kubernetes.io/controller-uid", o.uid},
                    {"batch.kubernetes.io/job-name", o.name},
                    {"controller-uid", o.uid},
                    {"job-name", o.name}};
    if (mode == "Indexed") {
      const std::string index = std::to_string(i);
      patch.name = o.name + "-" + index + "-" + Suffix(seed);
      patch.hostname = o.name + "-" + index;
      patch.labels.emplace_back("batch.kubernetes.io/job-completion-index", index);
      patch.annotations.emplace_back("batch.kubernetes.io/job-completion-index", index);
    } else {
      patch.name = o.name + "-" + Suffix(seed);
    }
    GPUSCHED_ASSIGN_OR_RETURN(api::PodPtr pod, MakePod(o, patch));
    out.pods.push_back(std::move(pod));
  }
  return out;
}

// nodeShouldRunDaemonPod: the node passes the template's node selector and required node
// affinity, and every NoSchedule/NoExecute taint is tolerated (resources are the scheduler's).
bool DaemonPodFits(const api::Pod& pod, const api::Node& node) {
  for (const auto& [key, value] : pod.node_selector.items()) {
    common::Atom have;
    if (!node.meta.labels.Get(key, &have) || have != value) return false;
  }
  return std::all_of(node.taints.begin(), node.taints.end(), [&](const api::Taint& t) {
    if (t.effect == api::TaintEffect::kPreferNoSchedule) return true;
    return std::any_of(pod.tolerations.begin(), pod.tolerations.end(),
                       [&](const api::Toleration& tol) { return tol.Tolerates(t); });
  });
}

common::StatusOr<std::vector<api::PodPtr>> ExpandDaemonSet(Owner& o,
                                                           std::span<const api::NodePtr> nodes) {
  const std::string revision = TemplateHash(json::value(*o.tmpl));
  std::vector<api::PodPtr> pods;
  for (const api::NodePtr& node : nodes) {
    PodPatch patch = OwnedBy(o);
    patch.name = o.name + "-" + Suffix(o.uid + "#" + node->meta.name);
    patch.labels = {{"controller-revision-hash", revision}, {"pod-template-generation", "1"}};
    patch.daemon = true;
    patch.node = node->meta.name;
    GPUSCHED_ASSIGN_OR_RETURN(api::PodPtr pod, MakePod(o, patch));
    // The template's own required node affinity decides eligibility (the pod's was replaced).
    api::PodPtr tmpl_pod = pod;
    if (const json::object* ts = ObjectAt(*o.tmpl, "spec");
        ts != nullptr && ts->contains("affinity")) {
      PodPatch plain = patch;
      plain.daemon = false;
      GPUSCHED_ASSIGN_OR_RETURN(tmpl_pod, MakePod(o, plain));
    }
    const auto& required = tmpl_pod->affinity.node_affinity.required;
    if (required && !required->Matches(node->meta.labels, node->meta.name)) continue;
    if (!DaemonPodFits(*pod, *node)) continue;
    pods.push_back(std::move(pod));
  }
  return pods;
}

}  // namespace

bool IsControllerKind(std::string_view api_version, std::string_view kind) {
  if (api_version == "apps/v1") {
    return kind == "Deployment" || kind == "ReplicaSet" || kind == "StatefulSet" ||
           kind == "DaemonSet";
  }
  return api_version == "batch/v1" && kind == "Job";
}

common::StatusOr<Expansion> ExpandController(const ControllerObject& object,
                                             std::span<const api::NodePtr> nodes) {
  GPUSCHED_ASSIGN_OR_RETURN(Owner o, ReadOwner(object));
  if (o.kind == "Job") return ExpandJob(o);
  Expansion out;
  if (o.kind == "Deployment" || o.kind == "ReplicaSet") {
    GPUSCHED_ASSIGN_OR_RETURN(out.pods, ExpandReplicaSet(o));
  } else if (o.kind == "StatefulSet") {
    GPUSCHED_ASSIGN_OR_RETURN(out.pods, ExpandStatefulSet(o));
  } else if (o.kind == "DaemonSet") {
    GPUSCHED_ASSIGN_OR_RETURN(out.pods, ExpandDaemonSet(o, nodes));
  } else {
    return InvalidArgumentError("kind " + common::Quote(o.kind) + " is not a workload controller");
  }
  return out;
}

api::PodPtr ReplacementPod(const api::Pod& deleted) {
  const api::OwnerReference* owner = nullptr;
  for (const api::OwnerReference& ref : deleted.meta.owner_references) {
    if (ref.controller) owner = &ref;
  }
  if (owner == nullptr) return nullptr;
  const std::string seed = deleted.meta.uid + "#replacement";
  std::string name;
  if (owner->kind == "StatefulSet") {
    name = deleted.meta.name;  // the same identity, once the old pod is gone
  } else if (owner->kind == "ReplicaSet" || owner->kind == "DaemonSet") {
    name = owner->name + "-" + Suffix(seed);
  } else if (owner->kind == "Job") {
    const std::string* index = deleted.meta.Annotation("batch.kubernetes.io/job-completion-index");
    name = owner->name + "-" + (index != nullptr ? *index + "-" : std::string()) + Suffix(seed);
  } else {
    return nullptr;
  }
  auto pod = std::make_shared<api::Pod>(deleted);
  pod->meta.name = std::move(name);
  pod->meta.uid.clear();
  pod->meta.creation_timestamp.reset();
  pod->node_name.clear();
  pod->nominated_node_name.clear();
  return pod;
}

void ExpandControllers(Workload& workload) {
  if (workload.controllers.empty()) return;
  std::vector<api::PodPtr> pods;
  pods.reserve(workload.pods.size());
  size_t next = 0;
  for (const ControllerObject& c : workload.controllers) {
    for (; next < c.position && next < workload.pods.size(); ++next) {
      pods.push_back(std::move(workload.pods[next]));
    }
    common::StatusOr<Expansion> expanded = ExpandController(c, workload.nodes);
    if (!expanded.ok()) {
      workload.rejected.push_back(Rejection{c.source, c.document, c.kind, c.name,
                                            std::string(expanded.status().message())});
      continue;
    }
    for (api::PodPtr& p : expanded->pods) pods.push_back(std::move(p));
    for (api::PodGroupPtr& g : expanded->pod_groups) workload.pod_groups.push_back(std::move(g));
  }
  for (; next < workload.pods.size(); ++next) pods.push_back(std::move(workload.pods[next]));
  workload.pods = std::move(pods);
  workload.controllers.clear();
}

}  // namespace gpusched::sim
