// SPDX-License-Identifier: Apache-2.0
#include "src/sim/report.h"

#include <algorithm>
#include <boost/json.hpp>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <string_view>

#include "src/api/gpu.h"
#include "src/api/resources.h"

namespace gpusched::sim {
namespace {

namespace json = boost::json;

std::string Fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", digits, v);
  return buf;
}

std::string Percent(int64_t part, int64_t whole) {
  if (whole <= 0) return "-";
  return Fixed(100.0 * static_cast<double>(part) / static_cast<double>(whole), 1) + "%";
}

std::string Gpus(int64_t milli) {
  // Whole GPUs print without decimals; fractions with up to three.
  if (milli % api::kMilliPerGpu == 0) return std::to_string(milli / api::kMilliPerGpu);
  return Fixed(static_cast<double>(milli) / api::kMilliPerGpu, 3);
}

// The node of an allocation: the one node its node selector names (node-local devices), else the
// node of a pod it is reserved for.
std::string ClaimNode(const api::ResourceClaim& claim, const Simulator& sim) {
  if (!claim.allocation) return "";
  if (const auto& sel = claim.allocation->node_selector;
      sel && sel->terms.size() == 1 && sel->terms[0].match_fields_names_in.size() == 1) {
    return sel->terms[0].match_fields_names_in[0];
  }
  for (const api::ClaimConsumer& c : claim.reserved_for) {
    if (api::PodPtr p = sim.cluster().GetPod(c.uid); p != nullptr && !p->node_name.empty()) {
      return p->node_name;
    }
  }
  return "";
}

// The normalised model of a DRA device that is a GPU: its attribute productName (any domain, as
// NVIDIA's DRA driver publishes it); "" for other devices.
std::string DraGpuModel(const api::Device& device) {
  for (const auto& [name, value] : device.attributes) {
    const size_t slash = name.rfind('/');
    const std::string_view id = slash == std::string::npos
                                    ? std::string_view(name)
                                    : std::string_view(name).substr(slash + 1);
    if (id == "productName" && value.kind == api::DeviceAttribute::Kind::kString) {
      return api::NormalizeGpuModel(value.string_value);
    }
  }
  return "";
}

// The GPUs published through DRA, counted per model into `models` (and their nodes into
// `model_nodes`): a device drawing on a counter set (a MIG partition) counts as that set's GPU,
// once, allocated as far as its most used counter is; another device is one GPU, allocated whole
// while a claim holds it, or (shared, KEP-5075) as far as its shares use its most used capacity.
void AddDraGpus(const Simulator& sim, std::map<std::string, ModelRow>& models,
                std::map<std::string, std::set<std::string>>& model_nodes) {
  const framework::DraView& view = sim.dra();
  const std::shared_ptr<const framework::DeviceIndex> index = view.devices();
  const std::shared_ptr<const framework::DeviceUsage> usage = view.usage();
  if (index->devices.empty() || usage->index_version != index->version) return;
  auto used_milli = [&](uint32_t counter) {  // used / capacity of one counter, 0..1000
    const int64_t cap = index->counters[counter].capacity;
    return cap <= 0 ? 0 : std::clamp<int64_t>(usage->counter_used[counter] * 1000 / cap, 0, 1000);
  };
  std::map<uint32_t, int64_t> set_milli;  // per counter set: its most used counter
  for (uint32_t c = 0; c < index->counters.size(); ++c) {
    int64_t& m = set_milli[index->counters[c].set];
    m = std::max(m, used_milli(c));
  }
  std::set<uint32_t> sets_seen;
  for (uint32_t d = 0; d < index->devices.size(); ++d) {
    const framework::DeviceEntry& e = index->devices[d];
    const std::string model = DraGpuModel(*e.device);
    if (model.empty()) continue;
    const std::span<const framework::CounterDraw> draws = index->Draws(d);
    int64_t milli = 0;
    if (!draws.empty()) {
      const uint32_t set = index->counters[draws.front().counter].set;
      if (!sets_seen.insert(set).second) continue;
      milli = set_milli[set];
    } else if (e.shared && e.capacity_begin < e.capacity_end) {
      for (uint32_t c = e.capacity_begin; c < e.capacity_end && usage->shares[d] > 0; ++c) {
        milli = std::max(milli, used_milli(c));
      }
    } else {
      milli = usage->holder[d] != nullptr || usage->shares[d] > 0 ? api::kMilliPerGpu : 0;
    }
    ModelRow& m = models[model];
    ++m.gpus_total;
    ++m.dra_gpus_total;
    m.milli_total += api::kMilliPerGpu;
    m.milli_allocated += milli;
    if (milli > 0) {
      ++m.gpus_allocated;
      ++m.dra_gpus_allocated;
    }
    model_nodes[model].insert(e.slice->node_name.empty() ? "(not node-local)" : e.slice->node_name);
  }
}

std::vector<ClaimRow> ClaimRows(const Simulator& sim) {
  std::vector<ClaimRow> rows;
  for (const api::ResourceClaimPtr& c : sim.cluster().Claims()) {
    ClaimRow row;
    row.claim = c->meta.namespace_ + "/" + c->meta.name;
    row.node = ClaimNode(*c, sim);
    if (c->allocation) {
      for (const api::DeviceResult& d : c->allocation->devices) {
        row.devices.push_back(d.driver + "/" + d.pool + "/" + d.device);
      }
    }
    for (const api::ClaimConsumer& p : c->reserved_for) {
      row.reserved_for.push_back(c->meta.namespace_ + "/" + p.name +
                                 (p.resource == api::kPodGroupsResource ? " (PodGroup)" : ""));
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string FormatClaimsText(const std::vector<ClaimRow>& claims, size_t max_listed) {
  if (claims.empty()) return {};
  size_t allocated = 0;
  for (const ClaimRow& c : claims) allocated += c.devices.empty() ? 0 : 1;
  std::string out = "\nResource claims: " + std::to_string(claims.size()) + ", allocated " +
                    std::to_string(allocated) + "\n";
  std::vector<std::vector<std::string>> rows = {{"CLAIM", "NODE", "DEVICES", "RESERVED FOR"}};
  for (size_t i = 0; i < claims.size() && i < max_listed; ++i) {
    const ClaimRow& c = claims[i];
    std::string devices;
    for (const std::string& d : c.devices) devices += (devices.empty() ? "" : ",") + d;
    std::string pods;
    for (const std::string& p : c.reserved_for) pods += (pods.empty() ? "" : ",") + p;
    rows.push_back({c.claim, c.node.empty() ? "-" : c.node, devices.empty() ? "-" : devices,
                    pods.empty() ? "-" : pods});
  }
  // Left-aligned columns: device lists vary in length.
  std::vector<size_t> width(4, 0);
  for (const auto& r : rows) {
    for (size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
  }
  for (const auto& r : rows) {
    std::string line = " ";
    for (size_t i = 0; i < r.size(); ++i) {
      line += " " + r[i] + (i + 1 < r.size() ? std::string(width[i] - r[i].size() + 1, ' ') : "");
    }
    out += line + "\n";
  }
  if (claims.size() > max_listed) {
    out += "  ... and " + std::to_string(claims.size() - max_listed) + " more\n";
  }
  return out;
}

// Every submitted pod, in arrival order: its node and devices, or why not.
std::vector<PlacementRow> PlacementRows(const Simulator& sim) {
  std::vector<PlacementRow> rows;
  for (const PodOutcome& o : sim.outcomes()) {
    PlacementRow row{o.pod->Key(), o.node, {}, 0, std::string(PodStateName(o.state)), o.message};
    // A placed pod that left (time replay: its duration ran out) keeps its node and devices.
    if (o.deleted && o.state == PodState::kScheduled) row.state = "Completed";
    if (row.message.empty() && !o.replaces.empty())
      row.message = (o.replaces_moved ? "replaces moved " : "replaces preempted ") + o.replaces;
    for (int8_t d : o.gpu.devices) row.gpu_devices.push_back(d);
    row.gpu_milli = o.gpu.milli;
    // A pod that arrived bound keeps the devices its annotation names, if any.
    const std::string* devices = o.pod->meta.Annotation(api::kPodGpuDevicesAnnotation);
    if (o.state == PodState::kPreBound && devices != nullptr) {
      if (auto a = api::ParseGpuAssignment(*devices); a.ok()) {
        for (int8_t d : a->devices) row.gpu_devices.push_back(d);
        row.gpu_milli = a->milli;
      }
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

// Simulator::fill_curve as % of the cluster's nvidia.com/gpu milli (`models` before the DRA GPUs
// are added), ending with the run's end; empty when the cluster has no such GPU.
std::vector<FillRow> FillRows(const Simulator& sim, const std::map<std::string, ModelRow>& models) {
  int64_t total = 0;
  int64_t used = 0;
  for (const auto& [name, m] : models) {
    total += m.milli_total;
    used += m.milli_allocated;
  }
  std::vector<FillRow> rows;
  if (total <= 0) return rows;
  auto pct = [total](int64_t milli) {
    return 100.0 * static_cast<double>(milli) / static_cast<double>(total);
  };
  for (const FillSample& s : sim.fill_curve()) rows.push_back({s.decisions, pct(s.gpu_milli_used)});
  const int64_t decisions = sim.Stats().decisions;
  if (rows.empty() || rows.back().decisions < decisions ||
      rows.back().gpu_allocation != pct(used)) {
    rows.push_back({decisions, pct(used)});
  }
  return rows;
}

// The node's GPU model as the report names it ("(unknown)" when the node names none).
std::string ModelName(const api::Node& node) {
  return node.gpu.model.empty() ? std::string("(unknown)")
                                : std::string(common::Str(node.gpu.model));
}

}  // namespace

Report BuildReport(const Simulator& sim, std::string_view source,
                   const std::vector<std::string>& warnings,
                   const std::vector<Rejection>& rejected) {
  Report r;
  r.source = std::string(source);
  if (!sim.config().profiles.empty()) r.profile = sim.config().profiles.front().scheduler_name;
  r.stats = sim.Stats();
  if (r.stats.wall_seconds > 0) {
    r.decisions_per_second = static_cast<double>(r.stats.decisions) / r.stats.wall_seconds;
  }
  r.counters = sim.cluster().Counters();
  r.warnings = warnings;
  r.rejected = rejected;
  r.placements = PlacementRows(sim);
  r.claims = ClaimRows(sim);

  std::map<std::string, GroupRow> groups;
  std::map<std::string, ModelRow> models;
  std::map<std::string, std::set<std::string>> model_nodes;
  for (const auto& [node, usage] : sim.cluster().NodesWithUsage()) {
    ++r.nodes;
    GroupRow& g = groups[NodeGroupOf(*node)];
    ++g.nodes;
    g.pods += usage.pods;
    g.gpus_total += node->gpu.count;
    g.milli_cpu_allocatable += node->allocatable.milli_cpu;
    g.milli_cpu_requested += usage.milli_cpu;
    int64_t node_milli = 0;
    int32_t used_devices = 0;
    GpuNodeRow gpu_node{node->meta.name, NodeGroupOf(*node), ModelName(*node), {}};
    for (int32_t d = 0; d < node->gpu.count && d < api::kMaxGpusPerNode; ++d) {
      int32_t m = usage.gpu_milli[static_cast<size_t>(d)];
      gpu_node.used_milli.push_back(m);
      node_milli += m;
      if (m > 0) ++used_devices;
      if (m > 0 && m < api::kMilliPerGpu) ++r.gpus_partly_used;
    }
    if (node->gpu.count > 0 && node_milli == 0) ++r.gpu_nodes_idle;
    g.gpu_milli_allocated += node_milli;
    if (node->gpu.count > 0) {
      const std::string model = gpu_node.model;
      r.gpu_nodes.push_back(std::move(gpu_node));
      ModelRow& m = models[model];
      model_nodes[model].insert(node->meta.name);
      m.gpus_total += node->gpu.count;
      m.gpus_allocated += used_devices;
      m.milli_total += static_cast<int64_t>(node->gpu.count) * api::kMilliPerGpu;
      m.milli_allocated += node_milli;
    }
  }
  std::sort(r.gpu_nodes.begin(), r.gpu_nodes.end(),
            [](const GpuNodeRow& a, const GpuNodeRow& b) { return a.node < b.node; });
  for (auto& [name, g] : groups) {
    g.group = name;
    r.groups.push_back(g);
  }
  r.fill = FillRows(sim, models);
  AddDraGpus(sim, models, model_nodes);
  for (auto& [name, m] : models) {
    m.model = name;
    m.nodes = static_cast<int32_t>(model_nodes[name].size());
    r.models.push_back(m);
  }

  std::map<std::string, ReasonRow> reasons;
  constexpr size_t kExamples = 3;
  for (const auto& o : sim.outcomes()) {
    if (o.state == PodState::kScheduled || o.state == PodState::kPreBound) continue;
    r.unscheduled.push_back(
        UnscheduledRow{o.pod->Key(), std::string(PodStateName(o.state)), o.message});
    if (o.reason.empty()) continue;  // preempted or moved: in the preemptions instead
    ReasonRow& row = reasons[o.reason];
    ++row.pods;
    if (row.examples.size() < kExamples) row.examples.push_back(o.pod->Key());
  }
  for (auto& [reason, row] : reasons) {
    row.reason = reason;
    r.reasons.push_back(std::move(row));
  }
  r.preemptions.assign(sim.preemptions().begin(), sim.preemptions().end());
  r.gangs = BuildGangRows(sim);
  std::stable_sort(r.reasons.begin(), r.reasons.end(),
                   [](const ReasonRow& a, const ReasonRow& b) { return a.pods > b.pods; });
  return r;
}

namespace {

// "Preemptions: N" and, for at most `max_listed` of them, "pod -> node: evicted a, b"; then
// "Consolidations: N (M pods moved)" and "pod -> node: moved a to n1, b to n2".
std::string FormatPreemptions(const std::vector<Preemption>& preemptions, size_t max_listed) {
  std::string out;
  for (const bool moves : {false, true}) {
    size_t count = 0;
    size_t pods = 0;
    std::string lines;
    for (const Preemption& p : preemptions) {
      if (p.moves() != moves) continue;
      pods += p.victims.size();
      if (count++ >= max_listed) continue;
      std::string victims;
      for (size_t i = 0; i < p.victims.size(); ++i) {
        victims += (i == 0 ? "" : ", ") + p.victims[i];
        if (moves) victims += " to " + p.destinations[i];
      }
      lines +=
          "  " + p.pod + " -> " + p.node + (moves ? ": moved " : ": evicted ") + victims + "\n";
    }
    if (count == 0) continue;
    out += moves ? "\nConsolidations: " + std::to_string(count) + " (" + std::to_string(pods) +
                       " pods moved)\n"
                 : "\nPreemptions: " + std::to_string(count) + "\n";
    out += lines;
    if (count > max_listed) out += "  ... and " + std::to_string(count - max_listed) + " more\n";
  }
  return out;
}

std::string DeviceList(const std::vector<int32_t>& devices, char sep) {
  std::string out;
  for (int32_t d : devices) {
    if (!out.empty()) out += sep;
    out += std::to_string(d);
  }
  return out;
}

// "Pods:" and a left-aligned table: pod, node, devices, state, reason (at most `max_listed`).
std::string FormatPodTable(const std::vector<PlacementRow>& placements, size_t max_listed) {
  if (max_listed == 0 || placements.empty()) return {};
  std::vector<std::vector<std::string>> rows = {{"POD", "NODE", "DEVICES", "STATE", "REASON"}};
  for (size_t i = 0; i < placements.size() && i < max_listed; ++i) {
    const PlacementRow& p = placements[i];
    std::string devices = DeviceList(p.gpu_devices, ',');
    rows.push_back({p.pod, p.node.empty() ? "-" : p.node, devices.empty() ? "-" : devices, p.state,
                    p.message});
  }
  std::vector<size_t> width(rows.front().size(), 0);
  for (const auto& row : rows) {
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  std::string out = "\nPods:\n";
  for (const auto& row : rows) {
    std::string line = " ";
    for (size_t c = 0; c < row.size(); ++c) {
      line += " " + row[c];
      if (c + 1 < row.size()) line.append(width[c] - row[c].size() + 1, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  if (placements.size() > max_listed) {
    out += "  ... and " + std::to_string(placements.size() - max_listed) +
           " more (-o csv lists every pod)\n";
  }
  return out;
}

// One CSV field: quoted when it holds a comma, a quote or a line break (quotes doubled).
std::string CsvField(std::string_view v) {
  if (v.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(v);
  std::string out = "\"";
  for (char ch : v) {
    if (ch == '"') out += '"';
    out += ch;
  }
  return out + "\"";
}

}  // namespace

std::string FormatPlacementsCsv(const Report& r) {
  std::string out = "pod,node,gpuDevices,state,message\n";
  for (const PlacementRow& p : r.placements) {
    out += CsvField(p.pod) + "," + CsvField(p.node) + "," + DeviceList(p.gpu_devices, ';') + "," +
           CsvField(p.state) + "," + CsvField(p.message) + "\n";
  }
  return out;
}

namespace {

// The table "GPU allocation per model", with a column for the GPUs published through DRA when
// there are any.
std::string ModelsTable(const std::vector<ModelRow>& models) {
  const bool dra = std::any_of(models.begin(), models.end(),
                               [](const ModelRow& m) { return m.dra_gpus_total > 0; });
  auto fraction = [](int64_t part, int64_t whole) {
    return std::to_string(part) + "/" + std::to_string(whole);
  };
  std::vector<std::vector<std::string>> rows = {
      {"MODEL", "NODES", "GPUS USED/TOTAL", "MILLI ALLOC/TOTAL", "ALLOC"}};
  if (dra) rows[0].push_back("OF THEM DRA");
  ModelRow total;
  for (const auto& m : models) {
    rows.push_back({m.model, std::to_string(m.nodes), fraction(m.gpus_allocated, m.gpus_total),
                    fraction(m.milli_allocated, m.milli_total),
                    Percent(m.milli_allocated, m.milli_total)});
    if (dra) rows.back().push_back(fraction(m.dra_gpus_allocated, m.dra_gpus_total));
    total.milli_allocated += m.milli_allocated;
    total.milli_total += m.milli_total;
    total.gpus_allocated += m.gpus_allocated;
    total.gpus_total += m.gpus_total;
    total.dra_gpus_allocated += m.dra_gpus_allocated;
    total.dra_gpus_total += m.dra_gpus_total;
  }
  rows.push_back({"total", "", fraction(total.gpus_allocated, total.gpus_total),
                  fraction(total.milli_allocated, total.milli_total),
                  Percent(total.milli_allocated, total.milli_total)});
  if (dra) rows.back().push_back(fraction(total.dra_gpus_allocated, total.dra_gpus_total));
  return TextTable(rows);
}

}  // namespace

std::string FormatReportText(const Report& r, size_t max_unscheduled_listed,
                             size_t max_pods_listed) {
  std::string out;
  out += "Simulation of " + r.source + " (profile " + r.profile + ")\n";
  out += "  nodes " + std::to_string(r.nodes) + ", pods " + std::to_string(r.stats.pods) +
         ": scheduled " + std::to_string(r.stats.scheduled) + ", unschedulable " +
         std::to_string(r.stats.unschedulable) + ", errors " + std::to_string(r.stats.errors);
  if (r.stats.pending > 0) out += ", pending " + std::to_string(r.stats.pending);
  if (r.stats.pre_bound > 0) out += ", pre-bound " + std::to_string(r.stats.pre_bound);
  if (r.stats.preempted > 0) out += ", preempted " + std::to_string(r.stats.preempted);
  if (r.stats.moved > 0) out += ", moved " + std::to_string(r.stats.moved);
  if (r.stats.rejected > 0) out += ", rejected " + std::to_string(r.stats.rejected);
  out += "\n  decisions " + std::to_string(r.stats.decisions);
  if (r.decisions_per_second > 0) {
    out += " in " + Fixed(r.stats.wall_seconds, 3) + " s (" + Fixed(r.decisions_per_second, 0) +
           " decisions/s)";
  }
  out += "\n";

  out += "\nPlacements per node group:\n";
  std::vector<std::vector<std::string>> rows = {
      {"GROUP", "NODES", "PODS", "GPUS", "GPUS ALLOC", "CPU REQ"}};
  for (const auto& g : r.groups) {
    rows.push_back({g.group, std::to_string(g.nodes), std::to_string(g.pods),
                    std::to_string(g.gpus_total), Gpus(g.gpu_milli_allocated),
                    Percent(g.milli_cpu_requested, g.milli_cpu_allocatable)});
  }
  out += TextTable(rows);

  out += "\nGPU allocation per model:\n" + ModelsTable(r.models);

  out += "\nUnscheduled pods by reason:";
  if (r.reasons.empty()) {
    out += " none\n";
  } else {
    out += "\n";
    rows = {{"PODS", "REASON", "EXAMPLES"}};
    for (const auto& row : r.reasons) {
      std::string ex;
      for (const auto& e : row.examples) ex += (ex.empty() ? "" : ", ") + e;
      if (row.pods > static_cast<int64_t>(row.examples.size())) {
        ex +=
            ", +" + std::to_string(row.pods - static_cast<int64_t>(row.examples.size())) + " more";
      }
      rows.push_back({std::to_string(row.pods), row.reason, ex});
    }
    // Reason text varies in length; a plain list reads better than a table.
    for (size_t i = 1; i < rows.size(); ++i) {
      out += "  " + rows[i][0] + "  " + rows[i][1] + "  (" + rows[i][2] + ")\n";
    }
  }
  if (!r.unscheduled.empty()) {
    out += "\nUnscheduled pods:\n";
    for (size_t i = 0; i < r.unscheduled.size() && i < max_unscheduled_listed; ++i) {
      const auto& u = r.unscheduled[i];
      out += "  " + u.pod + " [" + u.state + "]: " + u.message + "\n";
    }
    if (r.unscheduled.size() > max_unscheduled_listed) {
      out +=
          "  ... and " + std::to_string(r.unscheduled.size() - max_unscheduled_listed) + " more\n";
    }
  }
  out += FormatPreemptions(r.preemptions, max_unscheduled_listed);
  out += FormatGangsText(r.gangs, max_unscheduled_listed);
  out += FormatPodTable(r.placements, max_pods_listed);
  out += FormatClaimsText(r.claims, max_pods_listed);
  out += "\nAPI writes: " + std::to_string(r.counters.binds) + " binds";
  for (const auto& [reason, n] : r.counters.events_by_reason) {
    out += ", " + std::to_string(n) + " " + reason + " events";
  }
  for (const auto& [reason, n] : r.counters.conditions_by_reason) {
    out += ", " + std::to_string(n) + " PodScheduled=False/" + reason;
  }
  out += "\n";
  if (!r.rejected.empty()) {
    out += "\nRejected objects (not simulated): " + std::to_string(r.rejected.size()) + "\n";
    for (const Rejection& x : r.rejected) out += "  " + x.ToString() + "\n";
  }
  for (const auto& w : r.warnings) out += "warning: " + w + "\n";
  return out;
}

namespace {

json::array StringsJson(const std::vector<std::string>& strings) {
  json::array out;
  for (const std::string& x : strings) out.emplace_back(x);
  return out;
}

json::object PodCountsJson(const SimStats& s) {
  return json::object{
      {"total", s.pods},       {"scheduled", s.scheduled}, {"unschedulable", s.unschedulable},
      {"errors", s.errors},    {"pending", s.pending},     {"preBound", s.pre_bound},
      {"rejected", s.rejected}};
}

json::array PlacementsJson(const std::vector<PlacementRow>& rows) {
  json::array out;
  for (const PlacementRow& p : rows) {
    json::array devices;
    for (int32_t d : p.gpu_devices) devices.emplace_back(d);
    out.push_back(json::object{{"pod", p.pod},
                               {"node", p.node},
                               {"gpuDevices", std::move(devices)},
                               {"gpuMilli", p.gpu_milli},
                               {"state", p.state},
                               {"message", p.message}});
  }
  return out;
}

json::array GpuNodesJson(const std::vector<GpuNodeRow>& rows) {
  json::array out;
  for (const GpuNodeRow& n : rows) {
    json::array used;
    for (int32_t m : n.used_milli) used.emplace_back(m);
    out.push_back(json::object{
        {"node", n.node}, {"group", n.group}, {"model", n.model}, {"usedMilli", std::move(used)}});
  }
  return out;
}

json::array ClaimsJson(const std::vector<ClaimRow>& rows) {
  json::array out;
  for (const ClaimRow& c : rows) {
    out.push_back(
        json::object{{"claim", c.claim},
                     {"node", c.node.empty() ? json::value(nullptr) : json::value(c.node)},
                     {"devices", StringsJson(c.devices)}});
  }
  return out;
}

json::array GroupsJson(const std::vector<GroupRow>& rows) {
  json::array out;
  for (const GroupRow& g : rows) {
    out.push_back(json::object{{"group", g.group},
                               {"nodes", g.nodes},
                               {"pods", g.pods},
                               {"gpus", g.gpus_total},
                               {"gpuMilliAllocated", g.gpu_milli_allocated},
                               {"milliCpuAllocatable", g.milli_cpu_allocatable},
                               {"milliCpuRequested", g.milli_cpu_requested}});
  }
  return out;
}

json::array ModelsJson(const std::vector<ModelRow>& rows) {
  json::array out;
  for (const ModelRow& m : rows) {
    out.push_back(json::object{{"model", m.model},
                               {"nodes", m.nodes},
                               {"gpusTotal", m.gpus_total},
                               {"gpusAllocated", m.gpus_allocated},
                               {"milliTotal", m.milli_total},
                               {"milliAllocated", m.milli_allocated},
                               {"draGpusTotal", m.dra_gpus_total},
                               {"draGpusAllocated", m.dra_gpus_allocated}});
  }
  return out;
}

json::array ReasonsJson(const std::vector<ReasonRow>& rows) {
  json::array out;
  for (const ReasonRow& row : rows) {
    out.push_back(json::object{
        {"reason", row.reason}, {"pods", row.pods}, {"examples", StringsJson(row.examples)}});
  }
  return out;
}

json::array UnscheduledJson(const std::vector<UnscheduledRow>& rows) {
  json::array out;
  for (const UnscheduledRow& u : rows) {
    out.push_back(json::object{{"pod", u.pod}, {"state", u.state}, {"message", u.message}});
  }
  return out;
}

json::array PreemptionsJson(const std::vector<Preemption>& rows) {
  json::array out;
  for (const Preemption& p : rows) {
    json::object o{{"pod", p.pod}, {"node", p.node}, {"victims", StringsJson(p.victims)}};
    if (p.moves()) o["destinations"] = StringsJson(p.destinations);
    out.push_back(std::move(o));
  }
  return out;
}

json::object ApiJson(const ClusterCounters& c) {
  json::object events;
  for (const auto& [k, v] : c.events_by_reason) events[k] = v;
  json::object conds;
  for (const auto& [k, v] : c.conditions_by_reason) conds[k] = v;
  return json::object{{"binds", c.binds},
                      {"bindErrors", c.bind_errors},
                      {"eventsByReason", std::move(events)},
                      {"podScheduledFalseByReason", std::move(conds)}};
}

json::array RejectedJson(const std::vector<Rejection>& rows) {
  json::array out;
  for (const Rejection& x : rows) {
    out.push_back(json::object{{"source", x.source},
                               {"document", x.document},
                               {"kind", x.kind},
                               {"name", x.name},
                               {"error", x.error}});
  }
  return out;
}

}  // namespace

json::value ReportToJson(const Report& r) {
  json::object o;
  o["source"] = r.source;
  o["profile"] = r.profile;
  o["nodes"] = r.nodes;
  o["gpusPartlyUsed"] = r.gpus_partly_used;
  o["gpuNodesIdle"] = r.gpu_nodes_idle;
  o["pods"] = PodCountsJson(r.stats);
  o["placements"] = PlacementsJson(r.placements);
  o["gpuNodes"] = GpuNodesJson(r.gpu_nodes);
  json::array fill;
  for (const FillRow& f : r.fill) {
    fill.push_back(json::object{{"decisions", f.decisions}, {"gpuAllocation", f.gpu_allocation}});
  }
  o["fill"] = std::move(fill);
  o["claims"] = ClaimsJson(r.claims);
  o["decisions"] = r.stats.decisions;
  o["wallSeconds"] = std::round(r.stats.wall_seconds * 1e6) / 1e6;
  o["decisionsPerSecond"] = std::round(r.decisions_per_second * 10) / 10;
  o["nodeGroups"] = GroupsJson(r.groups);
  o["gpuModels"] = ModelsJson(r.models);
  o["unschedulableByReason"] = ReasonsJson(r.reasons);
  o["unscheduledPods"] = UnscheduledJson(r.unscheduled);
  o["preemptions"] = PreemptionsJson(r.preemptions);
  if (!r.gangs.empty()) o["gangs"] = GangsToJson(r.gangs);
  o["api"] = ApiJson(r.counters);
  o["warnings"] = StringsJson(r.warnings);
  o["rejected"] = RejectedJson(r.rejected);
  return o;
}

namespace {

void Pretty(std::string& out, const json::value& v, int indent) {
  auto pad = [&](int n) { out.append(static_cast<size_t>(n) * 2, ' '); };
  switch (v.kind()) {
    case json::kind::object: {
      const auto& obj = v.get_object();
      if (obj.empty()) {
        out += "{}";
        return;
      }
      out += "{\n";
      bool first = true;
      for (const auto& kv : obj) {
        if (!first) out += ",\n";
        first = false;
        pad(indent + 1);
        out += json::serialize(json::value(kv.key()));
        out += ": ";
        Pretty(out, kv.value(), indent + 1);
      }
      out += "\n";
      pad(indent);
      out += "}";
      return;
    }
    case json::kind::array: {
      const auto& arr = v.get_array();
      if (arr.empty()) {
        out += "[]";
        return;
      }
      out += "[\n";
      for (size_t i = 0; i < arr.size(); ++i) {
        if (i > 0) out += ",\n";
        pad(indent + 1);
        Pretty(out, arr[i], indent + 1);
      }
      out += "\n";
      pad(indent);
      out += "]";
      return;
    }
    default: out += json::serialize(v);
  }
}

}  // namespace

std::string FormatJson(const json::value& value) {
  std::string out;
  Pretty(out, value, 0);
  out += "\n";
  return out;
}

std::string TextTable(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width;
  for (const auto& r : rows) {
    if (width.size() < r.size()) width.resize(r.size(), 0);
    for (size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
  }
  std::string out;
  for (const auto& r : rows) {
    out += "  ";
    for (size_t i = 0; i < r.size(); ++i) {
      std::string pad(width[i] - r[i].size(), ' ');
      if (i == 0) {
        out += r[i] + pad;
      } else {
        out += "  " + pad + r[i];
      }
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    out += '\n';
  }
  return out;
}

std::string NodeGroupOf(const api::Node& node) {
  static const common::Atom node_group = common::Intern(kNodeGroupLabel);
  common::Atom v;
  if (node.meta.labels.Get(api::Names().instance_type, &v) && !v.empty()) {
    return std::string(common::Str(v));
  }
  if (node.meta.labels.Get(node_group, &v) && !v.empty()) return std::string(common::Str(v));
  return "(none)";
}

}  // namespace gpusched::sim
