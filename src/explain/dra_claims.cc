// SPDX-License-Identifier: Apache-2.0
#include "src/explain/dra_claims.h"

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "src/common/interner.h"
#include "src/plugins/dynamic_resources/allocator.h"
#include "src/plugins/dynamic_resources/dynamic_resources.h"
#include "src/plugins/dynamic_resources/selectors.h"
#include "src/plugins/names.h"

namespace gpusched::explain {
namespace {

namespace dr = plugins::dynamic_resources;

std::string_view EffectName(api::TaintEffect e) {
  switch (e) {
    case api::TaintEffect::kNoSchedule: return "NoSchedule";
    case api::TaintEffect::kPreferNoSchedule: return "PreferNoSchedule";
    case api::TaintEffect::kNoExecute: return "NoExecute";
    default: return "";
  }
}

// The first NoSchedule/NoExecute taint of `d` that `choice` does not tolerate, or nullptr.
const api::Taint* UntoleratedTaint(const api::Device& d, const api::DeviceChoice& choice) {
  for (const api::Taint& t : d.taints) {
    if (t.effect != api::TaintEffect::kNoSchedule && t.effect != api::TaintEffect::kNoExecute) {
      continue;
    }
    if (std::none_of(choice.tolerations.begin(), choice.tolerations.end(),
                     [&](const api::Toleration& tol) { return tol.Tolerates(t); })) {
      return &t;
    }
  }
  return nullptr;
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

}  // namespace

std::string DraNodeOf(const Explanation& ex) {
  if (!ex.chosen.empty()) return ex.chosen;
  if (!ex.subject.bound_node.empty()) return ex.subject.bound_node;
  for (const NodeRow& n : ex.nodes) {
    if (n.feasible) return n.name;
  }
  for (const NodeRow& n : ex.nodes) {
    if (n.plugin == plugins::names::kDynamicResources) return n.name;
  }
  return ex.nodes.empty() ? std::string() : ex.nodes.front().name;
}

std::optional<DraRow> ExplainClaims(const framework::DraView& view, const api::Pod& pod,
                                    const api::Node& node) {
  if (pod.resource_claims == nullptr || pod.resource_claims->claims.empty()) return std::nullopt;
  DraRow row;
  row.node = node.meta.name;
  const std::shared_ptr<const framework::DeviceIndex> index = view.devices();
  const std::shared_ptr<const framework::DeviceUsage> usage = view.usage();

  // The devices the node reaches, busy or not, in index order.
  std::vector<dr::NodeDevice> reach;
  auto add = [&](uint32_t d) {
    const bool busy = d < usage->holder.size() && usage->holder[d] != nullptr;
    reach.push_back({d, busy});
  };
  for (uint32_t d : index->NodeDevices(node.meta.name)) add(d);
  for (uint32_t d : index->not_node_local) {
    const framework::DeviceEntry& e = index->devices[d];
    if (e.all_nodes || (e.node_selector != nullptr &&
                        e.node_selector->Matches(node.meta.labels, node.meta.name))) {
      add(d);
    }
  }
  const auto unreachable = static_cast<int32_t>(index->devices.size() - reach.size());

  // Resolve the claims; plan the unallocated ones as the plugin does.
  const api::PodResourceClaims& pc = *pod.resource_claims;
  std::vector<PodClaim> claims;
  for (size_t i = 0; i < pc.claims.size(); ++i) {
    const std::optional<std::string> name = pc.ClaimName(i);
    if (!name) {
      row.message = "claim " + pc.claims[i].name + " not created yet";
      continue;
    }
    if (name->empty()) continue;
    api::ResourceClaimPtr claim = view.GetClaim(pod.meta.namespace_, *name);
    if (claim == nullptr) {
      row.message = "resourceclaim " + pod.meta.namespace_ + "/" + *name + " not found";
      continue;
    }
    claims.push_back({pod.meta.namespace_ + "/" + *name, std::move(claim)});
  }

  dr::SelectorCache selectors;
  std::vector<dr::ClaimPlan> plans;
  std::vector<size_t> plan_of(claims.size(), SIZE_MAX);
  // Per (claim, request alternative): the class-only matches, to tell the two selector verdicts
  // apart.
  std::vector<std::vector<std::shared_ptr<const dr::ChoiceMatches>>> class_only(claims.size());
  for (size_t c = 0; c < claims.size(); ++c) {
    const api::ResourceClaim& claim = *claims[c].claim;
    if (claim.allocation) continue;
    dr::ClaimPlan plan;
    plan.claim = claims[c].claim;
    bool ok = true;
    for (const api::DeviceRequest& r : claim.spec.requests) {
      dr::RequestPlan rp;
      rp.name = r.name;
      auto alternative = [&](std::string result, const api::DeviceChoice& choice) {
        auto m = selectors.Matches(view, *index, choice);
        api::DeviceChoice bare = choice;
        bare.selectors.clear();
        auto m_class = selectors.Matches(view, *index, bare);
        if (!m.ok() || !m_class.ok()) {
          row.message = claims[c].label + " request " + result + ": " +
                        std::string((m.ok() ? m_class : m).status().message());
          ok = false;
          return;
        }
        rp.alternatives.push_back({std::move(result), &choice, *m});
        class_only[c].push_back(*m_class);
      };
      if (r.exactly) alternative(r.name, *r.exactly);
      for (const api::DeviceSubRequest& sub : r.first_available) {
        alternative(r.name + "/" + sub.name, sub.choice);
      }
      plan.requests.push_back(std::move(rp));
    }
    for (const api::DeviceConstraint& k : claim.spec.constraints) {
      if (k.match_attribute.empty()) continue;
      dr::ConstraintPlan cp;
      cp.attribute = k.match_attribute;
      for (const std::string& name : k.requests) {
        const std::string_view base = std::string_view(name).substr(0, name.find('/'));
        for (size_t i = 0; i < plan.requests.size(); ++i) {
          if (plan.requests[i].name == base) cp.requests.push_back(i);
        }
      }
      plan.constraints.push_back(std::move(cp));
    }
    if (!ok) continue;
    plan_of[c] = plans.size();
    plans.push_back(std::move(plan));
  }

  // What the allocator picks on this node, per plan: device keys by result request.
  std::vector<std::vector<api::DeviceResult>> results;
  const bool allocatable = plans.empty() || dr::Allocate(plans, *index, reach, &results);
  if (!allocatable && row.message.empty()) {
    row.message = std::string(dr::kReasonCannotAllocate) + " on " + node.meta.name;
  }
  auto key_of = [](const api::DeviceResult& r) { return r.driver + "/" + r.pool + "/" + r.device; };

  for (size_t c = 0; c < claims.size(); ++c) {
    const api::ResourceClaim& claim = *claims[c].claim;
    if (claim.allocation) {
      // Allocated: its devices, by request.
      std::vector<std::string> requests;
      for (const api::DeviceResult& r : claim.allocation->devices) {
        if (std::find(requests.begin(), requests.end(), r.request) == requests.end()) {
          requests.push_back(r.request);
        }
      }
      for (const std::string& request : requests) {
        DraRequestRow rr;
        rr.claim = claims[c].label;
        rr.request = request;
        for (const api::DeviceRequest& r : claim.spec.requests) {
          const std::string_view base = std::string_view(request).substr(0, request.find('/'));
          if (r.name != base || !r.exactly) continue;
          rr.device_class = r.exactly->device_class;
          rr.selectors = Joined(r.exactly->selectors, " && ");
          rr.count = r.exactly->mode == api::AllocationMode::kAll ? 0 : r.exactly->count;
        }
        for (const api::DeviceResult& r : claim.allocation->devices) {
          if (r.request == request) rr.devices.push_back({key_of(r), "allocated", true});
        }
        row.requests.push_back(std::move(rr));
      }
      continue;
    }
    if (plan_of[c] == SIZE_MAX) continue;
    const dr::ClaimPlan& plan = plans[plan_of[c]];
    std::vector<std::string> picked_all;  // this claim's picks, for constraint verdicts
    if (allocatable) {
      for (const api::DeviceResult& r : results[plan_of[c]]) picked_all.push_back(key_of(r));
    }
    size_t alt_index = 0;
    for (size_t q = 0; q < plan.requests.size(); ++q) {
      for (const dr::Alternative& alt : plan.requests[q].alternatives) {
        const dr::ChoiceMatches& cls = *class_only[c][alt_index++];
        DraRequestRow rr;
        rr.claim = claims[c].label;
        rr.request = alt.result_request;
        rr.device_class = alt.choice->device_class;
        rr.selectors = Joined(alt.choice->selectors, " && ");
        rr.count = alt.choice->mode == api::AllocationMode::kAll ? 0 : alt.choice->count;
        rr.unreachable = unreachable;
        std::vector<std::string> picked;  // this alternative's picks
        if (allocatable) {
          for (const api::DeviceResult& r : results[plan_of[c]]) {
            if (r.request == alt.result_request) picked.push_back(key_of(r));
          }
        }
        // The constraint values of the claim's picks, for "constraint mismatch".
        for (const dr::NodeDevice& nd : reach) {
          const framework::DeviceEntry& e = index->devices[nd.device];
          DraDeviceRow dev;
          dev.device = e.key;
          if (std::find(picked.begin(), picked.end(), e.key) != picked.end()) {
            dev.verdict = "selected";
            dev.selected = true;
          } else if (cls.match[nd.device] == 0) {
            dev.verdict = "class selector false";
          } else if (alt.matches->match[nd.device] == 0) {
            dev.verdict = "request selector false";
          } else if (nd.busy && !alt.choice->admin_access) {
            const api::ResourceClaimPtr& holder = usage->holder[nd.device];
            dev.verdict = "held by claim " + holder->meta.namespace_ + "/" + holder->meta.name;
          } else if (const api::Taint* t = UntoleratedTaint(*e.device, *alt.choice)) {
            dev.verdict = "tainted " + std::string(common::Str(t->key)) + "=" +
                          std::string(common::Str(t->value)) + ":" +
                          std::string(EffectName(t->effect));
          } else {
            dev.verdict = allocatable ? "matches, not needed" : "matches";
            for (const dr::ConstraintPlan& k : plan.constraints) {
              if (!k.requests.empty() &&
                  std::find(k.requests.begin(), k.requests.end(), q) == k.requests.end()) {
                continue;
              }
              const api::DeviceAttribute* mine = e.device->Attribute(k.attribute);
              if (mine == nullptr) {
                dev.verdict = "constraint mismatch: no " + k.attribute;
                break;
              }
              // No allocation to compare with: the value, so the reader sees the groups.
              if (!allocatable) dev.verdict += ", " + k.attribute + " " + AttributeText(*mine);
              for (const std::string& p : picked_all) {
                auto it = index->by_key.find(p);
                if (it == index->by_key.end()) continue;
                const api::DeviceAttribute* theirs =
                    index->devices[it->second].device->Attribute(k.attribute);
                if (theirs != nullptr && !(*theirs == *mine)) {
                  dev.verdict = "constraint mismatch: " + k.attribute + " " + AttributeText(*mine) +
                                ", picked " + AttributeText(*theirs);
                  break;
                }
              }
            }
          }
          rr.devices.push_back(std::move(dev));
        }
        row.requests.push_back(std::move(rr));
      }
    }
  }
  return row;
}

}  // namespace gpusched::explain
