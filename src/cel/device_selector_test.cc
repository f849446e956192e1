// SPDX-License-Identifier: Apache-2.0
#include "src/cel/device_selector.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>

#include "src/cel/program.h"

namespace gpusched::cel {
namespace {

using ::testing::HasSubstr;

api::DeviceAttribute Str(std::string s) {
  api::DeviceAttribute a;
  a.kind = api::DeviceAttribute::Kind::kString;
  a.string_value = std::move(s);
  return a;
}
api::DeviceAttribute Int(int64_t i) {
  api::DeviceAttribute a;
  a.kind = api::DeviceAttribute::Kind::kInt;
  a.int_value = i;
  return a;
}
api::DeviceAttribute Bool(bool b) {
  api::DeviceAttribute a;
  a.kind = api::DeviceAttribute::Kind::kBool;
  a.bool_value = b;
  return a;
}
api::DeviceAttribute Version(std::string v) {
  api::DeviceAttribute a;
  a.kind = api::DeviceAttribute::Kind::kVersion;
  a.string_value = std::move(v);
  return a;
}
api::Quantity Q(std::string_view s) { return *api::Quantity::Parse(s); }

// An A100 as the NVIDIA DRA driver publishes it.
struct Fixture {
  std::vector<std::pair<std::string, api::DeviceAttribute>> attributes = {
      {"dra.example.com/numa", Int(1)},
      {"gpu.nvidia.com/architecture", Str("Ampere")},
      {"gpu.nvidia.com/brand", Str("Nvidia")},
      {"gpu.nvidia.com/cudaComputeCapability", Version("8.0.0")},
      {"gpu.nvidia.com/driverVersion", Version("550.54.15")},
      {"gpu.nvidia.com/index", Int(0)},
      {"gpu.nvidia.com/migCapable", Bool(true)},
      {"gpu.nvidia.com/productName", Str("NVIDIA A100-SXM4-80GB")},
  };
  std::vector<std::pair<std::string, api::Quantity>> capacity = {
      {"gpu.nvidia.com/memory", Q("80Gi")},
      {"gpu.nvidia.com/multiprocessors", Q("108")},
  };
  DeviceInput Input() const {
    DeviceInput d;
    d.driver = "gpu.nvidia.com";
    d.attributes = &attributes;
    d.capacity = &capacity;
    return d;
  }
};

struct MatchCase {
  std::string name;
  std::string expr;
  bool want = false;
  std::string want_error;  // a substring; empty: no error
};

TEST(MatchDeviceTest, DraSelectors) {
  const std::vector<MatchCase> cases = {
      {"driver equality", R"(device.driver == "gpu.nvidia.com")", true},
      {"other driver", R"(device.driver == "gpu.intel.com")", false},
      {"string attribute by domain", R"(device.attributes["gpu.nvidia.com"].productName == "NVIDIA A100-SXM4-80GB")", true},
      {"index syntax for the id", R"(device.attributes["gpu.nvidia.com"]["architecture"] == "Ampere")", true},
      {"int attribute of another domain", R"(device.attributes["dra.example.com"].numa == 1)", true},
      {"bool attribute", R"(device.attributes["gpu.nvidia.com"].migCapable)", true},
      {"missing attribute is a runtime error",
       R"(device.attributes["gpu.nvidia.com"].memoryBandwidth > 0)", false,
       "no such key: memoryBandwidth"},
      {"missing domain reads as an empty map, so its id is missing",
       R"(device.attributes["amd.com"].family == "x")", false, "no such key: family"},
      {"has() on a missing attribute is false", R"(has(device.attributes["gpu.nvidia.com"].foo))", false},
      {"has() on a missing domain is false", R"(has(device.attributes["amd.com"].foo))", false},
      {"has() on a present attribute", R"(has(device.attributes["gpu.nvidia.com"].index))", true},
      {"domain in attributes", R"("gpu.nvidia.com" in device.attributes)", true},
      {"id in a domain", R"("brand" in device.attributes["gpu.nvidia.com"])", true},
      {"missing domain not in attributes", R"("amd.com" in device.attributes)", false},
      {"size counts the domains", R"(size(device.attributes) == 2 && size(device.capacity) == 1)", true},
      {"in a list literal", R"(device.attributes["gpu.nvidia.com"].architecture in ["Hopper", "Ampere"])", true},
      {"capacity compared with quantity()",
       R"(device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0)", true},
      {"capacity below a bigger quantity",
       R"(device.capacity["gpu.nvidia.com"].memory.isLessThan(quantity("81Gi")))", true},
      {"capacity as integer", R"(device.capacity["gpu.nvidia.com"].multiprocessors.asInteger() == 108)", true},
      {"capacity arithmetic",
       R"(device.capacity["gpu.nvidia.com"].memory.sub(quantity("16Gi")).compareTo(quantity("64Gi")) == 0)", true},
      {"semver comparison",
       R"(device.attributes["gpu.nvidia.com"].driverVersion.isGreaterThan(semver("535.0.0")))", true},
      {"semver compareTo", R"(device.attributes["gpu.nvidia.com"].cudaComputeCapability.compareTo(semver("9.0.0")) < 0)", true},
      {"semver major", R"(device.attributes["gpu.nvidia.com"].driverVersion.major() >= 550)", true},
      {"semver equality", R"(device.attributes["gpu.nvidia.com"].cudaComputeCapability == semver("8.0.0"))", true},
      {"&& absorbs an error when the other side is false",
       R"(device.attributes["gpu.nvidia.com"].nope == 1 && device.driver == "x")", false},
      {"&& absorbs an error in either order",
       R"(device.driver == "x" && device.attributes["gpu.nvidia.com"].nope == 1)", false},
      {"|| absorbs an error when the other side is true",
       R"(device.attributes["gpu.nvidia.com"].nope == 1 || device.driver == "gpu.nvidia.com")", true},
      {"&& keeps the error when the other side is true",
       R"(device.attributes["gpu.nvidia.com"].nope == 1 && device.driver == "gpu.nvidia.com")", false,
       "no such key: nope"},
      {"string functions", R"(device.attributes["gpu.nvidia.com"].productName.startsWith("NVIDIA") && device.attributes["gpu.nvidia.com"].productName.lowerAscii().contains("a100"))", true},
      {"matches", R"(device.attributes["gpu.nvidia.com"].productName.matches("^NVIDIA A100-.*80GB$"))", true},
      {"comparing a string attribute with an int is a runtime error",
       R"(device.attributes["gpu.nvidia.com"].productName > 1)", false, "no such overload"},
      {"int overflow", R"(device.attributes["gpu.nvidia.com"].index + 9223372036854775807 + 1 > 0)", false, "integer overflow"},
      {"cel.bind", R"(cel.bind(gpu, device.attributes["gpu.nvidia.com"], gpu.brand == "Nvidia" && gpu.index == 0))", true},
      {"exists over a domain's ids", R"(device.attributes["gpu.nvidia.com"].exists(k, k == "migCapable"))", true},
      {"all over capacity", R"(device.capacity["gpu.nvidia.com"].all(k, device.capacity["gpu.nvidia.com"][k].isInteger()))", true},
      {"allowMultipleAllocations", R"(!device.allowMultipleAllocations)", true},
      {"a non-bool result at runtime", R"(device.attributes["gpu.nvidia.com"].index)", false,
       "CEL result of type int could not be converted to bool"},
  };
  Fixture f;
  for (const MatchCase& c : cases) {
    SCOPED_TRACE(c.name);
    auto program = CompileDeviceSelector(c.expr);
    ASSERT_TRUE(program.ok()) << program.status().ToString();
    common::StatusOr<bool> got = MatchDevice(**program, f.Input());
    if (!c.want_error.empty()) {
      ASSERT_FALSE(got.ok()) << "got " << *got;
      EXPECT_THAT(std::string(got.status().message()), HasSubstr(c.want_error));
    } else {
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      EXPECT_EQ(*got, c.want);
    }
  }
}

TEST(CompileDeviceSelectorTest, Errors) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"device.driver ==", "Syntax error"},
      {"device.driver == \"a\" &&& true", "ERROR: <input>:1:"},
      {"device.drver == \"a\"", "undefined field 'drver'"},
      {"foo == 1", "undeclared reference to 'foo'"},
      {"device.driver.frobnicate()", "undeclared reference to 'frobnicate'"},
      {"device.driver + 1 == 2", "found no matching overload for '_+_' applied to '(string, int)'"},
      {"1 + 2", "must evaluate to bool or the unknown type, not int"},
      {"device.driver", "must evaluate to bool or the unknown type, not string"},
      {"[1,2,3,4,5,6,7,8,9,10].all(a, [1,2,3,4,5,6,7,8,9,10].all(b, [1,2,3,4,5,6,7,8,9,10].all(c, "
       "[1,2,3,4,5,6,7,8,9,10].all(d, [1,2,3,4,5,6,7,8,9,10].all(e, [1,2,3,4,5,6,7,8,9,10].all(f, "
       "a + b + c + d + e + f > 0))))))",
       "too complex, exceeds cost limit"},
      {std::string(300, '(') + "true" + std::string(300, ')'), "recursion"},
      {std::string(kSelectorMaxLength + 1, ' ') + "true", "too long"},
  };
  for (const auto& [expr, want] : cases) {
    SCOPED_TRACE(expr.substr(0, 80));
    auto program = CompileDeviceSelector(expr);
    ASSERT_FALSE(program.ok());
    EXPECT_THAT(std::string(program.status().message()), HasSubstr(want));
    EXPECT_THAT(std::string(program.status().message()), HasSubstr("CEL selector \""));
  }
}

