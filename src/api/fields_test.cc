// SPDX-License-Identifier: Apache-2.0
#include "src/api/fields.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

namespace gpusched::api {
namespace {

namespace json = boost::json;

json::object Doc(std::string_view text) { return json::parse(text).as_object(); }

TEST(PlainDialectTest, ReadsTypedMembersAndTreatsAbsentAndNullAlike) {
  JsonReader r(PlainDialect());
  const FieldPath spec = FieldPath::Text("spec");
  const json::object o = Doc(R"({"s":"x","b":true,"n":1.5,"i":7,"f":2.0,"q":"500m","qn":2,
                                 "o":{},"a":[1],"null":null})");
  EXPECT_EQ(r.String(o, "s", spec), "x");
  EXPECT_EQ(r.Bool(o, "b", spec), true);
  EXPECT_EQ(r.Number(o, "n", spec), 1.5);
  EXPECT_EQ(r.Int(o, "i", spec), 7);
  EXPECT_EQ(r.Int(o, "f", spec), 2);
  EXPECT_EQ(r.QuantityOf(o, "q", spec)->MilliValue(), 500);
  EXPECT_EQ(r.QuantityOf(o, "qn", spec)->MilliValue(), 2000);
  EXPECT_NE(r.Object(o, "o", spec), nullptr);
  EXPECT_NE(r.Array(o, "a", spec), nullptr);
  for (std::string_view key : {"null", "absent"}) {
    EXPECT_EQ(r.String(o, key, spec), std::nullopt);
    EXPECT_EQ(r.Int(o, key, spec), std::nullopt);
    EXPECT_EQ(r.Object(o, key, spec), nullptr);
  }
  EXPECT_TRUE(r.ok());
}

TEST(PlainDialectTest, RecordsEveryErrorWithItsPathAndGoesOn) {
  JsonReader r(PlainDialect());
  const FieldPath root;
  const FieldPath spec = FieldPath::Text("spec");
  const json::object o = Doc(R"({"s":1,"b":"yes","n":"ten","i":1.5,"big":1e300,"r":11,
                                 "q":"lots","o":[],"a":{},"extra":0})");
  EXPECT_EQ(r.String(o, "s", spec), std::nullopt);
  EXPECT_EQ(r.Bool(o, "b", spec), std::nullopt);
  EXPECT_EQ(r.Number(o, "n", spec), std::nullopt);
  EXPECT_EQ(r.Int(o, "i", spec), std::nullopt);
  EXPECT_EQ(r.Int(o, "big", spec), std::nullopt);  // no undefined conversion
  EXPECT_EQ(r.Int(o, "r", spec, 0, 10), std::nullopt);
  EXPECT_EQ(r.QuantityOf(o, "q", spec), std::nullopt);
  EXPECT_EQ(r.Object(o, "o", root), nullptr);
  EXPECT_EQ(r.Array(o, "a", spec), nullptr);
  const std::vector<std::string_view> known = {"s", "b", "n", "i", "big", "r", "q", "o", "a"};
  r.CheckKnownFields(o, spec, known);
  const std::vector<std::string> want = {
      "spec.s: want a string, got 1",         "spec.b: want true or false, got \"yes\"",
      "spec.n: want a number, got \"ten\"",   "spec.i: want an integer, got 1.5E0",
      "spec.big: want an integer, got 1E300", "spec.r: must be in [0, 10], got 11",
      "spec.q: invalid quantity \"lots\"",    "o: want an object, got []",
      "spec.a: want a list, got {}",          "spec.extra: unknown field",
  };
  ASSERT_EQ(r.errors().size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(r.errors().list()[i].substr(0, want[i].size()), want[i]) << r.errors().list()[i];
  }
}

TEST(FieldPathTest, SpellsEachStyleAndBuildsTextOnlyWhenAsked) {
  const FieldPath root;
  const FieldPath spec = root.Key("spec");
  const FieldPath containers = spec.Key("containers");
  const FieldPath c2 = containers.At(2);
  const FieldPath resources = c2.Key("resources");
  const FieldPath limits = resources.Key("limits");
  const FieldPath gpu = limits.Key("nvidia.com/gpu");
  EXPECT_EQ(gpu.ToString(PathStyle::kBracketed),
            "spec.containers[2].resources.limits[nvidia.com/gpu]");
  EXPECT_EQ(gpu.ToString(PathStyle::kQuoted),
            "spec.containers[2].resources.limits.\"nvidia.com/gpu\"");
  EXPECT_EQ(gpu.ToString(PathStyle::kDotted), "spec.containers[2].resources.limits.nvidia.com/gpu");
  EXPECT_EQ(root.ToString(PathStyle::kDotted), "");
  EXPECT_EQ(root.At(0).ToString(PathStyle::kQuoted), "[0]");
  const FieldPath profile = FieldPath::Text("profiles[0]");
  EXPECT_EQ(profile.Key("plugins").ToString(PathStyle::kQuoted), "profiles[0].plugins");
  const FieldPath empty = FieldPath::Text("");
  EXPECT_EQ(empty.Key("a b").ToString(PathStyle::kQuoted), "\"a b\"");
}

