// SPDX-License-Identifier: Apache-2.0
#include "src/cache/gang_store.h"

#include <utility>

namespace gpusched::cache {

api::PodGroupPtr GangStore::PolicyOf(const api::Pod& pod) const {
  if (pod.gang.empty()) return nullptr;
  const std::string key = api::PolicyKey(pod);
  common::MutexLock lock(mu_);
  auto it = policies_.find(key);
  return it == policies_.end() ? nullptr : it->second;
}

GangStore::Gang& GangStore::GangFor(const api::Pod& pod) {
  Gang& g = gangs_[api::GangKey(pod)];
  if (g.policy_key.empty()) g.policy_key = api::PolicyKey(pod);
  return g;
}

GangStore::Member& GangStore::MemberFor(const api::Pod& pod) {
  Member& m = GangFor(pod).members[pod.meta.uid];
  if (m.name.empty()) {
    m.namespace_ = pod.meta.namespace_;
    m.name = pod.meta.name;
  }
  return m;
}

void GangStore::Reserve(const api::Pod& pod) {
  if (pod.gang.empty()) return;
  common::MutexLock lock(mu_);
  MemberFor(pod).reserved = true;
}

void GangStore::Unreserve(const api::Pod& pod) {
  if (pod.gang.empty()) return;
  common::MutexLock lock(mu_);
  auto g = gangs_.find(api::GangKey(pod));
  if (g == gangs_.end()) return;
  auto m = g->second.members.find(pod.meta.uid);
  if (m != g->second.members.end()) m->second.reserved = false;
}

std::vector<std::string> GangStore::ReservedMembers(std::string_view gang_key) const {
  std::vector<std::string> out;
  common::MutexLock lock(mu_);
  auto g = gangs_.find(std::string(gang_key));
  if (g == gangs_.end()) return out;
  for (const auto& [uid, m] : g->second.members) {
    if (m.reserved) out.push_back(uid);
  }
  return out;
}

std::optional<framework::Gangs::Domain> GangStore::TrialDomain(std::string_view gang_key) const {
  common::MutexLock lock(mu_);
  if (trials_.empty()) return std::nullopt;
  auto it = trials_.find(std::string(gang_key));
  if (it == trials_.end()) return std::nullopt;
  return it->second;
}

uint64_t GangStore::TrialVersion() const {
  common::MutexLock lock(mu_);
  return trial_version_;
}

void GangStore::SetPolicy(api::PodGroupPtr policy) {
  common::MutexLock lock(mu_);
  policies_[policy->Key()] = std::move(policy);
}

void GangStore::RemovePolicy(const std::string& policy_key) {
  common::MutexLock lock(mu_);
  policies_.erase(policy_key);
}

api::PodGroupPtr GangStore::Policy(const std::string& policy_key) const {
  common::MutexLock lock(mu_);
  auto it = policies_.find(policy_key);
  return it == policies_.end() ? nullptr : it->second;
}

void GangStore::ObserveMember(const api::Pod& pod, bool gone) {
  if (pod.gang.empty()) return;
  common::MutexLock lock(mu_);
  Gang& g = GangFor(pod);
  if (gone) {
    g.members.erase(pod.meta.uid);
    if (g.members.empty() && !g.attempt_since) gangs_.erase(api::GangKey(pod));
    return;
  }
  Member& m = MemberFor(pod);
  m.phase = pod.phase;
  if (!pod.node_name.empty()) m.reserved = !pod.Terminal();
}

void GangStore::SetTrial(const std::string& gang_key, Domain domain) {
  common::MutexLock lock(mu_);
  trials_[gang_key] = domain;
  ++trial_version_;
}

void GangStore::ClearTrial(const std::string& gang_key) {
  common::MutexLock lock(mu_);
  if (trials_.erase(gang_key) > 0) ++trial_version_;
}

void GangStore::BeginAttempt(const std::string& gang_key, common::TimePoint now) {
  common::MutexLock lock(mu_);
  Gang& g = gangs_[gang_key];
  if (!g.attempt_since) g.attempt_since = now;
}

std::optional<common::Duration> GangStore::Placed(const std::string& gang_key,
                                                  common::TimePoint now) {
  common::MutexLock lock(mu_);
  Gang& g = gangs_[gang_key];
  std::optional<common::Duration> took;
  if (g.attempt_since) took = now - *g.attempt_since;
  g.attempt_since.reset();
  g.timed_out = false;
  g.placed = true;
  return took;
}

std::vector<GangStore::TimedOut> GangStore::ExpireTimeouts(common::TimePoint now) {
  std::vector<TimedOut> out;
  common::MutexLock lock(mu_);
  for (auto& [key, g] : gangs_) {
    if (g.timed_out || !g.attempt_since) continue;
    auto p = policies_.find(g.policy_key);
    if (p == policies_.end()) continue;
    if (now - *g.attempt_since < framework::ScheduleTimeoutOf(*p->second)) continue;
    g.timed_out = true;
    TimedOut t{key, p->second, {}};
    for (const auto& [uid, m] : g.members) t.members.push_back({m.namespace_, m.name, uid});
    out.push_back(std::move(t));
  }
  return out;
}

std::vector<GangStore::GangState> GangStore::States() const {
  std::vector<GangState> out;
  common::MutexLock lock(mu_);
  out.reserve(gangs_.size());
  for (const auto& [key, g] : gangs_) {
    GangState s;
    s.gang_key = key;
    if (auto p = policies_.find(g.policy_key); p != policies_.end()) s.policy = p->second;
    for (const auto& [uid, m] : g.members) {
      ++s.members;
      s.reserved += m.reserved ? 1 : 0;
      s.running += m.phase == api::PodPhase::kRunning ? 1 : 0;
      s.succeeded += m.phase == api::PodPhase::kSucceeded ? 1 : 0;
      s.failed += m.phase == api::PodPhase::kFailed ? 1 : 0;
    }
    s.waiting = g.attempt_since.has_value();
    s.timed_out = g.timed_out;
    s.placed = g.placed;
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace gpusched::cache
