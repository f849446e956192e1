// SPDX-License-Identifier: Apache-2.0
// Defaults, the plugin merge rule and the adaptive node count. Decoding is in decode.cc and
// validation in validate.cc.
#include "src/config/config.h"

#include <algorithm>
#include <utility>

namespace gpusched::config {
namespace {

constexpr int kNumPoints = static_cast<int>(Point::kCount);

PluginRef Ref(std::string_view name, int32_t weight = 0) {
  return PluginRef{std::string(name), weight, "(default)"};
}

bool HasName(const std::vector<PluginRef>& refs, std::string_view name) {
  return std::any_of(refs.begin(), refs.end(), [&](const PluginRef& r) { return r.name == name; });
}

// Adds `entry` to `list`: replaces the entry of the same name in place (keeping its weight when
// entry's is unset), or appends it.
void ReplaceOrAppend(std::vector<PluginRef>& list, const PluginRef& entry) {
  for (PluginRef& existing : list) {
    if (existing.name == entry.name) {
      const int32_t old_weight = existing.weight;
      existing = entry;
      if (existing.weight == 0) existing.weight = old_weight;
      return;
    }
  }
  list.push_back(entry);
}

// Drops the entries of `list` that `set.disabled` names (all of them for "*").
void DropDisabled(std::vector<PluginRef>& list, const PluginSet& set) {
  if (HasName(set.disabled, "*")) {
    list.clear();
    return;
  }
  std::erase_if(list, [&](const PluginRef& r) { return HasName(set.disabled, r.name); });
}

}  // namespace

std::string_view PointName(Point p) {
  switch (p) {
    case Point::kPreEnqueue: return "preEnqueue";
    case Point::kQueueSort: return "queueSort";
    case Point::kPreFilter: return "preFilter";
    case Point::kFilter: return "filter";
    case Point::kPostFilter: return "postFilter";
    case Point::kPreScore: return "preScore";
    case Point::kScore: return "score";
    case Point::kReserve: return "reserve";
    case Point::kPermit: return "permit";
    case Point::kPreBind: return "preBind";
    case Point::kBind: return "bind";
    case Point::kPostBind: return "postBind";
    case Point::kMultiPoint: return "multiPoint";
    case Point::kCount: break;
  }
  return "unknown";
}

const PluginConfig* Profile::ConfigFor(std::string_view plugin) const {
  for (const PluginConfig& pc : plugin_config) {
    if (pc.name == plugin) return &pc;
  }
  return nullptr;
}

const boost::json::value* Profile::ArgsFor(std::string_view plugin) const {
  const PluginConfig* pc = ConfigFor(plugin);
  return pc != nullptr ? &pc->args : nullptr;
}

const Profile* SchedulerConfig::FindProfile(std::string_view scheduler_name) const {
  for (const Profile& p : profiles) {
    if (p.scheduler_name == scheduler_name) return &p;
  }
  return nullptr;
}

Plugins DefaultPlugins() {
  // As upstream's v1 defaults, one multiPoint list: each plugin runs at every point it
  // implements (so NodeResourcesFit also runs its PreFilter, TaintToleration its PreScore, GpuFit
  // its PreFilter/PreScore/Reserve). Weights apply at Score.
  //
  // GPU placement (docs/gpu-placement.md, "The default profile"): GpuFragmentation (policy
  // Learned) scores every pod and chooses the devices at Reserve; GpuFit filters (model, memory,
  // free and healthy devices). GpuFit's own node score (bin-packing by free GPU milli) and
  // NodeResourcesFit's LeastAllocated score are off at Score: both rank nodes by a different
  // resource measure than GpuFragmentation's and, summed with it, undo its packing (spreading CPU
  // strands GPUs); GpuFragmentation accounts for CPU itself. Both still filter.
  //
  // Upstream's defaults also include NodeResourcesBalancedAllocation (weight 1). It is left out:
  // it prefers nodes whose CPU and memory fractions are equal, another resource measure summed
  // with GpuFragmentation's, and on the openb traces it leaves more GPUs unallocated (issue #22,
  // BENCHMARKS.md "NodePorts, BalancedAllocation and ImageLocality in the default profile").
  // Profiles may enable it. NodePorts and ImageLocality (weight 1) are in, as upstream.
  //
  // Consolidation (PostFilter, after DefaultPreemption) moves only pods that opted in
  // (gpusched.io/movable: "true"); with none, it changes nothing (docs/consolidation.md).
  Plugins p;
  p.at(Point::kMultiPoint).enabled = {Ref("PrioritySort"),
                                      Ref("NodeUnschedulable"),
                                      Ref("NodeName"),
                                      Ref("TaintToleration", 3),
                                      Ref("NodeAffinity", 2),
                                      Ref("NodePorts"),
                                      Ref("NodeResourcesFit", 1),
                                      Ref("VolumeRestrictions"),
                                      Ref("NodeVolumeLimits"),
                                      Ref("VolumeBinding"),
                                      Ref("VolumeZone"),
                                      Ref("GpuFit", 5),
                                      Ref("GpuFragmentation", kGpuFragmentationWeight),
                                      Ref("PodTopologySpread", 2),
                                      Ref("InterPodAffinity", 2),
                                      Ref("DynamicResources", 2),
                                      Ref("DefaultPreemption"),
                                      Ref("Consolidation"),
                                      Ref("ImageLocality", 1),
                                      Ref("NetworkLocality", kNetworkLocalityWeight),
                                      Ref("GangScheduling"),
                                      Ref("DefaultBinder")};
  // NetworkLocality skips pods that declare no traffic; its TopologicalSort is not the queue
  // order (PrioritySort is). GangScheduling skips pods in no gang.
  p.at(Point::kQueueSort).disabled = {Ref("NetworkLocality")};
  p.at(Point::kScore).disabled = {Ref("GpuFit"), Ref("NodeResourcesFit")};
  p.at(Point::kReserve).disabled = {Ref("GpuFit")};
  return p;
}

SchedulerConfig DefaultSchedulerConfig() {
  SchedulerConfig config;
  Profile profile;
  profile.path = "profiles[0]";
  config.profiles.push_back(std::move(profile));
  return config;
}

Plugins EffectivePlugins(const Profile& profile,
                         const std::function<bool(std::string_view, Point)>& implements) {
  const Plugins defaults = DefaultPlugins();
  const PluginSet& multi = profile.plugins.at(Point::kMultiPoint);
  const std::string prefix =
      (profile.path.empty() ? std::string("profile") : profile.path) + ".plugins.";
  Plugins out;
  for (int i = 0; i < kNumPoints; ++i) {
    const Point point = static_cast<Point>(i);
    if (point == Point::kMultiPoint) continue;
    const PluginSet& specific = profile.plugins.at(point);
    // Level 1: the defaults (a multiPoint list, expanded to the points each plugin implements).
    std::vector<PluginRef> list;
    for (const PluginRef& d : defaults.at(Point::kMultiPoint).enabled) {
      if (!implements || !implements(d.name, point)) continue;
      PluginRef r = d;
      if (point != Point::kScore) r.weight = 0;  // weights mean something only at Score
      list.push_back(std::move(r));
    }
    for (const PluginRef& d : defaults.at(point).enabled) list.push_back(d);
    DropDisabled(list, defaults.at(point));
    for (PluginRef& r : list) r.path = prefix + std::string(PointName(point)) + " (default)";
    // Level 2: multiPoint. Its disabled names drop defaults; its enabled entries expand to every
    // point they implement, unless the point itself disables them.
    DropDisabled(list, multi);
    const bool point_disables_all = HasName(specific.disabled, "*");
    for (const PluginRef& entry : multi.enabled) {
      if (entry.name.empty() || entry.name == "*" || point_disables_all) continue;
      if (HasName(specific.disabled, entry.name)) continue;
      if (!implements || !implements(entry.name, point)) continue;
      PluginRef r = entry;
      if (point != Point::kScore) r.weight = 0;
      ReplaceOrAppend(list, r);
    }
    // Level 3: the point itself.
    DropDisabled(list, specific);
    for (const PluginRef& entry : specific.enabled) {
      if (entry.name.empty() || entry.name == "*") continue;
      ReplaceOrAppend(list, entry);
    }
    out.at(point).enabled = std::move(list);
  }
  return out;
}

int32_t NumNodesToScore(int32_t num_all_nodes, int32_t percentage) {
  constexpr int64_t kMinFeasibleNodesToFind = 100;
  constexpr int64_t kMinFeasibleNodesPercentageToFind = 5;
  const int64_t n = num_all_nodes;
  if (n <= 0) return 0;
  if (n < kMinFeasibleNodesToFind) return num_all_nodes;
  int64_t pct = std::clamp<int64_t>(percentage, 0, 100);
  if (pct == 0) pct = std::max(kMinFeasibleNodesPercentageToFind, 50 - n / 125);
  const int64_t num = n * pct / 100;
  return static_cast<int32_t>(std::max(num, kMinFeasibleNodesToFind));
}

}  // namespace gpusched::config
