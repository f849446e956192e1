// SPDX-License-Identifier: Apache-2.0
// ConsumedCapacity: KEP-5075's rules for what one allocation of a shared device consumes.
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

}  // namespace
}  // namespace gpusched::api
