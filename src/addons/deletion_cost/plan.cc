// SPDX-License-Identifier: Apache-2.0
#include "src/addons/deletion_cost/plan.h"

#include <boost/json.hpp>
#include <ctime>
#include <set>
#include <sstream>

#include "src/api/decode.h"
#include "src/common/strings.h"

namespace gpusched::addons::deletion_cost {
namespace {

namespace json = boost::json;

// True when `ref` points at `w` (by UID; by kind and name for manifests without UIDs).
bool RefersTo(const api::OwnerReference& ref, const WorkloadFacts& w) {
  if (!ref.uid.empty() && !w.uid.empty()) return ref.uid == w.uid;
  return ref.kind == w.kind && ref.name == w.name;
}

bool SameOwner(const api::OwnerReference& a, const api::OwnerReference& b) {
  if (!a.uid.empty() && !b.uid.empty()) return a.uid == b.uid;
  return a.kind == b.kind && a.name == b.name;
}

std::string Age(common::TimePoint now, const std::optional<common::TimePoint>& t) {
  if (!t) return "-";
  int64_t s = std::chrono::duration_cast<std::chrono::seconds>(now - *t).count();
  if (s < 0) return "future";
  if (s < 120) return std::to_string(s) + "s";
  if (s < 7200) return std::to_string(s / 60) + "m" + std::to_string(s % 60) + "s";
  if (s < 172800) return std::to_string(s / 3600) + "h" + std::to_string((s % 3600) / 60) + "m";
  return std::to_string(s / 86400) + "d";
}

std::string Pad(std::string s, size_t w) {
  if (s.size() < w) s.append(w - s.size(), ' ');
  return s;
}

bool InNamespace(const json::value& v, const std::string& ns) {
  return api::MetaString(v, "namespace") == ns;
}

common::StatusOr<std::vector<WorkloadFacts>> DecodeReplicaSets(const ClusterObjects& objects,
                                                               const std::string& ns) {
  std::vector<WorkloadFacts> replicasets;
  for (const json::value& v : objects.replicasets) {
    if (!InNamespace(v, ns)) continue;
    GPUSCHED_ASSIGN_OR_RETURN(WorkloadFacts w, DecodeWorkload(v));
    replicasets.push_back(std::move(w));
  }
  return replicasets;
}

common::StatusOr<std::vector<PodFacts>> DecodePods(const ClusterObjects& objects,
                                                   const std::string& ns) {
  std::vector<PodFacts> pods;
  for (const json::value& v : objects.pods) {
    if (!InNamespace(v, ns)) continue;
    GPUSCHED_ASSIGN_OR_RETURN(PodFacts p, DecodePodFacts(v));
    pods.push_back(std::move(p));
  }
  return pods;
}

// The Deployment's only ReplicaSet with replicas > 0 (refused during a rollout), and the
// Deployment as its owner.
common::Status PickDeploymentReplicaSet(const ClusterObjects& objects, const PlanRequest& request,
                                        const std::vector<WorkloadFacts>& replicasets,
                                        const std::string& target, PlanResult& result) {
  std::optional<WorkloadFacts> deployment;
  for (const json::value& v : objects.deployments) {
    if (!InNamespace(v, request.namespace_) || api::MetaString(v, "name") != request.name) continue;
    GPUSCHED_ASSIGN_OR_RETURN(WorkloadFacts w, DecodeWorkload(v));
    deployment = std::move(w);
  }
  if (!deployment) return common::NotFoundError(target + " not found");
  std::vector<const WorkloadFacts*> active;
  std::string names;
  for (const WorkloadFacts& rs : replicasets) {
    const api::OwnerReference* ref = rs.ControllerRef();
    if (ref == nullptr || !RefersTo(*ref, *deployment)) continue;
    if (rs.replicas.value_or(1) > 0) {
      active.push_back(&rs);
      names += (names.empty() ? "" : ", ") + rs.name;
    }
  }
  if (active.empty()) {
    return common::FailedPreconditionError(target + " has no ReplicaSet with replicas > 0");
  }
  if (active.size() > 1) {
    return common::FailedPreconditionError(
        target + " is in the middle of a rollout (ReplicaSets with replicas: " + names +
        "); the deployment controller splits a scale-down between them proportionally, which "
        "plan does not model: plan one ReplicaSet with replicaset/NAME");
  }
  result.replicaset = *active.front();
  result.owner = std::move(deployment);
  return common::Status::Ok();
}

// The ReplicaSet named by the request (the last of that name), and its Deployment owner if it
// has one and it decodes.
common::Status PickNamedReplicaSet(const ClusterObjects& objects, const PlanRequest& request,
                                   const std::vector<WorkloadFacts>& replicasets,
                                   const std::string& target, PlanResult& result) {
  bool found = false;
  for (const WorkloadFacts& rs : replicasets) {
    if (rs.name == request.name) {
      result.replicaset = rs;
      found = true;
    }
  }
  if (!found) return common::NotFoundError(target + " not found");
  if (const api::OwnerReference* ref = result.replicaset.ControllerRef();
      ref && ref->kind == "Deployment") {
    for (const json::value& v : objects.deployments) {
      if (!InNamespace(v, request.namespace_) || api::MetaString(v, "name") != ref->name) continue;
      auto d = DecodeWorkload(v);
      if (d.ok()) result.owner = std::move(d).value();
    }
  }
  return common::Status::Ok();
}

// Fills input.owned (the pods `rs` controls) and input.related (the pods of every ReplicaSet with
// the same controller owner, by selector, once each); returns the active pods without a
// controller that `rs` would adopt.
size_t GatherScaleDownPods(const WorkloadFacts& rs, const std::vector<WorkloadFacts>& replicasets,
                           const std::vector<PodFacts>& pods, ScaleDownInput& input) {
  size_t orphans = 0;
  for (const PodFacts& p : pods) {
    const api::OwnerReference* ref = p.ControllerRef();
    if (ref != nullptr && RefersTo(*ref, rs)) {
      input.owned.push_back(p);
    } else if (ref == nullptr && p.Active() && rs.selector.Matches(p.labels)) {
      ++orphans;
    }
  }
  const api::OwnerReference* owner = rs.ControllerRef();
  input.has_controller_owner = owner != nullptr;
  if (owner != nullptr) {
    std::set<std::string> seen;
    for (const WorkloadFacts& other : replicasets) {
      const api::OwnerReference* o = other.ControllerRef();
      if (o == nullptr || !SameOwner(*o, *owner)) continue;
      for (const PodFacts& p : pods) {
        if (!other.selector.Matches(p.labels)) continue;
        if (!seen.insert(p.uid.empty() ? std::string("/").append(p.Key()) : p.uid).second) continue;
        input.related.push_back(p);
      }
    }
  }
  return orphans;
}

void AddPlanWarnings(PlanResult& result, size_t orphans) {
  for (const RankedPod& p : result.plan.pods) {
    if (!p.cost.error.empty()) {
      result.warnings.push_back("pod " + p.facts.name + ": " + p.cost.error +
                                "; the ReplicaSet controller treats it as 0");
    }
  }
  if (result.plan.burst_capped) {
    result.warnings.push_back("more than " + std::to_string(kBurstReplicas) +
                              " deletions: this sync deletes " + std::to_string(kBurstReplicas) +
                              ", later syncs rank the rest again");
  }
  if (!result.plan.tied_survivors.empty()) {
    std::string names;
    for (size_t s : result.plan.tied_survivors) {
      names += (names.empty() ? "" : ", ") + result.plan.pods[s].facts.name;
    }
    result.warnings.push_back(
        "tie at the cutoff: no rule separates some victims from " + names +
        "; the ReplicaSet controller may delete either (its sort is unstable)");
  }
  if (orphans > 0) {
    result.warnings.push_back(std::to_string(orphans) +
                              " active pod(s) match the selector without a controller owner; the "
                              "ReplicaSet controller would adopt them first");
  }
}

}  // namespace

std::string FormatTime(common::TimePoint t) {
  const std::time_t secs = static_cast<std::time_t>(
      std::chrono::floor<std::chrono::seconds>(t.time_since_epoch()).count());
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

ClusterObjects ClassifyObjects(const std::vector<boost::json::value>& docs,
                               const std::string& default_namespace) {
  ClusterObjects out;
  std::vector<json::value> queue(docs.begin(), docs.end());
  for (size_t k = 0; k < queue.size(); ++k) {
    json::value doc = queue[k];
    json::object* o = doc.if_object();
    if (o == nullptr) continue;
    const std::string kind(api::PeekString(doc, "kind"));
    if (kind == "List" || (kind.size() > 4 && kind.ends_with("List"))) {
      if (const json::value* items = o->if_contains("items"); items && items->is_array()) {
        // LIST answers leave kind/apiVersion off their items: restore them.
        const std::string item_kind = kind == "List" ? "" : kind.substr(0, kind.size() - 4);
        for (json::value item : items->get_array()) {
          if (json::object* io = item.if_object();
              io && !item_kind.empty() && !io->contains("kind")) {
            (*io)["kind"] = item_kind;
          }
          queue.push_back(std::move(item));
        }
      }
      continue;
    }
    json::object* meta = nullptr;
    if (json::value* m = o->if_contains("metadata")) meta = m->if_object();
    if (meta != nullptr && api::MetaString(doc, "namespace").empty()) {
      (*meta)["namespace"] = default_namespace;
    }
    if (kind == "Deployment") {
      out.deployments.push_back(std::move(doc));
    } else if (kind == "ReplicaSet") {
      out.replicasets.push_back(std::move(doc));
    } else if (kind == "Pod") {
      out.pods.push_back(std::move(doc));
    }
  }
  return out;
}

common::StatusOr<PlanResult> MakePlan(const ClusterObjects& objects, const PlanRequest& request) {
  PlanResult result;
  result.request = request;
  GPUSCHED_ASSIGN_OR_RETURN(const std::vector<WorkloadFacts> replicasets,
                            DecodeReplicaSets(objects, request.namespace_));
  const std::string target = request.kind + " " + request.namespace_ + "/" + request.name;
  if (request.kind == "Deployment") {
    GPUSCHED_RETURN_IF_ERROR(
        PickDeploymentReplicaSet(objects, request, replicasets, target, result));
  } else {
    GPUSCHED_RETURN_IF_ERROR(PickNamedReplicaSet(objects, request, replicasets, target, result));
  }
  GPUSCHED_ASSIGN_OR_RETURN(const std::vector<PodFacts> pods,
                            DecodePods(objects, request.namespace_));
  ScaleDownInput input;
  input.replicas = request.replicas;
  input.now = request.now;
  const size_t orphans = GatherScaleDownPods(result.replicaset, replicasets, pods, input);
  result.related_pods = input.related.size();
  result.plan = PlanScaleDown(input, request.options);
  AddPlanWarnings(result, orphans);
  return result;
}

std::string FormatPlanText(const PlanResult& r) {
  std::ostringstream out;
  const ScaleDownPlan& p = r.plan;
  out << "ReplicaSet " << r.replicaset.Key();
  if (r.owner) out << " (" << r.owner->kind << " " << r.owner->name << ")";
  out << ": " << p.pods.size() << " active pod(s) -> " << r.request.replicas << " replica(s): ";
  if (p.deletions == 0) {
    out << "nothing to delete\n";
  } else {
    out << "delete " << p.deletions << (p.ranked ? "" : " (every pod; no ranking)") << "\n";
  }
  out << "now " << FormatTime(r.request.now) << "; rank counts " << r.related_pods
      << " related pod(s)"
      << (r.replicaset.ControllerRef() ? "" : " (no controller owner: every rank is 0)") << "\n\n";
  const std::vector<std::string> header = {"#",        "POD",  "NODE",   "PHASE",
                                           "READY",    "COST", "RANK",   "READY-AGE",
                                           "RESTARTS", "AGE",  "ACTION", "BEFORE NEXT BY"};
  std::vector<std::vector<std::string>> rows;
  for (size_t k = 0; k < p.pods.size(); ++k) {
    const RankedPod& pod = p.pods[k];
    const PodFacts& f = pod.facts;
    std::string cost = std::to_string(pod.cost.value);
    if (!pod.cost.error.empty()) cost += " (invalid)";
    std::string restarts = std::to_string(f.max_restarts);
    if (f.max_sidecar_restarts > 0) {
      restarts.append("+").append(std::to_string(f.max_sidecar_restarts)).append("s");
    }
    std::string why = "-";
    if (p.ranked && k + 1 < p.pods.size()) {
      why = std::to_string(static_cast<int>(p.adjacent[k].rule)) + " " +
            std::string(RuleName(p.adjacent[k].rule)) + ": " + p.adjacent[k].detail;
    }
    rows.push_back({std::to_string(k + 1), f.name, f.node_name.empty() ? "<none>" : f.node_name,
                    f.phase.empty() ? "<none>" : f.phase, f.ready ? "yes" : "no", cost,
                    std::to_string(pod.rank), f.ready ? Age(r.request.now, f.ready_time) : "-",
                    restarts, Age(r.request.now, f.created),
                    k < static_cast<size_t>(p.deletions) ? "DELETE" : "keep", why});
  }
  std::vector<size_t> width(header.size());
  for (size_t c = 0; c < header.size(); ++c) {
    width[c] = header[c].size();
    for (const auto& row : rows) width[c] = std::max(width[c], row[c].size());
  }
  const auto emit = [&](const std::vector<std::string>& row) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      line += c + 1 < row.size() ? Pad(row[c], width[c] + 2) : row[c];
    }
    out << line << "\n";
  };
  emit(header);
  for (const auto& row : rows) emit(row);
  if (p.ranked && !p.versus_survivor.empty()) {
    const RankedPod& survivor = p.pods[static_cast<size_t>(p.deletions)];
    out << "\nEach victim against the first kept pod (" << survivor.facts.name << "):\n";
    for (size_t v = 0; v < p.versus_survivor.size(); ++v) {
      const Verdict& vs = p.versus_survivor[v];
      out << "  " << p.pods[v].facts.name << ": rule " << static_cast<int>(vs.rule) << " ("
          << RuleName(vs.rule) << ") " << vs.detail << "\n";
    }
  }
  for (const std::string& w : r.warnings) out << "warning: " << w << "\n";
  return out.str();
}

