// SPDX-License-Identifier: Apache-2.0
// The tree-walking evaluator. Errors are values: strict functions return the first error among
// their arguments; && and || absorb an error when the other side decides the result (false for
// &&, true for ||), in either order; ?: evaluates only the chosen branch. The cost follows
// cel-go's runtime cost roughly: 1 per variable, field or index access and per function call
// (plus a tenth of the bytes for string functions, charged by the builtins), 10 per list and 30
// per map literal built at runtime, nothing for constants and logical operators.
#include <array>
#include <new>

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

// The arguments of one call: up to four on the stack, constructed only as many as there are.
class Args {
 public:
  explicit Args(size_t n) : n_(n) {
    if (n_ > kInline) {
      heap_.resize(n_);
      data_ = heap_.data();
    } else {
      data_ = reinterpret_cast<Value*>(inline_);
      for (size_t i = 0; i < n_; ++i) new (&data_[i]) Value();
    }
  }
  ~Args() {
    if (n_ <= kInline) {
      for (size_t i = 0; i < n_; ++i) data_[i].~Value();
    }
  }
  Args(const Args&) = delete;
  Args& operator=(const Args&) = delete;
  Value* data() { return data_; }

 private:
  static constexpr size_t kInline = 4;
  size_t n_;
  Value* data_;
  alignas(Value) unsigned char inline_[kInline * sizeof(Value)];
  std::vector<Value> heap_;
};

Value EvalCall(const Expr& e, EvalState& s) {
  Args storage(e.args.size());
  Value* args = storage.data();
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

// The state of one comprehension while it runs: the accumulated result of its macro.
struct Accumulator {
  Value accu;                        // all / exists: the && or || so far
  int64_t count = 0;                 // existsOne
  std::shared_ptr<VectorList> list;  // map, filter, transformList
  std::shared_ptr<VectorMap> map;    // transformMap
};

// One iteration of e's macro with the variables set. Returns false to stop, with *result set.
bool Step(const Expr& e, EvalState& s, Accumulator& acc, Value* result) {
  bool filtered = e.macro == MacroKind::kMapFilter || e.macro == MacroKind::kFilter ||
                  e.macro == MacroKind::kTransformMapFilter;
  switch (e.macro) {
    case MacroKind::kAll:
    case MacroKind::kExists: {
      bool is_and = e.macro == MacroKind::kAll;
      if (acc.accu.kind() == Kind::kBool && acc.accu.bool_value() != is_and) {
        *result = acc.accu;
        return false;
      }
      Value p = Eval(*e.args[1], s);
      if (s.exceeded) {
        *result = p;
        return false;
      }
      if (p.kind() == Kind::kBool && p.bool_value() != is_and) {
        acc.accu = p;
      } else if (p.kind() != Kind::kBool && !acc.accu.is_error()) {
        acc.accu = p.is_error() ? p : NoSuchOverload();
      }
      return true;
    }
    case MacroKind::kExistsOne: {
      Value p = Eval(*e.args[1], s);
      if (p.kind() != Kind::kBool) {
        *result = p.is_error() ? p : NoSuchOverload();
        return false;
      }
      acc.count += p.bool_value() ? 1 : 0;
      return true;
    }
    default: break;
  }
  if (filtered) {
    Value p = Eval(*e.args[1], s);
    if (p.kind() != Kind::kBool) {
      *result = p.is_error() ? p : NoSuchOverload();
      return false;
    }
    if (!p.bool_value()) return true;
  }
  Value v = e.macro == MacroKind::kFilter ? s.slots[e.slot] : Eval(*e.args[filtered ? 2 : 1], s);
  if (v.is_error()) {
    *result = v;
    return false;
  }
  if (acc.map != nullptr) {
    acc.map->Insert(s.slots[e.slot], std::move(v));
  } else {
    acc.list->elems().push_back(std::move(v));
  }
  return true;
}

Value EvalComprehension(const Expr& e, EvalState& s) {
  Value range = Eval(*e.args[0], s);
  if (range.is_error()) return range;
  if (range.kind() != Kind::kList && range.kind() != Kind::kMap) {
    return Value::Error("expression of type '" + std::string(range.TypeName()) +
                        "' cannot be range of a comprehension (must be list, map, or dynamic)");
  }
  bool is_list = range.kind() == Kind::kList;
  bool two_vars = !e.name2.empty();
  size_t n = is_list ? range.list().size() : range.map().size();
  Accumulator acc;
  acc.accu = Value::Bool(e.macro == MacroKind::kAll);
  if (e.macro == MacroKind::kTransformMap || e.macro == MacroKind::kTransformMapFilter) {
    acc.map = std::make_shared<VectorMap>();
  } else if (e.macro == MacroKind::kMap || e.macro == MacroKind::kMapFilter ||
             e.macro == MacroKind::kFilter) {
    acc.list = std::make_shared<VectorList>();
  }
  for (size_t i = 0; i < n; ++i) {
    if (!s.Charge(1)) return Value::Error(kCostExceeded);
    if (!is_list) {
      s.slots[e.slot] = range.map().KeyAt(i);
      if (two_vars) range.map().Find(s.slots[e.slot], &s.slots[e.slot + 1]);
    } else if (two_vars) {
      s.slots[e.slot] = Value::Int(static_cast<int64_t>(i));
      s.slots[e.slot + 1] = range.list().at(i);
    } else {
      s.slots[e.slot] = range.list().at(i);
    }
    Value result;
    if (!Step(e, s, acc, &result)) return result;
  }
  if (acc.map != nullptr) return Value::Map(std::move(acc.map));
  if (acc.list != nullptr) return Value::List(std::move(acc.list));
  if (e.macro == MacroKind::kExistsOne) return Value::Bool(acc.count == 1);
  return acc.accu;
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
    case ExprKind::kConst: return e.value.Borrowed();
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
  std::array<Value, 8> small;
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
