// SPDX-License-Identifier: Apache-2.0
// CompileExpression: parse, then one pass over the tree that resolves names (variables to frame
// slots, type names to type constants, functions to builtins), infers the static types it can,
// reports what cannot work (undeclared names, unknown functions, operand types no overload
// accepts), folds calls and literals whose operands are constants, precompiles literal regular
// expressions and estimates the worst-case cost.
#include <algorithm>

#include "src/cel/builtins.h"
#include "src/cel/parser.h"
#include "src/cel/program.h"

namespace gpusched::cel {
namespace {

constexpr uint64_t kDeviceMapSize = 32;  // ResourceSliceMaxAttributesAndCapacitiesPerDevice
constexpr uint64_t kUnknownRangeSize = 64;

uint64_t SatAdd(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }
uint64_t SatMul(uint64_t a, uint64_t b) {
  return (a != 0 && b > UINT64_MAX / a) ? UINT64_MAX : a * b;
}

StaticType TypeOf(const Value& v) {
  switch (v.kind()) {
    case Kind::kNull: return StaticType::kNull;
    case Kind::kBool: return StaticType::kBool;
    case Kind::kInt: return StaticType::kInt;
    case Kind::kUint: return StaticType::kUint;
    case Kind::kDouble: return StaticType::kDouble;
    case Kind::kString: return StaticType::kString;
    case Kind::kBytes: return StaticType::kBytes;
    case Kind::kList: return StaticType::kList;
    case Kind::kMap: return StaticType::kMap;
    case Kind::kType: return StaticType::kType;
    case Kind::kQuantity: return StaticType::kQuantity;
    case Kind::kSemver: return StaticType::kSemver;
    case Kind::kError: return StaticType::kDyn;
  }
  return StaticType::kDyn;
}

bool IsNumeric(StaticType t) {
  return t == StaticType::kInt || t == StaticType::kUint || t == StaticType::kDouble;
}

constexpr std::string_view kTypeNames[] = {"int",  "uint", "double", "bool",      "string",
                                           "bytes", "list", "map",   "null_type", "type"};

class Checker {
 public:
  Checker(std::string_view text, const CompileOptions& options) : text_(text), options_(options) {
    for (size_t i = 0; i < options.variables.size(); ++i) {
      scopes_.emplace_back(options.variables[i], static_cast<int32_t>(i));
    }
    next_slot_ = static_cast<int32_t>(options.variables.size());
  }

  common::Status Check(ExprPtr& e) {
    Visit(e);
    if (!error_.empty()) return common::InvalidArgumentError(error_);
    return common::Status::Ok();
  }
  size_t num_slots() const { return static_cast<size_t>(next_slot_); }

  // The worst-case cost and, through *size, the largest size the value can have.
  uint64_t Estimate(const Expr& e, uint64_t* size) const;

 private:
  void Fail(const Expr& e, const std::string& message) {
    if (error_.empty()) error_ = FormatError(text_, e.pos, message);
  }

  std::string Signature(const Expr& e) const {
    std::string out = "(";
    for (size_t i = 0; i < e.args.size(); ++i) {
      if (i > 0) out += ", ";
      out += StaticTypeName(e.args[i]->type);
    }
    return out + ")";
  }

  void NoOverload(const Expr& e) {
    Fail(e, "found no matching overload for '" + e.name + "' applied to '" + Signature(e) + "'");
  }

  int32_t Lookup(std::string_view name) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      if (it->first == name) return it->second;
    }
    return -1;
  }

  bool IsDevice(const Expr& e) const {
    return options_.device_variable && e.kind == ExprKind::kIdent && e.slot == 0;
  }

  void Visit(ExprPtr& e);
  void VisitIdent(ExprPtr& e);
  void VisitSelect(Expr& e);
  void VisitCall(ExprPtr& e);
  void TypeOperator(Expr& e);
  void Fold(ExprPtr& e);

  std::string_view text_;
  const CompileOptions& options_;
  std::vector<std::pair<std::string, int32_t>> scopes_;
  int32_t next_slot_ = 0;
  std::string error_;
};

