// SPDX-License-Identifier: Apache-2.0
// PdbStore: the cluster's PodDisruptionBudgets as the informer last delivered them, for
// preemption (framework::Handle::PodDisruptionBudgets). Fed by the scheduler's event handler.
// Thread safety: every method is thread-safe; the budgets are immutable and shared.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "src/api/types.h"
#include "src/common/mutex.h"

namespace gpusched::cache {

class PdbStore {
 public:
  void Upsert(api::PdbPtr pdb);
  void Delete(const api::PodDisruptionBudget& pdb);
  // Every budget, by namespace/name.
  std::vector<api::PdbPtr> List() const;

 private:
  mutable common::Mutex mu_;
  std::map<std::string, api::PdbPtr, std::less<>> pdbs_ GPUSCHED_GUARDED_BY(mu_);  // ns/name
};

}  // namespace gpusched::cache