std::string TestTypeError(JsonType want, const json::value& got) {
  return "want " + std::to_string(static_cast<int>(want)) + ", got " + json::serialize(got);
}
std::string TestRangeError(const json::value& got, std::optional<int64_t> value, int64_t lo,
                           int64_t hi) {
  return (value ? std::to_string(*value) : "beyond int64 " + json::serialize(got)) + " not in [" +
         std::to_string(lo) + ", " + std::to_string(hi) + "]";
}
constexpr Dialect kTestDialect{PathStyle::kBracketed, &TestTypeError, &TestRangeError, nullptr};

TEST(JsonReaderTest, ReturnsValuesAndCollectsEveryErrorInOrder) {
  JsonReader r(kTestDialect);
  const json::object o = Doc(R"({"s":"x","i":-9223372036854775808,"d":4.0,"q":"2Gi",
      "list":[{"n":1},2,{"n":3}],"bad":{"x.y":true,"u":18446744073709551615,"big":9.3e18,
      "r":7,"q":"lots","n":null}})");
  const FieldPath root;
  EXPECT_EQ(r.String(o, "s", root), "x");
  EXPECT_EQ(r.Int(o, "i", root), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(r.Int(o, "d", root, 0, 10), 4);
  EXPECT_EQ(r.QuantityOf(o, "q", root)->Value(), int64_t{2} << 30);
  std::vector<int64_t> ns = r.MapObjects<int64_t>(
      o, "list", root,
      [&](const json::object& e, const FieldPath& p) { return r.Int(e, "n", p).value_or(-1); });
  EXPECT_EQ(ns, (std::vector<int64_t>{1, 3}));
  const json::object* bad = r.Object(o, "bad", root);
  ASSERT_NE(bad, nullptr);
  const FieldPath bp = root.Key("bad");
  EXPECT_EQ(r.String(*bad, "x.y", bp), std::nullopt);
  EXPECT_EQ(r.Int(*bad, "u", bp), std::nullopt);
  EXPECT_EQ(r.Int(*bad, "big", bp), std::nullopt);  // no undefined conversion
  EXPECT_EQ(r.Int(*bad, "r", bp, 0, 5), std::nullopt);
  EXPECT_EQ(r.QuantityOf(*bad, "q", bp), std::nullopt);
  EXPECT_EQ(r.Bool(*bad, "n", bp), std::nullopt);  // null is absent, not an error
  EXPECT_EQ(r.AsString(json::value(nullptr), bp.Key("n")), std::nullopt);  // but not a string
  const std::vector<std::string> want = {
      "list[1]: want 0, got 2",
      "bad[x.y]: want 2, got true",
      "bad.u: beyond int64 18446744073709551615 not in [-9223372036854775808, "
      "9223372036854775807]",
      "bad.big: beyond int64 9.3E18 not in [-9223372036854775808, 9223372036854775807]",
      "bad.r: 7 not in [0, 5]",
      "bad.q: invalid quantity \"lots\": no digits",
      "bad.n: want 2, got null",
  };
  EXPECT_EQ(r.errors().list(), want);
  EXPECT_EQ(r.errors().ToStatus("doc").message(), "doc: " + r.errors().Join());
}

TEST(JsonReaderTest, ACleanDocumentRecordsNothing) {
  JsonReader r(kTestDialect);
  const json::object o = Doc(R"({"a":{"b":[{"c":"d"}]}})");
  const FieldPath root;
  const json::object* a = r.Object(o, "a", root);
  ASSERT_NE(a, nullptr);
  r.ForEachObject(*a, "b", root.Key("a"), [&](const json::object& e, const FieldPath& p) {
    EXPECT_EQ(r.String(e, "c", p), "d");
  });
  EXPECT_TRUE(r.ok());
  EXPECT_TRUE(r.errors().ToStatus("doc").ok());
}

TEST(JsonReaderTest, AFoldCaseDialectPrefersTheExactNameThenAnyCase) {
  Dialect folding = kTestDialect;
  folding.fold_case = true;
  JsonReader r(folding);
  JsonReader strict(kTestDialect);
  const json::object o = Doc(R"({"podName":"lower","PodName":"exact","nodes":["n1"],"UID":null})");
  const FieldPath root;
  EXPECT_EQ(r.String(o, "PodName", root), "exact");
  EXPECT_EQ(r.String(o, "PODNAME", root), "lower") << "the first member that folds to the name";
  ASSERT_NE(r.Array(o, "Nodes", root), nullptr);
  EXPECT_EQ(r.Find(o, "uid"), nullptr) << "null reads as absent";
  EXPECT_EQ(r.String(o, "Missing", root), std::nullopt);
  EXPECT_EQ(strict.Array(o, "Nodes", root), nullptr) << "other dialects match names exactly";
  EXPECT_TRUE(r.ok());
}

}  // namespace
}  // namespace gpusched::api

