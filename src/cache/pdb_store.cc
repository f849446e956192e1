// SPDX-License-Identifier: Apache-2.0
#include "src/cache/pdb_store.h"

#include <utility>

namespace gpusched::cache {

namespace {

std::string Key(const api::PodDisruptionBudget& pdb) {
  return pdb.meta.namespace_ + "/" + pdb.meta.name;
}

}  // namespace

void PdbStore::Upsert(api::PdbPtr pdb) {
  std::string key = Key(*pdb);
  common::MutexLock lock(mu_);
  pdbs_[std::move(key)] = std::move(pdb);
}

void PdbStore::Delete(const api::PodDisruptionBudget& pdb) {
  const std::string key = Key(pdb);
  common::MutexLock lock(mu_);
  pdbs_.erase(key);
}

std::vector<api::PdbPtr> PdbStore::List() const {
  common::MutexLock lock(mu_);
  std::vector<api::PdbPtr> out;
  out.reserve(pdbs_.size());
  for (const auto& [key, pdb] : pdbs_) out.push_back(pdb);
  return out;
}

}  // namespace gpusched::cache
