// SPDX-License-Identifier: Apache-2.0
// The field tables are those of k8s.io/api v0.35 (core/v1, apps/v1, batch/v1) for the objects the
// simulator reads; a field missing here is reported as unknown, so the tables list every field of
// those types, read or not.
#include "src/sim/checks.h"

#include <algorithm>
#include <boost/json.hpp>
#include <cctype>
#include <cstdio>
#include <optional>
#include <string_view>
#include <utility>

#include "src/api/fields.h"
#include "src/api/names.h"
#include "src/api/quantity.h"
#include "src/common/strings.h"
#include "src/config/duration.h"
#include "src/sim/replay.h"

namespace gpusched::sim {
namespace {

namespace json = boost::json;
using Fields = std::vector<std::string_view>;

const Fields kTopLevel = {"apiVersion", "kind", "metadata", "spec", "status"};
const Fields kMetadata = {"name",
                          "generateName",
                          "namespace",
                          "selfLink",
                          "uid",
                          "resourceVersion",
                          "generation",
                          "creationTimestamp",
                          "deletionTimestamp",
                          "deletionGracePeriodSeconds",
                          "labels",
                          "annotations",
                          "ownerReferences",
                          "finalizers",
                          "managedFields"};
const Fields kPodSpec = {"volumes",
                         "initContainers",
                         "containers",
                         "ephemeralContainers",
                         "restartPolicy",
                         "terminationGracePeriodSeconds",
                         "activeDeadlineSeconds",
                         "dnsPolicy",
                         "nodeSelector",
                         "serviceAccountName",
                         "serviceAccount",
                         "automountServiceAccountToken",
                         "nodeName",
                         "hostNetwork",
                         "hostPID",
                         "hostIPC",
                         "shareProcessNamespace",
                         "securityContext",
                         "imagePullSecrets",
                         "hostname",
                         "subdomain",
                         "affinity",
                         "schedulerName",
                         "tolerations",
                         "hostAliases",
                         "priorityClassName",
                         "priority",
                         "dnsConfig",
                         "readinessGates",
                         "runtimeClassName",
                         "enableServiceLinks",
                         "preemptionPolicy",
                         "overhead",
                         "topologySpreadConstraints",
                         "setHostnameAsFQDN",
                         "os",
                         "hostUsers",
                         "schedulingGates",
                         "resourceClaims",
                         "resources",
                         "hostnameOverride",
                         "workloadRef",
                         "schedulingGroup",
                         "evictionResponders"};
const Fields kContainer = {"name",
                           "image",
                           "command",
                           "args",
                           "workingDir",
                           "ports",
                           "envFrom",
                           "env",
                           "resources",
                           "resizePolicy",
                           "restartPolicy",
                           "restartPolicyRules",
                           "volumeMounts",
                           "volumeDevices",
                           "livenessProbe",
                           "readinessProbe",
                           "startupProbe",
                           "lifecycle",
                           "terminationMessagePath",
                           "terminationMessagePolicy",
                           "imagePullPolicy",
                           "securityContext",
                           "stdin",
                           "stdinOnce",
                           "tty"};
const Fields kResources = {"limits", "requests", "claims"};
const Fields kTemplate = {"metadata", "spec"};
const Fields kNodeSpec = {"podCIDR", "podCIDRs",     "providerID", "unschedulable",
                          "taints",  "configSource", "externalID"};
const Fields kNodeStatus = {"capacity",     "allocatable",     "phase",    "conditions",
                            "addresses",    "daemonEndpoints", "nodeInfo", "images",
                            "volumesInUse", "volumesAttached", "config",   "runtimeHandlers",
                            "features",     "declaredFeatures"};

// resource.k8s.io/v1 (Dynamic Resource Allocation).
const Fields kDeviceClassSpec = {"selectors", "config", "extendedResourceName"};
const Fields kTaintRuleSpec = {"deviceSelector", "taint"};
const Fields kSliceSpec = {"driver",
                           "pool",
                           "nodeName",
                           "nodeSelector",
                           "allNodes",
                           "devices",
                           "perDeviceNodeSelection",
                           "sharedCounters"};
const Fields kSlicePool = {"name", "generation", "resourceSliceCount"};
const Fields kDevice = {"name",
                        "attributes",
                        "capacity",
                        "consumesCounters",
                        "nodeName",
                        "nodeSelector",
                        "allNodes",
                        "taints",
                        "bindsToNode",
                        "bindingConditions",
                        "bindingFailureConditions",
                        "allowMultipleAllocations"};
const Fields kClaimSpec = {"devices"};
const Fields kDeviceClaim = {"requests", "constraints", "config"};
const Fields kDeviceRequest = {"name", "exactly", "firstAvailable"};
const Fields kExactRequest = {"deviceClassName", "selectors",   "allocationMode", "count",
                              "adminAccess",     "tolerations", "capacity"};
const Fields kSubRequest = {"name",  "deviceClassName", "selectors", "allocationMode",
                            "count", "tolerations",     "capacity"};
const Fields kDeviceConstraint = {"requests", "matchAttribute", "distinctAttribute"};
const Fields kClaimStatus = {"allocation", "reservedFor", "devices"};
const Fields kTemplateSpec = {"metadata", "spec"};

// The spec fields of the workload kinds (apps/v1, batch/v1).
const Fields* WorkloadSpecFields(std::string_view kind) {
  static const Fields kDeployment = {"replicas",        "selector",
                                     "template",        "strategy",
                                     "minReadySeconds", "revisionHistoryLimit",
                                     "paused",          "progressDeadlineSeconds"};
  static const Fields kReplicaSet = {"replicas", "minReadySeconds", "selector", "template"};
  static const Fields kStatefulSet = {"replicas",        "selector",
                                      "template",        "volumeClaimTemplates",
                                      "serviceName",     "podManagementPolicy",
                                      "updateStrategy",  "revisionHistoryLimit",
                                      "minReadySeconds", "persistentVolumeClaimRetentionPolicy",
                                      "ordinals"};
  static const Fields kDaemonSet = {"selector", "template", "updateStrategy", "minReadySeconds",
                                    "revisionHistoryLimit"};
  static const Fields kJob = {"parallelism",
                              "completions",
                              "activeDeadlineSeconds",
                              "podFailurePolicy",
                              "successPolicy",
                              "backoffLimit",
                              "backoffLimitPerIndex",
                              "maxFailedIndexes",
                              "selector",
                              "manualSelector",
                              "template",
                              "ttlSecondsAfterFinished",
                              "completionMode",
                              "suspend",
                              "podReplacementPolicy",
                              "managedBy"};
  if (kind == "Deployment") return &kDeployment;
  if (kind == "ReplicaSet") return &kReplicaSet;
  if (kind == "StatefulSet") return &kStatefulSet;
  if (kind == "DaemonSet") return &kDaemonSet;
  if (kind == "Job") return &kJob;
  return nullptr;
}

class Checker {
 public:
  DocumentFindings findings;

