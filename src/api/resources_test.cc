// SPDX-License-Identifier: Apache-2.0
#include "src/api/resources.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace gpusched::api {
namespace {

using common::Atom;
using common::Intern;

ResourceList Make(int64_t cpu, int64_t mem, std::vector<std::pair<std::string, int64_t>> ext = {}) {
  ResourceList r;
  r.milli_cpu = cpu;
  r.memory = mem;
  for (const auto& [name, v] : ext) r.Set(Intern(name), v);
  return r;
}

TEST(WellKnownTest, NamesAreInternedOnceAndStable) {
  const WellKnown& a = Names();
  const WellKnown& b = Names();
  EXPECT_EQ(&a, &b);
  struct Case {
    std::string name;
    Atom atom;
    std::string text;
  };
  const std::vector<Case> cases = {
      {"cpu", a.cpu, "cpu"},
      {"memory", a.memory, "memory"},
      {"ephemeral storage", a.ephemeral_storage, "ephemeral-storage"},
      {"pods", a.pods, "pods"},
      {"nvidia gpu", a.nvidia_gpu, "nvidia.com/gpu"},
      {"hostname label", a.hostname, "kubernetes.io/hostname"},
      {"zone label", a.zone, "topology.kubernetes.io/zone"},
      {"region label", a.region, "topology.kubernetes.io/region"},
      {"instance type label", a.instance_type, "node.kubernetes.io/instance-type"},
      {"default scheduler", a.default_scheduler, "default-scheduler"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(common::Str(c.atom), c.text);
    EXPECT_EQ(c.atom, Intern(c.text));
  }
}

TEST(ResourceListTest, GetAndSetUseSlotsForBuiltinsAndSortedScalars) {
  ResourceList r;
  r.Set(Names().cpu, 1500);
  r.Set(Names().memory, 1 << 30);
  r.Set(Names().ephemeral_storage, 10);
  r.Set(Names().pods, 1);
  r.Set(Intern("nvidia.com/gpu"), 2);
  r.Set(Intern("example.com/fpga"), 1);
  r.Set(Intern("hugepages-2Mi"), 0);  // zero entries are not stored
  struct Case {
    std::string name;
    std::string resource;
    int64_t want;
  };
  const std::vector<Case> cases = {
      {"cpu is in millicores", "cpu", 1500},
      {"memory is in bytes", "memory", 1 << 30},
      {"ephemeral storage has a slot", "ephemeral-storage", 10},
      {"pods has a slot", "pods", 1},
      {"an extended resource is a scalar", "nvidia.com/gpu", 2},
      {"another extended resource is a scalar", "example.com/fpga", 1},
      {"an unset resource is zero", "hugepages-2Mi", 0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(r.Get(Intern(c.resource)), c.want);
  }
  EXPECT_EQ(r.scalar.size(), 2u);
  EXPECT_LT(r.scalar[0].first, r.scalar[1].first);
  r.Set(Intern("nvidia.com/gpu"), 0);
  EXPECT_EQ(r.scalar.size(), 1u);
  EXPECT_FALSE(r.IsZero());
  EXPECT_TRUE(ResourceList{}.IsZero());
}

TEST(ResourceListTest, ArithmeticMergesScalarsAndSaturates) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  struct Case {
    std::string name;
    ResourceList a;
    ResourceList b;
    char op;  // '+', '-', 'M'
    ResourceList want;
  };
  const std::vector<Case> cases = {
      {"add sums slots and scalars", Make(100, 10, {{"nvidia.com/gpu", 1}}),
       Make(200, 20, {{"nvidia.com/gpu", 2}, {"example.com/fpga", 1}}), '+',
       Make(300, 30, {{"nvidia.com/gpu", 3}, {"example.com/fpga", 1}})},
      {"sub can go negative and drops zero scalars", Make(100, 10, {{"nvidia.com/gpu", 1}}),
       Make(200, 10, {{"nvidia.com/gpu", 1}, {"example.com/fpga", 1}}), '-',
       Make(-100, 0, {{"example.com/fpga", -1}})},
      {"max takes each maximum", Make(100, 50, {{"nvidia.com/gpu", 4}}),
       Make(200, 10, {{"example.com/fpga", 1}}), 'M',
       Make(200, 50, {{"nvidia.com/gpu", 4}, {"example.com/fpga", 1}})},
      {"add saturates instead of overflowing", Make(kMax, 1), Make(1, 1), '+', Make(kMax, 2)},
      {"sub saturates instead of overflowing", Make(std::numeric_limits<int64_t>::min(), 0),
       Make(1, 0), '-', Make(std::numeric_limits<int64_t>::min(), 0)},
      {"max of a negative scalar and nothing is zero", Make(0, 0, {{"example.com/fpga", -1}}),
       Make(0, 0), 'M', Make(0, 0)},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ResourceList r = c.a;
    if (c.op == '+') r.Add(c.b);
    if (c.op == '-') r.Sub(c.b);
    if (c.op == 'M') r.Max(c.b);
    EXPECT_EQ(r, c.want);
  }
}

}  // namespace
}  // namespace gpusched::api
