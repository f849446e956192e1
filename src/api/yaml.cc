// SPDX-License-Identifier: Apache-2.0
// YAML -> boost::json::value (ParseYamlDocuments in decode.h). yaml-cpp throws; every exception is
// caught in this file and turned into a Status naming the source and line:column. yaml-cpp limits
// nesting itself (DepthGuard, 500 levels), so the event handler keeps an explicit stack.
#include <yaml-cpp/anchor.h>
#include <yaml-cpp/emitterstyle.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/mark.h>
#include <yaml-cpp/parser.h>

#include <boost/json.hpp>
#include <charconv>
#include <cmath>
#include <limits>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "src/api/decode.h"

namespace gpusched::api {
namespace {

namespace json = boost::json;
using common::Status;

// Aliases can make a small text expand exponentially ("billion laughs"). Without aliases a YAML
// node takes at least two characters of text, so the converted size is capped at a fixed multiple
// of the input size: generous for real alias use, linear for a bomb.
constexpr size_t kNodesPerInputByte = 16;
constexpr size_t kMinNodeBudget = 4096;

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

bool AllOf(std::string_view s, bool (*pred)(char)) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!pred(c)) return false;
  }
  return true;
}

bool IsOctal(char c) { return c >= '0' && c <= '7'; }
bool IsHex(char c) { return IsDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

// [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?
bool IsCoreFloat(std::string_view s) {
  size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
  size_t int_digits = 0;
  while (i < s.size() && IsDigit(s[i])) ++i, ++int_digits;
  size_t frac_digits = 0;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && IsDigit(s[i])) ++i, ++frac_digits;
  }
  if (int_digits == 0 && frac_digits == 0) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    size_t exp_digits = 0;
    while (i < s.size() && IsDigit(s[i])) ++i, ++exp_digits;
    if (exp_digits == 0) return false;
  }
  return i == s.size();
}

// Types a plain scalar by the YAML 1.2 core schema.
json::value CoreScalar(const std::string& text) {
  std::string_view s = text;
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return nullptr;
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  // Integers: decimal, 0o octal, 0x hex.
  {
    std::string_view d = s;
    bool negative = false;
    if (!d.empty() && (d.front() == '+' || d.front() == '-')) {
      negative = d.front() == '-';
      d.remove_prefix(1);
    }
    if (AllOf(d, IsDigit)) {
      uint64_t u = 0;
      auto [ptr, ec] = std::from_chars(d.data(), d.data() + d.size(), u);
      if (ec == std::errc() && ptr == d.data() + d.size()) {
        constexpr uint64_t kMinMagnitude = uint64_t{1} << 63;
        if (!negative && u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
          return static_cast<int64_t>(u);
        }
        if (!negative) return u;
        if (u < kMinMagnitude) return -static_cast<int64_t>(u);
        if (u == kMinMagnitude) return std::numeric_limits<int64_t>::min();
      }
      // Too large for 64 bits: fall through to the float reading below.
    }
  }
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'o' || s[1] == 'x')) {
    std::string_view digits = s.substr(2);
    bool hex = s[1] == 'x';
    if (AllOf(digits, hex ? IsHex : IsOctal)) {
      uint64_t u = 0;
      auto [ptr, ec] =
          std::from_chars(digits.data(), digits.data() + digits.size(), u, hex ? 16 : 8);
      if (ec == std::errc() && ptr == digits.data() + digits.size()) {
        if (u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
          return static_cast<int64_t>(u);
        }
        return u;
      }
      return json::string(s);  // out of range: keep the text
    }
  }
  if (IsCoreFloat(s)) {
    std::string_view f = s;
    if (f.front() == '+') f.remove_prefix(1);
    double v = 0;
    auto [ptr, ec] = std::from_chars(f.data(), f.data() + f.size(), v);
    if (ec == std::errc() && ptr == f.data() + f.size()) return v;
    return json::string(s);  // out of double range: keep the text
  }
  if (s == ".inf" || s == ".Inf" || s == ".INF" || s == "+.inf" || s == "+.Inf" || s == "+.INF") {
    return std::numeric_limits<double>::infinity();
  }
  if (s == "-.inf" || s == "-.Inf" || s == "-.INF") return -std::numeric_limits<double>::infinity();
  if (s == ".nan" || s == ".NaN" || s == ".NAN") return std::numeric_limits<double>::quiet_NaN();
  return json::string(s);
}

// Builds JSON values straight from yaml-cpp's parse events (no YAML::Node tree in between).
//
// yaml-cpp 0.7 loops forever, allocating an empty document per turn, on a flow indicator outside
// a flow collection ("{},", "[a],", ","): its document parser never consumes that token. Two
// documents that start at the same offset can only be that loop, so OnDocumentStart stops it.
class JsonBuilder final : public YAML::EventHandler {
 public:
  // Thrown from the callbacks to stop the parser; caught in ParseYamlDocuments.
  struct Stop {
    YAML::Mark mark;
    std::string why;
  };

  JsonBuilder(std::string_view text, size_t max_nodes) : text_(text), max_nodes_(max_nodes) {}

  std::vector<json::value>& docs() { return docs_; }

  void OnDocumentStart(const YAML::Mark& mark) override {
    if (started_ && mark.pos == last_start_) {
      std::string why = "unexpected ";
      size_t pos = static_cast<size_t>(mark.pos);
      // Appended piecewise: "'" + std::string(1, c) + "'" trips a GCC 12 -Wrestrict false
      // positive in Release builds.
      if (pos < text_.size()) {
        why += '\'';
        why += text_[pos];
        why += '\'';
      } else {
        why += "token";
      }
      why += " outside a flow collection";
      throw Stop{mark, std::move(why)};
    }
    started_ = true;
    last_start_ = mark.pos;
    stack_.clear();
    root_ = nullptr;
  }

