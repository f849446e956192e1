// SPDX-License-Identifier: Apache-2.0
#include "src/addons/deletion_cost/ranking.h"

#include <algorithm>
#include <boost/json.hpp>
#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <unordered_map>
#include <utility>

#include "src/api/decode.h"
#include "src/api/fields.h"
#include "src/common/strings.h"

namespace gpusched::addons::deletion_cost {
namespace {

namespace json = boost::json;

bool ValidFirstDigit(std::string_view s) {
  if (s.empty()) return false;
  return s[0] == '-' || s == "0" || (s[0] >= '1' && s[0] <= '9');
}

// Phase ordinal of rule 2: Pending 0, Unknown 1, Running 2, anything else 0.
int PhaseOrdinal(std::string_view phase) {
  if (phase == "Unknown") return 1;
  if (phase == "Running") return 2;
  return 0;
}

std::string FormatTime(const std::optional<common::TimePoint>& t) {
  if (!t) return "zero";
  return std::to_string(
      std::chrono::duration_cast<std::chrono::seconds>(t->time_since_epoch()).count());
}

// afterOrZero: a zero time counts as the newest.
Verdict AfterOrZero(const std::optional<common::TimePoint>& t1,
                    const std::optional<common::TimePoint>& t2, Rule rule, bool explain) {
  if (!t1 || !t2) {
    return Verdict{!t1.has_value(), rule,
                   !explain ? ""
                   : !t1    ? "zero time counts as newest"
                            : "other zero time counts as newest"};
  }
  return Verdict{
      *t1 > *t2, rule,
      explain ? "legacy rule: newer first (" + FormatTime(t1) + " vs " + FormatTime(t2) + ")" : ""};
}

// The time rule (docs/replicaset-scale-down.md §3), only called when the times differ.
Verdict TimeLess(const std::optional<common::TimePoint>& t1,
                 const std::optional<common::TimePoint>& t2, std::string_view uid1,
                 std::string_view uid2, common::TimePoint now, Rule rule,
                 const RankingOptions& options, bool explain) {
  if (!options.logarithmic_scale_down) return AfterOrZero(t1, t2, rule, explain);
  if (now == common::TimePoint{} || !t1 || !t2) return AfterOrZero(t1, t2, rule, explain);
  const int64_t b1 = TimeBucket(*t1, now);
  const int64_t b2 = TimeBucket(*t2, now);
  if (b1 == b2) {
    const bool less = uid1 < uid2;  // byte-wise, as Go compares strings
    if (!explain) return Verdict{less, rule, {}};
    return Verdict{less, rule,
                   "same bucket " + std::to_string(b1) + ", uid " + common::Quote(uid1) +
                       (less ? " < " : " > ") + common::Quote(uid2)};
  }
  if (!explain) return Verdict{b1 < b2, rule, {}};
  return Verdict{b1 < b2, rule,
                 "bucket " + std::to_string(b1) + (b1 < b2 ? " < " : " > ") + std::to_string(b2)};
}

// A container status's restartCount (0 when absent).
int32_t RestartCount(api::JsonReader& r, const json::object& c, const api::FieldPath& path) {
  return static_cast<int32_t>(
      r.Int(c, "restartCount", path, 0, std::numeric_limits<int32_t>::max()).value_or(0));
}

}  // namespace

common::StatusOr<int32_t> ParseDeletionCost(std::string_view value) {
  const auto invalid = [&] {
    return common::InvalidArgumentError("annotations[" + std::string(kPodDeletionCostAnnotation) +
                                        "]: invalid value " + common::Quote(value) +
                                        ": must be a 32bit integer");
  };
  if (!ValidFirstDigit(value)) return invalid();
  // strconv.ParseInt(value, 10, 32): optional sign, then at least one decimal digit, nothing else.
  std::string_view digits = value;
  bool negative = false;
  if (!digits.empty() && (digits[0] == '-' || digits[0] == '+')) {
    negative = digits[0] == '-';
    digits.remove_prefix(1);
  }
  if (digits.empty()) return invalid();
  int64_t magnitude = 0;
  for (char ch : digits) {
    if (ch < '0' || ch > '9') return invalid();
    magnitude = magnitude * 10 + (ch - '0');
    if (magnitude > int64_t{1} << 32) return invalid();  // far beyond int32 either way
  }
  const int64_t v = negative ? -magnitude : magnitude;
  if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max()) {
    return invalid();
  }
  return static_cast<int32_t>(v);
}