  void Document(const json::object& doc, const std::string& prefix) {
    std::string_view kind;
    if (const json::value* k = doc.if_contains("kind"); k != nullptr && k->is_string()) {
      kind = k->get_string();
    }
    if (kind == "Pod") {
      Known(doc, prefix, kTopLevel);
      Meta(doc, prefix);
      ApiVersion(doc, prefix, "v1", kind);
      ObjectName(doc, prefix, /*namespaced=*/true);
      ReplayAnnotations(doc, prefix);
      const json::object* spec = Object(doc, "spec");
      if (spec == nullptr) {
        findings.errors.push_back(prefix + "spec.containers: Required value");
      } else {
        PodSpec(*spec, prefix + "spec");
      }
    } else if (kind == "Node") {
      Known(doc, prefix, kTopLevel);
      Meta(doc, prefix);
      ApiVersion(doc, prefix, "v1", kind);
      ObjectName(doc, prefix, /*namespaced=*/false);
      if (const json::object* spec = Object(doc, "spec")) Known(*spec, prefix + "spec", kNodeSpec);
      if (const json::object* st = Object(doc, "status"))
        Known(*st, prefix + "status", kNodeStatus);
    } else if (IsDraKind(doc, kind)) {
      Dra(doc, kind, prefix);
    } else if (const Fields* spec_fields = WorkloadSpecFields(kind)) {
      Known(doc, prefix, kTopLevel);
      Meta(doc, prefix);
      ObjectName(doc, prefix, /*namespaced=*/true);
      const json::object* spec = Object(doc, "spec");
      if (spec == nullptr) return;
      const std::string sp = prefix + "spec";
      Known(*spec, sp, *spec_fields);
      const json::object* tmpl = Object(*spec, "template");
      if (tmpl == nullptr) return;
      const std::string tp = sp + ".template";
      Known(*tmpl, tp, kTemplate);
      Meta(*tmpl, tp + ".");
      ReplayAnnotations(*tmpl, tp + ".");
      if (const json::object* ps = Object(*tmpl, "spec")) PodSpec(*ps, tp + ".spec");
    } else if (const json::value* items = doc.if_contains("items");
               items != nullptr && items->is_array() && common::EndsWith(kind, "List")) {
      const json::array& a = items->get_array();
      for (size_t i = 0; i < a.size(); ++i) {
        if (const json::object* o = a[i].if_object()) {
          Document(*o, prefix + "items[" + std::to_string(i) + "].");
        }
      }
    }
  }

