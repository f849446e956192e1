// SPDX-License-Identifier: Apache-2.0
#include "src/sim/trace/packing_bound.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include "src/api/gpu.h"
#include "src/common/interner.h"
#include "src/sim/trace/linear_program.h"

namespace gpusched::sim::trace {
namespace {

constexpr int64_t kMilli = api::kMilliPerGpu;
// Fekete-Schepers roundings u^(k), k = 1..kMaxRounding, beside no rounding.
constexpr int kMaxRounding = 3;

struct Shape {
  common::Atom model;
  int32_t gpus = 0;
  int64_t cpu = 0;
  int64_t memory = 0;
  int64_t nodes = 0;
};

struct PodType {
  int64_t cpu = 0;
  int64_t memory = 0;
  int32_t count = 0;
  int32_t milli = 0;
  std::vector<common::Atom> models;
  int64_t pods = 0;
};

int32_t HealthyGpus(const api::Node& n) {
  const uint32_t mask = n.gpu.count >= 32 ? ~0u : ((1u << n.gpu.count) - 1u);
  return n.gpu.count - std::popcount(n.gpu.unhealthy_mask & mask);
}

bool ModelAllowed(const std::vector<common::Atom>& models, common::Atom node_model) {
  if (models.empty()) return true;
  return std::any_of(models.begin(), models.end(), [&](common::Atom want) {
    return api::GpuModelMatches(common::Str(node_model), common::Str(want));
  });
}

bool Fits(const PodType& t, const Shape& s) {
  return t.count <= s.gpus && t.milli <= kMilli && t.cpu <= s.cpu && t.memory <= s.memory &&
         ModelAllowed(t.models, s.model);
}

// A dual-feasible function for capacity `cap` (sum x <= cap implies sum f(x) <= cap): Fekete and
// Schepers' U_eps (x > cap - eps counts cap, x < eps counts 0; eps 0: none), then their u^(k)
// (values rounded down to multiples of cap / (k + 1) unless (k + 1) x is a multiple of cap; k 0:
// none). A composition of dual-feasible functions is one.
struct DualFeasible {
  int64_t eps = 0;
  int k = 0;
  double Apply(int64_t x, int64_t cap) const {
    int64_t v = x;
    if (eps > 0) v = x > cap - eps ? cap : (x < eps ? 0 : x);
    if (k == 0 || ((k + 1) * v) % cap == 0) return static_cast<double>(v);
    return static_cast<double>((k + 1) * v / cap) * static_cast<double>(cap) / (k + 1);
  }
};

// The functions worth a row for items of `sizes` in bins of `cap`: no threshold, and for each
// size over half the bin the threshold that makes it fill the bin; each with every rounding.
std::vector<DualFeasible> DualFeasibleFamily(const std::set<int64_t>& sizes, int64_t cap) {
  std::vector<int64_t> thresholds = {0};
  for (int64_t x : sizes) {
    const int64_t eps = cap - x + 1;
    if (x < cap && 2 * eps <= cap) thresholds.push_back(eps);
  }
  std::vector<DualFeasible> out;
  for (int64_t eps : thresholds) {
    for (int k = 0; k <= kMaxRounding; ++k) out.push_back(DualFeasible{eps, k});
  }
  return out;
}

struct Instance {
  std::vector<Shape> shapes;
  std::vector<PodType> types;
};

common::StatusOr<Instance> Group(std::span<const api::NodePtr> nodes,
                                 std::span<const api::PodPtr> pods, PackingBound* out) {
  Instance in;
  std::map<std::tuple<uint32_t, int32_t, int64_t, int64_t>, size_t> shape_of;
  for (const api::NodePtr& n : nodes) {
    const int32_t gpus = HealthyGpus(*n);
    if (gpus <= 0) continue;  // holds no GPU pod
    out->capacity_milli += int64_t{gpus} * kMilli;
    auto key =
        std::make_tuple(n->gpu.model.id, gpus, n->allocatable.milli_cpu, n->allocatable.memory);
    auto [it, inserted] = shape_of.emplace(key, in.shapes.size());
    if (inserted) {
      in.shapes.push_back(
          Shape{n->gpu.model, gpus, n->allocatable.milli_cpu, n->allocatable.memory, 0});
    }
    ++in.shapes[it->second].nodes;
  }
  std::map<std::tuple<int64_t, int64_t, int32_t, int32_t, std::vector<uint32_t>>, size_t> type_of;
  for (const api::PodPtr& p : pods) {
    if (p->gpu.empty()) continue;  // allocates no GPU
    if (p->gpu.milli <= 0 || p->gpu.milli > kMilli) {
      return common::InvalidArgumentError("pod " + p->meta.namespace_ + "/" + p->meta.name +
                                          ": gpu milli " + std::to_string(p->gpu.milli) +
                                          " (the packing bound needs a milli-GPU share 1..1000)");
    }
    out->demand_milli += p->gpu.TotalMilli();
    std::vector<common::Atom> models = p->gpu.models;
    std::sort(models.begin(), models.end());
    models.erase(std::unique(models.begin(), models.end()), models.end());
    std::vector<uint32_t> ids;
    for (common::Atom m : models) ids.push_back(m.id);
    auto key = std::make_tuple(p->requests.milli_cpu, p->requests.memory, p->gpu.count,
                               p->gpu.milli, std::move(ids));
    auto [it, inserted] = type_of.emplace(std::move(key), in.types.size());
    if (inserted) {
      in.types.push_back(PodType{p->requests.milli_cpu, p->requests.memory, p->gpu.count,
                                 p->gpu.milli, std::move(models), 0});
    }
    ++in.types[it->second].pods;
  }
  out->node_shapes = static_cast<int64_t>(in.shapes.size());
  out->gpu_pod_types = static_cast<int64_t>(in.types.size());
  return in;
}

// x / cap; a node without the resource holds only pods that ask none (Fits checks).
double Fraction(int64_t x, int64_t cap) {
  return cap > 0 ? static_cast<double>(x) / static_cast<double>(cap) : 0.0;
}

// One shape's resource rows: for `size` of each placed pod (times `per_pod` units) in bins of
// `cap`, `bins` of them, one row per dual-feasible function.
void AddShapeRows(LinearProgram& lp, const std::vector<std::pair<int, const PodType*>>& columns,
                  int64_t cap, int64_t bins, int64_t (*size)(const PodType&),
                  int32_t (*per_pod)(const PodType&)) {
  std::set<int64_t> sizes;
  for (const auto& [col, t] : columns) sizes.insert(size(*t));
  std::set<std::vector<std::pair<int, double>>> seen;
  for (const DualFeasible& f : DualFeasibleFamily(sizes, cap)) {
    std::vector<std::pair<int, double>> row;
    for (const auto& [col, t] : columns) {
      // In bins (coefficients of about 1 keep the solvers' tolerances meaningful).
      const double coef = per_pod(*t) * f.Apply(size(*t), cap) / static_cast<double>(cap);
      if (coef > 0) row.emplace_back(col, coef);
    }
    if (row.empty() || !seen.insert(row).second) continue;
    lp.AddRow(row, -LinearProgram::kInfinity, static_cast<double>(bins));
  }
}

common::StatusOr<double> RelaxationBound(const Instance& in) {
  LinearProgram lp;
  std::vector<std::vector<std::pair<int, const PodType*>>> by_shape(in.shapes.size());
  for (const PodType& t : in.types) {
    std::vector<std::pair<int, double>> all_shapes;
    for (size_t s = 0; s < in.shapes.size(); ++s) {
      if (!Fits(t, in.shapes[s])) continue;
      const int col = lp.AddColumn(static_cast<double>(int64_t{t.count} * t.milli),
                                   static_cast<double>(t.pods));
      by_shape[s].emplace_back(col, &t);
      all_shapes.emplace_back(col, 1.0);
    }
    if (all_shapes.size() > 1) {
      lp.AddRow(all_shapes, -LinearProgram::kInfinity, static_cast<double>(t.pods));
    }
  }
  if (lp.columns() == 0) return 0.0;
  for (size_t s = 0; s < in.shapes.size(); ++s) {
    const Shape& sh = in.shapes[s];
    if (by_shape[s].empty()) continue;
    AddShapeRows(
        lp, by_shape[s], kMilli, sh.nodes * sh.gpus,
        [](const PodType& t) -> int64_t { return t.milli; },
        [](const PodType& t) { return t.count; });
    if (sh.cpu > 0) {
      AddShapeRows(
          lp, by_shape[s], sh.cpu, sh.nodes, [](const PodType& t) { return t.cpu; },
          [](const PodType&) { return int32_t{1}; });
    }
    if (sh.memory > 0) {
      AddShapeRows(
          lp, by_shape[s], sh.memory, sh.nodes, [](const PodType& t) { return t.memory; },
          [](const PodType&) { return int32_t{1}; });
    }
  }
  GPUSCHED_ASSIGN_OR_RETURN(LinearProgram::Solution s, lp.Maximize(0));
  return s.bound;
}

// The exact model (header): nullopt when it has more than `exact_max_binaries` binaries or a pod
// asks for GPU memory (which neither model sees: the result would be a bound, not a placement).
common::StatusOr<std::optional<LinearProgram::Solution>> ExactSolution(
    std::span<const api::NodePtr> nodes, std::span<const api::PodPtr> pods,
    const PackingBoundOptions& options) {
  struct Candidate {
    const api::Pod* pod;
    size_t node;
    int assign;           // its pod-on-node column
    std::vector<int> on;  // its pod-on-GPU columns
  };
  std::vector<Candidate> candidates;
  int64_t binaries = 0;
  for (const api::PodPtr& p : pods) {
    if (p->gpu.empty()) continue;
    if (p->gpu.share_memory_mib > 0 || p->gpu.share_memory_permille > 0 ||
        p->gpu.min_device_memory_mib > 0) {
      return std::optional<LinearProgram::Solution>();  // GPU memory: not modelled, so not exact
    }
    PodType t{p->requests.milli_cpu, p->requests.memory, p->gpu.count,
              p->gpu.milli,          p->gpu.models,      1};
    for (size_t n = 0; n < nodes.size(); ++n) {
      const api::Node& node = *nodes[n];
      const Shape s{node.gpu.model, HealthyGpus(node), node.allocatable.milli_cpu,
                    node.allocatable.memory, 1};
      if (s.gpus <= 0 || !Fits(t, s)) continue;
      candidates.push_back(Candidate{p.get(), n, -1, {}});
      binaries += 1 + s.gpus;
      if (binaries > options.exact_max_binaries) {
        return std::optional<LinearProgram::Solution>();
      }
    }
  }
  LinearProgram lp;
  std::map<const api::Pod*, std::vector<std::pair<int, double>>> per_pod;
  std::vector<std::vector<std::pair<int, double>>> cpu(nodes.size()), memory(nodes.size());
  std::map<std::pair<size_t, int>, std::vector<std::pair<int, double>>> per_gpu;
  for (Candidate& c : candidates) {
    const api::Pod& p = *c.pod;
    c.assign = lp.AddColumn(static_cast<double>(p.gpu.TotalMilli()), 1, true);
    per_pod[c.pod].emplace_back(c.assign, 1.0);
    // Resource rows in units of the node's allocatable (coefficients of about 1).
    const api::Node& node = *nodes[c.node];
    cpu[c.node].emplace_back(c.assign, Fraction(p.requests.milli_cpu, node.allocatable.milli_cpu));
    memory[c.node].emplace_back(c.assign, Fraction(p.requests.memory, node.allocatable.memory));
    std::vector<std::pair<int, double>> takes_count = {
        {c.assign, -static_cast<double>(p.gpu.count)}};
    for (int g = 0; g < HealthyGpus(*nodes[c.node]); ++g) {
      c.on.push_back(lp.AddColumn(0, 1, true));
      takes_count.emplace_back(c.on.back(), 1.0);
      per_gpu[{c.node, g}].emplace_back(c.on.back(), Fraction(p.gpu.milli, kMilli));
    }
    lp.AddRow(takes_count, 0, 0);  // its count of GPUs on the node it takes, none elsewhere
  }
  for (const auto& [pod, row] : per_pod) lp.AddRow(row, -LinearProgram::kInfinity, 1);
  for (size_t n = 0; n < nodes.size(); ++n) {
    if (!cpu[n].empty()) {
      lp.AddRow(cpu[n], -LinearProgram::kInfinity, 1);
      lp.AddRow(memory[n], -LinearProgram::kInfinity, 1);
    }
  }
  for (const auto& [gpu, row] : per_gpu) {
    lp.AddRow(row, -LinearProgram::kInfinity, 1);
    // Symmetry: a node's GPUs are interchangeable, so some best placement loads them in
    // non-increasing order.
    auto next = per_gpu.find({gpu.first, gpu.second + 1});
    if (next == per_gpu.end()) continue;
    std::vector<std::pair<int, double>> order = row;
    for (const auto& [col, coef] : next->second) order.emplace_back(col, -coef);
    lp.AddRow(order, 0, LinearProgram::kInfinity);
  }
  GPUSCHED_ASSIGN_OR_RETURN(LinearProgram::Solution s, lp.Maximize(options.exact_seconds));
  return std::optional<LinearProgram::Solution>(s);
}

// A bound on an allocation as whole milli (allocations are whole milli), read with a margin for
// the solvers' tolerances, which are far below a milli.
int64_t WholeMilliBound(double bound) { return static_cast<int64_t>(std::ceil(bound - 1e-6)); }

}  // namespace

double PackingBound::MinUnallocatedPct() const {
  if (capacity_milli <= 0) return 0;
  return 100.0 *
         (1.0 - static_cast<double>(max_allocated_milli) / static_cast<double>(capacity_milli));
}

common::StatusOr<PackingBound> ComputePackingBound(std::span<const api::NodePtr> nodes,
                                                   std::span<const api::PodPtr> pods,
                                                   const PackingBoundOptions& options) {
  PackingBound out;
  GPUSCHED_ASSIGN_OR_RETURN(Instance in, Group(nodes, pods, &out));
  GPUSCHED_ASSIGN_OR_RETURN(double relaxed, RelaxationBound(in));
  out.max_allocated_milli =
      std::min({WholeMilliBound(relaxed), out.capacity_milli, out.demand_milli});
  if (options.exact_max_binaries > 0) {
    GPUSCHED_ASSIGN_OR_RETURN(auto exact, ExactSolution(nodes, pods, options));
    if (exact && exact->optimal) {
      out.max_allocated_milli = std::llround(exact->objective);
      out.exact = true;
    } else if (exact) {
      out.max_allocated_milli = std::min(out.max_allocated_milli, WholeMilliBound(exact->bound));
    }
  }
  return out;
}

}  // namespace gpusched::sim::trace
