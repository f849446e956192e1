// SPDX-License-Identifier: Apache-2.0
// The Kubernetes CEL libraries DRA selectors use (k8s.io/apiserver/pkg/cel/library): quantity
// (quantity, isQuantity, sign, isInteger, asInteger, asApproximateFloat, add, sub, compareTo,
// isLessThan, isGreaterThan), semver (semver, isSemver, major, minor, patch, compareTo,
// isLessThan, isGreaterThan), lists (isSorted, sum, min, max; indexOf/lastIndexOf are with the
// strings) and cel-go's sets extension (sets.contains, sets.equivalent, sets.intersects).
#include <cstdlib>

#include "src/cel/builtins.h"
#include "src/cel/semver.h"

namespace gpusched::cel {
namespace {

Value WrongArgs() { return NoSuchOverload(); }

Value ToQuantity(EvalState&, const Value* a, size_t) {
  if (a[0].kind() != Kind::kString) return WrongArgs();
  common::StatusOr<api::Quantity> q = api::Quantity::Parse(a[0].text());
  if (!q.ok()) return Value::Error(std::string(q.status().message()));
  return Value::Quantity(*q);
}

Value IsQuantity(EvalState&, const Value* a, size_t) {
  if (a[0].kind() != Kind::kString) return WrongArgs();
  return Value::Bool(api::Quantity::Parse(a[0].text()).ok());
}

bool QuantityIsInteger(const api::Quantity& q) {
  return q.Compare(api::Quantity::FromValue(q.Value())) == 0;
}

template <int kWhich>
Value QuantityUnary(EvalState&, const Value* a, size_t) {
  if (a[0].kind() != Kind::kQuantity) return WrongArgs();
  const api::Quantity& q = a[0].quantity();
  switch (kWhich) {
    case 0: return Value::Int(q.Compare(api::Quantity()));  // sign
    case 1: return Value::Bool(QuantityIsInteger(q));
    case 2:
      if (!QuantityIsInteger(q)) return Value::Error("cannot convert value to integer");
      return Value::Int(q.Value());
    default: return Value::Double(q.AsApproximateDouble());
  }
}

// An exact decimal read back from Quantity::ToString ("-12", "1500m", "3n").
struct Decimal {
  __extension__ typedef __int128 Int128;
  Int128 mantissa = 0;
  int exp10 = 0;
};

Decimal ToDecimal(const api::Quantity& q) {
  std::string s = q.ToString();
  Decimal d;
  size_t i = 0;
  bool negative = !s.empty() && s[0] == '-';
  if (negative) ++i;
  for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i) d.mantissa = d.mantissa * 10 + (s[i] - '0');
  if (i < s.size()) d.exp10 = s[i] == 'm' ? -3 : (s[i] == 'u' ? -6 : -9);
  if (negative) d.mantissa = -d.mantissa;
  return d;
}

Value AddQuantities(const api::Quantity& x, const api::Quantity& y, bool subtract) {
  Decimal a = ToDecimal(x);
  Decimal b = ToDecimal(y);
  int e = std::min(a.exp10, b.exp10);
  while (a.exp10 > e) {
    a.mantissa *= 10;
    --a.exp10;
  }
  while (b.exp10 > e) {
    b.mantissa *= 10;
    --b.exp10;
  }
  Decimal::Int128 m = subtract ? a.mantissa - b.mantissa : a.mantissa + b.mantissa;
  bool negative = m < 0;
  if (negative) m = -m;
  std::string digits;
  do {
    digits.insert(digits.begin(), static_cast<char>('0' + static_cast<int>(m % 10)));
    m /= 10;
  } while (m != 0);
  if (e < 0) {
    auto frac = static_cast<size_t>(-e);
    if (digits.size() <= frac) digits.insert(0, frac + 1 - digits.size(), '0');
    digits.insert(digits.size() - frac, ".");
  }
  common::StatusOr<api::Quantity> q = api::Quantity::Parse((negative ? "-" : "") + digits);
  if (!q.ok()) return Value::Error(std::string(q.status().message()));
  return Value::Quantity(*q);
}

template <bool kSubtract>
Value QuantityAdd(EvalState&, const Value* a, size_t) {
  if (a[0].kind() != Kind::kQuantity) return WrongArgs();
  if (a[1].kind() == Kind::kQuantity) return AddQuantities(a[0].quantity(), a[1].quantity(), kSubtract);
  if (a[1].kind() == Kind::kInt) {
    return AddQuantities(a[0].quantity(), api::Quantity::FromValue(a[1].int_value()), kSubtract);
  }
  return WrongArgs();
}

Value ToSemver(EvalState&, const Value* a, size_t n) {
  if (a[0].kind() != Kind::kString || (n == 2 && a[1].kind() != Kind::kBool)) return WrongArgs();
  std::string why;
  if (n == 2 && a[1].bool_value()) {
    std::optional<std::string> normalized = NormalizeSemver(a[0].text(), &why);
    if (!normalized) return Value::Error(why);
    return Value::Semver(std::move(*normalized));
  }
  if (!ParseSemver(a[0].text(), &why)) return Value::Error(why);
  return Value::Semver(std::string(a[0].text()));
}

Value IsSemver(EvalState&, const Value* a, size_t n) {
  if (a[0].kind() != Kind::kString || (n == 2 && a[1].kind() != Kind::kBool)) return WrongArgs();
  std::string why;
  if (n == 2 && a[1].bool_value()) return Value::Bool(NormalizeSemver(a[0].text(), &why).has_value());
  return Value::Bool(ParseSemver(a[0].text(), &why).has_value());
}

template <int kPart>
Value SemverPart(EvalState&, const Value* a, size_t) {
  if (a[0].kind() != Kind::kSemver) return WrongArgs();
  std::string why;
  std::optional<SemverParts> p = ParseSemver(a[0].text(), &why);
  if (!p) return Value::Error(why);
  uint64_t v = kPart == 0 ? p->major : (kPart == 1 ? p->minor : p->patch);
  return Value::Int(static_cast<int64_t>(v));
}

// compareTo, isLessThan (kMode 1), isGreaterThan (kMode 2) for quantities and semvers.
template <int kMode>
Value CompareTo(EvalState&, const Value* a, size_t) {
  int c = 0;
  if (a[0].kind() == Kind::kQuantity && a[1].kind() == Kind::kQuantity) {
    c = a[0].quantity().Compare(a[1].quantity());
  } else if (a[0].kind() == Kind::kSemver && a[1].kind() == Kind::kSemver) {
    c = CompareSemver(a[0].text(), a[1].text());
  } else {
    return WrongArgs();
  }
  if (kMode == 0) return Value::Int(c);
  return Value::Bool(kMode == 1 ? c < 0 : c > 0);
}

Value IsSorted(EvalState& s, const Value* a, size_t) {
  if (a[0].kind() != Kind::kList) return WrongArgs();
  const ListValue& l = a[0].list();
  if (!s.Charge(l.size())) return Value::Error("operation cancelled: actual cost limit exceeded");
  for (size_t i = 1; i < l.size(); ++i) {
    int c = 0;
    if (!Compare(l.at(i - 1), l.at(i), &c)) return NoSuchOverload();
    if (c == 1) return Value::Bool(false);
  }
  return Value::Bool(true);
}

Value Sum(EvalState& s, const Value* a, size_t) {
  if (a[0].kind() != Kind::kList) return WrongArgs();
  const ListValue& l = a[0].list();
  if (!s.Charge(l.size())) return Value::Error("operation cancelled: actual cost limit exceeded");
  if (l.size() == 0) return Value::Int(0);
  Value acc = l.at(0);
  if (acc.kind() != Kind::kInt && acc.kind() != Kind::kUint && acc.kind() != Kind::kDouble) {
    return NoSuchOverload();
  }
  const Builtin* add = FindBuiltin("_+_", false, 2);
  for (size_t i = 1; i < l.size(); ++i) {
    Value args[2] = {acc, l.at(i)};
    acc = add->fn(s, args, 2);
    if (acc.is_error()) return acc;
  }
  return acc;
}

template <bool kMax>
Value MinMax(EvalState& s, const Value* a, size_t) {
  if (a[0].kind() != Kind::kList) return WrongArgs();
  const ListValue& l = a[0].list();
  if (!s.Charge(l.size())) return Value::Error("operation cancelled: actual cost limit exceeded");
  if (l.size() == 0) return Value::Error(std::string(kMax ? "max" : "min") + " called on empty list");
  Value best = l.at(0);
  for (size_t i = 1; i < l.size(); ++i) {
    Value v = l.at(i);
    int c = 0;
    if (!Compare(v, best, &c)) return NoSuchOverload();
    if (kMax ? c == 1 : c == -1) best = v;
  }
  return best;
}

bool ListContains(const ListValue& l, const Value& v) {
  for (size_t i = 0; i < l.size(); ++i) {
    if (Equal(l.at(i), v)) return true;
  }
  return false;
}

bool ContainsAll(const ListValue& a, const ListValue& b) {
  for (size_t i = 0; i < b.size(); ++i) {
    if (!ListContains(a, b.at(i))) return false;
  }
  return true;
}

template <int kOp>
Value Sets(EvalState& s, const Value* a, size_t) {
  if (a[0].kind() != Kind::kList || a[1].kind() != Kind::kList) return WrongArgs();
  const ListValue& x = a[0].list();
  const ListValue& y = a[1].list();
  if (!s.Charge(x.size() * y.size() / 10)) {
    return Value::Error("operation cancelled: actual cost limit exceeded");
  }
  if (kOp == 0) return Value::Bool(ContainsAll(x, y));
  if (kOp == 1) return Value::Bool(ContainsAll(x, y) && ContainsAll(y, x));
  for (size_t i = 0; i < y.size(); ++i) {
    if (ListContains(x, y.at(i))) return Value::Bool(true);
  }
  return Value::Bool(false);
}

}  // namespace

