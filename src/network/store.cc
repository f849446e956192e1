// SPDX-License-Identifier: Apache-2.0
#include "src/network/store.h"

#include <utility>

namespace gpusched::network {
namespace {

std::string Key(std::string_view ns, std::string_view name) {
  std::string k(ns);
  k += '/';
  k += name;
  return k;
}

}  // namespace

const AppGroup* Catalog::FindAppGroup(std::string_view ns, std::string_view name) const {
  auto it = app_groups.find(Key(ns, name));
  return it == app_groups.end() ? nullptr : it->second.get();
}

const NetworkTopology* Catalog::FindTopology(std::string_view ns, std::string_view name) const {
  auto it = topologies.find(Key(ns, name));
  if (it == topologies.end()) it = topologies.find(Key("", name));
  return it == topologies.end() ? nullptr : it->second.get();
}

NetworkStore::NetworkStore() : current_(std::make_shared<const Catalog>()) {}

std::shared_ptr<const Catalog> NetworkStore::Current() const {
  common::MutexLock lock(mu_);
  return current_;
}

void NetworkStore::UpsertAppGroup(AppGroup ag) {
  common::MutexLock lock(mu_);
  auto next = std::make_shared<Catalog>(*current_);
  ++next->version;
  std::string key = Key(ag.namespace_, ag.name);
  next->app_groups[key] = std::make_shared<const AppGroup>(std::move(ag));
  current_ = std::move(next);
}

void NetworkStore::DeleteAppGroup(std::string_view ns, std::string_view name) {
  common::MutexLock lock(mu_);
  auto next = std::make_shared<Catalog>(*current_);
  ++next->version;
  next->app_groups.erase(Key(ns, name));
  current_ = std::move(next);
}

void NetworkStore::UpsertTopology(NetworkTopology nt) {
  common::MutexLock lock(mu_);
  auto next = std::make_shared<Catalog>(*current_);
  ++next->version;
  std::string key = Key(nt.namespace_, nt.name);
  next->topologies[key] = std::make_shared<const NetworkTopology>(std::move(nt));
  current_ = std::move(next);
}

void NetworkStore::DeleteTopology(std::string_view ns, std::string_view name) {
  common::MutexLock lock(mu_);
  auto next = std::make_shared<Catalog>(*current_);
  ++next->version;
  next->topologies.erase(Key(ns, name));
  current_ = std::move(next);
}

void NetworkStore::SetTrafficMatrix(std::shared_ptr<const TrafficMatrix> matrix) {
  common::MutexLock lock(mu_);
  auto next = std::make_shared<Catalog>(*current_);
  ++next->version;
  next->traffic_matrix = std::move(matrix);
  current_ = std::move(next);
}

}  // namespace gpusched::network