  void OnDocumentEnd() override {
    if (!root_.is_null()) docs_.push_back(std::move(root_));  // empty documents are skipped
    root_ = nullptr;
  }

  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    if (AwaitingKey()) {
      SetKey("null");
      return;
    }
    Add(mark, anchor, nullptr, 1);
  }

  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    auto it = anchors_.find(anchor);
    if (it == anchors_.end()) throw Stop{mark, "unknown alias"};
    if (AwaitingKey()) {
      const json::string* s = it->second.value.if_string();
      if (s == nullptr) throw Stop{mark, "mapping key is not a scalar"};
      SetKey(*s);
      return;
    }
    Add(mark, YAML::NullAnchor, it->second.value, it->second.nodes);
  }

  void OnScalar(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                const std::string& value) override {
    if (AwaitingKey()) {
      if (anchor != YAML::NullAnchor) anchors_[anchor] = Anchored{json::string(value), 1};
      SetKey(value);
      return;
    }
    json::value v;
    if (tag == "?" || tag == "tag:yaml.org,2002:int" || tag == "tag:yaml.org,2002:float" ||
        tag == "tag:yaml.org,2002:bool" || tag == "tag:yaml.org,2002:null") {
      v = CoreScalar(value);  // plain (or explicitly typed) scalar
    } else {
      v = json::string(value);  // quoted, block, !!str or an unknown local tag: the text
    }
    Add(mark, anchor, std::move(v), 1);
  }

  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    Open(mark, anchor, json::array());
  }
  void OnSequenceEnd() override { Close(); }

  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    Open(mark, anchor, json::object());
  }
  void OnMapEnd() override { Close(); }

 private:
  struct Frame {
    json::value value;  // array or object being filled
    YAML::Mark mark;
    YAML::anchor_t anchor = YAML::NullAnchor;
    size_t nodes_at_open = 0;
    std::string key;
    bool has_key = false;
  };
  struct Anchored {
    json::value value;
    size_t nodes = 1;
  };

  bool AwaitingKey() const {
    return !stack_.empty() && stack_.back().value.is_object() && !stack_.back().has_key;
  }

  void SetKey(std::string_view key) {
    stack_.back().key.assign(key);
    stack_.back().has_key = true;
  }

  void Count(const YAML::Mark& mark, size_t nodes) {
    nodes_ += nodes;
    if (nodes_ > max_nodes_) throw Stop{mark, "document too large (alias expansion?)"};
  }

  void Open(const YAML::Mark& mark, YAML::anchor_t anchor, json::value empty) {
    if (AwaitingKey()) throw Stop{mark, "mapping key is not a scalar"};
    Count(mark, 1);
    stack_.push_back(Frame{std::move(empty), mark, anchor, nodes_, {}, false});
  }

  void Close() {
    Frame f = std::move(stack_.back());
    stack_.pop_back();
    Place(f.mark, f.anchor, std::move(f.value), nodes_ - f.nodes_at_open + 1);
  }

  // Adds a finished scalar or alias copy (`nodes` converted nodes) to the current container.
  void Add(const YAML::Mark& mark, YAML::anchor_t anchor, json::value v, size_t nodes) {
    Count(mark, nodes);
    Place(mark, anchor, std::move(v), nodes);
  }

  void Place(const YAML::Mark&, YAML::anchor_t anchor, json::value v, size_t nodes) {
    if (anchor != YAML::NullAnchor) anchors_[anchor] = Anchored{v, nodes};
    if (stack_.empty()) {
      root_ = std::move(v);
      return;
    }
    Frame& top = stack_.back();
    if (json::array* a = top.value.if_array()) {
      a->push_back(std::move(v));
    } else {
      top.value.get_object()[top.key] = std::move(v);
      top.has_key = false;
    }
  }

  std::string_view text_;
  size_t max_nodes_;
  size_t nodes_ = 0;
  bool started_ = false;
  int last_start_ = 0;
  json::value root_;
  std::vector<Frame> stack_;
  std::unordered_map<YAML::anchor_t, Anchored> anchors_;
  std::vector<json::value> docs_;
};

std::string YamlError(std::string_view source, const YAML::Mark& mark, int first_line,
                      std::string_view why) {
  std::string msg(source);
  msg += ": YAML error";
  if (!mark.is_null()) {
    msg += " at line " + std::to_string(mark.line + first_line) + ", column " +
           std::to_string(mark.column + 1);
  }
  msg += ": ";
  msg += why;
  return msg;
}

}  // namespace

common::StatusOr<std::vector<boost::json::value>> ParseYamlDocuments(std::string_view text,
                                                                     std::string_view source,
                                                                     int first_line) {
  try {
    JsonBuilder builder(text, kMinNodeBudget + kNodesPerInputByte * text.size());
    std::istringstream in{std::string(text)};
    YAML::Parser parser(in);
    while (parser.HandleNextDocument(builder)) {
    }
    return std::move(builder.docs());
  } catch (const JsonBuilder::Stop& e) {
    return common::InvalidArgumentError(YamlError(source, e.mark, first_line, e.why));
  } catch (const YAML::Exception& e) {
    return common::InvalidArgumentError(YamlError(source, e.mark, first_line, e.msg));
  } catch (const std::exception& e) {
    return common::InvalidArgumentError(
        YamlError(source, YAML::Mark::null_mark(), first_line, e.what()));
  }
}

}  // namespace gpusched::api