void AddKubernetesBuiltins(std::vector<Builtin>& out) {
  const Builtin k8s[] = {
      {"quantity", false, 1, ToQuantity, StaticType::kQuantity},
      {"isQuantity", false, 1, IsQuantity, StaticType::kBool},
      {"sign", true, 1, QuantityUnary<0>, StaticType::kInt},
      {"isInteger", true, 1, QuantityUnary<1>, StaticType::kBool},
      {"asInteger", true, 1, QuantityUnary<2>, StaticType::kInt},
      {"asApproximateFloat", true, 1, QuantityUnary<3>, StaticType::kDouble},
      {"add", true, 2, QuantityAdd<false>, StaticType::kQuantity},
      {"sub", true, 2, QuantityAdd<true>, StaticType::kQuantity},
      {"semver", false, 1, ToSemver, StaticType::kSemver},
      {"semver", false, 2, ToSemver, StaticType::kSemver},
      {"isSemver", false, 1, IsSemver, StaticType::kBool},
      {"isSemver", false, 2, IsSemver, StaticType::kBool},
      {"major", true, 1, SemverPart<0>, StaticType::kInt},
      {"minor", true, 1, SemverPart<1>, StaticType::kInt},
      {"patch", true, 1, SemverPart<2>, StaticType::kInt},
      {"compareTo", true, 2, CompareTo<0>, StaticType::kInt},
      {"isLessThan", true, 2, CompareTo<1>, StaticType::kBool},
      {"isGreaterThan", true, 2, CompareTo<2>, StaticType::kBool},
      {"isSorted", true, 1, IsSorted, StaticType::kBool},
      {"sum", true, 1, Sum, StaticType::kDyn},
      {"min", true, 1, MinMax<false>, StaticType::kDyn},
      {"max", true, 1, MinMax<true>, StaticType::kDyn},
      {"sets.contains", false, 2, Sets<0>, StaticType::kBool},
      {"sets.equivalent", false, 2, Sets<1>, StaticType::kBool},
      {"sets.intersects", false, 2, Sets<2>, StaticType::kBool},
  };
  out.insert(out.end(), std::begin(k8s), std::end(k8s));
}

}  // namespace gpusched::cel
