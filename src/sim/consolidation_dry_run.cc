// SPDX-License-Identifier: Apache-2.0
#include "src/sim/consolidation_dry_run.h"

#include <algorithm>
#include <boost/json.hpp>
#include <cstdio>
#include <functional>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <string_view>
#include <utility>

#include "src/api/gpu.h"
#include "src/common/interner.h"
#include "src/common/strings.h"
#include "src/framework/runtime/framework.h"

namespace gpusched::sim {
namespace {

// The plugin's registered name (src/plugins/names.h; the simulator links no plugin).
constexpr std::string_view kConsolidation = "Consolidation";
constexpr std::string_view kProbeNamespace = "gpusched-dry-run";

// Probe sizes, largest first: every GPU node's count and its halvings, down to 2.
std::vector<int32_t> ProbeSizes(const SimCluster& cluster) {
  std::set<int32_t, std::greater<>> sizes;
  for (const auto& [node, usage] : cluster.NodesWithUsage()) {
    for (int32_t n = node->gpu.count; n >= 2; n /= 2) sizes.insert(n);
  }
  return {sizes.begin(), sizes.end()};
}

// The GPU nodes' own NoSchedule/NoExecute taints (not the node lifecycle's node.kubernetes.io/
// ones: a cordoned or unready node stays out), as tolerations a GPU pod of the cluster carries.
boost::json::array GpuTaintTolerations(const SimCluster& cluster) {
  std::set<std::pair<std::string, std::string>> seen;
  for (const auto& [node, usage] : cluster.NodesWithUsage()) {
    if (node->gpu.count == 0) continue;
    for (const api::Taint& t : node->taints) {
      std::string key(common::Str(t.key));
      if (key.starts_with("node.kubernetes.io/")) continue;
      if (t.effect == api::TaintEffect::kNoSchedule) seen.emplace(key, "NoSchedule");
      if (t.effect == api::TaintEffect::kNoExecute) seen.emplace(key, "NoExecute");
    }
  }
  boost::json::array out;
  for (const auto& [key, effect] : seen) {
    out.push_back({{"key", key}, {"operator", "Exists"}, {"effect", effect}});
  }
  return out;
}

// The highest priority of the pods running now: every opted-in pod is movable for the probes.
int32_t HighestRunningPriority(const Simulator& sim) {
  int32_t highest = 0;
  for (const PodOutcome& o : sim.outcomes()) {
    const bool running = o.state == PodState::kScheduled || o.state == PodState::kPreBound;
    if (running && !o.deleted) highest = std::max(highest, o.pod->priority);
  }
  return highest;
}

struct ProbeTemplate {
  std::string profile;
  int32_t priority = 0;
  boost::json::array tolerations;
};

// The probe pod asking `gpus` GPUs, decoded as any manifest is.
common::StatusOr<api::PodPtr> MakeProbe(const ProbeTemplate& t, int32_t gpus, int32_t n) {
  boost::json::object container{
      {"name", "probe"}, {"resources", {{"limits", {{"nvidia.com/gpu", std::to_string(gpus)}}}}}};
  boost::json::object spec{{"schedulerName", t.profile},
                           {"priority", t.priority},
                           {"preemptionPolicy", "Never"},
                           {"tolerations", t.tolerations},
                           {"containers", boost::json::array{container}}};
  const std::string name = "probe-" + std::to_string(gpus) + "gpu-" + std::to_string(n);
  boost::json::object pod{{"apiVersion", "v1"},
                          {"kind", "Pod"},
                          {"metadata", {{"name", name}, {"namespace", kProbeNamespace}}},
                          {"spec", spec}};
  Workload w;
  GPUSCHED_RETURN_IF_ERROR(AppendManifests(boost::json::serialize(pod), "probe", w));
  if (w.pods.size() != 1) {
    return common::InternalError("probe pod " + name + " did not decode: " +
                                 (w.rejected.empty() ? "" : w.rejected.front().ToString()));
  }
  return w.pods.front();
}

// A probe's scheduling message without DefaultPreemption's note on the probe's own policy.
std::string ProbeMessage(std::string message) {
  static constexpr std::string_view kPolicyNote =
      "preemption: not eligible due to preemptionPolicy=Never., ";
  if (size_t at = message.find(kPolicyNote); at != std::string::npos) {
    message.erase(at, kPolicyNote.size());
  }
  return message;
}

std::string ModelOf(const SimCluster& cluster, const std::string& node) {
  for (const auto& [n, usage] : cluster.NodesWithUsage()) {
    if (n->meta.name == node) return std::string(common::Str(n->gpu.model));
  }
  return "";
}

// Probes of one size until one finds no room; appends the plans, fills the row.
common::Status ProbeSize(Simulator& sim, const ProbeTemplate& t, int32_t gpus, int64_t bound,
                         DryRunResult& out, std::vector<std::string>& probe_uids) {
  SizeRow row;
  row.gpus = gpus;
  for (int64_t n = 1; n <= bound; ++n) {
    GPUSCHED_ASSIGN_OR_RETURN(api::PodPtr probe, MakeProbe(t, gpus, static_cast<int32_t>(n)));
    const size_t plans_before = sim.preemptions().size();
    GPUSCHED_ASSIGN_OR_RETURN(size_t index, sim.SubmitWorkloadPod(probe));
    const PodOutcome& o = sim.outcomes()[index];
    const std::string uid = o.pod->meta.uid;
    if (o.state == PodState::kScheduled) {
      ++row.free_now;
      probe_uids.push_back(uid);
      continue;
    }
    const bool planned = sim.preemptions().size() > plans_before &&
                         sim.preemptions().back().pod == o.pod->Key() &&
                         sim.preemptions().back().moves();
    if (!planned) {
      row.next = ProbeMessage(o.message);
      GPUSCHED_RETURN_IF_ERROR(sim.RemovePod(uid));
      break;
    }
    const Preemption& p = sim.preemptions().back();
    RoomPlan plan{p.pod, gpus, p.node, ModelOf(sim.cluster(), p.node), {}, false};
    for (const std::string& victim : p.victims) plan.moves.push_back({victim, p.node, "", ""});
    out.moves += static_cast<int32_t>(plan.moves.size());
    out.plans.push_back(std::move(plan));
    ++row.made;
    probe_uids.push_back(uid);
  }
  out.sizes.push_back(std::move(row));
  return common::Status::Ok();
}

// After Settle: whether each probe bound where its room was planned, and where each moved pod's
// replacement runs.
void ReadOutcomes(const Simulator& sim, DryRunResult& out) {
  std::map<std::string, const PodOutcome*> replacement_of;  // moved pod -> its replacement
  std::map<std::string, const PodOutcome*> probe_of;        // namespace/name -> outcome
  for (const PodOutcome& o : sim.outcomes()) {
    if (o.replaces_moved) replacement_of[o.replaces] = &o;
    if (o.pod->meta.namespace_ == kProbeNamespace) probe_of[o.pod->Key()] = &o;
  }
  for (RoomPlan& plan : out.plans) {
    auto probe = probe_of.find(plan.probe);
    plan.held = probe != probe_of.end() && probe->second->state == PodState::kScheduled &&
                probe->second->node == plan.node;
    for (PlannedMove& m : plan.moves) {
      auto r = replacement_of.find(m.pod);
      if (r == replacement_of.end()) {
        m.message = "no controller recreated it";
      } else if (r->second->state == PodState::kScheduled ||
                 r->second->state == PodState::kMoved) {  // it ran there, then moved for a
                                                          // later room: a move of its own
        m.to = r->second->node;
      } else {
        m.message = r->second->message;
      }
    }
  }
}

boost::json::object FreeGpusJson(const FreeGpus& f) {
  return {{"gpuNodes", f.gpu_nodes},
          {"gpus", f.gpus},
          {"freeGpus", f.free_gpus},
          {"freeNodes", f.free_nodes},
          {"freeGpusOnFreeNodes", f.free_gpus_on_free_nodes},
          {"largestFreeBlock", f.largest_free_block}};
}

}  // namespace

FreeGpus FreeGpusOf(const SimCluster& cluster) {
  FreeGpus f;
  for (const auto& [node, usage] : cluster.NodesWithUsage()) {
    const int32_t count = std::min(node->gpu.count, api::kMaxGpusPerNode);
    if (count <= 0) continue;
    int32_t free = 0;
    for (int32_t d = 0; d < count; ++d) free += usage.gpu_milli[static_cast<size_t>(d)] == 0;
    ++f.gpu_nodes;
    f.gpus += count;
    f.free_gpus += free;
    if (free == count) {
      ++f.free_nodes;
      f.free_gpus_on_free_nodes += free;
    }
    f.largest_free_block = std::max(f.largest_free_block, free);
  }
  return f;
}

config::SchedulerConfig DryRunConfig(config::SchedulerConfig config, int32_t max_moves) {
  if (config.profiles.empty()) return config;
  config::Profile& profile = config.profiles.front();
  auto it = std::find_if(profile.plugin_config.begin(), profile.plugin_config.end(),
                         [](const config::PluginConfig& pc) { return pc.name == kConsolidation; });
  if (it == profile.plugin_config.end()) {
    profile.plugin_config.push_back(
        {std::string(kConsolidation), boost::json::object(), profile.path + ".pluginConfig"});
    it = std::prev(profile.plugin_config.end());
  }
  if (!it->args.is_object()) it->args = boost::json::object();
  it->args.as_object()["maxMovesPerMinute"] = max_moves;
  return config;
}

common::StatusOr<DryRunResult> PlanConsolidationMoves(Simulator& sim, int32_t max_moves) {
  DryRunResult out;
  out.max_moves = max_moves;
  out.profile = sim.config().profiles.front().scheduler_name;
  auto* framework = sim.scheduler().FrameworkFor(out.profile);
  if (framework == nullptr || !framework->HasPostFilterPlugin(kConsolidation)) {
    return common::InvalidArgumentError("profile " + common::Quote(out.profile) +
                                        " does not run the Consolidation plugin at postFilter: "
                                        "there are no moves to plan");
  }
  out.before = FreeGpusOf(sim.cluster());
  // The probes keep the priority they are given: a global default class would replace it.
  std::vector<api::PriorityClass> classes = sim.priority_classes();
  for (api::PriorityClass& c : classes) c.global_default = false;
  sim.SetPriorityClasses(std::move(classes));
  sim.SetArrivalInterval(common::Duration(0));  // every plan in the plugin's one-minute window

  const ProbeTemplate t{out.profile, HighestRunningPriority(sim),
                        GpuTaintTolerations(sim.cluster())};
  std::vector<std::string> probe_uids;
  for (int32_t gpus : ProbeSizes(sim.cluster())) {
    GPUSCHED_RETURN_IF_ERROR(ProbeSize(sim, t, gpus, out.before.gpus / gpus + 1, out, probe_uids));
  }
  GPUSCHED_RETURN_IF_ERROR(sim.Settle());
  ReadOutcomes(sim, out);
  for (const std::string& uid : probe_uids) {
    if (common::Status s = sim.RemovePod(uid);
        !s.ok() && s.code() != common::StatusCode::kNotFound) {
      return s;
    }
  }
  out.after = FreeGpusOf(sim.cluster());
  return out;
}

std::string FormatDryRunText(const DryRunResult& r) {
  std::ostringstream os;
  os << "Consolidation dry run: profile " << r.profile << ", at most " << r.max_moves
     << " moves (--max-moves)\n\n";
  if (r.sizes.empty()) {
    os << "No GPU node has 2 GPUs or more: there is no larger room to make.\n";
  } else {
    os << "Room for GPU pods, largest first (each size after the larger ones took theirs):\n";
    os << "  GPUS  FREE NOW  MADE BY MOVES  NO MORE BECAUSE\n";
    for (const SizeRow& s : r.sizes) {
      char line[64];
      std::snprintf(line, sizeof line, "  %-4d  %-8d  %-13d  ", s.gpus, s.free_now, s.made);
      os << line << (s.next.empty() ? "-" : s.next) << "\n";
    }
  }
  os << "\nMoves (" << r.moves << "):\n";
  if (r.plans.empty()) {
    os << "  none: no opted-in pod's move makes room (pods opt in with the annotation "
          "gpusched.io/movable: \"true\", or through ConsolidationArgs)\n";
  }
  for (const RoomPlan& p : r.plans) {
    os << "  room for " << p.gpus << " GPUs on " << p.node;
    if (!p.model.empty()) os << " (" << p.model << ")";
    os << (p.held ? "" : " — NOT HELD: the probe did not bind there") << "\n";
    for (const PlannedMove& m : p.moves) {
      os << "    " << m.pod << "  " << m.from << " -> "
         << (m.to.empty() ? "(not placed: " + m.message + ")" : m.to) << "\n";
    }
  }
  const auto row = [&os](std::string_view name, int64_t before, int64_t after) {
    char line[96];
    std::snprintf(line, sizeof line, "  %-22s %8lld %8lld\n", std::string(name).c_str(),
                  static_cast<long long>(before), static_cast<long long>(after));
    os << line;
  };
  os << "\nFree whole GPUs            before    after\n";
  row("free GPUs", r.before.free_gpus, r.after.free_gpus);
  row("GPU nodes all free", r.before.free_nodes, r.after.free_nodes);
  row("free GPUs on them", r.before.free_gpus_on_free_nodes, r.after.free_gpus_on_free_nodes);
  row("largest free block", r.before.largest_free_block, r.after.largest_free_block);
  return os.str();
}

boost::json::value DryRunJson(const DryRunResult& r) {
  boost::json::array sizes;
  for (const SizeRow& s : r.sizes) {
    sizes.push_back(
        {{"gpus", s.gpus}, {"freeNow", s.free_now}, {"madeByMoves", s.made}, {"next", s.next}});
  }
  boost::json::array plans;
  for (const RoomPlan& p : r.plans) {
    boost::json::array moves;
    for (const PlannedMove& m : p.moves) {
      moves.push_back({{"pod", m.pod}, {"from", m.from}, {"to", m.to}, {"message", m.message}});
    }
    plans.push_back({{"probe", p.probe},
                     {"gpus", p.gpus},
                     {"node", p.node},
                     {"model", p.model},
                     {"held", p.held},
                     {"moves", std::move(moves)}});
  }
  return boost::json::object{{"profile", r.profile},
                             {"maxMoves", r.max_moves},
                             {"moves", r.moves},
                             {"sizes", std::move(sizes)},
                             {"plans", std::move(plans)},
                             {"before", FreeGpusJson(r.before)},
                             {"after", FreeGpusJson(r.after)}};
}

}  // namespace gpusched::sim
