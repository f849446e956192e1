// SPDX-License-Identifier: Apache-2.0
// Program: a compiled CEL expression (parsed, checked, constants folded), immutable and safe to
// evaluate from many threads at once. The general entry point under the DRA selector API
// (src/cel/device_selector.h); the conformance runner and the tests use it directly.
//
//   auto p = CompileExpression("x + 1 > y", {.variables = {"x", "y"}});
//   Value vars[] = {Value::Int(1), Value::Int(1)};
//   Value result = (*p)->Evaluate(vars, kDefaultCostLimit);   // true, or an error value
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "src/cel/ast.h"
#include "src/cel/value.h"
#include "src/common/status.h"

namespace gpusched::cel {

// resource.k8s.io CELSelectorExpressionMaxCost: the runtime (and estimated) cost limit of a
// DRA selector.
inline constexpr uint64_t kSelectorMaxCost = 1000000;
inline constexpr uint64_t kNoCostLimit = UINT64_MAX;

struct CompileOptions {
  // The variables the expression may reference; Evaluate takes their values in this order.
  std::vector<std::string> variables;
  // Type-check (undeclared names, unknown functions, operand types that cannot match). The
  // conformance cases marked disable_check turn it off; unknown names are then runtime errors.
  bool check = true;
  // variables[0] is DRA's `device` (kubernetes.DRADevice): its fields are checked and typed,
  // and the cost estimate bounds its maps by 32 entries.
  bool device_variable = false;
};

class Program {
 public:
  // Evaluates with `vars` (CompileOptions::variables order). Returns the result or an error
  // value; stops with "operation cancelled: actual cost limit exceeded" once the cost passes
  // `cost_limit`. *cost, when given, receives the cost spent.
  Value Evaluate(std::span<const Value> vars, uint64_t cost_limit, uint64_t* cost = nullptr) const;

  // The result type the checker determined (kDyn when it cannot tell).
  StaticType result_type() const { return root_->type; }
  // The worst-case cost estimate (saturating); device maps count as 32 entries.
  uint64_t estimated_max_cost() const { return estimated_cost_; }
  std::string_view expression() const { return expression_; }

 private:
  friend common::StatusOr<std::shared_ptr<const Program>> CompileExpression(
      std::string_view text, const CompileOptions& options);
  Program() = default;

  std::string expression_;
  ExprPtr root_;
  size_t num_vars_ = 0;
  size_t num_slots_ = 0;
  uint64_t estimated_cost_ = 0;
};

common::StatusOr<std::shared_ptr<const Program>> CompileExpression(std::string_view text,
                                                                   const CompileOptions& options);

// "int", "list", ... for messages.
std::string_view StaticTypeName(StaticType t);

}  // namespace gpusched::cel
