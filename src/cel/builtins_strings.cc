// SPDX-License-Identifier: Apache-2.0
// cel-go's strings extension (ext.Strings, version 2, as the Kubernetes base environment has
// it): charAt, indexOf, lastIndexOf, lowerAscii, upperAscii, replace, split, substring, trim,
// join, strings.quote; and the Kubernetes regex library: find, findAll. Indices count Unicode
// code points, as cel-go does.
#include <re2/re2.h>

#include "src/cel/builtins.h"

namespace gpusched::cel {

size_t CodePointCount(std::string_view s) {
  size_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80 ? 1 : 0;
  return n;
}

size_t CodePointOffset(std::string_view s, size_t index) {
  size_t seen = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) {
      if (seen == index) return i;
      ++seen;
    }
  }
  return seen == index ? s.size() : std::string_view::npos;
}

bool ValidUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    uint32_t cp = n == 1 ? c : (c & (0x7F >> n));
    for (size_t k = 1; k < n; ++k) {
      auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
        (cp >= 0xD800 && cp < 0xE000)) {
      return false;
    }
    i += n;
  }
  return true;
}

namespace {

Value CostExceeded() { return Value::Error("operation cancelled: actual cost limit exceeded"); }
Value OutOfRange(int64_t i) { return Value::Error("index out of range: " + std::to_string(i)); }

bool IsString(const Value& v) { return v.kind() == Kind::kString; }

Value CharAt(EvalState&, const Value* a, size_t) {
  if (!IsString(a[0]) || a[1].kind() != Kind::kInt) return NoSuchOverload();
  int64_t i = a[1].int_value();
  std::string_view s = a[0].text();
  size_t off = i < 0 ? std::string_view::npos : CodePointOffset(s, static_cast<size_t>(i));
  if (off == std::string_view::npos) return OutOfRange(i);
  size_t end = CodePointOffset(s.substr(off), 1);
  return Value::String(std::string(s.substr(off, end == std::string_view::npos ? 0 : end)));
}

// indexOf / lastIndexOf on strings (code points) and on lists (the Kubernetes lists library).
template <bool kLast>
Value IndexOf(EvalState& s, const Value* a, size_t n) {
  if (a[0].kind() == Kind::kList && n == 2) {
    const ListValue& l = a[0].list();
    if (!s.Charge(l.size() / 10)) return CostExceeded();
    for (size_t k = 0; k < l.size(); ++k) {
      size_t i = kLast ? l.size() - 1 - k : k;
      if (Equal(l.at(i), a[1])) return Value::Int(static_cast<int64_t>(i));
    }
    return Value::Int(-1);
  }
  if (!IsString(a[0]) || !IsString(a[1]) || (n == 3 && a[2].kind() != Kind::kInt)) {
    return NoSuchOverload();
  }
  std::string_view str = a[0].text();
  std::string_view sub = a[1].text();
  if (!s.Charge((str.size() + sub.size()) / 10)) return CostExceeded();
  int64_t len = static_cast<int64_t>(CodePointCount(str));
  if (sub.empty()) return Value::Int(n == 3 ? a[2].int_value() : (kLast ? len : 0));
  int64_t offset = n == 3 ? a[2].int_value() : (kLast ? len - 1 : 0);
  if (n == 3 && offset < 0) return OutOfRange(offset);
  if (offset < 0 || offset >= len) return Value::Int(-1);
  size_t byte_off = CodePointOffset(str, static_cast<size_t>(offset));
  size_t found = kLast ? str.rfind(sub, byte_off) : str.find(sub, byte_off);
  if (found == std::string_view::npos) return Value::Int(-1);
  return Value::Int(static_cast<int64_t>(CodePointCount(str.substr(0, found))));
}

template <bool kUpper>
Value ChangeCase(EvalState& s, const Value* a, size_t) {
  if (!IsString(a[0])) return NoSuchOverload();
  if (!s.Charge(a[0].text().size() / 10)) return CostExceeded();
  std::string out(a[0].text());
  for (char& c : out) {
    if (kUpper && c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
    if (!kUpper && c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return Value::String(std::move(out));
}

// Go's strings.Replace.
Value Replace(EvalState& s, const Value* a, size_t n) {
  if (!IsString(a[0]) || !IsString(a[1]) || !IsString(a[2]) ||
      (n == 4 && a[3].kind() != Kind::kInt)) {
    return NoSuchOverload();
  }
  std::string_view str = a[0].text();
  std::string_view from = a[1].text();
  std::string_view to = a[2].text();
  int64_t limit = n == 4 ? a[3].int_value() : -1;
  std::string out;
  size_t pos = 0;
  int64_t done = 0;
  while (limit < 0 || done < limit) {
    size_t at = 0;
    if (from.empty()) {
      if (done > 0) {
        if (pos >= str.size()) break;
        size_t step = CodePointOffset(str.substr(pos), 1);
        out.append(str.substr(pos, step));
        pos += step;
      }
      at = pos;
    } else {
      at = str.find(from, pos);
      if (at == std::string_view::npos) break;
      out.append(str.substr(pos, at - pos));
    }
    out.append(to);
    pos = at + from.size();
    ++done;
    if (!s.Charge((to.size() + 9) / 10)) return CostExceeded();
  }
  out.append(str.substr(std::min(pos, str.size())));
  if (!s.Charge(out.size() / 10)) return CostExceeded();
  return Value::String(std::move(out));
}

// Go's strings.SplitN.
Value Split(EvalState& s, const Value* a, size_t n) {
  if (!IsString(a[0]) || !IsString(a[1]) || (n == 3 && a[2].kind() != Kind::kInt)) {
    return NoSuchOverload();
  }
  std::string_view str = a[0].text();
  std::string_view sep = a[1].text();
  int64_t limit = n == 3 ? a[2].int_value() : -1;
  if (!s.Charge(str.size() / 10)) return CostExceeded();
  auto out = std::make_shared<VectorList>();
  if (limit == 0) return Value::List(std::move(out));
  size_t pos = 0;
  while (limit < 0 || static_cast<int64_t>(out->size()) < limit - 1) {
    size_t at = 0;
    size_t len = sep.size();
    if (sep.empty()) {
      if (pos >= str.size()) break;
      len = 0;
      at = pos + CodePointOffset(str.substr(pos), 1);
      if (at >= str.size()) break;
    } else {
      at = str.find(sep, pos);
      if (at == std::string_view::npos) break;
    }
    out->elems().push_back(Value::String(std::string(str.substr(pos, at - pos))));
    pos = at + len;
  }
  if (!(sep.empty() && pos >= str.size() && !str.empty())) {
    out->elems().push_back(Value::String(std::string(str.substr(pos))));
  }
  return Value::List(std::move(out));
}

Value Substring(EvalState&, const Value* a, size_t n) {
  if (!IsString(a[0]) || a[1].kind() != Kind::kInt || (n == 3 && a[2].kind() != Kind::kInt)) {
    return NoSuchOverload();
  }
  std::string_view str = a[0].text();
  int64_t len = static_cast<int64_t>(CodePointCount(str));
  int64_t start = a[1].int_value();
  int64_t end = n == 3 ? a[2].int_value() : len;
  if (start < 0 || start > len) return OutOfRange(start);
  if (n == 3 && end < start) {
    return Value::Error("invalid substring range. start: " + std::to_string(start) +
                        ", end: " + std::to_string(end));
  }
  if (end > len) return OutOfRange(end);
  size_t b = CodePointOffset(str, static_cast<size_t>(start));
  size_t e = CodePointOffset(str, static_cast<size_t>(end));
  return Value::String(std::string(str.substr(b, e - b)));
}

// Length of the Unicode white space (Go's unicode.IsSpace) at the start of s, 0 when none.
size_t SpaceAt(std::string_view s) {
  static constexpr std::string_view kSpaces[] = {
      " ", "\t", "\n", "\v", "\f", "\r", "\u0085", "\u00a0", "\u1680", "\u2000", "\u2001",
      "\u2002", "\u2003", "\u2004", "\u2005", "\u2006", "\u2007", "\u2008", "\u2009", "\u200a",
      "\u2028", "\u2029", "\u202f", "\u205f", "\u3000"};
  for (std::string_view sp : kSpaces) {
    if (s.substr(0, sp.size()) == sp) return sp.size();
  }
  return 0;
}

Value Trim(EvalState&, const Value* a, size_t) {
  if (!IsString(a[0])) return NoSuchOverload();
  std::string_view s = a[0].text();
  while (size_t n = SpaceAt(s)) s.remove_prefix(n);
  bool trimmed = true;
  while (trimmed && !s.empty()) {
    trimmed = false;
    size_t start = s.size() - 1;
    while (start > 0 && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) --start;
    if (SpaceAt(s.substr(start)) == s.size() - start) {
      s.remove_suffix(s.size() - start);
      trimmed = true;
    }
  }
  return Value::String(std::string(s));
}

Value Join(EvalState& s, const Value* a, size_t n) {
  if (a[0].kind() != Kind::kList || (n == 2 && !IsString(a[1]))) return NoSuchOverload();
  std::string_view sep = n == 2 ? a[1].text() : std::string_view();
  const ListValue& l = a[0].list();
  std::string out;
  for (size_t i = 0; i < l.size(); ++i) {
    Value v = l.at(i);
    if (!IsString(v)) return NoSuchOverload();
    if (i > 0) out.append(sep);
    out.append(v.text());
  }
  if (!s.Charge(out.size() / 10)) return CostExceeded();
  return Value::String(std::move(out));
}

Value Quote(EvalState&, const Value* a, size_t) {
  if (!IsString(a[0])) return NoSuchOverload();
  std::string out = "\"";
  for (char c : a[0].text()) {
    switch (c) {
      case '\a': out += "\\a"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\v': out += "\\v"; break;
      case '\\': out += "\\\\"; break;
      case '"': out += "\\\""; break;
      default: out += c;
    }
  }
  out += '"';
  return Value::String(std::move(out));
}

std::shared_ptr<const re2::RE2> RegexFor(EvalState& s, std::string_view pattern, std::string* why) {
  std::shared_ptr<const re2::RE2> re = s.call != nullptr ? s.call->regex : nullptr;
  if (re != nullptr && re->pattern() == pattern) return re;
  if (!s.Charge(pattern.size())) {
    *why = "operation cancelled: actual cost limit exceeded";
    return nullptr;
  }
  return CompileRegex(pattern, why);
}

// find(re) and findAll(re[, n]) (Go's FindString / FindAllString).
template <bool kAll>
Value Find(EvalState& s, const Value* a, size_t n) {
  if (!IsString(a[0]) || !IsString(a[1]) || (n == 3 && a[2].kind() != Kind::kInt)) {
    return NoSuchOverload();
  }
  if (!s.Charge((a[0].text().size() * 2 + a[1].text().size()) / 10)) return CostExceeded();
  std::string why;
  std::shared_ptr<const re2::RE2> re = RegexFor(s, a[1].text(), &why);
  if (re == nullptr) return Value::Error(why);
  re2::StringPiece text(a[0].text().data(), a[0].text().size());
  int64_t limit = kAll ? (n == 3 ? a[2].int_value() : -1) : 1;
  auto out = std::make_shared<VectorList>();
  size_t pos = 0;
  size_t prev_end = std::string_view::npos;
  while ((limit < 0 || static_cast<int64_t>(out->size()) < limit) && pos <= text.size()) {
    re2::StringPiece m;
    if (!re->Match(text, pos, text.size(), re2::RE2::UNANCHORED, &m, 1)) break;
    auto start = static_cast<size_t>(m.data() - text.data());
    size_t end = start + m.size();
    if (m.empty() && start == prev_end) {
      if (start >= text.size()) break;
      pos = start + CodePointOffset(a[0].text().substr(start), 1);
      continue;
    }
    out->elems().push_back(Value::String(std::string(m.data(), m.size())));
    prev_end = end;
    if (end == start) {
      if (start >= text.size()) break;
      end = start + CodePointOffset(a[0].text().substr(start), 1);
    }
    pos = end;
  }
  if (!kAll) return out->size() == 0 ? Value::StringView("") : out->at(0);
  return Value::List(std::move(out));
}

}  // namespace

void AddStringBuiltins(std::vector<Builtin>& out) {
  const Builtin strings[] = {
      {"charAt", true, 2, CharAt, StaticType::kString},
      {"indexOf", true, 2, IndexOf<false>, StaticType::kInt},
      {"indexOf", true, 3, IndexOf<false>, StaticType::kInt},
      {"lastIndexOf", true, 2, IndexOf<true>, StaticType::kInt},
      {"lastIndexOf", true, 3, IndexOf<true>, StaticType::kInt},
      {"lowerAscii", true, 1, ChangeCase<false>, StaticType::kString},
      {"upperAscii", true, 1, ChangeCase<true>, StaticType::kString},
      {"replace", true, 3, Replace, StaticType::kString},
      {"replace", true, 4, Replace, StaticType::kString},
      {"split", true, 2, Split, StaticType::kList},
      {"split", true, 3, Split, StaticType::kList},
      {"substring", true, 2, Substring, StaticType::kString},
      {"substring", true, 3, Substring, StaticType::kString},
      {"trim", true, 1, Trim, StaticType::kString},
      {"join", true, 1, Join, StaticType::kString},
      {"join", true, 2, Join, StaticType::kString},
      {"strings.quote", false, 1, Quote, StaticType::kString},
      {"find", true, 2, Find<false>, StaticType::kString},
      {"findAll", true, 2, Find<true>, StaticType::kList},
      {"findAll", true, 3, Find<true>, StaticType::kList},
  };
  out.insert(out.end(), std::begin(strings), std::end(strings));
}

}  // namespace gpusched::cel