namespace gpusched::api {
namespace {

constexpr Dialect kWrongType{
    PathStyle::kDotted,
    [](JsonType, const boost::json::value&) -> std::string { return "wrong type"; }, nullptr,
    nullptr};

TEST(ObjectFieldsTest, MembersNoReadAskedForAreUnknownWithTheNearestDeclaredName) {
  JsonReader r(kWrongType);
  const boost::json::object o =
      boost::json::parse(R"({"kind":"X","weight":1,"wieght":2,"nam":"a","zzz":0,"inner":{"b":1}})")
          .as_object();
  const FieldPath root;
  {
    ObjectFields f(r, o, root);
    f.Allow({"kind"});
    EXPECT_EQ(f.Int("weight"), 1);
    EXPECT_EQ(f.String("name"), std::nullopt);  // absent: declared all the same
    const FieldPath ip = root.Key("inner");
    ObjectFields inner(r, *f.Object("inner"), ip);
    EXPECT_EQ(inner.Int("a"), std::nullopt);
    inner.Finish();
    inner.Finish();  // once
  }
  const std::vector<std::string> want = {
      "inner.b: unknown field (did you mean \"a\"?)",
      "wieght: unknown field (did you mean \"weight\"?)",
      "nam: unknown field (did you mean \"name\"?)",
      "zzz: unknown field",
  };
  EXPECT_EQ(r.errors().list(), want);
}

TEST(ObjectFieldsTest, RequiredStringRecordsOneErrorPerMember) {
  JsonReader r(kWrongType);
  const boost::json::object o =
      boost::json::parse(R"({"ok":"x","empty":"","null":null,"number":1})").as_object();
  const FieldPath root;
  ObjectFields f(r, o, root);
  EXPECT_EQ(f.RequiredString("ok"), "x");
  for (std::string_view key : {"empty", "null", "number", "absent"}) {
    EXPECT_EQ(f.RequiredString(key), std::nullopt) << key;
  }
  const std::vector<std::string> want = {"empty: required", "null: required", "number: wrong type",
                                         "absent: required"};
  EXPECT_EQ(r.errors().list(), want);
}

}  // namespace
}  // namespace gpusched::api

namespace gpusched::api {
namespace {

// The invariant behind "a field is declared by reading it", over random objects and random reads:
// ObjectFields reports exactly the members no read asked for, once each, in document order, each
// at its own path, with a hint only when it names a declared field.
TEST(ObjectFieldsTest, ReportsExactlyTheUnreadMembersOverRandomObjects) {
  const std::vector<std::string> pool = {"a",      "ab",     "abc",    "weight", "wieght",
                                         "name",   "nam",    "policy", "polcy",  "x",
                                         "labels", "lables", "count",  "cuont",  "z9"};
  std::mt19937 rng(42);
  constexpr Dialect kDialect{PathStyle::kDotted,
                             [](JsonType, const boost::json::value&) -> std::string { return "t"; },
                             nullptr, nullptr};
  for (int trial = 0; trial < 3000; ++trial) {
    SCOPED_TRACE(trial);
    json::object o;
    std::vector<std::string> declared;
    for (const std::string& k : pool) {
      if (rng() % 3 == 0) o[k] = static_cast<int64_t>(rng() % 5);
      if (rng() % 2 == 0) declared.push_back(k);
    }
    JsonReader r(kDialect);
    const FieldPath root = FieldPath::Text("spec");
    {
      ObjectFields f(r, o, root);
      for (const std::string& k : declared) {
        switch (rng() % 3) {
          case 0: f.Int(k); break;
          case 1: f.Value(k); break;
          default: f.Allow({k}); break;
        }
      }
    }
    std::vector<std::string> want;  // the unread members, in document order
    for (const auto& kv : o) {
      const std::string key(kv.key());
      if (std::find(declared.begin(), declared.end(), key) == declared.end()) want.push_back(key);
    }
    ASSERT_EQ(r.errors().size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      const std::string& e = r.errors().list()[i];
      const std::string head = "spec." + want[i] + ": unknown field";
      ASSERT_EQ(e.substr(0, head.size()), head) << e;
      const std::string hint = e.substr(head.size());
      if (hint.empty()) continue;
      const size_t q = hint.find('"');
      ASSERT_NE(q, std::string::npos) << e;
      const std::string named = hint.substr(q + 1, hint.rfind('"') - q - 1);
      EXPECT_NE(std::find(declared.begin(), declared.end(), named), declared.end()) << e;
    }
  }
}

}  // namespace
}  // namespace gpusched::api
