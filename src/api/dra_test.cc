// SPDX-License-Identifier: Apache-2.0
// ConsumedCapacity: KEP-5075's rules for what one allocation of a shared device consumes.
// ApplyTaintRules and UntoleratedTaint: DeviceTaintRules (KEP-5055) and device tolerations.
#include "src/api/dra.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpusched::api {
namespace {

Quantity Q(const char* text) { return *Quantity::Parse(text); }

// A device of driver "d" with memory 80Gi (policy `memory`) and cores 100 (no policy).
Device Shared(std::optional<CapacityRequestPolicy> memory) {
  Device d;
  d.name = "gpu-0";
  d.allow_multiple_allocations = true;
  d.capacity = {{"d/cores", Q("100")}, {"d/memory", Q("80Gi")}};
  if (memory) d.capacity_policies = {{"d/memory", *memory}};
  return d;
}

constexpr int64_t kGi = int64_t{1} << 30;

// ConsumedCapacity's amounts, nullopt when it returns false.
std::optional<std::vector<int64_t>> Consumed(const Device& d, std::string_view driver,
                                             const Counters& requests) {
  std::vector<int64_t> out;
  if (!ConsumedCapacity(d, driver, requests, out)) return std::nullopt;
  return out;
}

TEST(ConsumedCapacityTest, UnnamedCapacitiesTakeTheDefaultOrAll) {
  CapacityRequestPolicy p;
  p.default_value = Q("10Gi");
  const auto all = Consumed(Shared(std::nullopt), "d", {});
  EXPECT_EQ(all, (std::vector<int64_t>{100'000, 80 * kGi * 1000}));
  const auto by_default = Consumed(Shared(p), "d", {{"cores", Q("20")}});
  EXPECT_EQ(by_default, (std::vector<int64_t>{20'000, 10 * kGi * 1000}));
}

TEST(ConsumedCapacityTest, PoliciesRoundRequestsUp) {
  CapacityRequestPolicy values;
  values.default_value = Q("20Gi");
  values.valid_values = {Q("10Gi"), Q("20Gi"), Q("40Gi")};
  EXPECT_EQ((*Consumed(Shared(values), "d", {{"memory", Q("30Gi")}}))[1], 40 * kGi * 1000);
  EXPECT_EQ((*Consumed(Shared(values), "d", {{"memory", Q("10Gi")}}))[1], 10 * kGi * 1000);
  EXPECT_EQ(Consumed(Shared(values), "d", {{"memory", Q("50Gi")}}), std::nullopt)
      << "above every valid value";

  CapacityRequestPolicy range;
  range.default_value = Q("8Gi");
  range.range_min = Q("8Gi");
  range.range_step = Q("4Gi");
  range.range_max = Q("64Gi");
  auto memory = [&](const char* asked) {
    return (*Consumed(Shared(range), "d", {{"d/memory", Q(asked)}}))[1] / (kGi * 1000);
  };
  EXPECT_EQ(memory("1Gi"), 8) << "up to min";
  EXPECT_EQ(memory("9Gi"), 12) << "up to min + k * step";
  EXPECT_EQ(memory("16Gi"), 16);
  EXPECT_EQ(Consumed(Shared(range), "d", {{"memory", Q("65Gi")}}), std::nullopt) << "above max";
}

TEST(ConsumedCapacityTest, ACapacityTheDeviceLacksIsNoMatch) {
  EXPECT_EQ(Consumed(Shared(std::nullopt), "d", {{"power", Q("1")}}), std::nullopt);
  EXPECT_EQ(Consumed(Shared(std::nullopt), "d", {{"other.io/memory", Q("1Gi")}}), std::nullopt)
      << "another domain's memory";
}

// A slice "s" of driver "d", pool "p", devices g0 and g1.
std::shared_ptr<const ResourceSlice> TwoDeviceSlice() {
  auto s = std::make_shared<ResourceSlice>();
  s->name = "s";
  s->driver = "d";
  s->pool = "p";
  s->devices.resize(2);
  s->devices[0].name = "g0";
  s->devices[1].name = "g1";
  return s;
}

DeviceTaintRulePtr Rule(std::string_view key, bool has_selector,
                        std::optional<std::string> driver = std::nullopt,
                        std::optional<std::string> pool = std::nullopt,
                        std::optional<std::string> device = std::nullopt) {
  auto r = std::make_shared<DeviceTaintRule>();
  r->name = std::string(key);
  r->has_selector = has_selector;
  r->driver = std::move(driver);
  r->pool = std::move(pool);
  r->device = std::move(device);
  r->taint = {common::Intern(key), common::Intern(""), TaintEffect::kNoSchedule};
  return r;
}

// The keys of the taints of each device of `s`, "," between them and "|" between devices.
std::string TaintKeys(const ResourceSlice& s) {
  std::string out;
  for (const Device& d : s.devices) {
    if (&d != &s.devices.front()) out += "|";
    for (const Taint& t : d.taints) out += std::string(common::Str(t.key)) + ",";
  }
  return out;
}

TEST(ApplyTaintRulesTest, EachSetSelectorFieldMustMatch) {
  auto slice = TwoDeviceSlice();
  EXPECT_EQ(ApplyTaintRules(slice, {}), slice);
  const std::vector<DeviceTaintRulePtr> unmatched = {
      Rule("no-selector", false), Rule("other-driver", true, "x"),
      Rule("other-pool", true, "d", "q"), Rule("other-device", true, std::nullopt, "p", "g9")};
  EXPECT_EQ(ApplyTaintRules(slice, unmatched), slice) << "no match copies nothing";

  const std::vector<DeviceTaintRulePtr> rules = {
      Rule("all", true), Rule("driver", true, "d"), Rule("g1", true, "d", "p", "g1"),
      Rule("pool-g0", true, std::nullopt, "p", "g0"), Rule("none", false)};
  auto patched = ApplyTaintRules(slice, rules);
  ASSERT_NE(patched, slice);
  EXPECT_EQ(TaintKeys(*patched), "all,driver,pool-g0,|all,driver,g1,");
  EXPECT_EQ(TaintKeys(*slice), "|") << "the stored slice is not changed";
}

TEST(UntoleratedTaintTest, OnlyNoScheduleAndNoExecuteCount) {
  Device d;
  d.taints = {{common::Intern("info"), common::Intern(""), TaintEffect::kNone},
              {common::Intern("broken"), common::Intern("yes"), TaintEffect::kNoExecute}};
  const Taint* t = UntoleratedTaint(d, {});
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(common::Str(t->key), "broken");
  Toleration tol;
  tol.key = common::Intern("broken");
  tol.op = Toleration::Op::kExists;
  EXPECT_EQ(UntoleratedTaint(d, std::vector<Toleration>{tol}), nullptr);
  tol.effect = TaintEffect::kNoSchedule;
  EXPECT_NE(UntoleratedTaint(d, std::vector<Toleration>{tol}), nullptr) << "another effect";
}

}  // namespace
}  // namespace gpusched::api
