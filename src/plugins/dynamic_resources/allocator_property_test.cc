// SPDX-License-Identifier: Apache-2.0
// Property test of the allocator with partitionable devices (KEP-4815) and consumable capacity
// (KEP-5075) against a brute-force oracle. Each case: one node, 1-3 counter sets of 1-3 counters
// (capacity 1-6), 2-8 devices drawing 1-4 on some counters of one set (some on none), the counters
// published in the devices' slice or in a second slice of the pool; some devices with a capacity
// "mem" (1-8), some of them shared (allowMultipleAllocations, no request policy); some devices
// already held by claims, some shared ones with shares of other claims (which never over-draw
// a counter or a capacity); one claim of 1-2 requests (ExactCount 1-3 or All; some with two
// firstAvailable subrequests; some asking 1-6 of "mem") matching random devices. Some devices
// are tainted: NoSchedule by a DeviceTaintRule naming the device, NoExecute in the slice, or
// None by a rule (informational); some alternatives tolerate the taint. A rule of another pool
// matches nothing.
//
// Invariants: Allocate finds an allocation exactly when the oracle (every assignment of devices
// to requests and of subrequests) does; the allocation it returns is valid: each device once, none
// held, each matching its request, the counts, shares only of shared devices, consuming what the
// request asks (all of "mem" when it does not ask), and no counter or capacity drawn beyond what
// it has together with the held devices and the other shares; DraStore::CheckInvariants holds for
// the held claims, and again with the allocation added; a device with a NoSchedule or NoExecute
// taint is allocated only to an alternative that tolerates it. Cases: GPUSCHED_ALLOCATOR_CASES
// (default 3000), seed GPUSCHED_ALLOCATOR_SEED (default 1).
#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "src/cache/dra_store.h"
#include "src/framework/node_info.h"
#include "src/plugins/dynamic_resources/allocator.h"
#include "src/plugins/dynamic_resources/node_devices.h"
#include "src/testing/builders.h"

