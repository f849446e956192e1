// SPDX-License-Identifier: Apache-2.0
// FakeGangs: a framework::Gangs that plugin tests fill by hand — policies by key, reserved
// members by gang key, trial domains. Not thread-safe (tests call it from one thread).
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "src/api/gang.h"
#include "src/api/types.h"
#include "src/framework/gangs.h"

namespace gpusched::testing {

class FakeGangs final : public framework::Gangs {
 public:
  api::PodGroupPtr PolicyOf(const api::Pod& pod) const override {
    return Policy(api::PolicyKey(pod));
  }
  api::PodGroupPtr Policy(const std::string& key) const override {
    auto it = policies.find(key);
    return it == policies.end() ? nullptr : it->second;
  }
  void Reserve(const api::Pod& pod) override { reserved[api::GangKey(pod)].insert(pod.meta.uid); }
  void Unreserve(const api::Pod& pod) override { reserved[api::GangKey(pod)].erase(pod.meta.uid); }
  std::vector<std::string> ReservedMembers(std::string_view key) const override {
    auto it = reserved.find(std::string(key));
    if (it == reserved.end()) return {};
    return {it->second.begin(), it->second.end()};
  }
  std::optional<Domain> TrialDomain(std::string_view key) const override {
    auto it = domains.find(std::string(key));
    if (it == domains.end()) return std::nullopt;
    return it->second;
  }
  uint64_t TrialVersion() const override { return version; }

  // Adds `policy` under its key.
  void Add(api::PodGroupPtr policy) { policies[policy->Key()] = std::move(policy); }

  std::map<std::string, api::PodGroupPtr> policies;
  std::map<std::string, std::set<std::string>> reserved;
  std::map<std::string, Domain> domains;
  uint64_t version = 0;
};

}  // namespace gpusched::testing
