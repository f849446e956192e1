// SPDX-License-Identifier: Apache-2.0
#include "src/framework/runtime/result_cache.h"

#include <algorithm>
#include <cstdint>

namespace gpusched::framework::runtime {

Status ResultCache::Class::Verdict(size_t i) const {
  const StoredVerdict& v = owner_->verdicts_[verdict_id_[i]];
  Status s(v.code, v.reason);
  s.WithPlugin(v.plugin);
  return s;
}

void ResultCache::Class::StoreVerdict(size_t i, uint64_t generation, const Status& s) {
  if (generation == 0 || s.IsError() || i >= filter_gen_.size()) return;
  const int32_t id = owner_->VerdictId(s);
  if (id < 0) return;
  verdict_id_[i] = static_cast<uint16_t>(id);
  filter_gen_[i] = generation;
}

ResultCache::ResultCache(size_t max_recent, size_t max_waiting_bytes)
    : max_recent_(std::max<size_t>(1, max_recent)), max_waiting_bytes_(max_waiting_bytes) {
  verdicts_.push_back(StoredVerdict{});
}

int32_t ResultCache::VerdictId(const Status& s) {
  if (s.ok()) return 0;
  // Reasons and plugin names are interned or literals: compare by pointer, as the runtime's
  // diagnosis does; the previous id is the common case.
  auto same = [&s](const StoredVerdict& v) {
    return v.code == s.code() && v.reason.data() == s.reason().data() &&
           v.reason.size() == s.reason().size() && v.plugin.data() == s.plugin().data() &&
           v.plugin.size() == s.plugin().size();
  };
  if (last_verdict_id_ > 0 && same(verdicts_[static_cast<size_t>(last_verdict_id_)])) {
    return last_verdict_id_;
  }
  for (size_t k = 1; k < verdicts_.size(); ++k) {
    if (same(verdicts_[k])) return last_verdict_id_ = static_cast<int32_t>(k);
  }
  if (verdicts_.size() > UINT16_MAX) return -1;
  verdicts_.push_back(StoredVerdict{s.reason(), s.plugin(), s.code()});
  return last_verdict_id_ = static_cast<int32_t>(verdicts_.size() - 1);
}

ResultCache::Class* ResultCache::Find(std::string_view key, uint64_t hash) {
  auto [first, last] = by_hash_.equal_range(hash);
  for (auto it = first; it != last; ++it) {
    if (it->second->key_ == key) return it->second;
  }
  return nullptr;
}

void ResultCache::Unindex(const Class& c) {
  auto [first, last] = by_hash_.equal_range(c.hash_);
  for (auto it = first; it != last; ++it) {
    if (it->second == &c) {
      by_hash_.erase(it);
      return;
    }
  }
}

ResultCache::Class& ResultCache::AddRecent(std::string_view key, uint64_t hash) {
  if (recent_.size() >= max_recent_) {
    auto lru = std::prev(recent_.end());
    Unindex(*lru);
    ReturnColumns(*lru);
    recent_.splice(recent_.begin(), recent_, lru);  // iterators stay valid
    std::fill(lru->filter_gen_.begin(), lru->filter_gen_.end(), Class::kNone);
    lru->scanned_all_at_ = 0;
    lru->filter_signature_.clear();
    lru->score_signature_.clear();
    lru->num_score_ = 0;
  } else {
    recent_.emplace_front();
    recent_.front().self_ = recent_.begin();
    recent_.front().owner_ = this;
  }
  Class& c = recent_.front();
  c.key_.assign(key);
  c.hash_ = hash;
  by_hash_.emplace(hash, &c);
  return c;
}

void ResultCache::EvictOverBudget() {
  while (waiting_bytes_ > max_waiting_bytes_ && waiting_.size() > 1) {
    Class& victim = waiting_.back();
    Unindex(victim);
    waiting_bytes_ -= victim.bytes();
    ReturnColumns(victim);
    waiting_.pop_back();
  }
}

ResultCache::Class& ResultCache::Acquire(std::string_view key, uint64_t hash,
                                         const Snapshot& snapshot,
                                         std::span<const uint64_t> filter_signature) {
  if (&snapshot != snapshot_ || snapshot.generation() < snapshot_generation_) {
    for (auto* list : {&recent_, &waiting_}) {
      for (Class& c : *list) ReturnColumns(c);
      list->clear();
    }
    by_hash_.clear();
    waiting_bytes_ = 0;
    snapshot_ = &snapshot;
  }
  snapshot_generation_ = snapshot.generation();
  Class* c = Find(key, hash);
  if (c != nullptr) {
    std::list<Class>& list = c->waiting_ ? waiting_ : recent_;
    list.splice(list.begin(), list, c->self_);
  } else {
    c = &AddRecent(key, hash);
  }
  const size_t slots = snapshot.nodes().size();
  if (c->slots_ != slots) {  // nodes were added: keep verdicts; the score columns start over
    if (c->waiting_) waiting_bytes_ -= c->bytes();
    c->slots_ = slots;
    c->filter_gen_.resize(slots, Class::kNone);
    c->verdict_id_.resize(slots, 0);
    ReturnColumns(*c);
    if (c->waiting_) {
      waiting_bytes_ += c->bytes();
      EvictOverBudget();
    }
  }
  if (!std::equal(filter_signature.begin(), filter_signature.end(), c->filter_signature_.begin(),
                  c->filter_signature_.end())) {
    c->filter_signature_.assign(filter_signature.begin(), filter_signature.end());
    std::fill(c->filter_gen_.begin(), c->filter_gen_.end(), Class::kNone);
    c->scanned_all_at_ = 0;
  }
  return *c;
}

void ResultCache::MarkWaiting(Class& c) {
  if (c.waiting_) return;
  waiting_.splice(waiting_.begin(), recent_, c.self_);
  c.waiting_ = true;
  waiting_bytes_ += c.bytes();
  EvictOverBudget();
}

void ResultCache::ReturnColumns(Class& c) {
  if (c.columns_ == nullptr) return;
  c.columns_->owner = nullptr;
  c.columns_->last_used = 0;
  c.columns_ = nullptr;
}

void ResultCache::PrepareScores(Class& c, std::span<const uint64_t> score_signature,
                                size_t num_score) {
  ++score_tick_;
  if (c.columns_ == nullptr) {
    ScoreColumns* lent = nullptr;
    if (columns_.size() < kMaxScoredClasses) {
      lent = columns_.emplace_back(std::make_unique<ScoreColumns>()).get();
    } else {  // a free one (last_used 0), else the least recently scored class's
      lent = std::min_element(columns_.begin(), columns_.end(), [](const auto& a, const auto& b) {
               return a->last_used < b->last_used;
             })->get();
      if (lent->owner != nullptr) ReturnColumns(*lent->owner);
    }
    lent->owner = &c;
    c.columns_ = lent;
    std::fill(lent->generations.begin(), lent->generations.end(), Class::kNone);
  }
  ScoreColumns& col = *c.columns_;
  col.last_used = score_tick_;
  if (col.generations.size() != c.slots_) col.generations.assign(c.slots_, Class::kNone);
  if (c.num_score_ != num_score ||
      !std::equal(score_signature.begin(), score_signature.end(), c.score_signature_.begin(),
                  c.score_signature_.end())) {
    c.score_signature_.assign(score_signature.begin(), score_signature.end());
    c.num_score_ = num_score;
    std::fill(col.generations.begin(), col.generations.end(), Class::kNone);
  }
  // Read only where a generation matches, and written before: no need to clear.
  col.scores.resize(c.slots_ * num_score);
}

size_t ResultCache::num_scored_classes() const {
  return static_cast<size_t>(std::count_if(columns_.begin(), columns_.end(),
                                           [](const auto& c) { return c->owner != nullptr; }));
}

size_t ResultCache::Class::bytes() const { return ClassBytes(filter_gen_.size()); }

}  // namespace gpusched::framework::runtime