 private:
  static bool IsDraKind(const json::object& doc, std::string_view kind) {
    const json::value* v = doc.if_contains("apiVersion");
    if (v == nullptr || !v->is_string() || v->get_string() != "resource.k8s.io/v1") return false;
    return kind == "DeviceClass" || kind == "ResourceSlice" || kind == "ResourceClaim" ||
           kind == "ResourceClaimTemplate" || kind == "DeviceTaintRule";
  }

  // Calls f(object, path) for each object of the array `key` of `o`.
  template <typename F>
  static void EachObject(const json::object& o, std::string_view key, const std::string& path,
                         F f) {
    const json::value* v = o.if_contains(key);
    if (v == nullptr || !v->is_array()) return;
    const json::array& a = v->get_array();
    for (size_t i = 0; i < a.size(); ++i) {
      if (const json::object* item = a[i].if_object()) {
        f(*item, path + "." + std::string(key) + "[" + std::to_string(i) + "]");
      }
    }
  }

  void Dra(const json::object& doc, std::string_view kind, const std::string& prefix) {
    Known(doc, prefix, kTopLevel);
    Meta(doc, prefix);
    const json::object* spec = Object(doc, "spec");
    const std::string sp = prefix + "spec";
    if (kind == "DeviceClass") {
      if (spec != nullptr) Known(*spec, sp, kDeviceClassSpec);
    } else if (kind == "DeviceTaintRule") {
      if (spec != nullptr) Known(*spec, sp, kTaintRuleSpec);
    } else if (kind == "ResourceSlice") {
      if (spec == nullptr) return;
      Known(*spec, sp, kSliceSpec);
      if (const json::object* pool = Object(*spec, "pool")) Known(*pool, sp + ".pool", kSlicePool);
      EachObject(*spec, "devices", sp,
                 [&](const json::object& d, const std::string& dp) { Known(d, dp, kDevice); });
    } else if (kind == "ResourceClaim") {
      if (spec != nullptr) ClaimSpec(*spec, sp);
      if (const json::object* st = Object(doc, "status")) {
        Known(*st, prefix + "status", kClaimStatus);
      }
    } else if (spec != nullptr) {  // ResourceClaimTemplate
      Known(*spec, sp, kTemplateSpec);
      Meta(*spec, sp + ".");
      if (const json::object* inner = Object(*spec, "spec")) ClaimSpec(*inner, sp + ".spec");
    }
  }

  void ClaimSpec(const json::object& spec, const std::string& path) {
    Known(spec, path, kClaimSpec);
    const json::object* devices = Object(spec, "devices");
    if (devices == nullptr) return;
    const std::string dp = path + ".devices";
    Known(*devices, dp, kDeviceClaim);
    EachObject(*devices, "requests", dp, [&](const json::object& r, const std::string& rp) {
      Known(r, rp, kDeviceRequest);
      if (const json::object* e = Object(r, "exactly")) Known(*e, rp + ".exactly", kExactRequest);
      EachObject(r, "firstAvailable", rp,
                 [&](const json::object& f, const std::string& fp) { Known(f, fp, kSubRequest); });
    });
    EachObject(*devices, "constraints", dp, [&](const json::object& c, const std::string& cp) {
      Known(c, cp, kDeviceConstraint);
    });
  }