void Checker::Visit(ExprPtr& e) {
  if (!error_.empty()) return;
  switch (e->kind) {
    case ExprKind::kConst: e->type = TypeOf(e->value); return;
    case ExprKind::kIdent: VisitIdent(e); return;
    case ExprKind::kComprehension:
    case ExprKind::kBind: {
      Visit(e->args[0]);
      e->slot = next_slot_++;
      scopes_.emplace_back(e->name, e->slot);
      for (size_t i = 1; i < e->args.size(); ++i) Visit(e->args[i]);
      scopes_.pop_back();
      if (e->kind == ExprKind::kBind) {
        e->type = e->args[1]->type;
      } else if (e->macro == MacroKind::kMap || e->macro == MacroKind::kMapFilter ||
                 e->macro == MacroKind::kFilter) {
        e->type = StaticType::kList;
      } else {
        e->type = StaticType::kBool;
      }
      if (options_.check && e->kind == ExprKind::kComprehension) {
        StaticType r = e->args[0]->type;
        if (r != StaticType::kDyn && r != StaticType::kList && r != StaticType::kMap) {
          Fail(*e->args[0], "expression of type '" + std::string(StaticTypeName(r)) +
                                "' cannot be range of a comprehension (must be list, map, or "
                                "dynamic)");
        }
      }
      return;
    }
    default: break;
  }
  if (e->kind == ExprKind::kCall) {
    VisitCall(e);
    return;
  }
  for (ExprPtr& a : e->args) Visit(a);
  if (!error_.empty()) return;
  switch (e->kind) {
    case ExprKind::kSelect: VisitSelect(*e); break;
    case ExprKind::kIndex:
      if (options_.check) {
        StaticType t = e->args[0]->type;
        if (t != StaticType::kDyn && t != StaticType::kList && t != StaticType::kMap) {
          e->name = "_[_]";
          NoOverload(*e);
        }
      }
      break;
    case ExprKind::kAnd:
    case ExprKind::kOr:
    case ExprKind::kNot:
      e->type = StaticType::kBool;
      if (options_.check) {
        for (const ExprPtr& a : e->args) {
          if (a->type != StaticType::kBool && a->type != StaticType::kDyn) {
            e->name = e->kind == ExprKind::kNot ? "!_" : (e->kind == ExprKind::kAnd ? "_&&_" : "_||_");
            NoOverload(*e);
          }
        }
      }
      break;
    case ExprKind::kTernary:
      e->type = e->args[1]->type == e->args[2]->type ? e->args[1]->type : StaticType::kDyn;
      if (options_.check && e->args[0]->type != StaticType::kBool &&
          e->args[0]->type != StaticType::kDyn) {
        e->name = "_?_:_";
        NoOverload(*e);
      }
      break;
    case ExprKind::kList: e->type = StaticType::kList; break;
    case ExprKind::kMap: e->type = StaticType::kMap; break;
    default: break;
  }
  Fold(e);
}

void Checker::VisitIdent(ExprPtr& e) {
  e->slot = Lookup(e->name);
  if (e->slot >= 0) {
    if (IsDevice(*e)) e->type = StaticType::kMap;
    return;
  }
  for (std::string_view t : kTypeNames) {
    if (e->name == t) {
      e->kind = ExprKind::kConst;
      e->value = Value::Type(t);
      e->type = StaticType::kType;
      return;
    }
  }
  if (options_.check) Fail(*e, "undeclared reference to '" + e->name + "' (in container '')");
}

void Checker::VisitSelect(Expr& e) {
  const Expr& operand = *e.args[0];
  if (e.test_only) {
    e.type = StaticType::kBool;
  }
  if (IsDevice(operand)) {
    if (e.name == "driver") {
      e.type = e.test_only ? StaticType::kBool : StaticType::kString;
    } else if (e.name == "allowMultipleAllocations") {
      e.type = e.test_only ? StaticType::kBool : StaticType::kBool;
    } else if (e.name == "attributes" || e.name == "capacity") {
      e.type = e.test_only ? StaticType::kBool : StaticType::kMap;
    } else if (options_.check) {
      Fail(e, "undefined field '" + e.name + "'");
    }
    return;
  }
  if (options_.check) {
    StaticType t = operand.type;
    if (t != StaticType::kDyn && t != StaticType::kMap) {
      Fail(e, "type '" + std::string(StaticTypeName(t)) + "' does not support field selection");
    }
  }
}

