// SPDX-License-Identifier: Apache-2.0
#include "src/explain/pod_ref.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <utility>

#include "src/common/strings.h"

namespace gpusched::explain {
namespace {

using Kind = PodRef::Kind;

struct TypeName {
  std::string_view name;
  Kind kind;
};

// kubectl's resource names for the kinds explain reads: singular, plural and short.
constexpr std::array<TypeName, 20> kTypes = {{
    {"pod", Kind::kPod},
    {"pods", Kind::kPod},
    {"po", Kind::kPod},
    {"deployment", Kind::kDeployment},
    {"deployments", Kind::kDeployment},
    {"deploy", Kind::kDeployment},
    {"replicaset", Kind::kReplicaSet},
    {"replicasets", Kind::kReplicaSet},
    {"rs", Kind::kReplicaSet},
    {"statefulset", Kind::kStatefulSet},
    {"statefulsets", Kind::kStatefulSet},
    {"sts", Kind::kStatefulSet},
    {"daemonset", Kind::kDaemonSet},
    {"daemonsets", Kind::kDaemonSet},
    {"ds", Kind::kDaemonSet},
    {"job", Kind::kJob},
    {"jobs", Kind::kJob},
    {"podgroup", Kind::kPodGroup},
    {"podgroups", Kind::kPodGroup},
    {"pg", Kind::kPodGroup},
}};

const TypeName* FindType(std::string_view word) {
  std::string lower(word);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (const TypeName& t : kTypes) {
    if (t.name == lower) return &t;
  }
  return nullptr;
}

std::string_view KindName(Kind k) {
  switch (k) {
    case Kind::kPod: return "pod";
    case Kind::kDeployment: return "deployment";
    case Kind::kReplicaSet: return "replicaset";
    case Kind::kStatefulSet: return "statefulset";
    case Kind::kDaemonSet: return "daemonset";
    case Kind::kJob: return "job";
    case Kind::kPodGroup: return "podgroup";
  }
  return "pod";
}

// The controller kind a pod of `k` names in its ownerReference ("" for pod and podgroup).
std::string_view OwnerKind(Kind k) {
  switch (k) {
    case Kind::kDeployment:
    case Kind::kReplicaSet: return "ReplicaSet";
    case Kind::kStatefulSet: return "StatefulSet";
    case Kind::kDaemonSet: return "DaemonSet";
    case Kind::kJob: return "Job";
    case Kind::kPod:
    case Kind::kPodGroup: return "";
  }
  return "";
}

// A Deployment's ReplicaSet is "<deployment>-<pod-template-hash>" (the Deployment controller's
// naming); the pod carries the hash as a label.
bool OwnedByDeployment(const api::Pod& pod, std::string_view rs, std::string_view deployment) {
  common::Atom hash;
  if (!pod.meta.labels.Get(common::Intern("pod-template-hash"), &hash)) return false;
  const std::string_view h = common::Str(hash);
  return rs.size() == deployment.size() + 1 + h.size() && rs.starts_with(deployment) &&
         rs[deployment.size()] == '-' && rs.ends_with(h);
}

}  // namespace

std::string PodRef::ToString() const { return std::string(KindName(kind)) + " " + ns + "/" + name; }

common::StatusOr<PodRef> ParsePodRef(std::string_view arg, std::string_view namespace_flag) {
  const auto bad = [&](std::string_view why) {
    return common::InvalidArgumentError("pod: " + std::string(why) + ", got " + common::Quote(arg) +
                                        " (want NAME, NAMESPACE/NAME or TYPE/NAME such as "
                                        "deployment/web, with -n NAMESPACE)");
  };
  PodRef ref;
  if (!namespace_flag.empty()) ref.ns = std::string(namespace_flag);
  const size_t slash = arg.find('/');
  if (slash == std::string_view::npos) {
    ref.name = std::string(arg);
  } else {
    const std::string_view head = arg.substr(0, slash);
    ref.name = std::string(arg.substr(slash + 1));
    if (const TypeName* t = FindType(head)) {
      ref.kind = t->kind;
    } else if (!namespace_flag.empty() && head != namespace_flag) {
      return bad("namespace " + common::Quote(head) + " disagrees with -n " +
                 common::Quote(namespace_flag));
    } else {
      ref.ns = std::string(head);
    }
    if (head.empty()) return bad("empty namespace or type");
  }
  if (ref.name.empty() || ref.name.find('/') != std::string::npos) return bad("invalid name");
  return ref;
}

bool Selects(const PodRef& ref, const api::Pod& pod) {
  if (pod.meta.namespace_ != ref.ns) return false;
  switch (ref.kind) {
    case Kind::kPod: return pod.meta.name == ref.name;
    case Kind::kPodGroup: return pod.gang.name == ref.name;
    default: break;
  }
  const api::OwnerReference* owner = pod.meta.ControllerRef();
  if (owner == nullptr || owner->kind != OwnerKind(ref.kind)) return false;
  if (ref.kind == Kind::kDeployment) return OwnedByDeployment(pod, owner->name, ref.name);
  return owner->name == ref.name;
}

const api::Pod* ChooseTarget(const PodRef& ref, std::span<const api::PodPtr> pods,
                             size_t* selected) {
  const api::Pod* waiting = nullptr;
  const api::Pod* any = nullptr;
  size_t n = 0;
  for (const api::PodPtr& p : pods) {
    if (!Selects(ref, *p)) continue;
    ++n;
    if (any == nullptr || p->meta.name < any->meta.name) any = p.get();
    if (p->node_name.empty() && (waiting == nullptr || p->meta.name < waiting->meta.name)) {
      waiting = p.get();
    }
  }
  if (selected != nullptr) *selected = n;
  return waiting != nullptr ? waiting : any;
}

}  // namespace gpusched::explain
