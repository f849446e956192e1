// SPDX-License-Identifier: Apache-2.0
// The CEL parser: text -> Expr tree (src/cel/ast.h), with the standard macros (has, all, exists,
// exists_one, map, filter) and cel.bind expanded. Follows the CEL language definition
// (github.com/google/cel-spec, doc/langdef.md); errors read like cel-go's:
//   ERROR: <input>:1:5: Syntax error: mismatched input ')'
//    | a + )
//    | ....^
// Nesting deeper than kMaxParseDepth is rejected, so neither the parser nor the evaluator can
// exhaust the stack.
#pragma once

#include <string>
#include <string_view>

#include "src/cel/ast.h"
#include "src/common/status.h"

namespace gpusched::cel {

inline constexpr int kMaxParseDepth = 250;          // cel-go's default max recursion depth
inline constexpr size_t kMaxExpressionSize = 100000;  // cel-go's code point limit (bytes here)

common::StatusOr<ExprPtr> Parse(std::string_view text);

// "ERROR: <input>:L:C: message" plus the source line and a caret under column C.
std::string FormatError(std::string_view text, int32_t pos, std::string_view message);

}  // namespace gpusched::cel
