// SPDX-License-Identifier: Apache-2.0
#include "src/plugins/node_resources_balanced_allocation/node_resources_balanced_allocation.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <utility>

#include "src/api/resources.h"
#include "src/common/strings.h"
#include "src/plugins/helper/args.h"
#include "src/plugins/helper/resources.h"
#include "src/plugins/names.h"

namespace gpusched::plugins::node_resources_balanced_allocation {
namespace {

const framework::StateKey kPreScoreKey{"NodeResourcesBalancedAllocation/PreScore"};

// Upstream's IsScalarResourceName: extended, hugepages-*, kubernetes.io/* and
// attachable-volumes-* resources. A pod that does not request one is not scored on it.
bool IsScalarResourceName(std::string_view name) {
  return helper::IsExtendedResourceName(name) || name.starts_with("hugepages-") ||
         name.starts_with("kubernetes.io/") || name.starts_with("attachable-volumes-");
}

// balancedResourceScorer over the fractions fraction(i), i < n, where fraction(i) < 0 means
// "left out". Two passes (mean, then deviation), so nothing is stored.
template <typename FractionAt>
int64_t ScoreFractions(size_t n, FractionAt fraction) {
  double total = 0;
  size_t count = 0;
  double first = 0;
  double second = 0;
  for (size_t i = 0; i < n; ++i) {
    const double f = fraction(i);
    if (f < 0) continue;
    if (count == 0) first = f;
    if (count == 1) second = f;
    total += f;
    ++count;
  }
  double std_dev = 0;
  if (count == 2) {
    std_dev = std::abs((first - second) / 2);
  } else if (count > 2) {
    const double mean = total / static_cast<double>(count);
    double sum = 0;
    for (size_t i = 0; i < n; ++i) {
      const double f = fraction(i);
      if (f >= 0) sum += (f - mean) * (f - mean);
    }
    std_dev = std::sqrt(sum / static_cast<double>(count));
  }
  return static_cast<int64_t>((1 - std_dev) * static_cast<double>(framework::kMaxNodeScore));
}

// min(1, requested / allocatable), or -1 (left out) when allocatable is 0.
double Fraction(int64_t requested, int64_t allocatable) {
  if (allocatable == 0) return -1;
  return std::min(1.0, static_cast<double>(requested) / static_cast<double>(allocatable));
}

// resources[i]: {name, weight}; upstream accepts weight 1 alone (0 reads as the default, 1).
void ParseResource(api::ObjectFields& r, Args& out) {
  if (std::optional<std::string_view> name = r.RequiredString("name")) {
    if (std::find(out.resources.begin(), out.resources.end(), *name) != out.resources.end()) {
      r.Error("name", "duplicate resource " + common::Quote(*name));
    } else {
      out.resources.emplace_back(*name);
    }
  }
  if (std::optional<int64_t> w = r.Int("weight"); w && *w != 0 && *w != 1) {
    r.Error("weight", "must be 1, got " + std::to_string(*w));
  }
}

}  // namespace

struct BalancedAllocation::PreScoreState final : framework::StateData {
  std::vector<int64_t> request;  // parallel to resources_
};

common::StatusOr<Args> ParseArgs(const boost::json::value& args) {
  Args out;
  GPUSCHED_RETURN_IF_ERROR(helper::ReadArgs(args, [&](api::ObjectFields& f) {
    f.ForEachObject("resources", [&](const boost::json::object& o, const api::FieldPath& path) {
      api::ObjectFields r(f.reader(), o, path);
      ParseResource(r, out);
    });
  }));
  if (out.resources.empty()) out.resources = {"cpu", "memory"};
  return out;
}

int64_t BalancedScore(std::span<const int64_t> requested, std::span<const int64_t> allocatable) {
  return ScoreFractions(requested.size(),
                        [&](size_t i) { return Fraction(requested[i], allocatable[i]); });
}

common::StatusOr<framework::PluginPtr> BalancedAllocation::Create(const boost::json::value& args,
                                                                  framework::Handle& /*handle*/) {
  GPUSCHED_ASSIGN_OR_RETURN(Args parsed, ParseArgs(args));
  return framework::PluginPtr(std::make_unique<BalancedAllocation>(parsed));
}

BalancedAllocation::BalancedAllocation(const Args& args) {
  const api::WellKnown& wk = api::Names();
  for (const std::string& name : args.resources) {
    Resource r;
    r.name = common::Intern(name);
    if (r.name == wk.cpu) {
      r.kind = Kind::kCpu;
    } else if (r.name == wk.memory) {
      r.kind = Kind::kMemory;
    } else if (r.name == wk.ephemeral_storage) {
      r.kind = Kind::kEphemeralStorage;
    } else if (r.name == wk.pods) {
      r.kind = Kind::kPods;
    } else if (IsScalarResourceName(name)) {
      r.kind = Kind::kScalar;
    }
    resources_.push_back(r);
  }
}

std::string_view BalancedAllocation::Name() const {
  return names::kNodeResourcesBalancedAllocation;
}

int64_t BalancedAllocation::AmountOf(const api::ResourceList& list, const Resource& r) {
  switch (r.kind) {
    case Kind::kCpu: return list.milli_cpu;
    case Kind::kMemory: return list.memory;
    case Kind::kEphemeralStorage: return list.ephemeral_storage;
    case Kind::kPods: return 0;  // upstream reads "pods" from the scalar map, where it never is
    default: return list.Get(r.name);
  }
}

framework::Status BalancedAllocation::PreScore(framework::CycleState& state, const api::Pod& pod,
                                               const framework::Snapshot& /*snapshot*/,
                                               std::span<const framework::NodeIndex> /*feasible*/) {
  auto s = std::make_unique<PreScoreState>();
  s->request.reserve(resources_.size());
  bool any = false;
  for (const Resource& r : resources_) {
    s->request.push_back(AmountOf(pod.requests, r));
    any = any || s->request.back() != 0;
  }
  if (!any) return framework::Status::Skip();
  state.Write(kPreScoreKey, std::move(s));
  return framework::Status::Success();
}

int64_t BalancedAllocation::ScoreOne(const PreScoreState& s,
                                     const framework::NodeInfo& node) const {
  const api::ResourceList& alloc = node.node->allocatable;
  return ScoreFractions(resources_.size(), [&](size_t i) {
    const Resource& r = resources_[i];
    if (r.kind == Kind::kScalar && s.request[i] == 0) return -1.0;
    return Fraction(AmountOf(node.requested, r) + s.request[i], AmountOf(alloc, r));
  });
}

void BalancedAllocation::ScoreNodes(const framework::CycleState& state, const api::Pod& /*pod*/,
                                    const framework::Snapshot& snapshot,
                                    std::span<const framework::NodeIndex> nodes,
                                    std::span<int64_t> out) const {
  const auto* s = state.Get<PreScoreState>(kPreScoreKey);
  framework::ScoreEach(snapshot, nodes, out, [this, s](const framework::NodeInfo& node) {
    return s == nullptr ? 0 : ScoreOne(*s, node);
  });
}

}  // namespace gpusched::plugins::node_resources_balanced_allocation