TEST(MatchDeviceTest, RuntimeCostLimit) {
  // The estimate bounds a list split from a string by 64 items; a 2000-byte attribute makes
  // 4,000,000 iterations, which the runtime limit stops.
  auto program = CompileDeviceSelector(
      R"(device.attributes["dra.example.com"].blob.split("").all(a, )"
      R"(device.attributes["dra.example.com"].blob.split("").all(b, a == b || b != "y")))");
  ASSERT_TRUE(program.ok()) << program.status().ToString();
  Fixture f;
  f.attributes.insert(f.attributes.begin() + 1, {"dra.example.com/blob", Str(std::string(2000, 'x'))});
  common::StatusOr<bool> got = MatchDevice(**program, f.Input());
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().message(), "operation cancelled: actual cost limit exceeded");
}

TEST(MatchDeviceTest, InvalidVersionAttribute) {
  Fixture f;
  f.attributes.emplace_back("gpu.nvidia.com/zz", Version("1.2"));
  auto program = CompileDeviceSelector("true");
  ASSERT_TRUE(program.ok());
  common::StatusOr<bool> got = MatchDevice(**program, f.Input());
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().message(),
            "attribute gpu.nvidia.com/zz: parse semantic version: No Major.Minor.Patch elements found");
}

TEST(MatchDeviceTest, NoAttributesOrCapacity) {
  DeviceInput d;
  d.driver = "x";
  auto program = CompileDeviceSelector(R"(has(device.attributes["x"].a) || size(device.capacity) == 0)");
  ASSERT_TRUE(program.ok());
  common::StatusOr<bool> got = MatchDevice(**program, d);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_TRUE(*got);
}

TEST(MatchDeviceTest, ConcurrentEvaluation) {
  auto program = CompileDeviceSelector(
      R"(device.driver == "gpu.nvidia.com" && device.attributes["gpu.nvidia.com"].productName == "NVIDIA A100-SXM4-80GB" && device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0)");
  ASSERT_TRUE(program.ok()) << program.status().ToString();
  Fixture f;
  std::vector<std::thread> threads;
  std::atomic<int> matched{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) {
        common::StatusOr<bool> got = MatchDevice(**program, f.Input());
        if (got.ok() && *got) matched.fetch_add(1);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(matched.load(), 4000);
}

}  // namespace
}  // namespace gpusched::cel
