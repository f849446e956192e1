// SPDX-License-Identifier: Apache-2.0
#include "src/framework/preemption/victim_cache.h"

#include <algorithm>

namespace gpusched::framework::preemption {

void VictimCache::Begin(std::string_view key, std::string_view signature, const Snapshot& snapshot,
                        std::span<const api::PdbPtr> pdbs) {
  current_ = nullptr;
  if (signature.empty()) return;
  std::string full(key);
  full += '\0';
  full += signature;
  Class* c = nullptr;
  for (Class& k : classes_) {
    if (k.key == full) c = &k;
  }
  if (c == nullptr) {
    if (classes_.size() < kMaxClasses) {
      c = &classes_.emplace_back();
    } else {  // the least recently used class
      c = &*std::min_element(classes_.begin(), classes_.end(), [](const Class& a, const Class& b) {
        return a.last_use < b.last_use;
      });
    }
    c->key = std::move(full);
    c->entries.clear();
  }
  bool same_pdbs = c->pdbs.size() == pdbs.size();
  for (size_t i = 0; same_pdbs && i < pdbs.size(); ++i) same_pdbs = c->pdbs[i] == pdbs[i].get();
  if (!same_pdbs || c->snapshot != &snapshot) {
    c->entries.clear();
    c->snapshot = &snapshot;
    c->pdbs.clear();
    for (const api::PdbPtr& p : pdbs) c->pdbs.push_back(p.get());
  }
  if (c->entries.size() < snapshot.nodes().size()) c->entries.resize(snapshot.nodes().size());
  c->last_use = ++clock_;
  current_ = c;
}

const VictimCache::Entry* VictimCache::Find(NodeIndex n, uint64_t generation) const {
  if (current_ == nullptr || generation == 0 || n < 0) return nullptr;
  const auto i = static_cast<size_t>(n);
  if (i >= current_->entries.size() || current_->entries[i].generation != generation) {
    return nullptr;
  }
  ++stats_.hits;
  return &current_->entries[i];
}

void VictimCache::Store(NodeIndex n, uint64_t generation, const Status& status,
                        const Candidate& result) {
  if (current_ == nullptr || generation == 0 || n < 0 || status.IsError()) return;
  const auto i = static_cast<size_t>(n);
  if (i >= current_->entries.size()) return;
  Entry& e = current_->entries[i];
  e.generation = generation;
  e.status = status;
  e.victims = result.victims;
  e.pdb_violations = result.pdb_violations;
  ++stats_.stores;
}

}  // namespace gpusched::framework::preemption
