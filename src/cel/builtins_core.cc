// SPDX-License-Identifier: Apache-2.0
// CEL's standard library: arithmetic with overflow errors, comparisons, `in`, size, type
// conversions, contains/startsWith/endsWith/matches; and the builtin registry.
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <re2/re2.h>

#include "src/cel/builtins.h"

namespace gpusched::cel {

Value NoSuchOverload() { return Value::Error("no such overload"); }

Value NoSuchKey(const Value& key) {
  if (key.kind() == Kind::kString) return Value::Error("no such key: " + std::string(key.text()));
  return Value::Error("no such key: " + DebugString(key));
}

namespace {

Value IntOverflow() { return Value::Error("integer overflow"); }
Value UintOverflow() { return Value::Error("unsigned integer overflow"); }

// Charges a tenth of `bytes` (cel-go's string cost factor).
bool ChargeSize(EvalState& s, size_t bytes) { return s.Charge(bytes / 10); }

Value CostExceeded() { return Value::Error("operation cancelled: actual cost limit exceeded"); }

Value Add(EvalState& s, const Value* a, size_t) {
  const Value& x = a[0];
  const Value& y = a[1];
  if (x.kind() != y.kind()) return NoSuchOverload();
  switch (x.kind()) {
    case Kind::kInt: {
      int64_t r = 0;
      if (__builtin_add_overflow(x.int_value(), y.int_value(), &r)) return IntOverflow();
      return Value::Int(r);
    }
    case Kind::kUint: {
      uint64_t r = 0;
      if (__builtin_add_overflow(x.uint_value(), y.uint_value(), &r)) return UintOverflow();
      return Value::Uint(r);
    }
    case Kind::kDouble: return Value::Double(x.double_value() + y.double_value());
    case Kind::kString:
    case Kind::kBytes: {
      if (!ChargeSize(s, x.text().size() + y.text().size())) return CostExceeded();
      std::string out;
      out.reserve(x.text().size() + y.text().size());
      out.append(x.text()).append(y.text());
      return x.kind() == Kind::kString ? Value::String(std::move(out)) : Value::Bytes(std::move(out));
    }
    case Kind::kList: {
      size_t n = x.list().size() + y.list().size();
      if (!s.Charge(n / 2)) return CostExceeded();  // bounds the memory lists can take
      auto out = std::make_shared<VectorList>();
      out->elems().reserve(n);
      for (size_t i = 0; i < x.list().size(); ++i) out->elems().push_back(x.list().at(i));
      for (size_t i = 0; i < y.list().size(); ++i) out->elems().push_back(y.list().at(i));
      return Value::List(std::move(out));
    }
    default: return NoSuchOverload();
  }
}

Value Arith(const Value* a, char op) {
  const Value& x = a[0];
  const Value& y = a[1];
  if (x.kind() != y.kind()) return NoSuchOverload();
  if (x.kind() == Kind::kInt) {
    int64_t l = x.int_value();
    int64_t r = y.int_value();
    int64_t out = 0;
    switch (op) {
      case '-': if (__builtin_sub_overflow(l, r, &out)) return IntOverflow(); return Value::Int(out);
      case '*': if (__builtin_mul_overflow(l, r, &out)) return IntOverflow(); return Value::Int(out);
      case '/':
        if (r == 0) return Value::Error("division by zero");
        if (l == INT64_MIN && r == -1) return IntOverflow();
        return Value::Int(l / r);
      default:
        if (r == 0) return Value::Error("modulus by zero");
        if (l == INT64_MIN && r == -1) return IntOverflow();
        return Value::Int(l % r);
    }
  }
  if (x.kind() == Kind::kUint) {
    uint64_t l = x.uint_value();
    uint64_t r = y.uint_value();
    uint64_t out = 0;
    switch (op) {
      case '-': if (__builtin_sub_overflow(l, r, &out)) return UintOverflow(); return Value::Uint(out);
      case '*': if (__builtin_mul_overflow(l, r, &out)) return UintOverflow(); return Value::Uint(out);
      case '/': if (r == 0) return Value::Error("division by zero"); return Value::Uint(l / r);
      default: if (r == 0) return Value::Error("modulus by zero"); return Value::Uint(l % r);
    }
  }
  if (x.kind() == Kind::kDouble && op != '%') {
    double l = x.double_value();
    double r = y.double_value();
    return Value::Double(op == '-' ? l - r : (op == '*' ? l * r : l / r));
  }
  return NoSuchOverload();
}

Value Sub(EvalState&, const Value* a, size_t) { return Arith(a, '-'); }
Value Mul(EvalState&, const Value* a, size_t) { return Arith(a, '*'); }
Value Div(EvalState&, const Value* a, size_t) { return Arith(a, '/'); }
Value Mod(EvalState&, const Value* a, size_t) { return Arith(a, '%'); }

Value Neg(EvalState&, const Value* a, size_t) {
  if (a[0].kind() == Kind::kInt) {
    if (a[0].int_value() == INT64_MIN) return IntOverflow();
    return Value::Int(-a[0].int_value());
  }
  if (a[0].kind() == Kind::kDouble) return Value::Double(-a[0].double_value());
  return NoSuchOverload();
}

Value Eq(EvalState&, const Value* a, size_t) { return Value::Bool(Equal(a[0], a[1])); }
Value Ne(EvalState&, const Value* a, size_t) { return Value::Bool(!Equal(a[0], a[1])); }

template <int kLess, int kEqual, int kGreater>
Value Order(EvalState&, const Value* a, size_t) {
  int c = 0;
  if (!Compare(a[0], a[1], &c)) return NoSuchOverload();
  if (c == 2) return Value::Bool(false);  // NaN
  return Value::Bool(c < 0 ? kLess : (c == 0 ? kEqual : kGreater));
}

Value In(EvalState& s, const Value* a, size_t) {
  const Value& x = a[0];
  if (a[1].kind() == Kind::kList) {
    const ListValue& l = a[1].list();
    if (!s.Charge(l.size() / 10)) return CostExceeded();
    for (size_t i = 0; i < l.size(); ++i) {
      if (Equal(l.at(i), x)) return Value::Bool(true);
    }
    return Value::Bool(false);
  }
  if (a[1].kind() == Kind::kMap) {
    return Value::Bool(a[1].map().Contains(x));
  }
  return NoSuchOverload();
}

Value Size(EvalState&, const Value* a, size_t) {
  switch (a[0].kind()) {
    case Kind::kString: return Value::Int(static_cast<int64_t>(CodePointCount(a[0].text())));
    case Kind::kBytes: return Value::Int(static_cast<int64_t>(a[0].text().size()));
    case Kind::kList: return Value::Int(static_cast<int64_t>(a[0].list().size()));
    case Kind::kMap: return Value::Int(static_cast<int64_t>(a[0].map().size()));
    default: return NoSuchOverload();
  }
}

Value TypeOfValue(EvalState&, const Value* a, size_t) { return Value::Type(a[0].TypeName()); }
Value Dyn(EvalState&, const Value* a, size_t) { return a[0]; }

Value ParseIntText(std::string_view text, bool is_unsigned) {
  std::string s(text);
  if (s.empty() || std::isspace(static_cast<unsigned char>(s[0])) || (is_unsigned && s[0] == '-')) {
    return Value::Error("type conversion error from 'string' to '" +
                        std::string(is_unsigned ? "uint" : "int") + "'");
  }
  char* end = nullptr;
  errno = 0;
  if (is_unsigned) {
    unsigned long long u = std::strtoull(s.c_str(), &end, 10);
    if (errno == ERANGE) return UintOverflow();
    if (*end == '\0') return Value::Uint(u);
  } else {
    long long i = std::strtoll(s.c_str(), &end, 10);
    if (errno == ERANGE) return IntOverflow();
    if (*end == '\0') return Value::Int(i);
  }
  return Value::Error("type conversion error from 'string' to '" +
                      std::string(is_unsigned ? "uint" : "int") + "'");
}

Value ToInt(EvalState&, const Value* a, size_t) {
  const Value& x = a[0];
  switch (x.kind()) {
    case Kind::kInt: return x;
    case Kind::kUint:
      if (x.uint_value() > static_cast<uint64_t>(INT64_MAX)) return IntOverflow();
      return Value::Int(static_cast<int64_t>(x.uint_value()));
    case Kind::kDouble: {
      double d = x.double_value();
      if (std::isnan(d) || d <= -9223372036854775808.0 || d >= 9223372036854775808.0) {
        return IntOverflow();
      }
      return Value::Int(static_cast<int64_t>(d));
    }
    case Kind::kString: return ParseIntText(x.text(), false);
    default: return NoSuchOverload();
  }
}

Value ToUint(EvalState&, const Value* a, size_t) {
  const Value& x = a[0];
  switch (x.kind()) {
    case Kind::kUint: return x;
    case Kind::kInt:
      if (x.int_value() < 0) return UintOverflow();
      return Value::Uint(static_cast<uint64_t>(x.int_value()));
    case Kind::kDouble: {
      double d = x.double_value();
      if (std::isnan(d) || d < 0 || d >= 18446744073709551616.0) return UintOverflow();
      return Value::Uint(static_cast<uint64_t>(d));
    }
    case Kind::kString: return ParseIntText(x.text(), true);
    default: return NoSuchOverload();
  }
}

Value ToDouble(EvalState&, const Value* a, size_t) {
  const Value& x = a[0];
  switch (x.kind()) {
    case Kind::kDouble: return x;
    case Kind::kInt: return Value::Double(static_cast<double>(x.int_value()));
    case Kind::kUint: return Value::Double(static_cast<double>(x.uint_value()));
    case Kind::kString: {
      std::string s(x.text());
      char* end = nullptr;
      double d = s.empty() || std::isspace(static_cast<unsigned char>(s[0]))
                     ? 0
                     : std::strtod(s.c_str(), &end);
      if (end == nullptr || *end != '\0') {
        return Value::Error("type conversion error from 'string' to 'double'");
      }
      return Value::Double(d);
    }
    default: return NoSuchOverload();
  }
}

}  // namespace

// Go's strconv.FormatFloat(d, 'g', -1, 64): the shortest digits that round-trip; exponent form
// when the decimal exponent is < -4 or >= 6 (fmt %g).
std::string FormatDouble(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "+Inf" : "-Inf";
  if (d == 0) return std::signbit(d) ? "-0" : "0";
  char buf[64];
  for (int p = 1; p <= 17; ++p) {
    std::snprintf(buf, sizeof(buf), "%.*e", p - 1, d);
    if (std::strtod(buf, nullptr) == d) break;
  }
  std::string e(buf);
  size_t epos = e.find('e');
  int exp = std::atoi(e.c_str() + epos + 1);
  std::string digits;
  for (size_t i = 0; i < epos; ++i) {
    if (std::isdigit(static_cast<unsigned char>(e[i]))) digits += e[i];
  }
  std::string sign = d < 0 ? "-" : "";
  if (exp < -4 || exp >= 6) {
    std::string out = sign + digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char eb[16];
    std::snprintf(eb, sizeof(eb), "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
    return out + eb;
  }
  if (exp < 0) return sign + "0." + std::string(static_cast<size_t>(-exp - 1), '0') + digits;
  size_t int_len = static_cast<size_t>(exp) + 1;
  if (digits.size() <= int_len) return sign + digits + std::string(int_len - digits.size(), '0');
  return sign + digits.substr(0, int_len) + "." + digits.substr(int_len);
}

namespace {

Value ToString(EvalState&, const Value* a, size_t) {
  const Value& x = a[0];
  switch (x.kind()) {
    case Kind::kString: return x;
    case Kind::kInt: return Value::String(std::to_string(x.int_value()));
    case Kind::kUint: return Value::String(std::to_string(x.uint_value()));
    case Kind::kDouble: return Value::String(FormatDouble(x.double_value()));
    case Kind::kBool: return Value::StringView(x.bool_value() ? "true" : "false");
    case Kind::kBytes:
      if (!ValidUtf8(x.text())) return Value::Error("invalid UTF-8 in bytes, cannot convert to string");
      return Value::String(std::string(x.text()));
    case Kind::kQuantity: return Value::String(x.quantity().ToString());
    case Kind::kSemver: return Value::String(std::string(x.text()));
    default: return NoSuchOverload();
  }
}

Value ToBytes(EvalState&, const Value* a, size_t) {
  if (a[0].kind() == Kind::kBytes) return a[0];
  if (a[0].kind() == Kind::kString) return Value::Bytes(std::string(a[0].text()));
  return NoSuchOverload();
}

Value ToBool(EvalState&, const Value* a, size_t) {
  if (a[0].kind() == Kind::kBool) return a[0];
  if (a[0].kind() != Kind::kString) return NoSuchOverload();
  std::string_view s = a[0].text();
  if (s == "1" || s == "t" || s == "T" || s == "true" || s == "TRUE" || s == "True") {
    return Value::Bool(true);
  }
  if (s == "0" || s == "f" || s == "F" || s == "false" || s == "FALSE" || s == "False") {
    return Value::Bool(false);
  }
  return Value::Error("type conversion error from 'string' to 'bool'");
}

template <int kWhich>
Value StringTest(EvalState& s, const Value* a, size_t) {
  if (a[0].kind() != Kind::kString || a[1].kind() != Kind::kString) return NoSuchOverload();
  std::string_view x = a[0].text();
  std::string_view y = a[1].text();
  if (!ChargeSize(s, x.size() + y.size())) return CostExceeded();
  if (kWhich == 0) return Value::Bool(x.find(y) != std::string_view::npos);
  if (kWhich == 1) return Value::Bool(x.substr(0, y.size()) == y);
  return Value::Bool(x.size() >= y.size() && x.substr(x.size() - y.size()) == y);
}

Value Matches(EvalState& s, const Value* a, size_t) {
  if (a[0].kind() != Kind::kString || a[1].kind() != Kind::kString) return NoSuchOverload();
  if (!ChargeSize(s, a[0].text().size() * 2 + a[1].text().size())) return CostExceeded();
  std::shared_ptr<const re2::RE2> re = s.call != nullptr ? s.call->regex : nullptr;
  std::string error;
  if (re == nullptr || re->pattern() != a[1].text()) {
    // Compiling at runtime costs the pattern's size, which bounds the compilations per run.
    if (!s.Charge(a[1].text().size())) return CostExceeded();
    re = CompileRegex(a[1].text(), &error);
  }
  if (re == nullptr) return Value::Error(error);
  return Value::Bool(re2::RE2::PartialMatch(
      re2::StringPiece(a[0].text().data(), a[0].text().size()), *re));
}

}  // namespace

std::shared_ptr<const re2::RE2> CompileRegex(std::string_view pattern, std::string* error) {
  re2::RE2::Options options;
  options.set_log_errors(false);
  auto re = std::make_shared<const re2::RE2>(re2::StringPiece(pattern.data(), pattern.size()),
                                             options);
  if (!re->ok()) {
    *error = "invalid regular expression: " + re->error();
    return nullptr;
  }
  return re;
}

bool TakesRegex(std::string_view name) {
  return name == "matches" || name == "find" || name == "findAll";
}

void AddCoreBuiltins(std::vector<Builtin>& out) {
  const Builtin core[] = {
      {"_+_", false, 2, Add, StaticType::kDyn},
      {"_-_", false, 2, Sub, StaticType::kDyn},
      {"_*_", false, 2, Mul, StaticType::kDyn},
      {"_/_", false, 2, Div, StaticType::kDyn},
      {"_%_", false, 2, Mod, StaticType::kDyn},
      {"-_", false, 1, Neg, StaticType::kDyn},
      {"_==_", false, 2, Eq, StaticType::kBool},
      {"_!=_", false, 2, Ne, StaticType::kBool},
      {"_<_", false, 2, Order<1, 0, 0>, StaticType::kBool},
      {"_<=_", false, 2, Order<1, 1, 0>, StaticType::kBool},
      {"_>_", false, 2, Order<0, 0, 1>, StaticType::kBool},
      {"_>=_", false, 2, Order<0, 1, 1>, StaticType::kBool},
      {"@in", false, 2, In, StaticType::kBool},
      {"size", false, 1, Size, StaticType::kInt},
      {"size", true, 1, Size, StaticType::kInt},
      {"type", false, 1, TypeOfValue, StaticType::kType},
      {"dyn", false, 1, Dyn, StaticType::kDyn},
      {"int", false, 1, ToInt, StaticType::kInt},
      {"uint", false, 1, ToUint, StaticType::kUint},
      {"double", false, 1, ToDouble, StaticType::kDouble},
      {"string", false, 1, ToString, StaticType::kString},
      {"bytes", false, 1, ToBytes, StaticType::kBytes},
      {"bool", false, 1, ToBool, StaticType::kBool},
      {"contains", true, 2, StringTest<0>, StaticType::kBool},
      {"startsWith", true, 2, StringTest<1>, StaticType::kBool},
      {"endsWith", true, 2, StringTest<2>, StaticType::kBool},
      {"matches", true, 2, Matches, StaticType::kBool},
      {"matches", false, 2, Matches, StaticType::kBool},
  };
  out.insert(out.end(), std::begin(core), std::end(core));
}

const std::vector<Builtin>& Builtins() {
  static const std::vector<Builtin>* const all = [] {
    auto* v = new std::vector<Builtin>();
    AddCoreBuiltins(*v);
    AddStringBuiltins(*v);
    AddKubernetesBuiltins(*v);
    return v;
  }();
  return *all;
}

const Builtin* FindBuiltin(std::string_view name, bool member, size_t arity) {
  for (const Builtin& b : Builtins()) {
    if (b.name == name && b.member == member && static_cast<size_t>(b.arity) == arity) return &b;
  }
  return nullptr;
}

bool IsFunctionName(std::string_view name) {
  for (const Builtin& b : Builtins()) {
    if (b.name == name) return true;
  }
  return false;
}

}  // namespace gpusched::cel
