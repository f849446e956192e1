// SPDX-License-Identifier: Apache-2.0
#include "src/explain/pod_ref.h"

#include <array>
#include <string>

#include "src/common/strings.h"

namespace gpusched::explain {
namespace {

using Kind = PodRef::Kind;

// Each kind: kubectl's singular name (what ToString prints), its plural and short names, and the
// controller kind its pods name in their ownerReference ("" for pod and podgroup).
struct KindNames {
  Kind kind;
  std::string_view name, plural, short_name, owner_kind;
};
constexpr std::array<KindNames, 7> kKinds = {{
    {Kind::kPod, "pod", "pods", "po", ""},
    {Kind::kDeployment, "deployment", "deployments", "deploy", "ReplicaSet"},
    {Kind::kReplicaSet, "replicaset", "replicasets", "rs", "ReplicaSet"},
    {Kind::kStatefulSet, "statefulset", "statefulsets", "sts", "StatefulSet"},
    {Kind::kDaemonSet, "daemonset", "daemonsets", "ds", "DaemonSet"},
    {Kind::kJob, "job", "jobs", "job", "Job"},
    {Kind::kPodGroup, "podgroup", "podgroups", "pg", ""},
}};

// The kind `word` names, any case; nullptr when it names none.
const KindNames* FindKind(std::string_view word) {
  const std::string lower = common::ToLower(word);
  for (const KindNames& k : kKinds) {
    if (lower == k.name || lower == k.plural || lower == k.short_name) return &k;
  }
  return nullptr;
}

const KindNames& NamesOf(Kind kind) {
  for (const KindNames& k : kKinds) {
    if (k.kind == kind) return k;
  }
  return kKinds[0];
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

std::string PodRef::ToString() const {
  return std::string(NamesOf(kind).name) + " " + ns + "/" + name;
}

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
    if (head.empty()) return bad("empty namespace or type");
    if (const KindNames* k = FindKind(head)) {
      ref.kind = k->kind;
    } else if (!namespace_flag.empty() && head != namespace_flag) {
      return bad("namespace " + common::Quote(head) + " disagrees with -n " +
                 common::Quote(namespace_flag));
    } else {
      ref.ns = std::string(head);
    }
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
  if (owner == nullptr || owner->kind != NamesOf(ref.kind).owner_kind) return false;
  if (ref.kind == Kind::kDeployment) return OwnedByDeployment(pod, owner->name, ref.name);
  return owner->name == ref.name;
}

api::PodPtr ChooseTarget(const PodRef& ref, std::span<const api::PodPtr> pods, size_t* selected) {
  api::PodPtr waiting;
  api::PodPtr any;
  size_t n = 0;
  for (const api::PodPtr& p : pods) {
    if (!Selects(ref, *p)) continue;
    ++n;
    if (any == nullptr || p->meta.name < any->meta.name) any = p;
    if (p->node_name.empty() && (waiting == nullptr || p->meta.name < waiting->meta.name)) {
      waiting = p;
    }
  }
  if (selected != nullptr) *selected = n;
  return waiting != nullptr ? waiting : any;
}

}  // namespace gpusched::explain
