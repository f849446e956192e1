// SPDX-License-Identifier: Apache-2.0
// JSON -> Pod: the pod spec (affinity, tolerations, spread constraints, containers) and status,
// then the API server's defaulting the scheduler depends on. Every error is recorded in the
// ObjectReader, in document order; the success path builds no text.
#include <arpa/inet.h>
#include <netinet/in.h>

#include <limits>
#include <memory>
#include <span>
#include <string>
#include <utility>

#include "src/api/decode_internal.h"
#include "src/api/dra.h"
#include "src/api/volume.h"

namespace gpusched::api::decode_internal {

namespace json = boost::json;

namespace {

constexpr int64_t kInt32Min = std::numeric_limits<int32_t>::min();
constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();
constexpr int64_t kMaxPort = 65535;

// ---------------------------------------------------------------------------------------------
// Affinity

int32_t DecodeWeight(ObjectReader& r, const json::object& o, const FieldPath& p) {
  return static_cast<int32_t>(r.Int(o, "weight", p, 1, 100).value_or(0));
}

NodeAffinity DecodeNodeAffinity(ObjectReader& r, const json::object& o, const FieldPath& p) {
  NodeAffinity out;
  constexpr std::string_view kRequired = "requiredDuringSchedulingIgnoredDuringExecution";
  if (const json::object* req = r.Object(o, kRequired, p)) {
    out.required.emplace().terms =
        r.MapObjects<NodeSelectorTerm>(*req, "nodeSelectorTerms", p.Key(kRequired),
                                       [&](const json::object& t, const FieldPath& ip) {
                                         return DecodeNodeSelectorTerm(r, t, ip);
                                       });
  }
  out.preferred = r.MapObjects<PreferredSchedulingTerm>(
      o, "preferredDuringSchedulingIgnoredDuringExecution", p,
      [&](const json::object& e, const FieldPath& ip) {
        PreferredSchedulingTerm term;
        term.weight = DecodeWeight(r, e, ip);
        if (const json::object* pr = r.Object(e, "preference", ip)) {
          term.preference = DecodeNodeSelectorTerm(r, *pr, ip.Key("preference"));
        }
        return term;
      });
  return out;
}

PodAffinityTerm DecodePodAffinityTerm(ObjectReader& r, const json::object& o, const FieldPath& p) {
  PodAffinityTerm out;
  out.label_selector = DecodeLabelSelector(r, o, "labelSelector", p);
  out.namespaces = DecodeStringList(r, o, "namespaces", p);
  if (const json::object* ns = r.Object(o, "namespaceSelector", p)) {
    out.namespace_selector = DecodeLabelSelectorObject(r, *ns, p.Key("namespaceSelector"));
  }
  out.topology_key = common::Intern(r.RequiredString(o, "topologyKey", p));
  out.match_label_keys = DecodeLabelKeys(r, o, "matchLabelKeys", p);
  out.mismatch_label_keys = DecodeLabelKeys(r, o, "mismatchLabelKeys", p);
  return out;
}

WeightedPodAffinityTerm DecodeWeightedTerm(ObjectReader& r, const json::object& e,
                                           const FieldPath& p) {
  WeightedPodAffinityTerm w;
  w.weight = DecodeWeight(r, e, p);
  const size_t errors_before = r.error_count();
  const json::object* t = r.Object(e, "podAffinityTerm", p);
  if (t == nullptr) {
    if (r.error_count() == errors_before) r.Required(p.Key("podAffinityTerm"));
    return w;
  }
  w.term = DecodePodAffinityTerm(r, *t, p.Key("podAffinityTerm"));
  return w;
}

PodAffinity DecodePodAffinity(ObjectReader& r, const json::object& o, const FieldPath& p) {
  PodAffinity out;
  out.required = r.MapObjects<PodAffinityTerm>(
      o, "requiredDuringSchedulingIgnoredDuringExecution", p,
      [&](const json::object& t, const FieldPath& ip) { return DecodePodAffinityTerm(r, t, ip); });
  out.preferred = r.MapObjects<WeightedPodAffinityTerm>(
      o, "preferredDuringSchedulingIgnoredDuringExecution", p,
      [&](const json::object& e, const FieldPath& ip) { return DecodeWeightedTerm(r, e, ip); });
  return out;
}

Affinity DecodeAffinity(ObjectReader& r, const json::object& spec, const FieldPath& p) {
  Affinity out;
  const json::object* a = r.Object(spec, "affinity", p);
  if (a == nullptr) return out;
  const FieldPath ap = p.Key("affinity");
  if (const json::object* na = r.Object(*a, "nodeAffinity", ap)) {
    out.node_affinity = DecodeNodeAffinity(r, *na, ap.Key("nodeAffinity"));
  }
  if (const json::object* pa = r.Object(*a, "podAffinity", ap)) {
    out.pod_affinity = DecodePodAffinity(r, *pa, ap.Key("podAffinity"));
  }
  if (const json::object* paa = r.Object(*a, "podAntiAffinity", ap)) {
    out.pod_anti_affinity = DecodePodAffinity(r, *paa, ap.Key("podAntiAffinity"));
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Tolerations and spread constraints

}  // namespace

Toleration DecodeToleration(ObjectReader& r, const json::object& o, const FieldPath& p) {
  Toleration t;
  const std::string_view key = r.StringOr(o, "key", p);
  const std::string_view op = r.StringOr(o, "operator", p);
  const std::string_view value = r.StringOr(o, "value", p);
  if (op.empty() || op == "Equal") {
    t.op = Toleration::Op::kEqual;
  } else if (op == "Exists") {
    t.op = Toleration::Op::kExists;
  } else {
    r.InvalidValue(p.Key("operator"), op, "Equal or Exists");
  }
  t.key = common::Intern(key);
  t.value = common::Intern(value);
  t.effect = DecodeEffect(r, o, p, true);
  t.toleration_seconds = r.Int(o, "tolerationSeconds", p);
  return t;
}

std::shared_ptr<const PodResourceClaims> DecodeClaimReferences(ObjectReader& r,
                                                               const json::object& root,
                                                               const FieldPath& rp) {
  const json::object* spec = r.Object(root, "spec", rp);
  if (spec == nullptr) return nullptr;
  const FieldPath sp = rp.Key("spec");
  auto out = std::make_shared<PodResourceClaims>();
  r.ForEachObject(*spec, "resourceClaims", sp, [&](const json::object& c, const FieldPath& cp) {
    PodClaimSource src;
    src.name = r.RequiredString(c, "name", cp);
    src.claim_name = r.StringOr(c, "resourceClaimName", cp);
    src.template_name = r.StringOr(c, "resourceClaimTemplateName", cp);
    if (src.claim_name.empty() == src.template_name.empty()) {
      r.InvalidValue(cp.Key("resourceClaimName"), src.claim_name,
                     "exactly one of resourceClaimName or resourceClaimTemplateName");
    }
    out->claims.push_back(std::move(src));
  });
  if (out->claims.empty()) return nullptr;
  if (const json::object* status = r.Object(root, "status", rp)) {
    r.ForEachObject(*status, "resourceClaimStatuses", rp.Key("status"),
                    [&](const json::object& c, const FieldPath& cp) {
                      out->statuses.emplace_back(r.RequiredString(c, "name", cp),
                                                 r.StringOr(c, "resourceClaimName", cp));
                    });
  }
  return out;
}

namespace {

using Policy = TopologySpreadConstraint::NodeInclusionPolicy;
using When = TopologySpreadConstraint::WhenUnsatisfiable;

When DecodeWhenUnsatisfiable(ObjectReader& r, const json::object& o, const FieldPath& p) {
  const std::string_view when = r.StringOr(o, "whenUnsatisfiable", p);
  if (when.empty() || when == "DoNotSchedule") return When::kDoNotSchedule;
  if (when == "ScheduleAnyway") return When::kScheduleAnyway;
  r.InvalidValue(p.Key("whenUnsatisfiable"), when, "DoNotSchedule or ScheduleAnyway");
  return When::kDoNotSchedule;
}

// nodeAffinityPolicy / nodeTaintsPolicy: Honor, Ignore, or absent (`fallback`).
Policy DecodeInclusionPolicy(ObjectReader& r, const json::object& o, std::string_view field,
                             const FieldPath& p, Policy fallback) {
  const std::string_view v = r.StringOr(o, field, p);
  if (v == "Honor") return Policy::kHonor;
  if (v == "Ignore") return Policy::kIgnore;
  if (!v.empty()) r.InvalidValue(p.Key(field), v, "Honor or Ignore");
  return fallback;
}

TopologySpreadConstraint DecodeSpreadConstraint(ObjectReader& r, const json::object& o,
                                                const FieldPath& p) {
  TopologySpreadConstraint t;
  t.max_skew = static_cast<int32_t>(r.Int(o, "maxSkew", p, 1, kInt32Max).value_or(1));
  t.topology_key = common::Intern(r.RequiredString(o, "topologyKey", p));
  t.when_unsatisfiable = DecodeWhenUnsatisfiable(r, o, p);
  t.label_selector = DecodeLabelSelector(r, o, "labelSelector", p);
  if (std::optional<int64_t> min_domains = r.Int(o, "minDomains", p, 1, kInt32Max)) {
    t.min_domains = static_cast<int32_t>(*min_domains);
  }
  t.match_label_keys = DecodeLabelKeys(r, o, "matchLabelKeys", p);
  t.node_affinity_policy =
      DecodeInclusionPolicy(r, o, "nodeAffinityPolicy", p, t.node_affinity_policy);
  t.node_taints_policy = DecodeInclusionPolicy(r, o, "nodeTaintsPolicy", p, t.node_taints_policy);
  return t;
}

// ---------------------------------------------------------------------------------------------
// Containers

void DecodeContainerResources(ObjectReader& r, const json::object& res, const FieldPath& rp,
                              Container& ct) {
  const json::object* requests = r.Object(res, "requests", rp);
  if (requests != nullptr) ct.requests = DecodeResourceMap(r, *requests, rp.Key("requests"));
  const json::object* limits = r.Object(res, "limits", rp);
  if (limits == nullptr) return;
  ct.limits = DecodeResourceMap(r, *limits, rp.Key("limits"));
  // API defaulting (SetDefaults_Pod): a resource with a limit and no request is requested at its
  // limit.
  for (const auto& kv : *limits) {
    if (requests == nullptr || !requests->contains(kv.key())) {
      const Atom name = common::Intern(kv.key());
      ct.requests.Set(name, ct.limits.Get(name));
    }
  }
}

bool IsIpAddress(std::string_view s) {
  const std::string text(s);
  in6_addr buf{};
  return inet_pton(AF_INET, text.c_str(), &buf) == 1 ||
         inet_pton(AF_INET6, text.c_str(), &buf) == 1;
}

// One ports[] entry, validated as the API server does (port numbers 0..65535, protocol TCP, UDP
// or SCTP, hostIP an address); protocol "" reads as TCP.
ContainerPort DecodeContainerPort(ObjectReader& r, const json::object& o, const FieldPath& p) {
  ContainerPort port;
  port.host_port = static_cast<int32_t>(r.Int(o, "hostPort", p, 0, kMaxPort).value_or(0));
  port.container_port = static_cast<int32_t>(r.Int(o, "containerPort", p, 0, kMaxPort).value_or(0));
  const std::string_view protocol = r.StringOr(o, "protocol", p);
  if (!protocol.empty() && protocol != "TCP" && protocol != "UDP" && protocol != "SCTP") {
    r.InvalidValue(p.Key("protocol"), protocol, "TCP, UDP or SCTP");
  }
  port.protocol = common::Intern(protocol.empty() ? "TCP" : protocol);
  port.host_ip = r.StringOr(o, "hostIP", p);
  if (!port.host_ip.empty() && !IsIpAddress(port.host_ip)) {
    r.InvalidValue(p.Key("hostIP"), port.host_ip, "an IPv4 or IPv6 address");
  }
  return port;
}

// The ports with a hostPort (the only ones scheduling reads); every entry is validated.
std::vector<ContainerPort> DecodeHostPorts(ObjectReader& r, const json::object& o,
                                           const FieldPath& p) {
  std::vector<ContainerPort> ports;
  r.ForEachObject(o, "ports", p, [&](const json::object& e, const FieldPath& ip) {
    ContainerPort port = DecodeContainerPort(r, e, ip);
    if (port.host_port > 0) ports.push_back(std::move(port));
  });
  return ports;
}

Container DecodeContainer(ObjectReader& r, const json::object& o, const FieldPath& p, bool init) {
  Container ct;
  ct.name = r.StringOr(o, "name", p);
  ct.image = r.StringOr(o, "image", p);
  ct.ports = DecodeHostPorts(r, o, p);
  if (init) {
    const std::string_view policy = r.StringOr(o, "restartPolicy", p);
    if (policy == "Always") {
      ct.restartable = true;
    } else if (!policy.empty()) {
      r.InvalidValue(p.Key("restartPolicy"), policy, "Always or unset");
    }
  }
  if (const json::object* res = r.Object(o, "resources", p)) {
    DecodeContainerResources(r, *res, p.Key("resources"), ct);
  }
  return ct;
}

std::vector<Container> DecodeContainers(ObjectReader& r, const json::object& spec,
                                        std::string_view key, const FieldPath& p, bool init) {
  return r.MapObjects<Container>(spec, key, p, [&](const json::object& o, const FieldPath& ip) {
    return DecodeContainer(r, o, ip, init);
  });
}

// ---------------------------------------------------------------------------------------------
// Volumes

// The inline source of a volume that VolumeRestrictions or NodeVolumeLimits look at.
void DecodeInlineSource(ObjectReader& r, const json::object& v, const FieldPath& p,
                        PodVolume& out) {
  if (const json::object* gce = r.Object(v, "gcePersistentDisk", p)) {
    const FieldPath gp = p.Key("gcePersistentDisk");
    out.source = InlineSource::kGcePersistentDisk;
    out.disk_id = r.RequiredString(*gce, "pdName", gp);
    out.read_only = r.Bool(*gce, "readOnly", gp).value_or(false);
  } else if (const json::object* ebs = r.Object(v, "awsElasticBlockStore", p)) {
    const FieldPath ep = p.Key("awsElasticBlockStore");
    out.source = InlineSource::kAwsElasticBlockStore;
    out.disk_id = r.RequiredString(*ebs, "volumeID", ep);
    out.read_only = r.Bool(*ebs, "readOnly", ep).value_or(false);
  } else if (const json::object* rbd = r.Object(v, "rbd", p)) {
    const FieldPath bp = p.Key("rbd");
    out.source = InlineSource::kRbd;
    out.disk_id = r.RequiredString(*rbd, "image", bp);
    out.rbd_pool = r.StringOr(*rbd, "pool", bp);
    if (out.rbd_pool.empty()) out.rbd_pool = "rbd";
    out.monitors = DecodeStringList(r, *rbd, "monitors", bp);
    out.read_only = r.Bool(*rbd, "readOnly", bp).value_or(false);
  } else if (const json::object* iscsi = r.Object(v, "iscsi", p)) {
    const FieldPath ip = p.Key("iscsi");
    out.source = InlineSource::kIscsi;
    out.disk_id = r.RequiredString(*iscsi, "iqn", ip);
    out.target_portal = r.StringOr(*iscsi, "targetPortal", ip);
    out.iscsi_lun = static_cast<int32_t>(r.Int(*iscsi, "lun", ip, 0, 255).value_or(0));
    out.read_only = r.Bool(*iscsi, "readOnly", ip).value_or(false);
  } else if (const json::object* azure = r.Object(v, "azureDisk", p)) {
    out.source = InlineSource::kAzureDisk;
    out.disk_id = r.RequiredString(*azure, "diskName", p.Key("azureDisk"));
  } else if (const json::object* cinder = r.Object(v, "cinder", p)) {
    out.source = InlineSource::kCinder;
    out.disk_id = r.RequiredString(*cinder, "volumeID", p.Key("cinder"));
  } else if (const json::object* csi = r.Object(v, "csi", p)) {
    out.source = InlineSource::kCsi;
    out.csi_driver = r.RequiredString(*csi, "driver", p.Key("csi"));
  }
}

// spec.volumes: claims (persistentVolumeClaim, ephemeral) and the inline sources scheduling
// counts, and whether an emptyDir or hostPath keeps data on the node; null when there is none.
std::shared_ptr<const PodVolumes> DecodePodVolumes(ObjectReader& r, const json::object& spec,
                                                   const FieldPath& sp, const Pod& pod) {
  std::shared_ptr<PodVolumes> out;
  r.ForEachObject(spec, "volumes", sp, [&](const json::object& v, const FieldPath& vp) {
    PodVolume vol;
    vol.name = r.RequiredString(v, "name", vp);
    if (const json::object* claim = r.Object(v, "persistentVolumeClaim", vp)) {
      const FieldPath cp = vp.Key("persistentVolumeClaim");
      vol.claim_name = r.RequiredString(*claim, "claimName", cp);
      vol.read_only = r.Bool(*claim, "readOnly", cp).value_or(false);
    } else if (r.Object(v, "ephemeral", vp) != nullptr) {
      vol.ephemeral = true;
      vol.claim_name = pod.meta.name + "-" + vol.name;  // ephemeral.VolumeClaimName
    } else {
      DecodeInlineSource(r, v, vp, vol);
      if (vol.source == InlineSource::kNone) {
        if (!v.contains("emptyDir") && !v.contains("hostPath")) return;
        if (out == nullptr) out = std::make_shared<PodVolumes>();
        out->local_storage = true;  // kept on the node: not a volume scheduling counts
        return;
      }
    }
    if (out == nullptr) out = std::make_shared<PodVolumes>();
    out->has_claims = out->has_claims || vol.IsClaim() || vol.ephemeral;
    out->volumes.push_back(std::move(vol));
  });
  return out;
}

// ---------------------------------------------------------------------------------------------
// The pod

// Merges matchLabelKeys (key In (value)) and mismatchLabelKeys (key NotIn (value)) into
// `selector` for the keys the pod's labels have, as the API server does on pod creation.
void MergeLabelKeys(const Labels& pod_labels, std::span<const Atom> match,
                    std::span<const Atom> mismatch, LabelSelector& selector) {
  for (int pass = 0; pass < 2; ++pass) {
    for (Atom key : pass == 0 ? match : mismatch) {
      Atom value;
      if (!pod_labels.Get(key, &value)) continue;
      Requirement req;
      req.key = key;
      req.op = pass == 0 ? SelectorOp::kIn : SelectorOp::kNotIn;
      req.values.push_back(value);
      selector.requirements.push_back(std::move(req));
    }
  }
}

void MergePodLabelKeys(Pod& pod) {
  for (TopologySpreadConstraint& t : pod.topology_spread_constraints) {
    MergeLabelKeys(pod.meta.labels, t.match_label_keys, {}, t.label_selector);
  }
  for (PodAffinity* pa : {&pod.affinity.pod_affinity, &pod.affinity.pod_anti_affinity}) {
    for (PodAffinityTerm& t : pa->required) {
      MergeLabelKeys(pod.meta.labels, t.match_label_keys, t.mismatch_label_keys, t.label_selector);
    }
    for (WeightedPodAffinityTerm& w : pa->preferred) {
      MergeLabelKeys(pod.meta.labels, w.term.match_label_keys, w.term.mismatch_label_keys,
                     w.term.label_selector);
    }
  }
}

PodPhase ParsePhase(std::string_view s) {
  if (s.empty() || s == "Pending") return PodPhase::kPending;
  if (s == "Running") return PodPhase::kRunning;
  if (s == "Succeeded") return PodPhase::kSucceeded;
  if (s == "Failed") return PodPhase::kFailed;
  return PodPhase::kUnknown;
}

void DecodePodSpec(ObjectReader& r, const json::object& spec, const FieldPath& sp, Pod& pod) {
  pod.node_name = r.StringOr(spec, "nodeName", sp);
  const std::string_view scheduler = r.StringOr(spec, "schedulerName", sp);
  if (!scheduler.empty()) pod.scheduler_name = common::Intern(scheduler);
  pod.priority =
      static_cast<int32_t>(r.Int(spec, "priority", sp, kInt32Min, kInt32Max).value_or(0));
  pod.priority_class_name = r.StringOr(spec, "priorityClassName", sp);
  pod.preemption_policy = DecodePreemptionPolicy(r, spec, sp);
  pod.node_selector = DecodeLabels(r, spec, "nodeSelector", sp);
  pod.affinity = DecodeAffinity(r, spec, sp);
  pod.tolerations = r.MapObjects<Toleration>(
      spec, "tolerations", sp,
      [&](const json::object& o, const FieldPath& ip) { return DecodeToleration(r, o, ip); });
  pod.topology_spread_constraints = r.MapObjects<TopologySpreadConstraint>(
      spec, "topologySpreadConstraints", sp,
      [&](const json::object& o, const FieldPath& ip) { return DecodeSpreadConstraint(r, o, ip); });
  pod.containers = DecodeContainers(r, spec, "containers", sp, false);
  pod.init_containers = DecodeContainers(r, spec, "initContainers", sp, true);
  pod.overhead = DecodeResources(r, spec, "overhead", sp);
  pod.scheduling_gates = r.MapObjects<std::string>(
      spec, "schedulingGates", sp, [&](const json::object& g, const FieldPath& ip) {
        return std::string(r.RequiredString(g, "name", ip));
      });
  pod.volumes = DecodePodVolumes(r, spec, sp, pod);
  if (const json::object* group = r.Object(spec, "schedulingGroup", sp)) {
    const FieldPath gp = sp.Key("schedulingGroup");
    pod.gang.api = GangApi::kNative;
    pod.gang.name = std::string(r.RequiredString(*group, "podGroupName", gp));
    pod.scheduling_group = pod.gang.name;
  } else if (const json::object* ref = r.Object(spec, "workloadRef", sp)) {
    const FieldPath wp = sp.Key("workloadRef");
    pod.gang.api = GangApi::kWorkload;
    pod.gang.name = std::string(r.RequiredString(*ref, "name", wp));
    pod.gang.pod_group = std::string(r.RequiredString(*ref, "podGroup", wp));
    pod.gang.replica_key = std::string(r.StringOr(*ref, "podGroupReplicaKey", wp));
  }
}

void DecodePodStatus(ObjectReader& r, const json::object& status, const FieldPath& tp, Pod& pod) {
  pod.phase = ParsePhase(r.StringOr(status, "phase", tp));
  pod.conditions = DecodeConditions(r, status, tp);
  pod.nominated_node_name = r.StringOr(status, "nominatedNodeName", tp);
  pod.start_time = DecodeTime(r, status, "startTime", tp);
}

// A matchFields entry: metadata.name In/NotIn values.
void DecodeMatchField(ObjectReader& r, const json::object& f, const FieldPath& p,
                      NodeSelectorTerm& out) {
  const std::string_view key = r.StringOr(f, "key", p);
  const std::string_view op = r.StringOr(f, "operator", p);
  if (key != "metadata.name") {
    if (!ObjectReader::IsNonString(f, "key")) r.InvalidValue(p.Key("key"), key, "metadata.name");
    return;
  }
  std::vector<std::string>* names = nullptr;
  if (op == "In") {
    names = &out.match_fields_names_in;
  } else if (op == "NotIn") {
    names = &out.match_fields_names_not_in;
  } else {
    if (!ObjectReader::IsNonString(f, "operator")) {
      r.InvalidValue(p.Key("operator"), op, "In or NotIn");
    }
    return;
  }
  const size_t errors_before = r.error_count();
  std::vector<std::string> values = DecodeStringList(r, f, "values", p);
  if (values.empty() && r.error_count() == errors_before) {
    r.Error(p.Key("values"), "must be non-empty");
  }
  names->insert(names->end(), std::make_move_iterator(values.begin()),
                std::make_move_iterator(values.end()));
}

}  // namespace

NodeSelectorTerm DecodeNodeSelectorTerm(ObjectReader& r, const json::object& o,
                                        const FieldPath& p) {
  NodeSelectorTerm out;
  out.match_expressions = r.MapObjects<Requirement>(
      o, "matchExpressions", p, [&](const json::object& e, const FieldPath& ep) {
        return DecodeRequirement(r, e, ep, true);
      });
  r.ForEachObject(o, "matchFields", p, [&](const json::object& f, const FieldPath& ip) {
    DecodeMatchField(r, f, ip, out);
  });
  return out;
}

Pod DecodePodTemplate(ObjectReader& r, const json::object& tmpl, const FieldPath& tp) {
  Pod pod;
  pod.meta = DecodeMeta(r, tmpl, tp);
  pod.scheduler_name = Names().default_scheduler;
  if (const json::object* spec = r.Object(tmpl, "spec", tp)) {
    DecodePodSpec(r, *spec, tp.Key("spec"), pod);
  }
  if (r.ok()) ComputeEffectiveRequests(pod);
  return pod;
}

Pod DecodePodObject(ObjectReader& r, const json::object& root) {
  Pod pod;
  const FieldPath rp;
  CheckKind(r, root, "Pod");
  pod.meta = DecodeMeta(r, root);
  if (pod.meta.namespace_.empty()) pod.meta.namespace_ = "default";
  pod.scheduler_name = Names().default_scheduler;
  if (const json::object* spec = r.Object(root, "spec", rp)) {
    DecodePodSpec(r, *spec, rp.Key("spec"), pod);
  }
  if (const json::object* status = r.Object(root, "status", rp)) {
    DecodePodStatus(r, *status, rp.Key("status"), pod);
  }
  pod.resource_claims = DecodeClaimReferences(r, root, rp);
  if (!r.ok()) return pod;
  pod.gang = DeriveGangRef(pod.meta, pod.gang);
  MergePodLabelKeys(pod);
  ComputeEffectiveRequests(pod);
  DeriveGpuRequest(pod);
  return pod;
}

}  // namespace gpusched::api::decode_internal

namespace gpusched::api {

common::StatusOr<NodeAffinity> DecodeNodeAffinity(const boost::json::value& json,
                                                  std::string_view path) {
  const boost::json::object* o = json.if_object();
  if (o == nullptr) return decode_internal::NotAnObject(path, json);
  decode_internal::ObjectReader r;
  const FieldPath root = FieldPath::Text(path);
  NodeAffinity affinity = decode_internal::DecodeNodeAffinity(r, *o, root);
  GPUSCHED_RETURN_IF_ERROR(r.errors().ToStatus());
  return affinity;
}

}  // namespace gpusched::api
