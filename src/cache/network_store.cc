// SPDX-License-Identifier: Apache-2.0
#include "src/cache/network_store.h"

#include <utility>

namespace gpusched::cache {
namespace {

std::string Key(std::string_view ns, std::string_view name) {
  std::string k(ns);
  k += '/';
  k += name;
  return k;
}

}  // namespace

const api::AppGroup* NetworkSnapshot::FindAppGroup(std::string_view ns,
                                                   std::string_view name) const {
  auto it = app_groups.find(Key(ns, name));
  return it == app_groups.end() ? nullptr : it->second.get();
}

const api::NetworkTopology* NetworkSnapshot::FindTopology(std::string_view ns,
                                                          std::string_view name) const {
  auto it = topologies.find(Key(ns, name));
  if (it == topologies.end()) it = topologies.find(Key("", name));
  return it == topologies.end() ? nullptr : it->second.get();
}

NetworkStore::NetworkStore() : current_(std::make_shared<const NetworkSnapshot>()) {}

std::shared_ptr<const framework::NetworkCatalog> NetworkStore::Current() const {
  return CurrentSnapshot();
}

std::shared_ptr<const NetworkSnapshot> NetworkStore::CurrentSnapshot() const {
  common::MutexLock lock(mu_);
  return current_;
}

void NetworkStore::UpsertAppGroup(api::AppGroupPtr ag) {
  common::MutexLock lock(mu_);
  auto next = std::make_shared<NetworkSnapshot>(*current_);
  ++next->version;
  std::string key = Key(ag->namespace_, ag->name);
  next->app_groups[key] = std::move(ag);
  current_ = std::move(next);
}

void NetworkStore::DeleteAppGroup(std::string_view ns, std::string_view name) {
  common::MutexLock lock(mu_);
  auto next = std::make_shared<NetworkSnapshot>(*current_);
  ++next->version;
  next->app_groups.erase(Key(ns, name));
  current_ = std::move(next);
}

void NetworkStore::UpsertTopology(api::NetworkTopologyPtr nt) {
  common::MutexLock lock(mu_);
  auto next = std::make_shared<NetworkSnapshot>(*current_);
  ++next->version;
  std::string key = Key(nt->namespace_, nt->name);
  next->topologies[key] = std::move(nt);
  current_ = std::move(next);
}

void NetworkStore::DeleteTopology(std::string_view ns, std::string_view name) {
  common::MutexLock lock(mu_);
  auto next = std::make_shared<NetworkSnapshot>(*current_);
  ++next->version;
  next->topologies.erase(Key(ns, name));
  current_ = std::move(next);
}

void NetworkStore::SetTrafficMatrix(std::shared_ptr<const api::TrafficMatrix> matrix) {
  common::MutexLock lock(mu_);
  auto next = std::make_shared<NetworkSnapshot>(*current_);
  ++next->version;
  next->measured_traffic = std::move(matrix);
  current_ = std::move(next);
}

}  // namespace gpusched::cache
