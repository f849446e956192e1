// SPDX-License-Identifier: Apache-2.0
#include "src/sim/gang_report.h"

#include <boost/json.hpp>
#include <map>
#include <set>

#include "src/api/gang.h"

namespace gpusched::sim {

namespace json = boost::json;

namespace {

std::string Describe(const api::PodGroup& g) {
  switch (g.api) {
    case api::GangApi::kVolcano: return "Volcano PodGroup " + g.namespace_ + "/" + g.name;
    case api::GangApi::kWorkload:
      return "Workload " + g.namespace_ + "/" + g.name + "/" + g.pod_group;
    case api::GangApi::kNative:
      return "PodGroup " + g.namespace_ + "/" + g.name + " (" + std::string(api::kNativeGangGroup) +
             ")";
    default: return "PodGroup " + g.namespace_ + "/" + g.name;
  }
}

struct Tally {
  GangRow row;
  std::set<std::string> nodes;
  bool timed_out = false;
};

std::string StateOf(const Tally& t) {
  if (t.row.bound > 0 && t.row.bound >= t.row.min_member) return "Placed";
  if (t.row.bound > 0) return "Partial";
  return t.timed_out ? "TimedOut" : "Waiting";
}

}  // namespace

std::vector<GangRow> BuildGangRows(const Simulator& sim) {
  std::map<std::string, Tally> by_key;
  for (const cache::GangStore::GangState& s : sim.scheduler().GangStates()) {
    if (s.policy == nullptr || !s.policy->gang) continue;
    Tally& t = by_key[s.gang_key];
    t.row.gang = Describe(*s.policy);
    t.row.min_member = s.policy->min_member;
    t.timed_out = s.timed_out;
  }
  for (const PodOutcome& o : sim.outcomes()) {
    if (o.pod->gang.empty()) continue;
    auto it = by_key.find(api::GangKey(*o.pod));
    if (it == by_key.end()) continue;  // no policy: scheduled pod by pod
    Tally& t = it->second;
    ++t.row.members;
    if (o.state != PodState::kScheduled && o.state != PodState::kPreBound) continue;
    ++t.row.bound;
    t.row.gpu_milli_bound += o.pod->gpu.TotalMilli();
    t.nodes.insert(o.node);
  }
  std::vector<GangRow> rows;
  for (auto& [key, t] : by_key) {
    t.row.state = StateOf(t);
    t.row.nodes.assign(t.nodes.begin(), t.nodes.end());
    rows.push_back(std::move(t.row));
  }
  std::sort(rows.begin(), rows.end(),
            [](const GangRow& a, const GangRow& b) { return a.gang < b.gang; });
  return rows;
}

std::string FormatGangsText(const std::vector<GangRow>& rows, size_t max_listed) {
  if (rows.empty()) return {};
  std::map<std::string, int32_t> by_state;
  for (const GangRow& r : rows) ++by_state[r.state];
  std::string out = "\nGangs: " + std::to_string(rows.size());
  for (const auto& [state, n] : by_state) out += ", " + std::to_string(n) + " " + state;
  out += "\n";
  for (size_t i = 0; i < rows.size() && i < max_listed; ++i) {
    const GangRow& r = rows[i];
    out += "  " + r.gang + " [" + r.state + "]: " + std::to_string(r.bound) + "/" +
           std::to_string(r.members) + " bound (minMember " + std::to_string(r.min_member) + ")";
    if (!r.nodes.empty()) {
      out += " on ";
      for (size_t n = 0; n < r.nodes.size(); ++n) out += (n == 0 ? "" : ", ") + r.nodes[n];
    }
    out += "\n";
  }
  if (rows.size() > max_listed) {
    out += "  ... and " + std::to_string(rows.size() - max_listed) + " more\n";
  }
  return out;
}

json::value GangsToJson(const std::vector<GangRow>& rows) {
  json::array out;
  for (const GangRow& r : rows) {
    json::array nodes;
    for (const std::string& n : r.nodes) nodes.emplace_back(n);
    out.push_back(json::object{{"gang", r.gang},
                               {"state", r.state},
                               {"minMember", r.min_member},
                               {"members", r.members},
                               {"bound", r.bound},
                               {"gpuMilliBound", r.gpu_milli_bound},
                               {"nodes", std::move(nodes)}});
  }
  return out;
}

}  // namespace gpusched::sim
