// SPDX-License-Identifier: Apache-2.0
#include "src/plugins/dynamic_resources/report.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "src/common/interner.h"
#include "src/plugins/dynamic_resources/allocator.h"
#include "src/plugins/dynamic_resources/dynamic_resources.h"
#include "src/plugins/dynamic_resources/lookahead.h"
#include "src/plugins/dynamic_resources/node_devices.h"
#include "src/plugins/dynamic_resources/selectors.h"

namespace gpusched::plugins::dynamic_resources {
namespace {

std::string_view EffectName(api::TaintEffect e) {
  switch (e) {
    case api::TaintEffect::kNoSchedule: return "NoSchedule";
    case api::TaintEffect::kPreferNoSchedule: return "PreferNoSchedule";
    case api::TaintEffect::kNoExecute: return "NoExecute";
    default: return "";
  }
}

std::string AttributeText(const api::DeviceAttribute& a) {
  switch (a.kind) {
    case api::DeviceAttribute::Kind::kInt: return std::to_string(a.int_value);
    case api::DeviceAttribute::Kind::kBool: return a.bool_value ? "true" : "false";
    default: return a.string_value;
  }
}

std::string Joined(const std::vector<std::string>& v, std::string_view sep) {
  std::string out;
  for (const std::string& s : v) out += (out.empty() ? "" : std::string(sep)) + s;
  return out;
}

// One claim the pod names, resolved.
struct PodClaim {
  std::string label;  // namespace/name, or the pod claim name while the claim does not exist
  api::ResourceClaimPtr claim;
};

// What ReportClaims computes step by step for one pod and node.
struct Context {
  const framework::DraView& view;
  const api::Node& node;
  std::shared_ptr<const framework::DeviceIndex> index;
  std::shared_ptr<const framework::DeviceUsage> usage;
  NodeDevices reach;  // the devices the node reaches, in index order
  std::vector<PodClaim> claims;
  SelectorCache selectors;
  std::vector<ClaimPlan> plans;
  std::vector<size_t> plan_of;  // per claim: its plan, or SIZE_MAX (allocated or failed)
  // Per (claim, request alternative): the class-only matches, to tell the two selector verdicts
  // apart.
  std::vector<std::vector<std::shared_ptr<const ChoiceMatches>>> class_only;
  std::vector<std::vector<api::DeviceResult>> results;
  bool allocatable = false;
};

std::string KeyOf(const api::DeviceResult& r) { return r.driver + "/" + r.pool + "/" + r.device; }

void GatherReach(Context& cx) {
  auto add = [&](uint32_t d) {
    const bool busy = d < cx.usage->holder.size() && cx.usage->holder[d] != nullptr;
    const bool shared_in_use = d < cx.usage->shares.size() && cx.usage->shares[d] > 0;
    cx.reach.devices.push_back({d, busy, shared_in_use});
  };
  for (uint32_t d : cx.index->NodeDevices(cx.node.meta.name)) add(d);
  for (uint32_t d : cx.index->not_node_local) {
    const framework::DeviceEntry& e = cx.index->devices[d];
    if (e.all_nodes || (e.node_selector != nullptr &&
                        e.node_selector->Matches(cx.node.meta.labels, cx.node.meta.name))) {
      add(d);
    }
  }
  SettleCounters(*cx.index, *cx.usage, cx.reach);
}

void ResolveClaims(Context& cx, const api::Pod& pod, framework::DraClaimsReport& row) {
  const api::PodResourceClaims& pc = *pod.resource_claims;
  for (size_t i = 0; i < pc.claims.size(); ++i) {
    const std::optional<std::string> name = pc.ClaimName(i);
    if (!name) {
      row.message = "claim " + pc.claims[i].name + " not created yet";
      continue;
    }
    if (name->empty()) continue;
    api::ResourceClaimPtr claim = cx.view.GetClaim(pod.meta.namespace_, *name);
    if (claim == nullptr) {
      row.message = "resourceclaim " + pod.meta.namespace_ + "/" + *name + " not found";
      continue;
    }
    cx.claims.push_back({pod.meta.namespace_ + "/" + *name, std::move(claim)});
  }
}

// The claim's plan as the plugin makes it, and per alternative the devices its class alone
// matches (to tell the two selector verdicts apart); false (with row.message) on an error.
bool PlanClaim(Context& cx, size_t c, ClaimPlan& plan, framework::DraClaimsReport& row) {
  common::StatusOr<ClaimPlan> p = PlanClaim(cx.selectors, cx.view, *cx.index, cx.claims[c].claim);
  if (!p.ok()) {
    row.message = cx.claims[c].label + " " + std::string(p.status().message());
    return false;
  }
  plan = *std::move(p);
  for (const RequestPlan& rp : plan.requests) {
    for (const Alternative& alt : rp.alternatives) {
      auto m_class = cx.selectors.ClassMatches(cx.view, *cx.index, alt.choice->device_class);
      if (!m_class.ok()) {
        row.message = cx.claims[c].label + " request " + alt.result_request + ": " +
                      std::string(m_class.status().message());
        return false;
      }
      cx.class_only[c].push_back(*m_class);
    }
  }
  return true;
}

void PlanAndAllocate(Context& cx, framework::DraClaimsReport& row) {
  cx.plan_of.assign(cx.claims.size(), SIZE_MAX);
  cx.class_only.assign(cx.claims.size(), {});
  for (size_t c = 0; c < cx.claims.size(); ++c) {
    if (cx.claims[c].claim->allocation) continue;
    ClaimPlan plan;
    if (!PlanClaim(cx, c, plan, row)) continue;
    cx.plan_of[c] = cx.plans.size();
    cx.plans.push_back(std::move(plan));
  }
  cx.allocatable = cx.plans.empty() || Allocate(cx.plans, *cx.index, cx.reach, &cx.results);
  if (!cx.allocatable && row.message.empty()) {
    row.message = std::string(kReasonCannotAllocate) + " on " + cx.node.meta.name;
  }
}

// An allocated claim: its devices, by request.
void AllocatedRows(const PodClaim& pc, framework::DraClaimsReport& row) {
  const api::ResourceClaim& claim = *pc.claim;
  std::vector<std::string> requests;
  for (const api::DeviceResult& r : claim.allocation->devices) {
    if (std::find(requests.begin(), requests.end(), r.request) == requests.end()) {
      requests.push_back(r.request);
    }
  }
  for (const std::string& request : requests) {
    framework::DraRequestReport rr;
    rr.claim = pc.label;
    rr.request = request;
    for (const api::DeviceRequest& r : claim.spec.requests) {
      const std::string_view base = std::string_view(request).substr(0, request.find('/'));
      if (r.name != base || !r.exactly) continue;
      rr.device_class = r.exactly->device_class;
      rr.selectors = Joined(r.exactly->selectors, " && ");
      rr.count = r.exactly->mode == api::AllocationMode::kAll ? 0 : r.exactly->count;
    }
    for (const api::DeviceResult& r : claim.allocation->devices) {
      if (r.request == request) rr.devices.push_back({KeyOf(r), "allocated", true});
    }
    row.requests.push_back(std::move(rr));
  }
}

// Why a matching, free, tolerated device was not picked: a constraint of request `q`, or not
// needed.
std::string ConstraintVerdict(const Context& cx, const ClaimPlan& plan, size_t q,
                              const framework::DeviceEntry& e,
                              const std::vector<std::string>& picked_all) {
  std::string verdict = cx.allocatable ? "matches, not needed" : "matches";
  for (const ConstraintPlan& k : plan.constraints) {
    if (!k.requests.empty() &&
        std::find(k.requests.begin(), k.requests.end(), q) == k.requests.end()) {
      continue;
    }
    const api::DeviceAttribute* mine = e.device->Attribute(k.attribute);
    if (mine == nullptr) return "constraint mismatch: no " + k.attribute;
    // No allocation to compare with: the value, so the reader sees the groups.
    if (!cx.allocatable) verdict += ", " + k.attribute + " " + AttributeText(*mine);
    for (const std::string& p : picked_all) {
      auto it = cx.index->by_key.find(p);
      if (it == cx.index->by_key.end()) continue;
      const api::DeviceAttribute* theirs =
          cx.index->devices[it->second].device->Attribute(k.attribute);
      if (theirs != nullptr && !(*theirs == *mine)) {
        return "constraint mismatch: " + k.attribute + " " + AttributeText(*mine) + ", picked " +
               AttributeText(*theirs);
      }
    }
  }
  return verdict;
}

const api::ResourceClaim* HolderOf(const Context& cx, uint32_t d) {
  return d < cx.usage->holder.size() ? cx.usage->holder[d].get() : nullptr;
}

// Why the pool of `e` is invalid (DeviceIndex::invalid_pools, without the pool's name).
std::string InvalidPoolReason(const framework::DeviceIndex& index,
                              const framework::DeviceEntry& e) {
  const std::string pool = e.slice->driver + "/" + e.slice->pool + ": ";
  for (const std::string& why : index.invalid_pools) {
    if (why.starts_with(pool)) return why.substr(pool.size());
  }
  return "";
}

// The counters device `d` draws more of than is left, as "<set>/<counter> needs N, has M left".
std::string ShortCounters(const Context& cx, uint32_t d) {
  std::string out;
  for (const framework::CounterDraw& c : cx.index->Draws(d)) {
    const CounterLeft* left = cx.reach.Find(c.counter);
    const int64_t has = left == nullptr ? 0 : left->left;
    if (has >= c.amount) continue;
    if (!out.empty()) out += ", ";
    const std::string& key = cx.index->counters[c.counter].key;
    // "<driver>/<pool>/<set>/<counter>": the set and counter.
    const size_t counter = key.rfind('/');
    const size_t set = key.rfind('/', counter - 1);
    out += key.substr(set + 1) + " needs " + api::Quantity::FromMilli(c.amount).ToString() +
           ", has " + api::Quantity::FromMilli(std::max<int64_t>(0, has)).ToString() + " left";
  }
  return out;
}

// Why device `d` cannot give `choice` the capacity it asks (KEP-5075): "memory needs 30Gi, has
// 20Gi left", or that the request policy or the device's capacities do not allow the request.
// A capacity amount (thousandths) as a person reads it: a whole multiple of 1024^k (k >= 1) with
// its binary suffix ("32Gi", as the API server prints 34359738368), else the plain value.
std::string ReadableAmount(int64_t milli) {
  if (milli > 0 && milli % 1000 == 0) {
    const int64_t v = milli / 1000;
    static constexpr std::pair<int, const char*> kSuffixes[] = {{60, "Ei"}, {50, "Pi"}, {40, "Ti"},
                                                                {30, "Gi"}, {20, "Mi"}, {10, "Ki"}};
    for (const auto& [shift, suffix] : kSuffixes) {
      const int64_t unit = int64_t{1} << shift;
      if (v >= unit && v % unit == 0) return std::to_string(v / unit) + suffix;
    }
  }
  return api::Quantity::FromMilli(milli).ToString();
}

std::string ShortCapacity(const Context& cx, uint32_t d, const api::DeviceChoice& choice) {
  const framework::DeviceEntry& e = cx.index->devices[d];
  std::vector<int64_t> amounts;
  if (!api::ConsumedCapacity(*e.device, e.slice->driver, choice.capacity_requests, amounts)) {
    return "the request names a capacity the device lacks or breaks its policy";
  }
  std::string out;
  for (size_t i = 0; i < amounts.size(); ++i) {
    int64_t has = e.device->capacity[i].second.MilliValue();
    if (e.shared) {
      const CounterLeft* left = cx.reach.Find(e.capacity_begin + static_cast<uint32_t>(i));
      has = left == nullptr ? 0 : left->left;
    }
    if (has >= amounts[i]) continue;
    if (!out.empty()) out += ", ";
    out += e.device->capacity[i].first + " needs " + ReadableAmount(amounts[i]) + ", has " +
           ReadableAmount(std::max<int64_t>(0, has)) + " left";
  }
  return out;
}

framework::DraDeviceReport DeviceVerdict(const Context& cx, const ClaimPlan& plan, size_t q,
                                         const Alternative& alt, const ChoiceMatches& cls,
                                         const NodeDevice& nd,
                                         const std::vector<std::string>& picked,
                                         const std::vector<std::string>& picked_all) {
  const framework::DeviceEntry& e = cx.index->devices[nd.device];
  framework::DraDeviceReport dev;
  dev.device = e.key;
  if (std::find(picked.begin(), picked.end(), e.key) != picked.end()) {
    dev.verdict = "selected";
    dev.selected = true;
  } else if (cls.match[nd.device] == 0) {
    dev.verdict = "class selector false";
  } else if (alt.matches->match[nd.device] == 0) {
    dev.verdict = "request selector false";
  } else if (const api::ResourceClaim* holder = HolderOf(cx, nd.device);
             holder != nullptr && !alt.choice->admin_access) {
    dev.verdict = "held by claim " + holder->meta.namespace_ + "/" + holder->meta.name;
  } else if (e.invalid) {
    dev.verdict = "pool invalid: " + InvalidPoolReason(*cx.index, e);
  } else if (!cx.reach.CountersAllow(*cx.index, nd)) {
    dev.verdict = "counters short: " + ShortCounters(cx, nd.device);
  } else if (!cx.reach.CapacityAllows(*cx.index, nd.device, *alt.choice, nullptr)) {
    dev.verdict = "capacity short: " + ShortCapacity(cx, nd.device, *alt.choice);
  } else if (const api::Taint* t = api::UntoleratedTaint(*e.device, alt.choice->tolerations)) {
    dev.verdict = "tainted " + std::string(common::Str(t->key)) + "=" +
                  std::string(common::Str(t->value)) + ":" + std::string(EffectName(t->effect));
  } else {
    dev.verdict = ConstraintVerdict(cx, plan, q, e, picked_all);
  }
  return dev;
}

// A claim to allocate: per request alternative, every reachable device with its verdict.
void PlannedRows(const Context& cx, size_t c, int32_t unreachable,
                 framework::DraClaimsReport& row) {
  const ClaimPlan& plan = cx.plans[cx.plan_of[c]];
  std::vector<std::string> picked_all;  // this claim's picks, for constraint verdicts
  if (cx.allocatable) {
    for (const api::DeviceResult& r : cx.results[cx.plan_of[c]]) picked_all.push_back(KeyOf(r));
  }
  size_t alt_index = 0;
  for (size_t q = 0; q < plan.requests.size(); ++q) {
    for (const Alternative& alt : plan.requests[q].alternatives) {
      const ChoiceMatches& cls = *cx.class_only[c][alt_index++];
      framework::DraRequestReport rr;
      rr.claim = cx.claims[c].label;
      rr.request = alt.result_request;
      rr.device_class = alt.choice->device_class;
      rr.selectors = Joined(alt.choice->selectors, " && ");
      rr.count = alt.choice->mode == api::AllocationMode::kAll ? 0 : alt.choice->count;
      rr.unreachable = unreachable;
      std::vector<std::string> picked;  // this alternative's picks
      if (cx.allocatable) {
        for (const api::DeviceResult& r : cx.results[cx.plan_of[c]]) {
          if (r.request == alt.result_request) picked.push_back(KeyOf(r));
        }
      }
      for (const NodeDevice& nd : cx.reach.devices) {
        rr.devices.push_back(DeviceVerdict(cx, plan, q, alt, cls, nd, picked, picked_all));
      }
      row.requests.push_back(std::move(rr));
    }
  }
}

}  // namespace

std::optional<framework::DraClaimsReport> ReportClaims(const framework::DraView& view,
                                                       const api::Pod& pod, const api::Node& node) {
  if (pod.resource_claims == nullptr || pod.resource_claims->claims.empty()) return std::nullopt;
  framework::DraClaimsReport row;
  row.node = node.meta.name;
  Context cx{view, node, view.devices(), view.usage(), {}, {}, {}, {}, {}, {}, {}, false};
  GatherReach(cx);
  const auto unreachable = static_cast<int32_t>(cx.index->devices.size() - cx.reach.devices.size());
  ResolveClaims(cx, pod, row);
  PlanAndAllocate(cx, row);
  for (size_t c = 0; c < cx.claims.size(); ++c) {
    if (cx.claims[c].claim->allocation) {
      AllocatedRows(cx.claims[c], row);
    } else if (cx.plan_of[c] != SIZE_MAX) {
      PlannedRows(cx, c, unreachable, row);
    }
  }
  return row;
}

namespace {

// How close a node came (ReportBestRejected): devices passing their request's selectors, then
// devices of the requested classes.
std::pair<int64_t, int64_t> Closeness(const framework::DraClaimsReport& row) {
  std::pair<int64_t, int64_t> c{0, 0};
  for (const framework::DraRequestReport& r : row.requests) {
    for (const framework::DraDeviceReport& d : r.devices) {
      if (d.verdict.starts_with("class selector false")) continue;
      ++c.second;
      if (!d.verdict.starts_with("request selector false")) ++c.first;
    }
  }
  return c;
}

}  // namespace

std::optional<framework::DraClaimsReport> ReportBestRejected(
    const framework::DraView& view, const api::Pod& pod, const framework::Snapshot& snapshot,
    std::span<const std::string> rejected) {
  std::optional<framework::DraClaimsReport> best;
  std::pair<int64_t, int64_t> best_closeness{-1, -1};
  for (const std::string& name : rejected) {
    const framework::NodeInfo* ni = snapshot.Get(name);
    if (ni == nullptr) continue;
    std::optional<framework::DraClaimsReport> row = ReportClaims(view, pod, *ni->node);
    if (!row) continue;
    const std::pair<int64_t, int64_t> c = Closeness(*row);
    if (c > best_closeness) {
      best_closeness = c;
      best = std::move(row);
    }
  }
  return best;
}

std::optional<framework::DraLookaheadReport> ReportLookahead(
    const framework::DraView& view, const api::Pod& pod, const framework::Snapshot& snapshot,
    std::span<const std::string> feasible_nodes) {
  if (pod.resource_claims == nullptr) return std::nullopt;
  const std::shared_ptr<const framework::DeviceIndex> index = view.devices();
  const std::shared_ptr<const framework::DeviceUsage> usage = view.usage();
  SelectorCache selectors;
  std::vector<api::ResourceClaimPtr> own_claims;
  std::vector<ClaimPlan> own;
  const api::PodResourceClaims& pc = *pod.resource_claims;
  for (size_t i = 0; i < pc.claims.size(); ++i) {
    const std::optional<std::string> name = pc.ClaimName(i);
    if (!name || name->empty()) continue;
    api::ResourceClaimPtr claim = view.GetClaim(pod.meta.namespace_, *name);
    if (claim == nullptr) return std::nullopt;
    own_claims.push_back(claim);
    if (claim->allocation) continue;
    common::StatusOr<ClaimPlan> plan = PlanClaim(selectors, view, *index, claim);
    if (!plan.ok()) return std::nullopt;
    own.push_back(*std::move(plan));
  }
  if (own.empty()) return std::nullopt;  // nothing to allocate: packing alone would not apply
  std::vector<framework::NodeIndex> feasible;
  std::vector<std::string_view> names;
  for (const std::string& name : feasible_nodes) {
    const framework::NodeInfo* ni = snapshot.Get(name);
    if (ni == nullptr) continue;
    feasible.push_back(ni->index);
    names.push_back(name);
  }
  if (feasible.size() < 2) return std::nullopt;
  const std::optional<LookaheadResult> r = LookAheadForPod(
      selectors, view, *index, *usage, [&own](const framework::NodeInfo&) { return &own; },
      own_claims, snapshot, feasible);
  if (!r) return std::nullopt;
  framework::DraLookaheadReport row;
  row.waiting_claims = static_cast<int32_t>(r->waiting_claims);
  row.replays = static_cast<int32_t>(2 + r->random_replays);
  for (size_t j = 0; j < names.size(); ++j) row.nodes.emplace_back(names[j], r->counts[j]);
  return row;
}

}  // namespace gpusched::plugins::dynamic_resources
