// SPDX-License-Identifier: Apache-2.0
#include "src/api/gang.h"

#include <limits>
#include <string>
#include <utility>

#include "src/api/decode_internal.h"
#include "src/api/gang_object.h"
#include "src/api/types.h"

namespace gpusched::api {
namespace {

namespace json = boost::json;
using decode_internal::ObjectReader;

constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();

// The topology annotations of a policy object: ours first, then Kueue's.
void ReadTopology(const ObjectMeta& meta, PodGroup& g) {
  for (std::string_view key : {kGangTopologyRequired, kKueueRequiredTopology}) {
    if (const std::string* v = meta.Annotation(key); v != nullptr && g.topology_required.empty()) {
      g.topology_required = *v;
    }
  }
  for (std::string_view key : {kGangTopologyPreferred, kKueuePreferredTopology}) {
    if (const std::string* v = meta.Annotation(key); v != nullptr && g.topology_preferred.empty()) {
      g.topology_preferred = *v;
    }
  }
}

PodGroup FromMeta(GangApi api, const ObjectMeta& meta) {
  PodGroup g;
  g.api = api;
  g.namespace_ = meta.namespace_.empty() ? "default" : meta.namespace_;
  g.name = meta.name;
  g.uid = meta.uid;
  ReadTopology(meta, g);
  return g;
}

// spec.minMember, spec.minResources (both APIs) and spec.scheduleTimeoutSeconds
// (scheduler-plugins only).
void ReadPodGroupSpec(ObjectReader& r, const json::object& spec, const FieldPath& sp, PodGroup& g) {
  g.min_member = static_cast<int32_t>(r.Int(spec, "minMember", sp, 0, kInt32Max).value_or(1));
  if (g.min_member == 0) g.min_member = 1;  // the APIs' zero value: no gang constraint
  g.min_resources = decode_internal::DecodeResources(r, spec, "minResources", sp);
  if (g.api == GangApi::kPodGroup) {
    if (auto t = r.Int(spec, "scheduleTimeoutSeconds", sp, 1, kInt32Max)) {
      g.schedule_timeout = std::chrono::seconds(*t);
    }
  }
}

PodGroup DecodePodGroupObject(ObjectReader& r, const json::object& root, GangApi api) {
  const FieldPath rp;
  decode_internal::CheckKind(r, root, "PodGroup");
  PodGroup g = FromMeta(api, decode_internal::DecodeMeta(r, root));
  if (g.name.empty()) {
    const FieldPath mp = rp.Key("metadata");
    r.Required(mp.Key("name"));
  }
  if (const json::object* spec = r.Object(root, "spec", rp)) {
    ReadPodGroupSpec(r, *spec, rp.Key("spec"), g);
  }
  if (const json::object* status = r.Object(root, "status", rp)) {
    g.phase = std::string(r.StringOr(*status, "phase", rp.Key("status")));
  }
  return g;
}

// A scheduling policy (a Workload pod group's `policy`, a native PodGroup's
// `spec.schedulingPolicy`, both required): exactly one of basic and gang{minCount}.
void ReadSchedulingPolicy(ObjectReader& r, const json::object& parent, std::string_view field,
                          const FieldPath& parent_path, PodGroup& g) {
  const json::object* policy = r.Object(parent, field, parent_path);
  const FieldPath pp = parent_path.Key(field);
  if (policy == nullptr) {
    r.Required(pp);
    return;
  }
  const json::object* gang = r.Object(*policy, "gang", pp);
  const json::object* basic = r.Object(*policy, "basic", pp);
  if ((gang == nullptr) == (basic == nullptr)) {
    r.Error(pp, "exactly one of basic and gang must be set");
    return;
  }
  if (basic != nullptr) {
    g.gang = false;
    return;
  }
  const FieldPath gp = pp.Key("gang");
  if (auto n = r.Int(*gang, "minCount", gp, 1, kInt32Max)) {
    g.min_member = static_cast<int32_t>(*n);
  } else if (!r.Member(*gang, "minCount")) {
    r.Required(gp.Key("minCount"));
  }
}

// One spec.podGroups[] entry: its name and policy (gang.minCount, or basic).
PodGroup DecodeWorkloadGroup(ObjectReader& r, const json::object& o, const FieldPath& ip,
                             const PodGroup& workload) {
  PodGroup g = workload;
  g.pod_group = std::string(r.RequiredString(o, "name", ip));
  ReadSchedulingPolicy(r, o, "policy", ip, g);
  return g;
}

// A native PodGroup's spec.schedulingConstraints.topology: the first key is the domain every
// member must share (the API allows one).
void ReadNativeTopology(ObjectReader& r, const json::object& spec, const FieldPath& sp,
                        PodGroup& g) {
  const json::object* constraints = r.Object(spec, "schedulingConstraints", sp);
  if (constraints == nullptr) return;
  const FieldPath cp = sp.Key("schedulingConstraints");
  std::vector<std::string> keys = r.MapObjects<std::string>(
      *constraints, "topology", cp, [&](const json::object& t, const FieldPath& tp) {
        return std::string(r.RequiredString(t, "key", tp));
      });
  if (!keys.empty() && !keys.front().empty()) g.topology_required = std::move(keys.front());
}

// The PodGroupInitiallyScheduled condition of a native PodGroup's status as PodGroup::phase.
std::string NativePhase(ObjectReader& r, const json::object& status, const FieldPath& sp) {
  std::string phase;
  r.ForEachObject(status, "conditions", sp, [&](const json::object& c, const FieldPath& cp) {
    if (r.StringOr(c, "type", cp) != kNativeInitiallyScheduled) return;
    const std::string_view v = r.StringOr(c, "status", cp);
    if (v == "True") phase = std::string(kNativePhaseScheduled);
    if (v == "False") phase = std::string(kNativePhaseUnschedulable);
  });
  return phase;
}

// A native PodGroup (scheduling.k8s.io v1beta1, v1alpha3, v1alpha2): spec.schedulingPolicy,
// spec.schedulingConstraints, spec.resourceClaims, the PodGroupInitiallyScheduled condition and
// status.resourceClaimStatuses.
PodGroup DecodeNativePodGroup(ObjectReader& r, const json::object& root,
                              std::string_view api_version) {
  const FieldPath rp;
  decode_internal::CheckKind(r, root, "PodGroup");
  PodGroup g = FromMeta(GangApi::kNative, decode_internal::DecodeMeta(r, root));
  g.api_version = std::string(api_version);
  if (g.name.empty()) {
    const FieldPath mp = rp.Key("metadata");
    r.Required(mp.Key("name"));
  }
  if (const json::object* spec = r.Object(root, "spec", rp)) {
    const FieldPath sp = rp.Key("spec");
    ReadSchedulingPolicy(r, *spec, "schedulingPolicy", sp, g);
    ReadNativeTopology(r, *spec, sp, g);
    g.resource_claims = decode_internal::DecodeClaimReferences(r, root, rp);
  } else {
    r.Required(rp.Key("spec"));
  }
  if (const json::object* status = r.Object(root, "status", rp)) {
    g.phase = NativePhase(r, *status, rp.Key("status"));
  }
  return g;
}

std::string_view ApiVersionOf(const json::object& o) {
  if (const json::value* v = o.if_contains("apiVersion")) {
    if (const json::string* s = v->if_string()) return *s;
  }
  return {};
}

// The first error as InvalidArgument "kind name: path: why".
common::Status FirstError(const ObjectReader& r, std::string_view kind, const json::object& root) {
  return common::InvalidArgumentError(decode_internal::Subject(kind, root) + ": " +
                                      r.errors().list().front());
}

}  // namespace

std::string_view GangApiName(GangApi api) {
  switch (api) {
    case GangApi::kPodGroup: return "podgroup";
    case GangApi::kVolcano: return "volcano";
    case GangApi::kWorkload: return "workload";
    case GangApi::kNative: return "native";
    case GangApi::kNone: break;
  }
  return "";
}

bool IsNativePodGroupApiVersion(std::string_view api_version) {
  for (std::string_view v : kNativePodGroupApiVersions) {
    if (v == api_version) return true;
  }
  return false;
}

GangRef DeriveGangRef(const ObjectMeta& meta, const GangRef& spec_ref) {
  if (spec_ref.api == GangApi::kWorkload) return spec_ref;
  GangRef ref;
  if (Atom v; meta.labels.Get(common::Intern(kPodGroupLabel), &v)) {
    ref.api = GangApi::kPodGroup;
    ref.name = std::string(common::Str(v));
  } else if (const std::string* v = meta.Annotation(kVolcanoGroupAnnotation)) {
    ref.api = GangApi::kVolcano;
    ref.name = *v;
  }
  if (ref.name.empty()) return spec_ref;  // schedulingGroup, or no gang
  return ref;
}

std::string PolicyKey(GangApi api, std::string_view ns, std::string_view name,
                      std::string_view pod_group) {
  if (api == GangApi::kNone) return {};
  std::string key(GangApiName(api));
  key += ':';
  key += ns;
  key += '/';
  key += name;
  if (api == GangApi::kWorkload) {
    key += '/';
    key += pod_group;
  }
  return key;
}

std::string PolicyKey(const Pod& pod) {
  return PolicyKey(pod.gang.api, pod.meta.namespace_, pod.gang.name, pod.gang.pod_group);
}

std::string GangKey(const Pod& pod) {
  std::string key = PolicyKey(pod);
  if (!key.empty() && !pod.gang.replica_key.empty()) key += "#" + pod.gang.replica_key;
  return key;
}

common::StatusOr<PodGroup> DecodePodGroup(const boost::json::value& json) {
  const json::object* o = json.if_object();
  if (o == nullptr) return decode_internal::NotAnObject("podgroup", json);
  const std::string_view version = ApiVersionOf(*o);
  GangApi api = GangApi::kNone;
  if (version == kPodGroupApiVersion) api = GangApi::kPodGroup;
  if (version == kVolcanoApiVersion) api = GangApi::kVolcano;
  if (IsNativePodGroupApiVersion(version)) api = GangApi::kNative;
  if (api == GangApi::kNone) {
    return common::InvalidArgumentError(decode_internal::Subject("podgroup", *o) +
                                        ": apiVersion: invalid value \"" + std::string(version) +
                                        "\" (want " + std::string(kPodGroupApiVersion) + ", " +
                                        std::string(kVolcanoApiVersion) + " or " +
                                        std::string(kNativePodGroupApiVersions[0]) + ")");
  }
  ObjectReader r;
  PodGroup g = api == GangApi::kNative ? DecodeNativePodGroup(r, *o, version)
                                       : DecodePodGroupObject(r, *o, api);
  if (!r.ok()) return FirstError(r, "podgroup", *o);
  return g;
}

common::StatusOr<std::vector<PodGroup>> DecodeWorkload(const boost::json::value& json) {
  const json::object* o = json.if_object();
  if (o == nullptr) return decode_internal::NotAnObject("workload", json);
  ObjectReader r;
  const FieldPath rp;
  decode_internal::CheckKind(r, *o, "Workload");
  const PodGroup workload = FromMeta(GangApi::kWorkload, decode_internal::DecodeMeta(r, *o));
  if (workload.name.empty()) {
    const FieldPath mp = rp.Key("metadata");
    r.Required(mp.Key("name"));
  }
  std::vector<PodGroup> groups;
  if (const json::object* spec = r.Object(*o, "spec", rp)) {
    const FieldPath sp = rp.Key("spec");
    groups = r.MapObjects<PodGroup>(*spec, "podGroups", sp,
                                    [&](const json::object& g, const FieldPath& ip) {
                                      return DecodeWorkloadGroup(r, g, ip, workload);
                                    });
    if (!r.Member(*spec, "podGroups")) r.Required(sp.Key("podGroups"));
  } else {
    r.Required(rp.Key("spec"));
  }
  if (!r.ok()) return FirstError(r, "workload", *o);
  return groups;
}

common::StatusOr<GangPolicyObject> DecodeGangPolicyObject(const boost::json::value& json) {
  const json::object* o = json.if_object();
  if (o == nullptr) return decode_internal::NotAnObject("podgroup", json);
  GangPolicyObject out;
  {
    ObjectReader r;
    out.meta = decode_internal::DecodeMeta(r, *o);
    if (!r.ok()) return FirstError(r, "podgroup", *o);
  }
  if (ApiVersionOf(*o) == kWorkloadApiVersion) {
    GPUSCHED_ASSIGN_OR_RETURN(std::vector<PodGroup> groups, DecodeWorkload(json));
    for (PodGroup& g : groups) out.groups.push_back(std::make_shared<const PodGroup>(std::move(g)));
    return out;
  }
  GPUSCHED_ASSIGN_OR_RETURN(PodGroup g, DecodePodGroup(json));
  out.groups.push_back(std::make_shared<const PodGroup>(std::move(g)));
  return out;
}

}  // namespace gpusched::api
