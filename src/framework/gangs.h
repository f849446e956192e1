// SPDX-License-Identifier: Apache-2.0
// Gangs: the typed data source through which the GangScheduling plugin sees what the scheduler
// knows about gangs (api/gang.h) — a gang's policy, its members that are reserved (assumed or
// bound), and the topology domain the scheduler's gang cycle is placing it in. The scheduler
// implements it (cache::GangStore) and hands it out through Handle::gangs().
//
// Threading: every method is thread-safe (Reserve/Unreserve run on the scheduling thread and, for
// rollbacks, on binding threads; the informers update policies).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "src/api/gang.h"
#include "src/api/resources.h"
#include "src/api/types.h"
#include "src/common/clock.h"

namespace gpusched::framework {

// The schedule timeout of a gang whose policy sets none (kube-scheduler's Workload default).
inline constexpr common::Duration kDefaultGangScheduleTimeout = std::chrono::minutes(5);

class Gangs {
 public:
  virtual ~Gangs() = default;

  // The policy of the gang `pod` belongs to; nullptr when the pod is in no gang or its policy
  // object is not known (yet).
  virtual api::PodGroupPtr PolicyOf(const api::Pod& pod) const = 0;
  // The policy whose api::PodGroup::Key() is `policy_key`; nullptr when not known.
  virtual api::PodGroupPtr Policy(const std::string& policy_key) const = 0;

  // A member's reservation (the plugin's Reserve/Unreserve); idempotent.
  virtual void Reserve(const api::Pod& pod) = 0;
  virtual void Unreserve(const api::Pod& pod) = 0;
  // The uids of gang `gang_key`'s members that are reserved or bound now.
  virtual std::vector<std::string> ReservedMembers(std::string_view gang_key) const = 0;

  // The node-label domain the scheduler's gang cycle restricts gang `gang_key` to while it tries
  // a placement; nullopt when none. `version` changes whenever any gang's domain changes (the
  // plugin's StateVersion for result reuse).
  struct Domain {
    api::Atom key;
    api::Atom value;
  };
  virtual std::optional<Domain> TrialDomain(std::string_view gang_key) const = 0;
  virtual uint64_t TrialVersion() const = 0;
};

// The value of node label `key` on `node` for a gang's topology domain; false when it has none.
// kubernetes.io/hostname, which the kubelet always sets, is the node's name where it is missing.
inline bool GangDomainValue(const api::Node& node, api::Atom key, api::Atom* value) {
  if (node.meta.labels.Get(key, value)) return true;
  if (key != api::Names().hostname) return false;
  *value = common::Intern(node.meta.name);
  return true;
}

// Whether `node` is in `domain` (GangDomainValue's rule, without interning: Filter runs it per
// node).
inline bool InGangDomain(const api::Node& node, const Gangs::Domain& domain) {
  api::Atom value;
  if (node.meta.labels.Get(domain.key, &value)) return value == domain.value;
  return domain.key == api::Names().hostname && node.meta.name == common::Str(domain.value);
}

// `policy`'s schedule timeout, or the default.
inline common::Duration ScheduleTimeoutOf(const api::PodGroup& policy) {
  return policy.schedule_timeout.value_or(kDefaultGangScheduleTimeout);
}

}  // namespace gpusched::framework