boost::json::value PlanToJson(const PlanResult& r) {
  const ScaleDownPlan& p = r.plan;
  json::object o;
  o["namespace"] = r.replicaset.namespace_;
  o["replicaSet"] = r.replicaset.name;
  if (r.owner) o["owner"] = json::object{{"kind", r.owner->kind}, {"name", r.owner->name}};
  o["replicas"] = r.request.replicas;
  o["now"] = FormatTime(r.request.now);
  o["activePods"] = p.pods.size();
  o["inactivePods"] = p.inactive;
  o["relatedPods"] = r.related_pods;
  o["deletions"] = p.deletions;
  o["ranked"] = p.ranked;
  o["burstCapped"] = p.burst_capped;
  json::array victims;
  for (const RankedPod& v : p.victims()) victims.emplace_back(v.facts.name);
  o["victims"] = std::move(victims);
  json::array pods;
  for (size_t k = 0; k < p.pods.size(); ++k) {
    const RankedPod& pod = p.pods[k];
    const PodFacts& f = pod.facts;
    json::object j;
    j["name"] = f.name;
    j["uid"] = f.uid;
    j["node"] = f.node_name;
    j["phase"] = f.phase;
    j["ready"] = f.ready;
    if (f.ready_time) j["readyTime"] = FormatTime(*f.ready_time);
    if (f.created) j["creationTimestamp"] = FormatTime(*f.created);
    j["cost"] = pod.cost.value;
    if (!pod.cost.error.empty()) j["costError"] = pod.cost.error;
    j["rank"] = pod.rank;
    j["restarts"] = f.max_restarts;
    j["sidecarRestarts"] = f.max_sidecar_restarts;
    j["delete"] = k < static_cast<size_t>(p.deletions);
    if (p.ranked && k + 1 < p.pods.size()) {
      j["beforeNext"] = json::object{{"rule", static_cast<int>(p.adjacent[k].rule)},
                                     {"name", RuleName(p.adjacent[k].rule)},
                                     {"detail", p.adjacent[k].detail}};
    }
    if (k < p.versus_survivor.size()) {
      j["versusFirstKept"] = json::object{{"rule", static_cast<int>(p.versus_survivor[k].rule)},
                                          {"name", RuleName(p.versus_survivor[k].rule)},
                                          {"detail", p.versus_survivor[k].detail}};
    }
    pods.push_back(std::move(j));
  }
  o["pods"] = std::move(pods);
  json::array tied;
  for (size_t s : p.tied_survivors) tied.emplace_back(p.pods[s].facts.name);
  o["tiedSurvivors"] = std::move(tied);
  json::array warnings;
  for (const std::string& w : r.warnings) warnings.emplace_back(w);
  o["warnings"] = std::move(warnings);
  return o;
}

}  // namespace gpusched::addons::deletion_cost
