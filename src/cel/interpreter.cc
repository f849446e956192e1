// SPDX-License-Identifier: Apache-2.0
// The tree-walking evaluator. Errors are values: strict functions return the first error among
// their arguments; && and || absorb an error when the other side decides the result (false for
// &&, true for ||), in either order; ?: evaluates only the chosen branch. The cost follows
// cel-go's runtime cost roughly: 1 per variable, field or index access and per function call
// (plus a tenth of the bytes for string functions, charged by the builtins), 10 per list and 30
// per map literal built at runtime, nothing for constants and logical operators.
#include <array>

#include "src/cel/builtins.h"
#include "src/cel/program.h"

namespace gpusched::cel {
namespace {

constexpr const char* kCostExceeded = "operation cancelled: actual cost limit exceeded";

Value Eval(const Expr& e, EvalState& s);

Value Select(const Value& operand, const Expr& e) {
  if (operand.kind() != Kind::kMap) {
    if (e.test_only) return NoSuchOverload();
    return Value::Error("type '" + std::string(operand.TypeName()) +
                        "' does not support field selection");
  }
  Value out;
  bool found = operand.map().Find(Value::StringView(e.name), &out);
  if (e.test_only) return Value::Bool(found);
  if (!found) return Value::Error("no such key: " + e.name);
  return out;
}

Value Index(const Value& operand, const Value& index) {
  if (operand.kind() == Kind::kMap) {
    if (index.kind() == Kind::kDouble || index.kind() == Kind::kList ||
        index.kind() == Kind::kMap || index.kind() == Kind::kNull) {
      Value out;
      if (index.kind() == Kind::kDouble && operand.map().Find(index, &out)) return out;
      if (index.kind() != Kind::kDouble) return Value::Error("unsupported key type");
    }
    Value out;
    if (!operand.map().Find(index, &out)) return NoSuchKey(index);
    return out;
  }
  if (operand.kind() == Kind::kList) {
    int64_t i = 0;
    if (index.kind() == Kind::kInt) {
      i = index.int_value();
    } else if (index.kind() == Kind::kUint) {
      i = index.uint_value() > INT64_MAX ? -1 : static_cast<int64_t>(index.uint_value());
    } else if (index.kind() == Kind::kDouble) {
      double d = index.double_value();
      if (!(d >= -9.2e18 && d <= 9.2e18) || static_cast<double>(static_cast<int64_t>(d)) != d) {
        return Value::Error("unsupported index value " + DebugString(index) + " in list");
      }
      i = static_cast<int64_t>(d);
    } else {
      return NoSuchOverload();
    }
    size_t size = operand.list().size();
    if (i < 0 || static_cast<uint64_t>(i) >= size) {
      return Value::Error("index '" + std::to_string(i) + "' out of range in list size '" +
                          std::to_string(size) + "'");
    }
    return operand.list().at(static_cast<size_t>(i));
  }
  return NoSuchOverload();
}

// && (is_and) or ||: the deciding value wins over errors; else the first error; else the other.
Value Logical(const Expr& e, EvalState& s, bool is_and) {
  Value first_error;
  bool have_error = false;
  for (const ExprPtr& arg : e.args) {
    Value v = Eval(*arg, s);
    if (s.exceeded) return v;
    if (v.kind() == Kind::kBool) {
      if (v.bool_value() != is_and) return v;
      continue;
    }
    if (!have_error) {
      first_error = v.is_error() ? v : NoSuchOverload();
      have_error = true;
    }
  }
  if (have_error) return first_error;
  return Value::Bool(is_and);
}

Value EvalCall(const Expr& e, EvalState& s) {
  std::array<Value, 4> small;
  std::vector<Value> large;
  Value* args = small.data();
  if (e.args.size() > small.size()) {
    large.resize(e.args.size());
    args = large.data();
  }
  for (size_t i = 0; i < e.args.size(); ++i) {
    args[i] = Eval(*e.args[i], s);
    if (args[i].is_error()) return args[i];
  }
  if (!s.Charge(1)) return Value::Error(kCostExceeded);
  if (e.fn == nullptr) {
    return Value::Error("no such overload: " + e.name);
  }
  s.call = &e;
  return e.fn(s, args, e.args.size());
}

Value EvalComprehension(const Expr& e, EvalState& s) {
  Value range = Eval(*e.args[0], s);
  if (range.is_error()) return range;
  if (range.kind() != Kind::kList && range.kind() != Kind::kMap) {
    return Value::Error("expression of type '" + std::string(range.TypeName()) +
                        "' cannot be range of a comprehension (must be list, map, or dynamic)");
  }
  bool is_list = range.kind() == Kind::kList;
  size_t n = is_list ? range.list().size() : range.map().size();
  Value& var = s.slots[e.slot];
  Value accu = Value::Bool(e.macro == MacroKind::kAll);
  int64_t count = 0;
  std::shared_ptr<VectorList> out;
  if (e.macro == MacroKind::kMap || e.macro == MacroKind::kMapFilter ||
      e.macro == MacroKind::kFilter) {
    out = std::make_shared<VectorList>();
  }
  for (size_t i = 0; i < n; ++i) {
    if (!s.Charge(1)) return Value::Error(kCostExceeded);
    var = is_list ? range.list().at(i) : range.map().KeyAt(i);
    switch (e.macro) {
      case MacroKind::kAll:
      case MacroKind::kExists: {
        bool is_and = e.macro == MacroKind::kAll;
        if (accu.kind() == Kind::kBool && accu.bool_value() != is_and) return accu;
        Value p = Eval(*e.args[1], s);
        if (s.exceeded) return p;
        if (p.kind() == Kind::kBool && p.bool_value() != is_and) {
          accu = p;
        } else if (p.kind() != Kind::kBool && !accu.is_error()) {
          accu = p.is_error() ? p : NoSuchOverload();
        }
        break;
      }
      case MacroKind::kExistsOne: {
        Value p = Eval(*e.args[1], s);
        if (p.kind() != Kind::kBool) return p.is_error() ? p : NoSuchOverload();
        count += p.bool_value() ? 1 : 0;
        break;
      }
      case MacroKind::kMap:
      case MacroKind::kMapFilter:
      case MacroKind::kFilter: {
        if (e.macro != MacroKind::kMap) {
          Value p = Eval(*e.args[1], s);
          if (p.kind() != Kind::kBool) return p.is_error() ? p : NoSuchOverload();
          if (!p.bool_value()) break;
        }
        if (e.macro == MacroKind::kFilter) {
          out->elems().push_back(var);
          break;
        }
        Value v = Eval(*e.args[e.macro == MacroKind::kMap ? 1 : 2], s);
        if (v.is_error()) return v;
        out->elems().push_back(std::move(v));
        break;
      }
    }
  }
  if (out != nullptr) return Value::List(std::move(out));
  if (e.macro == MacroKind::kExistsOne) return Value::Bool(count == 1);
  return accu;
}

Value EvalList(const Expr& e, EvalState& s) {
  if (!s.Charge(10)) return Value::Error(kCostExceeded);
  auto list = std::make_shared<VectorList>();
  list->elems().reserve(e.args.size());
  for (const ExprPtr& arg : e.args) {
    Value v = Eval(*arg, s);
    if (v.is_error()) return v;
    list->elems().push_back(std::move(v));
  }
  return Value::List(std::move(list));
}

Value EvalMap(const Expr& e, EvalState& s) {
  if (!s.Charge(30)) return Value::Error(kCostExceeded);
  auto map = std::make_shared<VectorMap>();
  for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
    Value k = Eval(*e.args[i], s);
    if (k.is_error()) return k;
    Value v = Eval(*e.args[i + 1], s);
    if (v.is_error()) return v;
    Kind kk = k.kind();
    if (kk != Kind::kString && kk != Kind::kInt && kk != Kind::kUint && kk != Kind::kBool) {
      return Value::Error("unsupported key type");
    }
    if (!map->Insert(k, std::move(v))) return Value::Error("Failed with repeated key");
  }
  return Value::Map(std::move(map));
}

Value Eval(const Expr& e, EvalState& s) {
  switch (e.kind) {
    case ExprKind::kConst: return e.value;
    case ExprKind::kIdent:
      if (!s.Charge(1)) return Value::Error(kCostExceeded);
      if (e.slot < 0) return Value::Error("no such attribute: " + e.name);
      return s.slots[e.slot];
    case ExprKind::kSelect: {
      Value operand = Eval(*e.args[0], s);
      if (operand.is_error()) return operand;
      if (!e.test_only && !s.Charge(1)) return Value::Error(kCostExceeded);
      return Select(operand, e);
    }
    case ExprKind::kIndex: {
      Value operand = Eval(*e.args[0], s);
      if (operand.is_error()) return operand;
      Value index = Eval(*e.args[1], s);
      if (index.is_error()) return index;
      if (!s.Charge(1)) return Value::Error(kCostExceeded);
      return Index(operand, index);
    }
    case ExprKind::kCall: return EvalCall(e, s);
    case ExprKind::kAnd: return Logical(e, s, true);
    case ExprKind::kOr: return Logical(e, s, false);
    case ExprKind::kNot: {
      Value v = Eval(*e.args[0], s);
      if (v.kind() == Kind::kBool) return Value::Bool(!v.bool_value());
      return v.is_error() ? v : NoSuchOverload();
    }
    case ExprKind::kTernary: {
      Value c = Eval(*e.args[0], s);
      if (c.kind() != Kind::kBool) return c.is_error() ? c : NoSuchOverload();
      return Eval(*e.args[c.bool_value() ? 1 : 2], s);
    }
    case ExprKind::kList: return EvalList(e, s);
    case ExprKind::kMap: return EvalMap(e, s);
    case ExprKind::kComprehension: return EvalComprehension(e, s);
    case ExprKind::kBind: {
      s.slots[e.slot] = Eval(*e.args[0], s);
      return Eval(*e.args[1], s);
    }
  }
  return NoSuchOverload();
}

}  // namespace

Value Program::Evaluate(std::span<const Value> vars, uint64_t cost_limit, uint64_t* cost) const {
  std::array<Value, 16> small;
  std::vector<Value> large;
  Value* slots = small.data();
  if (num_slots_ > small.size()) {
    large.resize(num_slots_);
    slots = large.data();
  }
  for (size_t i = 0; i < num_vars_ && i < vars.size(); ++i) slots[i] = vars[i];
  EvalState state;
  state.slots = slots;
  state.limit = cost_limit;
  Value result = Eval(*root_, state);
  if (cost != nullptr) *cost = state.cost;
  if (state.exceeded) return Value::Error(kCostExceeded);
  return result;
}

}  // namespace gpusched::cel
