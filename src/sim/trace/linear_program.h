// SPDX-License-Identifier: Apache-2.0
// A small linear or mixed-integer program, maximised with COIN-OR: CLP for linear programs, CBC's
// branch and bound when columns are integer (docs/dependencies.md). Columns are >= 0 with an upper
// bound; rows are lower <= sum(coefficient x column) <= upper. Used by the packing bound
// (packing_bound.h); not on any scheduling path.
#pragma once

#include <limits>
#include <utility>
#include <vector>

#include "src/common/status.h"

namespace gpusched::sim::trace {

class LinearProgram {
 public:
  static constexpr double kInfinity = std::numeric_limits<double>::infinity();

  // Adds a column with 0 <= x <= upper and its objective coefficient; returns its index.
  int AddColumn(double objective, double upper, bool integer = false);
  // Adds lower <= sum of entries <= upper (entries: column index, coefficient; no duplicates).
  void AddRow(const std::vector<std::pair<int, double>>& entries, double lower, double upper);

  int columns() const { return static_cast<int>(objective_.size()); }
  int rows() const { return static_cast<int>(row_lower_.size()); }
  bool has_integers() const;

  struct Solution {
    bool optimal = false;  // proven optimal (false: stopped by the time limit)
    double objective = 0;  // the best solution found (MIP) or the optimum (LP)
    double bound = 0;      // no solution exceeds it (equals objective when optimal)
  };
  // Maximises. A linear program is solved by CLP to optimality; with integer columns CBC stops
  // after `seconds`. Internal when a solver reports the problem infeasible or unbounded (every
  // program built here has the all-zero solution and bounded columns) or abandons it.
  common::StatusOr<Solution> Maximize(double seconds) const;

 private:
  common::StatusOr<Solution> SolveLp() const;
  common::StatusOr<Solution> SolveMip(double seconds) const;
  // CLP and CBC load the matrix column by column: per column, its first entry in index/value.
  void ColumnMajor(std::vector<int>* start, std::vector<int>* index,
                   std::vector<double>* value) const;
  std::vector<double> objective_, upper_;
  std::vector<char> integer_;
  std::vector<double> row_lower_, row_upper_;
  std::vector<std::vector<std::pair<int, double>>> row_entries_;
};

}  // namespace gpusched::sim::trace
