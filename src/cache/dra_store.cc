// SPDX-License-Identifier: Apache-2.0
#include "src/cache/dra_store.h"

#include <algorithm>
#include <set>
#include <utility>

namespace gpusched::cache {

using api::CompareResourceVersions;
using framework::CounterDraw;
using framework::DeviceEntry;
using framework::DeviceIndex;
using framework::DeviceUsage;
using framework::DraWriter;
using framework::kIslandAttributes;
using framework::kNoNodeSlot;
using framework::SharedCounter;
using framework::WaitingClaim;

namespace {

std::string DeviceKey(std::string_view driver, std::string_view pool, std::string_view device) {
  std::string key(driver);
  key += '/';
  key += pool;
  key += '/';
  key += device;
  return key;
}

template <typename Map>
typename Map::mapped_type Find(const Map& m, std::string_view key) {
  auto it = m.find(key);
  return it == m.end() ? typename Map::mapped_type() : it->second;
}

// Whether result `r` on device `d` is a share of it (KEP-5075): the device allows multiple
// allocations and the result has a share ID. Otherwise it holds the whole device.
bool IsShare(const DeviceIndex& index, uint32_t d, const api::DeviceResult& r) {
  return index.devices[d].shared && !r.share_id.empty();
}

// The counter numbers of what share `r` of device `d` consumes (DeviceEntry::capacity_begin), with
// the amounts in thousandths: f(counter, amount). Capacities the device does not publish are
// skipped.
template <typename F>
void ForEachConsumed(const DeviceIndex& index, uint32_t d, const api::DeviceResult& r, F f) {
  const DeviceEntry& e = index.devices[d];
  const auto& capacity = e.device->capacity;
  for (const auto& [name, amount] : r.consumed_capacity) {
    auto it = std::lower_bound(capacity.begin(), capacity.end(), name,
                               [](const auto& c, const std::string& n) { return c.first < n; });
    if (it == capacity.end() || it->first != name) continue;
    f(e.capacity_begin + static_cast<uint32_t>(it - capacity.begin()), amount.MilliValue());
  }
}

// The devices `claim` holds, whole or a share (admin access does not hold a device): f(device
// number in `index`, result, whether the result is a share). Devices not in the index are skipped.
template <typename F>
void ForEachHeldDevice(const DeviceIndex& index, const api::ResourceClaim& claim, F f) {
  if (!claim.allocation) return;
  for (const api::DeviceResult& r : claim.allocation->devices) {
    if (r.admin_access) continue;
    auto it = index.by_key.find(DeviceKey(r.driver, r.pool, r.device));
    if (it == index.by_key.end()) continue;
    f(it->second, r, IsShare(index, it->second, r));
  }
}

// The island number of `d` (0: none), numbering the (pool, island value) pairs in `islands`.
uint32_t IslandId(const api::ResourceSlice& s, const api::Device& d,
                  std::map<std::string, uint32_t, std::less<>>& islands) {
  for (std::string_view name : kIslandAttributes) {
    const api::DeviceAttribute* a = d.Attribute(name);
    if (a == nullptr) continue;
    std::string key = s.driver + "/" + s.pool + "/" + std::string(name) + "=";
    key += a->kind == api::DeviceAttribute::Kind::kInt ? std::to_string(a->int_value)
                                                       : a->string_value;
    auto [it, added] = islands.emplace(std::move(key), static_cast<uint32_t>(islands.size() + 1));
    return it->second;
  }
  return 0;
}

// Counts a change to device `d`'s usage for its node (DeviceUsage::node_version).
void Touch(DeviceUsage& usage, const DeviceIndex& index, uint32_t d) {
  const uint32_t slot = index.devices[d].node_slot;
  if (slot < usage.node_version.size()) {
    ++usage.node_version[slot];
  } else {
    ++usage.shared_version;
  }
}

// Adds (sign 1) or removes (-1) share `r` of device `d`: what it consumes of the device's
// capacities, and the device's counter draws while it has any share.
void AddShare(DeviceUsage& usage, const DeviceIndex& index, uint32_t d, const api::DeviceResult& r,
              int sign) {
  Touch(usage, index, d);
  const uint32_t before = usage.shares[d];
  usage.shares[d] = sign > 0 ? before + 1 : (before > 0 ? before - 1 : 0);
  if ((before == 0) != (usage.shares[d] == 0)) {
    for (const CounterDraw& c : index.Draws(d)) usage.counter_used[c.counter] += sign * c.amount;
  }
  ForEachConsumed(index, d, r, [&](uint32_t counter, int64_t amount) {
    usage.counter_used[counter] += sign * amount;
  });
}

// Sets who holds device `d` of `index`, keeping the counters its draws take in step.
void SetHolder(DeviceUsage& usage, const DeviceIndex& index, uint32_t d,
               const api::ResourceClaimPtr& holder) {
  Touch(usage, index, d);
  if ((usage.holder[d] == nullptr) != (holder == nullptr)) {
    for (const CounterDraw& c : index.Draws(d)) {
      usage.counter_used[c.counter] += holder != nullptr ? c.amount : -c.amount;
    }
  }
  usage.holder[d] = holder;
}

// Appends what device `d` of slice `s` draws on its pool's counters (numbered by
// `counter_numbers`) to `draws`; returns why the pool is invalid when it names a counter set or
// counter the pool does not define ("" when it does not).
std::string AddDraws(const api::ResourceSlice& s, const api::Device& d,
                     const std::unordered_map<std::string, uint32_t>& counter_numbers,
                     std::vector<CounterDraw>& draws) {
  for (const api::DeviceCounterConsumption& c : d.consumes_counters) {
    const std::string set_key = s.driver + "/" + s.pool + "/" + c.counter_set;
    for (const auto& [counter, value] : c.counters) {
      auto it = counter_numbers.find(set_key + "/" + counter);
      if (it == counter_numbers.end()) {
        return "device \"" + d.name + "\" draws on counter \"" + counter + "\" of counter set \"" +
               c.counter_set + "\", which the pool does not publish";
      }
      draws.push_back({it->second, value.MilliValue()});
    }
  }
  return "";
}

// For a device that allows multiple allocations (KEP-5075): marks `e` shared and numbers its
// capacities as the counters of a set of their own (set `next_set`, then incremented), so that
// the usage and the allocator track what the shares consume as they do counters.
void AddCapacityCounters(DeviceEntry& e, uint32_t& next_set, DeviceIndex& index) {
  e.shared = e.device->allow_multiple_allocations;
  e.capacity_begin = static_cast<uint32_t>(index.counters.size());
  if (e.shared && !e.device->capacity.empty()) {
    for (const auto& [name, value] : e.device->capacity) {
      index.counters.push_back({e.key + "/" + name, value.MilliValue(), next_set});
    }
    ++next_set;
  }
  e.capacity_end = static_cast<uint32_t>(index.counters.size());
}

// Whether devices `a` and `b` cannot both be allocated from full counters: on some counter they
// both draw on, their draws add up to more than its capacity.
// The slices with the taints of the rules that match their devices (the rules in name order).
template <class Slices, class Rules>
std::vector<api::ResourceSlicePtr> WithTaintRules(const Slices& slices, const Rules& by_name) {
  std::vector<api::DeviceTaintRulePtr> rules;
  rules.reserve(by_name.size());
  for (const auto& [name, r] : by_name) rules.push_back(r);
  std::vector<api::ResourceSlicePtr> out;
  out.reserve(slices.size());
  for (const auto& [name, s] : slices) out.push_back(api::ApplyTaintRules(s, rules));
  return out;
}

bool Conflict(const DeviceIndex& index, uint32_t a, uint32_t b) {
  for (const CounterDraw& x : index.Draws(a)) {
    for (const CounterDraw& y : index.Draws(b)) {
      if (x.counter == y.counter && x.amount + y.amount > index.counters[x.counter].capacity) {
        return true;
      }
    }
  }
  return false;
}

// Numbers the nodes of by_node (DeviceEntry::node_slot), then takes the slot from the devices
// that draw on a counter which devices of another slot, or of none, draw on too.
void AssignNodeSlots(DeviceIndex& index) {
  uint32_t slot = 0;
  for (const auto& [node, devices] : index.by_node) {
    for (uint32_t d : devices) index.devices[d].node_slot = slot;
    ++slot;
  }
  index.node_slots = slot;
  if (index.counters.empty()) return;
  constexpr uint32_t kUnseen = kNoNodeSlot - 1;
  std::vector<uint32_t> owner(index.counters.size(), kUnseen);
  for (uint32_t d = 0; d < index.devices.size(); ++d) {
    for (const CounterDraw& c : index.Draws(d)) {
      uint32_t& o = owner[c.counter];
      o = o == kUnseen ? index.devices[d].node_slot
                       : (o == index.devices[d].node_slot ? o : kNoNodeSlot);
    }
  }
  for (uint32_t d = 0; d < index.devices.size(); ++d) {
    for (const CounterDraw& c : index.Draws(d)) {
      if (owner[c.counter] == kNoNodeSlot) index.devices[d].node_slot = kNoNodeSlot;
    }
  }
}

// Sets DeviceEntry::conflicts: per counter set (a device's first draw's), each device against
// every other device drawing on that set; sets drawn on by more than kMaxConflictSet devices are
// left at 0 (the pairs grow with the square).
void CountConflicts(DeviceIndex& index) {
  constexpr size_t kMaxConflictSet = 256;
  std::unordered_map<uint32_t, std::vector<uint32_t>> by_set;
  for (uint32_t d = 0; d < index.devices.size(); ++d) {
    const std::span<const CounterDraw> draws = index.Draws(d);
    if (!draws.empty()) by_set[index.counters[draws.front().counter].set].push_back(d);
  }
  for (const auto& [set, devices] : by_set) {
    if (devices.size() > kMaxConflictSet) continue;
    for (size_t i = 0; i < devices.size(); ++i) {
      for (size_t j = i + 1; j < devices.size(); ++j) {
        if (!Conflict(index, devices[i], devices[j])) continue;
        ++index.devices[devices[i]].conflicts;
        ++index.devices[devices[j]].conflicts;
      }
    }
  }
}

}  // namespace

std::string DraStore::ClaimKey(std::string_view ns, std::string_view name) {
  std::string key(ns);
  key += '/';
  key += name;
  return key;
}

void DraStore::Changed() {
  ++generation_;
  changed_.notify_all();
}

DeviceUsage& DraStore::MutableUsage() const {
  if (usage_.use_count() > 1) usage_ = std::make_shared<DeviceUsage>(*usage_);
  return *usage_;
}

void DraStore::Reuse(const api::ResourceClaimPtr& before,
                     const api::ResourceClaimPtr& after) const {
  if (before == after || index_stale_) return;  // a rebuild takes every claim's usage anew
  const bool had = before != nullptr && before->allocation.has_value();
  const bool has = after != nullptr && after->allocation.has_value();
  if (!had && !has) return;
  DeviceUsage& usage = MutableUsage();
  const DeviceIndex& index = *index_;
  if (had) {
    ForEachHeldDevice(index, *before, [&](uint32_t d, const api::DeviceResult& r, bool share) {
      if (share) {
        AddShare(usage, index, d, r, -1);
      } else if (usage.holder[d] == before) {
        SetHolder(usage, index, d, nullptr);
      }
    });
  }
  if (has) {
    ForEachHeldDevice(index, *after, [&](uint32_t d, const api::DeviceResult& r, bool share) {
      if (share) {
        AddShare(usage, index, d, r, 1);
      } else {
        SetHolder(usage, index, d, after);
      }
    });
  }
}

common::Status DraStore::CheckInvariants() const {
  common::MutexLock l(mu_);
  EnsureIndex();
  const DeviceIndex& index = *index_;
  std::vector<const api::ResourceClaim*> holder(index.devices.size());
  std::vector<uint32_t> shares(index.devices.size());
  std::vector<int64_t> used(index.counters.size());
  for (const auto& entry : claims_) {
    const std::string& key = entry.first;
    const api::ResourceClaim* claim = entry.second.latest().get();
    if (claim == nullptr) continue;
    common::Status bad;
    ForEachHeldDevice(index, *claim, [&](uint32_t d, const api::DeviceResult& r, bool share) {
      if (!bad.ok()) return;
      if (const api::ResourceClaim* other = holder[d]) {
        bad = common::InternalError("device " + index.devices[d].key + " is held by claims " +
                                    ClaimKey(other->meta.namespace_, other->meta.name) + " and " +
                                    key);
        return;
      }
      if (share) {
        if (shares[d]++ == 0) {
          for (const CounterDraw& c : index.Draws(d)) used[c.counter] += c.amount;
        }
        ForEachConsumed(index, d, r, [&](uint32_t c, int64_t amount) { used[c] += amount; });
        return;
      }
      if (shares[d] > 0) {
        bad = common::InternalError("device " + index.devices[d].key + " is held by claim " + key +
                                    " and shared by others");
        return;
      }
      holder[d] = claim;
      for (const CounterDraw& c : index.Draws(d)) used[c.counter] += c.amount;
    });
    if (!bad.ok()) return bad;
  }
  for (size_t d = 0; d < holder.size(); ++d) {
    if ((holder[d] != nullptr) != (usage_->holder[d] != nullptr) ||
        shares[d] != usage_->shares[d]) {
      return common::InternalError("device " + index.devices[d].key +
                                   " is held or shared in the claims but not in the usage, or "
                                   "the reverse");
    }
  }
  for (size_t c = 0; c < used.size(); ++c) {
    const SharedCounter& counter = index.counters[c];
    if (used[c] > counter.capacity) {
      return common::InternalError("counter " + counter.key +
                                   " is over-drawn: the allocated devices draw " +
                                   api::Quantity::FromMilli(used[c]).ToString() + " of " +
                                   api::Quantity::FromMilli(counter.capacity).ToString());
    }
    if (used[c] != usage_->counter_used[c]) {
      return common::InternalError("counter " + counter.key + ": the usage says " +
                                   std::to_string(usage_->counter_used[c]) +
                                   " thousandths drawn, the claims " + std::to_string(used[c]));
    }
  }
  return common::Status();
}

void DraStore::EnsureIndex() const {
  if (!index_stale_) return;
  index_stale_ = false;
  RebuildIndex();
}

void DraStore::RebuildIndex() const {
  auto index = std::make_shared<DeviceIndex>();
  index->version = ++index_versions_;
  // The newest generation of each pool, and how many of its slices are there.
  struct Pool {
    int64_t generation = -1;
    int64_t announced = 0;
    int64_t seen = 0;
  };
  const std::vector<api::ResourceSlicePtr> slices = WithTaintRules(slices_, taint_rules_);
  std::map<std::string, Pool, std::less<>> pools;
  for (const api::ResourceSlicePtr& s : slices) {
    Pool& p = pools[s->driver + "/" + s->pool];
    if (s->pool_generation > p.generation) p = Pool{s->pool_generation, s->pool_slice_count, 0};
    if (s->pool_generation == p.generation) ++p.seen;
  }
  for (const auto& [key, p] : pools) {
    if (p.seen < p.announced) index->incomplete_pools.push_back(key);
  }
  auto newest = [&](const api::ResourceSlice& s) {
    return pools[s.driver + "/" + s.pool].generation == s.pool_generation;
  };
  // The counter sets first: a device may draw on a set published in another slice of its pool.
  std::map<std::string, std::string, std::less<>> invalid;    // pool -> why
  std::unordered_map<std::string, uint32_t> counter_numbers;  // SharedCounter::key -> number
  std::set<std::string, std::less<>> sets;
  for (const api::ResourceSlicePtr& s : slices) {
    if (!newest(*s)) continue;
    for (const api::CounterSet& set : s->shared_counters) {
      const std::string set_key = s->driver + "/" + s->pool + "/" + set.name;
      if (!sets.insert(set_key).second) {
        invalid.emplace(s->driver + "/" + s->pool,
                        "counter set \"" + set.name + "\" is defined twice");
        continue;
      }
      const auto set_number = static_cast<uint32_t>(sets.size() - 1);
      for (const auto& [counter, value] : set.counters) {
        counter_numbers.emplace(set_key + "/" + counter,
                                static_cast<uint32_t>(index->counters.size()));
        index->counters.push_back({set_key + "/" + counter, value.MilliValue(), set_number});
      }
    }
  }
  std::map<std::string, uint32_t, std::less<>> islands;
  auto next_set = static_cast<uint32_t>(sets.size());  // a shared device's capacities: one more
  for (const api::ResourceSlicePtr& s : slices) {
    if (!newest(*s)) continue;
    index->slices.push_back(s);
    for (const api::Device& d : s->devices) {
      DeviceEntry e;
      e.slice = s.get();
      e.device = &d;
      e.key = DeviceKey(s->driver, s->pool, d.name);
      const std::string* node = nullptr;
      if (s->per_device_node_selection) {
        if (!d.node_name.empty()) node = &d.node_name;
        e.node_selector = d.node_selector ? &*d.node_selector : nullptr;
        e.all_nodes = d.all_nodes;
      } else {
        if (!s->node_name.empty()) node = &s->node_name;
        e.node_selector = s->node_selector ? &*s->node_selector : nullptr;
        e.all_nodes = s->all_nodes;
      }
      e.island = IslandId(*s, d, islands);
      const auto n = static_cast<uint32_t>(index->devices.size());
      if (!index->by_key.emplace(e.key, n).second) continue;  // a duplicate name: first wins
      e.draws_begin = static_cast<uint32_t>(index->draws.size());
      if (std::string why = AddDraws(*s, d, counter_numbers, index->draws); !why.empty()) {
        invalid.emplace(s->driver + "/" + s->pool, std::move(why));
      }
      e.draws_end = static_cast<uint32_t>(index->draws.size());
      AddCapacityCounters(e, next_set, *index);
      if (node != nullptr) {
        index->by_node[*node].push_back(n);
      } else if (e.node_selector != nullptr || e.all_nodes) {
        index->not_node_local.push_back(n);
      }
      index->devices.push_back(std::move(e));
    }
  }
  if (!index->counters.empty()) CountConflicts(*index);
  AssignNodeSlots(*index);
  for (const auto& [pool, why] : invalid) index->invalid_pools.push_back(pool + ": " + why);
  if (!invalid.empty()) {
    for (DeviceEntry& e : index->devices) {
      e.invalid = invalid.contains(e.slice->driver + "/" + e.slice->pool);
    }
  }
  index_ = index;
  auto usage = std::make_shared<DeviceUsage>();
  usage->index_version = index->version;
  usage->holder.resize(index->devices.size());
  usage->counter_used.resize(index->counters.size());
  usage->shares.resize(index->devices.size());
  usage->node_version.resize(index->node_slots);
  usage_ = usage;
  for (const auto& [key, e] : claims_) Reuse(nullptr, e.latest());
}

void DraStore::Replaced(const api::ResourceClaimPtr& before, const api::ResourceClaimPtr& after) {
  Reuse(before, after);
  const api::ResourceClaimPtr& either = after != nullptr ? after : before;
  if (either != nullptr) {
    std::string key = ClaimKey(either->meta.namespace_, either->meta.name);
    if (before != nullptr && api::IsExtendedResourceClaim(*before)) {
      auto it = extended_claims_.find(std::string(api::ControllerUid(before->meta)));
      if (it != extended_claims_.end() && it->second == key) extended_claims_.erase(it);
    }
    if (after != nullptr && api::IsExtendedResourceClaim(*after)) {
      extended_claims_[std::string(api::ControllerUid(after->meta))] = key;
    }
    if (after != nullptr && !after->allocation && !after->meta.deletion_timestamp) {
      pending_[std::move(key)] = after;
    } else if (auto it = pending_.find(key); it != pending_.end()) {
      pending_.erase(it);
    }
  }
  Changed();
}

void DraStore::ClassesChanged() {
  extended_.clear();
  for (const auto& [name, c] : classes_) {
    if (c->extended_resource_name.empty()) continue;
    api::DeviceClassPtr& slot = extended_[c->extended_resource_name];
    // The newest class wins, then the smaller name (classes_ is in name order).
    const auto created = [](const api::DeviceClass& d) {
      return d.creation_timestamp.value_or(common::TimePoint{});
    };
    if (slot == nullptr || created(*c) > created(*slot)) slot = c;
  }
  ++class_version_;
  Changed();
}

void DraStore::UpsertDeviceClass(api::DeviceClassPtr c) {
  common::MutexLock l(mu_);
  std::string name = c->name;
  classes_[std::move(name)] = std::move(c);
  ClassesChanged();
}

void DraStore::DeleteDeviceClass(std::string_view name) {
  common::MutexLock l(mu_);
  if (auto it = classes_.find(name); it != classes_.end()) classes_.erase(it);
  ClassesChanged();
}

void DraStore::UpsertSlice(api::ResourceSlicePtr s) {
  common::MutexLock l(mu_);
  std::string name = s->name;
  slices_[std::move(name)] = std::move(s);
  index_stale_ = true;
  Changed();
}

void DraStore::DeleteSlice(std::string_view name) {
  common::MutexLock l(mu_);
  if (auto it = slices_.find(name); it != slices_.end()) slices_.erase(it);
  index_stale_ = true;
  Changed();
}

void DraStore::UpsertTaintRule(api::DeviceTaintRulePtr r) {
  common::MutexLock l(mu_);
  std::string name = r->name;
  taint_rules_[std::move(name)] = std::move(r);
  index_stale_ = true;
  Changed();
}

void DraStore::DeleteTaintRule(std::string_view name) {
  common::MutexLock l(mu_);
  if (auto it = taint_rules_.find(name); it != taint_rules_.end()) taint_rules_.erase(it);
  index_stale_ = true;
  Changed();
}

void DraStore::UpsertClaim(api::ResourceClaimPtr c) {
  common::MutexLock l(mu_);
  ClaimEntry& e = claims_[ClaimKey(c->meta.namespace_, c->meta.name)];
  const api::ResourceClaimPtr before = e.latest();
  // A newer informer version replaces the assumed one, except a version without the allocation
  // the assumed one carries: PreBind's own first write (the finalizer) comes back before the
  // status write, and dropping the assumption then would free the devices to another pod.
  if (e.assumed &&
      CompareResourceVersions(c->meta.resource_version, e.assumed->meta.resource_version) >= 0 &&
      (c->allocation.has_value() || !e.assumed->allocation.has_value())) {
    e.assumed.reset();
  }
  e.informer = std::move(c);
  Replaced(before, e.latest());
}

void DraStore::DeleteClaim(std::string_view ns, std::string_view name) {
  common::MutexLock l(mu_);
  if (auto it = claims_.find(ClaimKey(ns, name)); it != claims_.end()) {
    const api::ResourceClaimPtr before = it->second.latest();
    claims_.erase(it);
    Replaced(before, nullptr);
    return;
  }
  Changed();
}

void DraStore::set_writer(DraWriter* writer) {
  common::MutexLock l(mu_);
  writer_ = writer;
}

api::DeviceClassPtr DraStore::GetDeviceClass(std::string_view name) const {
  common::MutexLock l(mu_);
  return Find(classes_, name);
}

api::DeviceClassPtr DraStore::ExtendedResourceClass(std::string_view resource) const {
  common::MutexLock l(mu_);
  if (resource.starts_with(api::kDeviceClassResourcePrefix)) {
    return Find(classes_, resource.substr(api::kDeviceClassResourcePrefix.size()));
  }
  return Find(extended_, resource);
}

api::ResourceClaimPtr DraStore::ExtendedResourceClaimOf(std::string_view pod_uid) const {
  common::MutexLock l(mu_);
  auto it = extended_claims_.find(std::string(pod_uid));
  if (it == extended_claims_.end()) return nullptr;
  auto c = claims_.find(it->second);
  return c == claims_.end() ? nullptr : c->second.latest();
}

api::ResourceClaimPtr DraStore::GetClaim(std::string_view ns, std::string_view name) const {
  common::MutexLock l(mu_);
  auto it = claims_.find(ClaimKey(ns, name));
  return it == claims_.end() ? nullptr : it->second.latest();
}

api::ResourceClaimPtr DraStore::InformerClaim(std::string_view ns, std::string_view name) const {
  common::MutexLock l(mu_);
  auto it = claims_.find(ClaimKey(ns, name));
  return it == claims_.end() ? nullptr : it->second.informer;
}

std::vector<api::ResourceClaimPtr> DraStore::ListClaims() const {
  common::MutexLock l(mu_);
  std::vector<api::ResourceClaimPtr> out;
  out.reserve(claims_.size());
  for (const auto& [key, e] : claims_) out.push_back(e.latest());
  return out;
}

std::vector<api::ResourceClaimPtr> DraStore::PendingClaims() const {
  common::MutexLock l(mu_);
  std::vector<api::ResourceClaimPtr> out;
  out.reserve(pending_.size());
  for (const auto& [key, c] : pending_) out.push_back(c);
  return out;
}

size_t DraStore::PendingCount() const {
  common::MutexLock l(mu_);
  return pending_.size();
}

void DraStore::ObservePod(const api::Pod* before, const api::Pod* after) {
  const api::Pod& any = after != nullptr ? *after : *before;
  if ((before == nullptr || before->resource_claims == nullptr) && any.resource_claims == nullptr) {
    return;  // claims are immutable: a pod without them never waits for any
  }
  const bool waits = after != nullptr && after->resource_claims != nullptr &&
                     after->node_name.empty() && !after->Terminal() &&
                     !after->meta.deletion_timestamp;
  common::MutexLock l(mu_);
  if (!waits) {
    waiting_pods_.erase(any.meta.uid);
    return;
  }
  WaitingPod w;
  w.priority = after->priority;
  w.created = after->meta.creation_timestamp.value_or(common::TimePoint{});
  w.key = ClaimKey(after->meta.namespace_, after->meta.name);
  for (const api::PodClaimSource& c : after->resource_claims->claims) {
    if (!c.claim_name.empty()) {
      w.named_claims.push_back(ClaimKey(after->meta.namespace_, c.claim_name));
    }
  }
  waiting_pods_[after->meta.uid] = std::move(w);
}

std::vector<WaitingClaim> DraStore::WaitingClaims() const {
  // Per pending claim: its waiting pods and the queue position of the earliest.
  struct Entry {
    WaitingClaim out;
    const WaitingPod* first = nullptr;
  };
  common::MutexLock l(mu_);
  std::map<std::string_view, Entry> entries;
  for (const auto& [key, claim] : pending_) entries[key].out.claim = claim;
  auto earlier = [](const WaitingPod& a, const WaitingPod& b) {
    if (a.priority != b.priority) return a.priority > b.priority;
    if (a.created != b.created) return a.created < b.created;
    return a.key < b.key;
  };
  auto count = [&](Entry& e, const WaitingPod& pod) {
    ++e.out.pods;
    if (e.first == nullptr || earlier(pod, *e.first)) e.first = &pod;
  };
  for (const auto& [uid, pod] : waiting_pods_) {
    for (const std::string& key : pod.named_claims) {
      if (auto it = entries.find(key); it != entries.end()) count(it->second, pod);
    }
  }
  for (auto& [key, e] : entries) {
    for (const api::OwnerReference& ref : e.out.claim->meta.owner_references) {
      if (!ref.controller || ref.kind != "Pod") continue;
      if (auto it = waiting_pods_.find(ref.uid); it != waiting_pods_.end()) count(e, it->second);
    }
  }
  std::vector<std::pair<std::string_view, Entry*>> order;
  order.reserve(entries.size());
  for (auto& [key, e] : entries) order.emplace_back(key, &e);
  std::stable_sort(order.begin(), order.end(), [&](const auto& a, const auto& b) {
    const Entry& x = *a.second;
    const Entry& y = *b.second;
    if ((x.first == nullptr) != (y.first == nullptr)) return x.first != nullptr;
    if (x.first != nullptr) {
      if (x.first != y.first) return earlier(*x.first, *y.first);
      return a.first < b.first;
    }
    const auto tx = x.out.claim->meta.creation_timestamp.value_or(common::TimePoint{});
    const auto ty = y.out.claim->meta.creation_timestamp.value_or(common::TimePoint{});
    return tx != ty ? tx < ty : a.first < b.first;
  });
  std::vector<WaitingClaim> out;
  out.reserve(order.size());
  for (const auto& [key, e] : order) out.push_back(std::move(e->out));
  return out;
}

std::shared_ptr<const DeviceIndex> DraStore::devices() const {
  common::MutexLock l(mu_);
  EnsureIndex();
  return index_;
}

std::shared_ptr<const DeviceUsage> DraStore::usage() const {
  common::MutexLock l(mu_);
  EnsureIndex();
  return usage_;
}

uint64_t DraStore::class_version() const {
  common::MutexLock l(mu_);
  return class_version_;
}

namespace {

// The same version with the same status (allocation and reservedFor).
bool SameWrite(const api::ResourceClaim& a, const api::ResourceClaim& b) {
  if (a.meta.resource_version != b.meta.resource_version || a.reserved_for != b.reserved_for ||
      a.allocation.has_value() != b.allocation.has_value()) {
    return false;
  }
  return !a.allocation || a.allocation->devices == b.allocation->devices;
}

}  // namespace

common::Status DraStore::AssumeClaim(api::ResourceClaimPtr claim) {
  common::MutexLock l(mu_);
  auto it = claims_.find(ClaimKey(claim->meta.namespace_, claim->meta.name));
  if (it == claims_.end() || it->second.informer == nullptr) {
    return common::NotFoundError("resourceclaim " + claim->meta.namespace_ + "/" +
                                 claim->meta.name + " not found");
  }
  ClaimEntry& e = it->second;
  if (CompareResourceVersions(claim->meta.resource_version, e.latest()->meta.resource_version) <
      0) {
    return common::FailedPreconditionError("resourceclaim " + claim->meta.namespace_ + "/" +
                                           claim->meta.name + " changed since it was read");
  }
  const api::ResourceClaimPtr before = e.latest();
  if (SameWrite(*e.informer, *claim)) {
    // The informer already delivered this very write (PreBind's stored version came back before
    // PreBind assumed it): nothing to hold. Assuming it anyway would outlive the claim's
    // deallocation, a later version without the allocation (UpsertClaim's exception).
    e.assumed.reset();
  } else {
    e.assumed = std::move(claim);
  }
  Replaced(before, e.latest());
  return common::Status::Ok();
}

common::Status DraStore::AssumeNewClaim(api::ResourceClaimPtr claim) {
  common::MutexLock l(mu_);
  auto [it, added] = claims_.try_emplace(ClaimKey(claim->meta.namespace_, claim->meta.name));
  if (!added) {
    return common::AlreadyExistsError("resourceclaim " + claim->meta.namespace_ + "/" +
                                      claim->meta.name + " already exists");
  }
  it->second.assumed = std::move(claim);
  Replaced(nullptr, it->second.latest());
  return common::Status::Ok();
}

void DraStore::RestoreClaim(std::string_view ns, std::string_view name) {
  common::MutexLock l(mu_);
  auto it = claims_.find(ClaimKey(ns, name));
  if (it == claims_.end() || it->second.assumed == nullptr) return;
  const api::ResourceClaimPtr before = it->second.latest();
  it->second.assumed.reset();
  const api::ResourceClaimPtr after = it->second.latest();
  if (after == nullptr) claims_.erase(it);  // assumed new, never delivered
  Replaced(before, after);
}

DraWriter* DraStore::writer() const {
  common::MutexLock l(mu_);
  return writer_;
}

common::StatusOr<api::ResourceClaimPtr> DraStore::UpdateClaimStatus(
    const api::ResourceClaim& claim) {
  DraWriter* writer = nullptr;
  {
    common::MutexLock l(mu_);
    writer = writer_;
  }
  if (writer == nullptr) return common::UnavailableError("no API writer for resource claims");
  return writer->UpdateResourceClaimStatus(claim);
}

uint64_t DraStore::generation() const {
  common::MutexLock l(mu_);
  return generation_;
}

uint64_t DraStore::WaitForChange(uint64_t seen, std::chrono::milliseconds timeout) const {
  common::MutexLock l(mu_);
  (void)l.WaitFor(changed_, timeout, [&]() GPUSCHED_REQUIRES(mu_) { return generation_ != seen; });
  return generation_;
}

}  // namespace gpusched::cache
