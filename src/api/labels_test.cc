// SPDX-License-Identifier: Apache-2.0
#include "src/api/labels.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace gpusched::api {
namespace {

using common::Intern;
using ::testing::HasSubstr;

Labels MakeLabels(std::vector<std::pair<std::string, std::string>> kv) {
  Labels l;
  for (const auto& [k, v] : kv) l.Set(k, v);
  return l;
}

Requirement Req(std::string_view key, SelectorOp op, std::vector<std::string_view> values = {},
                int64_t number = 0) {
  Requirement r;
  r.key = Intern(key);
  r.op = op;
  for (std::string_view v : values) r.values.push_back(Intern(v));
  r.number = number;
  return r;
}

TEST(LabelsTest, SetKeepsKeysSortedAndReplacesValues) {
  Labels l;
  l.Set("zone", "a");
  l.Set("app", "x");
  l.Set("zone", "b");
  EXPECT_EQ(l.size(), 2u);
  Atom v;
  ASSERT_TRUE(l.Get(Intern("zone"), &v));
  EXPECT_EQ(common::Str(v), "b");
  EXPECT_TRUE(l.Has(Intern("app")));
  EXPECT_FALSE(l.Has(Intern("missing-key")));
  EXPECT_FALSE(l.Get(Intern("missing-key"), &v));
  for (size_t i = 1; i < l.items().size(); ++i) {
    EXPECT_LT(l.items()[i - 1].first, l.items()[i].first);
  }
  EXPECT_EQ(l, MakeLabels({{"app", "x"}, {"zone", "b"}}));
}

TEST(RequirementTest, MatchesWithKubernetesSemantics) {
  const Labels labels = MakeLabels({{"app", "web"}, {"gpu-mem", "40960"}, {"tier", "x1"}});
  struct Case {
    std::string name;
    Requirement req;
    bool want;
  };
  const std::vector<Case> cases = {
      {"In matches a listed value", Req("app", SelectorOp::kIn, {"db", "web"}), true},
      {"In does not match an unlisted value", Req("app", SelectorOp::kIn, {"db"}), false},
      {"In does not match an absent key", Req("absent", SelectorOp::kIn, {"web"}), false},
      {"NotIn matches an unlisted value", Req("app", SelectorOp::kNotIn, {"db"}), true},
      {"NotIn does not match a listed value", Req("app", SelectorOp::kNotIn, {"web"}), false},
      {"NotIn matches when the key is absent", Req("absent", SelectorOp::kNotIn, {"web"}), true},
      {"Exists matches a present key", Req("app", SelectorOp::kExists), true},
      {"Exists does not match an absent key", Req("absent", SelectorOp::kExists), false},
      {"DoesNotExist matches an absent key", Req("absent", SelectorOp::kDoesNotExist), true},
      {"DoesNotExist does not match a present key", Req("app", SelectorOp::kDoesNotExist), false},
      {"Gt matches a larger integer", Req("gpu-mem", SelectorOp::kGt, {}, 16384), true},
      {"Gt does not match an equal integer", Req("gpu-mem", SelectorOp::kGt, {}, 40960), false},
      {"Lt matches a smaller integer", Req("gpu-mem", SelectorOp::kLt, {}, 81920), true},
      {"Lt does not match a larger integer", Req("gpu-mem", SelectorOp::kLt, {}, 100), false},
      {"Gt needs the label to parse as an integer", Req("tier", SelectorOp::kGt, {}, 0), false},
      {"Lt needs the label to parse as an integer", Req("tier", SelectorOp::kLt, {}, 100), false},
      {"Gt does not match an absent key", Req("absent", SelectorOp::kGt, {}, 0), false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(c.req.Matches(labels), c.want);
  }
}

TEST(LabelSelectorTest, AllRequirementsMustMatch) {
  const Labels labels = MakeLabels({{"app", "web"}, {"env", "prod"}});
  struct Case {
    std::string name;
    LabelSelector sel;
    bool want;
  };
  const std::vector<Case> cases = {
      {"an empty selector matches everything", LabelSelector{}, true},
      {"the nothing selector matches nothing", LabelSelector::Nothing(), false},
      {"two matching requirements match",
       LabelSelector{{Req("app", SelectorOp::kIn, {"web"}), Req("env", SelectorOp::kExists)}},
       true},
      {"one failing requirement fails the selector",
       LabelSelector{{Req("app", SelectorOp::kIn, {"web"}), Req("env", SelectorOp::kIn, {"dev"})}},
       false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(c.sel.Matches(labels), c.want);
  }
  EXPECT_TRUE(LabelSelector::Nothing().Matches(Labels{}) == false);
}

TEST(NodeSelectorTest, TermsAreOredAndFieldsMatchTheNodeName) {
  const Labels labels = MakeLabels({{"zone", "a"}, {"gpu", "true"}});
  NodeSelectorTerm zone_a;
  zone_a.match_expressions = {Req("zone", SelectorOp::kIn, {"a"})};
  NodeSelectorTerm zone_b;
  zone_b.match_expressions = {Req("zone", SelectorOp::kIn, {"b"})};
  NodeSelectorTerm name_n1;
  name_n1.match_fields_names_in = {"n1"};
  NodeSelectorTerm not_n1;
  not_n1.match_fields_names_not_in = {"n1"};
  NodeSelectorTerm zone_a_and_n2 = zone_a;
  zone_a_and_n2.match_fields_names_in = {"n2"};
  struct Case {
    std::string name;
    NodeSelector sel;
    std::string node;
    bool want;
  };
  const std::vector<Case> cases = {
      {"an empty list of terms matches nothing", NodeSelector{}, "n1", false},
      {"an empty term matches nothing", NodeSelector{{NodeSelectorTerm{}}}, "n1", false},
      {"a matching term matches", NodeSelector{{zone_a}}, "n1", true},
      {"a failing term fails", NodeSelector{{zone_b}}, "n1", false},
      {"terms are ORed", NodeSelector{{zone_b, zone_a}}, "n1", true},
      {"metadata.name In matches the node name", NodeSelector{{name_n1}}, "n1", true},
      {"metadata.name In rejects another node", NodeSelector{{name_n1}}, "n2", false},
      {"metadata.name NotIn rejects the named node", NodeSelector{{not_n1}}, "n1", false},
      {"metadata.name NotIn accepts another node", NodeSelector{{not_n1}}, "n2", true},
      {"fields and expressions are ANDed within a term", NodeSelector{{zone_a_and_n2}}, "n1",
       false},
      {"fields and expressions both matching match", NodeSelector{{zone_a_and_n2}}, "n2", true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(c.sel.Matches(labels, c.node), c.want);
  }
}

TEST(ParseSelectorTest, ParsesKubectlSelectors) {
  struct Case {
    std::string name;
    std::string text;
    std::vector<std::pair<Labels, bool>> checks;
    size_t requirements;
  };
  const Labels web = MakeLabels({{"app", "web"}, {"tier", "3"}});
  const Labels db = MakeLabels({{"app", "db"}});
  const Labels none;
  const std::vector<Case> cases = {
      {"an empty selector matches everything", "", {{web, true}, {none, true}}, 0},
      {"a blank selector matches everything", "  ", {{web, true}}, 0},
      {"equality selects a value", "app=web", {{web, true}, {db, false}}, 1},
      {"double equality selects a value", "app==web", {{web, true}, {db, false}}, 1},
      {"inequality matches absent keys", "app!=web", {{web, false}, {db, true}, {none, true}}, 1},
      {"a bare key means exists", "app", {{web, true}, {none, false}}, 1},
      {"a bang means does not exist", "!app", {{web, false}, {none, true}}, 1},
      {"set inclusion lists values",
       "app in (db, web)",
       {{web, true}, {db, true}, {none, false}},
       1},
      {"set exclusion lists values", "app notin (db)", {{web, true}, {db, false}, {none, true}}, 1},
      {"greater than compares integers", "tier>2", {{web, true}, {db, false}}, 1},
      {"less than compares integers", "tier<2", {{web, false}}, 1},
      {"commas join requirements", "app=web, tier", {{web, true}, {db, false}}, 2},
      {"an empty value is allowed", "app=", {{web, false}}, 1},
      {"a prefixed key is accepted", "app.kubernetes.io/name=web", {{web, false}}, 1},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name + ": " + c.text);
    auto sel = ParseSelector(c.text);
    ASSERT_TRUE(sel.ok()) << sel.status().ToString();
    EXPECT_EQ(sel->requirements.size(), c.requirements);
    for (const auto& [labels, want] : c.checks) EXPECT_EQ(sel->Matches(labels), want);
  }
}

TEST(ParseSelectorTest, RejectsMalformedSelectors) {
  struct Case {
    std::string name;
    std::string text;
    std::string error;
  };
  const std::vector<Case> cases = {
      {"a trailing comma is rejected", "app=web,", "expected a label key at offset 8"},
      {"a missing key is rejected", "=web", "invalid selector \"=web\": expected a label key"},
      {"an unknown operator word is rejected", "app within (a)", "expected an operator"},
      {"an unclosed set is rejected", "app in (a, b", "expected ',' or ')'"},
      {"a set without parentheses is rejected", "app in a", "expected '('"},
      {"an empty set is rejected", "app in ()", "empty value set"},
      {"a non-integer Gt value is rejected", "tier>x", "expected an integer, got \"x\""},
      {"an invalid key is rejected", "-app=web", "invalid label key \"-app\""},
      {"an invalid value is rejected", "app=-web", "invalid label value \"-web\""},
      {"a value over 63 characters is rejected", "app=" + std::string(64, 'a'),
       "invalid label value"},
      {"an invalid key prefix is rejected", "Bad_Prefix/app=web", "invalid label key"},
      {"garbage after a requirement is rejected", "app=web )", "expected ',' or end"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name + ": " + c.text);
    auto sel = ParseSelector(c.text);
    ASSERT_FALSE(sel.ok());
    EXPECT_EQ(sel.status().code(), common::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(sel.status().message()), HasSubstr(c.error));
  }
}

}  // namespace
}  // namespace gpusched::api
