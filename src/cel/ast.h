// SPDX-License-Identifier: Apache-2.0
// The parsed and checked form of a CEL expression: a tree of Expr nodes, immutable once
// CompileExpression (src/cel/program.h) returns. Macros are expanded by the parser into
// kComprehension/kBind nodes; calls are resolved by the checker to a builtin (src/cel/builtins.h)
// and identifiers to a slot of the evaluation frame.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "src/cel/value.h"

namespace re2 {
class RE2;
}

namespace gpusched::cel {

struct EvalState;

// A builtin's implementation: args[0] is the receiver of a member call. Never gets an error
// argument (the evaluator propagates those), returns a value or an error value.
using BuiltinFn = Value (*)(EvalState& state, const Value* args, size_t n);

enum class ExprKind : uint8_t {
  kConst,          // value
  kIdent,          // name -> slot
  kSelect,         // args[0].name; test_only: has(args[0].name)
  kIndex,          // args[0][args[1]]
  kCall,           // name(args...) or args[0].name(args[1...]) when member; fn set by the checker
  kAnd,            // args[0] && args[1] && ... (n-ary, commutative error absorption)
  kOr,             // args[0] || ...
  kNot,            // !args[0]
  kTernary,        // args[0] ? args[1] : args[2]
  kList,           // [args...]
  kMap,            // {args[0]: args[1], ...}
  kComprehension,  // macro over args[0] (the range); see MacroKind
  kBind,           // cel.bind(name, args[0], args[1]): name -> slot
};

enum class MacroKind : uint8_t { kAll, kExists, kExistsOne, kMap, kMapFilter, kFilter };

// Static types the light checker tracks; kDyn when it cannot tell.
enum class StaticType : uint8_t {
  kDyn,
  kNull,
  kBool,
  kInt,
  kUint,
  kDouble,
  kString,
  kBytes,
  kList,
  kMap,
  kType,
  kQuantity,
  kSemver,
};

struct Expr {
  ExprKind kind = ExprKind::kConst;
  MacroKind macro = MacroKind::kAll;
  bool member = false;     // kCall: args[0] is the receiver
  bool test_only = false;  // kSelect under has()
  StaticType type = StaticType::kDyn;
  int32_t pos = 0;    // byte offset in the expression, for messages
  int32_t depth = 1;  // height of this subtree (the parser bounds it)
  int32_t slot = -1;  // kIdent, kBind, kComprehension (the iteration variable)
  std::string name;  // kIdent, kSelect field, kCall function, kComprehension/kBind variable
  Value value;       // kConst
  BuiltinFn fn = nullptr;
  std::shared_ptr<const re2::RE2> regex;  // kCall matches/find/findAll with a literal pattern
  std::vector<std::unique_ptr<Expr>> args;
};

using ExprPtr = std::unique_ptr<Expr>;

}  // namespace gpusched::cel
