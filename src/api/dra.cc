// SPDX-License-Identifier: Apache-2.0
#include "src/api/dra.h"

#include <algorithm>

namespace gpusched::api {

std::optional<std::string> PodResourceClaims::ClaimName(size_t i) const {
  const PodClaimSource& src = claims[i];
  if (!src.claim_name.empty()) return src.claim_name;
  for (const auto& [name, generated] : statuses) {
    if (name == src.name) return generated;
  }
  return std::nullopt;
}

const DeviceAttribute* Device::Attribute(std::string_view qualified) const {
  auto it = std::lower_bound(attributes.begin(), attributes.end(), qualified,
                             [](const auto& a, std::string_view k) { return a.first < k; });
  return it != attributes.end() && it->first == qualified ? &it->second : nullptr;
}

const CapacityRequestPolicy* Device::Policy(std::string_view qualified) const {
  auto it = std::lower_bound(capacity_policies.begin(), capacity_policies.end(), qualified,
                             [](const auto& a, std::string_view k) { return a.first < k; });
  return it != capacity_policies.end() && it->first == qualified ? &it->second : nullptr;
}

namespace {

// Whether the request's capacity name `asked` names the device capacity `qualified`.
bool NamesCapacity(std::string_view asked, std::string_view qualified, std::string_view driver) {
  if (asked == qualified) return true;
  return asked.find('/') == std::string_view::npos &&
         qualified.size() == driver.size() + 1 + asked.size() && qualified.starts_with(driver) &&
         qualified[driver.size()] == '/' && qualified.ends_with(asked);
}

// The amount (thousandths) one allocation asking `asked` (null: not named) takes of a capacity of
// `value` with `policy` (may be null); nullopt when it breaks the policy.
std::optional<int64_t> Consumed(const Quantity* asked, const Quantity& value,
                                const CapacityRequestPolicy* policy) {
  if (asked == nullptr) {
    return policy != nullptr && policy->default_value ? policy->default_value->MilliValue()
                                                      : value.MilliValue();
  }
  int64_t amount = asked->MilliValue();
  if (policy == nullptr) return amount;
  if (policy->range_min) {
    const int64_t min = policy->range_min->MilliValue();
    if (amount < min) amount = min;
    if (policy->range_step && policy->range_step->MilliValue() > 0) {
      const int64_t step = policy->range_step->MilliValue();
      amount = min + (amount - min + step - 1) / step * step;
    }
    if (policy->range_max && amount > policy->range_max->MilliValue()) return std::nullopt;
    return amount;
  }
  if (!policy->valid_values.empty()) {
    for (const Quantity& v : policy->valid_values) {
      if (amount <= v.MilliValue()) return v.MilliValue();
    }
    return std::nullopt;
  }
  return amount;
}

}  // namespace

bool ConsumedCapacity(const Device& device, std::string_view driver, const Counters& requests,
                      std::vector<int64_t>& out) {
  out.clear();
  for (const auto& request : requests) {
    if (std::none_of(device.capacity.begin(), device.capacity.end(), [&](const auto& c) {
          return NamesCapacity(request.first, c.first, driver);
        })) {
      return false;
    }
  }
  for (const auto& [name, value] : device.capacity) {
    const Quantity* asked = nullptr;
    for (const auto& [r, amount] : requests) {
      if (NamesCapacity(r, name, driver)) asked = &amount;
    }
    std::optional<int64_t> consumed = Consumed(asked, value, device.Policy(name));
    if (!consumed) return false;
    out.push_back(*consumed);
  }
  return true;
}

bool DeviceTaintRule::Matches(const ResourceSlice& slice, const Device& d) const {
  return has_selector && (!driver || *driver == slice.driver) && (!pool || *pool == slice.pool) &&
         (!device || *device == d.name);
}

ResourceSlicePtr ApplyTaintRules(ResourceSlicePtr slice,
                                 std::span<const DeviceTaintRulePtr> rules) {
  std::shared_ptr<ResourceSlice> patched;  // copied on the first match only
  for (const DeviceTaintRulePtr& rule : rules) {
    for (size_t i = 0; i < slice->devices.size(); ++i) {
      if (!rule->Matches(*slice, slice->devices[i])) continue;
      if (patched == nullptr) patched = std::make_shared<ResourceSlice>(*slice);
      patched->devices[i].taints.push_back(rule->taint);
    }
  }
  if (patched == nullptr) return slice;
  return patched;
}

const Taint* UntoleratedTaint(const Device& device, std::span<const Toleration> tolerations) {
  for (const Taint& t : device.taints) {
    if (t.effect != TaintEffect::kNoSchedule && t.effect != TaintEffect::kNoExecute) continue;
    if (std::none_of(tolerations.begin(), tolerations.end(),
                     [&](const Toleration& tol) { return tol.Tolerates(t); })) {
      return &t;
    }
  }
  return nullptr;
}

bool IsExtendedResourceClaim(const ResourceClaim& claim) {
  const std::string* v = claim.meta.Annotation(kExtendedResourceClaimAnnotation);
  return v != nullptr && *v == "true";
}

std::string_view ControllerUid(const ObjectMeta& meta) {
  for (const OwnerReference& r : meta.owner_references) {
    if (r.controller) return r.uid;
  }
  return {};
}

ClaimConsumer ConsumerFor(const Pod& pod, size_t pod_claim, const PodGroup* group) {
  const PodClaimSource& src = pod.resource_claims->claims[pod_claim];
  if (group != nullptr && group->resource_claims != nullptr && group->api == GangApi::kNative &&
      group->name == pod.scheduling_group && group->namespace_ == pod.meta.namespace_) {
    for (const PodClaimSource& g : group->resource_claims->claims) {
      if (g == src) {
        return {std::string(kPodGroupsResource), group->name, group->uid,
                std::string(kNativeGangGroup)};
      }
    }
  }
  return {"pods", pod.meta.name, pod.meta.uid, ""};
}

namespace {

bool IsPodGroupOf(const Pod& pod, std::string_view api_group, std::string_view name) {
  return !pod.scheduling_group.empty() && api_group == kNativeGangGroup &&
         name == pod.scheduling_group;
}

}  // namespace

bool IsReservedForPod(const ResourceClaim& claim, const Pod& pod) {
  return std::any_of(
      claim.reserved_for.begin(), claim.reserved_for.end(), [&](const ClaimConsumer& c) {
        return c.uid == pod.meta.uid ||
               (c.resource == kPodGroupsResource && IsPodGroupOf(pod, c.api_group, c.name));
      });
}

bool IsClaimForPod(const ResourceClaim& claim, const Pod& pod) {
  for (const OwnerReference& r : claim.meta.owner_references) {
    if (!r.controller) continue;
    if (!pod.meta.uid.empty() && r.uid == pod.meta.uid) return true;
    const size_t slash = r.api_version.find('/');
    return r.kind == "PodGroup" && slash != std::string::npos &&
           IsPodGroupOf(pod, std::string_view(r.api_version).substr(0, slash), r.name);
  }
  return false;
}

}  // namespace gpusched::api