void Checker::VisitCall(ExprPtr& e) {
  // strings.quote(x), sets.contains(a, b): a qualified global name, not a member call.
  if (e->member && e->args[0]->kind == ExprKind::kIdent && Lookup(e->args[0]->name) < 0) {
    std::string qualified = e->args[0]->name + "." + e->name;
    if (IsFunctionName(qualified)) {
      e->args.erase(e->args.begin());
      e->name = std::move(qualified);
      e->member = false;
    }
  }
  for (ExprPtr& a : e->args) Visit(a);
  if (!error_.empty()) return;
  const Builtin* b = FindBuiltin(e->name, e->member, e->args.size());
  if (b == nullptr) {
    if (!options_.check) return;
    if (!IsFunctionName(e->name)) {
      Fail(*e, "undeclared reference to '" + e->name + "' (in container '')");
    } else {
      NoOverload(*e);
    }
    return;
  }
  e->fn = b->fn;
  e->type = b->result;
  if (options_.check) TypeOperator(*e);
  if (!error_.empty()) return;
  if (TakesRegex(e->name) && e->args.size() == 2 && e->args[1]->kind == ExprKind::kConst &&
      e->args[1]->value.kind() == Kind::kString) {
    std::string why;
    e->regex = CompileRegex(e->args[1]->value.text(), &why);
  }
  Fold(e);
}

void Checker::TypeOperator(Expr& e) {
  if (e.name.size() < 3 || (e.name[0] != '_' && e.name != "-_" && e.name != "@in")) return;
  StaticType a = e.args[0]->type;
  StaticType b = e.args.size() > 1 ? e.args[1]->type : StaticType::kDyn;
  if (e.name == "-_") {
    if (a == StaticType::kInt || a == StaticType::kDouble) e.type = a;
    if (a != StaticType::kDyn && a != StaticType::kInt && a != StaticType::kDouble) NoOverload(e);
    return;
  }
  if (e.name == "@in") {
    if (b != StaticType::kDyn && b != StaticType::kList && b != StaticType::kMap) NoOverload(e);
    return;
  }
  bool known = a != StaticType::kDyn && b != StaticType::kDyn;
  if (e.name == "_==_" || e.name == "_!=_") {
    auto group = [](StaticType t) {
      return IsNumeric(t) ? 1 : (t == StaticType::kBool ? 2 : (t == StaticType::kString ? 3 : (t == StaticType::kBytes ? 4 : 0)));
    };
    if (known && group(a) != 0 && group(b) != 0 && group(a) != group(b)) NoOverload(e);
    return;
  }
  if (e.name == "_<_" || e.name == "_<=_" || e.name == "_>_" || e.name == "_>=_") {
    auto ordered = [](StaticType t) {
      return IsNumeric(t) || t == StaticType::kBool || t == StaticType::kString ||
             t == StaticType::kBytes || t == StaticType::kDyn;
    };
    if (!ordered(a) || !ordered(b) || (known && a != b && !(IsNumeric(a) && IsNumeric(b)))) {
      NoOverload(e);
    }
    return;
  }
  // + - * / %
  if (a != StaticType::kDyn && b != StaticType::kDyn && a != b) {
    NoOverload(e);
    return;
  }
  StaticType t = a != StaticType::kDyn ? a : b;
  bool ok = IsNumeric(t) || t == StaticType::kDyn;
  if (e.name == "_+_") {
    ok = ok || t == StaticType::kString || t == StaticType::kBytes || t == StaticType::kList;
  }
  if (e.name == "_%_") ok = t == StaticType::kInt || t == StaticType::kUint || t == StaticType::kDyn;
  if (!ok) {
    NoOverload(e);
    return;
  }
  if (known) e.type = a;
}

