// SPDX-License-Identifier: Apache-2.0
#include "src/sim/trace/linear_program.h"

#include <coin/Cbc_C_Interface.h>
#include <coin/Clp_C_Interface.h>

#include <cmath>
#include <memory>
#include <type_traits>

namespace gpusched::sim::trace {

static_assert(std::is_same_v<CoinBigIndex, int>, "CLP/CBC built with a wider CoinBigIndex");

namespace {

// COIN-OR's infinity for an unbounded row side.
constexpr double kCoinInfinity = 1e30;

// Bounds are stored as COIN-OR loads them: an infinite side as its infinity.
double Finite(double v) {
  if (std::isinf(v)) return v > 0 ? kCoinInfinity : -kCoinInfinity;
  return v;
}

}  // namespace

int LinearProgram::AddColumn(double objective, double upper, bool integer) {
  objective_.push_back(objective);
  upper_.push_back(Finite(upper));
  integer_.push_back(integer ? 1 : 0);
  return static_cast<int>(objective_.size()) - 1;
}

void LinearProgram::AddRow(const std::vector<std::pair<int, double>>& entries, double lower,
                           double upper) {
  row_entries_.push_back(entries);
  row_lower_.push_back(Finite(lower));
  row_upper_.push_back(Finite(upper));
}

bool LinearProgram::has_integers() const {
  for (char i : integer_) {
    if (i != 0) return true;
  }
  return false;
}

void LinearProgram::ColumnMajor(std::vector<int>* start, std::vector<int>* index,
                                std::vector<double>* value) const {
  start->assign(objective_.size() + 1, 0);
  for (const auto& row : row_entries_) {
    for (const auto& [col, coef] : row) ++(*start)[static_cast<size_t>(col) + 1];
  }
  for (size_t c = 1; c < start->size(); ++c) (*start)[c] += (*start)[c - 1];
  index->assign(static_cast<size_t>(start->back()), 0);
  value->assign(static_cast<size_t>(start->back()), 0.0);
  std::vector<int> next(start->begin(), start->end() - 1);
  for (size_t r = 0; r < row_entries_.size(); ++r) {
    for (const auto& [col, coef] : row_entries_[r]) {
      const auto at = static_cast<size_t>(next[static_cast<size_t>(col)]++);
      (*index)[at] = static_cast<int>(r);
      (*value)[at] = coef;
    }
  }
}

common::StatusOr<LinearProgram::Solution> LinearProgram::Maximize(double seconds) const {
  return has_integers() ? SolveMip(seconds) : SolveLp();
}

common::StatusOr<LinearProgram::Solution> LinearProgram::SolveLp() const {
  std::vector<int> start, index;
  std::vector<double> value;
  ColumnMajor(&start, &index, &value);
  const std::vector<double> lower(objective_.size(), 0.0);
  std::unique_ptr<Clp_Simplex, void (*)(Clp_Simplex*)> clp(Clp_newModel(), Clp_deleteModel);
  Clp_setLogLevel(clp.get(), 0);
  Clp_loadProblem(clp.get(), columns(), rows(), start.data(), index.data(), value.data(),
                  lower.data(), upper_.data(), objective_.data(), row_lower_.data(),
                  row_upper_.data());
  Clp_setOptimizationDirection(clp.get(), -1);  // maximise
  Clp_initialSolve(clp.get());
  if (Clp_isProvenOptimal(clp.get()) == 0) {
    return common::InternalError("the LP solver (CLP) found no optimum: status " +
                                 std::to_string(Clp_status(clp.get())));
  }
  Solution s;
  s.optimal = true;
  s.objective = Clp_objectiveValue(clp.get());
  s.bound = s.objective;
  return s;
}

common::StatusOr<LinearProgram::Solution> LinearProgram::SolveMip(double seconds) const {
  std::vector<int> start, index;
  std::vector<double> value;
  ColumnMajor(&start, &index, &value);
  // Minimise the negated objective: CBC's "best possible" is then a lower bound, whatever the
  // C interface's sense conventions.
  const std::vector<double> lower(objective_.size(), 0.0);
  std::vector<double> negated;
  for (double v : objective_) negated.push_back(-v);
  std::unique_ptr<Cbc_Model, void (*)(Cbc_Model*)> cbc(Cbc_newModel(), Cbc_deleteModel);
  Cbc_loadProblem(cbc.get(), columns(), rows(), start.data(), index.data(), value.data(),
                  lower.data(), upper_.data(), negated.data(), row_lower_.data(),
                  row_upper_.data());
  for (int c = 0; c < columns(); ++c) {
    if (integer_[static_cast<size_t>(c)] != 0) Cbc_setInteger(cbc.get(), c);
  }
  Cbc_setObjSense(cbc.get(), 1);
  Cbc_setLogLevel(cbc.get(), 0);
  Cbc_setMaximumSeconds(cbc.get(), seconds);
  Cbc_solve(cbc.get());
  if (Cbc_isProvenInfeasible(cbc.get()) != 0 || Cbc_isAbandoned(cbc.get()) != 0) {
    return common::InternalError("the MIP solver (CBC) found no solution: status " +
                                 std::to_string(Cbc_status(cbc.get())));
  }
  Solution s;
  s.optimal = Cbc_isProvenOptimal(cbc.get()) != 0;
  s.objective =
      Cbc_numberSavedSolutions(cbc.get()) > 0 || s.optimal ? -Cbc_getObjValue(cbc.get()) : 0.0;
  s.bound = s.optimal ? s.objective : -Cbc_getBestPossibleObjValue(cbc.get());
  return s;
}

}  // namespace gpusched::sim::trace
