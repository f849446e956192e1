// SPDX-License-Identifier: Apache-2.0
// Labels, label selectors (matchLabels, matchExpressions) and node selectors, interned.
//
// Matching allocates nothing and compares integers. Values that must be compared as integers
// (Gt/Lt) are parsed on decode of the selector.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "src/common/interner.h"
#include "src/common/status.h"

namespace gpusched::api {

using common::Atom;

// A flat map of interned key -> interned value, sorted by key id.
class Labels {
 public:
  Labels() = default;
  void Set(Atom key, Atom value);
  // Convenience for tests and decoders.
  void Set(std::string_view key, std::string_view value) {
    Set(common::Intern(key), common::Intern(value));
  }
  // Returns true and the value when present.
  bool Get(Atom key, Atom* value) const;
  bool Has(Atom key) const;
  size_t size() const { return kv_.size(); }
  bool empty() const { return kv_.empty(); }
  std::span<const std::pair<Atom, Atom>> items() const { return kv_; }
  friend bool operator==(const Labels&, const Labels&) = default;

 private:
  std::vector<std::pair<Atom, Atom>> kv_;
};

enum class SelectorOp : uint8_t { kIn, kNotIn, kExists, kDoesNotExist, kGt, kLt };

struct Requirement {
  Atom key;
  SelectorOp op = SelectorOp::kIn;
  std::vector<Atom> values;  // In/NotIn
  int64_t number = 0;        // Gt/Lt: the single value, parsed on decode

  bool Matches(const Labels& labels) const;
};

// metav1.LabelSelector. matchLabels are stored as In requirements with one value. An empty
// selector matches everything; a null selector (std::optional without value, at the use site)
// matches nothing, as in Kubernetes.
struct LabelSelector {
  std::vector<Requirement> requirements;
  bool Matches(const Labels& labels) const;
  bool empty() const { return requirements.empty(); }
  // A selector that matches no labels: what a null labelSelector decodes to where Kubernetes
  // treats null as "nothing" (pod affinity terms, topology spread constraints). It holds one In
  // requirement with no values.
  static LabelSelector Nothing();
};

// v1.NodeSelectorTerm: all expressions must match. match_fields supports only metadata.name.
// As in Kubernetes, a term with no expressions and no fields matches nothing.
struct NodeSelectorTerm {
  std::vector<Requirement> match_expressions;
  std::vector<std::string> match_fields_names_in;      // metadata.name In [...]
  std::vector<std::string> match_fields_names_not_in;  // metadata.name NotIn [...]
  bool Matches(const Labels& labels, std::string_view node_name) const;
};

// v1.NodeSelector: terms are ORed. An empty list of terms matches nothing.
struct NodeSelector {
  std::vector<NodeSelectorTerm> terms;
  bool Matches(const Labels& labels, std::string_view node_name) const;
};

// Parses "k=v,k2 in (a,b),!k3" style selectors (kubectl -l) into a LabelSelector. The grammar is
// k8s.io/apimachinery labels.Parse: "k", "!k", "k=v", "k==v", "k!=v", "k in (a,b)",
// "k notin (a,b)", "k>5", "k<5", joined by ','. Keys and values are validated as label keys and
// values. An empty or blank text is the empty selector (matches everything). Errors read
// invalid selector "text": <why>.
common::StatusOr<LabelSelector> ParseSelector(std::string_view text);

}  // namespace gpusched::api
