// SPDX-License-Identifier: Apache-2.0
#include "src/kube/client/api_writer.h"

#include <spdlog/spdlog.h>

#include <boost/json.hpp>
#include <cstdio>
#include <cstring>
#include <span>

#include "src/api/decode.h"
#include "src/api/decode_dra.h"
#include "src/api/names.h"
#include "src/common/interner.h"
#include "src/common/logging.h"
#include "src/common/strings.h"
#include "src/kube/client/encoding.h"

namespace gpusched::kube::client {
namespace {

namespace json = boost::json;

common::Status CheckPodNames(const api::Pod& pod) {
  if (!api::IsDns1123Subdomain(pod.meta.namespace_) || !api::IsDns1123Subdomain(pod.meta.name)) {
    return common::InvalidArgumentError("pod " + common::Quote(pod.Key()) +
                                        ": namespace and name must be DNS-1123 names");
  }
  return common::Status::Ok();
}

const api::Condition* FindCondition(const std::vector<api::Condition>& conditions,
                                    std::string_view type) {
  for (const auto& c : conditions) {
    if (c.type == type) return &c;
  }
  return nullptr;
}

}  // namespace

std::string PodPath(std::string_view ns, std::string_view name) {
  return "/api/v1/namespaces/" + std::string(ns) + "/pods/" + std::string(name);
}

json::object BuildBinding(const api::Pod& pod, std::string_view node,
                          const std::vector<std::pair<std::string, std::string>>& annotations) {
  json::object meta;
  meta["name"] = pod.meta.name;
  meta["namespace"] = pod.meta.namespace_;
  if (!pod.meta.uid.empty()) meta["uid"] = pod.meta.uid;
  if (!annotations.empty()) {
    json::object a;
    for (const auto& [k, v] : annotations) a[k] = v;
    meta["annotations"] = std::move(a);
  }
  json::object target;
  target["apiVersion"] = "v1";
  target["kind"] = "Node";
  target["name"] = node;
  json::object binding;
  binding["apiVersion"] = "v1";
  binding["kind"] = "Binding";
  binding["metadata"] = std::move(meta);
  binding["target"] = std::move(target);
  return binding;
}

json::object BuildUnschedulablePatch(const api::Pod& pod, std::string_view reason,
                                     std::string_view message, common::TimePoint now) {
  const api::Condition* old = FindCondition(pod.conditions, "PodScheduled");
  bool same_condition =
      old != nullptr && old->status == "False" && old->reason == reason && old->message == message;
  // The caller may have set nominated_node_name on the copy it passes: with one set, always
  // write (the patch is idempotent); without, an unchanged condition needs no write.
  if (same_condition && pod.nominated_node_name.empty()) return {};

  common::TimePoint transition = now;
  if (old != nullptr && old->status == "False" && old->last_transition_time) {
    transition = *old->last_transition_time;
  }
  json::object cond;
  cond["type"] = "PodScheduled";
  cond["status"] = "False";
  cond["reason"] = reason;
  cond["message"] = message;
  cond["lastProbeTime"] = nullptr;
  cond["lastTransitionTime"] = FormatRfc3339(transition);
  json::array conditions;
  conditions.push_back(std::move(cond));
  json::object status;
  status["conditions"] = std::move(conditions);
  if (!pod.nominated_node_name.empty()) status["nominatedNodeName"] = pod.nominated_node_name;
  json::object patch;
  patch["status"] = std::move(status);
  return patch;
}

json::object BuildConditionPatch(const api::Pod& pod, const api::Condition& condition,
                                 common::TimePoint now) {
  const api::Condition* old = FindCondition(pod.conditions, condition.type);
  if (old != nullptr && old->status == condition.status && old->reason == condition.reason &&
      old->message == condition.message) {
    return {};  // the pod already says so
  }
  // v1 pod UpdatePodCondition: the transition time moves only when the status changes.
  common::TimePoint transition = now;
  if (condition.last_transition_time) {
    transition = *condition.last_transition_time;
  } else if (old != nullptr && old->status == condition.status && old->last_transition_time) {
    transition = *old->last_transition_time;
  }
  json::object cond;
  cond["type"] = condition.type;
  cond["status"] = condition.status;
  if (!condition.reason.empty()) cond["reason"] = condition.reason;
  if (!condition.message.empty()) cond["message"] = condition.message;
  cond["lastTransitionTime"] = FormatRfc3339(transition);
  json::array conditions;
  conditions.push_back(std::move(cond));
  json::object status;
  status["conditions"] = std::move(conditions);
  json::object patch;
  patch["status"] = std::move(status);
  return patch;
}

json::object BuildDeleteOptions(const api::Pod& pod) {
  json::object options;
  if (pod.meta.uid.empty()) return options;
  json::object preconditions;
  preconditions["uid"] = pod.meta.uid;
  options["preconditions"] = std::move(preconditions);
  return options;
}

json::object BuildEviction(const api::Pod& pod) {
  json::object meta;
  meta["name"] = pod.meta.name;
  meta["namespace"] = pod.meta.namespace_;
  json::object eviction;
  eviction["apiVersion"] = "policy/v1";
  eviction["kind"] = "Eviction";
  eviction["metadata"] = std::move(meta);
  eviction["deleteOptions"] = BuildDeleteOptions(pod);
  return eviction;
}

json::object BuildNominatedNodePatch(std::string_view node) {
  json::object status;
  if (node.empty()) {
    status["nominatedNodeName"] = nullptr;
  } else {
    status["nominatedNodeName"] = node;
  }
  json::object patch;
  patch["status"] = std::move(status);
  return patch;
}

json::object BuildEvent(const EventRecord& event, std::string_view reporting_instance,
                        common::TimePoint now) {
  // Named "<pod>.<unix nanos in hex>" as client-go's events recorder does. generateName is no
  // option: the API server validates it as a DNS-1123 subdomain, which "<pod>." is not.
  char suffix[24];
  std::snprintf(suffix, sizeof suffix, ".%llx",
                static_cast<unsigned long long>(now.time_since_epoch().count()));
  std::string name = event.pod_name.substr(0, 253 - std::strlen(suffix));
  while (!name.empty() && (name.back() == '.' || name.back() == '-')) name.pop_back();
  json::object meta;
  meta["name"] = name + suffix;
  meta["namespace"] = event.namespace_;
  json::object regarding;
  regarding["apiVersion"] = "v1";
  regarding["kind"] = "Pod";
  regarding["namespace"] = event.namespace_;
  regarding["name"] = event.pod_name;
  if (!event.pod_uid.empty()) regarding["uid"] = event.pod_uid;
  json::object e;
  e["apiVersion"] = "events.k8s.io/v1";
  e["kind"] = "Event";
  e["metadata"] = std::move(meta);
  e["eventTime"] = FormatRfc3339Micro(now);
  e["reportingController"] = event.reporting_controller;
  std::string instance(reporting_instance.empty() ? std::string_view(event.reporting_controller)
                                                  : reporting_instance);
  if (instance.size() > 128) instance.resize(128);
  e["reportingInstance"] = instance;
  e["action"] = event.action;
  e["reason"] = event.reason;
  e["type"] = event.type;
  e["note"] = TruncateEventNote(event.note);
  e["regarding"] = std::move(regarding);
  return e;
}

KubeApiClient::KubeApiClient(RestClient& rest, const common::Clock& clock,
                             KubeApiClientOptions options)
    : rest_(rest), clock_(clock), options_(std::move(options)) {}

common::StatusOr<json::value> KubeApiClient::Send(Request request) {
  auto r = rest_.Do(request);
  if (!r.ok()) return r.status();
  GPUSCHED_RETURN_IF_ERROR(StatusFromResponse(request, *r));
  if (common::Trim(r->body).empty()) return json::value(nullptr);
  auto parsed = api::ParseJson(r->body, request.method + " " + request.path + " response");
  if (!parsed.ok()) return parsed.status();
  return std::move(parsed).value();
}

common::Status KubeApiClient::Write(Request request) {
  auto r = rest_.Do(request);
  if (!r.ok()) return r.status();
  return StatusFromResponse(request, *r);
}

namespace {

Request JsonRequest(std::string method, std::string_view path, const json::value& body,
                    std::string_view content_type = "application/json") {
  Request req;
  req.method = std::move(method);
  req.path = std::string(path);
  req.body = json::serialize(body);
  req.content_type = std::string(content_type);
  return req;
}

}  // namespace

common::StatusOr<json::value> KubeApiClient::GetJson(
    std::string_view path, const std::vector<std::pair<std::string, std::string>>& query) {
  Request req;
  req.method = "GET";
  req.path = std::string(path);
  req.query = query;
  return Send(std::move(req));
}

common::StatusOr<json::value> KubeApiClient::PatchJson(std::string_view path,
                                                       const json::value& patch,
                                                       std::string_view content_type) {
  return Send(JsonRequest("PATCH", path, patch, content_type));
}

common::StatusOr<json::value> KubeApiClient::PatchMergeJson(std::string_view path,
                                                            const json::value& patch) {
  return PatchJson(path, patch, "application/merge-patch+json");
}

common::StatusOr<json::value> KubeApiClient::PostJson(std::string_view path,
                                                      const json::value& body) {
  return Send(JsonRequest("POST", path, body));
}

common::Status KubeApiClient::BindPod(
    const api::Pod& pod, std::string_view node,
    const std::vector<std::pair<std::string, std::string>>& annotations) {
  GPUSCHED_RETURN_IF_ERROR(CheckPodNames(pod));
  if (!api::IsDns1123Subdomain(node)) {
    return common::InvalidArgumentError("binding " + pod.Key() + ": node name " +
                                        common::Quote(node) + " is not a DNS-1123 name");
  }
  common::Status s =
      Write(JsonRequest("POST", PodPath(pod.meta.namespace_, pod.meta.name) + "/binding",
                        BuildBinding(pod, node, annotations)));
  if (s.ok()) return s;
  return VerifyFailedBind(pod, node, annotations, s);
}

common::Status KubeApiClient::VerifyFailedBind(
    const api::Pod& pod, std::string_view node,
    const std::vector<std::pair<std::string, std::string>>& annotations,
    const common::Status& failure) {
  const std::string path = PodPath(pod.meta.namespace_, pod.meta.name);
  common::StatusOr<json::value> got = GetJson(path);
  for (int read = 1; !got.ok() && got.status().code() != common::StatusCode::kNotFound &&
                     options_.wait != nullptr && read < options_.bind_verify_reads;
       ++read) {
    options_.wait(options_.bind_verify_interval);
    got = GetJson(path);
  }
  if (!got.ok()) {
    if (got.status().code() == common::StatusCode::kNotFound) {
      return common::NotFoundError("binding " + pod.Key() + ": the pod no longer exists");
    }
    return common::Status(failure.code(),
                          std::string(failure.message()) +
                              "; reading the pod back: " + std::string(got.status().message()));
  }
  common::StatusOr<api::Pod> stored = api::DecodePod(*got);
  if (!stored.ok()) {
    return common::Status(failure.code(),
                          std::string(failure.message()) +
                              "; reading the pod back: " + std::string(stored.status().message()));
  }
  const std::string_view uid = stored->meta.uid;
  const std::string_view bound = stored->node_name;
  if (!pod.meta.uid.empty() && uid != pod.meta.uid) {
    return common::AbortedError("binding " + pod.Key() + ": the pod was replaced (uid " +
                                common::Quote(uid) + ", expected " + common::Quote(pod.meta.uid) +
                                ")");
  }
  if (bound.empty()) return failure;
  if (bound != node) {
    return common::AbortedError("binding " + pod.Key() + " to " + std::string(node) +
                                ": already bound to " + std::string(bound));
  }
  // Bound to our node: our earlier attempt went through. Make sure the annotations did too.
  json::object missing;
  for (const auto& [k, v] : annotations) {
    const std::string* have = stored->meta.Annotation(k);
    if (have == nullptr || *have != v) missing[k] = v;
  }
  if (common::V(2))
    spdlog::info("binding {}: already bound to {} (a retried request)", pod.Key(), node);
  if (missing.empty()) return common::Status::Ok();
  json::object meta;
  meta["annotations"] = std::move(missing);
  json::object patch;
  patch["metadata"] = std::move(meta);
  common::Status patched = Write(JsonRequest("PATCH", path, patch, "application/merge-patch+json"));
  if (!patched.ok()) return patched.WithContext("binding " + pod.Key() + ": annotating");
  return common::Status::Ok();
}

common::Status KubeApiClient::SetPodUnschedulable(const api::Pod& pod, std::string_view reason,
                                                  std::string_view message) {
  GPUSCHED_RETURN_IF_ERROR(CheckPodNames(pod));
  json::object patch = BuildUnschedulablePatch(pod, reason, message, clock_.Now());
  if (patch.empty()) return common::Status::Ok();  // the pod already says so
  return Write(JsonRequest("PATCH", PodPath(pod.meta.namespace_, pod.meta.name) + "/status", patch,
                           "application/strategic-merge-patch+json"));
}

common::Status KubeApiClient::PatchPodCondition(const api::Pod& pod,
                                                const api::Condition& condition) {
  GPUSCHED_RETURN_IF_ERROR(CheckPodNames(pod));
  if (condition.type.empty() || condition.status.empty()) {
    return common::InvalidArgumentError("pod " + pod.Key() +
                                        ": a condition needs a type and a status");
  }
  json::object patch = BuildConditionPatch(pod, condition, clock_.Now());
  if (patch.empty()) return common::Status::Ok();
  return Write(JsonRequest("PATCH", PodPath(pod.meta.namespace_, pod.meta.name) + "/status", patch,
                           "application/strategic-merge-patch+json"));
}

common::Status KubeApiClient::DeletePod(const api::Pod& pod) {
  GPUSCHED_RETURN_IF_ERROR(CheckPodNames(pod));
  common::Status s = Write(
      JsonRequest("DELETE", PodPath(pod.meta.namespace_, pod.meta.name), BuildDeleteOptions(pod)));
  // 409 on a DELETE is a failed precondition: the pod of that name has another uid now.
  if (s.code() == common::StatusCode::kAborted) {
    return common::NotFoundError("deleting pod " + pod.Key() + " (uid " +
                                 common::Quote(pod.meta.uid) +
                                 "): the pod was replaced: " + std::string(s.message()));
  }
  return s;
}

common::Status KubeApiClient::EvictPod(const api::Pod& pod) {
  GPUSCHED_RETURN_IF_ERROR(CheckPodNames(pod));
  Request req = JsonRequest("POST", PodPath(pod.meta.namespace_, pod.meta.name) + "/eviction",
                            BuildEviction(pod));
  req.retry_too_many_requests = false;  // a disruption budget's refusal is the answer
  common::Status s = Write(std::move(req));
  if (s.code() == common::StatusCode::kAborted) {
    return common::NotFoundError("evicting pod " + pod.Key() + " (uid " +
                                 common::Quote(pod.meta.uid) +
                                 "): the pod was replaced: " + std::string(s.message()));
  }
  return s;
}

common::Status KubeApiClient::SetNominatedNodeName(const api::Pod& pod, std::string_view node) {
  GPUSCHED_RETURN_IF_ERROR(CheckPodNames(pod));
  if (pod.nominated_node_name == node) return common::Status::Ok();
  if (!node.empty() && !api::IsDns1123Subdomain(node)) {
    return common::InvalidArgumentError("pod " + pod.Key() + ": nominated node name " +
                                        common::Quote(node) + " is not a DNS-1123 name");
  }
  return Write(JsonRequest("PATCH", PodPath(pod.meta.namespace_, pod.meta.name) + "/status",
                           BuildNominatedNodePatch(node),
                           "application/strategic-merge-patch+json"));
}

common::Status KubeApiClient::UpdatePodGroupStatus(const api::PodGroup& group,
                                                   const api::PodGroupStatus& status) {
  if (group.api == api::GangApi::kWorkload || group.api == api::GangApi::kNone) {
    return common::Status::Ok();  // a Workload has no status
  }
  if (!api::IsDns1123Subdomain(group.namespace_) || !api::IsDns1123Subdomain(group.name)) {
    return common::InvalidArgumentError("podgroup " + group.namespace_ + "/" + group.name +
                                        ": not a DNS-1123 name");
  }
  // A CRD takes no strategic merge patch; the native PodGroup's conditions need one.
  return Write(JsonRequest(
      "PATCH", PodGroupStatusPath(group), BuildPodGroupStatusPatch(group, status, clock_.Now()),
      group.api == api::GangApi::kNative ? "application/strategic-merge-patch+json"
                                         : "application/merge-patch+json"));
}

common::Status KubeApiClient::CreateEvent(const EventRecord& event) {
  if (!api::IsDns1123Subdomain(event.namespace_)) {
    return common::InvalidArgumentError("event: namespace " + common::Quote(event.namespace_) +
                                        " is not a DNS-1123 name");
  }
  EventRecord e = event;
  if (e.reporting_controller.empty())
    e.reporting_controller = options_.default_reporting_controller;
  if (e.event_time == common::TimePoint{}) e.event_time = clock_.Now();
  json::object body = BuildEvent(e, options_.reporting_instance, e.event_time);
  common::Status s = Write(JsonRequest(
      "POST", "/apis/events.k8s.io/v1/namespaces/" + event.namespace_ + "/events", body));
  // The event's name comes from its time: a conflict means an earlier send of this record (one
  // whose answer was lost) was written.
  if (s.code() == common::StatusCode::kAborted) return common::Status::Ok();
  return s;
}

namespace {}  // namespace

json::object BuildBindPvPatch(const api::PersistentVolume& pv, bool bound_by_controller) {
  json::object meta;
  if (!pv.meta.resource_version.empty()) meta["resourceVersion"] = pv.meta.resource_version;
  if (bound_by_controller) {
    meta["annotations"] = json::object{{std::string(api::kAnnBoundByController), "yes"}};
  }
  json::object ref{{"kind", "PersistentVolumeClaim"}, {"apiVersion", "v1"}};
  if (pv.claim_ref) {
    ref["namespace"] = pv.claim_ref->namespace_;
    ref["name"] = pv.claim_ref->name;
    ref["uid"] = pv.claim_ref->uid;
  }
  return json::object{{"metadata", std::move(meta)},
                      {"spec", json::object{{"claimRef", std::move(ref)}}}};
}

json::object BuildSelectedNodePatch(const api::PersistentVolumeClaim& pvc, std::string_view node) {
  json::object meta;
  if (!pvc.meta.resource_version.empty()) meta["resourceVersion"] = pvc.meta.resource_version;
  meta["annotations"] = json::object{{std::string(api::kAnnSelectedNode), node}};
  return json::object{{"metadata", std::move(meta)}};
}

common::StatusOr<std::string> KubeApiClient::BindPersistentVolume(const api::PersistentVolume& pv,
                                                                  bool bound_by_controller) {
  if (!api::IsDns1123Subdomain(pv.name()) || !pv.claim_ref) {
    return common::InvalidArgumentError("persistentvolume " + common::Quote(pv.name()) +
                                        ": not a DNS-1123 name, or no claimRef to write");
  }
  GPUSCHED_ASSIGN_OR_RETURN(
      json::value answer,
      Send(JsonRequest("PATCH", "/api/v1/persistentvolumes/" + pv.name(),
                       BuildBindPvPatch(pv, bound_by_controller), "application/merge-patch+json")));
  return std::string(api::MetaString(answer, "resourceVersion"));
}

common::StatusOr<std::string> KubeApiClient::SetPvcSelectedNode(
    const api::PersistentVolumeClaim& pvc, std::string_view node) {
  if (!api::IsDns1123Subdomain(pvc.namespace_()) || !api::IsDns1123Subdomain(pvc.name()) ||
      !api::IsDns1123Subdomain(node)) {
    return common::InvalidArgumentError("persistentvolumeclaim " + pvc.namespace_() + "/" +
                                        pvc.name() + " or node " + common::Quote(node) +
                                        ": not a DNS-1123 name");
  }
  GPUSCHED_ASSIGN_OR_RETURN(
      json::value answer,
      Send(JsonRequest(
          "PATCH",
          "/api/v1/namespaces/" + pvc.namespace_() + "/persistentvolumeclaims/" + pvc.name(),
          BuildSelectedNodePatch(pvc, node), "application/merge-patch+json")));
  return std::string(api::MetaString(answer, "resourceVersion"));
}

std::string ResourceClaimPath(std::string_view ns, std::string_view name) {
  return "/apis/resource.k8s.io/v1/namespaces/" + std::string(ns) + "/resourceclaims/" +
         std::string(name);
}

namespace {

// metadata.finalizers of an object as read (empty when it has none).
std::span<const json::value> Finalizers(const json::value& stored) {
  if (const json::object* o = stored.if_object()) {
    if (const json::value* meta = o->if_contains("metadata");
        meta != nullptr && meta->is_object()) {
      if (const json::value* f = meta->as_object().if_contains("finalizers");
          f != nullptr && f->is_array()) {
        return {f->as_array().data(), f->as_array().size()};
      }
    }
  }
  return {};
}

}  // namespace

json::object BuildClaimFinalizerPatch(const json::value& stored) {
  json::array finalizers;
  for (const json::value& v : Finalizers(stored)) {
    if (v.is_string() && v.as_string() == kResourceClaimFinalizer) return {};
    finalizers.push_back(v);
  }
  finalizers.emplace_back(kResourceClaimFinalizer);
  json::object meta;
  meta["resourceVersion"] = api::MetaString(stored, "resourceVersion");
  meta["finalizers"] = std::move(finalizers);
  return json::object{{"metadata", std::move(meta)}};
}

namespace {

std::string_view SelectorOpName(api::SelectorOp op) {
  switch (op) {
    case api::SelectorOp::kIn: return "In";
    case api::SelectorOp::kNotIn: return "NotIn";
    case api::SelectorOp::kExists: return "Exists";
    case api::SelectorOp::kDoesNotExist: return "DoesNotExist";
    case api::SelectorOp::kGt: return "Gt";
    case api::SelectorOp::kLt: return "Lt";
  }
  return "In";
}

json::object EncodeNodeSelector(const api::NodeSelector& selector) {
  json::array terms;
  for (const api::NodeSelectorTerm& t : selector.terms) {
    json::object term;
    if (!t.match_expressions.empty()) {
      json::array exprs;
      for (const api::Requirement& r : t.match_expressions) {
        json::object e{{"key", common::Str(r.key)}, {"operator", SelectorOpName(r.op)}};
        json::array values;
        if (r.op == api::SelectorOp::kGt || r.op == api::SelectorOp::kLt) {
          values.emplace_back(std::to_string(r.number));
        } else {
          for (common::Atom v : r.values) values.emplace_back(common::Str(v));
        }
        if (!values.empty()) e["values"] = std::move(values);
        exprs.push_back(std::move(e));
      }
      term["matchExpressions"] = std::move(exprs);
    }
    json::array fields;
    auto add_fields = [&](const std::vector<std::string>& names, std::string_view op) {
      if (names.empty()) return;
      json::array values;
      for (const std::string& n : names) values.emplace_back(n);
      fields.push_back(
          json::object{{"key", "metadata.name"}, {"operator", op}, {"values", std::move(values)}});
    };
    add_fields(t.match_fields_names_in, "In");
    add_fields(t.match_fields_names_not_in, "NotIn");
    if (!fields.empty()) term["matchFields"] = std::move(fields);
    terms.push_back(std::move(term));
  }
  return json::object{{"nodeSelectorTerms", std::move(terms)}};
}

}  // namespace

json::object EncodeAllocation(const api::AllocationResult& allocation) {
  json::array results;
  for (const api::DeviceResult& r : allocation.devices) {
    json::object o{
        {"request", r.request}, {"driver", r.driver}, {"pool", r.pool}, {"device", r.device}};
    if (r.admin_access) o["adminAccess"] = true;
    if (!r.share_id.empty()) o["shareID"] = r.share_id;
    if (!r.consumed_capacity.empty()) {
      json::object consumed;
      for (const auto& [name, amount] : r.consumed_capacity) {
        // The driver's own capacities as it publishes them: without its domain.
        std::string_view n = name;
        if (n.size() > r.driver.size() + 1 && n.starts_with(r.driver) &&
            n[r.driver.size()] == '/') {
          n.remove_prefix(r.driver.size() + 1);
        }
        consumed[n] = amount.ToString();
      }
      o["consumedCapacity"] = std::move(consumed);
    }
    results.push_back(std::move(o));
  }
  json::object out{{"devices", json::object{{"results", std::move(results)}}}};
  if (allocation.node_selector) out["nodeSelector"] = EncodeNodeSelector(*allocation.node_selector);
  return out;
}

json::object BuildClaimStatusPatch(const api::ResourceClaim& claim,
                                   std::string_view resource_version, bool with_allocation) {
  json::object status;
  if (with_allocation && claim.allocation)
    status["allocation"] = EncodeAllocation(*claim.allocation);
  json::array reserved;
  for (const api::ClaimConsumer& c : claim.reserved_for) {
    json::object who{{"resource", c.resource}, {"name", c.name}, {"uid", c.uid}};
    if (!c.api_group.empty()) who["apiGroup"] = c.api_group;
    reserved.push_back(std::move(who));
  }
  status["reservedFor"] = std::move(reserved);
  json::object meta;
  if (!resource_version.empty()) meta["resourceVersion"] = resource_version;
  return json::object{{"metadata", std::move(meta)}, {"status", std::move(status)}};
}

common::StatusOr<api::ResourceClaimPtr> KubeApiClient::UpdateResourceClaimStatus(
    const api::ResourceClaim& claim) {
  const std::string what = "resourceclaim " + claim.meta.namespace_ + "/" + claim.meta.name;
  if (!api::IsDns1123Subdomain(claim.meta.namespace_) ||
      !api::IsDns1123Subdomain(claim.meta.name)) {
    return common::InvalidArgumentError(what + ": namespace and name must be DNS-1123 names");
  }
  const std::string path = ResourceClaimPath(claim.meta.namespace_, claim.meta.name);
  common::StatusOr<json::value> stored = GetJson(path);
  if (!stored.ok()) return stored.status().WithContext(what);
  // The claim changed since the scheduler read it: upstream's Update would conflict too.
  const std::string_view stored_rv = api::MetaString(*stored, "resourceVersion");
  const std::string_view stored_uid = api::MetaString(*stored, "uid");
  if (!claim.meta.uid.empty() && stored_uid != claim.meta.uid) {
    return common::AbortedError(what + ": replaced (uid " + std::string(stored_uid) + ", want " +
                                claim.meta.uid + ")");
  }
  if (!claim.meta.resource_version.empty() && stored_rv != claim.meta.resource_version) {
    return common::AbortedError(what + ": changed (resourceVersion " + std::string(stored_rv) +
                                ", scheduled against " + claim.meta.resource_version + ")");
  }
  if (json::object patch = BuildClaimFinalizerPatch(*stored); !patch.empty()) {
    stored = Send(JsonRequest("PATCH", path, patch, "application/merge-patch+json"));
    if (!stored.ok()) return stored.status().WithContext(what + ": adding finalizer");
  }
  const json::value* allocation = nullptr;
  if (const json::object* o = stored->if_object()) {
    if (const json::value* st = o->if_contains("status"); st != nullptr && st->is_object()) {
      allocation = st->as_object().if_contains("allocation");
    }
  }
  const bool with_allocation = allocation == nullptr || allocation->is_null();
  json::object patch =
      BuildClaimStatusPatch(claim, api::MetaString(*stored, "resourceVersion"), with_allocation);
  common::StatusOr<json::value> answer =
      Send(JsonRequest("PATCH", path + "/status", patch, "application/merge-patch+json"));
  if (!answer.ok()) return answer.status().WithContext(what + ": writing status");
  common::StatusOr<api::ResourceClaim> decoded = api::DecodeResourceClaim(*answer);
  if (!decoded.ok()) return decoded.status().WithContext(what + ": the stored claim");
  return api::ResourceClaimPtr(std::make_shared<const api::ResourceClaim>(*std::move(decoded)));
}

json::object EncodeClaimForCreate(const api::ResourceClaim& claim) {
  json::object meta{{"name", claim.meta.name}, {"namespace", claim.meta.namespace_}};
  if (!claim.meta.owner_references.empty()) {
    json::array owners;
    for (const api::OwnerReference& r : claim.meta.owner_references) {
      json::object o{
          {"apiVersion", r.api_version}, {"kind", r.kind}, {"name", r.name}, {"uid", r.uid}};
      if (r.controller) o["controller"] = true;
      owners.push_back(std::move(o));
    }
    meta["ownerReferences"] = std::move(owners);
  }
  if (!claim.meta.annotations.empty()) {
    json::object annotations;
    for (const auto& [k, v] : claim.meta.annotations) annotations[k] = v;
    meta["annotations"] = std::move(annotations);
  }
  json::array requests;
  for (const api::DeviceRequest& r : claim.spec.requests) {
    json::object req{{"name", r.name}};
    if (r.exactly) {
      const api::DeviceChoice& c = *r.exactly;
      json::object exactly{{"deviceClassName", c.device_class}};
      if (c.mode == api::AllocationMode::kAll) {
        exactly["allocationMode"] = "All";
      } else {
        exactly["allocationMode"] = "ExactCount";
        exactly["count"] = c.count;
      }
      req["exactly"] = std::move(exactly);
    }
    requests.push_back(std::move(req));
  }
  return json::object{{"apiVersion", "resource.k8s.io/v1"},
                      {"kind", "ResourceClaim"},
                      {"metadata", std::move(meta)},
                      {"spec", json::object{{"devices", json::object{{"requests", requests}}}}}};
}

json::object BuildExtendedResourceClaimStatusPatch(
    const api::PodExtendedResourceClaimStatus& status) {
  json::array mappings;
  for (const api::ContainerExtendedResourceRequest& m : status.request_mappings) {
    mappings.push_back(json::object{{"containerName", m.container_name},
                                    {"resourceName", m.resource_name},
                                    {"requestName", m.request_name}});
  }
  json::object ext{{"requestMappings", std::move(mappings)},
                   {"resourceClaimName", status.resource_claim_name}};
  return json::object{{"status", json::object{{"extendedResourceClaimStatus", std::move(ext)}}}};
}

common::StatusOr<api::ResourceClaimPtr> KubeApiClient::CreateResourceClaim(
    const api::ResourceClaim& claim) {
  const std::string what = "resourceclaim " + claim.meta.namespace_ + "/" + claim.meta.name;
  if (!api::IsDns1123Subdomain(claim.meta.namespace_) ||
      !api::IsDns1123Subdomain(claim.meta.name)) {
    return common::InvalidArgumentError(what + ": namespace and name must be DNS-1123 names");
  }
  common::StatusOr<json::value> answer = Send(JsonRequest(
      "POST", "/apis/resource.k8s.io/v1/namespaces/" + claim.meta.namespace_ + "/resourceclaims",
      EncodeClaimForCreate(claim)));
  if (!answer.ok()) return answer.status().WithContext("creating " + what);
  common::StatusOr<api::ResourceClaim> decoded = api::DecodeResourceClaim(*answer);
  if (!decoded.ok()) return decoded.status().WithContext(what + ": the stored claim");
  return api::ResourceClaimPtr(std::make_shared<const api::ResourceClaim>(*std::move(decoded)));
}

common::Status KubeApiClient::DeleteResourceClaim(const api::ResourceClaim& claim) {
  const std::string what = "resourceclaim " + claim.meta.namespace_ + "/" + claim.meta.name;
  if (!api::IsDns1123Subdomain(claim.meta.namespace_) ||
      !api::IsDns1123Subdomain(claim.meta.name)) {
    return common::InvalidArgumentError(what + ": namespace and name must be DNS-1123 names");
  }
  const auto gone = [](const common::Status& s) {
    return s.code() == common::StatusCode::kNotFound;
  };
  const std::string path = ResourceClaimPath(claim.meta.namespace_, claim.meta.name);
  common::StatusOr<json::value> stored = GetJson(path);
  if (!stored.ok()) return gone(stored.status()) ? common::Status::Ok() : stored.status();
  json::array kept;
  bool had = false;
  for (const json::value& v : Finalizers(*stored)) {
    if (v.is_string() && v.as_string() == kResourceClaimFinalizer) {
      had = true;
    } else {
      kept.push_back(v);
    }
  }
  if (had) {
    json::object meta{{"resourceVersion", api::MetaString(*stored, "resourceVersion")},
                      {"finalizers", std::move(kept)}};
    common::Status s = Write(JsonRequest("PATCH", path, json::object{{"metadata", meta}},
                                         "application/merge-patch+json"));
    if (!s.ok() && !gone(s)) return s.WithContext(what + ": removing finalizer");
  }
  json::object options;
  if (const std::string_view uid = api::MetaString(*stored, "uid"); !uid.empty()) {
    options["preconditions"] = json::object{{"uid", uid}};
  }
  common::Status s = Write(JsonRequest("DELETE", path, options));
  if (!s.ok() && !gone(s)) return s.WithContext("deleting " + what);
  return common::Status::Ok();
}

common::Status KubeApiClient::SetPodExtendedResourceClaimStatus(
    const api::Pod& pod, const api::PodExtendedResourceClaimStatus& status) {
  GPUSCHED_RETURN_IF_ERROR(CheckPodNames(pod));
  return Write(JsonRequest("PATCH", PodPath(pod.meta.namespace_, pod.meta.name) + "/status",
                           BuildExtendedResourceClaimStatusPatch(status),
                           "application/merge-patch+json"));
}

}  // namespace gpusched::kube::client