DeletionCost DeletionCostFromAnnotation(const std::string* annotation) {
  DeletionCost c;
  if (annotation == nullptr) return c;
  c.present = true;
  auto v = ParseDeletionCost(*annotation);
  if (v.ok()) {
    c.value = *v;
  } else {
    c.error = std::string(v.status().message());
  }
  return c;
}

const api::OwnerReference* PodFacts::ControllerRef() const {
  for (const auto& o : owner_references) {
    if (o.controller) return &o;
  }
  return nullptr;
}

common::StatusOr<PodFacts> DecodePodFacts(const boost::json::value& json) {
  GPUSCHED_ASSIGN_OR_RETURN(api::Pod pod, api::DecodePod(json));
  PodFacts f;
  f.namespace_ = pod.meta.namespace_;
  f.name = pod.meta.name;
  f.uid = pod.meta.uid;
  f.node_name = pod.node_name;
  f.deleting = pod.meta.deletion_timestamp.has_value();
  f.created = pod.meta.creation_timestamp;
  f.labels = pod.meta.labels;
  f.annotations = pod.meta.annotations;
  f.owner_references = pod.meta.owner_references;
  if (const std::string* c = pod.meta.Annotation(kPodDeletionCostAnnotation))
    f.cost_annotation = *c;
  // podutil.GetPodReadyCondition: the first condition of type Ready.
  for (const api::Condition& c : pod.conditions) {
    if (c.type != "Ready") continue;
    f.ready = c.status == "True";
    if (f.ready) f.ready_time = c.last_transition_time;
    break;
  }
  std::set<std::string, std::less<>> sidecars;
  for (const api::Container& c : pod.init_containers) {
    if (c.restartable) sidecars.insert(c.name);
  }
  // What api::Pod does not keep (only this ranking reads it): status.phase as written,
  // status.podIP and the restart counts.
  api::JsonReader r(api::PlainDialect());
  const api::FieldPath root;
  const json::object& o = json.get_object();  // DecodePod checked it is an object
  if (const json::object* status = r.Object(o, "status", root)) {
    const api::FieldPath sp = root.Key("status");
    f.phase = r.StringOr(*status, "phase", sp);
    f.pod_ip = r.StringOr(*status, "podIP", sp);
    r.ForEachObject(*status, "containerStatuses", sp,
                    [&](const json::object& c, const api::FieldPath& cp) {
                      f.max_restarts = std::max(f.max_restarts, RestartCount(r, c, cp));
                    });
    r.ForEachObject(
        *status, "initContainerStatuses", sp, [&](const json::object& c, const api::FieldPath& cp) {
          if (!sidecars.contains(r.StringOr(c, "name", cp))) return;
          f.max_sidecar_restarts = std::max(f.max_sidecar_restarts, RestartCount(r, c, cp));
        });
  }
  if (!r.ok()) return common::InvalidArgumentError("pod " + pod.Key() + ": " + r.errors().Join());
  return f;
}

std::string_view RuleName(Rule rule) {
  switch (rule) {
    case Rule::kUnassigned: return "unassigned";
    case Rule::kPhase: return "phase";
    case Rule::kReady: return "ready";
    case Rule::kCost: return "deletion-cost";
    case Rule::kRank: return "rank";
    case Rule::kReadyTime: return "ready-time";
    case Rule::kRestarts: return "restarts";
    case Rule::kCreation: return "creation-time";
    case Rule::kTie: return "tie";
  }
  return "?";
}