  static const json::object* Object(const json::object& o, std::string_view key) {
    const json::value* v = o.if_contains(key);
    return v == nullptr ? nullptr : v->if_object();
  }

  // An unknown member is a warning: the API server prunes it.
  void Known(const json::object& o, std::string_view path, const Fields& known) {
    if (!path.empty() && path.back() == '.') path.remove_suffix(1);
    const api::FieldPath at = api::FieldPath::Text(path);
    unknown_.CheckKnownFields(o, at, known);
    for (const std::string& w : unknown_.errors().list())
      findings.warnings.push_back(w + "; ignored");
    unknown_.errors() = api::FieldErrors();
  }

  void Meta(const json::object& o, const std::string& prefix) {
    if (const json::object* m = Object(o, "metadata")) Known(*m, prefix + "metadata", kMetadata);
  }

  // The replay's gpusched.io/arrival and gpusched.io/duration (replay.h): Go durations, not
  // negative. Checked in every run, so that all of them are reported at once, with the file.
  void ReplayAnnotations(const json::object& o, const std::string& prefix) {
    const json::object* m = Object(o, "metadata");
    const json::object* annotations = m != nullptr ? Object(*m, "annotations") : nullptr;
    if (annotations == nullptr) return;
    for (std::string_view key : {kArrivalAnnotation, kDurationAnnotation}) {
      const json::value* v = annotations->if_contains(key);
      if (v == nullptr) continue;
      const std::optional<int64_t> nanos =
          v->is_string() ? config::ParseGoDurationNanos(v->get_string()) : std::nullopt;
      if (nanos && *nanos >= 0) continue;
      Invalid(prefix + "metadata.annotations[" + std::string(key) + "]", *v,
              "want a duration such as \"90m\" or \"2h30m\"");
    }
  }

  // An apiVersion other than `want` (the only version of `kind`): the API server has no such
  // resource. Absent: accepted (a sketch; the simulator reads the kind).
  void ApiVersion(const json::object& doc, const std::string& prefix, std::string_view want,
                  std::string_view kind) {
    const json::value* v = doc.if_contains("apiVersion");
    if (v == nullptr || (v->is_string() && v->get_string() == want)) return;
    Invalid(prefix + "apiVersion", *v,
            "no matches for kind " + common::Quote(kind) + " in version " +
                common::Quote(Text(*v)) + " (want " + std::string(want) + ")");
  }

  // metadata.name (a DNS-1123 subdomain, required) and metadata.namespace (a DNS-1123 label),
  // as ValidateObjectMeta checks them. The simulator names no object: generateName alone is
  // refused.
  void ObjectName(const json::object& doc, const std::string& prefix, bool namespaced) {
    const json::object* m = Object(doc, "metadata");
    const json::value* name = m != nullptr ? m->if_contains("name") : nullptr;
    const std::string mp = prefix + "metadata.";
    if (name == nullptr || (name->is_string() && name->get_string().empty())) {
      const bool generated = m != nullptr && m->if_contains("generateName") != nullptr;
      findings.errors.push_back(mp + "name: Required value: " +
                                (generated ? "the simulator does not generate names; give one"
                                           : "name or generateName is required"));
    } else if (std::string why = api::Dns1123SubdomainError(Text(*name)); !why.empty()) {
      Invalid(mp + "name", *name, why);
    }
    const json::value* ns = m != nullptr ? m->if_contains("namespace") : nullptr;
    if (!namespaced || ns == nullptr || Text(*ns).empty()) return;
    if (std::string why = api::Dns1123LabelError(Text(*ns)); !why.empty()) {
      Invalid(mp + "namespace", *ns, why);
    }
  }