// Replaces a list, map or pure call whose operands are all constants by its value.
void Checker::Fold(ExprPtr& e) {
  if (e->kind != ExprKind::kList && e->kind != ExprKind::kMap &&
      (e->kind != ExprKind::kCall || e->fn == nullptr)) {
    return;
  }
  if (!std::all_of(e->args.begin(), e->args.end(),
                   [](const ExprPtr& a) { return a->kind == ExprKind::kConst; })) {
    return;
  }
  Value result;
  if (e->kind == ExprKind::kList) {
    auto list = std::make_shared<VectorList>();
    for (const ExprPtr& a : e->args) list->elems().push_back(a->value);
    result = Value::List(std::move(list));
  } else if (e->kind == ExprKind::kMap) {
    auto map = std::make_shared<VectorMap>();
    for (size_t i = 0; i + 1 < e->args.size(); i += 2) {
      Kind k = e->args[i]->value.kind();
      if ((k != Kind::kString && k != Kind::kInt && k != Kind::kUint && k != Kind::kBool) ||
          !map->Insert(e->args[i]->value, e->args[i + 1]->value)) {
        return;  // the error is reported at evaluation
      }
    }
    result = Value::Map(std::move(map));
  } else {
    std::vector<Value> args;
    for (const ExprPtr& a : e->args) args.push_back(a->value);
    EvalState state;
    state.limit = kSelectorMaxCost;
    state.call = e.get();
    result = e->fn(state, args.data(), args.size());
    if (state.exceeded || result.is_error()) return;  // keep runtime errors at runtime
  }
  auto folded = std::make_unique<Expr>();
  folded->kind = ExprKind::kConst;
  folded->pos = e->pos;
  folded->value = std::move(result);
  folded->type = TypeOf(folded->value);
  e = std::move(folded);
}

uint64_t Checker::Estimate(const Expr& e, uint64_t* size) const {
  *size = kUnknownRangeSize;
  uint64_t child_size = 0;
  uint64_t cost = 0;
  switch (e.kind) {
    case ExprKind::kConst:
      if (e.value.kind() == Kind::kList) *size = e.value.list().size();
      if (e.value.kind() == Kind::kMap) *size = e.value.map().size();
      return 0;
    case ExprKind::kIdent: return 1;
    case ExprKind::kComprehension: {
      uint64_t range_size = 0;
      cost = Estimate(*e.args[0], &range_size);
      uint64_t per_item = 1;
      for (size_t i = 1; i < e.args.size(); ++i) {
        per_item = SatAdd(per_item, Estimate(*e.args[i], &child_size));
      }
      *size = range_size;
      return SatAdd(cost, SatMul(range_size, per_item));
    }
    case ExprKind::kTernary: {
      cost = Estimate(*e.args[0], &child_size);
      uint64_t s1 = 0;
      uint64_t s2 = 0;
      uint64_t c1 = Estimate(*e.args[1], &s1);
      uint64_t c2 = Estimate(*e.args[2], &s2);
      *size = std::max(s1, s2);
      return SatAdd(cost, std::max(c1, c2));
    }
    default: break;
  }
  for (const ExprPtr& a : e.args) cost = SatAdd(cost, Estimate(*a, &child_size));
  switch (e.kind) {
    case ExprKind::kSelect:
    case ExprKind::kIndex:
      if (options_.device_variable) *size = kDeviceMapSize;
      return SatAdd(cost, e.test_only ? 0 : 1);
    case ExprKind::kCall: return SatAdd(cost, 1);
    case ExprKind::kList: *size = e.args.size(); return SatAdd(cost, 10);
    case ExprKind::kMap: *size = e.args.size() / 2; return SatAdd(cost, 30);
    default: return cost;
  }
}

}  // namespace

std::string_view StaticTypeName(StaticType t) {
  switch (t) {
    case StaticType::kDyn: return "dyn";
    case StaticType::kNull: return "null_type";
    case StaticType::kBool: return "bool";
    case StaticType::kInt: return "int";
    case StaticType::kUint: return "uint";
    case StaticType::kDouble: return "double";
    case StaticType::kString: return "string";
    case StaticType::kBytes: return "bytes";
    case StaticType::kList: return "list";
    case StaticType::kMap: return "map";
    case StaticType::kType: return "type";
    case StaticType::kQuantity: return "kubernetes.Quantity";
    case StaticType::kSemver: return "kubernetes.Semver";
  }
  return "dyn";
}

common::StatusOr<std::shared_ptr<const Program>> CompileExpression(std::string_view text,
                                                                   const CompileOptions& options) {
  GPUSCHED_ASSIGN_OR_RETURN(ExprPtr root, Parse(text));
  Checker checker(text, options);
  GPUSCHED_RETURN_IF_ERROR(checker.Check(root));
  std::shared_ptr<Program> program(new Program());
  program->expression_ = std::string(text);
  program->num_vars_ = options.variables.size();
  program->num_slots_ = checker.num_slots();
  uint64_t size = 0;
  program->estimated_cost_ = checker.Estimate(*root, &size);
  program->root_ = std::move(root);
  return std::shared_ptr<const Program>(std::move(program));
}

}  // namespace gpusched::cel