int64_t TimeBucket(common::TimePoint t, common::TimePoint now) {
  const int64_t d = (now - t).count();
  if (d <= 0) return -1;
  return static_cast<int64_t>(std::log2(static_cast<double>(d)));
}

namespace {

std::string Cmp(int64_t x, std::string_view op, int64_t y, std::string_view what) {
  return std::string(what) + " " + std::to_string(x) + " " + std::string(op) + " " +
         std::to_string(y);
}

Verdict CompareImpl(const RankedPod& a, const RankedPod& b, common::TimePoint now,
                    const RankingOptions& options, bool explain) {
  const PodFacts& i = a.facts;
  const PodFacts& j = b.facts;
  // 1. Unassigned < assigned.
  if (i.node_name != j.node_name && (i.node_name.empty() || j.node_name.empty())) {
    return Verdict{i.node_name.empty(), Rule::kUnassigned,
                   !explain              ? ""
                   : i.node_name.empty() ? "unassigned vs on a node"
                                         : "on a node vs unassigned"};
  }
  // 2. Pending < Unknown < Running (anything else counts as Pending).
  const int pi = PhaseOrdinal(i.phase);
  const int pj = PhaseOrdinal(j.phase);
  if (pi != pj) {
    return Verdict{pi < pj, Rule::kPhase,
                   explain ? "phase " + common::Quote(i.phase) + (pi < pj ? " < " : " > ") +
                                 common::Quote(j.phase)
                           : ""};
  }
  // 3. Not ready < ready.
  if (i.ready != j.ready) {
    return Verdict{!i.ready, Rule::kReady,
                   !explain   ? ""
                   : !i.ready ? "not ready vs ready"
                              : "ready vs not ready"};
  }
  // 4. Lower deletion cost first.
  if (options.pod_deletion_cost && a.cost.value != b.cost.value) {
    const bool less = a.cost.value < b.cost.value;
    return Verdict{less, Rule::kCost,
                   explain ? Cmp(a.cost.value, less ? "<" : ">", b.cost.value, "cost") : ""};
  }
  // 5. Doubled up (more active related pods on the node) first.
  if (a.rank != b.rank) {
    const bool less = a.rank > b.rank;
    return Verdict{less, Rule::kRank, explain ? Cmp(a.rank, less ? ">" : "<", b.rank, "rank") : ""};
  }
  // 6. Both ready: ready time, newest (log bucket) first.
  if (i.ready && j.ready && i.ready_time != j.ready_time) {
    return TimeLess(i.ready_time, j.ready_time, i.uid, j.uid, now, Rule::kReadyTime, options,
                    explain);
  }
  // 7. More restarts first (regular containers, then sidecars).
  if (i.max_restarts != j.max_restarts) {
    const bool less = i.max_restarts > j.max_restarts;
    return Verdict{
        less, Rule::kRestarts,
        explain ? Cmp(i.max_restarts, less ? ">" : "<", j.max_restarts, "restarts") : ""};
  }
  if (options.sidecar_restarts && i.max_sidecar_restarts != j.max_sidecar_restarts) {
    const bool less = i.max_sidecar_restarts > j.max_sidecar_restarts;
    return Verdict{less, Rule::kRestarts,
                   explain ? Cmp(i.max_sidecar_restarts, less ? ">" : "<", j.max_sidecar_restarts,
                                 "sidecar restarts")
                           : ""};
  }
  // 8. Creation time, newest (log bucket) first.
  if (i.created != j.created) {
    return TimeLess(i.created, j.created, i.uid, j.uid, now, Rule::kCreation, options, explain);
  }
  return Verdict{false, Rule::kTie, explain ? "no rule distinguishes them" : ""};
}

}  // namespace

Verdict Compare(const RankedPod& a, const RankedPod& b, common::TimePoint now,
                const RankingOptions& options) {
  return CompareImpl(a, b, now, options, /*explain=*/true);
}

