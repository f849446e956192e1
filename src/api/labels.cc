// SPDX-License-Identifier: Apache-2.0
#include "src/api/labels.h"

#include <algorithm>
#include <charconv>
#include <string>

#include "src/common/strings.h"

namespace gpusched::api {
namespace {

auto KeyLess = [](const std::pair<Atom, Atom>& e, Atom k) { return e.first < k; };

// strconv.ParseInt(s, 10, 64): an optional sign and decimal digits, nothing else.
bool ParseLabelInt(std::string_view s, int64_t* out) {
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  if (s.empty() || s.front() == '+') return false;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && ptr == s.data() + s.size();
}

bool Contains(const std::vector<Atom>& values, Atom v) {
  return std::find(values.begin(), values.end(), v) != values.end();
}

bool RequirementsMatch(const std::vector<Requirement>& reqs, const Labels& labels) {
  for (const Requirement& r : reqs) {
    if (!r.Matches(labels)) return false;
  }
  return true;
}

}  // namespace

void Labels::Set(Atom key, Atom value) {
  auto it = std::lower_bound(kv_.begin(), kv_.end(), key, KeyLess);
  if (it != kv_.end() && it->first == key) {
    it->second = value;
  } else {
    kv_.insert(it, {key, value});
  }
}

bool Labels::Get(Atom key, Atom* value) const {
  auto it = std::lower_bound(kv_.begin(), kv_.end(), key, KeyLess);
  if (it == kv_.end() || it->first != key) return false;
  *value = it->second;
  return true;
}

bool Labels::Has(Atom key) const {
  auto it = std::lower_bound(kv_.begin(), kv_.end(), key, KeyLess);
  return it != kv_.end() && it->first == key;
}

bool Requirement::Matches(const Labels& labels) const {
  Atom v;
  bool has = labels.Get(key, &v);
  switch (op) {
    case SelectorOp::kIn: return has && Contains(values, v);
    case SelectorOp::kNotIn: return !has || !Contains(values, v);
    case SelectorOp::kExists: return has;
    case SelectorOp::kDoesNotExist: return !has;
    case SelectorOp::kGt:
    case SelectorOp::kLt: {
      int64_t n = 0;
      if (!has || !ParseLabelInt(common::Str(v), &n)) return false;
      return op == SelectorOp::kGt ? n > number : n < number;
    }
  }
  return false;
}

bool LabelSelector::Matches(const Labels& labels) const {
  return RequirementsMatch(requirements, labels);
}

LabelSelector LabelSelector::Nothing() {
  LabelSelector s;
  s.requirements.push_back(Requirement{Atom{}, SelectorOp::kIn, {}, 0});
  return s;
}

bool NodeSelectorTerm::Matches(const Labels& labels, std::string_view node_name) const {
  if (match_expressions.empty() && match_fields_names_in.empty() &&
      match_fields_names_not_in.empty()) {
    return false;
  }
  if (!match_fields_names_in.empty() &&
      std::find(match_fields_names_in.begin(), match_fields_names_in.end(), node_name) ==
          match_fields_names_in.end()) {
    return false;
  }
  if (std::find(match_fields_names_not_in.begin(), match_fields_names_not_in.end(), node_name) !=
      match_fields_names_not_in.end()) {
    return false;
  }
  return RequirementsMatch(match_expressions, labels);
}

bool NodeSelector::Matches(const Labels& labels, std::string_view node_name) const {
  for (const NodeSelectorTerm& t : terms) {
    if (t.Matches(labels, node_name)) return true;
  }
  return false;
}

// ---------------------------------------------------------------------------------------------
// ParseSelector

namespace {

bool IsAlnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

// [A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?, at most 63 characters (empty allowed for values).
bool ValidLabelName(std::string_view s, bool allow_empty) {
  if (s.empty()) return allow_empty;
  if (s.size() > 63 || !IsAlnum(s.front()) || !IsAlnum(s.back())) return false;
  for (char c : s) {
    if (!IsAlnum(c) && c != '-' && c != '_' && c != '.') return false;
  }
  return true;
}

// A qualified name: [prefix/]name, the prefix a DNS subdomain of at most 253 characters.
bool ValidLabelKey(std::string_view key) {
  size_t slash = key.find('/');
  if (slash == std::string_view::npos) return ValidLabelName(key, false);
  std::string_view prefix = key.substr(0, slash);
  if (prefix.empty() || prefix.size() > 253) return false;
  for (std::string_view label : common::Split(prefix, '.')) {
    if (label.empty() || label.size() > 63 || !IsAlnum(label.front()) || !IsAlnum(label.back())) {
      return false;
    }
    for (char c : label) {
      if (!(c >= 'a' && c <= 'z') && !(c >= '0' && c <= '9') && c != '-') return false;
    }
  }
  return ValidLabelName(key.substr(slash + 1), false);
}

class SelectorParser {
 public:
  explicit SelectorParser(std::string_view text) : text_(text) {}