  void PodSpec(const json::object& spec, const std::string& path) {
    Known(spec, path, kPodSpec);
    const json::value* containers = spec.if_contains("containers");
    if (containers == nullptr || (containers->is_array() && containers->get_array().empty())) {
      findings.errors.push_back(path + ".containers: Required value");
    }
    for (std::string_view list : {"containers", "initContainers"}) {
      const json::value* v = spec.if_contains(list);
      if (v == nullptr || !v->is_array()) continue;
      const json::array& a = v->get_array();
      for (size_t i = 0; i < a.size(); ++i) {
        const json::object* c = a[i].if_object();
        if (c == nullptr) continue;
        const std::string cp = path + "." + std::string(list) + "[" + std::to_string(i) + "]";
        Known(*c, cp, kContainer);
        if (const json::object* res = Object(*c, "resources")) {
          Known(*res, cp + ".resources", kResources);
          Resources(*res, cp + ".resources");
        }
      }
    }
  }

  // Native resources have no domain, or one in kubernetes.io (v1helper.IsNativeResource).
  static bool IsExtended(std::string_view name) {
    if (name.find('/') == std::string_view::npos) return false;
    if (name.find("kubernetes.io/") != std::string_view::npos) return false;
    return !common::StartsWith(name, "requests.");
  }

  // ValidateResourceRequirements, for the rules that change a scheduling answer.
  void Resources(const json::object& res, const std::string& path) {
    const json::object* limits = Object(res, "limits");
    const json::object* requests = Object(res, "requests");
    for (const auto& [map, field] :
         {std::pair{limits, "limits"}, std::pair{requests, "requests"}}) {
      if (map == nullptr) continue;
      for (const auto& kv : *map) {
        const std::optional<api::Quantity> q = QuantityOf(kv.value());
        if (!q) continue;  // the decoder reports it
        const std::string at = path + "." + field + "[" + std::string(kv.key()) + "]";
        if (q->MilliValue() < 0) {
          Invalid(at, kv.value(), "must be greater than or equal to 0");
        } else if (IsExtended(kv.key()) && q->MilliValue() % 1000 != 0) {
          Invalid(at, kv.value(), "must be an integer");
        }
      }
    }
    if (requests == nullptr) return;
    for (const auto& kv : *requests) {
      const std::string name(kv.key());
      const std::optional<api::Quantity> q = QuantityOf(kv.value());
      if (!q) continue;
      const json::value* lv = limits != nullptr ? limits->if_contains(name) : nullptr;
      const std::optional<api::Quantity> limit = lv != nullptr ? QuantityOf(*lv) : std::nullopt;
      const std::string at = path + ".requests[" + name + "]";
      if (IsExtended(name)) {
        if (!limit) {
          findings.errors.push_back(path + ".limits[" + name +
                                    "]: Required value: Limit must be set for non overcommitable "
                                    "resources");
        } else if (limit->MilliValue() != q->MilliValue()) {
          Invalid(at, kv.value(), "must be equal to " + name + " limit of " + Text(*lv));
        }
      } else if ((name == "cpu" || name == "memory") && limit &&
                 q->MilliValue() > limit->MilliValue()) {
        Invalid(at, kv.value(), "must be less than or equal to " + name + " limit of " + Text(*lv));
      }
    }
  }

  void Invalid(const std::string& at, const json::value& v, const std::string& why) {
    findings.errors.push_back(at + ": Invalid value: " + common::Quote(Text(v)) + ": " + why);
  }

  // The value as written: a string as is, a number in plain notation (YAML "gpu: 0.5").
  static std::string Text(const json::value& v) {
    if (v.is_string()) return std::string(v.get_string());
    if (v.is_int64()) return std::to_string(v.get_int64());
    if (v.is_uint64()) return std::to_string(v.get_uint64());
    if (v.is_double()) {
      char buf[64];
      std::snprintf(buf, sizeof(buf), "%.15g", v.get_double());
      return buf;
    }
    return json::serialize(v);
  }

  static std::optional<api::Quantity> QuantityOf(const json::value& v) {
    if (!v.is_string() && !v.is_number()) return std::nullopt;
    auto q = api::Quantity::Parse(Text(v));
    if (!q.ok()) return std::nullopt;
    return *q;
  }

  static constexpr api::Dialect kWarnings{api::PathStyle::kBracketed};
  api::JsonReader unknown_{kWarnings};  // finds the unknown members (Known)
};

}  // namespace

DocumentFindings CheckDocument(const boost::json::value& document) {
  Checker c;
  if (const json::object* o = document.if_object()) c.Document(*o, "");
  return std::move(c.findings);
}

}  // namespace gpusched::sim