std::vector<size_t> OrderForDeletion(std::span<const RankedPod> pods, common::TimePoint now,
                                     const RankingOptions& options) {
  std::vector<size_t> remaining(pods.size());
  for (size_t k = 0; k < pods.size(); ++k) remaining[k] = k;
  std::vector<size_t> order;
  order.reserve(pods.size());
  while (!remaining.empty()) {
    size_t best = 0;
    for (size_t k = 1; k < remaining.size(); ++k) {
      if (CompareImpl(pods[remaining[k]], pods[remaining[best]], now, options, false).less) {
        best = k;
      }
    }
    order.push_back(remaining[best]);
    remaining.erase(remaining.begin() + static_cast<std::ptrdiff_t>(best));
  }
  return order;
}

std::vector<RankedPod> RankPods(std::span<const PodFacts> active_owned,
                                std::span<const PodFacts> related, bool has_controller_owner) {
  std::unordered_map<std::string, int32_t> on_node;
  if (has_controller_owner) {
    std::set<std::string, std::less<>> seen;
    for (const PodFacts& p : related) {
      // De-duplicated by UID (by namespace/name for offline manifests without one).
      if (!seen.insert(p.uid.empty() ? std::string("/").append(p.Key()) : p.uid).second) continue;
      if (p.Active()) ++on_node[p.node_name];
    }
  }
  std::vector<RankedPod> out;
  out.reserve(active_owned.size());
  for (const PodFacts& p : active_owned) {
    RankedPod r;
    r.facts = p;
    r.cost = DeletionCostFromAnnotation(p.cost_annotation ? &*p.cost_annotation : nullptr);
    if (auto it = on_node.find(p.node_name); it != on_node.end()) r.rank = it->second;
    out.push_back(std::move(r));
  }
  return out;
}

ScaleDownPlan PlanScaleDown(const ScaleDownInput& input, const RankingOptions& options) {
  ScaleDownPlan plan;
  std::vector<PodFacts> active;
  for (const PodFacts& p : input.owned) {
    if (p.Active()) {
      active.push_back(p);
    } else {
      ++plan.inactive;
    }
  }
  plan.diff = static_cast<int64_t>(active.size()) - input.replicas;
  int64_t deletions = std::max<int64_t>(plan.diff, 0);
  if (deletions > kBurstReplicas) {
    plan.burst_capped = true;
    deletions = kBurstReplicas;
  }
  plan.deletions = static_cast<int32_t>(deletions);
  std::vector<RankedPod> ranked = RankPods(active, input.related, input.has_controller_owner);
  if (deletions == 0 || static_cast<size_t>(deletions) >= ranked.size()) {
    // Nothing to delete, or every pod: upstream does not sort.
    plan.pods = std::move(ranked);
    return plan;
  }
  plan.ranked = true;
  const std::vector<size_t> order = OrderForDeletion(ranked, input.now, options);
  plan.pods.reserve(order.size());
  for (size_t k : order) plan.pods.push_back(ranked[k]);
  for (size_t k = 0; k + 1 < plan.pods.size(); ++k) {
    plan.adjacent.push_back(Compare(plan.pods[k], plan.pods[k + 1], input.now, options));
  }
  const size_t n_victims = static_cast<size_t>(deletions);
  const RankedPod& survivor = plan.pods[n_victims];
  std::set<size_t> tied_survivors;
  for (size_t v = 0; v < n_victims; ++v) {
    Verdict vs = Compare(plan.pods[v], survivor, input.now, options);
    if (vs.rule == Rule::kTie) plan.tied_victims.push_back(v);
    plan.versus_survivor.push_back(std::move(vs));
    for (size_t s = n_victims; s < plan.pods.size(); ++s) {
      if (CompareImpl(plan.pods[v], plan.pods[s], input.now, options, false).rule == Rule::kTie) {
        tied_survivors.insert(s);
      }
    }
  }
  plan.tied_survivors.assign(tied_survivors.begin(), tied_survivors.end());
  return plan;
}

}  // namespace gpusched::addons::deletion_cost
