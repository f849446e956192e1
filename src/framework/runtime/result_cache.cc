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

ResultCache::ResultCache(size_t max_classes) : max_classes_(std::max<size_t>(1, max_classes)) {
  classes_.reserve(max_classes_);
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

ResultCache::Class& ResultCache::Acquire(std::string_view key, uint64_t hash,
                                         const Snapshot& snapshot,
                                         std::span<const uint64_t> filter_signature) {
  if (&snapshot != snapshot_ || snapshot.generation() < snapshot_generation_) {
    classes_.clear();
    snapshot_ = &snapshot;
  }
  snapshot_generation_ = snapshot.generation();
  ++tick_;
  Class* c = nullptr;
  for (Class& k : classes_) {
    if (k.hash_ == hash && k.key_ == key) {
      c = &k;
      break;
    }
  }
  if (c == nullptr) {
    if (classes_.size() < max_classes_) {
      c = &classes_.emplace_back();
    } else {
      c = &*std::min_element(classes_.begin(), classes_.end(), [](const Class& a, const Class& b) {
        return a.last_used_ < b.last_used_;
      });
    }
    c->owner_ = this;
    c->key_.assign(key);
    c->hash_ = hash;
    c->filter_signature_.clear();
    c->score_signature_.clear();
    c->num_score_ = 0;
    std::fill(c->filter_gen_.begin(), c->filter_gen_.end(), Class::kNone);
    std::fill(c->score_gen_.begin(), c->score_gen_.end(), Class::kNone);
  }
  c->last_used_ = tick_;
  const size_t slots = snapshot.nodes().size();
  if (c->slots_ != slots) {  // nodes were added: keep verdicts, re-lay the score columns
    c->slots_ = slots;
    c->filter_gen_.resize(slots, Class::kNone);
    c->verdict_id_.resize(slots, 0);
    c->score_gen_.assign(slots, Class::kNone);
    c->scores_.clear();
  }
  if (!std::equal(filter_signature.begin(), filter_signature.end(), c->filter_signature_.begin(),
                  c->filter_signature_.end())) {
    c->filter_signature_.assign(filter_signature.begin(), filter_signature.end());
    std::fill(c->filter_gen_.begin(), c->filter_gen_.end(), Class::kNone);
  }
  return *c;
}

void ResultCache::PrepareScores(Class& c, std::span<const uint64_t> score_signature,
                                size_t num_score) {
  if (c.num_score_ != num_score ||
      !std::equal(score_signature.begin(), score_signature.end(), c.score_signature_.begin(),
                  c.score_signature_.end())) {
    c.score_signature_.assign(score_signature.begin(), score_signature.end());
    c.num_score_ = num_score;
    std::fill(c.score_gen_.begin(), c.score_gen_.end(), Class::kNone);
  }
  const size_t want = c.slots_ * num_score;
  if (c.scores_.size() != want) c.scores_.assign(want, 0);
}

}  // namespace gpusched::framework::runtime