  common::StatusOr<LabelSelector> Parse() {
    LabelSelector out;
    SkipSpace();
    if (pos_ == text_.size()) return out;
    for (;;) {
      Requirement r;
      GPUSCHED_RETURN_IF_ERROR(ParseRequirement(&r));
      out.requirements.push_back(std::move(r));
      SkipSpace();
      if (pos_ == text_.size()) return out;
      if (text_[pos_] != ',') return Error("expected ',' or end");
      ++pos_;
    }
  }

 private:
  static bool IsSpecial(char c) {
    return c == '!' || c == '=' || c == '(' || c == ')' || c == ',' || c == '<' || c == '>' ||
           c == ' ' || c == '\t' || c == '\n' || c == '\r';
  }

  void SkipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\n' || text_[pos_] == '\r')) {
      ++pos_;
    }
  }

  std::string_view Word() {
    size_t begin = pos_;
    while (pos_ < text_.size() && !IsSpecial(text_[pos_])) ++pos_;
    return text_.substr(begin, pos_ - begin);
  }

  bool Consume(std::string_view tok) {
    if (text_.substr(pos_, tok.size()) != tok) return false;
    pos_ += tok.size();
    return true;
  }

  common::Status Error(std::string_view why) const {
    std::string msg = "invalid selector ";
    msg += common::Quote(text_);
    msg += ": ";
    msg += why;
    msg += " at offset ";
    msg += std::to_string(pos_);
    return common::InvalidArgumentError(std::move(msg));
  }

  common::Status Key(Atom* out) {
    SkipSpace();
    size_t at = pos_;
    std::string_view key = Word();
    if (key.empty()) return Error("expected a label key");
    if (!ValidLabelKey(key)) {
      pos_ = at;
      std::string why = "invalid label key ";
      why += common::Quote(key);
      return Error(why);
    }
    *out = common::Intern(key);
    return common::Status::Ok();
  }

  common::Status Value(Atom* out) {
    SkipSpace();
    size_t at = pos_;
    std::string_view v = Word();
    if (!ValidLabelName(v, true)) {
      pos_ = at;
      std::string why = "invalid label value ";
      why += common::Quote(v);
      return Error(why);
    }
    *out = common::Intern(v);
    return common::Status::Ok();
  }

  common::Status ParseRequirement(Requirement* r) {
    SkipSpace();
    if (Consume("!")) {
      r->op = SelectorOp::kDoesNotExist;
      GPUSCHED_RETURN_IF_ERROR(Key(&r->key));
      return common::Status::Ok();
    }
    GPUSCHED_RETURN_IF_ERROR(Key(&r->key));
    SkipSpace();
    if (pos_ == text_.size() || text_[pos_] == ',') {
      r->op = SelectorOp::kExists;
      return common::Status::Ok();
    }
    if (Consume("==") || Consume("=")) {
      r->op = SelectorOp::kIn;
      r->values.emplace_back();
      return Value(&r->values.back());
    }
    if (Consume("!=")) {
      r->op = SelectorOp::kNotIn;
      r->values.emplace_back();
      return Value(&r->values.back());
    }
    if (text_[pos_] == '>' || text_[pos_] == '<') {
      r->op = text_[pos_] == '>' ? SelectorOp::kGt : SelectorOp::kLt;
      ++pos_;
      SkipSpace();
      size_t at = pos_;
      std::string_view v = Word();
      if (!ParseLabelInt(v, &r->number)) {
        pos_ = at;
        std::string why = "expected an integer, got ";
        why += common::Quote(v);
        return Error(why);
      }
      return common::Status::Ok();
    }
    size_t at = pos_;
    std::string_view word = Word();
    if (word == "in" || word == "notin") {
      r->op = word == "in" ? SelectorOp::kIn : SelectorOp::kNotIn;
      SkipSpace();
      if (!Consume("(")) return Error("expected '('");
      for (;;) {
        Atom v;
        GPUSCHED_RETURN_IF_ERROR(Value(&v));
        r->values.push_back(v);
        SkipSpace();
        if (Consume(")")) break;
        if (!Consume(",")) return Error("expected ',' or ')'");
      }
      // "k in ()" reads as one empty value, which Kubernetes rejects: the set must be non-empty.
      if (r->values.size() == 1 && common::Str(r->values[0]).empty()) {
        return Error("empty value set");
      }
      return common::Status::Ok();
    }
    pos_ = at;
    return Error("expected an operator (=, ==, !=, in, notin, >, <)");
  }

  std::string_view text_;
  size_t pos_ = 0;
};

}  // namespace

common::StatusOr<LabelSelector> ParseSelector(std::string_view text) {
  return SelectorParser(text).Parse();
}

}  // namespace gpusched::api