namespace gpusched::plugins::dynamic_resources {
namespace {

constexpr const char* kDriver = "gpu.example.com";

int64_t EnvOr(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  return v == nullptr ? fallback : std::atoll(v);
}

struct Case {
  std::vector<std::vector<int64_t>> sets;  // per set, per counter: capacity
  struct Draw {
    int set = -1;                  // -1: draws on nothing
    std::vector<int64_t> amounts;  // per counter of the set (0: none)
  };
  std::vector<Draw> draws;                   // per device
  std::vector<bool> held;                    // per device
  std::vector<int64_t> mem;                  // per device: its capacity "mem" (0: none)
  std::vector<bool> shared;                  // per device: allowMultipleAllocations
  std::vector<std::vector<int64_t>> shares;  // per shared device: the other claims' "mem" shares
  enum class Taint : uint8_t { kNone, kRuleNoSchedule, kSliceNoExecute, kRuleInformational };
  std::vector<Taint> taint;     // per device
  bool counters_apart = false;  // the counter sets in a second slice of the pool
  struct Alt {
    api::DeviceChoice choice;
    std::vector<uint8_t> match;  // per device
    int64_t asks = 0;            // capacity.requests "mem" (0: not asked)
    bool tolerates = false;      // the taint "t" (any effect)
  };
  std::vector<std::vector<Alt>> requests;  // per request, its alternatives in order
};

// What a share of device `d` for `alt` consumes of "mem" (all of it when not asked); -1 when the
// alternative asks "mem" of a device without it or more than a device has.
int64_t Consumes(const Case& c, size_t d, const Case::Alt& alt) {
  if (alt.asks > 0 && (c.mem[d] == 0 || alt.asks > c.mem[d])) return -1;
  return alt.asks > 0 ? alt.asks : c.mem[d];
}

// Whether device `d`'s taint keeps it from `alt`.
bool Blocked(const Case& c, size_t d, const Case::Alt& alt) {
  const bool acts =
      c.taint[d] == Case::Taint::kRuleNoSchedule || c.taint[d] == Case::Taint::kSliceNoExecute;
  return acts && !alt.tolerates;
}

// Whether the held devices, the other shares and the devices `chosen` (per device: its request,
// -1: none) with their requests' alternatives `alt` fit every counter and shared capacity.
bool Fits(const Case& c, const std::vector<int>& chosen, const std::vector<size_t>& alt) {
  std::vector<std::vector<int64_t>> used(c.sets.size());
  for (size_t s = 0; s < c.sets.size(); ++s) used[s].assign(c.sets[s].size(), 0);
  for (size_t d = 0; d < c.draws.size(); ++d) {
    int64_t mem = 0;
    for (int64_t share : c.shares[d]) mem += share;
    if (chosen[d] >= 0) {
      const auto q = static_cast<size_t>(chosen[d]);
      const int64_t take = Consumes(c, d, c.requests[q][alt[q]]);
      if (take < 0) return false;
      if (c.shared[d]) mem += take;
    }
    if (mem > c.mem[d] && c.shared[d]) return false;
    const bool drawing = c.held[d] || chosen[d] >= 0 || !c.shares[d].empty();
    if (!drawing || c.draws[d].set < 0) continue;
    const auto& dr = c.draws[d];
    for (size_t k = 0; k < dr.amounts.size(); ++k) used[dr.set][k] += dr.amounts[k];
  }
  for (size_t s = 0; s < c.sets.size(); ++s) {
    for (size_t k = 0; k < c.sets[s].size(); ++k) {
      if (used[s][k] > c.sets[s][k]) return false;
    }
  }
  return true;
}

Case RandomCase(std::mt19937_64& rng) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  auto chance = [&](double p) { return std::bernoulli_distribution(p)(rng); };
  Case c;
  c.sets.resize(static_cast<size_t>(pick(1, 3)));
  for (auto& s : c.sets) {
    s.resize(static_cast<size_t>(pick(1, 3)));
    for (auto& cap : s) cap = pick(1, 6);
  }
  const int devices = pick(2, 8);
  c.draws.resize(static_cast<size_t>(devices));
  for (auto& d : c.draws) {
    if (chance(0.15)) continue;
    d.set = pick(0, static_cast<int>(c.sets.size()) - 1);
    d.amounts.assign(c.sets[static_cast<size_t>(d.set)].size(), 0);
    for (auto& a : d.amounts) a = chance(0.7) ? pick(1, 4) : 0;
    if (std::all_of(d.amounts.begin(), d.amounts.end(), [](int64_t a) { return a == 0; })) {
      d.amounts[0] = 1;
    }
  }
  c.held.assign(c.draws.size(), false);
  c.mem.assign(c.draws.size(), 0);
  c.shared.assign(c.draws.size(), false);
  c.shares.assign(c.draws.size(), {});
  const std::vector<int> none(c.draws.size(), -1);
  for (size_t d = 0; d < c.draws.size(); ++d) {
    if (chance(0.5)) c.mem[d] = pick(1, 8);
    c.shared[d] = chance(0.4);
    if (c.shared[d]) {
      for (int k = pick(0, 2); k > 0; --k) {
        c.shares[d].push_back(c.mem[d] == 0 ? 0 : pick(1, static_cast<int>(c.mem[d])));
        if (!Fits(c, none, {})) c.shares[d].pop_back();  // shares never over-draw
      }
      continue;
    }
    if (!chance(0.25)) continue;
    c.held[d] = true;
    if (!Fits(c, none, {})) c.held[d] = false;  // held devices never over-draw
  }
  c.taint.assign(c.draws.size(), Case::Taint::kNone);
  for (auto& t : c.taint) {
    if (chance(0.3)) t = static_cast<Case::Taint>(pick(1, 3));
  }
  c.counters_apart = chance(0.5);
  c.requests.resize(static_cast<size_t>(pick(1, 2)));
  for (auto& r : c.requests) {
    r.resize(chance(0.2) ? 2 : 1);
    for (auto& alt : r) {
      alt.choice.device_class = kDriver;
      alt.choice.count = pick(1, 3);
      if (chance(0.1)) alt.choice.mode = api::AllocationMode::kAll;
      alt.match.resize(c.draws.size());
      for (auto& m : alt.match) m = chance(0.6) ? 1 : 0;
      if (chance(0.4)) {
        alt.asks = pick(1, 6);
        alt.choice.capacity_requests = {{"mem", api::Quantity::FromValue(alt.asks)}};
      }
      if (chance(0.3)) {
        alt.tolerates = true;
        api::Toleration tol;
        tol.key = common::Intern("t");
        tol.op = api::Toleration::Op::kExists;
        alt.choice.tolerations.push_back(tol);
      }
    }
  }
  return c;
}

// Whether some choice of alternatives and assignment of free devices satisfies every request
// without over-drawing a counter.
bool Oracle(const Case& c) {
  const size_t n = c.draws.size();
  std::vector<size_t> alt(c.requests.size(), 0);
  std::function<bool(size_t)> choose = [&](size_t r) -> bool {
    if (r < c.requests.size()) {
      for (alt[r] = 0; alt[r] < c.requests[r].size(); ++alt[r]) {
        if (choose(r + 1)) return true;
      }
      return false;
    }
    // Every assignment of each device to no request or one request.
    std::vector<int> chosen(n, -1);
    const size_t options = c.requests.size() + 1;
    size_t total = 1;
    for (size_t i = 0; i < n; ++i) total *= options;
    for (size_t code = 0; code < total; ++code) {
      size_t x = code;
      bool ok = true;
      std::vector<int64_t> count(c.requests.size(), 0);
      for (size_t d = 0; d < n; ++d, x /= options) {
        chosen[d] = static_cast<int>(x % options) - 1;
        if (chosen[d] < 0) continue;
        const Case::Alt& a =
            c.requests[static_cast<size_t>(chosen[d])][alt[static_cast<size_t>(chosen[d])]];
        if (c.held[d] || a.match[d] == 0 || Consumes(c, d, a) < 0 || Blocked(c, d, a)) ok = false;
        ++count[static_cast<size_t>(chosen[d])];
      }
      for (size_t q = 0; ok && q < c.requests.size(); ++q) {
        const Case::Alt& a = c.requests[q][alt[q]];
        if (a.choice.mode == api::AllocationMode::kAll) {
          int64_t matching = 0;
          for (size_t d = 0; d < n; ++d) matching += a.match[d];
          ok = matching > 0 && count[q] == matching;
        } else {
          ok = count[q] == a.choice.count;
        }
      }
      if (ok && Fits(c, chosen, alt)) return true;
    }
    return false;
  };
  return choose(0);
}

std::string Dev(size_t d) { return "dev-" + std::to_string(d); }

api::ResourceClaimPtr AllocatedClaim(const std::string& name,
                                     std::vector<api::DeviceResult> results) {
  auto claim = std::make_shared<api::ResourceClaim>();
  claim->meta.namespace_ = "ml";
  claim->meta.name = name;
  claim->meta.resource_version = "1";
  claim->allocation = api::AllocationResult{};
  claim->allocation->devices = std::move(results);
  return claim;
}

void Load(const Case& c, cache::DraStore& view) {
  auto counters = std::make_shared<api::ResourceSlice>();
  counters->name = "n1-counters";
  counters->driver = kDriver;
  counters->pool = "n1";
  counters->node_name = "n1";
  counters->pool_slice_count = c.counters_apart ? 2 : 1;
  auto devices = std::make_shared<api::ResourceSlice>(*counters);
  devices->name = "n1-devices";
  api::ResourceSlice& sets = c.counters_apart ? *counters : *devices;
  for (size_t s = 0; s < c.sets.size(); ++s) {
    api::CounterSet set{"set-" + std::to_string(s), {}};
    for (size_t k = 0; k < c.sets[s].size(); ++k) {
      set.counters.push_back({"c" + std::to_string(k), api::Quantity::FromValue(c.sets[s][k])});
    }
    sets.shared_counters.push_back(std::move(set));
  }
  for (size_t d = 0; d < c.draws.size(); ++d) {
    api::Device dev;
    dev.name = Dev(d);
    if (c.mem[d] > 0)
      dev.capacity = {{std::string(kDriver) + "/mem", api::Quantity::FromValue(c.mem[d])}};
    dev.allow_multiple_allocations = c.shared[d];
    const Case::Draw& dr = c.draws[d];
    if (dr.set >= 0) {
      api::DeviceCounterConsumption use{"set-" + std::to_string(dr.set), {}};
      for (size_t k = 0; k < dr.amounts.size(); ++k) {
        if (dr.amounts[k] > 0) {
          use.counters.push_back(
              {"c" + std::to_string(k), api::Quantity::FromValue(dr.amounts[k])});
        }
      }
      dev.consumes_counters.push_back(std::move(use));
    }
    const api::Taint taint{common::Intern("t"), common::Intern(""), api::TaintEffect::kNoExecute};
    if (c.taint[d] == Case::Taint::kSliceNoExecute) dev.taints.push_back(taint);
    if (c.taint[d] == Case::Taint::kRuleNoSchedule ||
        c.taint[d] == Case::Taint::kRuleInformational) {
      auto rule = std::make_shared<api::DeviceTaintRule>();
      rule->name = "rule-" + Dev(d);
      rule->has_selector = true;
      rule->pool = "n1";
      rule->device = Dev(d);
      rule->taint = taint;
      rule->taint.effect = c.taint[d] == Case::Taint::kRuleNoSchedule
                               ? api::TaintEffect::kNoSchedule
                               : api::TaintEffect::kNone;
      view.UpsertTaintRule(rule);
    }
    devices->devices.push_back(std::move(dev));
  }
  auto elsewhere = std::make_shared<api::DeviceTaintRule>();  // another pool's devices
  elsewhere->name = "other-pool";
  elsewhere->has_selector = true;
  elsewhere->pool = "n2";
  elsewhere->taint = {common::Intern("t"), common::Intern(""), api::TaintEffect::kNoSchedule};
  view.UpsertTaintRule(elsewhere);
  view.UpsertSlice(devices);
  if (c.counters_apart) view.UpsertSlice(counters);
  for (size_t d = 0; d < c.held.size(); ++d) {
    if (c.held[d]) {
      view.UpsertClaim(
          AllocatedClaim("held-" + std::to_string(d), {{"r", kDriver, "n1", Dev(d), false}}));
    }
    for (size_t k = 0; k < c.shares[d].size(); ++k) {
      api::DeviceResult share{"r", kDriver, "n1", Dev(d), false};
      share.share_id = "share-" + std::to_string(d) + "-" + std::to_string(k);
      if (c.mem[d] > 0) {
        share.consumed_capacity = {
            {std::string(kDriver) + "/mem", api::Quantity::FromValue(c.shares[d][k])}};
      }
      view.UpsertClaim(AllocatedClaim(share.share_id, {share}));
    }
  }
}

TEST(AllocatorPropertyTest, CountersAndCapacityAreNeverOverDrawnAndFeasibilityMatchesTheOracle) {
  const int64_t cases = EnvOr("GPUSCHED_ALLOCATOR_CASES", 3000);
  std::mt19937_64 rng(static_cast<uint64_t>(EnvOr("GPUSCHED_ALLOCATOR_SEED", 1)));
  const api::NodePtr node = testing::MakeNode("n1").Ptr();
  int64_t feasible = 0;
  for (int64_t i = 0; i < cases; ++i) {
    const Case c = RandomCase(rng);
    cache::DraStore view;
    Load(c, view);
    ASSERT_TRUE(view.CheckInvariants().ok())
        << "case " << i << ": " << view.CheckInvariants().ToString();
    const auto index = view.devices();
    const auto usage = view.usage();
    ASSERT_EQ(index->devices.size(), c.draws.size());
    // The plan: matches by device number (the index numbers devices as the slice lists them).
    std::vector<std::shared_ptr<ChoiceMatches>> matches;
    ClaimPlan plan;
    for (size_t q = 0; q < c.requests.size(); ++q) {
      RequestPlan rp;
      rp.name = "r" + std::to_string(q);
      for (size_t a = 0; a < c.requests[q].size(); ++a) {
        auto m = std::make_shared<ChoiceMatches>();
        for (size_t d = 0; d < index->devices.size(); ++d) {
          const size_t dev =
              static_cast<size_t>(std::stoi(index->devices[d].device->name.substr(4)));
          m->match.push_back(c.requests[q][a].match[dev]);
        }
        matches.push_back(m);
        const std::string result =
            c.requests[q].size() == 1 ? rp.name : rp.name + "/s" + std::to_string(a);
        rp.alternatives.push_back({result, &c.requests[q][a].choice, m});
      }
      plan.requests.push_back(std::move(rp));
    }
    framework::NodeInfo info;
    info.node = node;
    NodeDevices nd;
    GatherNodeDevices(*index, *usage, info, nullptr, {}, nd);
    std::vector<std::vector<api::DeviceResult>> out;
    const bool got = Allocate(std::span(&plan, 1), *index, nd, &out);
    const bool want = Oracle(c);
    ASSERT_EQ(got, want) << "case " << i;
    if (!got) continue;
    ++feasible;
    // The allocation is valid.
    std::vector<int> chosen(c.draws.size(), -1);
    std::vector<size_t> alt(c.requests.size(), 0);
    std::vector<int64_t> count(c.requests.size(), 0);
    for (const api::DeviceResult& r : out[0]) {
      const size_t d = static_cast<size_t>(std::stoi(r.device.substr(4)));
      ASSERT_EQ(chosen[d], -1) << "case " << i << ": " << r.device << " twice";
      ASSERT_FALSE(c.held[d]) << "case " << i << ": " << r.device << " is held";
      const size_t q = static_cast<size_t>(std::stoi(r.request.substr(1)));
      const size_t slash = r.request.find('/');
      alt[q] = slash == std::string::npos
                   ? 0
                   : static_cast<size_t>(std::stoi(r.request.substr(slash + 2)));
      const Case::Alt& a = c.requests[q][alt[q]];
      ASSERT_EQ(a.match[d], 1) << "case " << i << ": " << r.device;
      ASSERT_FALSE(Blocked(c, d, a)) << "case " << i << ": " << r.device << " is tainted";
      ASSERT_EQ(!r.share_id.empty(), static_cast<bool>(c.shared[d])) << "case " << i;
      if (c.shared[d] && c.mem[d] > 0) {
        ASSERT_EQ(r.consumed_capacity.size(), 1u) << "case " << i;
        EXPECT_EQ(r.consumed_capacity[0].second.Value(), Consumes(c, d, a)) << "case " << i;
      }
      chosen[d] = static_cast<int>(q);
      ++count[q];
    }
    ASSERT_TRUE(Fits(c, chosen, alt)) << "case " << i << ": a counter or capacity is over-drawn";
    for (size_t q = 0; q < c.requests.size(); ++q) ASSERT_GT(count[q], 0) << "case " << i;
    view.UpsertClaim(AllocatedClaim("new", out[0]));
    ASSERT_TRUE(view.CheckInvariants().ok())
        << "case " << i << " with the allocation: " << view.CheckInvariants().ToString();
  }
  // The generator must make both outcomes common, or the test proves little.
  EXPECT_GT(feasible, cases / 10);
  EXPECT_LT(feasible, cases * 9 / 10);
}

// A node's MIG-like pool: per GPU a counter set (7 compute slices) and the
// placements 1g (7), 3g (2) and 7g (1) drawing on it; and an allNodes pool of 2 devices on a
// counter set of capacity 1, shared by every node.
api::ResourceSlicePtr MigSlice(const std::string& node, int gpus, int generation) {
  auto s = std::make_shared<api::ResourceSlice>();
  s->name = node + "-mig";
  s->driver = kDriver;
  s->pool = node;
  s->node_name = node;
  s->pool_generation = generation;
  for (int g = 0; g < gpus; ++g) {
    const std::string set = "gpu-" + std::to_string(g);
    api::CounterSet cs{set, {}};
    for (int k = 0; k < 7; ++k) {
      cs.counters.emplace_back("c" + std::to_string(k), api::Quantity::FromValue(1));
    }
    s->shared_counters.push_back(std::move(cs));
    auto add = [&](const std::string& name, int first, int slices) {
      api::Device d;
      d.name = set + "-" + name;
      api::DeviceCounterConsumption use{set, {}};
      for (int k = first; k < first + slices; ++k) {
        use.counters.push_back({"c" + std::to_string(k), api::Quantity::FromValue(1)});
      }
      d.consumes_counters.push_back(std::move(use));
      s->devices.push_back(std::move(d));
    };
    for (int k = 0; k < 7; ++k) add("1g-" + std::to_string(k), k, 1);
    add("3g-0", 0, 3);
    add("3g-4", 4, 3);
    add("7g-0", 0, 7);
  }
  return s;
}

api::ResourceSlicePtr SharedPoolSlice() {
  auto s = std::make_shared<api::ResourceSlice>();
  s->name = "everywhere";
  s->driver = kDriver;
  s->pool = "everywhere";
  s->all_nodes = true;
  s->shared_counters.push_back({"set", {{"c", api::Quantity::FromValue(1)}}});
  for (const char* name : {"any-0", "any-1"}) {
    api::Device d;
    d.name = name;
    d.consumes_counters.push_back({"set", {{"c", api::Quantity::FromValue(1)}}});
    s->devices.push_back(std::move(d));
  }
  return s;
}

void ExpectSameDevices(const NodeDevices& got, const NodeDevices& want, const std::string& where) {
  ASSERT_EQ(got.devices.size(), want.devices.size()) << where;
  for (size_t i = 0; i < want.devices.size(); ++i) {
    EXPECT_EQ(got.devices[i].device, want.devices[i].device) << where << " position " << i;
    EXPECT_EQ(got.devices[i].busy, want.devices[i].busy) << where << " position " << i;
    EXPECT_EQ(got.devices[i].shared_in_use, want.devices[i].shared_in_use) << where;
  }
  ASSERT_EQ(got.counters.size(), want.counters.size()) << where;
  for (size_t i = 0; i < want.counters.size(); ++i) {
    EXPECT_EQ(got.counters[i].counter, want.counters[i].counter) << where;
    EXPECT_EQ(got.counters[i].left, want.counters[i].left) << where;
  }
}

// NodeDevicesCache::Get always equals a fresh GatherNodeDevices: over random sequences of claims
// allocated and released on 3 MIG nodes and a pool every node reaches, slices republished (a new
// index), node objects replaced, and old usage snapshots kept alive (copy-on-write). Steps:
// GPUSCHED_ALLOCATOR_CASES (default 3000), seed GPUSCHED_ALLOCATOR_SEED.
TEST(NodeDevicesCacheTest, AlwaysEqualsAFreshGather) {
  const int64_t steps = EnvOr("GPUSCHED_ALLOCATOR_CASES", 3000);
  std::mt19937_64 rng(static_cast<uint64_t>(EnvOr("GPUSCHED_ALLOCATOR_SEED", 1)));
  auto pick = [&rng](int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); };
  cache::DraStore view;
  const std::vector<std::string> names = {"n0", "n1", "n2"};
  std::vector<framework::NodeInfo> nodes(names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    nodes[i].node = testing::MakeNode(names[i]).Ptr();
    nodes[i].index = static_cast<framework::NodeIndex>(i);
    view.UpsertSlice(MigSlice(names[i], 2, 1));
  }
  view.UpsertSlice(SharedPoolSlice());
  NodeDevicesCache cache;
  std::vector<std::shared_ptr<const framework::DeviceUsage>> kept;
  int generation = 1;
  int claims = 0;
  for (int64_t step = 0; step < steps; ++step) {
    const int what = pick(20);
    if (what == 0) {  // republish a node's slice: a new index
      view.UpsertSlice(MigSlice(names[static_cast<size_t>(pick(3))], 2, ++generation));
    } else if (what == 1) {  // a new node object
      const size_t i = static_cast<size_t>(pick(3));
      nodes[i].node = testing::MakeNode(names[i]).Ptr();
    } else if (what == 2) {
      kept.push_back(view.usage());
      if (kept.size() > 3) kept.erase(kept.begin());
    } else {  // allocate a random device if it is free and fits, or release a claim
      const std::vector<api::ResourceClaimPtr> listed = view.ListClaims();
      if (!listed.empty() && pick(3) == 0) {
        const api::ResourceClaimPtr& c =
            listed[static_cast<size_t>(pick(static_cast<int>(listed.size())))];
        view.DeleteClaim(c->meta.namespace_, c->meta.name);
      } else {
        const auto index = view.devices();
        const auto d = static_cast<uint32_t>(pick(static_cast<int>(index->devices.size())));
        const framework::DeviceEntry& e = index->devices[d];
        NodeDevices probe;  // the counters as the device's node sees them
        const framework::NodeInfo& at = e.slice->node_name == "n1"   ? nodes[1]
                                        : e.slice->node_name == "n2" ? nodes[2]
                                                                     : nodes[0];
        GatherNodeDevices(*index, *view.usage(), at, nullptr, {}, probe);
        bool free = view.usage()->holder[d] == nullptr;
        for (const framework::CounterDraw& c : index->Draws(d)) {
          const CounterLeft* left = probe.Find(c.counter);
          free = free && (left == nullptr || left->left >= c.amount);
        }
        if (free) {
          view.UpsertClaim(AllocatedClaim("c-" + std::to_string(++claims),
                                          {{"r", kDriver, e.slice->pool, e.device->name, false}}));
        }
      }
    }
    ASSERT_TRUE(view.CheckInvariants().ok()) << view.CheckInvariants().ToString();
    const auto index = view.devices();
    const auto usage = view.usage();
    for (framework::NodeInfo& n : nodes) {
      NodeDevices fresh;
      GatherNodeDevices(*index, *usage, n, nullptr, {}, fresh);
      const std::shared_ptr<const NodeDevices> cached = cache.Get(*index, *usage, n);
      ASSERT_NE(cached, nullptr);
      ExpectSameDevices(*cached, fresh,
                        "step " + std::to_string(step) + " node " + std::string(n.name()));
      if (HasFailure()) return;
    }
  }
}

}  // namespace
}  // namespace gpusched::plugins::dynamic_resources
